"""The one rule by which retrieval latency is timed and read: the ``timing`` a retrieval latency
file records (``retrieval.runner``), and the reader the report page and ``sweep-report`` share.
Kept apart from ``support.timing`` (the percentiles every stage's latency file uses), so the rule
can change without rerunning the LLM stages."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def warm_total_ms(latency: Mapping[str, Any], percentile: str = "p95_ms") -> float | None:
    """``total.PERCENTILE`` (ms) of a retrieval latency file's content when it was timed by the
    rule :data:`WARM`; None when its ``timing`` is anything else or missing (timed by an older
    rule, not comparable), or the value is missing or not a number."""
    if latency.get("timing") != WARM:
        return None
    total = latency.get("total")
    value = total.get(percentile) if isinstance(total, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
