"""How far a correctness judge agrees with the hand grades: the 2x2 table, rates, kappa.

The judge's verdicts (True/False/None) and the hand grades (True/False) are parallel sequences
read by :func:`rag_ablation.evaluation.judges.verdicts.verdict_codes`; the conventions (None
for undefined, invalid verdicts counted, seeded resampling, JSON-ready ``as_dict``) are those
listed in :mod:`rag_ablation.evaluation.judges.verdicts`.

* :func:`confusion`: the :class:`Confusion` table of judge against human;
* :func:`agreement`: accuracy, TPR, TNR and Cohen's kappa, each with a bootstrap percentile
  interval (:class:`Agreement`, :class:`ResampledStatistic`);
* :func:`disagreements`: the keys of the answers where judge and human differ.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_ablation.evaluation.judges.verdicts import INVALID, Verdict, check_same_length, verdict_codes
from rag_ablation.evaluation.statistics.inference import (
    Interval,
    check_count,
    check_open_unit,
    interval_dict,
    resample_blocks,
)

__all__ = [
    "Agreement",
    "Confusion",
    "Disagreements",
    "ResampledStatistic",
    "STATISTICS",
    "agreement",
    "confusion",
    "disagreements",
]


def _pair(judge: Sequence[Verdict], human: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    """Parallel judge verdicts and hand grades as code arrays of one length; else ValueError."""
    j = verdict_codes(judge, "judge", allow_invalid=True)
    h = verdict_codes(human, "human", allow_invalid=False)
    check_same_length(j, h, ("judge", "human"))
    return j, h


# ------------------------------------------------------------------- confusion table


@dataclass(frozen=True)
class Confusion:
    """Judge against human on answers that have both.

    ``tp``: judge correct, human correct. ``fp``: judge correct, human incorrect (the judge
    accepts a wrong answer). ``fn``: judge incorrect, human correct (rejects a right one).
    ``tn``: judge incorrect, human incorrect. ``invalid``: judge verdict None, in no cell;
    ``invalid_on_correct`` of them are on answers the human graded correct.
    """

    tp: int
    fp: int
    fn: int
    tn: int
    invalid: int
    invalid_on_correct: int

    @property
    def n(self) -> int:
        """Pairs with a valid judge verdict: ``tp + fp + fn + tn``."""
        return self.tp + self.fp + self.fn + self.tn

    @property
    def total(self) -> int:
        """All pairs: ``n + invalid``."""
        return self.n + self.invalid

    def as_dict(self) -> dict[str, Any]:
        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "n": self.n,
            "invalid": self.invalid,
            "invalid_on_correct": self.invalid_on_correct,
            "total": self.total,
        }


def _cells(j: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Cell of every valid pair: 0 tp, 1 fp, 2 fn, 3 tn (invalid pairs left out)."""
    valid = j != INVALID
    return (2 * (1 - j[valid]) + (1 - h[valid])).astype(np.intp)


def confusion(judge: Sequence[Verdict], human: Sequence[bool]) -> Confusion:
    """The :class:`Confusion` table of parallel judge verdicts (True/False/None) and hand grades.

    Raises ValueError on empty input, unequal lengths or a verdict that is not a bool (or
    None for the judge).
    """
    return _confusion(*_pair(judge, human))


def _confusion(j: np.ndarray, h: np.ndarray) -> Confusion:
    counts = np.bincount(_cells(j, h), minlength=4)
    invalid = j == INVALID
    return Confusion(
        tp=int(counts[0]),
        fp=int(counts[1]),
        fn=int(counts[2]),
        tn=int(counts[3]),
        invalid=int(np.count_nonzero(invalid)),
        invalid_on_correct=int(np.count_nonzero(invalid & (h == 1))),
    )


# ------------------------------------------------------------------------- agreement


STATISTICS = ("accuracy", "tpr", "tnr", "kappa")
"""The statistics of :class:`Agreement`, in report order."""

_UNDEFINED = {
    "accuracy": "no answer has a valid judge verdict",
    "tpr": "no answer graded correct by hand has a valid judge verdict (TPR is 0/0)",
    "tnr": "no answer graded incorrect by hand has a valid judge verdict (TNR is 0/0)",
    "kappa": "judge and human gave every answer the same verdict, so expected agreement is 1 "
    "and kappa is 0/0",
}


