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
from rag_ablation.core.config import NO_SPLIT, load_config
from rag_ablation.core.io import read_jsonl, write_jsonl
from rag_ablation.data.split import SIDES, SplitError, assign_split, no_split, read_split, side_counts, slice_counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    split = load_config().split

    questions = read_jsonl(args.questions)
    previous = read_split(args.out) if args.out.exists() else {}
    ids = {str(q["id"]) for q in questions}
    dropped = sum(1 for i in previous if i not in ids)
    if not split.enabled:
        rows = no_split(questions)
        write_jsonl(args.out, rows)
        print(f"split: {NO_SPLIT}: all {len(rows)} questions on side all ({dropped} dropped from the previous file)",
              file=sys.stderr)
        return
    try:
        rows = assign_split(questions, previous, test_fraction=split.test_fraction, seed=split.seed)
    except SplitError as e:
        raise SplitError(f"{args.out}: {e}") from None
    write_jsonl(args.out, rows)
    kept = sum(1 for r in rows if previous.get(r["id"]) in SIDES)
    sides = side_counts(rows)
    by_slice = ", ".join(f"{s} {c.get('dev', 0)}/{c.get('test', 0)}" for s, c in slice_counts(rows).items())
    print(f"split (test_fraction {split.test_fraction}, seed {split.seed}): dev {sides.get('dev', 0)}, "
          f"test {sides.get('test', 0)}; by slice (dev/test): {by_slice}; {kept} kept, {len(rows) - kept} newly "
          f"assigned, {dropped} dropped (no longer in the question set)", file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
