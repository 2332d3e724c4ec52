"""Stage `bm25@NAME`: tokenize the chunks of chunking NAME for BM25 and store the tokens as
JSON (the scorer is rebuilt from them at query time; no pickle)."""
from __future__ import annotations

import argparse
from pathlib import Path

from rag_ablation import cli
from rag_ablation.chunking import load_chunks
from rag_ablation.bm25 import get_tokenizer
from rag_ablation.indexes import save_bm25
from rag_ablation.params import get, load_params


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    name = str(get(load_params(), "bm25.tokenizer"))
    tokenize = get_tokenizer(name)
    chunks = load_chunks(args.chunks)
    save_bm25(args.out, chunk_ids=[c.id for c in chunks], tokens=[tokenize(c.text) for c in chunks], tokenizer=name)


if __name__ == "__main__":
    cli.run(main)
