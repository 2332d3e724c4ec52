"""The combined judge: cross-fitted logistic regression over the judges' scores."""
from __future__ import annotations

import numpy as np
import pytest

from rag_ablation.evaluation.judges import combined as cb
from rag_ablation.evaluation.judges.thresholds import kappa


def _judges(n=120, seed=0):
    """Two noisy scores of the same truth: together they separate it better than either."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.6
    a = np.clip(0.35 * y + rng.normal(0.3, 0.18, n), 0, 1)
    b = np.clip(0.35 * y + rng.normal(0.3, 0.18, n), 0, 1)
    return np.column_stack([a, b]), y


def test_each_score_comes_from_a_model_that_never_saw_its_grade():
    x, y = _judges(n=40)
    fit = cb.crossfit_combined(x, y, k=4, seed=0)
    folds = np.asarray(fit.folds)
    for f in range(4):
        model = cb.fit(x[folds != f], y[folds != f].astype(int))
        assert np.allclose(np.asarray(fit.scores)[folds == f], model.predict(x[folds == f]))
    # flipping any grade leaves that answer's score and verdict unchanged, whatever the fold seed
    # (the repeated cross-fit, refit.py; its bootstrap resamples: test_refit.py)
    for seed in (0, 1, 2):
        base = cb.crossfit_combined(x, y, k=4, seed=seed)
        for i in range(len(y)):
            y2 = y.copy()
            y2[i] = not y2[i]
            again = cb.crossfit_combined(x, y2, k=4, seed=seed)
            assert again.scores[i] == base.scores[i] and again.verdicts[i] == base.verdicts[i], (seed, i)


def test_combining_two_noisy_judges_agrees_better_than_either():
    x, y = _judges(n=400, seed=3)
    fit = cb.crossfit_combined(x, y, k=5, seed=0)
    combined = kappa(np.asarray(fit.verdicts), y)
    singles = [max(kappa(x[:, j] >= t, y) for t in np.unique(x[:, j])) for j in range(2)]
    assert combined > max(singles) - 0.02  # cross-fitted, yet at least as good as the in-sample best single


def test_unlabeled_predictions_have_one_column_per_fold():
    x, y = _judges(n=50)
    fit = cb.crossfit_combined(x, y, k=5, seed=0)
    p = cb.predict_unlabeled(fit, x[:7])
    assert p.shape == (7, 5) and ((p >= 0) & (p <= 1)).all()


def test_one_grade_only_gives_a_constant_model():
    x, _ = _judges(n=10)
    model, t = cb.fit_all(x, [True] * 10)
    assert (model.predict(x) == 1.0).all() and t == 1.0


@pytest.mark.bad_input
def test_a_missing_score_is_refused():
    with pytest.raises(ValueError, match="every judge's score"):
        cb.crossfit_combined([[0.1, float("nan")], [0.2, 0.3]], [True, False], k=2, seed=0)


def test_the_veto_column_makes_an_answer_that_adds_nothing_incorrect():
    # column 0: a score that separates the grades; column 1: question_overlap. The restated
    # question (last row of ``probe``) scores as high as the best correct answer.
    x, y = _judges(n=60, seed=1)
    x = np.column_stack([x[:, 0], np.full(60, 0.3)])
    probe = np.array([[0.9, 0.3], [0.9, 1.0]])
    plain, t = cb.fit_all(x, y)
    vetoed, t_v = cb.fit_all(x, y, veto=1)
    assert plain.predict(probe)[1] >= t  # without the veto the restated question is accepted
    assert plain.predict(probe)[0] == pytest.approx(vetoed.predict(probe)[0]) and t == t_v
    assert vetoed.predict(probe)[1] == 0.0 and vetoed.predict(probe)[1] < t_v
    fit = cb.crossfit_combined(np.vstack([x, probe]), [*y, True, False], k=4, seed=0, veto=1)
    assert fit.scores[-1] == 0.0 and fit.verdicts[-1] is False
    assert (cb.predict_unlabeled(fit, probe)[1] == 0.0).all()
    with pytest.raises(ValueError, match="veto names column 2"):
        cb.fit_all(x, y, veto=2)
