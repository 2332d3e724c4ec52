"""Stage `report_html`: metrics/report.html, the report as one offline page.

Reads what the `report` stage reads (the statistics metrics file, the graded-answers detail
file) and, to go from a number to the questions behind it, the per-question scores and
verdicts, the checked question set, the label audit, the stored rankings with their passages,
the chunkings' labels, the answers, the searched texts of the query transforms and the latency
files. Gathers it into one JSON blob
(rag_ablation.evaluation.report.html_data) and writes the page around it with the vendored
chart libraries inlined (rag_ablation.evaluation.report.html): no network, opened by
double-click from any folder. Configs follow params.yaml, never a folder listing.

Two inputs are read but are no DVC dependency. `--latency` (metrics/latency/, the P95 retrieval
latency per query and the seconds per answer of the quality-against-cost charts): timings are
rewritten with new values by every run of a stage, so, as everywhere in the project, they are a
leaf record and never an input; the page is redrawn when a run or the answers change, and picks
up the timings of that moment (a missing or unreadable latency file leaves the config off the
chart). `--sweep` (`rag-ablation sweep-report`'s metrics/sweep.json): optional, no stage writes
it, a fresh project has none; a missing file means no sweep section, and so does one made on
another data set than params.yaml's `dataset` (the page says so). `dvc repro -f report_html`
redraws the page with the current timings and sweep summary. Deterministic: the same inputs
give the same bytes.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.core.io import write_text
from rag_ablation.evaluation.report.html import render
from rag_ablation.evaluation.report.html_data import page_data, read_inputs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stats", type=Path, required=True, help="the metrics file of the stats stage")
    ap.add_argument("--judge", type=Path, required=True, help="the detail file of the judge_eval stage")
    ap.add_argument("--scores", type=Path, required=True, help="per-question retrieval scores (score stage)")
    ap.add_argument("--verdicts", type=Path, required=True, help="per-answer verdicts (judge_eval stage)")
    ap.add_argument("--questions", type=Path, required=True, help="the checked question set (questions stage)")
    ap.add_argument("--audit", type=Path, required=True, help="the data set's label audit (dataset stage)")
    ap.add_argument("--runs", type=Path, required=True, help="the folder of stored rankings (retrieve stages)")
    ap.add_argument("--labels", type=Path, required=True, help="the folder of chunk labels (labels stages)")
    ap.add_argument("--answers", type=Path, required=True, help="the folder of answers (generate stages)")
    ap.add_argument("--queries", type=Path, required=True, help="the folder of searched texts (queries stages)")
    ap.add_argument("--latency", type=Path, required=True, help="the folder of latency files (read, not a dependency)")
    ap.add_argument("--apps", type=Path, default=None, help="the score stage's summary of the app configs")
    ap.add_argument("--sweep", type=Path, default=None, help="the sweep summary, if any (optional)")
    ap.add_argument("--documents", type=Path, default=None,
                    help="the documents' provenance (dataset stage): pages and slides of converted files")
    ap.add_argument("--chunks", type=Path, default=None, help="the folder of chunk files (chunk stages)")
    ap.add_argument("--out", type=Path, required=True, help="the page (HTML)")
    args = ap.parse_args()
    params = load_config()
    inputs = read_inputs(params, stats=args.stats, judge=args.judge, scores=args.scores, verdicts=args.verdicts,
                         questions=args.questions, audit=args.audit, runs=args.runs, labels=args.labels,
                         answers=args.answers, latency=args.latency, sweep=args.sweep,
                         queries=args.queries, apps=args.apps, documents=args.documents, chunks=args.chunks)
    write_text(args.out, render(page_data(inputs, params)))


if __name__ == "__main__":
    runner.run(main)
