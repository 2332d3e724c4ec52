"""Retrieval measures over stored rankings.

For one question with ranking ``r`` (chunk ids, best first) and relevant set ``R``:

- ``first_relevant_rank``: the 1-based position of the first chunk of ``r`` in ``R``, or None.
- hit@k (recall@k with one answer per question, "hit rate"): 1 if that rank is <= k (inclusive).
- RR@k: ``1 / rank`` if rank <= k, else 0.

Over a set of questions, recall@k and MRR@k are the means. An empty ranking, or a question with
no relevant chunk in the corpus, scores 0 on both. Unanswerable questions are not scored at all:
callers exclude them and report how many were excluded. An empty question set has no mean:
``summarize`` then reports ``n_questions = 0`` and no measures.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

RECALL_KS = (1, 5, 10)
MRR_K = 10


def first_relevant_rank(ranking: Sequence[str], relevant: Iterable[str]) -> int | None:
    rel = set(relevant)
    for pos, cid in enumerate(ranking, start=1):
        if cid in rel:
            return pos
    return None


def hit_at(rank: int | None, k: int) -> float:
    return 1.0 if rank is not None and rank <= k else 0.0


def rr_at(rank: int | None, k: int) -> float:
    return 1.0 / rank if rank is not None and rank <= k else 0.0


def summarize(ranks: Sequence[int | None]) -> dict[str, float]:
    """``recall_at_1/5/10`` and ``mrr_at_10`` of first-relevant ranks, plus ``n_questions``."""
    out: dict[str, float] = {"n_questions": len(ranks)}
    if not ranks:
        return out
    for k in RECALL_KS:
        out[f"recall_at_{k}"] = float(np.mean([hit_at(r, k) for r in ranks]))
    out[f"mrr_at_{MRR_K}"] = float(np.mean([rr_at(r, MRR_K) for r in ranks]))
    return out
