"""Stage `evaluate`: one metrics file with recall@1/5/10 and MRR@10 per retrieval config,
overall and per slice, plus judge-free answer measures for the configs in
`generation.configs`. Loops over params (never a folder listing), so a config removed from
params.yaml disappears from the metrics, and prints why unavailable configs have no numbers."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rag_ablation import cli
from rag_ablation.answers import answer_measures
from rag_ablation.evaluation import config_metrics
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
    metrics = {}
    for name in sorted(get(params, "retrieval")):
        path = args.runs / f"{name}.json"
        if not path.is_file():
            raise FileNotFoundError(f"no run file {path} for config {name!r}: run `dvc repro retrieve@{name}`")
        run = json.loads(path.read_text(encoding="utf-8"))
        metrics[name] = config_metrics(run)
        if run["status"] != "ok":
            print(f"{name}: {run['status']}: {run['reason']}", file=sys.stderr)
    references = {q["id"]: q["answer"] for q in read_jsonl(args.questions)}
    phrases = [str(p) for p in get(params, "generation.refusal_phrases")]
    for name in get(params, "generation.configs"):
        if name not in metrics:
            raise ValueError(f"generation.configs names {name!r}, which is not a retrieval config; "
                             f"expected some of: {', '.join(sorted(metrics))}")
        path = args.answers / f"{name}.json"
        if not path.is_file():
            raise FileNotFoundError(f"no answers file {path} for config {name!r}: run `dvc repro generate@{name}`")
        answers = json.loads(path.read_text(encoding="utf-8"))
        metrics[name]["answers"] = (answer_measures(answers["answers"], references, phrases)
                                    if answers["status"] == "ok" else {"available": 0})
    write_json(args.out, metrics)


if __name__ == "__main__":
    cli.run(main)
