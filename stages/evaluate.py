"""Stage `evaluate`: one metrics file with recall@1/5/10 and MRR@10 per retrieval config,
overall and per slice, plus judge-free answer measures for the configs in
`generation.configs`. Loops over params (never a folder listing), so a config removed from
params.yaml disappears from the metrics, and prints why unavailable configs have no numbers."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_ablation import cli
from rag_ablation.evaluation import metrics_file
from rag_ablation.io import read_jsonl, write_json
from rag_ablation.params import get, load_params


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=Path, required=True, help="folder of retrieve@NAME outputs, NAME.json")
    ap.add_argument("--answers", type=Path, required=True, help="folder of generate@NAME outputs, NAME.json")
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    params = load_params()
    metrics, why = metrics_file(
        retrieval=get(params, "retrieval"),
        generation=list(get(params, "generation.configs")),
        runs=args.runs,
        answers=args.answers,
        references={q["id"]: q["answer"] for q in read_jsonl(args.questions)},
        refusal_phrases=[str(p) for p in get(params, "generation.refusal_phrases")],
    )
    for line in why:
        print(line, file=sys.stderr)
    write_json(args.out, metrics)


if __name__ == "__main__":
    cli.run(main)
