"""Stage `evaluate`: one metrics file with recall@1/5/10 and MRR@10 per retrieval config,
overall and per slice, plus judge-free answer measures for the configs in
`generation.configs`, all aggregated from the per-question scores of the `score` stage. Loops
over params (never a folder listing), so a config removed from params.yaml disappears from the
metrics; a config with no scored rows (its run is unavailable) is `{"available": 0}`."""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.evaluation.scoring.scores import read_scores
from rag_ablation.evaluation.scoring.evaluate import metrics_file
from rag_ablation.core.io import write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--retrieval-scores", type=Path, required=True)
    ap.add_argument("--answer-scores", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    params = load_config()
    retrieval_rows = read_scores(args.retrieval_scores)
    answer_rows = read_scores(args.answer_scores)
    scored = {r["config"] for r in retrieval_rows}
    answered = {r["config"] for r in answer_rows}
    metrics = metrics_file(
        configs=params.retrieval,
        status={name: "ok" if name in scored else "unavailable" for name in params.retrieval},
        retrieval_rows=retrieval_rows,
        answered={name: "ok" if name in answered else "unavailable" for name in params.generation.configs},
        answer_rows=answer_rows,
    )
    write_json(args.out, metrics)


if __name__ == "__main__":
    runner.run(main)
