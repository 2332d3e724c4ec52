"""Stage `index_plan`: which index each chunking needs, from the retrieval configs of params.yaml.

Writes one file per chunking, `<out>/<chunking>.json` = {"bm25": bool, "dense": bool}
(rag_ablation.retrieval.plan), counting only the configs of `run_configs`. The `dense@NAME` and `bm25@NAME` stages depend on their
chunking's file and build their index only when it says so, so a BM25-only study embeds nothing
and a change that flips no need (rrf_k, k, a query transform) reruns no index stage.

Also writes `<transforms>/<name>.json` = {"used": bool, "reason": ...} per query transform: a
`queries@NAME` no running config searches with asks the LLM nothing.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.retrieval.plan import index_needs, transform_needs, unbuilt_lines, write_plan, write_transform_plan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True, help="folder of one <chunking>.json per chunking")
    ap.add_argument("--transforms", type=Path, required=True, help="folder of one <transform>.json per query transform")
    args = ap.parse_args()
    params = load_config()
    needs = index_needs(params.searched(), chunkings=params.chunkings)
    write_plan(args.out, needs)
    transforms = transform_needs(params.searched(), params.retrieval, params.query_transforms)
    write_transform_plan(args.transforms, transforms)
    for line in unbuilt_lines(needs):
        print(line, file=sys.stderr)
    for name, need in transforms.items():
        if not need["used"]:
            print(f"index_plan: query transform {name} not run ({need['reason']})", file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
