"""The combined judge: a logistic regression over the judges' scores (and the answer features,
``answer_features.answer_features``, when the caller gives them), fit on the hand grades by cross-fitting,
so that it is reported exactly like a judge and never scores an answer with a model that saw that
answer's grade.

With ``X`` the answers' inputs (one column per judge score or feature, each in [0, 1]) and ``y``
the hand grades:

* the model is ``P(correct | x) = 1 / (1 + exp(-(b + w . x)))``, fit by
  ``sklearn.linear_model.LogisticRegression`` (L2 penalty on ``w``, not ``b``; lbfgs;
  deterministic), minimising ``|w|^2 / 2 + C * sum of the answers' log loss``;
* **its penalty is chosen by nested cross-validation** (``choose_penalty``): every fit, on
  whatever answers it is given (one outer fold's training answers, a bootstrap draw's, the
  labelled half of the PPI++ check, or every grade for ``fit_all``), picks ``C`` from
  ``PENALTY_GRID`` by an inner cross-validation on those answers alone: ``INNER_FOLDS``
  stratified folds seeded by ``INNER_SEED`` (every copy of one answer in one fold, as
  ``groups`` says), each ``C`` fit on the other inner folds and scored by the summed log loss
  of the inner fold's answers; the ``C`` of least total loss wins (ties: the smaller ``C``).
  The held-out outer fold is never among the answers given, so its grades cannot move the
  choice. The inner fits use ``l2_logistic`` (Newton's method on every grid value and inner
  fold at once, the same objective as scikit-learn's; tested against it), because scikit-learn
  fits one at a time and the repeated cross-fit makes thousands of choices. An answer the veto
  zeroes counts in no inner loss (its probability is 0 whatever ``C``). An inner fold whose
  training answers are all of one grade adds the same loss to every ``C`` and is left out; when
  no inner fold is left (or the answers hold fewer than 2 groups), ``C`` is ``DEFAULT_C``
  (scikit-learn's default, the fixed value before the choice);
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
that grade's share (a constant, with no ``C``), and its threshold follows.

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


PENALTY_GRID: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
"""The values of ``C`` (inverse L2 strength) the nested cross-validation chooses among, ascending:
decades from a penalty that holds every weight near 0 to one that barely restrains a fit on
a hundred answers."""
INNER_FOLDS = 5
"""Folds of the inner cross-validation that chooses ``C`` (lowered to the number of groups)."""
INNER_SEED = 0
"""The seed of the inner folds: fixed, so a model's ``C`` depends only on the answers it is fit on."""
DEFAULT_C = 1.0
"""``C`` when the inner cross-validation cannot run (module docstring)."""


class _Constant:
    """A model of one-grade training data: the same probability for every answer."""

    C: float | None = None

    def __init__(self, p: float) -> None:
        self.p = p

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.full(x.shape[0], self.p)


class _Logistic:
    """scikit-learn's L2 logistic regression at penalty ``C``."""

    def __init__(self, x: np.ndarray, y: np.ndarray, C: float) -> None:
        from sklearn.linear_model import LogisticRegression
        from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

        self.C = C
        with threadpool_limits(limits=1):  # module docstring: threads make a fit this small 10x slower
            self.model = LogisticRegression(C=C, solver="lbfgs", max_iter=1000).fit(x, y)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict_proba(x)[:, 1], dtype=float)


class _Vetoed:
    """A model whose probability is 0 where column ``column`` is at least 1 (module docstring)."""

    def __init__(self, inner: _Constant | _Logistic, column: int) -> None:
        self.inner, self.column = inner, column
        self.model = getattr(inner, "model", None)
        self.C = inner.C

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.where(x[:, self.column] >= 1.0, 0.0, self.inner.predict(x))


Model = _Constant | _Logistic | _Vetoed


