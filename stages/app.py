"""Stage `app@NAME`: a team's own retriever or RAG app (`apps.NAME` in params.yaml), run over
every question and written as the run file every `retrieve@NAME` writes.

Calls the app (a python function, an http service) through the call cache, or reads what it
wrote (a TREC run with its passages, an answers file): rag_ablation.retrieval.external.app_run.
The run file holds each question's ranking of the app's passages (ids `DOC#...`), the text of
every passage, the app's answers when it gives them (`answers`), and the summary (`app`:
questions with fewer than k passages or none, ties re-sorted, versions, the rankings'
fingerprint and whether it changed since the last run of the same app). The leaf latency file
holds each call's time (P50/P95/P99) and how many calls reached the app. No labels are read:
the `score` stage scores the passages by their text. A config left out of `run_configs` writes
status `unavailable` without calling the app.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.core.io import read_jsonl, write_json
from rag_ablation.data.questions import Question
from rag_ablation.retrieval.external.app_run import app_latency, run_app
from rag_ablation.retrieval.external.call_cache import CallCache


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--latency", type=Path, required=True)
    args = ap.parse_args()

    params = load_config()
    cfg = params.config(args.name)
    questions = [Question(**d) for d in read_jsonl(args.questions)]
    out = {"config": cfg.resolved(), "status": "ok", "reason": None, "questions": [], "passages": {}}
    left_out = params.left_out(cfg.name)
    if left_out is not None:
        out.update(status="unavailable", reason=left_out)
        runner.write_unavailable(out, out=args.out, latency=args.latency, no_work=app_latency([], len(questions)),
                                 label=f"app@{cfg.name}")
        return
    with CallCache() as cache:
        result = run_app(cfg, questions, base=Path.cwd(), cache=cache,
                         progress=lambda it: tqdm(it, desc=f"app@{cfg.name}", file=sys.stderr))
    counts = {k: result.summary.pop(k) for k in ("calls", "cached")}
    out.update(questions=result.records, passages=result.passages, app=result.summary)
    if result.answers:
        out["answers"] = dict(sorted(result.answers.items()))
    write_json(args.out, out)
    write_json(args.latency, {**app_latency(result.seconds, len(questions)), **counts})
    s = result.summary
    print(f"app@{cfg.name}: {counts['calls']} call(s) to the app, {counts['cached']} from the cache; "
          f"{s['short']} question(s) with fewer than {cfg.k} passages, {s['missing']} with none"
          + ("; the rankings differ from the last run of the same app: it is not reproducible" if s["changed"] else ""),
          file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
