"""`rag-ablation label`: the local web workbench for writing and labelling questions.

Serves one page on 127.0.0.1 only (``--port``, default 0: a free port, printed) over the
selected data set's corpus, question file and label audit (``dataset`` in params.yaml:
handbook's ``data/corpus``, ``data/questions/handbook.jsonl``, ``data/labels/audit.jsonl``, or
an imported set's ``data/imported/NAME/...``), or the files given. Every save is validated as
the pipeline validates it and appended atomically; Ctrl-C or a crash loses at most the question
being edited, and a rerun resumes. The modes and their files: ``rag_ablation.authoring.workbench``
and docs/workbench.md. Model-drafted questions go to ``--generated`` (default ``generated.jsonl``
beside the question file), never to the question file; ``--compare`` prints them against the
hand-written ones instead of serving.
"""
from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from rag_ablation.core.errors import UserError

if TYPE_CHECKING:  # the workbench (and its web framework) is imported only when the command runs
    from rag_ablation.authoring.grade_page import GradeSource
    from rag_ablation.authoring.workbench.session import Workbench

HANDBOOK = {"corpus": Path("data/corpus"), "questions": Path("data/questions/handbook.jsonl"),
            "audit": Path("data/labels/audit.jsonl")}
"""The handbook's files (dvc.yaml's ``vars``)."""
DATA = Path("data")
"""The workbench writes only below this folder of the project (the current folder)."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="Write and label questions in the browser: questions from "
                                 "sampled passages, real queries against a pooled candidate list, and the misses "
                                 "of a config to audit, and model-drafted questions to judge. Serves "
                                 "http://127.0.0.1:PORT/ for you alone.")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: a free port, printed)")
    ap.add_argument("--params", type=Path, default=Path("params.yaml"), help="params file (params.yaml)")
    ap.add_argument("--corpus", type=Path, help="corpus folder (default: the selected data set's)")
    ap.add_argument("--questions", type=Path, help="question file written to (default: the selected data set's)")
    ap.add_argument("--audit", type=Path, help="label audit written to (default: the selected data set's)")
    ap.add_argument("--runs", type=Path, default=Path("data/build/runs"), help="run files, for audit mode (data/build/runs)")
    ap.add_argument("--scores", type=Path, default=Path("metrics/scores/retrieval.csv"),
                    help="per-question scores, for audit mode (metrics/scores/retrieval.csv)")
    ap.add_argument("--build", type=Path, default=Path("data/build"),
                    help="built chunks and indexes, for label-queries mode (data/build)")
    ap.add_argument("--generated", type=Path,
                    help="model-drafted questions written to (default: generated.jsonl beside the question file)")
    ap.add_argument("--prompts", type=Path, default=None,
                    help="folder of drafts mode's draft_question.txt (default: the one shipped with the workbench, "
                         "rag_ablation/authoring/workbench/prompts; a folder of its own for no stage depends on it)")
    ap.add_argument("--pair", nargs=2, metavar=("BM25", "DENSE"),
                    help="with --compare: the two configs whose ordering is compared (default: the first BM25 "
                         "config and stats.baseline)")
    add_grade_options(ap)
    io = ap.add_mutually_exclusive_group()
    io.add_argument("--export-labelstudio", type=Path, metavar="DIR",
                    help="instead of serving: write write mode's sampled passages as Label Studio tasks "
                         "(DIR/tasks.json) and the labelling interface (DIR/label_config.xml)")
    io.add_argument("--import-labelstudio", type=Path, metavar="FILE",
                    help="instead of serving: save the annotated tasks of a Label Studio JSON export as questions, "
                         "each validated as on the page")
    io.add_argument("--compare", action="store_true",
                    help="instead of serving: print hand-written against model-drafted questions (share answerable, "
                         "content-word overlap, each config's recall@5 on both sets from --scores, and whether the "
                         "BM25-vs-dense ordering flips)")
    return ap


def add_grade_options(ap: argparse.ArgumentParser) -> None:
    """The options of the "Grade answers" mode (``rag_ablation.authoring.workbench.grading``), as
    ``rag-ablation grade`` names them."""
    from rag_ablation.authoring.grade_order import ORDERS
    from rag_ablation.core.config import DEFAULT_GRADE_ORDER, DEFAULT_GRADE_SCORE_JUDGE

    g = ap.add_argument_group("Grade answers mode (as `rag-ablation grade`)")
    g.add_argument("--answers", type=Path, default=Path("data/build/answers"),
                   help="answers files to grade, one <config>.json each (data/build/answers)")
    g.add_argument("--grades", type=Path, help="grades file, read and rewritten (default: the selected data set's)")
    g.add_argument("--grader", default=os.environ.get("USER") or "grader",
                   help="your name, stored with each grade ($USER, else 'grader')")
    g.add_argument("--order", choices=ORDERS, default=DEFAULT_GRADE_ORDER,
                   help=f"listed, random or active (docs/judging.md) ({DEFAULT_GRADE_ORDER})")
    g.add_argument("--seed", type=int, default=0, help="seed of --order (0)")
    g.add_argument("--score-dir", type=Path, default=Path("metrics/scores"),
                   help="with --order active: the folder of verdicts.csv and answers.csv (metrics/scores)")
    g.add_argument("--score-judge", default=DEFAULT_GRADE_SCORE_JUDGE,
                   help=f"with --order active: the judge whose <NAME>_score column orders ({DEFAULT_GRADE_SCORE_JUDGE})")


def grade_source(args: argparse.Namespace) -> GradeSource:
    """What the grade mode reads and writes: the answers, ``--build``'s questions.jsonl (what the
    answers were made from), ``--runs``' passages, and the grades file (below ``data/``)."""
    from rag_ablation.authoring.grade_page import GradeSource
    from rag_ablation.commands.grade import default_grades

    if not args.grader.strip():
        raise UserError("--grader must not be empty: pass your name")
    return GradeSource(answers=args.answers, questions=args.build / "questions.jsonl", runs=args.runs,
                       grades=inside_data(args.grades or default_grades(), "--grades"), grader=args.grader.strip(),
                       order=args.order, seed=args.seed, score_dir=args.score_dir, score_judge=args.score_judge)


