"""``rag-grade`` (also ``rag-ablation grade``): hand-grade generated answers in the terminal.

usage: rag-grade [--answers DIR] [--questions FILE] [--runs DIR] [--grades FILE] [--grader NAME]
                 [--config NAME ...] [--sample N] [--seed S] [--regrade] [--second-pass | --adjudicate | --support]
                 [--order listed|random|active [--score-dir DIR] [--score-judge NAME]]

The screen, the keys, the grades file and which answers are shown are described in
``rag_ablation.authoring.grader``, which runs the session (``run_session``).
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from rag_ablation.authoring.grade_order import ORDERS
from rag_ablation.core import runner
from rag_ablation.core.config import DEFAULT_GRADE_ORDER, DEFAULT_GRADE_SCORE_JUDGE
from rag_ablation.authoring.grader import run_session


class _Parser(argparse.ArgumentParser):
    """Also refuses what argument types cannot: ``--sample`` below 1 and an empty ``--grader``,
    each the usual ``PROG: error:`` message and exit status 2."""

    def parse_args(self, args=None, namespace=None):
        ns = super().parse_args(args, namespace)
        if ns.sample is not None and ns.sample < 1:
            self.error(f"--sample must be at least 1, found {ns.sample}")
        if not ns.grader.strip():
            self.error("--grader must not be empty")
        return ns


def build_parser(prog: str = "rag-grade") -> argparse.ArgumentParser:
    ap = _Parser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Hand-grade generated answers in the terminal, one at a time: c correct, w wrong, s skip, "
                    "b back, n note, p passages whole, q quit; 1 supported, 2 partly, 3 not (then c or w) grade "
                    "the answer's support by the passages the model saw (optional). Every grade is saved at once; "
                    "a rerun resumes.",
        epilog="An answer with a grade for its current text is not shown again (unless --regrade); a grade for an "
               "older text is stale and the answer is shown again. Grades file format: "
               "rag_ablation/evaluation/judges/grades.py.")
    ap.add_argument("--answers", type=Path, metavar="DIR", default=Path("data/build/answers"),
                    help="folder of answers files, one <config>.json each (data/build/answers)")
    ap.add_argument("--questions", type=Path, metavar="FILE", default=Path("data/build/questions.jsonl"),
                    help="question file with the references (data/build/questions.jsonl)")
    ap.add_argument("--runs", type=Path, metavar="DIR", default=Path("data/build/runs"),
                    help="folder of run files with the passages' text (data/build/runs)")
    ap.add_argument("--grades", type=Path, metavar="FILE", default=None,
                    help="grades file, read and rewritten (default: the selected data set's: "
                    "data/labels/grades.jsonl for handbook, data/imported/NAME/grades.jsonl for an imported set)")
    ap.add_argument("--grader", metavar="NAME", default=os.environ.get("USER") or "grader",
                    help="your name, stored with each grade ($USER, else 'grader')")
    ap.add_argument("--config", action="append", default=[], metavar="NAME",
                    help="grade only this config's answers (repeatable)")
    ap.add_argument("--sample", type=int, metavar="N", help="grade a seeded sample of N answers, equal shares "
                    "per config (default: every answer not yet graded)")
    ap.add_argument("--seed", type=int, default=0, metavar="S", help="seed of --sample and of --order (0)")
    ap.add_argument("--regrade", action="store_true", help="show answers that already have a current grade too")
    ap.add_argument("--second-pass", action="store_true",
                    help="a second grader's blind pass: the answers another grader graded and --grader has not, the "
                    "other grades hidden (docs/judging.md); --order listed or random")
    ap.add_argument("--adjudicate", action="store_true",
                    help="settle the answers two graders disagree on: both verdicts shown, c or w saved as the "
                    "answer's adjudicated grade, which calibration uses (docs/judging.md); --order listed or random")
    ap.add_argument("--support", action="store_true",
                    help="a support pass: the answers --grader has graded whose grade has no support yet; 1 supported "
                    "(every claim of the answer is in the passages shown), 2 partly (some are), 3 not (none is, or "
                    "it contradicts them), s skip; saved on --grader's line, the verdict and note kept "
                    "(docs/judging.md); --order listed or random")
    ap.add_argument("--order", choices=ORDERS, default=DEFAULT_GRADE_ORDER,
                    help=f"listed: config then id; random: a seeded permutation; active: answers whose judge score is "
                    f"uncertain first, drawn with known probabilities, each grade recording its own, for an unbiased "
                    f"weighted accuracy (docs/judging.md) ({DEFAULT_GRADE_ORDER})")
    ap.add_argument("--score-dir", type=Path, metavar="DIR", default=Path("metrics/scores"),
                    help="with --order active: the folder of verdicts.csv (and answers.csv) with the scores "
                    "(metrics/scores)")
    ap.add_argument("--score-judge", metavar="NAME", default=DEFAULT_GRADE_SCORE_JUDGE,
                    help="with --order active: the judge whose score orders, the <NAME>_score column of verdicts.csv; "
                    f"token_f1 falls back to answers.csv's token_f1 ({DEFAULT_GRADE_SCORE_JUDGE})")
    return ap


HANDBOOK_GRADES = Path("data/labels/grades.jsonl")


def default_grades() -> Path:
    """The hand-grades file of the data set params.yaml selects (handbook when there is no
    params.yaml); covidqa has none, so grading it is one error saying to pass --grades."""
    from rag_ablation.core.config import load_config
    from rag_ablation.core.errors import UserError
    from rag_ablation.datasets.registry import grades_path

    name = load_config(Path("params.yaml")).dataset if Path("params.yaml").is_file() else "handbook"
    path = grades_path(name, HANDBOOK_GRADES)
    if path is None:
        raise UserError(f"data set {name!r} keeps no hand grades in the repository: pass --grades FILE")
    return path


def _session(args: argparse.Namespace, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    grades = args.grades or default_grades()
    return run_session(answers=args.answers, questions=args.questions, runs=args.runs, grades=grades,
                       grader=args.grader, configs=args.config, sample=args.sample, seed=args.seed,
                       regrade=args.regrade, order=args.order, score_dir=args.score_dir,
                       score_judge=args.score_judge, second_pass=args.second_pass,
                       adjudicate=args.adjudicate, support=args.support, stdin=stdin, stdout=stdout)


def grade_main(argv: Sequence[str] | None = None, *, stdin: TextIO | None = None,
               stdout: TextIO | None = None) -> int:
    """Parse ``argv``, read the inputs, run the session; returns the exit status (0, or 130
    after Ctrl-C)."""
    return _session(build_parser().parse_args(argv), stdin=stdin, stdout=stdout)


def run(args: argparse.Namespace) -> None:
    """``rag-ablation grade``: the session; exit status 130 after Ctrl-C."""
    status = _session(args)
    if status:
        raise SystemExit(status)


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point (``rag-grade``): a ``UserError`` is one line and exit status 2."""
    status = 0

    def go() -> None:
        nonlocal status
        status = grade_main(argv)

    runner.run(go, cost=False)
    if status:
        sys.exit(status)


if __name__ == "__main__":
    main()
