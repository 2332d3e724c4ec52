"""`rag-ablation import FORMAT ...`: import a public data set as a corpus track and a question file.

Formats (``FORMATS``, one sub-command each, ``rag-ablation import FORMAT --help``):

- ``squad FILE``: a SQuAD v1.1/v2.0 JSON file (``rag_ablation.datasets.squad.import_squad``), one
  document per article or, with ``--doc paragraph``, per paragraph;
- ``beir FOLDER``: a BEIR folder holding corpus.jsonl, queries.jsonl and qrels/<split>.tsv
  (``rag_ablation.datasets.beir.import_beir``).

Documents go to ``<--corpus>/<track>/``, questions to ``--questions`` (JSON lines, the
``questions`` stage's format), all or nothing: an error leaves the previous outputs untouched,
and existing outputs are replaced only with ``--overwrite``. ``--sample N [--seed S]`` writes a
seeded sample of N of the questions left after the drops, stratified by article (SQuAD) or gold
document (BEIR), with every document (all of them when N is at least the questions left); the
report says how many were sampled out of how many. The report of what was read (and how:
e.g. whether BEIR's qrels file had a header line), written, dropped and adjusted (counts per
reason, with example ids; the drops of each kind of record, documents, queries, qrels rows or
questions, counted apart) is printed to stderr, and written as JSON to ``--report`` when
given. Bad input is an ``error:`` message and exit status 2: one line for a missing file or an
existing output, one line per problem for a malformed file, and the report for an import left
with no question.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_ablation.datasets.beir import import_beir
from rag_ablation.datasets.imports import SAMPLE_SEED, ImportReport
from rag_ablation.datasets.squad import DOC_UNIT, DOC_UNITS, SPAN_MODE, SPAN_MODES, TRACK, import_squad
from rag_ablation.core.config import IMPORTED_DIR
from rag_ablation.core.errors import UserError, lookup
from rag_ablation.core.io import write_json
from rag_ablation.data.questions import MIN_SPAN_CHARS
from rag_ablation.support.hydra import hydra_value


@dataclass(frozen=True)
class Format:
    """One importable format: its one-line help, its own arguments, and the import itself
    (``args`` -> ``ImportReport``)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], ImportReport]


# ----------------------------------------------------------------------------- SQuAD


def _squad_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("file", metavar="FILE", type=Path, help="SQuAD v1.1/v2.0 JSON file (e.g. dev-v2.0.json)")
    ap.add_argument("--span", choices=SPAN_MODES, default=SPAN_MODE,
                    help="a question's span: the first answer's text ('answer', default; most are shorter than the "
                         f"{MIN_SPAN_CHARS}-character minimum and dropped) or the sentence(s) holding it "
                         "('sentence', keeps nearly all)")
    ap.add_argument("--doc", choices=DOC_UNITS, default=DOC_UNIT,
                    help=f"one document per article, all its paragraphs ('article': {TRACK}/<title>.md), or per "
                         f"paragraph ('paragraph': {TRACK}/<title>.p0000.md, ...): what a chunker then cuts "
                         f"(default: {DOC_UNIT})")
    ap.add_argument("--track", metavar="NAME", default=TRACK, help=f"corpus track (folder) name ({TRACK})")
    ap.add_argument("--min-span", metavar="N", type=int, default=MIN_SPAN_CHARS,
                    help=f"drop questions whose span has fewer than N characters (default and least: "
                         f"{MIN_SPAN_CHARS}, the question format's minimum)")


def _squad_run(args: argparse.Namespace) -> ImportReport:
    if args.min_span < MIN_SPAN_CHARS:
        raise UserError(f"--min-span {args.min_span} is below the question format's minimum of {MIN_SPAN_CHARS} "
                        f"characters: the `questions` stage would reject the shorter spans; pass "
                        f"{MIN_SPAN_CHARS} or more")
    return import_squad(args.file, args.corpus, args.questions, span=args.span, track=args.track,
                        min_span=args.min_span, doc=args.doc, sample=args.sample, seed=_seed(args),
                        overwrite=args.overwrite)


# ------------------------------------------------------------------------------ BEIR


def _beir_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("folder", metavar="FOLDER", type=Path,
                    help="BEIR folder holding corpus.jsonl, queries.jsonl and qrels/<split>.tsv")
    ap.add_argument("--split", default="test", help="qrels split to import, qrels/<split>.tsv (test)")
    ap.add_argument("--track", metavar="NAME", default=None, help="corpus track (folder) name (the folder's name)")
    ap.add_argument("--gold", metavar="FILE", type=Path, default=None,
                    help="gold-documents file, every judged document per question (default: beside the questions, "
                         "<stem>.gold.jsonl)")
    ap.add_argument("--keep-identical-ids", action="store_true",
                    help="keep qrels rows judging a query against the document with its own id (BEIR's evaluation "
                         "ignores them, and so does the import by default)")


