"""Stage `split`: the seeded dev/test split of the checked question set (``rag_ablation.data.split``).

Reads the checked questions and, if it exists, the split file it wrote before (``--out``: DVC
keeps it, ``persist: true``), and writes the split file again: every question the previous file
assigned keeps its side, new questions are assigned, ids no longer in the question set are
dropped. With ``split: none`` every question gets side ``all``. The file is JSON lines, one
object per question, sorted by id (committed: ``cache: false``). One line of counts per side and
per slice goes to stderr. A previous file that puts one document on both sides, or a split that
leaves a slice with no question on one side, stops the stage (exit 2) and writes nothing.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.core.io import read_jsonl, write_jsonl
from rag_ablation.data.split import read_split, update_split


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    split = load_config().split
    previous = read_split(args.out) if args.out.exists() else {}
    rows, summary = update_split(read_jsonl(args.questions), previous, enabled=split.enabled,
                                 test_fraction=split.test_fraction, seed=split.seed, where=str(args.out))
    write_jsonl(args.out, rows)
    print(summary, file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