def compare(bench: Workbench, args: argparse.Namespace) -> None:
    """``--compare`` (``rag_ablation.authoring.workbench.compare``)."""
    from rag_ablation.authoring.workbench.compare import compare_sets, default_pair
    from rag_ablation.authoring.workbench.drafts import DraftMode
    from rag_ablation.evaluation.scoring.scores import read_scores

    if not args.scores.is_file():
        raise UserError(f"no scores file {args.scores}: run `dvc repro` on a question file holding both sets "
                        f"(docs/workbench.md), or pass --scores")
    params = bench.params
    pair = tuple(args.pair) if args.pair else default_pair(params)
    unknown = [c for c in pair if c not in params.retrieval]
    if unknown:
        raise UserError(f"--pair: {', '.join(map(repr, unknown))} not a retrieval config; expected some of: "
                        f"{', '.join(params.retrieval)}")
    drafts = DraftMode(bench)
    result = compare_sets(hand=bench.questions(), generated=drafts.drafted(), documents=bench.view.documents,
                          events=drafts.log.events(), rows=read_scores(args.scores), settings=params.stats,
                          pair=(pair[0], pair[1]))
    print(f"drafts: {bench.project.drafts} (verdicts: {drafts.log.path}); hand-written: {bench.project.questions}; "
          f"scores: {args.scores}")
    for line in result.lines():
        print(line)


def labelstudio(bench: Workbench, args: argparse.Namespace) -> None:
    """``--export-labelstudio`` / ``--import-labelstudio`` (``rag_ablation.authoring.workbench.labelstudio``)."""
    import json

    from rag_ablation.authoring.workbench.labelstudio import LABEL_CONFIG, export_tasks, import_annotations
    from rag_ablation.authoring.workbench.session import WriteMode
    from rag_ablation.core.io import read_json, write_json, write_text

    if args.export_labelstudio:
        write = WriteMode(bench)
        tasks = export_tasks([write.passages[n] for n in write.order()], done=write.done())
        write_json(args.export_labelstudio / "tasks.json", tasks)
        write_text(args.export_labelstudio / "label_config.xml", LABEL_CONFIG)
        print(f"{len(tasks)} tasks in {args.export_labelstudio / 'tasks.json'} ({len(write.passages) - len(tasks)} of "
              f"the {len(write.passages)} sampled passages left out: already done); create the Label Studio project "
              f"with {args.export_labelstudio / 'label_config.xml'}, import the tasks, label, export as JSON, then "
              f"`rag-ablation label --import-labelstudio FILE`")
        return
    try:
        export = read_json(args.import_labelstudio)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"cannot read the Label Studio export {args.import_labelstudio} ({e}): expected the JSON "
                        f"export of the project (Export > JSON)") from None
    for line in import_annotations(bench, export).lines():
        print(line)