def _beir_run(args: argparse.Namespace) -> ImportReport:
    return import_beir(args.folder, args.corpus, args.questions, split=args.split, track=args.track,
                       out_gold_path=args.gold, ignore_identical_ids=not args.keep_identical_ids,
                       sample=args.sample, seed=_seed(args), overwrite=args.overwrite)


FORMATS: dict[str, Format] = {
    "squad": Format("a SQuAD v1.1/v2.0 JSON file: one document per article (or paragraph), one question per "
                    "SQuAD question (v2.0's impossible ones as unanswerable)", _squad_arguments, _squad_run),
    "beir": Format("a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv): one document per corpus "
                   "entry, one question per judged query", _beir_arguments, _beir_run),
}


# ----------------------------------------------------------------------------- command


def _seed(args: argparse.Namespace) -> int:
    """The sample's seed: ``--seed``, else ``SAMPLE_SEED``. A ``--seed`` without ``--sample``
    would change nothing, so it is refused rather than ignored."""
    if args.seed is not None and args.sample is None:
        raise UserError(f"--seed {args.seed} has no effect without --sample N: the seed only chooses which "
                        f"questions a sample keeps; add --sample N, or drop --seed to import every question")
    return args.seed if args.seed is not None else SAMPLE_SEED


def _common_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--corpus", metavar="DIR", type=Path, required=True,
                    help="corpus folder; documents go to DIR/<track>/ (e.g. data/imported/squad/corpus; not the "
                         "handbook's data/corpus)")
    ap.add_argument("--questions", metavar="FILE", type=Path, required=True,
                    help="question file to write, JSON lines (e.g. data/imported/squad/questions.jsonl)")
    ap.add_argument("--sample", metavar="N", type=int, default=None,
                    help="write a seeded sample of N of the questions left after the drops, stratified by article "
                         "(SQuAD) or gold document (BEIR), and every document; N at least the questions left "
                         "writes them all (default: every question)")
    ap.add_argument("--seed", metavar="S", type=int, default=None,
                    help=f"seed of --sample ({SAMPLE_SEED}); the same input, N and S give the same sample")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace an existing track folder and output files (default: refuse)")
    ap.add_argument("--report", metavar="FILE", type=Path, default=None,
                    help="also write the import report (counts per reason, example ids) as JSON here")


def build_parser(prog: str = "rag-ablation import") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="format", metavar="FORMAT", required=True,
                            help="one of: " + ", ".join(FORMATS))
    for name, fmt in FORMATS.items():
        p = sub.add_parser(name, help=fmt.help, description=f"Import {fmt.help}.")
        fmt.add_arguments(p)
        _common_arguments(p)
    return ap


def run(args: argparse.Namespace) -> None:
    fmt = lookup(FORMATS, args.format, "import format")
    report = fmt.run(args)
    print(report.summary(), file=sys.stderr)
    if args.report is not None:
        write_json(args.report, report.to_json())
        print(f"report written to {args.report}", file=sys.stderr)
    print(run_hint(args.format, args.corpus, args.questions), file=sys.stderr)


RUN_IT = "run it:"
"""The line that opens the commands an import prints (:func:`run_hint`); each command follows on
a line of its own, indented by two spaces, to be run in order from the repository root."""


