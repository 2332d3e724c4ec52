"""Stage `dense@NAME`: embed the chunks of chunking NAME (through the embedding cache) and
write the FAISS index of type `faiss.index` (flat IndexFlatIP by default, ivf or hnsw), plus a
metrics file with the share of chunks longer than the model's maximum sequence length (embedded
truncated) and the index's build settings as built (an IVF nlist above the chunk count is
clamped to it). With `faiss.shards` above 1 (ivf) the index is built sharded, on disk, and
retrieval memory-maps it (rag_ablation.retrieval.sharded_ivf). The texts the embedding cache
lacks are embedded by `embedding.backend` (in the process, or an OpenAI-compatible server) on
`embedding.engine` (here, or Ray). The truncated share is counted with the shipped MiniLM's
tokenizer file (rag_ablation.retrieval.embeddings.folder_tokenizer: the loaded model's counts,
no torch), so a rerun with every text cached loads no model; any other model is loaded to count.
When the chunking's index plan (`index_plan` stage) says no dense or hybrid config searches it,
only an "unbuilt" folder is written (rag_ablation.retrieval.plan): no model is loaded and nothing
is embedded."""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import functools
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.data.chunks import load_chunks
from rag_ablation.core.config import load_config
from rag_ablation.retrieval.embeddings import (EmbeddingCache, cache_name, embed_cached, folder_tokenizer,
                                               make_engine, open_backend, truncation)
from rag_ablation.retrieval.indexes import save_dense_index
from rag_ablation.retrieval.plan import needed, write_unused
from rag_ablation.core.io import write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--metrics", type=Path, required=True)
    ap.add_argument("--plan", type=Path, default=None,
                    help="the chunking's index plan, <plan>/<chunking>.json (absent: build the index)")
    args = ap.parse_args()
    if args.plan is not None and not needed(args.plan, "dense"):
        reason = write_unused(args.out, kind="dense", chunking=args.plan.stem)
        write_json(args.metrics, {"built": 0, "reason": reason})
        print(reason, file=sys.stderr)
        return
    params = load_config()
    emb = params.embedding
    model_name, threads = emb.model, emb.threads
    chunks = load_chunks(args.chunks)
    texts = [c.text for c in chunks]
    load = functools.cache(lambda: open_backend(emb))  # loaded once, and only if needed

    cache = EmbeddingCache()
    vectors, stats = embed_cached(texts, model_name=cache_name(emb), cache=cache, load=load,
                                  batch_size=emb.batch_size, progress=True, engine=make_engine(emb, params.ray))
    cache.close()
    built = save_dense_index(args.out, vectors, params.faiss, [c.id for c in chunks],
                             {"model": model_name, "dim": int(vectors.shape[1])}, threads=threads)
    if built.get("nlist", params.faiss.nlist) != params.faiss.nlist:
        print(f"faiss.nlist {params.faiss.nlist} is more than the {len(chunks)} chunks: "
              f"built {built['nlist']} IVF lists", file=sys.stderr)
    figures, truncated = truncation(folder_tokenizer(emb) or load(), texts)  # the file: no model load
    write_json(args.metrics, {
        "faiss": built,
        "n_chunks": len(chunks),
        "mean_chars": round(sum(len(t) for t in texts) / len(texts), 1),
        **figures,
    })
    print(f"embedded {stats['computed']} new texts, {stats['cached']} from the cache; {truncated}", file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
