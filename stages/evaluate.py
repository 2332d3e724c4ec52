"""Stage `evaluate`: one metrics file with recall@1/5/10 and MRR@10 per retrieval config,
overall and per slice. Loops over params `retrieval` (never a folder listing), so a config
removed from params.yaml disappears from the metrics, and prints why unavailable configs have
no numbers."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rag_ablation import cli
from rag_ablation.evaluation import config_metrics
from rag_ablation.io import write_json
from rag_ablation.params import get, load_params


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=Path, required=True, help="folder of retrieve@NAME outputs, NAME.json")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    metrics = {}
    for name in sorted(get(load_params(), "retrieval")):
        path = args.runs / f"{name}.json"
        if not path.is_file():
            raise FileNotFoundError(f"no run file {path} for config {name!r}: run `dvc repro retrieve@{name}`")
        run = json.loads(path.read_text(encoding="utf-8"))
        metrics[name] = config_metrics(run)
        if run["status"] != "ok":
            print(f"{name}: {run['status']}: {run['reason']}", file=sys.stderr)
    write_json(args.out, metrics)


if __name__ == "__main__":
    cli.run(main)