def _log_loss(eta: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each answer's log loss at linear predictor ``eta``: ``log(1 + e^eta) - y eta``."""
    return np.logaddexp(0.0, eta) - y * eta


def l2_logistic(x: np.ndarray, y: np.ndarray, masks: np.ndarray, cs: np.ndarray, *, max_iter: int = 100,
                tol: float = 1e-10) -> np.ndarray:
    """For each problem ``b``: the ``(b, w)`` minimising ``|w|^2 / 2 + cs[b] * sum_i masks[b, i] *
    logloss_i`` (scikit-learn's objective for ``LogisticRegression(C=cs[b])`` fit on the rows
    where ``masks[b]`` is 1; intercept unpenalised), by Newton's method with step halving, all
    problems at once. Returns shape (problems, 1 + columns): intercept first. Each problem's
    rows must hold both grades (else the intercept has no finite optimum)."""
    x1 = np.column_stack([np.ones(x.shape[0]), x])
    pen = np.r_[0.0, np.ones(x.shape[1])]
    beta = np.zeros((masks.shape[0], x1.shape[1]))
    c = np.asarray(cs, dtype=float)[:, None]

    def objective(b: np.ndarray) -> np.ndarray:
        return 0.5 * (b * b) @ pen + c[:, 0] * (masks * _log_loss(b @ x1.T, y)).sum(axis=1)

    current = objective(beta)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(beta @ x1.T)))
        grad = c * ((masks * (p - y)) @ x1) + beta * pen
        hess = (x1.T[None] * (c * masks * p * (1 - p))[:, None, :]) @ x1 + np.diag(pen + 1e-12)
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        t = np.ones(beta.shape[0])
        for _halving in range(40):
            trial = beta - t[:, None] * step
            value = objective(trial)
            worse = value > current + 1e-12 * np.abs(current)
            if not worse.any():
                break
            t = np.where(worse, t / 2, t)
        moved = np.where(worse, 0.0, t)[:, None] * step  # a problem no halving improves stays put
        beta, current = beta - moved, np.where(worse, current, value)
        if np.max(np.abs(moved)) < tol:
            break
    return beta


def stratified_folds(y: np.ndarray, groups: np.ndarray | None, k: int, seed: int) -> np.ndarray:
    """The inner fold (0 .. k-1) of each row: the distinct groups (every row its own with
    ``groups`` None) are split by their grade (the grade of their first row), each grade's groups
    in a seeded permutation dealt round the folds in turn, the second grade continuing where the
    first stopped; every row of a group takes its group's fold."""
    g = np.arange(y.size) if groups is None else np.asarray(groups)
    _, first, inverse = np.unique(g, return_index=True, return_inverse=True)
    grade = y[first]
    rng = np.random.default_rng(seed)
    fold = np.empty(first.size, dtype=int)
    offset = 0
    for value in (0, 1):
        idx = np.flatnonzero(grade == value)
        fold[idx[rng.permutation(idx.size)]] = (np.arange(idx.size) + offset) % k
        offset += idx.size
    return fold[inverse]


def penalty_losses(x: np.ndarray, y: np.ndarray, *, groups: Sequence[int] | np.ndarray | None = None,
                   veto: int | None = None) -> np.ndarray | None:
    """The inner cross-validation's total held-out log loss of each ``C`` of ``PENALTY_GRID``
    on these answers alone (module docstring); None when it cannot run."""
    g = None if groups is None else np.asarray(groups)
    n_groups = y.size if g is None else int(np.unique(g).size)
    if n_groups < 2:
        return None
    folds = stratified_folds(y, g, min(INNER_FOLDS, n_groups), INNER_SEED)
    scored = np.ones(y.size, dtype=bool) if veto is None else x[:, veto] < 1.0
    usable = [f for f in range(int(folds.max()) + 1)
              if 0 < y[folds != f].sum() < (folds != f).sum() and (scored & (folds == f)).any()]
    if not usable:
        return None
    grid = np.asarray(PENALTY_GRID)
    masks = np.vstack([(folds != f).astype(float) for f in usable for _ in grid])
    cs = np.tile(grid, len(usable))
    beta = l2_logistic(x, y.astype(float), masks, cs)
    eta = beta[:, :1] + beta[:, 1:] @ x.T
    held = np.vstack([(folds == f) & scored for f in usable for _ in grid])
    losses = (held * _log_loss(eta, y.astype(float))).sum(axis=1)
    return np.asarray(losses.reshape(len(usable), grid.size).sum(axis=0), dtype=float)


