"""Accuracy of one config three ways: hand grades alone, the judge alone, and PPI++.

* :func:`hand_only`: the share of hand grades that say correct, with a Wilson interval;
* :func:`judge_only`: the judge alone on every answer (naive: it inherits the judge's bias),
  with a Wilson interval;
* :func:`ppi_accuracy`: prediction-powered inference with power tuning (PPI++, via the
  ``ppi_py`` package): the judge on every answer, debiased by the hand-graded ones, with the
  effective number of hand grades it is worth;
* :func:`ppi_usefulness`: whether the judge's correlation with the hand grades clears the level
  below which PPI++ is not expected to beat the hand grades alone at this number of grades
  (:data:`USEFULNESS_RULE`).

Verdicts are read by :func:`rag_ablation.evaluation.judges.verdicts.verdict_codes`; the
conventions (None for undefined, invalid verdicts counted, JSON-ready ``as_dict``) are those
listed in :mod:`rag_ablation.evaluation.judges.verdicts`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from scipy.stats import norm

from rag_ablation.evaluation.judges.verdicts import INVALID, Verdict, check_same_length, verdict_codes
from rag_ablation.evaluation.statistics.inference import Interval, check_open_unit, interval_dict, wilson_interval

__all__ = [
    "Accuracy",
    "PPIAccuracy",
    "hand_only",
    "judge_only",
    "crossppi_accuracy",
    "ppi_accuracy",
    "ppi_accuracy_scores",
    "ppi_usefulness",
    "PPIUsefulness",
    "USEFULNESS_RULE",
    "wilson_accuracy",
]

USEFULNESS_RULE = ("Mani, Xu, Lipton and Oberst, \"No free lunch: non-asymptotic analysis of prediction-powered "
                   "inference\" (arXiv:2505.20178; PMLR v306, 2026): PPI++ beats the hand grades alone only when "
                   "the judge's correlation with them exceeds a level that depends on the number n of hand grades, "
                   "1/sqrt(n - 2) for Gaussian data and about the same for binary grades")
"""The rule :func:`ppi_usefulness` applies, as the report cites it."""


@dataclass(frozen=True)
class PPIUsefulness:
    """``correlation``: Pearson's r between the judge's prediction and the hand grades (None when
    either is constant); ``n``: the hand grades PPI++ uses; ``level``: ``1 / sqrt(n - 2)`` (None
    for ``n <= 2``); ``clears``: ``|r| > level`` (None when either is None)."""

    correlation: float | None
    n: int
    level: float | None
    clears: bool | None

    def words(self) -> str:
        """One sentence for the report next to the PPI++ row."""
        if self.level is None:
            return f"unknown: {self.n} hand grades are too few for the rule"
        if self.correlation is None:
            return "no: the judge's prediction (or the grades) never varies on the graded answers"
        r, lv = abs(self.correlation), self.level
        if self.clears:
            return f"yes: |r| {r:.2f} > 1/sqrt(n-2) = {lv:.2f} at n = {self.n}"
        return (f"no: |r| {r:.2f} <= 1/sqrt(n-2) = {lv:.2f} at n = {self.n}; PPI++ is not expected to beat the "
                "hand grades alone")

    def as_dict(self) -> dict[str, Any]:
        return {"correlation": self.correlation, "n": self.n, "level": self.level, "clears": self.clears,
                "words": self.words()}


def ppi_usefulness(human: Sequence[bool], prediction: Sequence[float], n: int) -> PPIUsefulness:
    """Whether the judge can help PPI++ with ``n`` hand grades (:data:`USEFULNESS_RULE`): Pearson's
    r of ``prediction`` (a verdict as PPI codes it, 1.0 correct and 0.0 otherwise, or a score)
    against ``human`` over the graded answers given (all of a config's graded answers: the best
    estimate of the correlation), against ``1 / sqrt(n - 2)``. Raises ValueError on lists of
    different lengths or a negative ``n``."""
    y = np.asarray(human, dtype=float)
    f = np.asarray(prediction, dtype=float)
    if y.shape != f.shape or y.ndim != 1:
        raise ValueError(f"human and prediction must be two lists of equal length, got {y.shape} and {f.shape}")
    if n < 0:
        raise ValueError(f"n must be a count of hand grades, got {n}")
    level = 1 / math.sqrt(n - 2) if n > 2 else None
    r = None if y.size < 2 or y.std() == 0 or f.std() == 0 else float(np.corrcoef(y, f)[0, 1])
    clears = None if level is None or r is None else abs(r) > level
    if level is not None and r is None:
        clears = False
    return PPIUsefulness(r, n, level, clears)


# ------------------------------------------------------------------ Wilson accuracy


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


def wilson_accuracy(source: str, codes: np.ndarray, confidence: float) -> Accuracy:
    """The share of correct (1) codes among the valid ones, with its Wilson interval.

    ``codes`` come from :func:`~rag_ablation.evaluation.judges.verdicts.verdict_codes`; invalid
    ones (:data:`~rag_ablation.evaluation.judges.verdicts.INVALID`) are left out and counted.
    With no valid code the estimate and interval are None. ``confidence`` is passed to
    :func:`~rag_ablation.evaluation.statistics.inference.wilson_interval`, which checks it.
    """
    valid = codes[codes != INVALID]
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
    return wilson_accuracy("hand", verdict_codes(human, "human", allow_invalid=False), confidence)


def judge_only(judge_all: Sequence[Verdict], *, confidence: float = 0.95) -> Accuracy:
    """Naive accuracy from the judge alone: the share of *valid* verdicts that say correct,
    over every answer of the config, with a Wilson interval.

    Invalid verdicts are left out of both numerator and denominator and counted in
    ``invalid``. Naive: it inherits the judge's bias (false accepts minus false rejects), and
    the interval reflects only sampling noise, not that bias; :func:`ppi_accuracy` corrects it
    with the hand grades. Raises ValueError as :func:`hand_only` does.
    """
    return wilson_accuracy("judge", verdict_codes(judge_all, "judge_all", allow_invalid=True), confidence)


# -------------------------------------------------------------------------- PPI++


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
    """The first element of a number or array (``ppi_py`` returns 1-element arrays) as a float."""
    return float(np.asarray(value, dtype=float).reshape(-1)[0])


def _ppi_codes(
    human_labeled: Sequence[bool], judge_labeled: Sequence[Verdict], judge_unlabeled: Sequence[Verdict]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three inputs of :func:`ppi_accuracy` as code arrays (hand grades, judge labeled, unlabeled).

    Raises ValueError on a verdict that is not a bool (or None for the judge), unequal labeled
    lengths, fewer than 2 labeled or fewer than 2 unlabeled answers (checked in that order).
    """
    y_codes = verdict_codes(human_labeled, "human_labeled", allow_invalid=False)
    jl = verdict_codes(judge_labeled, "judge_labeled", allow_invalid=True)
    ju = verdict_codes(judge_unlabeled, "judge_unlabeled", allow_invalid=True)
    check_same_length(y_codes, jl, ("human_labeled", "judge_labeled"))
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
    return y_codes, jl, ju


