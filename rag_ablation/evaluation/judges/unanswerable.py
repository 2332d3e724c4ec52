"""Unanswerable questions: how often a config declines them, a score that rewards declining
over guessing, and how well the top retrieval score alone could make the decision.

:func:`decline_rate` and :func:`crag_score` take one config's answer rows, with the keys of
:mod:`rag_ablation.evaluation.judges.failures`: ``id`` (string, each at most once), ``answerable``
and ``refusal`` (bool or 0/1), and for :func:`crag_score` the verdict ``correct`` (bool or 0/1,
None when unknown) on every answerable row. :func:`threshold_sweep` takes parallel arrays, one
value per question: the top retrieval score of the config (the reranker's where there is one,
else the fused score, else the dense or BM25 score of the rank-1 chunk: ``top_score`` of
``metrics/scores/retrieval.csv``, ``ranking[0].score`` in a run file), whether the question is
answerable, and optionally the verdict of the answer the config generated for it.

Conventions follow :mod:`rag_ablation.evaluation.statistics.inference`: plain ``int``/``float`` results, a
share of an empty group is None (never 0), ``as_dict()`` is JSON-ready, and bad input raises
``ValueError`` naming what was found and what was expected.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from scipy.stats import rankdata

from rag_ablation.evaluation.judges.failures import checked_rows, row_flag, row_verdict, share
from rag_ablation.evaluation.statistics.inference import wilson_interval

__all__ = [
    "CURVE_ACCURACIES",
    "CragScore",
    "DeclineRate",
    "Sweep",
    "SweepPoint",
    "crag_score",
    "decline_rate",
    "threshold_sweep",
]


# ------------------------------------------------------------------------ decline rate


@dataclass(frozen=True)
class DeclineRate:
    """Declines among the answers to unanswerable questions.

    ``estimate = declines / n`` (higher is better), ``[low, high]`` its Wilson interval at
    ``confidence`` (both bounds included; :func:`~rag_ablation.evaluation.statistics.inference.wilson_interval`),
    ``answered_ids``: the sorted ids of the unanswerable questions that got an asserted answer.
    """

    declines: int
    n: int
    estimate: float
    low: float
    high: float
    confidence: float
    answered_ids: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "declines": self.declines,
            "n": self.n,
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "answered_ids": list(self.answered_ids),
        }


def decline_rate(rows: Iterable[Mapping[str, Any]], *, confidence: float = 0.95) -> DeclineRate | None:
    """The :class:`DeclineRate` over the rows whose ``answerable`` is false (a row declines
    when ``refusal`` is true); answerable rows are ignored. None when no row is unanswerable.

    Raises ValueError on a non-mapping row, a missing or repeated id, a missing or malformed
    ``answerable``/``refusal``, or ``confidence`` outside (0, 1).
    """
    declined = 0
    answered: list[str] = []
    for i, row in enumerate(checked_rows(rows)):
        if row_flag(row, "answerable", i):
            continue
        if row_flag(row, "refusal", i):
            declined += 1
        else:
            answered.append(row["id"])
    n = declined + len(answered)
    if n == 0:
        if not (isinstance(confidence, (int, float)) and 0.0 < confidence < 1.0):
            raise ValueError(f"confidence must be strictly between 0 and 1; got {confidence!r}")
        return None
    interval = wilson_interval(declined, n, confidence=confidence)
    return DeclineRate(declined, n, interval.estimate, interval.low, interval.high, float(confidence),
                       tuple(sorted(answered)))


# ------------------------------------------------------------------------- CRAG score


@dataclass(frozen=True)
class CragScore:
    """The CRAG-style score of one config's answers: declining beats guessing wrong.

    Per question: an answerable question scores +1 when answered correctly, 0 when declined
    (``refusal``, whatever its verdict) and -1 when answered wrongly; an unanswerable question
    scores +1 when declined (declining is its correct answer) and -1 for any asserted answer (a
    hallucination; its verdict is not read). An answerable question answered with verdict None
    is ``unknown``: it gets no score and is left out of every share (``unknown_ids``, sorted).

    ``scored = n - unknown``; ``correct = answerable_correct + unanswerable_declined`` (+1),
    ``missing = answerable_declined`` (0), ``wrong = answerable_wrong + unanswerable_answered``
    (-1). ``score = (correct - wrong) / scored``, in [-1, 1]; ``accuracy = correct / scored``,
    ``hallucination = wrong / scored``, ``missing_rate = missing / scored``, so ``score =
    accuracy - hallucination`` and the three rates sum to 1. All four are None when
    ``scored == 0``.
    """

    n: int
    scored: int
    unknown: int
    unknown_ids: tuple[str, ...]
    answerable_correct: int
    answerable_declined: int
    answerable_wrong: int
    unanswerable_declined: int
    unanswerable_answered: int
    score: float | None
    accuracy: float | None
    hallucination: float | None
    missing_rate: float | None

    @property
    def correct(self) -> int:
        """Questions scoring +1."""
        return self.answerable_correct + self.unanswerable_declined

    @property
    def missing(self) -> int:
        """Questions scoring 0."""
        return self.answerable_declined

    @property
    def wrong(self) -> int:
        """Questions scoring -1."""
        return self.answerable_wrong + self.unanswerable_answered

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "scored": self.scored,
            "unknown": self.unknown,
            "unknown_ids": list(self.unknown_ids),
            "correct": self.correct,
            "missing": self.missing,
            "wrong": self.wrong,
            "answerable_correct": self.answerable_correct,
            "answerable_declined": self.answerable_declined,
            "answerable_wrong": self.answerable_wrong,
            "unanswerable_declined": self.unanswerable_declined,
            "unanswerable_answered": self.unanswerable_answered,
            "score": self.score,
            "accuracy": self.accuracy,
            "hallucination": self.hallucination,
            "missing_rate": self.missing_rate,
        }


def crag_score(rows: Iterable[Mapping[str, Any]]) -> CragScore:
    """The :class:`CragScore` of one config's answer rows (all questions, both kinds).

    Empty rows, or rows whose answerable answers all have unknown verdicts and no unanswerable
    question, give ``scored == 0`` and None rates. Raises ValueError on a non-mapping row, a
    missing or repeated id, a missing or malformed ``answerable``/``refusal``, or a missing or
    malformed ``correct`` on an answerable row.
    """
    counts = dict.fromkeys(
        ("answerable_correct", "answerable_declined", "answerable_wrong", "unanswerable_declined",
         "unanswerable_answered"), 0)
    unknown: list[str] = []
    checked = checked_rows(rows)
    for i, row in enumerate(checked):
        declined = row_flag(row, "refusal", i)
        if not row_flag(row, "answerable", i):
            counts["unanswerable_declined" if declined else "unanswerable_answered"] += 1
            continue
        verdict = row_verdict(row, i)
        if declined:
            counts["answerable_declined"] += 1
        elif verdict is None:
            unknown.append(row["id"])
        else:
            counts["answerable_correct" if verdict else "answerable_wrong"] += 1
    scored = sum(counts.values())
    plus = counts["answerable_correct"] + counts["unanswerable_declined"]
    minus = counts["answerable_wrong"] + counts["unanswerable_answered"]
    return CragScore(
        n=len(checked),
        scored=scored,
        unknown=len(unknown),
        unknown_ids=tuple(sorted(unknown)),
        **counts,
        score=share(plus - minus, scored),
        accuracy=share(plus, scored),
        hallucination=share(minus, scored),
        missing_rate=share(counts["answerable_declined"], scored),
    )


# -------------------------------------------------------------------- threshold sweep

CURVE_ACCURACIES = ("answerable", "correct")
"""What :meth:`Sweep.curve` can put on its accuracy axis (see there)."""


@dataclass(frozen=True)
class SweepPoint:
    """The decline rule "decline iff top score < ``threshold``" (strict: a question whose score
    equals the threshold is answered), over all ``n`` questions.

    - ``answered``: questions with score >= threshold; of them ``answerable_answered`` are
      answerable and ``unanswerable_answered`` are not;
    - ``coverage = answered / n``;
    - ``accuracy = answerable_answered / answered``: how often the decision to answer was
      right; None when nothing is answered;
    - ``answer_accuracy = answered_correct / answered_known``: among answered questions whose
      generated answer has a known verdict (``answered_known``), the share judged correct;
      None without verdicts or when none is known;
    - ``false_decline_rate = (n_answerable - answerable_answered) / n_answerable``: answerable
      questions declined;
    - ``false_answer_rate = unanswerable_answered / n_unanswerable``: unanswerable questions
      answered;
    - ``balanced_accuracy = ((1 - false_decline_rate) + (1 - false_answer_rate)) / 2``: the mean
      of the share of answerable questions answered and of unanswerable questions declined
      (0.5 for answering everything or nothing).
    """

    threshold: float
    answered: int
    answerable_answered: int
    unanswerable_answered: int
    coverage: float
    accuracy: float | None
    answered_known: int
    answered_correct: int
    answer_accuracy: float | None
    false_decline_rate: float
    false_answer_rate: float
    balanced_accuracy: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "answered": self.answered,
            "answerable_answered": self.answerable_answered,
            "unanswerable_answered": self.unanswerable_answered,
            "coverage": self.coverage,
            "accuracy": self.accuracy,
            "answered_known": self.answered_known,
            "answered_correct": self.answered_correct,
            "answer_accuracy": self.answer_accuracy,
            "false_decline_rate": self.false_decline_rate,
            "false_answer_rate": self.false_answer_rate,
            "balanced_accuracy": self.balanced_accuracy,
        }


@dataclass(frozen=True)
class Sweep:
    """Every decline threshold worth trying, the best one, and how the top score separates
    answerable from unanswerable questions.

    ``points``: one :class:`SweepPoint` per candidate threshold, ascending: every distinct
    score (the lowest answers everything), then ``sentinel``, the smallest float above the
    highest score (declines everything; finite, so the sweep stays JSON-ready). ``best``: the
    point of highest ``balanced_accuracy`` (compared exactly, on the integer counts), ties
    going to the lowest threshold. ``auc``: the probability that a random answerable question
    scores higher than a random unanswerable one, ties counting 1/2 (ROC AUC, the Mann-Whitney
    U over ``n_answerable * n_unanswerable``; 0.5 is no separation, 1 is a perfect threshold).
    ``*_mean`` and ``*_median``: the top scores of each kind of question. ``has_verdicts``:
    whether answer verdicts were given (``answer_accuracy`` is None everywhere otherwise).
    """

    n: int
    n_answerable: int
    n_unanswerable: int
    points: tuple[SweepPoint, ...]
    best: SweepPoint
    sentinel: float
    auc: float
    answerable_mean: float
    answerable_median: float
    unanswerable_mean: float
    unanswerable_median: float
    has_verdicts: bool

    def curve(self, accuracy: str = "answerable") -> list[dict[str, float]]:
        """The coverage-accuracy curve for a Vega-Lite line plot: one dict per point with keys
        ``threshold``, ``coverage`` and ``accuracy``, in ascending threshold order (so
        descending coverage). ``accuracy="answerable"`` plots :attr:`SweepPoint.accuracy`
        (answered questions that are answerable); ``"correct"`` plots
        :attr:`SweepPoint.answer_accuracy` (answered questions answered correctly; needs
        verdicts). Points where the accuracy is None (nothing answered, or no known verdict
        among the answered) are left out. Raises ValueError on another ``accuracy``, or
        ``"correct"`` without verdicts.
        """
        if accuracy not in CURVE_ACCURACIES:
            raise ValueError(f"accuracy is {accuracy!r}; expected one of {list(CURVE_ACCURACIES)}")
        if accuracy == "correct" and not self.has_verdicts:
            raise ValueError("accuracy='correct' needs answer verdicts; threshold_sweep was called without correct")
        field = "accuracy" if accuracy == "answerable" else "answer_accuracy"
        return [
            {"threshold": p.threshold, "coverage": p.coverage, "accuracy": getattr(p, field)}
            for p in self.points
            if getattr(p, field) is not None
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "n_answerable": self.n_answerable,
            "n_unanswerable": self.n_unanswerable,
            "auc": self.auc,
            "answerable_mean": self.answerable_mean,
            "answerable_median": self.answerable_median,
            "unanswerable_mean": self.unanswerable_mean,
            "unanswerable_median": self.unanswerable_median,
            "has_verdicts": self.has_verdicts,
            "sentinel": self.sentinel,
            "best": self.best.as_dict(),
            "points": [p.as_dict() for p in self.points],
        }


def _scores(values: npt.ArrayLike) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"scores must hold numbers; could not read them as floats ({error})") from None
    if array.ndim != 1:
        raise ValueError(f"scores must be a 1-D array, one top score per question; got shape {array.shape}")
    if array.size == 0:
        raise ValueError("scores is empty; expected one top retrieval score per question")
    finite = np.isfinite(array)
    if not finite.all():
        first = int(np.flatnonzero(~finite)[0])
        raise ValueError(
            f"scores has {int((~finite).sum())} non-finite value(s) (first {array[first]} at index {first}; "
            "None reads as nan); expected finite numbers (drop questions with an empty ranking)"
        )
    return array


def _is_flag(value: object) -> bool:
    return isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1))


def _flags(values: Iterable[Any], name: str, n: int) -> np.ndarray:
    items = list(np.asarray(values).tolist()) if isinstance(values, np.ndarray) else list(values)
    if len(items) != n:
        raise ValueError(f"{name} has {len(items)} values but scores has {n}; expected one value per question")
    for i, value in enumerate(items):
        if not _is_flag(value):
            raise ValueError(f"{name}[{i}] is {value!r}; expected a bool or 0/1")
    return np.array([bool(v) for v in items], dtype=bool)


def _verdicts(values: Sequence[Any], n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(known, correct)`` boolean arrays from True/False/0/1/None verdicts."""
    items = list(np.asarray(values, dtype=object).tolist()) if isinstance(values, np.ndarray) else list(values)
    if len(items) != n:
        raise ValueError(f"correct has {len(items)} values but scores has {n}; expected one value per question")
    for i, value in enumerate(items):
        if value is not None and not _is_flag(value):
            raise ValueError(f"correct[{i}] is {value!r}; expected a bool, 0/1 or None (unknown)")
    known = np.array([v is not None for v in items], dtype=bool)
    return known, np.array([bool(v) for v in items], dtype=bool)


