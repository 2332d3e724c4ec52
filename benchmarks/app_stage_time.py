"""The `app@NAME` stage wrapping BM25 against the built-in `retrieve@bm25` stage, side by side.

Both stage scripts run as DVC runs them (a fresh Python process each, ``stages/<name>.py`` with
the pipeline's own arguments) in a scratch folder holding the repository's params.yaml plus one
app, ``bm25_py``: ``tests/fixtures/own_app/bm25_app.py``, the project's BM25 behind the python
method's contract (it chunks the corpus and builds its index in the process, as a team's app
would). Inputs come from the repository's last ``dvc repro`` (data/build: questions, the base
chunks, its BM25 index and queries). Each round runs, in turn: the built-in stage; the app stage
with an empty call cache (every question asks the app); the app stage again (every answer from the
cache: a rerun of an unchanged app). The best of ``--rounds`` rounds counts for each.

Goal (issue 45): the python method at most 1.2x the built-in stage's wall time.

Usage:  .venv/bin/python benchmarks/app_stage_time.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "data" / "build"


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{res.stderr}")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    for need in ("questions.jsonl", "chunks/base.jsonl", "bm25/base", "dense/base", "queries/none.json"):
        if not (BUILD / need).exists():
            sys.exit(f"no {BUILD / need}: run `dvc repro` first")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        params = yaml.safe_load((ROOT / "params.yaml").read_text())
        base = params["chunkings"]["base"]
        params["apps"] = {"bm25_py": {
            "method": "python", "target": "bm25_app:retrieve", "path": [str(ROOT / "tests/fixtures/own_app")],
            "deps": str(ROOT / "tests/fixtures/own_app"),
            "args": {"corpus": str(ROOT / "data/build/dataset/corpus"), "size": base.get("size") or params["chunk_size"],
                     "overlap": base.get("overlap") or params["chunk_overlap"]}}}
        params["run_configs"] = "all"  # every config of this file, bm25_py included
        (d / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        py = sys.executable
        builtin = [py, str(ROOT / "stages/retrieve.py"), "--name", "bm25", "--questions", str(BUILD / "questions.jsonl"),
                   "--chunks", str(BUILD / "chunks/base.jsonl"), "--dense", str(BUILD / "dense/base"),
                   "--bm25", str(BUILD / "bm25/base"), "--queries", str(BUILD / "queries/none.json"),
                   "--query-vectors", str(BUILD / "query_vectors/none"),
                   "--query-times", str(ROOT / "metrics/latency/query_embed_none.json"),
                   "--out", str(d / "runs/bm25.json"), "--latency", str(d / "lat/bm25.json")]
        app = [py, str(ROOT / "stages/app.py"), "--name", "bm25_py", "--questions", str(BUILD / "questions.jsonl"),
               "--out", str(d / "runs/bm25_py.json"), "--latency", str(d / "lat/bm25_py.json")]
        times: dict[str, list[float]] = {"retrieve@bm25 (built-in)": [], "app@bm25_py, cold call cache": [],
                                         "app@bm25_py, rerun from the cache": []}
        for r in range(args.rounds):
            cache = d / f"cache{r}"
            env = {**os.environ, "RAG_ABLATION_CACHE": str(cache)}
            times["retrieve@bm25 (built-in)"].append(timed(builtin, d, env))
            times["app@bm25_py, cold call cache"].append(timed(app, d, env))
            calls_cold = json.loads((d / "lat/bm25_py.json").read_text())["calls"]
            times["app@bm25_py, rerun from the cache"].append(timed(app, d, env))
            calls_warm = json.loads((d / "lat/bm25_py.json").read_text())["calls"]
            shutil.rmtree(cache)
        ref = min(times["retrieve@bm25 (built-in)"])
        print(f"| stage | best of {args.rounds} (s) | all rounds (s) | / built-in |")
        print("|---|---|---|---|")
        for name, ts in times.items():
            print(f"| {name} | {min(ts):.2f} | {', '.join(f'{t:.2f}' for t in ts)} | {min(ts) / ref:.2f}x |")
        print(f"\ncalls reaching the app: cold cache {calls_cold}, rerun {calls_warm}")


if __name__ == "__main__":
    main()
