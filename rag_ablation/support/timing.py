"""Latency percentiles, for the leaf latency files (never read by another stage)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

WARM = "warm"
"""The ``timing`` of a retrieval latency file whose every config was timed alike
(``retrieval.runner``): models loaded and one untimed pass first, then each question's steps,
with a dense config's query embedding (one text per call) timed for every question and charged
to every config that embeds. A file without it (written before this rule) was timed otherwise:
there the first config to use the embedding model paid its loading and the embedding of every
text, so the reports leave its latency out (:func:`warm_total_ms`)."""

WARM_RULE = ("P95 per query over the questions, every config timed alike and warm: models loaded and one untimed "
             "question first, then each config's own query embedding (one text per call) plus its searches, "
             "fusion and rerank, each step the shorter of two runs; the LLM time of a query rewrite or HyDE "
             "passage is not included")
"""How the reports word :data:`WARM`."""


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """P50/P95/P99 of ``values`` (numpy's linear interpolation), rounded to 3 decimals, as
    ``{"p50", "p95", "p99"}``. Empty input gives an empty dict."""
    if not values:
        return {}
    p = np.percentile(np.asarray(values, dtype=np.float64), [50, 95, 99])
    return {"p50": round(float(p[0]), 3), "p95": round(float(p[1]), 3), "p99": round(float(p[2]), 3)}


def percentiles_ms(seconds: Sequence[float]) -> dict[str, float]:
    """``percentiles`` of durations given in seconds, in milliseconds, as
    ``{"p50_ms", "p95_ms", "p99_ms"}``."""
    return {f"{k}_ms": v for k, v in percentiles([s * 1000.0 for s in seconds]).items()}


def warm_total_ms(latency: Mapping[str, Any], percentile: str = "p95_ms") -> float | None:
    """``total.PERCENTILE`` (ms) of a retrieval latency file's content when it was timed by the
    rule :data:`WARM`; None when its ``timing`` is anything else or missing (timed by an older
    rule, not comparable), or the value is missing or not a number."""
    if latency.get("timing") != WARM:
        return None
    total = latency.get("total")
    value = total.get(percentile) if isinstance(total, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