def threshold_sweep(
    scores: npt.ArrayLike,
    answerable: Sequence[Any] | npt.ArrayLike,
    *,
    correct: Sequence[Any] | npt.ArrayLike | None = None,
) -> Sweep:
    """Sweep the rule "decline iff top retrieval score < t" over every candidate ``t`` (see
    :class:`Sweep` and :class:`SweepPoint` for every quantity).

    ``scores[i]``: question i's top retrieval score (finite); ``answerable[i]``: bool or 0/1;
    ``correct[i]`` (optional): the verdict of the answer generated for question i (bool or 0/1,
    None when unknown or not generated), as the grades give it -- for an unanswerable question
    a decline is correct. Needs at least one answerable and one unanswerable question (the
    decision, its balanced accuracy and the AUC mean nothing otherwise).

    Raises ValueError on empty, non-1-D or non-finite ``scores``; ``answerable`` or ``correct``
    of another length or holding other values; or a single kind of question.
    """
    s = _scores(scores)
    n = int(s.size)
    is_answerable = _flags(cast(Sequence[Any], answerable), "answerable", n)  # a sequence or an array
    known, right = _verdicts(cast(Sequence[Any], correct), n) if correct is not None else (np.zeros(n, bool), np.zeros(n, bool))
    n_answerable = int(is_answerable.sum())
    n_unanswerable = n - n_answerable
    if n_answerable == 0 or n_unanswerable == 0:
        raise ValueError(
            f"found {n_answerable} answerable and {n_unanswerable} unanswerable question(s); a decline "
            "threshold needs at least one of each"
        )

    top = float(s.max())
    sentinel = float(np.nextafter(top, math.inf))
    thresholds = [*(float(t) for t in np.unique(s)), sentinel]
    points: list[SweepPoint] = []
    best: SweepPoint | None = None
    best_key = -1
    for t in thresholds:
        answered = s >= t
        k = int(answered.sum())
        k_answerable = int((answered & is_answerable).sum())
        k_unanswerable = k - k_answerable
        k_known = int((answered & known).sum())
        k_correct = int((answered & known & right).sum())
        declined_unanswerable = n_unanswerable - k_unanswerable
        point = SweepPoint(
            threshold=t,
            answered=k,
            answerable_answered=k_answerable,
            unanswerable_answered=k_unanswerable,
            coverage=k / n,
            accuracy=share(k_answerable, k),
            answered_known=k_known,
            answered_correct=k_correct,
            answer_accuracy=share(k_correct, k_known),
            false_decline_rate=(n_answerable - k_answerable) / n_answerable,
            false_answer_rate=k_unanswerable / n_unanswerable,
            balanced_accuracy=(k_answerable / n_answerable + declined_unanswerable / n_unanswerable) / 2,
        )
        points.append(point)
        # balanced accuracy times 2 * n_answerable * n_unanswerable: exact, for ties
        key = k_answerable * n_unanswerable + declined_unanswerable * n_answerable
        if key > best_key:
            best, best_key = point, key
    assert best is not None

    ranks = rankdata(s)  # average ranks for ties
    u = float(ranks[is_answerable].sum()) - n_answerable * (n_answerable + 1) / 2
    return Sweep(
        n=n,
        n_answerable=n_answerable,
        n_unanswerable=n_unanswerable,
        points=tuple(points),
        best=best,
        sentinel=sentinel,
        auc=u / (n_answerable * n_unanswerable),
        answerable_mean=float(s[is_answerable].mean()),
        answerable_median=float(np.median(s[is_answerable])),
        unanswerable_mean=float(s[~is_answerable].mean()),
        unanswerable_median=float(np.median(s[~is_answerable])),
        has_verdicts=correct is not None,
    )
