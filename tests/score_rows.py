"""Hand-built per-question score rows for the statistics, report and diff tests.

Rows have exactly the columns and types of ``rag_ablation.evaluation.scoring.scores`` (what
``read_scores`` returns), derived from a first relevant rank the way the ``score`` stage does.
"""
from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag_ablation.evaluation.scoring.scores import ANSWER_FIELDS, RETRIEVAL_FIELDS, write_scores


def retrieval_row(config: str, qid: str, rank: int | None, *, slice: str = "main", doc: str = "t/a.md",
                  answerable: bool = True) -> dict[str, Any]:
    """One retrieval row; ``rank`` is the first relevant rank (None: nothing relevant ranked)."""
    row: dict[str, Any] = {"config": config, "id": qid, "slice": slice if answerable else "unanswerable",
                           "doc": doc if answerable else "", "answerable": int(answerable),
                           "first_relevant_rank": None, "hit_at_1": None, "hit_at_5": None, "hit_at_10": None,
                           "rr_at_10": None, "n_relevant": None, "top_score": 0.5}
    if answerable:
        row.update(first_relevant_rank=rank, n_relevant=1,
                   **{f"hit_at_{k}": int(rank is not None and rank <= k) for k in (1, 5, 10)},
                   rr_at_10=1.0 / rank if rank is not None and rank <= 10 else 0.0)
    return row


def config_rows(config: str, ranks: Sequence[int | None], *, slices: Sequence[str] | None = None,
                docs: Sequence[str] | None = None, ids: Sequence[str] | None = None,
                unanswerable: int = 0) -> list[dict[str, Any]]:
    """Rows of one config: question ``q0, q1, ...`` (or ``ids``) has first relevant rank
    ``ranks[i]``; ``unanswerable`` more questions ``u0, u1, ...`` follow with empty measures."""
    ids = list(ids or [f"q{i}" for i in range(len(ranks))])
    slices = list(slices or ["main"] * len(ranks))
    docs = list(docs or [f"t/d{i % 3}.md" for i in range(len(ranks))])
    rows = [retrieval_row(config, qid, rank, slice=s, doc=d) for qid, rank, s, d in zip(ids, ranks, slices, docs)]
    rows += [retrieval_row(config, f"u{i}", None, answerable=False) for i in range(unanswerable)]
    return rows


def hits_to_ranks(hits: Sequence[int], *, hit_rank: int = 3) -> list[int | None]:
    """Ranks that give these hit@5 values: ``hit_rank`` for a hit, None for a miss."""
    return [hit_rank if h else None for h in hits]


def answer_row(config: str, qid: str, contains: int | None, *, answerable: bool = True) -> dict[str, Any]:
    return {"config": config, "id": qid, "slice": "main" if answerable else "unanswerable",
            "doc": "t/a.md" if answerable else "", "answerable": int(answerable), "refusal": 0,
            "contains_reference": contains if answerable else None, "token_f1": 0.5 if answerable else None,
            "relevant_in_prompt": 1 if answerable else None}


def write_retrieval(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    write_scores(path, rows, RETRIEVAL_FIELDS)


def write_answers(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    write_scores(path, rows, ANSWER_FIELDS)


def write_verdicts(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """A metrics/scores/verdicts.csv with ``rows`` (config, id, llm_score, combined_score), the
    columns judge_eval writes around them left empty."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["config", "id", "slice", "answer_sha256", "hand", "llm", "llm_score",
                                          "combined", "combined_score"], lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({"slice": "main", "answer_sha256": "x", "hand": "", "llm": "1", "combined": "", **r})

