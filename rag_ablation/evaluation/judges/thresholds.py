"""A judge's score against the hand grades: how well it ranks (AUC, the ROC curve) and the verdicts
of a threshold chosen on the hand grades without ever scoring an answer by a threshold its own
grade helped choose (cross-fitting).

Definitions (scores ``s``, higher means more likely correct; hand grades ``y`` in {0, 1}):

* ``auc(s, y)``: the probability that a random correct answer scores above a random incorrect one,
  ties counting one half: ``(R1 - n1 (n1 + 1) / 2) / (n1 n0)`` with ``R1`` the sum of the correct
  answers' mid-ranks (the Mann-Whitney form of the area under the ROC curve; equal to
  ``sklearn.metrics.roc_auc_score``). None when either class is empty.
* ``auc_interval``: the percentile bootstrap of ``auc`` over answers (``n_resamples`` draws with
  replacement, seeded); draws with one class empty are redrawn-free: they are skipped and
  counted in ``skipped``.
* ``best_threshold(s, y)``: among the cuts ``s >= c`` for ``c`` a distinct score (or ``+inf``:
  call nothing correct), the one whose verdicts have the highest Cohen's kappa against ``y``
  (ties: the lowest ``c``); the threshold returned lies halfway between ``c`` and the next lower
  distinct score (``c`` itself when it is the lowest, ``+inf`` for the cut that calls nothing
  correct), so the same answers are called correct and an unseen score between the two is judged
  by the nearer side rather than by the training set's extreme. Kappa is
  ``(p_o - p_e) / (1 - p_e)``, and 0 when ``p_e == 1``.
* ``fold_of(n, k, seed)``: fold ``perm[i] % k`` of item ``i``, for a seeded permutation ``perm`` of
  ``range(n)``: folds differ in size by at most one and depend only on ``n``, ``k`` and ``seed``.
* ``group_folds(groups, k, seed)``: the fold of each row when rows of one group must share a fold:
  ``fold_of`` over the distinct groups (in sorted order), given to each of their rows. With every
  row its own group it is ``fold_of``. A bootstrap resample repeats answers; grouped by the
  answer they copy, no copy of an answer trains the model or threshold that judges another copy.
* ``crossfit_verdicts``: each answer's verdict by the threshold chosen (``best_threshold``) on the
  answers of the *other* folds: no answer's grade helps choose the threshold it is judged by.
  The thresholds per fold are returned with the verdicts. With ``groups``, the folds are
  ``group_folds``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import rankdata

from rag_ablation.evaluation.statistics.inference import check_open_unit

Scores = Sequence[float] | np.ndarray
Labels = Sequence[bool] | np.ndarray


def _arrays(scores: Scores, labels: Labels) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"scores and labels must be two lists of equal length, got {s.shape} and {y.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite numbers (a judge without a score has no AUC)")
    return s, y


def auc(scores: Scores, labels: Labels) -> float | None:
    """The area under the ROC curve (module docstring); None with only one class present."""
    s, y = _arrays(scores, labels)
    n1 = int(y.sum())
    n0 = int(y.size - n1)
    if n1 == 0 or n0 == 0:
        return None
    ranks = rankdata(s)
    return float((ranks[y].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


@dataclass(frozen=True)
class AucInterval:
    """``auc`` with its percentile bootstrap interval at ``confidence`` over ``n`` answers."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int
    resamples: int
    skipped: int

    def as_dict(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n,
                "resamples": self.resamples, "skipped": self.skipped}


def auc_interval(scores: Scores, labels: Labels, *, n_resamples: int, seed: int,
                 confidence: float) -> AucInterval:
    """``auc`` and the percentile bootstrap interval over answers (module docstring)."""
    confidence = check_open_unit(confidence, "confidence")
    s, y = _arrays(scores, labels)
    estimate = auc(s, y)
    if estimate is None:
        return AucInterval(None, None, None, int(s.size), n_resamples, 0)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, s.size, size=(n_resamples, s.size))
    values = [v for v in (auc(s[d], y[d]) for d in draws) if v is not None]
    alpha = 1 - confidence
    low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2]) if values else (None, None)
    return AucInterval(estimate, None if low is None else float(low), None if high is None else float(high),
                       int(s.size), n_resamples, n_resamples - len(values))


