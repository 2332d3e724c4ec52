"""`rag-ablation prune`: the committed files, build outputs and dvc.lock entries no stage writes any more.

Lists what a removed config, chunking or transform left behind; ``--apply`` removes it
(``rag_ablation.support.housekeeping``).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from rag_ablation.support.housekeeping import prune


def build_parser(prog: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="Files and dvc.lock entries that no stage of the current "
                                 "pipeline writes (what a removed config, chunking or transform leaves behind). "
                                 "Run it before `dvc repro`: the stages that read a whole folder then hash it "
                                 "without the leftovers, as a clean checkout does.")
    ap.add_argument("--apply", action="store_true",
                    help="git rm the committed files, delete the build outputs (git ignores them) and drop the "
                    "dvc.lock entries")
    return ap


def run(args: argparse.Namespace) -> None:
    found = prune(Path("."), apply=args.apply)
    verb = "removed" if args.apply else "would remove (rerun with --apply)"
    if not found.files and not found.lock_entries and not found.build:
        print("nothing to prune: every output file belongs to a current stage")
        return
    for f in found.files:
        print(f"{verb}: {f}")
    for f in found.build:
        print(f"{verb}: {f} (build output, not committed)")
    for e in found.lock_entries:
        print(f"{verb}: lock entry {e}")
