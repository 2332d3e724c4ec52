"""FAISS index types side by side: exact flat against IVF and HNSW, built by the pipeline's own
builders (``rag_ablation.retrieval.faiss_index.build_index``, the ``faiss:`` block of params).

Two parts, each printing one table with ratios against flat measured in the same run:

(a) COVID-QA (``$RAG_ABLATION_DATASETS/covidqa``, default ``../shared/datasets/covidqa``): the
    1,087 questions of the anchors protocol, ``chars`` chunks of 1000/200, MiniLM vectors through
    the embedding cache (``.cache/embeddings.sqlite``: free after the first run), labels with
    window 30 in the gold document only, as ``covidqa_anchors.py``. Each index is searched as the
    retrieve stage does (one question at a time, top 100, first 10 scored): hit@10 (share of
    questions with a relevant chunk in the top 10), what it loses against flat, and FAISS
    queries/second (search only; the query vectors are embedded once beforehand). IVF gets
    nlist = 4 x sqrt(chunks) (``--covidqa-nprobe`` values); HNSW M = ``--hnsw-m``,
    ef_construction = ``--ef-construction`` (``--covidqa-ef-search`` values).
(b) Synthetic: ``--n`` 384-dimension vectors (default 1,000,000) from a seeded Gaussian mixture
    that lives mostly in an ``--intrinsic``-dimension subspace, as sentence embeddings do
    (``--clusters`` unit centers plus Gaussian noise of norm about ``--spread`` there, rotated
    into 384 dimensions, plus small isotropic noise, L2-normalized; with isotropic 384-dimension
    clusters every index finds the exact top 10 and nothing is measured), and ``--queries``
    (1,000) held-out queries from the same mixture. For flat, IVF (nlist =
    4 x sqrt(N) unless ``--nlist``; each ``--nprobe`` value) and HNSW (``--hnsw-m``,
    ``--ef-construction``; each ``--ef-search`` value): build seconds, index size (FAISS's
    serialized bytes, what ``index.faiss`` takes; the index holds about as much in RAM),
    queries/second at k = 10 one query at a time, and recall@10 against flat's exact top 10.

Timing: FAISS and BLAS run on ``--threads`` threads (default 1, as the other benchmarks); HNSW is
always built on one thread (the pipeline's builder: deterministic graphs). Search passes run
``--rounds`` times, alternating the variants so that all see the same machine load; the best
round counts. Build times are single measurements.

Cost of the full run, extrapolated from ``--n 20000`` on the 2-core VM (IVF 566 lists built in
6 s, HNSW M=32 ef_construction=200 in 20 s, both on one thread): the 1M synthetic part needs
about 6 GB of RAM (vectors + three indexes) and its builds dominate: IVF k-means grows with
N x nlist (about 350 times the 20k build: roughly half an hour on one thread; ``--threads 2``
halves it when the machine is free) and the one-thread HNSW build with N log N (roughly half an
hour to an hour). Searching 1,000 queries on flat takes about a minute. Run it alone on the
machine.

Commands:

    # the full run (COVID-QA + 1M synthetic vectors); the lead runs this one
    .venv/bin/python benchmarks/faiss_index_types.py | tee /tmp/faiss_index_types.txt
    # a small check (seconds): no COVID-QA, 20,000 vectors
    .venv/bin/python benchmarks/faiss_index_types.py --n 20000 --skip-covidqa
    # COVID-QA only
    .venv/bin/python benchmarks/faiss_index_types.py --skip-synthetic

Usage:  .venv/bin/python benchmarks/faiss_index_types.py [--n 1000000] [--queries 1000]
            [--clusters 1000] [--spread 0.7] [--nlist N] [--nprobe 16,64] [--hnsw-m 32]
            [--ef-construction 200] [--ef-search 64,256] [--covidqa-nprobe 4,16]
            [--covidqa-ef-search 100,400] [--rounds 2] [--threads 1] [--seed 0]
            [--skip-covidqa] [--skip-synthetic] [--covidqa-docs N] [--data DIR]
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from rag_ablation.core.config import FaissConfig  # noqa: E402
from rag_ablation.core.io import datasets_dir  # noqa: E402
from rag_ablation.retrieval.faiss_index import build_index, describe, set_search_params  # noqa: E402

DEFAULT_DATA = datasets_dir() / "covidqa"  # $RAG_ABLATION_DATASETS, default ../shared/datasets
MODEL = "all-MiniLM-L6-v2"
CHUNK_SIZE, CHUNK_OVERLAP, WINDOW, DEPTH, K = 1000, 200, 30, 100, 10
DIM = 384
BLOCK = 50_000  # rows generated at a time (keeps float64 temporaries out)


@dataclass
class Variant:
    """One searchable setting: its label, the index it searches and the config whose search
    settings are applied before each pass."""

    label: str
    kind: str
    index: object
    cfg: FaissConfig


def int_list(text: str, flag: str, ap: argparse.ArgumentParser) -> list[int]:
    try:
        values = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        ap.error(f"{flag} must be comma-separated positive integers, got {text!r}")
    if not values or min(values) < 1:
        ap.error(f"{flag} must be comma-separated positive integers, got {text!r}")
    return values


def default_nlist(n: int) -> int:
    """4 x sqrt(n), rounded, at least 1: the usual IVF rule of thumb."""
    return max(1, round(4 * math.sqrt(n)))


def gaussian_mixture(n: int, dim: int, clusters: int, spread: float, intrinsic: int, rng: np.random.Generator,
                     basis: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """``n`` L2-normalized float32 rows of a seeded Gaussian mixture that lives mostly in an
    ``intrinsic``-dimension subspace (as sentence embeddings do): a unit center drawn uniformly
    from ``clusters`` plus Gaussian noise of norm about ``spread``, both in the subspace, mapped
    to ``dim`` dimensions by a random orthonormal basis, plus isotropic noise of norm about 0.1.
    Returns (rows, (centers, basis)); pass the second back to draw queries from the same
    mixture."""
    if basis is None:
        centers = rng.standard_normal((clusters, intrinsic), dtype=np.float32)
        centers /= np.linalg.norm(centers, axis=1, keepdims=True)
        q, _ = np.linalg.qr(rng.standard_normal((dim, intrinsic)))
        basis = (centers, np.ascontiguousarray(q.T, dtype=np.float32))  # intrinsic x dim, orthonormal rows
    centers, rotation = basis
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        z = rng.standard_normal((stop - start, intrinsic), dtype=np.float32)
        z *= np.float32(spread / math.sqrt(intrinsic))
        z += centers[rng.integers(0, len(centers), stop - start)]
        block = z @ rotation
        block += np.float32(0.1 / math.sqrt(dim)) * rng.standard_normal((stop - start, dim), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:stop] = block
    return out, basis


def timed_build(vectors: np.ndarray, cfg: FaissConfig, threads: int) -> tuple[object, float]:
    t0 = time.perf_counter()
    index = build_index(vectors, cfg, threads=threads)
    return index, time.perf_counter() - t0


def index_bytes(index) -> int:
    """FAISS's serialized size: what ``index.faiss`` takes on disk (about its RAM)."""
    import faiss

    return int(faiss.serialize_index(index).nbytes)


