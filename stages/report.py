"""Stage `report`: metrics/report.md from the statistics metrics file (`stats` stage) and the
graded-answers detail file (`judge_eval` stage).

Renders the configs with their intervals, recall per slice, paired changes against the
baseline with fixed and broken counts and Holm-adjusted p-values, the subsampling table and the
judge-free answer proxy (rag_ablation.evaluation.report.markdown), then the judges against the hand
grades, accuracy three ways, canaries, bias, failure tables and unanswerable questions
(rag_ablation.evaluation.report.judge_report); with apps, what their runs say beyond the scores
(rag_ablation.evaluation.report.apps_report). Configs follow params.yaml, never a
folder listing. The report only formats numbers already in the metrics file, so it is as
deterministic as that file.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.core.io import read_output, write_text
from rag_ablation.evaluation.report.apps_report import render_apps
from rag_ablation.evaluation.report.judge_report import render_answers
from rag_ablation.evaluation.report.documents_report import render_documents
from rag_ablation.evaluation.report.markdown import render


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--stats", type=Path, required=True, help="the metrics file of the stats stage")
    ap.add_argument("--judge", type=Path, required=True, help="the detail file of the judge_eval stage")
    ap.add_argument("--apps", type=Path, default=None, help="the score stage's summary of the app configs")
    ap.add_argument("--corpus", type=Path, default=None,
                    help="the dataset stage's metrics: documents per format, files excluded or skipped")
    ap.add_argument("--out", type=Path, required=True, help="the report (Markdown)")
    args = ap.parse_args()
    params = load_config()
    text = render(read_output(args.stats, "stats"), configs=list(params.searched()),
                  answered=list(params.generation.configs), settings=params.stats, not_run=params.not_searched())
    answers = render_answers(read_output(args.judge, "judge_eval"), configs=list(params.generation.configs),
                             judges=list(params.judge.judges), confidence=params.stats.confidence)
    apps = render_apps(read_output(args.apps, "score")) if args.apps is not None and args.apps.is_file() else ""
    documents = (render_documents(read_output(args.corpus, "dataset"))
                 if args.corpus is not None and args.corpus.is_file() else "")
    write_text(args.out, text + ("\n" + documents if documents else "") + ("\n" + apps if apps else "")
               + ("\n" + answers + "\n" if answers else ""))


if __name__ == "__main__":
    runner.run(main)
