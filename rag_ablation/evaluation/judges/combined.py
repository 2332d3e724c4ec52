"""The combined judge: a logistic regression over the judges' scores (and the answer features,
``answer_features.answer_features``, when the caller gives them), fit on the hand grades by cross-fitting,
so that it is reported exactly like a judge and never scores an answer with a model that saw that
answer's grade.

With ``X`` the answers' inputs (one column per judge score or feature, each in [0, 1]) and ``y``
the hand grades:

* the model is ``P(correct | x) = 1 / (1 + exp(-(b + w . x)))``, fit by
  ``sklearn.linear_model.LogisticRegression`` (L2 penalty, ``C = 1``, lbfgs; deterministic);
* ``crossfit_combined``: the graded answers fall in ``k`` seeded folds
  (``thresholds.fold_of``); for each fold ``f`` a model is fit on the other folds, gives the
  fold's answers their score (the out-of-fold probability), and picks the fold's threshold
  (``thresholds.best_threshold``) on its own training answers' fitted probabilities; the fold's
  verdicts are ``score >= threshold``. So each graded answer's score, threshold and verdict come
  from grades other than its own. With ``groups`` (a bootstrap resample's rows named by the
  answer they copy), the folds are ``thresholds.group_folds``: every copy of an answer in one fold;
* ``predict_unlabeled``: every fold's model on answers without a hand grade, one column per
  fold (the ``Yhat_unlabeled`` of cross-prediction-powered inference, ``ppi_py.crossppi_mean_ci``),
  and their mean as the answers' combined score;
* ``fit_all``: one model on every graded answer, with its threshold chosen on them: the verdicts
  it gives answers *without* a grade (the failure tables' judge on every answer). It is never
  used to score a graded answer.

Each fit runs on one BLAS thread (``threadpoolctl``): the models are small (160 answers, 5
inputs), and their solver, threaded, took 25 ms a fit instead of 2 ms with another process on
the two cores (the same coefficients either way). The repeated cross-fit (``refit``) makes over
a thousand of them.

A fold whose training answers are all of one grade cannot fit a regression: its model predicts
that grade's share (a constant), and its threshold follows.

The veto (``veto``: the index of a column, in practice ``question_overlap`` of
``answer_features.answer_features``): an answer whose value in that column is 1 (every token of it is in
the question: a restated question, or the empty answer) gets probability 0 from every model,
whatever the regression says; it is still fit on like any other answer. Such an answer cannot
carry the reference's information, and a logistic model cannot learn that from grades that hold
almost no such answer (on the 1.5B's 160 graded answers: 2, both graded wrong).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rag_ablation.evaluation.judges.thresholds import best_threshold, group_folds


class _Constant:
    """A model of one-grade training data: the same probability for every answer."""

    def __init__(self, p: float) -> None:
        self.p = p

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.full(x.shape[0], self.p)


class _Logistic:
    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        from sklearn.linear_model import LogisticRegression
        from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

        with threadpool_limits(limits=1):  # module docstring: threads make a fit this small 10x slower
            self.model = LogisticRegression(C=1.0, solver="lbfgs", max_iter=1000).fit(x, y)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict_proba(x)[:, 1], dtype=float)


class _Vetoed:
    """A model whose probability is 0 where column ``column`` is at least 1 (module docstring)."""

    def __init__(self, inner: _Constant | _Logistic, column: int) -> None:
        self.inner, self.column = inner, column
        self.model = getattr(inner, "model", None)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.where(x[:, self.column] >= 1.0, 0.0, self.inner.predict(x))


def fit(x: np.ndarray, y: np.ndarray, veto: int | None = None) -> _Constant | _Logistic | _Vetoed:
    """A logistic regression of ``y`` on ``x``, or a constant when ``y`` has one value; with
    ``veto``, wrapped so that answers with ``x[:, veto] >= 1`` get 0 (module docstring)."""
    model: _Constant | _Logistic = _Constant(float(y[0])) if y.min() == y.max() else _Logistic(x, y)
    return model if veto is None else _Vetoed(model, veto)


def _matrix(scores: Sequence[Sequence[float]] | np.ndarray, veto: int | None = None) -> np.ndarray:
    x = np.asarray(scores, dtype=float)
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"scores must be a table of answers x judges, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("the combined judge needs every judge's score on every answer")
    if veto is not None and not 0 <= veto < x.shape[1]:
        raise ValueError(f"veto names column {veto}, but there are {x.shape[1]} columns")
    return x


@dataclass(frozen=True)
class CombinedFit:
    """The cross-fitted combined judge on the graded answers (module docstring): per answer its
    out-of-fold ``scores`` and ``verdicts``, its ``folds``, and per fold the ``thresholds``;
    ``models`` are the fold models (for ``predict_unlabeled``)."""

    scores: tuple[float, ...]
    verdicts: tuple[bool, ...]
    folds: tuple[int, ...]
    thresholds: tuple[float, ...]
    models: tuple[object, ...]


def crossfit_combined(scores: Sequence[Sequence[float]] | np.ndarray, labels: Sequence[bool] | np.ndarray, *,
                      k: int, seed: int, veto: int | None = None,
                      groups: Sequence[int] | np.ndarray | None = None) -> CombinedFit:
    """The combined judge cross-fitted over ``k`` seeded folds of the graded answers (``k`` lowered
    to the number of answers, or of ``groups``, when there are fewer; at least 2 of them);
    ``veto`` as ``fit``; ``groups`` as ``thresholds.group_folds``."""
    x = _matrix(scores, veto)
    y = np.asarray(labels, dtype=int)
    if y.shape != (x.shape[0],):
        raise ValueError(f"labels must have one grade per answer ({x.shape[0]}), got {y.shape}")
    if x.shape[0] < 2 or (groups is not None and np.unique(np.asarray(groups)).size < 2):
        raise ValueError(f"cross-fitting needs at least 2 graded answers, got {x.shape[0]}")
    folds = group_folds(groups, x.shape[0], k, seed)
    k = int(folds.max()) + 1
    out = np.empty(x.shape[0])
    verdicts = np.empty(x.shape[0], dtype=bool)
    thresholds, models = [], []
    for f in range(k):
        train, test = folds != f, folds == f
        model = fit(x[train], y[train], veto)
        t = best_threshold(model.predict(x[train]), y[train].astype(bool))
        out[test] = model.predict(x[test])
        verdicts[test] = out[test] >= t
        thresholds.append(t)
        models.append(model)
    return CombinedFit(tuple(float(v) for v in out), tuple(bool(v) for v in verdicts),
                       tuple(int(f) for f in folds), tuple(thresholds), tuple(models))


def predict_unlabeled(fitted: CombinedFit, scores: Sequence[Sequence[float]]) -> np.ndarray:
    """Every fold model's probability for each ungraded answer: shape (answers, folds)."""
    x = _matrix(scores)
    return np.column_stack([m.predict(x) for m in fitted.models])  # type: ignore[attr-defined]


def fit_all(scores: Sequence[Sequence[float]], labels: Sequence[bool],
            veto: int | None = None) -> tuple[object, float]:
    """One model on every graded answer and the threshold chosen on its fitted probabilities:
    for answers without a grade only (module docstring); ``veto`` as ``fit``."""
    x = _matrix(scores, veto)
    y = np.asarray(labels, dtype=int)
    model = fit(x, y, veto)
    return model, best_threshold(model.predict(x), y.astype(bool))