def search_pass(v: Variant, queries: np.ndarray, k: int) -> tuple[float, np.ndarray]:
    """Seconds to search every query one at a time (as the retrieve stage does), and the rows
    found (-1 where the index returned fewer than k)."""
    set_search_params(v.index, v.cfg)
    rows = np.full((len(queries), k), -1, dtype=np.int64)
    t0 = time.perf_counter()
    for i in range(len(queries)):
        _, found = v.index.search(queries[i: i + 1], k)
        rows[i] = found[0]
    return time.perf_counter() - t0, rows


def side_by_side(variants: list[Variant], queries: np.ndarray, k: int, rounds: int) -> dict[str, tuple[float, np.ndarray]]:
    """Best-round seconds and rows per variant; each round runs every variant once, in turn."""
    best: dict[str, tuple[float, np.ndarray]] = {}
    for _ in range(rounds):
        for v in variants:
            dt, rows = search_pass(v, queries, k)
            if v.label not in best or dt < best[v.label][0]:
                best[v.label] = (dt, rows)
    return best


def recall_against(rows: np.ndarray, exact: np.ndarray, k: int) -> float:
    """Mean share of the exact top ``k`` that ``rows`` (top ``k`` too) found."""
    return float(np.mean([len(set(a[:k]) & set(b[:k]) - {-1}) / k for a, b in zip(rows, exact)]))