def _judge_values(codes: np.ndarray) -> np.ndarray:
    """Judge codes as PPI's 0/1 floats: 1.0 for correct, 0.0 for incorrect *and* invalid."""
    return (codes == 1).astype(float)


def _classical_interval(y: np.ndarray, alpha: float) -> Interval:
    """The CLT interval of the hand grades alone: ``mean(Y) -+ z sd(Y)/sqrt(n)``, method ``"clt"``.

    ``sd`` with divisor n, ``z = Phi^-1(1 - alpha/2)`` (as statsmodels' ``_zconfint_generic``,
    which ``ppi_py.classical_mean_ci`` calls); the interval's ``n`` is ``n``.
    """
    z = float(norm.ppf(1 - alpha / 2))
    n = int(y.size)
    mean = float(y.mean())
    half = z * float(y.std()) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, "clt")


def _chosen_lambda(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray) -> tuple[float, float | None, str | None]:
    """``(lam, lam_arg, note)``: the lambda reported, the one passed to ``ppi_py``, and why it is fixed.

    * every hand grade identical: ``lam = lam_arg = 0.0`` (the covariance is 0), with a note;
    * the judge constant over every answer (:func:`_tuned_lambda` is None, 0/0):
      ``lam = lam_arg = 0.0`` (the hand grades alone), with a note;
    * otherwise ``lam`` is :func:`_tuned_lambda`'s value and ``lam_arg`` None, so that
      ``ppi_py`` tunes it itself (PPI++) to the same value; no note.
    """
    if np.ptp(y) == 0:
        return 0.0, 0.0, "all hand grades are identical: lam is 0 and the CLT intervals have zero width"
    tuned = _tuned_lambda(y, yhat, yhat_u)
    if tuned is None:
        return 0.0, 0.0, "the judge gives every answer the same verdict: lam is 0 (hand grades alone)"
    return tuned, None, None


