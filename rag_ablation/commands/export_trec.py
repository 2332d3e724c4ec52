"""`rag-ablation export-trec`: a config's stored ranking as a TREC run file, its labels as TREC qrels.

For trec_eval, ``ir_measures``, ranx and other TREC tools. ``--run`` is a retrieve stage output
(``data/build/runs/<config>.json``), ``--labels`` the labels stage output of the chunking that
run uses (``data/build/labels/<chunking>.json``; the run names its chunking in
``config.chunking``, and the labels file is named after its chunking, the only place that name
is kept). A labels file of another chunking is an error naming both: chunk ids such as
``doc.md#3`` exist in every chunking but mean other text, so the files would score silently wrong.

- Run file (``rag_ablation.evaluation.scoring.trec.run_lines``): ``qid Q0 docno rank score tag``, one line
  per ranked chunk of every question of the run (unanswerable ones included: TREC tools ignore
  queries without qrels), tagged ``--tag`` (default: the config's name). ``--order stored``
  (default) keeps the stored order, the one the project scores; ``--order score`` re-sorts by
  score. Written scores strictly decrease down each ranking, so every TREC reader sees the rank
  column's order (see ``rag_ablation.evaluation.scoring.trec``).
- Qrels file (``qrels_lines``): ``qid 0 docno 1`` per relevant chunk, questions in run order.
  Answerable questions with no relevant chunk get no line: TREC tools leave them out of their
  means, while the project counts them as misses (the count is printed).

- Graded qrels (``--qrels <data>/qrels.jsonl`` instead of ``--labels``, for a data set imported
  from BEIR): the run is written per document (each at its first chunk's rank and score, the
  question's excluded documents removed) and the qrels with their grades, so ir_measures'
  ``nDCG@10`` and ``R@100`` on the two files equal the project's per question
  (``rag_ablation.evaluation.scoring.graded``).

- Original ids: when the data set params.yaml selects (``dataset``) has an id map
  (``data/imported/NAME/questions.doc_ids.json``, written by ``rag-ablation import beir``), the
  graded run and qrels name each document by the data set's own id (BEIR's ``_id``), not the
  project's file name; otherwise (handbook, covidqa, span labels) the project's names are kept.
- Depth: ``run depth: K ...`` is always printed (K = the config's ``k``, the chunks kept per
  question). ``--min-depth N`` refuses a run with K < N (a measure cut at N, such as R@100,
  would count the ranks never retrieved as misses), writing nothing.

The run and the labels must hold the same answerable questions; otherwise one of them is stale
and the error says which ids differ. Both files are checked before either is written, and each is
written atomically. A missing or malformed input, or a mismatch, is one ``error:`` line, exit
status 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_ablation.core.errors import InvalidData, MissingInput, UserError
from rag_ablation.evaluation.scoring.graded import DEEP_RECALL_K, read_qrels
from rag_ablation.evaluation.scoring.trec import (
    ORDERS,
    document_rankings,
    graded_qrels_lines,
    qrels_lines,
    original_ids,
    rankings_from_run,
    run_depth,
    run_lines,
)
from rag_ablation.core.io import read_json, write_text
from rag_ablation.core.pipeline_files import stage_target

SHOWN = 10  # ids named in a mismatch message


def _read_json(path: Path, what: str, hint: str) -> Any:
    if not path.is_file():
        raise MissingInput(f"{what} {path} does not exist: {hint}")
    try:
        return read_json(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InvalidData(f"{what} {path} is not valid JSON ({e}); {hint}") from None


def read_run(path: Path) -> tuple[str, str, dict[str, list[dict]], set[str], int]:
    """(config name, chunking, question id -> stored ranking, answerable ids, depth: chunks kept
    per question, ``trec.run_depth``) of a run file."""
    run = _read_json(path, "run file", "expected a retrieve stage output, data/build/runs/<config>.json, which "
                                       "`dvc repro retrieve@<config>` (or `dvc pull`) writes")
    config = run.get("config") if isinstance(run, dict) else None
    if isinstance(config, dict) and isinstance(config.get("app"), dict):
        raise UserError(f"run file {path} is the run of app {config.get('name')!r} (apps: in params.yaml): its "
                        f"passages are labelled by their own text, with no chunking whose labels file export-trec "
                        f"could write as qrels; its per-question scores are in metrics/scores/retrieval.csv")
    if not isinstance(config, dict) or not isinstance(config.get("chunking"), str):
        raise InvalidData(f"run file {path} is not a retrieve stage output: expected an object whose 'config' "
                          f"names its 'chunking'; pass data/build/runs/<config>.json")
    try:
        rankings = rankings_from_run(run)
        answerable = {q["id"] for q in run["questions"] if q.get("answerable", True)}
    except InvalidData as e:
        raise InvalidData(f"run file {path}: {e}") from None
    except (KeyError, TypeError, AttributeError) as e:
        raise InvalidData(f"run file {path}: malformed 'questions' ({type(e).__name__}: {e}); expected a list of "
                          f"{{'id', 'answerable', 'ranking': [{{'chunk', 'score'}}]}}; rerun "
                          f"`dvc repro retrieve@{path.stem}`") from None
    return str(config.get("name") or path.stem), config["chunking"], rankings, answerable, run_depth(config, rankings)


def read_labels(path: Path) -> dict[str, list[str]]:
    """Question id -> relevant chunk ids of a labels file (``{"relevant": {...}}``)."""
    labels = _read_json(path, "labels file", "expected a labels stage output, data/build/labels/<chunking>.json, "
                                             f"which `dvc repro {stage_target('labels@<chunking>')}` (or `dvc pull`) writes")
    relevant = labels.get("relevant") if isinstance(labels, dict) else None
    if not isinstance(relevant, dict) or not all(isinstance(v, list) for v in relevant.values()):
        raise InvalidData(f"labels file {path} is not a labels stage output: expected an object whose 'relevant' "
                          f"maps each question id to a list of chunk ids")
    return relevant


def _ids(ids: set[str]) -> str:
    shown = sorted(ids)[:SHOWN]
    return ", ".join(shown) + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def check_match(run_path: Path, labels_path: Path, config: str, chunking: str, answerable: set[str],
                relevant: Mapping[str, list[str]]) -> None:
    """The labels file is the run's chunking's (by its name) and holds the run's answerable questions."""
    if labels_path.stem != chunking:
        raise UserError(f"labels file {labels_path} is for chunking {labels_path.stem!r} (labels@CHUNKING writes "
                        f"CHUNKING.json) but run {config!r} ({run_path}) uses chunking {chunking!r}; pass "
                        f"{labels_path.with_name(f'{chunking}.json')}")
    only_run, only_labels = answerable - set(relevant), set(relevant) - answerable
    if only_run or only_labels:
        parts = []
        if only_run:
            parts.append(f"{len(only_run)} answerable question(s) of the run have no labels ({_ids(only_run)})")
        if only_labels:
            parts.append(f"{len(only_labels)} labelled question(s) are not answerable questions of the run "
                         f"({_ids(only_labels)})")
        raise UserError(f"run {run_path} and labels {labels_path} disagree on the questions: {'; '.join(parts)}. "
                        f"One of them is stale: run `dvc repro retrieve@{config} {stage_target(f'labels@{chunking}')}`")


