"""Dense retrieval throughput: batched, cached query embedding against one query at a time.

``--questions`` distinct question texts (the handbook's questions, each with a numbered suffix
so no two are the same text) go through ``rag_ablation.retrieval.runner.run_config`` for a dense
config over a flat FAISS index of ``--chunks`` vectors, three ways side by side in one run:

- batched, cold cache: ``embed_many`` (``query_vectors.embed_queries``, what the retrieve stage does)
  with an empty embedding cache in a temporary folder: every text is embedded, in batches of
  ``--batch-size``;
- batched, warm cache: the same again, as a second config with the same questions would run;
- one at a time (the path before batching): ``embed_query`` per question, on the first
  ``--single`` questions only (it is the slow one), rate extrapolated per question.

The index holds random unit vectors: a flat search's cost depends on the count and dimension of
the vectors, not their values, and embedding 10,000 real chunks would take minutes without
telling anything about query throughput. The batched runs include what the retrieve stage adds
for its latency file: one warm single-text embedding timed for each of at most
``latency_rule.TIMED_QUESTIONS`` questions (about 200 x 8 ms). Reported: questions/s of each, the goal (at least
100 questions/s for 10,000 questions over 10,000 chunks on 2 cores) and the step percentiles of
the cold run.

Usage:  .venv/bin/python benchmarks/query_embedding.py [--questions 10000] [--chunks 10000]
        [--single 300] [--batch-size 32] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--single", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import numpy as np

    from rag_ablation.core.config import RetrievalConfig
    from rag_ablation.data.questions import Question
    from rag_ablation.retrieval.embeddings import EmbeddingCache, encode, load_model
    from rag_ablation.retrieval.faiss_index import build_flat_ip
    from rag_ablation.retrieval.query_vectors import embed_queries
    from rag_ablation.retrieval.runner import Retrievers, run_config, step_latency

    base = [json.loads(line)["question"] for line in
            (REPO / "data" / "questions" / "handbook.jsonl").read_text(encoding="utf-8").splitlines() if line]
    texts = [f"{base[i % len(base)]} (case {i // len(base) + 1})" for i in range(args.questions)]
    questions = [Question(id=f"q{i}", question=t, doc=None, span=None, answer="", slice="main", track="t")
                 for i, t in enumerate(texts)]
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.chunks, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = build_flat_ip(vectors)
    ids = [f"c{i}" for i in range(args.chunks)]
    cfg = RetrievalConfig.from_params("dense", {"chunking": "base", "method": "dense"}, chunkings=("base",),
                                      transforms=("none",))
    model = load_model("all-MiniLM-L6-v2", threads=args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "embeddings.sqlite")
        r = Retrievers(dense_index=index, dense_ids=ids, embed_query=lambda t: encode(model, [t])[0],
                       embed_many=lambda ts: embed_queries(ts, model_name="all-MiniLM-L6-v2", load=lambda: model,
                                                           batch_size=args.batch_size, cache=cache))
        t0 = time.perf_counter()
        _, cold_times = run_config(cfg, questions, r)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        run_config(cfg, questions, r)
        warm = time.perf_counter() - t0
        cache.close()
    single_r = Retrievers(dense_index=index, dense_ids=ids, embed_query=lambda t: encode(model, [t])[0])
    t0 = time.perf_counter()
    run_config(cfg, questions[: args.single], single_r)
    single = time.perf_counter() - t0

    n = args.questions
    print(f"{n:,} questions over {args.chunks:,} chunks (flat index), MiniLM on {args.threads} threads, "
          f"batch {args.batch_size}")
    print(f"batched, cold cache:   {n / cold:8.1f} questions/s ({cold:.1f} s)   goal >= 100: "
          f"{'met' if n / cold >= 100 else 'MISSED'}")
    print(f"batched, warm cache:   {n / warm:8.1f} questions/s ({warm:.1f} s)")
    print(f"one at a time:         {args.single / single:8.1f} questions/s (first {args.single} questions, "
          f"{single:.1f} s)")
    print(f"ratio cold batched / one at a time: {(n / cold) / (args.single / single):.1f}x")
    print("cold run steps (ms):", json.dumps({k: v for k, v in step_latency(cold_times).items() if k != "n_questions"}))


if __name__ == "__main__":
    sys.exit(main())
