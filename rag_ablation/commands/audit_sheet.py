"""`rag-ablation audit-sheet`: the audit worksheet of one config, to read its misses and decide.

Every answerable question the config missed at ``k`` (no relevant chunk in its top ``k``), with the
question, its labelled span, its reference answer and the top ``k`` passages with their chunk ids
(``rag_ablation.evaluation.scoring.audit.worksheet``). A passage that truly answers the question
becomes a line of ``data/labels/audit.jsonl``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from rag_ablation.core.errors import MissingInput
from rag_ablation.core.io import read_json, read_jsonl, write_text
from rag_ablation.data.questions import Question
from rag_ablation.evaluation.scoring.audit import worksheet
from rag_ablation.evaluation.scoring.scores import read_scores


def build_parser(prog: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="Write the audit worksheet of one config: every question "
                                 "it missed at k, with its top k passages and their ids, to read and decide.")
    ap.add_argument("--config", required=True, help="the retrieval config whose misses to read")
    ap.add_argument("-k", type=int, default=5, help="a question is missed when no relevant chunk is in the top k (5)")
    ap.add_argument("--runs", type=Path, default=Path("data/build/runs"), help="folder of run files (data/build/runs)")
    ap.add_argument("--scores", type=Path, default=Path("metrics/scores/retrieval.csv"))
    ap.add_argument("--questions", type=Path, default=Path("data/build/questions.jsonl"))
    ap.add_argument("--out", type=Path, help="write the worksheet here instead of printing it")
    return ap


def run(args: argparse.Namespace) -> None:
    path = args.runs / f"{args.config}.json"
    if not path.is_file():
        raise MissingInput(f"no run file {path}: run `dvc repro retrieve@{args.config}` (or `dvc pull`)")
    if not args.questions.is_file():
        raise MissingInput(f"no question file {args.questions}: run `dvc repro questions`")
    run_file = read_json(path)
    questions = [Question(**d) for d in read_jsonl(args.questions)]
    text = worksheet(args.config, run_file["questions"], run_file.get("passages", {}), read_scores(args.scores),
                     questions, k=args.k)
    if args.out:
        write_text(args.out, text)
    else:
        print(text, end="")