def roc_points(scores: Scores, labels: Labels) -> list[dict[str, float]]:
    """The ROC curve as ``{"threshold", "fpr", "tpr"}`` points (``sklearn.metrics.roc_curve`` with
    every threshold kept, the first point's infinite threshold written as 1.0 + the top score).
    Empty with only one class present."""
    from sklearn.metrics import roc_curve

    s, y = _arrays(scores, labels)
    if y.all() or not y.any():
        return []
    fpr, tpr, thresholds = roc_curve(y, s, drop_intermediate=False)
    top = float(s.max()) + 1.0
    return [{"threshold": float(t) if np.isfinite(t) else top, "fpr": float(f), "tpr": float(r)}
            for f, r, t in zip(fpr, tpr, thresholds)]


def kappa(pred: np.ndarray, truth: np.ndarray) -> float:
    """Cohen's kappa of two 0/1 arrays: ``(p_o - p_e) / (1 - p_e)``, 0 when ``p_e == 1``."""
    p_o = float(np.mean(pred == truth))
    p1, t1 = float(np.mean(pred)), float(np.mean(truth))
    p_e = p1 * t1 + (1 - p1) * (1 - t1)
    return 0.0 if p_e >= 1 else (p_o - p_e) / (1 - p_e)


def best_threshold(scores: Scores, labels: Labels) -> float:
    """The threshold of highest kappa among the distinct scores and ``+inf`` (module docstring)."""
    s, y = _arrays(scores, labels)
    if s.size == 0:
        raise ValueError("best_threshold needs at least one graded answer")
    distinct = np.unique(s).tolist()
    candidates = [*distinct, float("inf")]
    values = [kappa(s >= t, y) for t in candidates]
    best = max(values)
    i = next(i for i, v in enumerate(values) if v == best)
    if i == 0 or i == len(distinct):
        return float(candidates[i])
    return float((distinct[i] + distinct[i - 1]) / 2)


def fold_of(n: int, k: int, seed: int) -> np.ndarray:
    """The fold (0 .. k-1) of each of ``n`` items (module docstring)."""
    if k < 2:
        raise ValueError(f"cross-fitting needs at least 2 folds, got {k}")
    perm = np.random.default_rng(seed).permutation(n)
    folds = np.empty(n, dtype=int)
    folds[perm] = np.arange(n) % k
    return folds


def group_folds(groups: Sequence[int] | np.ndarray | None, n: int, k: int, seed: int) -> np.ndarray:
    """The fold of each of ``n`` rows, rows of one group in one fold (module docstring); ``groups``
    None: every row its own group (``fold_of(n, k, seed)``). ``k`` is lowered to the number of
    groups when there are fewer."""
    if groups is None:
        return fold_of(n, min(k, n), seed)
    g = np.asarray(groups)
    if g.shape != (n,):
        raise ValueError(f"groups must name one group per row ({n}), got shape {g.shape}")
    distinct, inverse = np.unique(g, return_inverse=True)
    return fold_of(int(distinct.size), min(k, int(distinct.size)), seed)[inverse]


@dataclass(frozen=True)
class CrossFitted:
    """Cross-fitted verdicts: ``verdicts[i]`` is ``scores[i] >= thresholds[folds[i]]``, where
    ``thresholds[f]`` was chosen on the answers outside fold ``f``."""

    verdicts: tuple[bool, ...]
    folds: tuple[int, ...]
    thresholds: tuple[float, ...]


def crossfit_verdicts(scores: Scores, labels: Labels, *, k: int, seed: int,
                      groups: Sequence[int] | np.ndarray | None = None) -> CrossFitted:
    """Each answer judged by a threshold chosen on the other folds' grades (module docstring).
    ``k`` is lowered to the number of answers (or of ``groups``) when there are fewer; needs at
    least 2 of them."""
    s, y = _arrays(scores, labels)
    if s.size < 2 or (groups is not None and np.unique(np.asarray(groups)).size < 2):
        raise ValueError(f"cross-fitting needs at least 2 graded answers, got {s.size}")
    folds = group_folds(groups, int(s.size), k, seed)
    k = int(folds.max()) + 1
    thresholds = tuple(best_threshold(s[folds != f], y[folds != f]) for f in range(k))
    verdicts = tuple(bool(s[i] >= thresholds[folds[i]]) for i in range(s.size))
    return CrossFitted(verdicts, tuple(int(f) for f in folds), thresholds)
