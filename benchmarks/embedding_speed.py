"""The dense index stage's passages/s against a bare ``SentenceTransformer.encode`` of the same
texts in the same process, and how many texts a second chunking really embeds.

Goal (issue "Speed"): the stage's path runs at least 0.9x the bare encode's rate, and a second
chunking sharing texts with the first embeds only the new ones.

What is timed, alternately, ``--rounds`` times each (best round kept), with one model loaded once:
- bare: ``model.encode(texts, batch_size=B)``, nothing else;
- stage: what ``stages/dense_index.py`` does after reading the chunks: ``embed_cached`` into an
  empty embedding cache (SQLite, hashing, de-duplication, normalization, the commit), the FAISS
  index build (``faiss.index`` from params) and ``truncated_share`` (tokenizing every text once
  more for the truncation metric).
Then the de-duplication count: the texts of chunking A embedded into an empty cache, then the
texts of chunking B: how many of B were computed against how many B has.

Texts: the chunk files the pipeline wrote (``data/build/chunks/NAME.jsonl``; run ``dvc repro``
first). Threads: ``embedding.threads`` from params.yaml unless ``--threads``.

Usage:  .venv/bin/python benchmarks/embedding_speed.py [--chunking base] [--second tables]
                                                      [--rounds 2] [--threads N]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rag_ablation.data.chunks import load_chunks
from rag_ablation.core.config import load_config
from rag_ablation.retrieval.embeddings import EmbeddingCache, embed_cached, load_model, truncated_share
from rag_ablation.retrieval.faiss_index import build_index

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunking", default="base")
    ap.add_argument("--second", default="tables", help="a chunking sharing texts with --chunking")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    params = load_config(REPO / "params.yaml")
    emb = params.embedding
    threads = args.threads or emb.threads
    build = REPO / "data" / "build" / "chunks"
    texts = [c.text for c in load_chunks(build / f"{args.chunking}.jsonl")]
    second = [c.text for c in load_chunks(build / f"{args.second}.jsonl")]
    model = load_model(emb.model, threads=threads)
    model.encode(texts[:8], batch_size=emb.batch_size)  # warm-up: first-call allocations

    bare, stage = [], []
    for _ in range(args.rounds):
        t = time.perf_counter()
        model.encode(texts, batch_size=emb.batch_size, show_progress_bar=False, convert_to_numpy=True)
        bare.append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory() as tmp:
            cache = EmbeddingCache(Path(tmp) / "embeddings.sqlite")
            t = time.perf_counter()
            vectors, stats = embed_cached(texts, model_name=emb.model, cache=cache, load=lambda: model,
                                          batch_size=emb.batch_size, progress=False)
            build_index(vectors, params.faiss, threads=threads)
            truncated_share(model, texts)
            stage.append(time.perf_counter() - t)
            cache.close()
    distinct = stats["computed"]
    print(f"texts: {len(texts)} chunks of `{args.chunking}` ({distinct} distinct), batch {emb.batch_size}, "
          f"{threads} thread(s), best of {args.rounds} rounds")
    print(f"  bare encode:  {min(bare):7.2f} s  {len(texts) / min(bare):7.1f} passages/s")
    print(f"  stage path:   {min(stage):7.2f} s  {len(texts) / min(stage):7.1f} passages/s")
    print(f"  ratio stage / bare: {min(bare) / min(stage):.2f}x (goal: at least 0.90x)")

    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "embeddings.sqlite")
        embed_cached(texts, model_name=emb.model, cache=cache, load=lambda: model,
                     batch_size=emb.batch_size, progress=False)
        _, stats = embed_cached(second, model_name=emb.model, cache=cache, load=lambda: model,
                                batch_size=emb.batch_size, progress=False)
        cache.close()
    new = len({t for t in second} - set(texts))
    print(f"second chunking `{args.second}` after `{args.chunking}`: {stats['computed']} of "
          f"{len(second)} texts embedded, {stats['cached']} from the cache "
          f"(texts not in `{args.chunking}`: {new})")


if __name__ == "__main__":
    main()
