"""Judge calibration: how far a correctness judge agrees with the hand grades, and what it buys.

A *judge* (an LLM judge, or a judge-free rule such as token F1 >= threshold or "contains the
reference") gives every answer a verdict: ``True`` (correct), ``False`` (incorrect) or ``None``
(invalid: e.g. an LLM reply that could not be parsed). The hand grades
(:mod:`rag_ablation.evaluation.judges.grades`) are the ground truth: ``True``/``False``, never
invalid. Calibration compares a judge to the hand grades on the answers that have both, passed
as parallel sequences (same answer at the same position).

What is here:

* :func:`confusion` and :func:`agreement`: the 2x2 table of judge against human, and accuracy,
  TPR, TNR and Cohen's kappa with bootstrap intervals; :func:`disagreements` names the answers.
* Accuracy of one config three ways: :func:`hand_only` (hand grades alone),
  :func:`judge_only` (the judge alone on every answer; naive, inherits the judge's bias) and
  :func:`ppi_accuracy` (prediction-powered inference, PPI++: the judge on every answer,
  debiased by the hand-graded ones, via the ``ppi_py`` package).
* :func:`canary_rates`: how often the judge accepts canary answers built to be accepted
  (a padded or paraphrased reference) or rejected (a dummy "yes", the question repeated, ...).

Conventions (those of :mod:`rag_ablation.evaluation.statistics.inference`, whose :class:`Interval`,
:func:`wilson_interval` and resampling scheme are reused):

* Counts are ``int``, estimates plain ``float``. A rate whose denominator is 0 is ``None``,
  never 0 (and never NaN); a ``reason`` says why where a result can be undefined.
* Invalid judge verdicts are never silently dropped: they are excluded from agreement
  statistics and from judge-only accuracy but *counted* (``invalid``); PPI needs a number for
  every answer and counts an invalid verdict as *incorrect* (see :func:`ppi_accuracy`).
* Randomness comes only from ``numpy.random.default_rng(seed)``, drawn exactly as
  :func:`rag_ablation.evaluation.statistics.inference.bootstrap_mean_ci` draws (blocks of index rows), so the
  same inputs and seed give identical outputs.
* Every result dataclass has ``as_dict()`` giving JSON-ready values: ``int``, ``float``,
  ``bool``, ``str``, ``None``, dicts and sorted lists.
* Bad input raises ``ValueError`` naming what was found and what was expected: an empty
  sequence, sequences of unequal length, a verdict that is not ``True``/``False`` (or ``None``
  for a judge), a confidence outside (0, 1), ``n_resamples`` < 1.

Every interval treats answers as independent draws (no clustering by source document).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from scipy.stats import norm

from rag_ablation.evaluation.statistics.inference import (
    Interval,
    check_count,
    check_open_unit,
    interval_dict,
    resample_blocks,
    wilson_interval,
)

__all__ = [
    "CANARY_EXPECT_ACCEPT",
    "Accuracy",
    "Agreement",
    "CanaryRate",
    "Confusion",
    "Disagreements",
    "PPIAccuracy",
    "ResampledStatistic",
    "STATISTICS",
    "agreement",
    "canary_rates",
    "confusion",
    "disagreements",
    "hand_only",
    "judge_only",
    "ppi_accuracy",
]

Verdict = bool | None

CANARY_EXPECT_ACCEPT: dict[str, bool] = {
    "dummy_yes": False,
    "dummy_sure": False,
    "question_repeated": False,
    "empty": False,
    "padded_reference": True,
    "paraphrased_reference": True,
}
"""Canary kinds and whether a sound judge should accept them (say "correct"): dummy answers
("yes", "sure"), the question repeated back and an empty answer should be rejected; the
reference padded with filler and the reference paraphrased should be accepted."""

_INVALID = -1  # code of an invalid (None) judge verdict in the int8 arrays below


# ------------------------------------------------------------------------ validation


def _codes(values: Sequence[Verdict], name: str, *, allow_invalid: bool) -> np.ndarray:
    """Verdicts as an int8 array: 1 correct, 0 incorrect, -1 invalid; else ValueError.

    Only ``True``/``False`` (Python or numpy bools) and, when ``allow_invalid``, ``None`` are
    verdicts: 0/1, strings such as "correct" and NaN are refused.
    """
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__len__"):
        raise ValueError(
            f"{name} must be a sequence of verdicts; got {type(values).__name__}"
        )
    out = np.empty(len(values), dtype=np.int8)
    if out.size == 0:
        raise ValueError(f"{name} is empty; expected at least one verdict")
    expected = "True, False or None (invalid)" if allow_invalid else "True or False (a hand grade is never invalid)"
    for i, value in enumerate(values):
        if value is None and allow_invalid:
            out[i] = _INVALID
        elif isinstance(value, (bool, np.bool_)):
            out[i] = 1 if value else 0
        else:
            raise ValueError(f"{name}[{i}] is {value!r} ({type(value).__name__}); expected {expected}")
    return out


def _same_length(first: np.ndarray, second: np.ndarray, names: tuple[str, str]) -> None:
    if first.size != second.size:
        raise ValueError(
            f"{names[0]} has {first.size} verdicts but {names[1]} has {second.size}; "
            "expected one verdict per answer in both, in the same order"
        )


def _pair(judge: Sequence[Verdict], human: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    j = _codes(judge, "judge", allow_invalid=True)
    h = _codes(human, "human", allow_invalid=False)
    _same_length(j, h, ("judge", "human"))
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
    valid = j != _INVALID
    return (2 * (1 - j[valid]) + (1 - h[valid])).astype(np.intp)


def confusion(judge: Sequence[Verdict], human: Sequence[bool]) -> Confusion:
    """The :class:`Confusion` table of parallel judge verdicts (True/False/None) and hand grades.

    Raises ValueError on empty input, unequal lengths or a verdict that is not a bool (or
    None for the judge).
    """
    return _confusion(*_pair(judge, human))


def _confusion(j: np.ndarray, h: np.ndarray) -> Confusion:
    counts = np.bincount(_cells(j, h), minlength=4)
    invalid = j == _INVALID
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

    Indices are drawn as :func:`stats.bootstrap_mean_ci` draws them (``rng.integers(0, n,
    size=(rows, n))`` in blocks), so the accuracy resamples equal that function's resampled
    means of the 0/1 agreement values under the same seed.
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
        invalid=pick(j == _INVALID),
    )


# --------------------------------------------------------------- accuracy three ways


@dataclass(frozen=True)
class Accuracy:
    """A share of correct answers with its Wilson interval.

    ``source`` is ``"hand"`` (:func:`hand_only`) or ``"judge"`` (:func:`judge_only`).
    ``estimate`` = correct / ``n`` over the ``n`` verdicts used; ``invalid`` counts judge
    verdicts left out (always 0 for hand grades). ``estimate`` and ``interval`` are None when
    ``n == 0`` (every judge verdict invalid).
    """

    source: str
    estimate: float | None
    interval: Interval | None
    n: int
    invalid: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "estimate": self.estimate,
            **interval_dict(self.interval, ("low", "high")),
            "n": self.n,
            "invalid": self.invalid,
            "method": None if self.interval is None else self.interval.method,
        }


def _wilson_accuracy(source: str, codes: np.ndarray, confidence: float) -> Accuracy:
    valid = codes[codes != _INVALID]
    n = int(valid.size)
    invalid = int(codes.size - n)
    if n == 0:
        return Accuracy(source, None, None, 0, invalid)
    interval = wilson_interval(int(np.count_nonzero(valid)), n, confidence=confidence)
    return Accuracy(source, interval.estimate, interval, n, invalid)


def hand_only(human: Sequence[bool], *, confidence: float = 0.95) -> Accuracy:
    """Accuracy from hand grades alone: the share graded correct, with a Wilson interval.

    Raises ValueError on empty input, a grade that is not a bool, or ``confidence`` outside
    (0, 1).
    """
    return _wilson_accuracy("hand", _codes(human, "human", allow_invalid=False), confidence)


def judge_only(judge_all: Sequence[Verdict], *, confidence: float = 0.95) -> Accuracy:
    """Naive accuracy from the judge alone: the share of *valid* verdicts that say correct,
    over every answer of the config, with a Wilson interval.

    Invalid verdicts are left out of both numerator and denominator and counted in
    ``invalid``. Naive: it inherits the judge's bias (false accepts minus false rejects), and
    the interval reflects only sampling noise, not that bias; :func:`ppi_accuracy` corrects it
    with the hand grades. Raises ValueError as :func:`hand_only` does.
    """
    return _wilson_accuracy("judge", _codes(judge_all, "judge_all", allow_invalid=True), confidence)


@dataclass(frozen=True)
class PPIAccuracy:
    """Prediction-powered (PPI++) accuracy of one config (see :func:`ppi_accuracy`).

    ``interval``: the PPI++ interval (method ``"ppi++"``; its ``n`` is all answers,
    ``n_labeled + n_unlabeled``). ``classical``: the CLT interval of the hand grades alone
    (method ``"clt"``, ``n = n_labeled``), the baseline of ``n_eff``. ``lam``: the power-tuning
    parameter used, in [0, 1]. ``n_eff``/``gain``: None when the PPI interval has zero width
    (``note`` says why). Bounds are those of a normal approximation and may fall outside
    [0, 1]; they are not clipped.
    """

    estimate: float
    interval: Interval
    classical: Interval
    lam: float
    n_labeled: int
    n_unlabeled: int
    invalid_labeled: int
    invalid_unlabeled: int
    n_eff: float | None
    gain: float | None
    note: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            **interval_dict(self.interval, ("low", "high")),
            "classical": interval_dict(self.classical),
            "lam": self.lam,
            "n_labeled": self.n_labeled,
            "n_unlabeled": self.n_unlabeled,
            "invalid_labeled": self.invalid_labeled,
            "invalid_unlabeled": self.invalid_unlabeled,
            "n_eff": self.n_eff,
            "gain": self.gain,
            "note": self.note,
        }


def _ppi_py() -> ModuleType:
    """``ppi_py``, imported lazily (it pulls in numba, statsmodels and scikit-learn).

    Importing ``ppi_py`` runs ``warnings.simplefilter("ignore")``, which would silence every
    warning in the process; the import is fenced so the caller's warning filters survive.
    """
    with warnings.catch_warnings():
        import ppi_py
    return ppi_py


def _tuned_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> float | None:
    """PPI++'s power-tuning parameter for a mean, as ``ppi_py.ppi_mean_ci(lam=None)`` computes it.

    ``lam = clip(cov(Y, Yhat) / ((1 + n/N) var(Yhat ++ Yhat_unlabeled)), 0, 1)`` with the
    covariance over the labeled pairs (divisor n) and the variance of the judge over all
    answers pooled (divisor n + N - 1): the estimated minimiser of the variance of
    ``lam mean(Yhat_unlabeled) + mean(Y - lam Yhat)``. None when the pooled judge values are
    constant (0/0).
    """
    n, big_n = y.size, yhat_unlabeled.size
    pooled = np.concatenate([yhat, yhat_unlabeled])
    if np.ptp(pooled) == 0:
        return None
    covariance = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    variance = float(np.var(pooled, ddof=1))
    return float(np.clip(covariance / ((1 + n / big_n) * variance), 0.0, 1.0))


def _scalar(value: Any) -> float:
    return float(np.asarray(value, dtype=float).reshape(-1)[0])


def ppi_accuracy(
    human_labeled: Sequence[bool],
    judge_labeled: Sequence[Verdict],
    judge_unlabeled: Sequence[Verdict],
    *,
    confidence: float = 0.95,
) -> PPIAccuracy:
    """Accuracy of one config by prediction-powered inference with power tuning (PPI++).

    Inputs: the hand grades ``human_labeled`` and the judge's verdicts ``judge_labeled`` on the
    same answers (parallel), and the judge's verdicts ``judge_unlabeled`` on the config's other
    answers (those without a hand grade; disjoint from the labeled ones). The hand-graded
    answers must be a uniformly random sample of the config's answers, else the estimate is
    biased whatever the judge.

    Invalid judge verdicts count as *incorrect* (0), on both the labeled and the unlabeled
    answers: an unparseable reply certifies nothing. Any fixed rule keeps PPI unbiased (the
    hand grades measure and remove the judge's bias, including the rule's); the rule only
    affects the width. Their numbers are reported (``invalid_labeled``, ``invalid_unlabeled``).
    (:func:`judge_only` instead leaves invalid verdicts out.)

    With ``Y`` the hand grades (0/1), ``Yhat`` the judge on them, ``Yhat_u`` on the N others:

    * ``lam``: tuned from the data, in [0, 1] (:func:`_tuned_lambda`; PPI++); ``lam = 0`` is the
      hand grades alone, ``lam = 1`` plain PPI;
    * ``estimate = lam mean(Yhat_u) + mean(Y - lam Yhat)`` (``ppi_py.ppi_mean_pointestimate``);
    * interval ``estimate -+ z sqrt(var(lam Yhat_u)/N + var(Y - lam Yhat)/n)``, variances with
      divisor n and N, ``z = Phi^-1(1 - (1 - confidence)/2)`` (``ppi_py.ppi_mean_ci``);
    * ``classical``: the CLT interval of the hand grades alone,
      ``mean(Y) -+ z sd(Y)/sqrt(n)``, sd with divisor n (``ppi_py.classical_mean_ci``; the
      same formula as PPI with ``lam = 0``, so the two widths are comparable; the Wilson
      interval of :func:`hand_only` is the one to report for hand grades alone);
    * ``n_eff = n * (width(classical) / width(interval))^2``: the number of hand grades the
      classical interval would need to be as narrow; ``gain = n_eff / n``. A good judge gives a
      gain well above 1 (a perfect one up to about ``(n + N)/n``); an uninformative one about 1.
      The tuning makes PPI++ never much worse than the hand grades alone (``lam -> 0``), but
      ``lam`` minimises an estimate of the variance that differs slightly from the one in the
      interval (pooled judge variance), so ``gain`` can fall a hair below 1.

    Degenerate cases, handled without NaN: if the judge gives the same value to every answer
    (labeled and unlabeled), it carries no information, PPI++'s ``lam`` is 0/0 and is set to
    0: the result is the classical interval, gain 1 (``ppi_py`` itself returns NaN there, or a
    lambda that is a ratio of rounding errors). If all hand grades are identical (zero
    variance), the covariance is 0 and ``lam`` is set to 0 exactly; the estimate is that
    shared value and both CLT intervals have zero width, so ``n_eff`` and ``gain`` are None
    (``note`` says so). Zero-width intervals are the CLT's verdict, not a certainty: report
    :func:`hand_only`'s Wilson interval then. ``n_eff``/``gain`` are likewise None whenever
    the PPI interval has zero width (e.g. a judge that matches every hand grade while constant
    on the unlabeled answers).

    Raises ValueError on unequal labeled lengths, fewer than 2 labeled or 2 unlabeled answers,
    a verdict that is not a bool (or None for the judge), or ``confidence`` outside (0, 1).
    """
    y_codes = _codes(human_labeled, "human_labeled", allow_invalid=False)
    jl = _codes(judge_labeled, "judge_labeled", allow_invalid=True)
    ju = _codes(judge_unlabeled, "judge_unlabeled", allow_invalid=True)
    _same_length(y_codes, jl, ("human_labeled", "judge_labeled"))
    if y_codes.size < 2:
        raise ValueError(
            f"human_labeled has {y_codes.size} hand grade; PPI needs at least 2 labeled answers "
            "to estimate the judge's bias and its variance"
        )
    if ju.size < 2:
        raise ValueError(
            f"judge_unlabeled has {ju.size} verdict; PPI needs at least 2 unlabeled answers "
            "(with every answer hand-graded, use hand_only)"
        )
    confidence = check_open_unit(confidence, "confidence")
    alpha = 1 - confidence
    y = y_codes.astype(float)
    yhat = (jl == 1).astype(float)  # invalid (-1) and incorrect (0) both count as 0
    yhat_u = (ju == 1).astype(float)
    n, big_n = int(y.size), int(yhat_u.size)

    z = float(norm.ppf(1 - alpha / 2))  # as statsmodels' _zconfint_generic, which ppi_py calls
    mean = float(y.mean())
    half = z * float(y.std()) / math.sqrt(n)
    classical = Interval(mean, mean - half, mean + half, n, "clt")

    note = None
    if np.ptp(y) == 0:
        lam_arg: float | None = 0.0
        lam = 0.0
        note = "all hand grades are identical: lam is 0 and the CLT intervals have zero width"
    else:
        tuned = _tuned_lambda(y, yhat, yhat_u)
        lam = 0.0 if tuned is None else tuned
        if tuned is None:
            lam_arg = 0.0
            note = "the judge gives every answer the same verdict: lam is 0 (hand grades alone)"
        else:
            lam_arg = None  # let ppi_py tune it (PPI++); `lam` reproduces its choice

    ppi = _ppi_py()
    low, high = ppi.ppi_mean_ci(y, yhat, yhat_u, alpha=alpha, lam=lam_arg)
    estimate = _scalar(ppi.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam_arg))
    interval = Interval(estimate, _scalar(low), _scalar(high), n + big_n, "ppi++")

    width = interval.high - interval.low
    if width > 0:
        effective = n * ((classical.high - classical.low) / width) ** 2
        n_eff: float | None = effective
        gain: float | None = effective / n
    else:
        n_eff = gain = None
        if note is None:
            note = "the PPI interval has zero width: n_eff is undefined"
        else:
            note += "; n_eff is undefined"
    return PPIAccuracy(
        estimate=estimate,
        interval=interval,
        classical=classical,
        lam=lam,
        n_labeled=n,
        n_unlabeled=big_n,
        invalid_labeled=int(np.count_nonzero(jl == _INVALID)),
        invalid_unlabeled=int(np.count_nonzero(ju == _INVALID)),
        n_eff=n_eff,
        gain=gain,
        note=note,
    )


# --------------------------------------------------------------------------- canaries


@dataclass(frozen=True)
class CanaryRate:
    """How the judge treated the canary answers of one kind.

    ``accepted``: share of valid verdicts that say correct (``accepted_count / n``), with
    its Wilson ``interval``; None (and ``interval`` None) when ``n == 0``. ``invalid``:
    verdicts None, left out. ``expected_accept``: whether a sound judge accepts this kind.
    ``wrong``: share of valid verdicts against the expectation (``accepted`` for a kind to
    reject, ``1 - accepted`` for a kind to accept); its interval is ``interval`` mirrored,
    ``[1 - high, 1 - low]``, when ``expected_accept``.
    """

    kind: str
    expected_accept: bool
    accepted: float | None
    interval: Interval | None
    accepted_count: int
    n: int
    invalid: int

    @property
    def wrong(self) -> float | None:
        if self.accepted is None:
            return None
        return 1.0 - self.accepted if self.expected_accept else self.accepted

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "expected_accept": self.expected_accept,
            "accepted": self.accepted,
            **interval_dict(self.interval, ("low", "high")),
            "accepted_count": self.accepted_count,
            "n": self.n,
            "invalid": self.invalid,
            "wrong": self.wrong,
        }


def canary_rates(
    verdicts: Mapping[str, Sequence[Verdict]],
    *,
    confidence: float = 0.95,
    expect_accept: Mapping[str, bool] | None = None,
) -> dict[str, CanaryRate]:
    """Per canary kind, the share of answers the judge accepted, and whether it should have.

    ``verdicts`` maps a kind to the judge's verdicts (True/False/None) on that kind's canary
    answers. Expectations come from :data:`CANARY_EXPECT_ACCEPT`, updated by
    ``expect_accept`` (a kind -> should-be-accepted mapping, for other kinds). The result
    holds a :class:`CanaryRate` per kind, in the order of ``verdicts``; a report reads e.g.
    "accepts dummies X%" from ``accepted`` of a kind with ``expected_accept`` False and
    "rejects paraphrases Y%" from ``wrong`` of a kind with ``expected_accept`` True.

    Raises ValueError on an empty mapping, a kind with no expectation, a kind with no
    verdicts, a verdict that is not a bool or None, or ``confidence`` outside (0, 1).
    """
    if not isinstance(verdicts, Mapping):
        raise ValueError(f"verdicts must map a canary kind to its verdicts; got {type(verdicts).__name__}")
    if not verdicts:
        raise ValueError("verdicts is empty; expected at least one canary kind")
    expected = dict(CANARY_EXPECT_ACCEPT)
    for kind, flag in (expect_accept or {}).items():
        if not isinstance(flag, (bool, np.bool_)):
            raise ValueError(f"expect_accept[{kind!r}] is {flag!r}; expected True or False")
        expected[kind] = bool(flag)
    confidence = check_open_unit(confidence, "confidence")
    out: dict[str, CanaryRate] = {}
    for kind, values in verdicts.items():
        if kind not in expected:
            raise ValueError(
                f"canary kind {kind!r} has no expectation; known kinds are {sorted(expected)} "
                "(pass expect_accept for others)"
            )
        codes = _codes(values, f"verdicts[{kind!r}]", allow_invalid=True)
        accuracy = _wilson_accuracy("judge", codes, confidence)
        out[kind] = CanaryRate(
            kind=kind,
            expected_accept=expected[kind],
            accepted=accuracy.estimate,
            interval=accuracy.interval,
            accepted_count=int(np.count_nonzero(codes == 1)),
            n=accuracy.n,
            invalid=accuracy.invalid,
        )
    return out