def _ppi_interval(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray, alpha: float, lam: float | None) -> Interval:
    """The PPI++ estimate and interval from ``ppi_py`` (method ``"ppi++"``, ``n`` = all answers).

    ``estimate = lam mean(Yhat_u) + mean(Y - lam Yhat)`` (``ppi_py.ppi_mean_pointestimate``),
    bounds ``estimate -+ z sqrt(var(lam Yhat_u)/N + var(Y - lam Yhat)/n)``
    (``ppi_py.ppi_mean_ci`` at level ``1 - alpha``); ``lam`` None lets ``ppi_py`` tune it.
    """
    ppi = _ppi_py()
    low, high = ppi.ppi_mean_ci(y, yhat, yhat_u, alpha=alpha, lam=lam)
    estimate = _scalar(ppi.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam))
    return Interval(estimate, _scalar(low), _scalar(high), int(y.size) + int(yhat_u.size), "ppi++")


def _effective_size(n: int, classical: Interval, interval: Interval) -> tuple[float, float] | None:
    """``(n_eff, gain)``: ``n_eff = n * (width(classical) / width(interval))^2``, ``gain = n_eff / n``.

    None when ``interval`` has zero width (the ratio is undefined).
    """
    width = interval.high - interval.low
    if width > 0:
        effective = n * ((classical.high - classical.low) / width) ** 2
        return effective, effective / n
    return None


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
    y_codes, jl, ju = _ppi_codes(human_labeled, judge_labeled, judge_unlabeled)
    confidence = check_open_unit(confidence, "confidence")
    alpha = 1 - confidence
    y = y_codes.astype(float)
    yhat, yhat_u = _judge_values(jl), _judge_values(ju)
    n, big_n = int(y.size), int(yhat_u.size)

    classical = _classical_interval(y, alpha)
    lam, lam_arg, note = _chosen_lambda(y, yhat, yhat_u)
    interval = _ppi_interval(y, yhat, yhat_u, alpha, lam_arg)
    effective = _effective_size(n, classical, interval)
    if effective is None:
        n_eff: float | None = None
        gain: float | None = None
        note = "the PPI interval has zero width: n_eff is undefined" if note is None else note + "; n_eff is undefined"
    else:
        n_eff, gain = effective
    return PPIAccuracy(
        estimate=interval.estimate,
        interval=interval,
        classical=classical,
        lam=lam,
        n_labeled=n,
        n_unlabeled=big_n,
        invalid_labeled=int(np.count_nonzero(jl == INVALID)),
        invalid_unlabeled=int(np.count_nonzero(ju == INVALID)),
        n_eff=n_eff,
        gain=gain,
        note=note,
    )


# ------------------------------------------------------------------ PPI++ on scores


