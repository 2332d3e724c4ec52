"""AUC, ROC and cross-fitted thresholds, against scikit-learn and by construction."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from rag_ablation.evaluation.judges import thresholds as th


def _data(n=60, seed=1):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.55
    s = np.clip(0.5 * y + rng.normal(0.25, 0.2, n), 0, 1).round(2)  # ties on purpose
    return s, y


def test_auc_equals_sklearn_with_ties():
    s, y = _data()
    assert th.auc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert th.auc([0.1, 0.2], [True, True]) is None


def test_auc_interval_brackets_the_estimate_and_is_seeded():
    s, y = _data()
    a = th.auc_interval(s, y, n_resamples=400, seed=3, confidence=0.9)
    b = th.auc_interval(s, y, n_resamples=400, seed=3, confidence=0.9)
    assert a == b and a.low <= a.estimate <= a.high and a.n == len(s)


def test_roc_points_end_at_the_corners():
    s, y = _data()
    pts = th.roc_points(s, y)
    assert (pts[0]["fpr"], pts[0]["tpr"]) == (0.0, 0.0) and (pts[-1]["fpr"], pts[-1]["tpr"]) == (1.0, 1.0)
    assert th.roc_points([0.3], [True]) == []


def test_kappa_equals_sklearn():
    s, y = _data()
    pred = s >= 0.5
    assert th.kappa(pred, y) == pytest.approx(cohen_kappa_score(y, pred), abs=1e-12)


def test_best_threshold_maximises_kappa_over_every_candidate():
    s, y = _data()
    t = th.best_threshold(s, y)
    best = max(th.kappa(s >= c, y) for c in [*np.unique(s), np.inf])
    assert th.kappa(s >= t, y) == best
    # separable scores: halfway between the highest incorrect and the lowest correct score
    assert th.best_threshold([0.1, 0.2, 0.7, 0.9], [False, False, True, True]) == (0.2 + 0.7) / 2
    assert th.best_threshold([0.3, 0.5], [True, True]) == 0.3  # everything correct: the lowest score


def test_folds_are_balanced_and_seeded():
    f = th.fold_of(23, 5, seed=0)
    assert sorted(np.bincount(f).tolist()) == [4, 4, 5, 5, 5]
    assert (f == th.fold_of(23, 5, seed=0)).all() and not (f == th.fold_of(23, 5, seed=1)).all()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_crossfit_never_uses_an_answers_own_grade_to_choose_its_threshold(seed):
    """Flip one answer's grade: only thresholds of folds that *train* on it may change; the
    threshold that judges it (its own fold's) must not, nor its verdict. For every fold seed of
    the repeated cross-fit (``refit``), and in a bootstrap resample, where every copy of the
    answer shares one fold (``groups``) and none of them may move (more in test_refit.py)."""
    s, y = _data(n=40)
    base = th.crossfit_verdicts(s, y, k=5, seed=seed)
    rows = np.random.default_rng(seed).integers(0, len(s), len(s))  # a resample: some answers twice
    base_r = th.crossfit_verdicts(s[rows], y[rows], k=5, seed=seed, groups=rows)
    for i in range(len(s)):
        y2 = y.copy()
        y2[i] = not y2[i]
        other = th.crossfit_verdicts(s, y2, k=5, seed=seed)
        f = base.folds[i]
        assert other.thresholds[f] == base.thresholds[f]
        assert other.verdicts[i] == base.verdicts[i]
        other_r = th.crossfit_verdicts(s[rows], y2[rows], k=5, seed=seed, groups=rows)
        for j in np.flatnonzero(rows == i):
            assert other_r.thresholds[base_r.folds[j]] == base_r.thresholds[base_r.folds[j]]
            assert other_r.verdicts[j] == base_r.verdicts[j]


def test_crossfit_thresholds_come_from_the_other_folds():
    s, y = _data(n=30)
    fit = th.crossfit_verdicts(s, y, k=3, seed=2)
    folds = np.asarray(fit.folds)
    for f in range(3):
        assert fit.thresholds[f] == th.best_threshold(s[folds != f], y[folds != f])
    assert fit.verdicts == tuple(bool(s[i] >= fit.thresholds[folds[i]]) for i in range(len(s)))


@pytest.mark.bad_input
def test_missing_scores_are_refused():
    with pytest.raises(ValueError, match="finite"):
        th.auc([0.2, float("nan")], [True, False])
