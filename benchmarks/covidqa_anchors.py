"""Reproduce the COVID-QA reference table (shared/notes/anchors-covidqa.md) with this project's code.

Protocol (the anchors'): the 1,087 questions whose first answer span has >= 20 characters
(``rag_ablation.datasets.covidqa.load_covidqa``); ``chars`` chunks of SIZE with SIZE/5 overlap from this
project's recursive splitter; a chunk is relevant if it comes from the gold document and contains
the span or any 30-character window of it (``relevant_chunks(window=30, span_docs=...)``); BM25
k1=1.5, b=0.75 over the regex tokenizer; MiniLM dense over a FAISS flat inner-product index;
RRF k=60 over the top 100 of each (dense + rank-bm25 at its default epsilon 0.25).

Rankings follow ``rag_ablation.retrieval.runner.retrieve_one``: top 100 by score (ties to the lower chunk
index), BM25 hits with score 0 dropped, RRF over the two lists, first 10 kept.

BM25 rows: rank-bm25 at its default epsilon 0.25 (the anchors' BM25Okapi), rank-bm25 at epsilon 0,
and bm25s (which only exists at epsilon 0 in our API); the last two must agree, and the script
prints the largest score difference between them. rank-bm25 (eps .25) and bm25s are timed side
by side in the same run: ``--rounds`` rounds (default 3), each running one then the other over all
questions with the same query tokens; the best round counts (least disturbed by other jobs).

Speeds: BM25 queries/second (scoring alone, and scoring + top 100), query embedding (one question
at a time), FAISS search, and chunk embedding (only when the chunks were not already in the
embedding cache; a rerun reads them from .cache/embeddings.sqlite). Torch and FAISS use one thread.

``--fixed-windows`` swaps our splitter for the anchors' own chunking, found by matching their chunk
counts: plain character windows ``text[i:i + SIZE]`` for i = 0, SIZE - overlap, ... while
i < len(text) - overlap (2,904 and 5,783 chunks). It is a diagnostic: with it the BM25 rows match the
anchors to the third decimal, which shows that every other BM25 difference comes from chunk
boundaries. (With dense on, it embeds about 8,700 new texts, several minutes on one thread.)

Usage:  .venv/bin/python benchmarks/covidqa_anchors.py [--sizes 1000,500] [--skip-dense]
            [--fixed-windows] [--rounds 3] [--data DIR]
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from rag_ablation.retrieval.bm25 import make_scorer, top_k  # noqa: E402

from rag_ablation.data.text import regex_tokens  # noqa: E402
from rag_ablation.data.chunks import Chunk  # noqa: E402
from rag_ablation.retrieval.chunking import chunk_corpus  # noqa: E402
from rag_ablation.datasets.covidqa import load_covidqa  # noqa: E402
from rag_ablation.core.io import datasets_dir  # noqa: E402
from rag_ablation.retrieval.fusion import rrf  # noqa: E402
from rag_ablation.evaluation.scoring.labels import relevant_chunks  # noqa: E402
from rag_ablation.evaluation.scoring.measures import first_relevant_rank, summarize  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = datasets_dir() / "covidqa"  # $RAG_ABLATION_DATASETS, default ../shared/datasets
K1, B, WINDOW, DEPTH, RRF_K, K = 1.5, 0.75, 30, 100, 60, 10
MODEL = "all-MiniLM-L6-v2"

# shared/notes/anchors-covidqa.md: (hit@1, hit@5, hit@10, MRR@10) and chunk counts.
ANCHORS = {
    (1000, "rank_bm25"): (0.500, 0.722, 0.785, 0.594),
    (1000, "bm25s"): (0.500, 0.726, 0.796, 0.595),
    (1000, "dense"): (0.276, 0.511, 0.611, 0.380),
    (1000, "hybrid"): (0.420, 0.670, 0.768, 0.528),
    (500, "rank_bm25"): (0.466, 0.684, 0.749, 0.559),
    (500, "bm25s"): (0.477, 0.684, 0.762, 0.569),
    (500, "dense"): (0.271, 0.523, 0.621, 0.377),
    (500, "hybrid"): (0.408, 0.670, 0.754, 0.518),
}
ANCHOR_CHUNKS = {1000: 2904, 500: 5783}
ANCHOR_SPEEDS = {
    "rank_bm25": {1000: 216, 500: 95},
    "bm25s": "14,000-16,000",
    "query_embed": 362,
    "chunk_embed": {1000: 26, 500: 43},
    "faiss": 17000,
    "truncated": {1000: "23%"},
}

# (label, anchor key, implementation, epsilon)
BM25_VARIANTS = [
    ("BM25 rank-bm25 (eps .25)", "rank_bm25", "rank_bm25", 0.25),
    ("BM25 rank-bm25 (eps 0)", None, "rank_bm25", 0.0),
    ("BM25 bm25s (eps 0)", "bm25s", "bm25s", 0.0),
]
MEASURES = ("recall_at_1", "recall_at_5", "recall_at_10", "mrr_at_10")


def f3(x: float) -> str:
    return f"{x:.3f}".lstrip("0") if x < 1 else f"{x:.3f}"


def _bm25_pass(scorer, chunk_ids, query_tokens):
    """Rank every tokenized question; returns rankings, seconds scoring, seconds scoring + top 100."""
    score_s = total_s = 0.0
    rankings = []
    for tokens in query_tokens:
        t0 = time.perf_counter()
        s = scorer.scores(tokens)
        t1 = time.perf_counter()
        hits = [(i, v) for i, v in top_k(s, DEPTH) if v > 0]
        t2 = time.perf_counter()
        score_s += t1 - t0
        total_s += t2 - t0
        rankings.append([chunk_ids[i] for i, _ in hits])
    return rankings, score_s, total_s


def bm25_side_by_side(chunk_ids, chunk_tokens, questions, rounds):
    """Rank every question with the three BM25 variants (same query tokens for all).

    Timing: ``rounds`` rounds, each running rank-bm25 (eps .25) then bm25s over all questions,
    so both see the same machine load; the best round counts (least disturbed by the other
    jobs on the machine). rank-bm25 at eps 0 runs once (same code as eps .25) and is compared
    score by score with bm25s. Returns {label: rankings}, {label: timings}, max |score diff|.
    """
    query_tokens = [regex_tokens(q["question"]) for q in questions]
    scorers, build = {}, {}
    for label, _, impl, eps in BM25_VARIANTS:
        t0 = time.perf_counter()
        scorers[label] = make_scorer(impl, chunk_tokens, k1=K1, b=B, epsilon=eps)
        build[label] = time.perf_counter() - t0
    ref, eq, fast = (v[0] for v in BM25_VARIANTS)
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label in scorers}
    rankings: dict[str, list[list[str]]] = {}
    for _ in range(rounds):
        for label in (ref, fast):
            rankings[label], score_s, total_s = _bm25_pass(scorers[label], chunk_ids, query_tokens)
            runs[label].append((score_s, total_s))
    rankings[eq], score_s, total_s = _bm25_pass(scorers[eq], chunk_ids, query_tokens)
    runs[eq].append((score_s, total_s))
    max_diff = max(
        float(np.abs(scorers[eq].scores(t) - scorers[fast].scores(t)).max()) for t in query_tokens
    )
    n = len(questions)
    timing = {
        label: {
            "build_s": build[label],
            "rounds": len(runs[label]),
            "score_qps": n / min(r[0] for r in runs[label]),
            "total_qps": n / min(r[1] for r in runs[label]),
        }
        for label in scorers
    }
    return rankings, timing, max_diff


def fixed_windows(documents, size: int, overlap: int) -> list[Chunk]:
    """The anchors' chunking (see the module docstring): raw windows, cut mid-word, not trimmed;
    the pipeline's ``fixed`` chunking method (``chunking.fixed_regions``)."""
    return chunk_corpus(((d.doc, d.track, d.text) for d in documents), method="fixed", size=size, overlap=overlap)