def make_variants(vectors: np.ndarray, base: FaissConfig, nprobes: list[int], efs: list[int], threads: int,
                  nlist: int) -> tuple[list[Variant], dict[str, dict]]:
    """Build flat, ivf and hnsw once each; one variant per search setting. Returns the variants
    and, per index type, its build seconds, size and settings as built."""
    builds: dict[str, dict] = {}
    variants: list[Variant] = []
    cfgs = {"flat": replace(base, index="flat"),
            "ivf": replace(base, index="ivf", nlist=nlist, nprobe=min(nprobes)),
            "hnsw": replace(base, index="hnsw")}
    for kind, cfg in cfgs.items():
        index, seconds = timed_build(vectors, cfg, threads)
        builds[kind] = {"seconds": seconds, "bytes": index_bytes(index), "built": describe(index)}
        print(f"  built {kind} in {seconds:.1f} s: {describe(index)}", file=sys.stderr)
        if kind == "flat":
            variants.append(Variant("flat", kind, index, cfg))
        elif kind == "ivf":
            built_nlist = describe(index)["nlist"]
            variants += [Variant(f"ivf nlist={built_nlist} nprobe={p}", kind, index, replace(cfg, nprobe=min(p, built_nlist)))
                         for p in nprobes]
        else:
            variants += [Variant(f"hnsw M={cfg.hnsw_m} efC={cfg.ef_construction} ef_search={e}", kind, index,
                                 replace(cfg, ef_search=e)) for e in efs]
    return variants, builds


