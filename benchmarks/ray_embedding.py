"""Throughput of the dense stage's embedding engines side by side: ``embedding.engine: local``
against ``embedding.engine: ray`` (a local Ray on the same CPUs), on the same texts, each into an
empty embedding cache through ``embed_cached`` (as stages/dense_index.py calls it).

Goal (issue "embedding on Ray"): the Ray engine at least 0.9x the local engine's texts/s.

Runs, one after another in one process, each timed from the call of ``embed_cached`` to its
return (so Ray's start, the actors' model loads and the cache's commits are all inside):
- ``local tT``: the local engine, one process, ``--threads`` torch threads;
- ``ray 1xT``: the Ray engine as the stage runs it with ``embedding.threads: T`` and no
  ``ray.address``: a local Ray of T CPUs, one actor of T threads (bit-identical to ``local tT``);
- ``ray Tx1``: a local Ray of T CPUs started by the benchmark, ``embedding.threads: 1``: T actors
  of one thread each (bit-identical to the local engine at 1 thread; what a cluster gets with
  ``embedding.threads: 1``, one actor per CPU);
- ``local t1`` (only with ``--with-local-t1``): the local engine at one thread, the reference of ``ray Tx1``.
Every run's vectors are compared with its reference run's (``np.array_equal``).

Texts: ``--n`` chunk-sized texts (300 to ``--chars`` characters) of sentences drawn with a seeded
random generator from the handbook corpus (data/corpus/**/*.md), each numbered so none repeats.

Usage:  .venv/bin/python benchmarks/ray_embedding.py [--n 20000] [--threads 2] [--batch-size 32]
                                                     [--chars 800] [--seed 0] [--with-local-t1]
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rag_ablation.core.config import EmbeddingConfig, RayConfig
from rag_ablation.retrieval import embeddings
from rag_ablation.retrieval.embeddings import EmbeddingCache, embed_cached, make_engine

REPO = Path(__file__).resolve().parent.parent


def make_texts(n: int, chars: int, seed: int) -> list[str]:
    sentences = []
    for path in sorted((REPO / "data" / "corpus").rglob("*.md")):
        for part in re.split(r"(?<=[.!?])\s+|\n+", path.read_text(encoding="utf-8")):
            part = part.strip(" #*-|`")
            if len(part) > 20:
                sentences.append(part)
    rng = random.Random(seed)
    out = []
    for i in range(n):
        target, text = rng.randint(300, chars), f"{i}."
        while len(text) < target:
            text += " " + rng.choice(sentences)
        out.append(text[:chars])
    return out


def timed(name: str, texts: list[str], cfg: EmbeddingConfig, ray_cfg: RayConfig) -> tuple[float, np.ndarray]:
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "embeddings.sqlite")
        t = time.perf_counter()
        vectors, stats = embed_cached(texts, model_name=cfg.model, cache=cache,
                                      load=lambda: embeddings.open_backend(cfg), batch_size=cfg.batch_size,
                                      progress=False, engine=make_engine(cfg, ray_cfg))
        took = time.perf_counter() - t
        cache.close()
    assert stats["computed"] == len(texts), stats
    print(f"{name}: {len(texts)} texts in {took:.1f} s = {len(texts) / took:.1f} texts/s", file=sys.stderr, flush=True)
    return took, vectors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--chars", type=int, default=800)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--with-local-t1", action="store_true")
    args = ap.parse_args()
    texts = make_texts(args.n, args.chars, args.seed)
    t = args.threads
    print(f"{args.n} texts, mean {sum(map(len, texts)) / len(texts):.0f} chars, batch_size {args.batch_size}, "
          f"{t} CPUs (os.cpu_count {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} at start), "
          f"python {platform.python_version()}", file=sys.stderr)
    cfg = EmbeddingConfig(batch_size=args.batch_size, threads=t)
    rows: list[tuple[str, float, str]] = []

    local_s, local_v = timed(f"local t{t}", texts, cfg, RayConfig())
    rows.append((f"local t{t}", local_s, "reference"))
    ray_s, ray_v = timed(f"ray 1x{t}", texts, EmbeddingConfig(batch_size=args.batch_size, threads=t, engine="ray"),
                         RayConfig())
    rows.append((f"ray 1x{t}", ray_s, f"array_equal local t{t}: {np.array_equal(local_v, ray_v)}"))

    import logging

    import ray

    ray.init(address="local", num_cpus=t, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        many_s, many_v = timed(f"ray {t}x1", texts, EmbeddingConfig(batch_size=args.batch_size, threads=1,
                                                                     engine="ray"), RayConfig())
    finally:
        ray.shutdown()
    note = f"max |diff| vs local t{t}: {float(np.abs(many_v - local_v).max()):.1e}"
    if args.with_local_t1:
        one_s, one_v = timed("local t1", texts, EmbeddingConfig(batch_size=args.batch_size, threads=1), RayConfig())
        note += f"; array_equal local t1: {np.array_equal(one_v, many_v)}"
        rows.append(("local t1", one_s, "reference of ray 2x1"))
    rows.append((f"ray {t}x1", many_s, note))

    print(f"\n| run | wall s | texts/s | vs local t{t} | vectors |\n|---|---|---|---|---|")
    for name, s, what in rows:
        print(f"| {name} | {s:.1f} | {args.n / s:.1f} | {local_s / s:.2f}x | {what} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