def evaluate(rankings, questions, relevant):
    return summarize([first_relevant_rank(r[:K], relevant[q["id"]]) for r, q in zip(rankings, questions)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,500", help="chunk sizes, comma separated; overlap is size/5")
    ap.add_argument("--skip-dense", action="store_true", help="BM25 only: no MiniLM, no FAISS, no hybrid")
    ap.add_argument("--fixed-windows", action="store_true",
                    help="diagnostic: the anchors' plain character windows instead of our splitter")
    ap.add_argument("--rounds", type=int, default=3, help="timed BM25 rounds per implementation (best counts)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"COVID-QA folder (default {DEFAULT_DATA})")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    if not sizes or any(s < 5 for s in sizes):
        ap.error(f"--sizes must list chunk sizes of at least 5 characters, got {args.sizes!r}")

    try:
        documents, questions = load_covidqa(args.data)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"COVID-QA: {len(documents)} documents, {len(questions)} questions (first span >= 20 chars)")
    print("chunking: " + ("the anchors' fixed character windows (--fixed-windows)" if args.fixed_windows
                          else "this project's recursive splitter (chars)"))
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start; 1 thread for torch/FAISS/BLAS")

    model = cache = None
    q_vecs = None
    speeds: dict = {"query_embed_qps": None}
    if not args.skip_dense:
        from rag_ablation.retrieval.embeddings import EmbeddingCache, encode, load_model

        t0 = time.perf_counter()
        model = load_model(MODEL, threads=1)
        print(f"loaded {MODEL} in {time.perf_counter() - t0:.1f} s (max_seq_length {model.max_seq_length})")
        cache = EmbeddingCache()
        encode(model, ["warm up"])
        t0 = time.perf_counter()
        q_vecs = np.stack([encode(model, [q["question"]])[0] for q in questions])
        speeds["query_embed_qps"] = len(questions) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        encode(model, [q["question"] for q in questions], batch_size=32)
        speeds["query_embed_batched_qps"] = len(questions) / (time.perf_counter() - t0)

    rows: list[tuple[str, int, dict, tuple | None]] = []
    per_size: dict[int, dict] = {}
    spans = {q["id"]: q["span"] for q in questions}
    span_docs = {q["id"]: q["doc"] for q in questions}
    for size in sizes:
        overlap = size // 5
        info: dict = {"overlap": overlap}
        t0 = time.perf_counter()
        if args.fixed_windows:
            chunks = fixed_windows(documents, size, overlap)
        else:
            chunks = chunk_corpus(((d.doc, d.track, d.text) for d in documents), method="chars", size=size, overlap=overlap)
        info["chunk_s"] = time.perf_counter() - t0
        info["n_chunks"] = len(chunks)
        chunk_ids = [c.id for c in chunks]
        t0 = time.perf_counter()
        relevant = relevant_chunks(spans, ((c.id, c.doc, c.body) for c in chunks), window=WINDOW, span_docs=span_docs)
        info["labels_s"] = time.perf_counter() - t0
        info["no_relevant"] = sum(1 for v in relevant.values() if not v)
        print(f"\n[{size}/{overlap}] {len(chunks)} chunks (anchors: {ANCHOR_CHUNKS.get(size, '-')}), "
              f"labels in {info['labels_s']:.1f} s, {info['no_relevant']} questions without a relevant chunk")

        tokens = [regex_tokens(c.text) for c in chunks]
        bm25_rankings, info["bm25"], info["max_score_diff"] = bm25_side_by_side(chunk_ids, tokens, questions, args.rounds)
        for label, anchor_key, _, _ in BM25_VARIANTS:
            m = evaluate(bm25_rankings[label], questions, relevant)
            rows.append((label, size, m, ANCHORS.get((size, anchor_key)) if anchor_key else None))
        eq_label, s_label = BM25_VARIANTS[1][0], BM25_VARIANTS[2][0]
        info["same_top10"] = sum(a[:K] == b[:K] for a, b in zip(bm25_rankings[eq_label], bm25_rankings[s_label]))

        if not args.skip_dense:
            from rag_ablation.retrieval.embeddings import embed_cached, truncated_share
            from rag_ablation.retrieval.faiss_index import build_flat_ip
            from rag_ablation.retrieval.indexes import search_dense

            texts = [c.text for c in chunks]
            t0 = time.perf_counter()
            vecs, stats = embed_cached(texts, model_name=MODEL, cache=cache, load=lambda: model,
                                       batch_size=32, progress=sys.stderr.isatty())
            dt = time.perf_counter() - t0
            info["embed"] = {**stats, "seconds": dt, "chunks_per_s": stats["computed"] / dt if stats["computed"] else None}
            info["truncated"] = truncated_share(model, texts)
            index = build_flat_ip(vecs, threads=1)
            dense_rankings = []
            t0 = time.perf_counter()
            for qv in q_vecs:
                dense_rankings.append([chunk_ids[i] for i, _ in search_dense(index, qv, DEPTH)])
            info["faiss_qps"] = len(questions) / (time.perf_counter() - t0)
            rows.append(("dense MiniLM", size, evaluate(dense_rankings, questions, relevant), ANCHORS.get((size, "dense"))))
            hybrid = [[c for c, _ in rrf([d, b], k=RRF_K)] for d, b in zip(dense_rankings, bm25_rankings[BM25_VARIANTS[0][0]])]
            rows.append(("hybrid RRF (dense + rank-bm25)", size, evaluate(hybrid, questions, relevant),
                         ANCHORS.get((size, "hybrid"))))
        per_size[size] = info

    # --- the table ---------------------------------------------------------------------------
    print(f"\n## Retrieval quality: ours / anchors (n = {len(questions)} questions)\n")
    print("| retriever | chunks | hit@1 | hit@5 | hit@10 | MRR@10 |")
    print("|---|---|---|---|---|---|")
    for label, size, m, anchor in rows:
        cells = []
        for i, key in enumerate(MEASURES):
            ours = f3(m[key])
            cells.append(f"{ours} / {f3(anchor[i])}" if anchor else f"{ours} / -")
        print(f"| {label} | {size} ({per_size[size]['n_chunks']}) | " + " | ".join(cells) + " |")

    print("\n## Chunking and labels\n")
    print("| chunks | ours | anchors | labels (relevant_chunks) s | questions without a relevant chunk |")
    print("|---|---|---|---|---|")
    for size, info in per_size.items():
        print(f"| {size}/{info['overlap']} | {info['n_chunks']} | {ANCHOR_CHUNKS.get(size, '-')} | "
              f"{info['labels_s']:.1f} | {info['no_relevant']} |")

    print("\n## BM25 speed, side by side in this run (queries/second)\n")
    print("| chunks | implementation | timed rounds | build s | score only q/s | score + top 100 q/s | anchors q/s |")
    print("|---|---|---|---|---|---|---|")
    for size, info in per_size.items():
        for label, anchor_key, impl, _ in BM25_VARIANTS:
            t = info["bm25"][label]
            anchor = ANCHOR_SPEEDS[impl][size] if impl == "rank_bm25" and anchor_key else (
                ANCHOR_SPEEDS["bm25s"] if impl == "bm25s" else "-")
            print(f"| {info['n_chunks']} | {label} | {t['rounds']} | {t['build_s']:.2f} | {t['score_qps']:,.0f} | "
                  f"{t['total_qps']:,.0f} | {anchor} |")
    for size, info in per_size.items():
        ref, fast = info["bm25"][BM25_VARIANTS[0][0]], info["bm25"][BM25_VARIANTS[2][0]]
        print(f"- {size}: bm25s / rank-bm25 (eps .25) = {fast['score_qps'] / ref['score_qps']:.0f}x scoring only, "
              f"{fast['total_qps'] / ref['total_qps']:.0f}x with top 100; rank-bm25@0 vs bm25s: max |score diff| "
              f"{info['max_score_diff']:.1e}, identical top 10 for {info['same_top10']}/{len(questions)} questions")

    if not args.skip_dense:
        print("\n## Dense speed (1 thread)\n")
        print(f"- query embedding, one question at a time: {speeds['query_embed_qps']:,.0f} q/s; "
              f"batches of 32: {speeds['query_embed_batched_qps']:,.0f} q/s (anchors {ANCHOR_SPEEDS['query_embed']})")
        for size, info in per_size.items():
            e = info["embed"]
            rate = (f"{e['chunks_per_s']:.1f} chunks/s ({e['computed']} embedded in {e['seconds']:.0f} s)"
                    if e["chunks_per_s"] else f"all {e['cached']} from the cache in {e['seconds']:.1f} s (not measured)")
            print(f"- {size}: chunk embedding {rate} (anchors {ANCHOR_SPEEDS['chunk_embed'].get(size, '-')}/s); "
                  f"{info['truncated']:.1%} of chunks exceed {model.max_seq_length} wordpieces "
                  f"(anchors {ANCHOR_SPEEDS['truncated'].get(size, '-')}); FAISS flat, one query at a time, top 100: "
                  f"{info['faiss_qps']:,.0f} q/s "
                  f"(anchors {ANCHOR_SPEEDS['faiss']:,})")
        cache.close()
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
