"""Stage `bm25@NAME`: tokenize the chunks of chunking NAME for BM25 and write the index folder:
the tokens as JSON (the scorer is rebuilt from them at query time), or with bm25.mmap the bm25s
score matrix for memory-mapped loading. No pickle either way. When the chunking's index plan
(`index_plan` stage) says no BM25 or hybrid config searches it, only an "unbuilt" folder is
written (rag_ablation.retrieval.plan)."""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.data.chunks import load_chunks
from rag_ablation.core.config import load_config
from rag_ablation.retrieval.bm25 import save_bm25
from rag_ablation.retrieval.plan import needed, write_unused
from rag_ablation.data.text import get_tokenizer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--plan", type=Path, default=None,
                    help="the chunking's index plan, <plan>/<chunking>.json (absent: build the index)")
    args = ap.parse_args()
    if args.plan is not None and not needed(args.plan, "bm25"):
        print(write_unused(args.out, kind="bm25", chunking=args.plan.stem), file=sys.stderr)
        return
    bm25 = load_config().bm25
    tokenize = get_tokenizer(bm25.tokenizer)
    chunks = load_chunks(args.chunks)
    save_bm25(args.out, chunk_ids=[c.id for c in chunks], tokens=[tokenize(c.text) for c in chunks],
              tokenizer=bm25.tokenizer, bm25=bm25)


if __name__ == "__main__":
    runner.run(main)