def build_parser(prog: str = "rag-ablation export-trec") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, required=True, metavar="FILE",
                    help="retrieve stage output, data/build/runs/<config>.json")
    labels = ap.add_mutually_exclusive_group(required=True)
    labels.add_argument("--labels", type=Path, metavar="FILE",
                        help="labels stage output of the run's chunking, data/build/labels/<chunking>.json")
    labels.add_argument("--qrels", type=Path, metavar="FILE",
                        help="graded qrels of a BEIR-style data set, data/build/dataset/qrels.jsonl: the run is "
                             "written per document and the qrels with their grades")
    ap.add_argument("--out-run", type=Path, required=True, metavar="FILE", help="TREC run file to write")
    ap.add_argument("--out-qrels", type=Path, required=True, metavar="FILE", help="TREC qrels file to write")
    ap.add_argument("--tag", metavar="NAME", default=None, help="run tag, the 6th column (default: the config name)")
    ap.add_argument("--order", choices=ORDERS, default="stored",
                    help="'stored' (default): the stored ranking, which the project scores; 'score': re-sorted by "
                         "score, then chunk id")
    ap.add_argument("--min-depth", type=int, metavar="N", default=None,
                    help="refuse a run that kept fewer than N chunks per question (the config's k), e.g. 100 "
                         "before computing R@100; the depth is printed either way")
    return ap


def check_depth(run_path: Path, config: str, depth: int, min_depth: int | None) -> None:
    """``--min-depth``: refuse a run shallower than ``min_depth`` (nothing is written)."""
    if min_depth is None:
        return
    if min_depth < 1:
        raise UserError(f"--min-depth {min_depth} is not a positive whole number; pass the deepest measure cutoff "
                        f"you will compute (e.g. 100 for R@100)")
    if depth < min_depth:
        raise UserError(f"run {config!r} ({run_path}) is too shallow: it kept {depth} chunk(s) per question (the "
                        f"config's k) but --min-depth asks for {min_depth}, so a measure cut at {min_depth} would "
                        f"count ranks {depth + 1}-{min_depth} as misses; set retrieval.{config}.k to {min_depth} or "
                        f"more and rerun `dvc repro retrieve@{config}`, or lower --min-depth")


