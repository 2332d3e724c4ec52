"""Stage `judge_eval`: calibration of every judge against the hand grades, accuracy three ways
(hand grades, judge, PPI++), canaries, bias, failure tables, the two-by-two, support
(groundedness) and unanswerable questions, from the files of judge@, support@, judge_checks and
score (rag_ablation.evaluation.judges.judge_eval).

Writes the numbers (metrics/judge.json, for `dvc metrics`), the same with question ids, tables
and reasons (for the report), the per-question verdicts of every judge next to the hand grade
(`1`, `0`, empty when ungraded; a judge's `invalid` or `unavailable` spelled out) and the
coverage-accuracy curve of the decline threshold (a plot). No LLM is called here.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.evaluation.judges.grades import load_grades
from rag_ablation.evaluation.judges.judge_eval import canary_file, evaluate, verdict_fields
from rag_ablation.evaluation.scoring.scores import read_scores, write_scores
from rag_ablation.core.io import read_output, write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--answer-scores", type=Path, required=True)
    ap.add_argument("--retrieval-scores", type=Path, required=True)
    ap.add_argument("--judgments", type=Path, required=True, help="folder of judge@CONFIG outputs")
    ap.add_argument("--checks", type=Path, required=True, help="the judge_checks output")
    ap.add_argument("--grades", type=Path, required=True)
    ap.add_argument("--support", type=Path, required=True, help="folder of support@CONFIG outputs (P(SUPPORTED))")
    ap.add_argument("--out", type=Path, required=True, help="metrics (numbers only)")
    ap.add_argument("--detail", type=Path, required=True, help="the same with ids and tables, for the report")
    ap.add_argument("--verdicts", type=Path, required=True, help="per-question verdicts (CSV)")
    ap.add_argument("--plot", type=Path, required=True, help="coverage-accuracy curve rows (JSON)")
    ap.add_argument("--canaries", type=Path, required=True, help="canary answers and every judge's verdict (CSV)")
    ap.add_argument("--roc", type=Path, required=True, help="every scored judge's ROC curve on the hand grades (JSON)")
    args = ap.parse_args()
    params = load_config()
    judges = list(params.judge.judges)
    judgments = {c: read_output(args.judgments / f"{c}.json", f"judge@{c}") for c in params.generation.configs}
    checks = read_output(args.checks, "judge_checks")
    support = {c: read_output(args.support / f"{c}.json", f"support@{c}") for c in params.generation.configs}
    metrics, detail, verdict_rows, plot_rows, roc_rows = evaluate(
        answer_rows=read_scores(args.answer_scores), retrieval_rows=read_scores(args.retrieval_scores),
        judgments=judgments, checks=checks, grades=load_grades(args.grades),
        judges=judges, settings=params.stats, threshold_folds=params.judge.threshold_folds,
        crossfit_seeds=params.judge.crossfit_seeds, refit_resamples=params.judge.refit_resamples, support=support)
    write_json(args.out, metrics)
    write_json(args.detail, detail)
    write_scores(args.verdicts, verdict_rows, verdict_fields(judges))
    write_json(args.plot, plot_rows)
    write_json(args.roc, roc_rows)
    write_scores(args.canaries, *canary_file(checks))
    g = detail["grades"]
    print(f"judge_eval: {g['matching']} hand grades match current answers ({g['stale']} stale, "
          f"{g['unknown']} for answers that no longer exist) of {g['answers']} answers", file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
