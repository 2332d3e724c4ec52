"""`rag-ablation prune`: the committed files and dvc.lock entries no stage writes any more.

Lists what a removed config, chunking or transform left behind; ``--apply`` removes it
(``rag_ablation.support.housekeeping``).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from rag_ablation.support.housekeeping import prune


def build_parser(prog: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="Files and dvc.lock entries that no stage of the current "
                                 "pipeline writes (what a removed config, chunking or transform leaves behind).")
    ap.add_argument("--apply", action="store_true", help="git rm the files and drop the dvc.lock entries")
    return ap


def run(args: argparse.Namespace) -> None:
    found = prune(Path("."), apply=args.apply)
    verb = "removed" if args.apply else "would remove (rerun with --apply)"
    if not found.files and not found.lock_entries:
        print("nothing to prune: every tracked output file belongs to a current stage")
        return
    for f in found.files:
        print(f"{verb}: {f}")
    for e in found.lock_entries:
        print(f"{verb}: dvc.lock entry {e}")
