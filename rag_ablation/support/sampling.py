"""Seeded samples of questions, stratified by slice, shared by every layer that needs one
(answers are generated, judged and hand-graded on the same questions, so they pair).

``stratified_sample(questions, size, seed)``: each slice gets ``size * n_slice / n`` questions
rounded by the largest-remainder method (ties to the larger slice, then the slice name), so the
shares follow the question set and the total is exactly ``size``; within a slice the questions
are a seeded shuffle of their ids (``random.Random(f"{seed}:{slice}")``), so the sample never
depends on file order, and a larger size keeps every question of a smaller one from the same
slice order. ``size`` of None ("all") or at least ``n`` returns every question. The result
keeps the order of ``questions``.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, TypeVar

Q = TypeVar("Q")


def allocation(counts: dict[str, int], size: int) -> dict[str, int]:
    """Questions per slice for a sample of ``size`` (largest remainder; module docstring)."""
    total = sum(counts.values())
    if size >= total:
        return dict(counts)
    exact = {s: size * c / total for s, c in counts.items()}
    out = {s: int(v) for s, v in exact.items()}
    rest = size - sum(out.values())
    order = sorted(counts, key=lambda s: (-(exact[s] - out[s]), -counts[s], s))
    for s in order[:rest]:
        out[s] += 1
    return out


def stratified_sample(questions: Sequence[Any], size: int | None, *, seed: int) -> list[Any]:
    """A seeded sample of ``size`` questions stratified by ``slice`` (module docstring)."""
    if size is None or size >= len(questions):
        return list(questions)
    by_slice: dict[str, list[str]] = {}
    for q in questions:
        by_slice.setdefault(q.slice, []).append(q.id)
    take = allocation({s: len(v) for s, v in by_slice.items()}, size)
    chosen: set[str] = set()
    for s, ids in by_slice.items():
        order = sorted(ids)
        random.Random(f"{seed}:{s}").shuffle(order)
        chosen.update(order[: take[s]])
    return [q for q in questions if q.id in chosen]