def _score_values(values: Sequence[float], name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or not np.all(np.isfinite(x)) or np.any((x < 0) | (x > 1)):
        raise ValueError(f"{name}: expected scores in [0, 1] (one per answer, none missing)")
    return x


def ppi_accuracy_scores(human_labeled: Sequence[bool], score_labeled: Sequence[float],
                        score_unlabeled: Sequence[float], *, confidence: float = 0.95) -> PPIAccuracy:
    """PPI++ accuracy with a judge's *score* in [0, 1] as its prediction instead of its 0/1
    verdict: the formulas of :func:`ppi_accuracy` with ``Yhat`` = the scores (PPI's prediction
    may be any number; a score keeps the information a threshold throws away). The score must
    not have been fit on these hand grades (a raw judge score is not); a combined judge fit on
    grades goes through :func:`crossppi_accuracy`. Raises ValueError on a missing or
    out-of-range score, unequal labeled lengths, or fewer than 2 labeled or unlabeled answers."""
    y = verdict_codes(human_labeled, "human_labeled", allow_invalid=False).astype(float)
    yhat = _score_values(score_labeled, "score_labeled")
    yhat_u = _score_values(score_unlabeled, "score_unlabeled")
    check_same_length(y, yhat, ("human_labeled", "score_labeled"))
    if y.size < 2 or yhat_u.size < 2:
        raise ValueError(f"PPI needs at least 2 labeled and 2 unlabeled answers, got {y.size} and {yhat_u.size}")
    confidence = check_open_unit(confidence, "confidence")
    alpha = 1 - confidence
    classical = _classical_interval(y, alpha)
    lam, lam_arg, note = _chosen_lambda(y, yhat, yhat_u)
    interval = _ppi_interval(y, yhat, yhat_u, alpha, lam_arg)
    effective = _effective_size(int(y.size), classical, interval)
    n_eff, gain = effective if effective is not None else (None, None)
    return PPIAccuracy(estimate=interval.estimate, interval=interval, classical=classical, lam=lam,
                       n_labeled=int(y.size), n_unlabeled=int(yhat_u.size), invalid_labeled=0, invalid_unlabeled=0,
                       n_eff=n_eff, gain=gain, note=note)


def crossppi_accuracy(human_labeled: Sequence[bool], score_labeled: Sequence[float],
                      fold_scores_unlabeled: np.ndarray, *, confidence: float = 0.95) -> PPIAccuracy:
    """Cross-prediction-powered accuracy (``ppi_py.crossppi_mean_ci``, Zrnic and Candes 2024) for
    a prediction *fit on the hand grades* by cross-fitting (the combined judge): ``score_labeled``
    are the graded answers' out-of-fold scores, ``fold_scores_unlabeled`` every fold model's
    score of each ungraded answer (shape N x K). Estimate
    ``mean_u(mean_k Yhat_k) - mean(Yhat - Y)``; interval ``estimate -+ z sqrt(var(mean_k
    Yhat_u)/N + var(Yhat - Y)/n)``; ``lam`` is 1 (cross-PPI has no power tuning). No grade is
    both a model's training data and its own correction, so the interval is valid."""
    y = verdict_codes(human_labeled, "human_labeled", allow_invalid=False).astype(float)
    yhat = _score_values(score_labeled, "score_labeled")
    yhat_u = np.asarray(fold_scores_unlabeled, dtype=float)
    check_same_length(y, yhat, ("human_labeled", "score_labeled"))
    if yhat_u.ndim != 2 or y.size < 2 or yhat_u.shape[0] < 2:
        raise ValueError("cross-PPI needs at least 2 labeled answers and an N x K table of 2 or more unlabeled ones")
    confidence = check_open_unit(confidence, "confidence")
    alpha = 1 - confidence
    ppi = _ppi_py()
    low, high = ppi.crossppi_mean_ci(y, yhat, yhat_u, alpha=alpha)
    estimate = _scalar(ppi.crossppi_mean_pointestimate(y, yhat, yhat_u))
    interval = Interval(estimate, _scalar(low), _scalar(high), int(y.size) + int(yhat_u.shape[0]), "cross-ppi")
    classical = _classical_interval(y, alpha)
    effective = _effective_size(int(y.size), classical, interval)
    n_eff, gain = effective if effective is not None else (None, None)
    return PPIAccuracy(estimate=estimate, interval=interval, classical=classical, lam=1.0, n_labeled=int(y.size),
                       n_unlabeled=int(yhat_u.shape[0]), invalid_labeled=0, invalid_unlabeled=0,
                       n_eff=n_eff, gain=gain, note=None)