def printed_commands(output: str) -> list[str]:
    """The commands an import printed (:func:`run_hint`) in ``output``: the lines after its
    :data:`RUN_IT` line that start with two spaces, up to the first that does not, without the
    indent; [] when there is no such line."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(RUN_IT)), None)
    commands: list[str] = []
    for line in lines[start + 1:] if start is not None else []:
        if not line.startswith("  "):
            break
        commands.append(line[2:])
    return commands


def commit_step(name: str) -> str:
    """The command that commits imported data set ``name`` (``data/imported/NAME``, every file
    of it, deletions of a re-import included) in a commit of its own, whatever else is staged:
    ``git add`` then ``git commit ... -- PATH``.

    Why it comes before ``dvc exp run``: an experiment's commit takes every file git does not
    track, so an uncommitted corpus would be copied into each experiment's commit (thousands of
    files for a BEIR set), and a queued or temporary experiment (``--queue``, ``--temp``) runs in
    a copy of the last commit, where untracked files do not exist at all."""
    folder = shlex.quote((IMPORTED_DIR / name).as_posix())
    return f"git add {folder} && git commit -m {shlex.quote(f'import {name}')} -- {folder}"


def run_hint(fmt: str, corpus: Path, questions: Path) -> str:
    """What to run on what was imported, for stderr. When the files are where an imported data
    set lives (``data/imported/NAME/corpus`` and ``data/imported/NAME/questions.jsonl`` of the
    current directory, the repository root, where ``dataset: NAME`` looks for it): a
    :data:`RUN_IT` line, then the commands, one per line, two spaces in, to be run as printed:
    :func:`commit_step`, then ``dvc exp run -S dataset=NAME ...``; and a last line with the
    other way (``dataset: NAME`` in params.yaml and ``dvc repro``). Elsewhere: where to put the
    files, and the same two steps for ``NAME``. BEIR's short spans need
    ``labels.same_doc_only``, and its graded measures a first run of :func:`beir_switches`."""
    folder = questions.parent
    extra = " -S labels.same_doc_only=true" if fmt == "beir" else ""
    after = beir_switches() if fmt == "beir" else ""
    if (folder.parent.resolve() == IMPORTED_DIR.resolve() and questions.name == "questions.jsonl"
            and corpus.resolve() == (folder / "corpus").resolve()):
        name = folder.name
        return (f"{RUN_IT} commit the import, then run the experiment (an experiment would otherwise copy the "
                f"uncommitted corpus into its own commit, and a queued one would not see it)\n"
                f"  {commit_step(name)}\n"
                f"  dvc exp run -S dataset={shlex.quote(name)}{extra} -S llm.backend=none{after}\n"
                f"(or set `dataset: {name}` in params.yaml and `dvc repro`)")
    return (f"to run it with one switch, import into {IMPORTED_DIR.as_posix()}/NAME/corpus and "
            f"{IMPORTED_DIR.as_posix()}/NAME/questions.jsonl, commit it ({commit_step('NAME')}), then: "
            f"dvc exp run -S dataset=NAME{extra} -S llm.backend=none{after}")


def beir_switches(params_file: Path = Path("params.yaml")) -> str:
    """The ``-S`` switches of a first graded run: the run's params hold only the configs of
    :data:`FIRST_RUN_CONFIGS` that ``params_file`` has, each storing :data:`GRADED_DEPTH` chunks
    (recall@100 measured; nDCG@10 not cut short by a document that takes two of ten slots), the
    chunkings and query transforms they use, and the answered and gated configs among them.

    Each block is replaced whole (Hydra's ``~KEY`` then ``+KEY={...}``, which ``dvc exp run -S``
    applies in order), so DVC's ``foreach`` makes no stage instance for anything else: 22
    instead of 72, where every idle instance costs about 3 s of DVC's own work. When
    ``params_file`` cannot be read, or lacks one of its configs' chunkings or query transforms,
    the switches are the plain ones: ``run_configs`` and ``++retrieval.NAME.k``."""
    from rag_ablation.core.config import (FIRST_RUN_CONFIGS, GRADED_DEPTH, OPTIONAL_KEY, RUN_ALL, RUN_DEFAULT,
                                          ConfigError, load_params)

    try:
        params = load_params(params_file)
    except (ConfigError, OSError):
        params = {}
    retrieval = params.get("retrieval") or {}
    names = [n for n in FIRST_RUN_CONFIGS if n in retrieval] or list(FIRST_RUN_CONFIGS)
    found: dict[str, Any] = {n: retrieval.get(n) for n in names}
    chunkings, transforms = params.get("chunkings") or {}, params.get("query_transforms") or {}
    if not all(isinstance(c, dict) and c.get("chunking") in chunkings and c.get("query") in transforms
               for c in found.values()):
        depth = "".join(f" -S '++retrieval.{n}.k={GRADED_DEPTH}'" for n in names)
        return f" -S 'run_configs=[{','.join(names)}]'{depth}"
    # an `optional: true` copied along would leave the config out of the default run it is for
    configs = {n: {**{k: v for k, v in c.items() if k != OPTIONAL_KEY}, "k": GRADED_DEPTH} for n, c in found.items()}
    blocks = {"retrieval": configs,
              "chunkings": {c["chunking"]: chunkings[c["chunking"]] for c in configs.values()},
              "query_transforms": {c["query"]: transforms[c["query"]] for c in configs.values()}}
    switches = [s for key, value in blocks.items() for s in (f"~{key}", f"+{key}={hydra_value(value)}")]
    if params.get("run_configs", RUN_DEFAULT) not in (RUN_ALL, RUN_DEFAULT):  # a list naming others
        switches.append(f"run_configs={RUN_ALL}")
    for key, fallback in (("generation", list(dict.fromkeys([names[0], names[-1]]))), ("gate", [names[-1]])):
        listed = list((params.get(key) or {}).get("configs") or [])
        kept = [c for c in listed if c in configs] or fallback
        if kept != listed:
            switches.append(f"++{key}.configs=[{','.join(kept)}]")
    return "".join(f" -S {shlex.quote(s)}" for s in switches)