def dataset_files(name: str) -> dict[str, Path]:
    """The corpus, question file and audit of data set ``name`` (covidqa, read in place, has none
    the workbench may write)."""
    from rag_ablation.core.config import DATASETS
    from rag_ablation.datasets.registry import imported_sources

    if name == "handbook":
        return dict(HANDBOOK)
    if name in DATASETS:
        raise UserError(f"data set {name!r} is read in place and has no question file to write: select handbook "
                        f"or an imported set, or pass --corpus, --questions and --audit")
    src = imported_sources(name)
    return {"corpus": src.corpus, "questions": src.questions, "audit": src.audit}


def inside_data(path: Path, what: str) -> Path:
    """``path`` if it lies below the project's ``data/`` folder; else a ``UserError``."""
    root = (Path.cwd() / DATA).resolve()
    if not (Path.cwd() / path).resolve().is_relative_to(root):
        raise UserError(f"{what} {path} is outside the project's data/ folder: the workbench writes only there; "
                        f"run it from the project's root with a file under data/")
    return path


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (never another interface); port 0 picks a free one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as e:
        sock.close()
        raise UserError(f"cannot listen on 127.0.0.1:{port} ({e.strerror}): pass another --port, or 0 for a free one") from None
    sock.listen(16)
    return sock


def report_removed(bench: Workbench) -> None:
    """Print each temporary file the workbench removed at start (``Workbench.removed_temps``)."""
    for tmp in bench.removed_temps:
        print(f"rag-ablation label: removed {tmp}, left by a save that was killed (the file it was saving is whole "
              f"and keeps every save that was acknowledged)", flush=True)


def run(args: argparse.Namespace) -> None:
    try:
        import uvicorn
    except ImportError:
        raise UserError("rag-ablation label needs starlette and uvicorn: install the dev extra "
                        "(pip install -e '.[dev]')") from None
    from rag_ablation.authoring.workbench.app import create_app, own_hosts
    from rag_ablation.authoring.workbench.session import DRAFT_PROMPTS, Project, Workbench
    from rag_ablation.core.config import load_config

    params = load_config(args.params)
    files = dataset_files(params.dataset) if not (args.corpus and args.questions and args.audit) else {}
    project = Project(corpus=args.corpus or files["corpus"],
                      questions=inside_data(args.questions or files["questions"], "--questions"),
                      audit=inside_data(args.audit or files["audit"], "--audit"),
                      runs=args.runs, scores=args.scores, build=args.build,
                      generated=inside_data(args.generated, "--generated") if args.generated else None,
                      prompts=args.prompts or DRAFT_PROMPTS)
    if project.drafts.resolve() == project.questions.resolve():
        raise UserError(f"--generated {project.drafts} is the hand-written question file: model-drafted questions "
                        f"go to a file of their own")
    bench = Workbench(project, params)
    if args.export_labelstudio or args.import_labelstudio or args.compare:
        report_removed(bench)
        (compare if args.compare else labelstudio)(bench, args)
        return
    sock = bind(args.port)
    port = sock.getsockname()[1]
    from rag_ablation.authoring.grade_page import GradeMode

    grading: GradeMode | None = None
    off = ""
    try:
        grading = GradeMode(grade_source(args))
    except UserError as e:  # the other modes still serve; the grade mode's requests say why it is off
        off = f"rag-ablation label: the Grade answers mode is off: {e}"
    app = create_app(bench, hosts=own_hosts(port), grading=grading)
    print(f"rag-ablation label: http://127.0.0.1:{port}/  (questions: {project.questions}, audit: {project.audit}; "
          f"Ctrl-C stops, everything saved is kept)", flush=True)
    report_removed(bench)  # after the address: the first line printed is always it
    if off:
        print(off, flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    server.run(sockets=[sock])
