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
from rag_ablation.bm25 import make_scorer
from rag_ablation.embeddings import encode, load_model
from rag_ablation.indexes import load_bm25, load_dense
from rag_ablation.io import read_jsonl, write_json
from rag_ablation.metrics import percentiles_ms
from rag_ablation.params import check_config_keys, get, load_params
from rag_ablation.questions import Question
from rag_ablation.rerank import RerankerUnavailable, load_reranker
from rag_ablation.retrieval import STEPS, Retrievers, parse_config, run_config


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
    threads = int(emb.get("threads", 1))
    questions = [Question(**d) for d in read_jsonl(args.questions)]
    resolved = {"name": cfg.name, **get(params, f"retrieval.{args.name}"),
                "embedding_model": emb["model"], "bm25": bm if cfg.uses_bm25 else None}
    out = {"config": resolved, "status": "ok", "reason": None, "questions": []}

    chunks = load_chunks(args.chunks)
    r = Retrievers(chunk_ids=[c.id for c in chunks], tokenizer=str(bm["tokenizer"]),
                   chunk_text={c.id: c.text for c in chunks})
    if cfg.rerank is not None:
        try:
            r.reranker = load_reranker(str(cfg.rerank["model"]), threads=threads,
                                       allow_placeholder=bool(cfg.rerank.get("allow_placeholder", False)))
        except RerankerUnavailable as e:
            out.update(status="unavailable", reason=str(e))
            write_json(args.out, out)
            write_json(args.latency, {"n_questions": 0})
            print(f"retrieve@{cfg.name}: unavailable: {e}", file=sys.stderr)
            return
        if r.reranker.placeholder:
            out.update(status="placeholder", reason=f"reranker {cfg.rerank['model']!r} has an untrained head: "
                                                    "rankings are for plumbing and latency only")
    if cfg.uses_dense:
        r.dense_index, r.dense_ids, _ = load_dense(args.dense)
        model = load_model(str(emb["model"]), threads=threads)
        r.embed_query = lambda text: encode(model, [text])[0]
    if cfg.uses_bm25:
        stored = load_bm25(args.bm25)
        r.bm25_ids = stored["chunk_ids"]
        r.bm25 = make_scorer(str(bm["impl"]), stored["tokens"], k1=float(bm["k1"]), b=float(bm["b"]),
                             epsilon=float(bm["epsilon"]))
    relevant = json.loads(args.labels.read_text(encoding="utf-8"))["relevant"]
    queries = json.loads(args.queries.read_text(encoding="utf-8"))["queries"]
    records, times = run_config(cfg, questions, relevant, r, queries=queries,
                                progress=lambda it: tqdm(it, desc=f"retrieve@{cfg.name}", file=sys.stderr))
    out["questions"] = records
    write_json(args.out, out)
    latency = {step: percentiles_ms([t[step] for t in times if step in t]) for step in STEPS}
    totals = [sum(t.values()) for t in times]
    write_json(args.latency, {"n_questions": len(times), "total": percentiles_ms(totals),
                              **{s: v for s, v in latency.items() if v}})


if __name__ == "__main__":
    cli.run(main)
