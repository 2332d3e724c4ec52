"""Cross-fitted agreement that holds under re-fitting: a judge's cross-fitted kappa (and the
combined judge's out-of-fold AUC) as the median over many fold seeds, with an interval from a
bootstrap that re-runs the whole cross-fit on every resample (issue 48, item 2).

One cross-fit depends on its fold seed: which answers train the threshold (or the model) that
judges which (on the 1.5B experiment the combined judge's kappa ranges from 0.58 to 0.69 over 50
fold seeds, docs/judging.md). And a bootstrap that resamples one cross-fit's verdicts holds the fold thresholds (and
the model) fixed, so it leaves out how much they move with the grades they were chosen on.

A *cross-fitter* (``Fitter``) is a function ``(rows, seed) -> (verdicts, scores)``: ``rows`` are
indices into the graded answers (a resample repeats some), and it cross-fits on those rows with
folds seeded by ``seed``, every copy of one answer in one fold (``thresholds.group_folds``), so no
answer's grade ever helps choose the threshold or model that judges a copy of it. It returns each
row's verdict and, for a fitted score (the combined judge), its out-of-fold score (None for a
judge whose score is its own: its AUC involves no fit).

* ``over_seeds``: the cross-fitter on every graded answer with fold seeds ``first_seed``,
  ``first_seed + 1``, ..., ``first_seed + seeds - 1``; kappa of each seed's verdicts against the
  grades (``thresholds.kappa``), and AUC of each seed's out-of-fold scores (``thresholds.auc``).
  The estimate is the median over seeds (``numpy.median``: the mean of the middle two for an even
  count);
* ``refit_bootstrap``: ``resamples`` draws of the graded answers with replacement (seeded by
  ``seed``); draw ``b`` is cross-fitted from scratch with fold seed ``seed + b`` (thresholds, and
  for the combined judge the logistic model, re-fit on the drawn grades), giving one kappa (and
  AUC; the logistic model's penalty is chosen again too, by ``combined.choose_penalty`` on each
  fold's training rows of the draw). A draw with one grade only is skipped and counted
  (``skipped``). The interval is the percentile interval of those values at ``confidence``.
  Each draw is cross-fitted once, with its own fold seed, so the interval carries the fold
  assignment's variation on top of the grades' and the re-fitting's; the median over seeds
  removes that variation from the estimate, so the interval errs wide;
* ``repeated_crossfit``: both, as the dicts judge_detail.json holds (``Summary.as_dict``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_ablation.evaluation.judges.combined import crossfit_combined
from rag_ablation.evaluation.judges.thresholds import auc, crossfit_verdicts, kappa
from rag_ablation.evaluation.statistics.inference import check_open_unit

Fitter = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray | None]]
"""``(rows, fold seed) -> (verdicts, out-of-fold scores or None)`` (module docstring)."""


def judge_fitter(scores: Sequence[float] | np.ndarray, labels: Sequence[bool] | np.ndarray, *, k: int) -> Fitter:
    """A judge's cross-fitter: thresholds chosen per fold (``thresholds.crossfit_verdicts``) on
    the given rows; its score is its own, so no out-of-fold score."""
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)

    def run(rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
        fitted = crossfit_verdicts(s[rows], y[rows], k=k, seed=seed, groups=rows)
        return np.asarray(fitted.verdicts, dtype=bool), None

    return run


def combined_fitter(x: Sequence[Sequence[float]] | np.ndarray, labels: Sequence[bool] | np.ndarray, *, k: int,
                    veto: int | None = None) -> Fitter:
    """The combined judge's cross-fitter: per fold a logistic model and its threshold fit on the
    given rows of the other folds (``combined.crossfit_combined``); returns the out-of-fold
    scores too."""
    xs, y = np.asarray(x, dtype=float), np.asarray(labels, dtype=bool)

    def run(rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
        fitted = crossfit_combined(xs[rows], y[rows], k=k, seed=seed, veto=veto, groups=rows)
        return np.asarray(fitted.verdicts, dtype=bool), np.asarray(fitted.scores, dtype=float)

    return run


@dataclass(frozen=True)
class Summary:
    """One measure over repeated cross-fits: ``estimate``, the median over ``seeds`` fold seeds
    from ``first_seed`` (``by_seed`` each seed's value, ``min`` and ``max`` of them), and ``low``
    / ``high``, the refit bootstrap's percentile interval over ``resamples`` draws, ``skipped``
    of them with one grade only; ``n`` graded answers."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int
    seeds: int
    first_seed: int
    resamples: int
    skipped: int
    by_seed: tuple[float, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n, "seeds": self.seeds,
                "first_seed": self.first_seed, "min": min(self.by_seed) if self.by_seed else None,
                "max": max(self.by_seed) if self.by_seed else None, "resamples": self.resamples,
                "skipped": self.skipped, "by_seed": list(self.by_seed)}


def over_seeds(fitter: Fitter, labels: Sequence[bool] | np.ndarray, *, seeds: int,
               first_seed: int) -> tuple[list[float], list[float] | None]:
    """Each fold seed's kappa, and AUC of its out-of-fold scores (None for a judge without a
    fitted score), on every graded answer (module docstring)."""
    y = np.asarray(labels, dtype=bool)
    rows = np.arange(y.size)
    kappas: list[float] = []
    aucs: list[float] = []
    for seed in range(first_seed, first_seed + seeds):
        verdicts, scores = fitter(rows, seed)
        kappas.append(kappa(verdicts, y))
        if scores is not None:
            aucs.append(auc(scores, y))  # type: ignore[arg-type]  # both grades present: the caller checks
    return kappas, (aucs if aucs else None)


def refit_bootstrap(fitter: Fitter, labels: Sequence[bool] | np.ndarray, *, resamples: int,
                    seed: int) -> tuple[list[float], list[float] | None, int]:
    """Each resample's kappa (and AUC of its out-of-fold scores), every one a cross-fit from
    scratch on the drawn answers, and the count of draws skipped for holding one grade only
    (module docstring)."""
    y = np.asarray(labels, dtype=bool)
    draws = np.random.default_rng(seed).integers(0, y.size, size=(resamples, y.size))
    kappas: list[float] = []
    aucs: list[float] = []
    skipped = 0
    for b, rows in enumerate(draws):
        yb = y[rows]
        if yb.all() or not yb.any() or np.unique(rows).size < 2:
            skipped += 1
            continue
        verdicts, scores = fitter(rows, seed + b)
        kappas.append(kappa(verdicts, yb))
        if scores is not None:
            aucs.append(auc(scores, yb))  # type: ignore[arg-type]
    return kappas, (aucs if aucs else None), skipped


def _interval(values: Sequence[float], confidence: float) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    alpha = 1 - confidence
    low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def repeated_crossfit(fitter: Fitter, labels: Sequence[bool] | np.ndarray, *, seeds: int, first_seed: int,
                      resamples: int, confidence: float) -> dict[str, Summary | None]:
    """``{"kappa": Summary, "auc": Summary or None}``: the median over ``seeds`` fold seeds and
    the refit bootstrap's interval (module docstring); ``auc`` only for a fitted score. The
    bootstrap is seeded by ``first_seed``."""
    confidence = check_open_unit(confidence, "confidence")
    if seeds < 1 or resamples < 1:
        raise ValueError(f"repeated cross-fitting needs at least 1 seed and 1 resample, got {seeds} and {resamples}")
    y = np.asarray(labels, dtype=bool)
    if y.size < 2 or y.all() or not y.any():
        raise ValueError("repeated cross-fitting needs at least 2 graded answers of both grades")
    k_seeds, a_seeds = over_seeds(fitter, y, seeds=seeds, first_seed=first_seed)
    k_boot, a_boot, skipped = refit_bootstrap(fitter, y, resamples=resamples, seed=first_seed)

    def summary(by_seed: list[float], boot: list[float]) -> Summary:
        return Summary(float(np.median(by_seed)), *_interval(boot, confidence), n=int(y.size), seeds=seeds,
                       first_seed=first_seed, resamples=resamples, skipped=skipped,
                       by_seed=tuple(float(v) for v in by_seed))

    return {"kappa": summary(k_seeds, k_boot),
            "auc": summary(a_seeds, a_boot or []) if a_seeds is not None else None}
