"""Latency percentiles, for the leaf latency files (never read by another stage)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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