def _statistics(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """Accuracy, TPR, TNR and kappa from (arrays of) counts; NaN where undefined.

    Kappa is ``(n (tp + tn) - E) / (n^2 - E)`` with ``E = (tp + fp)(tp + fn) + (fn + tn)(fp + tn)``,
    i.e. ``(p_o - p_e) / (1 - p_e)``, computed from integers so that ``p_e == 1`` is exact.
    """
    tp, fp, fn, tn = (np.asarray(x, dtype=np.int64) for x in (tp, fp, fn, tn))
    n = tp + fp + fn + tn
    pos = tp + fn  # human correct
    neg = fp + tn  # human incorrect
    expected = (tp + fp) * pos + (fn + tn) * neg
    spread = n * n - expected
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "accuracy": np.where(n > 0, (tp + tn) / n, np.nan),
            "tpr": np.where(pos > 0, tp / pos, np.nan),
            "tnr": np.where(neg > 0, tn / neg, np.nan),
            "kappa": np.where(spread > 0, (n * (tp + tn) - expected) / spread, np.nan),
        }


@dataclass(frozen=True)
class ResampledStatistic:
    """One agreement statistic with its bootstrap percentile interval.

    ``estimate`` is the statistic on all pairs, None when undefined there (``reason`` says
    why). ``interval`` (an :class:`Interval`, method ``"percentile"``) holds the same estimate
    and the ``(1-c)/2`` and ``(1+c)/2`` quantiles (``numpy.percentile``, linear interpolation)
    of the statistic over the resamples where it is defined; its ``n`` is the number of pairs
    the statistic is computed on (all valid pairs for accuracy and kappa, the human-correct
    ones for TPR, the human-incorrect ones for TNR). ``dropped`` counts the resamples where the
    statistic was undefined and that were left out; ``interval`` is None when the estimate is
    undefined (then every resample is, too).
    """

    name: str
    estimate: float | None
    interval: Interval | None
    dropped: int
    n_resamples: int
    reason: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            **interval_dict(self.interval, ("low", "high", "n")),
            "dropped": self.dropped,
            "n_resamples": self.n_resamples,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Agreement:
    """Agreement of a judge with the hand grades (see :func:`agreement`).

    ``n``: pairs with a valid judge verdict (the sample of every statistic). ``invalid``: pairs
    whose judge verdict is None (excluded, counted).
    """

    confusion: Confusion
    accuracy: ResampledStatistic
    tpr: ResampledStatistic
    tnr: ResampledStatistic
    kappa: ResampledStatistic
    confidence: float
    seed: int

    @property
    def n(self) -> int:
        return self.confusion.n

    @property
    def invalid(self) -> int:
        return self.confusion.invalid

    def statistics(self) -> dict[str, ResampledStatistic]:
        """The four statistics by name: accuracy, tpr, tnr, kappa."""
        return {name: getattr(self, name) for name in STATISTICS}

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "invalid": self.invalid,
            "confidence": self.confidence,
            "seed": self.seed,
            "confusion": self.confusion.as_dict(),
            **{name: stat.as_dict() for name, stat in self.statistics().items()},
        }


def _resampled_statistics(cells: np.ndarray, n_resamples: int, seed: int) -> dict[str, np.ndarray]:
    """The four statistics on ``n_resamples`` resamples of the valid pairs (same indices for all).

    Indices are drawn as :func:`~rag_ablation.evaluation.statistics.inference.bootstrap_mean_ci`
    draws them (``rng.integers(0, n, size=(rows, n))`` in blocks), so the accuracy resamples
    equal that function's resampled means of the 0/1 agreement values under the same seed.
    """
    n = cells.size
    rng = np.random.default_rng(seed)
    counts = np.empty((4, n_resamples), dtype=np.int64)
    for start, rows in resample_blocks(n_resamples, n):
        drawn = cells[rng.integers(0, n, size=(rows, n))]
        for cell in range(4):
            counts[cell, start : start + rows] = np.count_nonzero(drawn == cell, axis=1)
    return _statistics(*counts)


