"""Stage `retrieve@NAME`: run retrieval config NAME over every answerable question.

Writes the stored ranking (top k chunk ids and scores per question, the resolved config inside
the file, each question's first relevant rank) and, as a leaf metrics file that no stage reads,
P50/P95/P99 per step. A config whose reranker cannot be loaded writes status `unavailable` with
the reason and no rankings; one whose reranker is an untrained placeholder writes status
`placeholder` (rankings kept for plumbing, never reported as numbers).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from rag_ablation import cli
from rag_ablation.chunking import load_chunks
from rag_ablation.io import read_jsonl, write_json
from rag_ablation.params import check_config_keys, get, load_params
from rag_ablation.questions import Question
from rag_ablation.retrieval import open_retrievers, parse_config, run_config, step_latency


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--chunks", type=Path, required=True)
    ap.add_argument("--labels", type=Path, required=True)
    ap.add_argument("--dense", type=Path, required=True)
    ap.add_argument("--bm25", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True, help="queries@TRANSFORM output")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--latency", type=Path, required=True)
    args = ap.parse_args()

    params = load_params()
    check_config_keys(get(params, "retrieval"), "retrieval")
    cfg = parse_config(args.name, get(params, f"retrieval.{args.name}"), get(params, "chunkings"),
                       get(params, "query_transforms"))
    emb, bm = get(params, "embedding"), get(params, "bm25")
    questions = [Question(**d) for d in read_jsonl(args.questions)]
    resolved = {"name": cfg.name, **get(params, f"retrieval.{args.name}"),
                "embedding_model": emb["model"], "bm25": bm if cfg.uses_bm25 else None}
    out = {"config": resolved, "status": "ok", "reason": None, "questions": []}

    r, status, reason = open_retrievers(cfg, chunks=load_chunks(args.chunks), dense_dir=args.dense,
                                        bm25_path=args.bm25, embedding=emb, bm25=bm)
    out.update(status=status, reason=reason)
    if r is None:
        write_json(args.out, out)
        write_json(args.latency, step_latency([]))
        print(f"retrieve@{cfg.name}: {status}: {reason}", file=sys.stderr)
        return
    relevant = json.loads(args.labels.read_text(encoding="utf-8"))["relevant"]
    queries = json.loads(args.queries.read_text(encoding="utf-8"))["queries"]
    records, times = run_config(cfg, questions, relevant, r, queries=queries,
                                progress=lambda it: tqdm(it, desc=f"retrieve@{cfg.name}", file=sys.stderr))
    out["questions"] = records
    write_json(args.out, out)
    write_json(args.latency, step_latency(times))


if __name__ == "__main__":
    cli.run(main)
