"""Served embeddings (``embedding.backend: openai``): texts per second through the pipeline's own
path (``embed_cached`` + the engine of ``make_engine`` + ``ServedEmbeddings`` + the SQLite cache,
one committed write per batch) at ``embedding.concurrency`` 1, 2 and 4, side by side in one run.

The server is real: llama-cpp-python's ``llama_cpp.server`` (through
``python -m rag_ablation.llm.client.llama_server``) over the packaged SmolLM2-135M GGUF, embeddings on,
mean pooling, one thread each (``--n_threads 1 --n_threads_batch 1``); ``--servers 2`` starts two and lists both in
``base_urls`` (round-robin). The texts are ~500 short synthetic sentences. Every run starts from
an empty cache, and each concurrency's vectors must equal concurrency 1's to 1e-5 (exit 1
otherwise). llama_cpp.server computes one request at a time, so with one server the gain from
concurrency is only the overlap of HTTP and JSON work with the next request; a serving engine
that batches requests (vLLM, TEI) or several servers gain more.

Usage:  .venv/bin/python benchmarks/served_embeddings.py [--texts 500] [--batch-size 32]
        [--servers 1] [--rounds 1] [--out /tmp/results_served.md]
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rag_ablation.core.config import EmbeddingConfig  # noqa: E402
from rag_ablation.llm.client import llama_server  # noqa: E402
from rag_ablation.llm.client.llama_cpp import default_gguf_path  # noqa: E402
from rag_ablation.retrieval.embeddings import (EmbeddingCache, cache_name, embed_cached, make_engine,  # noqa: E402
                                               open_backend)

ALIAS = "smollm2"
LEVELS = (1, 2, 4)
WORDS = ("ledger", "refund", "audit", "invoice", "office", "policy", "expense", "travel", "payroll", "budget",
         "approval", "vendor", "contract", "quarter", "report", "deadline", "manager", "account")


def texts(n: int) -> list[str]:
    """``n`` distinct short sentences (5 to 16 words), the same on every run."""
    rng = np.random.default_rng(0)
    return [f"{i}: " + " ".join(rng.choice(WORDS, size=int(rng.integers(5, 17)))) for i in range(n)]


def start_server(log: Path) -> tuple[subprocess.Popen, str]:
    """llama_cpp.server over SmolLM2 with embeddings on and mean pooling, one thread, once it answers."""
    try:
        return llama_server.start(default_gguf_path(), alias=ALIAS, log=log, args=(
            "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "2048", *llama_server.EMBEDDING_ARGS))
    except RuntimeError as e:
        sys.exit(str(e))


def run_once(cfg: EmbeddingConfig, items: list[str], folder: Path) -> tuple[float, np.ndarray, int]:
    """Seconds to embed every text from an empty cache, the vectors, and the requests sent."""
    model = open_backend(cfg)
    model.encode(["warm-up"], batch_size=1)  # type: ignore[attr-defined]  # listing + first request, untimed
    sent = model.requests  # type: ignore[attr-defined]
    cache = EmbeddingCache(folder / f"c{cfg.concurrency}-{time.monotonic_ns()}.sqlite")
    start = time.perf_counter()
    vecs, stats = embed_cached(items, model_name=cache_name(cfg), cache=cache, load=lambda: model,
                               batch_size=cfg.batch_size, progress=False, engine=make_engine(cfg))
    seconds = time.perf_counter() - start
    cache.close()
    assert stats["computed"] == len(items), stats
    return seconds, vecs, model.requests - sent  # type: ignore[attr-defined]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=500)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--servers", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1, help="timed runs per concurrency (the best is kept)")
    ap.add_argument("--out", type=Path, default=None, help="also write the table (markdown) here")
    args = ap.parse_args()
    items = texts(args.texts)
    folder = Path(tempfile.mkdtemp(prefix="served-embeddings-"))
    procs, urls = [], []
    try:
        for k in range(args.servers):
            proc, url = start_server(folder / f"server{k}.log")
            procs.append(proc)
            urls.append(url)
        load_before = os.getloadavg()[0]
        best: dict[int, float] = {}
        sent: dict[int, int] = {}
        same: dict[int, bool] = {}
        reference = None
        for r in range(args.rounds):  # the levels interleaved, so a change in the machine's load hits each alike
            for level in LEVELS:
                cfg = EmbeddingConfig(backend="openai", model=ALIAS, base_urls=tuple(urls),
                                      batch_size=args.batch_size, concurrency=level, timeout=300)
                seconds, vecs, sent[level] = run_once(cfg, items, folder)
                best[level] = min(seconds, best.get(level, seconds))
                if reference is None:
                    reference = vecs
                same[level] = same.get(level, True) and bool(np.allclose(vecs, reference, atol=1e-5))
                print(f"round {r + 1}, concurrency {level}: {seconds:.2f} s, {len(items) / seconds:.1f} texts/s, "
                      f"{sent[level]} requests, vectors equal to concurrency 1: {same[level]}", flush=True)
        load_after = os.getloadavg()[0]
        ok = all(same.values())
        rows = [(lvl, best[lvl], len(items) / best[lvl], sent[lvl], same[lvl]) for lvl in LEVELS]
    finally:
        for proc in procs:
            llama_server.stop(proc)
    base = rows[0][2]
    lines = [
        f"Served embeddings: {args.texts} short texts, batch_size {args.batch_size}, {args.servers} "
        f"llama_cpp.server(s) over SmolLM2-135M Q4_1 (dim {reference.shape[1] if reference is not None else '?'}), "
        f"n_threads 1, n_threads_batch 1 each; {os.cpu_count()} cores ({platform.machine()}), shared (1-minute load average "
        f"{load_before:.1f} before, {load_after:.1f} after); best of {args.rounds} interleaved rounds.",
        "",
        "| concurrency | seconds | texts/s | vs 1 | requests | vectors = concurrency 1 (1e-5) |",
        "|---:|---:|---:|---:|---:|---|",
        *(f"| {lvl} | {s:.2f} | {tps:.1f} | {tps / base:.2f}x | {req} | {'yes' if same else 'NO'} |"
          for lvl, s, tps, req, same in rows),
    ]
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(table + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
