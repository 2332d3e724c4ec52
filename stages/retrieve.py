"""Stage `retrieve@NAME`: run retrieval config NAME over every question.

Writes the stored ranking (top k chunk ids and scores per question, the text of every ranked
chunk, the resolved config with its defaults inside the file, status and reason) and, as a leaf metrics file that no stage
reads, P50/P95/P99 per step. A dense or hybrid config searches with the vectors
`query_vectors@TRANSFORM` embedded for its query transform and is charged, per timed question, the
embedding time measured there (it loads no embedding model). No labels are read: scoring rankings is the `score` stage's job,
so a label change never reruns a search. A config left out of `run_configs`, or whose reranker cannot be loaded, writes status
`unavailable` with the reason and no rankings; one whose reranker is an untrained placeholder
writes status `placeholder` (rankings kept for plumbing, never reported as numbers).
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from rag_ablation.core import runner
from rag_ablation.data.chunks import load_chunks
from rag_ablation.core.config import load_config
from rag_ablation.core.io import read_json, read_jsonl, write_json
from rag_ablation.data.questions import Question
from rag_ablation.retrieval.embeddings import cache_name
from rag_ablation.retrieval.query_vectors import charged_times, read_vectors
from rag_ablation.retrieval.runner import (open_retrievers, ranked_passages, resolved_config, run_config,
                                          step_latency)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--chunks", type=Path, required=True)
    ap.add_argument("--dense", type=Path, required=True)
    ap.add_argument("--bm25", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True, help="queries@TRANSFORM output")
    ap.add_argument("--query-vectors", type=Path, required=True, help="query_vectors@TRANSFORM's vectors folder")
    ap.add_argument("--query-times", type=Path, required=True, help="query_vectors@TRANSFORM's latency file")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--latency", type=Path, required=True)
    args = ap.parse_args()

    params = load_config()
    cfg = params.config(args.name)
    questions = [Question(**d) for d in read_jsonl(args.questions)]
    out = {"config": resolved_config(cfg, embedding=params.embedding, bm25=params.bm25, faiss=params.faiss),
           "status": "ok", "reason": None, "questions": [], "passages": {}}

    transformed = read_json(args.queries)
    embed_seconds = None
    left_out = params.left_out(cfg.name)
    if left_out is not None:  # run_configs names other configs: no index of its own was built
        r, status, reason = None, "unavailable", left_out
    elif transformed.get("status", "ok") != "ok":  # its query transform could not run (no LLM)
        r, status, reason = None, "unavailable", transformed["reason"]
    else:
        stored = None  # a dense config: its transform's vectors, and the embedding times charged to it
        if cfg.uses_dense:
            stored = read_vectors(args.query_vectors).lookup([q.id for q in questions],
                                                             model=cache_name(params.embedding))
            embed_seconds = charged_times(read_json(args.query_times))
        r, status, reason = open_retrievers(cfg, chunks=load_chunks(args.chunks), dense_dir=args.dense,
                                            bm25_path=args.bm25, embedding=params.embedding, bm25=params.bm25,
                                            faiss=params.faiss, stored_vectors=stored)
    out.update(status=status, reason=reason)
    if r is None:
        runner.write_unavailable(out, out=args.out, latency=args.latency, no_work=step_latency([]),
                                 label=f"retrieve@{cfg.name}")
        return
    queries = transformed["queries"]
    records, times = run_config(cfg, questions, r, queries=queries, embed_seconds=embed_seconds,
                                progress=lambda it: tqdm(it, desc=f"retrieve@{cfg.name}", file=sys.stderr))
    out["questions"] = records
    out["passages"] = ranked_passages(records, r.chunk_text or {})
    write_json(args.out, out)
    write_json(args.latency, step_latency(times, len(questions)))


if __name__ == "__main__":
    runner.run(main)
