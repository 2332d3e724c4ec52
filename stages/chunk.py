"""Stage `chunk@NAME`: cut the corpus into chunks with the chunking named NAME in params.yaml.

Reads `chunk_size` and `chunk_overlap` (the base values) and `chunkings.NAME`; an entry's null
`size` or `overlap` takes the base value, so `dvc exp run -S chunk_size=400` resizes every
chunking that does not fix its own size.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.retrieval.chunking import chunk_corpus, chunk_options
from rag_ablation.data.corpus import load_corpus
from rag_ablation.core.io import write_jsonl


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    options = chunk_options(load_config().chunking(args.name))
    documents = load_corpus(args.corpus)
    chunks = chunk_corpus(((d.doc, d.track, d.text) for d in documents), **options)
    write_jsonl(args.out, [c.to_json() for c in chunks])
    print(f"chunking {args.name}: {len(chunks)} chunks from {len(documents)} documents ({options})", file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
