"""The one rule by which retrieval latency is timed and read: the ``timing`` a retrieval latency
file records (``retrieval.runner``), which questions are timed and how often (:func:`timed`,
:data:`TIMED_RUNS`), and the reader the report page and ``sweep-report`` share.
Kept apart from ``support.timing`` (the percentiles every stage's latency file uses), so the rule
can change without rerunning the LLM stages."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TIMED_QUESTIONS = 200
"""At most this many questions are timed per config (:func:`timed`): every ``stride``-th one,
the same ones in every config. A warm single-text query embedding costs milliseconds per
question, so timing all of a 10,000-question set would undo the batched embedding's speed;
200 questions put the P95 between the 190th and 191st of them."""

TIMED_RUNS = 2
"""A timed question is run this many times and each step keeps its shortest time: a step is only
ever slowed by whatever else the machine runs, so the shortest is its own cost. Measured on this
2-core machine under a load of 8 (172 questions, MiniLM, four runs): the P95 of a single timing
moved from 66 to 82 ms between runs, the P95 of the shorter of two from 61 to 71 ms, inside the
Pareto front's tolerance (``statistics.sweep.COST_TOLERANCE``)."""


def timed(n: int, count: int) -> bool:
    """Whether question ``n`` (0-based) of ``count`` is timed: every ``ceil(count / TIMED_QUESTIONS)``-th
    question from the first, so at most :data:`TIMED_QUESTIONS` of them, spread over the file."""
    return n % max(1, -(-count // TIMED_QUESTIONS)) == 0


WARM = "warm"
"""The ``timing`` of a retrieval latency file whose every config was timed alike
(``retrieval.runner``): models loaded and one untimed pass first, then each question's steps,
with the query embedding (one text per call) timed for every timed question, once per query
transform (``retrieval.query_vectors``), and charged to every config that embeds that text. A
file without it (written before this rule) was timed otherwise: there the first config to use
the embedding model paid its loading and the embedding of every text, so the reports leave its
latency out (:func:`warm_total_ms`)."""

WARM_RULE = ("P95 per query over the questions, every config timed alike and warm: models loaded and one untimed "
             "question first, then the query embedding (one text per call, measured once per query transform and "
             "charged to every config that embeds) plus each config's own searches, "
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
