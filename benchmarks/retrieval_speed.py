"""BM25 speed (rank-bm25 vs bm25s) and span-label time, per chunking.

Two corpora:

- the project's handbook (``data/corpus`` + the answerable questions of
  ``data/questions/handbook.jsonl``), chunked with every entry of ``chunkings:`` in params.yaml,
  labelled with ``labels.window`` / ``labels.same_doc_only`` from params.yaml;
- COVID-QA (``../shared/datasets/covidqa``, skipped when absent): the 1,087 questions of the
  anchors protocol, ``chars`` chunks of SIZE with SIZE/5 overlap (``--covidqa-sizes``), labels with
  window 30 restricted to the gold document.

For each chunking:

- labels: the wall time of one ``relevant_chunks`` call over all chunks and questions;
- BM25: queries/second of rank-bm25 (epsilon from params.yaml, 0.25) and bm25s (epsilon 0, the
  only value it supports) over the same query tokens and the same questions, k1/b from params.
  Each timed pass scores every question and takes the top 100 (``top_k``), as the retrieve stage
  does; ``--rounds`` rounds alternate the two implementations and the best round counts.

Ratios printed: bm25s / rank-bm25 queries/second, and the label time over one rank-bm25 / bm25s
pass over the question set. Everything is single-threaded (BLAS pinned to 1 thread).

Usage:  .venv/bin/python benchmarks/retrieval_speed.py [--rounds 3] [--covidqa-sizes 1000,500] [--skip-covidqa]
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from rag_ablation.data.text import get_tokenizer  # noqa: E402

from rag_ablation.retrieval.bm25 import make_scorer, top_k  # noqa: E402
from rag_ablation.retrieval.chunking import chunk_corpus, chunk_options  # noqa: E402
from rag_ablation.data.corpus import load_corpus  # noqa: E402
from rag_ablation.datasets.covidqa import load_covidqa  # noqa: E402
from rag_ablation.core.io import datasets_dir  # noqa: E402
from rag_ablation.evaluation.scoring.labels import relevant_chunks  # noqa: E402
from rag_ablation.core.config import load_config  # noqa: E402
from rag_ablation.data.questions import load_questions  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
COVIDQA = datasets_dir() / "covidqa"  # $RAG_ABLATION_DATASETS, default ../shared/datasets
DEPTH = 100


def _pass(scorer, query_tokens) -> tuple[float, list[list[int]]]:
    t0 = time.perf_counter()
    tops = [[i for i, s in top_k(scorer.scores(toks), DEPTH) if s > 0] for toks in query_tokens]
    return time.perf_counter() - t0, tops


def measure(name, chunks, spans, span_docs, query_texts, *, window, tokenizer, k1, b, epsilon, rounds):
    """One row: chunk count, label seconds, best-round seconds of each BM25 implementation."""
    t0 = time.perf_counter()
    relevant_chunks(spans, ((c.id, c.doc, c.body) for c in chunks), window=window, span_docs=span_docs)
    labels_s = time.perf_counter() - t0
    tok = get_tokenizer(tokenizer)
    chunk_tokens = [tok(c.text) for c in chunks]
    query_tokens = [tok(q) for q in query_texts]
    scorers = {
        "rank_bm25": make_scorer("rank_bm25", chunk_tokens, k1=k1, b=b, epsilon=epsilon),
        "bm25s": make_scorer("bm25s", chunk_tokens, k1=k1, b=b, epsilon=0.0),
    }
    best = {impl: float("inf") for impl in scorers}
    tops = {}
    for _ in range(rounds):
        for impl, scorer in scorers.items():
            dt, tops[impl] = _pass(scorer, query_tokens)
            best[impl] = min(best[impl], dt)
    same = sum(a[:10] == b_[:10] for a, b_ in zip(tops["rank_bm25"], tops["bm25s"]))
    return {
        "name": name, "chunks": len(chunks), "chars": sum(len(c.body) for c in chunks),
        "questions": len(query_texts), "labels_s": labels_s,
        "rank_qps": len(query_texts) / best["rank_bm25"], "bm25s_qps": len(query_texts) / best["bm25s"],
        "rank_pass_s": best["rank_bm25"], "bm25s_pass_s": best["bm25s"], "same_top10": same,
    }


def print_table(title: str, rows: list[dict], epsilon: float) -> None:
    print(f"\n## {title}\n")
    print(f"| chunking | chunks | questions | labels s | rank-bm25 (eps {epsilon:g}) q/s | bm25s (eps 0) q/s | "
          "bm25s / rank-bm25 | labels / rank-bm25 pass | labels / bm25s pass | identical top 10 (eps .25 vs 0) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['chunks']} | {r['questions']} | {r['labels_s']:.2f} | {r['rank_qps']:,.0f} | "
              f"{r['bm25s_qps']:,.0f} | {r['bm25s_qps'] / r['rank_qps']:.0f}x | "
              f"{r['labels_s'] / r['rank_pass_s']:.2f} | {r['labels_s'] / r['bm25s_pass_s']:.1f} | "
              f"{r['same_top10']}/{r['questions']} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds per implementation (best counts)")
    ap.add_argument("--covidqa-sizes", default="1000,500", help="COVID-QA chunk sizes; overlap is size/5")
    ap.add_argument("--skip-covidqa", action="store_true")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    try:
        sizes = [int(s) for s in args.covidqa_sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--covidqa-sizes must be comma-separated integers, got {args.covidqa_sizes!r}")

    params = load_config(REPO / "params.yaml")
    k1, b, eps, tokenizer = params.bm25.k1, params.bm25.b, params.bm25.epsilon, params.bm25.tokenizer
    window, same_doc = params.labels.window, params.labels.same_doc_only
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; BM25 k1={k1} b={b}, "
          f"tokenizer {tokenizer}; best of {args.rounds} alternating rounds; each pass = score + top {DEPTH}")

    documents = load_corpus(REPO / "data" / "corpus")
    questions = [q for q in load_questions(REPO / "data" / "questions" / "handbook.jsonl") if q.answerable]
    spans = {q.id: q.span for q in questions}
    span_docs = {q.id: q.doc for q in questions} if same_doc else None
    rows = []
    for name, spec in params.chunkings.items():
        opts = chunk_options(spec)
        chunks = chunk_corpus(((d.doc, d.track, d.text) for d in documents), **opts)
        rows.append(measure(name, chunks, spans, span_docs, [q.question for q in questions], window=window,
                            tokenizer=tokenizer, k1=k1, b=b, epsilon=eps, rounds=args.rounds))
    print_table(f"handbook: {len(documents)} documents, {len(questions)} answerable questions, "
                f"labels window {window}, same_doc_only {same_doc}", rows, eps)

    if args.skip_covidqa:
        pass
    elif not COVIDQA.is_dir():
        print(f"\nCOVID-QA not found at {COVIDQA}: skipped")
    else:
        cdocs, cqs = load_covidqa(COVIDQA)
        cspans = {q["id"]: q["span"] for q in cqs}
        cdoc_of = {q["id"]: q["doc"] for q in cqs}
        crows = []
        for size in sizes:
            chunks = chunk_corpus(((d.doc, d.track, d.text) for d in cdocs), method="chars", size=size, overlap=size // 5)
            crows.append(measure(f"chars {size}/{size // 5}", chunks, cspans, cdoc_of, [q["question"] for q in cqs],
                                 window=30, tokenizer=tokenizer, k1=k1, b=b, epsilon=eps, rounds=args.rounds))
        print_table(f"COVID-QA: {len(cdocs)} documents, {len(cqs)} questions, labels window 30, gold document only",
                    crows, eps)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
