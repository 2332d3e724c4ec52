"""Fusing ranked lists from several retrievers (``FUSIONS`` registry).

Rankings are lists of chunk ids, best first; ranks count from 1.

- ``rrf`` (reciprocal rank fusion): ``score(d) = sum_r w_r / (k + rank_r(d))`` over the
  retrievers whose list contains ``d``; weights default to 1 and ``k`` (positive) to
  ``rag_ablation.core.config.DEFAULT_RRF_K``, the default of ``retrieval.<name>.rrf_k``. Ties are broken
  by the best rank the chunk reached in any list, then by the order of the lists given, then by
  chunk id, so fusion is deterministic.
- ``append``: the first list, then every chunk of the later lists not already present, in
  order. This is the plain concatenation control the ablation report found useless; its scores
  are ``-position`` (1-based) so the output keeps the same shape as ``rrf``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from rag_ablation.core.config import DEFAULT_RRF_K
from rag_ablation.core.errors import lookup


def rrf(rankings: Sequence[Sequence[str]], *, k: float = DEFAULT_RRF_K,
        weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """Reciprocal rank fusion; returns (chunk id, fused score), best first. ``k`` must be
    positive, as ``retrieval.<name>.rrf_k`` must: ``k <= 0`` raises ``ValueError``."""
    if k <= 0:
        raise ValueError(f"rrf k must be a positive number (as retrieval.<name>.rrf_k), got {k}")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"rrf got {len(weights)} weights for {len(rankings)} rankings")
    score: dict[str, float] = {}
    best: dict[str, tuple[int, int]] = {}
    for li, (ranking, w) in enumerate(zip(rankings, weights)):
        for rank, cid in enumerate(ranking, start=1):
            score[cid] = score.get(cid, 0.0) + w / (k + rank)
            best[cid] = min(best.get(cid, (rank, li)), (rank, li))
    return sorted(score.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


def append(rankings: Sequence[Sequence[str]], **_: object) -> list[tuple[str, float]]:
    """Concatenate the lists, dropping repeats; scores are ``-position``."""
    out: list[str] = []
    seen: set[str] = set()
    for ranking in rankings:
        for cid in ranking:
            if cid not in seen:
                seen.add(cid)
                out.append(cid)
    return [(cid, -float(i)) for i, cid in enumerate(out, start=1)]


FUSIONS: dict[str, Callable[..., list[tuple[str, float]]]] = {"rrf": rrf, "append": append}


def fuse(name: str, rankings: Sequence[Sequence[str]], **options: object) -> list[tuple[str, float]]:
    """Dispatch to the named fusion; an unknown name lists the valid ones."""
    return lookup(FUSIONS, name, "fusion")(rankings, **options)