def agreement(
    judge: Sequence[Verdict],
    human: Sequence[bool],
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Agreement:
    """Accuracy, TPR, TNR and Cohen's kappa of ``judge`` against ``human``, with intervals.

    On the ``n`` pairs with a valid judge verdict (invalid ones are counted in ``invalid`` and
    otherwise left out), with the :class:`Confusion` counts:

    * accuracy ``(tp + tn) / n``;
    * TPR ``tp / (tp + fn)``: share the judge calls correct among answers graded correct;
    * TNR ``tn / (tn + fp)``: share the judge calls incorrect among answers graded incorrect;
    * Cohen's kappa ``(p_o - p_e) / (1 - p_e)``, ``p_o`` = accuracy,
      ``p_e = ((tp + fp)(tp + fn) + (fn + tn)(fp + tn)) / n^2`` (as
      ``sklearn.metrics.cohen_kappa_score``).

    Undefined values are None, never 0: a rate with a zero denominator, and kappa when
    ``p_e == 1``, which happens exactly when judge and human both gave every answer the same
    verdict (both all-correct or both all-incorrect; ``reason`` says so). When only one rater
    is constant, or both are constant with opposite verdicts, kappa is defined and 0
    (``p_o == p_e``: no agreement beyond chance), as scikit-learn computes it.

    Intervals: ``n_resamples`` bootstrap resamples of the valid pairs (``n`` drawn with
    replacement, seeded ``default_rng(seed)``); every statistic is computed on the same
    resamples, and a resample where a statistic is undefined (e.g. no human-correct pair drawn,
    for TPR) is dropped from that statistic's interval and counted in its ``dropped``. When no
    pair is valid every estimate is None and ``dropped == n_resamples``.

    Raises ValueError on empty input, unequal lengths, a verdict that is not a bool (or None
    for the judge), ``n_resamples`` < 1 or ``confidence`` outside (0, 1).
    """
    j, h = _pair(judge, human)
    n_resamples = check_count(n_resamples, "n_resamples", minimum=1)
    confidence = check_open_unit(confidence, "confidence")
    seed = check_count(seed, "seed")
    table = _confusion(j, h)
    point = _statistics(table.tp, table.fp, table.fn, table.tn)
    cells = _cells(j, h)
    resampled = _resampled_statistics(cells, n_resamples, seed) if cells.size else None
    sizes = {"accuracy": table.n, "tpr": table.tp + table.fn, "tnr": table.fp + table.tn, "kappa": table.n}
    alpha = (1 - confidence) / 2
    out: dict[str, ResampledStatistic] = {}
    for name in STATISTICS:
        value = float(point[name])
        if math.isnan(value):
            reason = _UNDEFINED["accuracy"] if table.n == 0 else _UNDEFINED[name]
            out[name] = ResampledStatistic(name, None, None, n_resamples, n_resamples, reason)
            continue
        assert resampled is not None
        values = resampled[name]
        defined = values[~np.isnan(values)]
        dropped = n_resamples - int(defined.size)
        if defined.size == 0:  # possible in principle (e.g. 1 human-correct pair in many), never in practice
            out[name] = ResampledStatistic(
                name, value, None, dropped, n_resamples, "undefined in every bootstrap resample"
            )
            continue
        low, high = np.percentile(defined, [100 * alpha, 100 * (1 - alpha)])
        interval = Interval(value, float(low), float(high), int(sizes[name]), "percentile")
        out[name] = ResampledStatistic(name, value, interval, dropped, n_resamples, None)
    return Agreement(confusion=table, confidence=confidence, seed=seed, **out)


@dataclass(frozen=True)
class Disagreements:
    """Keys of the answers where judge and human differ.

    ``false_accepts``: judge correct, human incorrect (the ``fp`` cell). ``false_rejects``:
    judge incorrect, human correct (``fn``). ``invalid``: judge verdict None. Each is sorted
    (a tuple here, a list in ``as_dict``).
    """

    false_accepts: tuple[Hashable, ...]
    false_rejects: tuple[Hashable, ...]
    invalid: tuple[Hashable, ...]

    def as_dict(self) -> dict[str, Any]:
        def plain(key: Hashable) -> Any:
            return list(key) if isinstance(key, tuple) else key

        return {
            "false_accepts": [plain(k) for k in self.false_accepts],
            "false_rejects": [plain(k) for k in self.false_rejects],
            "invalid": [plain(k) for k in self.invalid],
        }


def disagreements(keys: Sequence[Hashable], judge: Sequence[Verdict], human: Sequence[bool]) -> Disagreements:
    """The keys (e.g. question ids or ``(config, id)`` tuples) where ``judge != human``.

    ``keys``, ``judge`` and ``human`` are parallel; keys must be mutually sortable (tuples
    become lists in ``as_dict``). Raises ValueError as :func:`confusion` does, and when
    ``keys`` has another length or a repeated key.
    """
    j, h = _pair(judge, human)
    keys = list(keys)
    if len(keys) != j.size:
        raise ValueError(
            f"keys has {len(keys)} entries but judge and human have {j.size}; expected one key per answer"
        )
    if len(set(keys)) != len(keys):
        seen: set[Hashable] = set()
        repeated = None
        for k in keys:
            if k in seen:
                repeated = k
                break
            seen.add(k)
        raise ValueError(f"keys has the key {repeated!r} more than once; expected one key per answer")

    def pick(mask: np.ndarray) -> tuple[Hashable, ...]:
        return tuple(sorted(k for k, m in zip(keys, mask) if m))  # type: ignore[type-var]  # keys are of one kind

    return Disagreements(
        false_accepts=pick((j == 1) & (h == 0)),
        false_rejects=pick((j == 0) & (h == 1)),
        invalid=pick(j == INVALID),
    )
