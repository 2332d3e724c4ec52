"""`rag-ablation costs`: the table of what each stage run cost, from the cost log.

Wall time, CPU time and peak memory of every logged stage run that started at or after
``--since`` (a Unix time; ``make run`` passes its start), with a total row
(``rag_ablation.core.stage_costs``).
"""
from __future__ import annotations

import argparse

from rag_ablation.core.stage_costs import log_path, read_costs, table


def build_parser(prog: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="What each stage run cost (wall, CPU, peak "
                                 "memory), from $RAG_ABLATION_CACHE/stage_costs.jsonl.")
    ap.add_argument("--since", type=float, default=0.0,
                    help="only runs started at or after this Unix time (make run passes its start)")
    return ap


def run(args: argparse.Namespace) -> None:
    print(table(read_costs(log_path(), since=args.since)))