def synthetic(args, base: FaissConfig, nprobes: list[int], efs: list[int]) -> None:
    import faiss

    faiss.omp_set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    vectors, basis = gaussian_mixture(args.n, DIM, args.clusters, args.spread, args.intrinsic, rng)
    queries, _ = gaussian_mixture(args.queries, DIM, args.clusters, args.spread, args.intrinsic, rng, basis=basis)
    print(f"\nsynthetic: {args.n:,} vectors x {DIM} ({vectors.nbytes / 2**20:,.0f} MB), {args.clusters} clusters in "
          f"{args.intrinsic} dimensions, noise norm ~{args.spread}, {args.queries} held-out queries; "
          f"generated in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)
    nlist = args.nlist or default_nlist(args.n)
    variants, builds = make_variants(vectors, base, nprobes, efs, args.threads, nlist)
    best = side_by_side(variants, queries, K, args.rounds)
    exact = best["flat"][1]
    flat_qps = args.queries / best["flat"][0]
    flat = builds["flat"]
    print(f"\n## Synthetic: {args.n:,} x {DIM} vectors, {args.queries} queries, k = {K}, one query at a time, "
          f"{args.threads} thread(s), best of {args.rounds} rounds\n")
    print("| index | build s | index MB | size / flat | q/s | q/s / flat | recall@10 vs flat |")
    print("|---|---|---|---|---|---|---|")
    for v in variants:
        b = builds[v.kind]
        qps = args.queries / best[v.label][0]
        print(f"| {v.label} | {b['seconds']:.1f} | {b['bytes'] / 2**20:,.0f} | "
              f"{b['bytes'] / flat['bytes']:.2f} | {qps:,.0f} | {qps / flat_qps:.1f}x | "
              f"{recall_against(best[v.label][1], exact, K):.3f} |")


def covidqa(args, base: FaissConfig, nprobes: list[int], efs: list[int]) -> int:
    from rag_ablation.datasets.covidqa import load_covidqa
    from rag_ablation.evaluation.scoring.labels import relevant_chunks
    from rag_ablation.evaluation.scoring.measures import first_relevant_rank
    from rag_ablation.retrieval.chunking import chunk_corpus
    from rag_ablation.retrieval.embeddings import EmbeddingCache, embed_cached, encode, load_model

    try:
        documents, questions = load_covidqa(args.data)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.covidqa_docs:  # a smoke test on the first documents and their questions
        documents = documents[: args.covidqa_docs]
        kept = {d.doc for d in documents}
        questions = [q for q in questions if q["doc"] in kept]
    chunks = chunk_corpus(((d.doc, d.track, d.text) for d in documents), method="chars", size=CHUNK_SIZE,
                          overlap=CHUNK_OVERLAP)
    chunk_ids = [c.id for c in chunks]
    relevant = relevant_chunks({q["id"]: q["span"] for q in questions}, ((c.id, c.doc, c.body) for c in chunks),
                               window=WINDOW, span_docs={q["id"]: q["doc"] for q in questions})
    model = load_model(MODEL, threads=args.threads)
    cache = EmbeddingCache()
    t0 = time.perf_counter()
    vectors, stats = embed_cached([c.text for c in chunks], model_name=MODEL, cache=cache, load=lambda: model,
                                  batch_size=32, progress=sys.stderr.isatty())
    cache.close()
    q_vecs = encode(model, [q["question"] for q in questions], batch_size=32).astype(np.float32)
    print(f"\nCOVID-QA: {len(documents)} documents, {len(questions)} questions, {len(chunks)} chunks "
          f"{CHUNK_SIZE}/{CHUNK_OVERLAP}; {stats['computed']} chunks embedded, {stats['cached']} from the cache, "
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
    nlist = default_nlist(len(chunks))
    variants, builds = make_variants(vectors, base, nprobes, efs, args.threads, nlist)
    best = side_by_side(variants, q_vecs, DEPTH, args.rounds)

    def hit_at_10(rows: np.ndarray) -> float:
        ranks = [first_relevant_rank([chunk_ids[r] for r in row[:K] if r >= 0], relevant[q["id"]])
                 for row, q in zip(rows, questions)]
        return sum(1 for r in ranks if r is not None and r <= K) / len(questions)

    flat_hit = hit_at_10(best["flat"][1])
    flat_qps = len(questions) / best["flat"][0]
    print(f"\n## COVID-QA: {len(questions)} questions, {len(chunks)} chunks ({CHUNK_SIZE}/{CHUNK_OVERLAP}), "
          f"top {DEPTH} searched one question at a time, first {K} scored, {args.threads} thread(s), "
          f"best of {args.rounds} rounds\n")
    print("| index | build s | hit@10 | hit@10 lost vs flat | identical top 10 | FAISS q/s | q/s / flat |")
    print("|---|---|---|---|---|---|---|")
    exact = best["flat"][1]
    for v in variants:
        hit = hit_at_10(best[v.label][1])
        same = int(sum((a[:K] == b[:K]).all() for a, b in zip(best[v.label][1], exact)))
        qps = len(questions) / best[v.label][0]
        print(f"| {v.label} | {builds[v.kind]['seconds']:.2f} | {hit:.3f} | {flat_hit - hit:+.3f} | "
              f"{same}/{len(questions)} | {qps:,.0f} | {qps / flat_qps:.1f}x |")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="synthetic vectors (default 1,000,000)")
    ap.add_argument("--queries", type=int, default=1000, help="synthetic held-out queries")
    ap.add_argument("--clusters", type=int, default=1000, help="Gaussian mixture components")
    ap.add_argument("--spread", type=float, default=0.7, help="noise norm around a unit center")
    ap.add_argument("--intrinsic", type=int, default=32, help="dimensions the mixture lives in (then rotated to 384)")
    ap.add_argument("--nlist", type=int, default=0, help="synthetic IVF lists (default 4 x sqrt(N))")
    ap.add_argument("--nprobe", default="16,64", help="synthetic IVF nprobe values")
    ap.add_argument("--hnsw-m", type=int, default=32)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--ef-search", default="64,256", help="synthetic HNSW ef_search values")
    ap.add_argument("--covidqa-nprobe", default="4,16", help="COVID-QA IVF nprobe values")
    ap.add_argument("--covidqa-ef-search", default="100,400", help="COVID-QA HNSW ef_search values (top 100 searched)")
    ap.add_argument("--covidqa-docs", type=int, default=0, help="smoke test: only the first N documents (0 = all)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating search rounds (best counts)")
    ap.add_argument("--threads", type=int, default=1, help="FAISS/torch threads (HNSW is built on one)")
    ap.add_argument("--seed", type=int, default=0, help="synthetic data and IVF k-means seed")
    ap.add_argument("--skip-covidqa", action="store_true")
    ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"COVID-QA folder (default {DEFAULT_DATA})")
    args = ap.parse_args(argv)
    for flag in ("n", "queries", "clusters", "intrinsic", "rounds", "threads", "hnsw_m", "ef_construction"):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag.replace('_', '-')} must be at least 1, got {getattr(args, flag)}")
    if args.spread <= 0:
        ap.error(f"--spread must be positive, got {args.spread}")
    if args.hnsw_m < 2:
        ap.error(f"--hnsw-m must be at least 2, got {args.hnsw_m}")
    nprobes, efs = int_list(args.nprobe, "--nprobe", ap), int_list(args.ef_search, "--ef-search", ap)
    c_nprobes = int_list(args.covidqa_nprobe, "--covidqa-nprobe", ap)
    c_efs = int_list(args.covidqa_ef_search, "--covidqa-ef-search", ap)
    base = FaissConfig(hnsw_m=args.hnsw_m, ef_construction=args.ef_construction, seed=args.seed)

    import faiss

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start; faiss {faiss.__version__}, "
          f"{args.threads} thread(s) (HNSW built on 1)")
    status = 0
    if not args.skip_covidqa:
        status = covidqa(args, base, c_nprobes, c_efs)
    if not args.skip_synthetic:
        synthetic(args, base, nprobes, efs)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    return status


if __name__ == "__main__":
    sys.exit(main())
