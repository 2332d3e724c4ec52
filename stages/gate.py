"""Stage `gate`: the retrieval gate's numbers, recorded (rag_ablation.evaluation.gate.rules).

Compares the workspace's per-question scores of the configs in `gate.configs` with the accepted
baseline file (committed; `rag-ablation check --accept` writes it after a review), per slice of
answerable questions and for all of them, with the rules of params' `gate:` block and the
bootstrap settings of `stats:`, and writes one metrics file of numbers only (keys listed in
`rag_ablation.evaluation.gate.formats.to_metrics`), so `dvc metrics show` / `dvc metrics diff` show the
verdict (`pass`), each slice's recall and change, and which rule failed. The verdict lines go to
stderr.

A FAIL verdict does not fail the stage: the pipeline records the verdict (`pass: 0`) and carries
on, so an experiment that loses recall still produces its metrics, plots and report for review.
Failing is CI's job: `rag-ablation check` exits 1 on FAIL. When the two sides cannot be compared
(a gated config without rows on one side, a changed question set or changed labels), the stage
writes `{"comparable": 0, "pass": 0}` and the reason on stderr, and exits 0 too; a missing or
malformed file or bad params remain errors (exit 2).
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.evaluation.gate.baseline import read_baseline
from rag_ablation.evaluation.gate.formats import INCOMPARABLE_METRICS, format_text, to_metrics
from rag_ablation.evaluation.gate.rules import Incomparable, require_searched, run_gate
from rag_ablation.evaluation.scoring.scores import read_scores
from rag_ablation.core.io import write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scores", type=Path, required=True, help="the workspace's per-question retrieval scores")
    ap.add_argument("--baseline", type=Path, required=True, help="the accepted baseline (committed)")
    ap.add_argument("--out", type=Path, required=True, help="the metrics file (JSON)")
    args = ap.parse_args()
    params = load_config()
    new = read_scores(args.scores)
    base = read_baseline(args.baseline)
    try:
        require_searched(params.gate.configs, params)
        result = run_gate(base, new, rules=params.gate, settings=params.stats, against=args.baseline.as_posix(),
                          dataset=params.dataset)
    except Incomparable as e:
        write_json(args.out, INCOMPARABLE_METRICS)
        print(f"gate: not compared: {e}", file=sys.stderr)
        return
    write_json(args.out, to_metrics(result))
    sys.stderr.write(format_text(result))


if __name__ == "__main__":
    runner.run(main)