def dataset_ids() -> tuple[str, Path | None, dict[str, str]]:
    """(data set name, its id map's path or None, the map) of the data set params.yaml selects
    (handbook, with no map, when there is no params.yaml)."""
    from rag_ablation.core.config import load_config
    from rag_ablation.datasets.registry import doc_ids_path, read_doc_ids

    name = load_config(Path("params.yaml")).dataset if Path("params.yaml").is_file() else "handbook"
    path = doc_ids_path(name)
    return name, path, read_doc_ids(path) if path is not None else {}


def _run_graded(args: argparse.Namespace) -> None:
    config, _, rankings, answerable, depth = read_run(args.run)
    check_depth(args.run, config, depth, args.min_depth)
    if not args.qrels.is_file():
        raise MissingInput(f"qrels file {args.qrels} does not exist: the dataset stage writes it "
                           f"(`dvc repro dataset`) for a data set imported from BEIR")
    qrels = read_qrels(args.qrels)
    if not qrels:
        raise UserError(f"qrels file {args.qrels} is empty: the data set has span labels, not graded qrels; "
                        f"pass --labels data/build/labels/<chunking>.json instead")
    docs = document_rankings(rankings, qrels)
    judged = {q: qrels[q] for q in rankings if q in qrels}
    name, ids_path, ids = dataset_ids()
    if ids:
        try:
            docs, judged = original_ids(docs, judged, ids)
        except InvalidData as e:
            raise InvalidData(f"id map {ids_path} of data set {name!r}: {e}: the run or qrels come from another "
                              f"import; rerun `dvc repro dataset retrieve@{config}` after importing") from None
    lines = run_lines(args.tag or config, docs, order=args.order)
    qrel_lines = graded_qrels_lines(judged)
    write_text(args.out_run, "".join(line + "\n" for line in lines))
    write_text(args.out_qrels, "".join(line + "\n" for line in qrel_lines))
    print(f"wrote {len(lines):,} document run line(s) for {len(rankings):,} question(s) to {args.out_run} "
          f"and {len(qrel_lines):,} graded qrels line(s) for {len(judged):,} question(s) to {args.out_qrels}",
          file=sys.stderr)
    print(f"docnos: {f'the original ids of data set {name!r} ({ids_path})' if ids else 'the project document paths'}",
          file=sys.stderr)
    short = f"; R@{DEEP_RECALL_K} needs k >= {DEEP_RECALL_K}" if depth < DEEP_RECALL_K else ""
    print(f"run depth: {depth} documents per question at most (the config keeps k = {depth} chunks; a document "
          f"counts once, at its first chunk){short}", file=sys.stderr)
    unjudged = answerable - set(qrels)
    if unjudged:
        print(f"note: {len(unjudged)} answerable question(s) have no qrels ({_ids(unjudged)}): TREC tools leave "
              f"them out of their means while the project counts them as misses", file=sys.stderr)


def run(args: argparse.Namespace) -> None:
    if args.out_run.resolve() == args.out_qrels.resolve():
        raise UserError(f"--out-run and --out-qrels are the same file ({args.out_run}); give two paths")
    source = args.labels if args.labels is not None else args.qrels
    for out in (args.out_run, args.out_qrels):
        if out.resolve() in (args.run.resolve(), source.resolve()):
            raise UserError(f"output {out} is an input file; write the TREC files elsewhere")
    if args.qrels is not None:
        _run_graded(args)
        return
    config, chunking, rankings, answerable, depth = read_run(args.run)
    check_depth(args.run, config, depth, args.min_depth)
    relevant = read_labels(args.labels)
    check_match(args.run, args.labels, config, chunking, answerable, relevant)
    lines = run_lines(args.tag or config, rankings, order=args.order)
    order = [q for q in rankings if q in relevant]
    qrels = qrels_lines({q: relevant[q] for q in order})
    write_text(args.out_run, "".join(line + "\n" for line in lines))
    write_text(args.out_qrels, "".join(line + "\n" for line in qrels))
    unlabelled = sorted(q for q in order if not relevant[q])
    print(f"wrote {len(lines):,} run line(s) for {len(rankings):,} question(s) to {args.out_run} "
          f"and {len(qrels):,} qrels line(s) for {len(order) - len(unlabelled):,} question(s) to {args.out_qrels}",
          file=sys.stderr)
    print(f"run depth: {depth} chunks per question (the config's k)", file=sys.stderr)
    if unlabelled:
        print(f"note: {len(unlabelled)} answerable question(s) have no relevant chunk in chunking {chunking!r} "
              f"({_ids(set(unlabelled))}): no qrels line, so TREC tools leave them out of their means while the "
              f"project counts them as misses", file=sys.stderr)