def choose_penalty(x: np.ndarray, y: np.ndarray, *, groups: Sequence[int] | np.ndarray | None = None,
                   veto: int | None = None) -> float:
    """The ``C`` of ``PENALTY_GRID`` with the least inner cross-validated log loss on these
    answers (ties: the smaller), or ``DEFAULT_C`` when the inner cross-validation cannot run
    (module docstring)."""
    losses = penalty_losses(x, y, groups=groups, veto=veto)
    return DEFAULT_C if losses is None else float(PENALTY_GRID[int(np.argmin(losses))])


def fit(x: np.ndarray, y: np.ndarray, veto: int | None = None,
        groups: Sequence[int] | np.ndarray | None = None) -> Model:
    """A logistic regression of ``y`` on ``x`` at the ``C`` chosen on these answers alone
    (``choose_penalty``; ``groups`` keeps copies of one answer in one inner fold), or a constant
    when ``y`` has one value; with ``veto``, wrapped so that answers with ``x[:, veto] >= 1``
    get 0 (module docstring). The model's ``C`` is its penalty (None for a constant)."""
    if y.min() == y.max():
        model: _Constant | _Logistic = _Constant(float(y[0]))
    else:
        model = _Logistic(x, y, choose_penalty(x, y, groups=groups, veto=veto))
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
    ``models`` are the fold models (for ``predict_unlabeled``), ``penalties`` each fold model's
    chosen ``C`` (None for a constant model)."""

    scores: tuple[float, ...]
    verdicts: tuple[bool, ...]
    folds: tuple[int, ...]
    thresholds: tuple[float, ...]
    models: tuple[Model, ...]
    penalties: tuple[float | None, ...]


def crossfit_combined(scores: Sequence[Sequence[float]] | np.ndarray, labels: Sequence[bool] | np.ndarray, *,
                      k: int, seed: int, veto: int | None = None,
                      groups: Sequence[int] | np.ndarray | None = None) -> CombinedFit:
    """The combined judge cross-fitted over ``k`` seeded folds of the graded answers (``k`` lowered
    to the number of answers, or of ``groups``, when there are fewer; at least 2 of them);
    ``veto`` as ``fit``; ``groups`` as ``thresholds.group_folds``, and each fold model's inner
    folds keep them too."""
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
    g = None if groups is None else np.asarray(groups)
    thresholds, models = [], []
    for f in range(k):
        train, test = folds != f, folds == f
        model = fit(x[train], y[train], veto, None if g is None else g[train])
        t = best_threshold(model.predict(x[train]), y[train].astype(bool))
        out[test] = model.predict(x[test])
        verdicts[test] = out[test] >= t
        thresholds.append(t)
        models.append(model)
    return CombinedFit(tuple(float(v) for v in out), tuple(bool(v) for v in verdicts),
                       tuple(int(f) for f in folds), tuple(thresholds), tuple(models),
                       tuple(m.C for m in models))


def predict_unlabeled(fitted: CombinedFit, scores: Sequence[Sequence[float]]) -> np.ndarray:
    """Every fold model's probability for each ungraded answer: shape (answers, folds)."""
    x = _matrix(scores)
    return np.column_stack([m.predict(x) for m in fitted.models])


def fit_all(scores: Sequence[Sequence[float]], labels: Sequence[bool],
            veto: int | None = None) -> tuple[Model, float]:
    """One model on every graded answer (its ``C`` chosen by cross-validation on all of them) and
    the threshold chosen on its fitted probabilities: for answers without a grade only (module
    docstring); ``veto`` as ``fit``."""
    x = _matrix(scores, veto)
    y = np.asarray(labels, dtype=int)
    model = fit(x, y, veto)
    return model, best_threshold(model.predict(x), y.astype(bool))
