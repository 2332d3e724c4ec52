"""Stage `stats`: intervals, paired comparisons with the baseline and subsampling, from the
per-question scores of the `score` stage (rag_ablation.evaluation.statistics.stats).

Writes one metrics file, a nested dict of numbers only, so `dvc metrics diff main` shows each
change together with its interval and p-value rows:

    <config>.available, .is_baseline, .n, .n_unanswerable_excluded
    <config>.recall_at_5.value, .ci_low, .ci_high (.design_effect with stats.cluster)
    <config>.by_slice.<slice>.n, .too_small (0/1), .recall_at_5.value, .ci_low, .ci_high
    <config>.vs_baseline.n, .only_config, .only_baseline
    <config>.vs_baseline.hit_at_5.delta, .ci_low, .ci_high, .fixed, .broken, .both_right,
        .both_wrong, .p_sign, .p_holm, .family, .mde, .real (0/1)
        (the key is stats.measure's column; a continuous one, e.g. ndcg_at_10 of a graded data
        set under `measure: auto`, counts .better, .worse (by more than .margin), .within_margin,
        .both_zero, and has .p_sign_flip instead of .p_sign)
    <config>.vs_baseline.rr_at_10.delta, .ci_low, .ci_high, .p_sign_flip, .p_holm, .family, .mde
    <config>.vs_baseline.by_slice.<slice>.fixed, .broken (continuous: .better, .worse), .delta,
        .p_sign (or .p_sign_flip), .n, .too_small
    <baseline>.subsample.n_20.low, .high (the 90% range of its measure over the draws)
    <config>.subsample.n_20.lost_share, .reversed_share
    <config>.answers.contains_reference.value, .ci_low, .ci_high, .n (judge-free proxy)
    <config>.answers.lexical_support.value, .ci_low, .ci_high, .n, .n_undefined (when any answer has one)
    <config>.audited.recall_at_5.value, .ci_low, .ci_high, .changed, .newly_found (label audit)

and the plot data under the plots folder (rag_ablation.evaluation.report.plot_data). Loops over the
configs of params.yaml in their order, never over a folder listing; a config with no scored
rows is `{"available": 0}`. Floats are rounded to 4 decimals (p-values to 4 significant
digits), and nothing depends on the clock, so an unchanged rerun writes identical bytes.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.evaluation.statistics.comparison import rows_by_config
from rag_ablation.evaluation.statistics.stats import analyze, audit_entry, to_metrics
from rag_ablation.evaluation.report.plot_data import all_plots
from rag_ablation.evaluation.scoring.scores import read_scores
from rag_ablation.core.io import write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--retrieval-scores", type=Path, required=True)
    ap.add_argument("--answer-scores", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True, help="the metrics file (JSON)")
    ap.add_argument("--plots", type=Path, required=True, help="folder for the plot data files")
    ap.add_argument("--audited-scores", type=Path, required=True, help="the per-question scores under the audited labels")
    args = ap.parse_args()
    params = load_config()
    retrieval_rows = read_scores(args.retrieval_scores)
    result = analyze(retrieval_rows, read_scores(args.answer_scores),
                     configs=list(params.retrieval), answered=list(params.generation.configs),
                     settings=params.stats)
    baseline = result.config(result.baseline)
    if baseline is None or not baseline.available:
        print(f"stats: baseline {result.baseline!r} has no scored rows (its run is unavailable), so no config "
              "is compared with it; set stats.baseline to an available config", file=sys.stderr)
    metrics = to_metrics(result)
    original, audited = rows_by_config(retrieval_rows), rows_by_config(read_scores(args.audited_scores))
    for name, entry in metrics.items():
        if entry.get("available") and name in audited:
            entry["audited"] = audit_entry(original[name], audited[name], result.settings)
    write_json(args.out, metrics)
    for name, rows in all_plots(result).items():
        write_json(args.plots / name, rows)


if __name__ == "__main__":
    runner.run(main)
