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


# --- the penalty, chosen by nested cross-validation (combined.choose_penalty) ---------------------------------


def _coefs(model):
    inner = model.model
    return np.r_[inner.intercept_, inner.coef_[0]]


@pytest.mark.parametrize("with_groups", [False, True])
def test_a_folds_penalty_is_chosen_without_its_held_out_grades(with_groups):
    # flipping every held-out grade of fold f leaves fold f's chosen C and fitted coefficients as
    # they were; the same flip does move the other folds' models, which train on those grades
    x, y = _judges(n=90, seed=5)
    groups = np.repeat(np.arange(45), 2) if with_groups else None  # as a bootstrap draw's copies
    if with_groups:
        y = np.repeat(y[:45], 2)
    base = cb.crossfit_combined(x, y, k=5, seed=0, groups=groups)
    folds = np.asarray(base.folds)
    for f in range(5):
        flipped = y.copy()
        flipped[folds == f] = ~flipped[folds == f]
        again = cb.crossfit_combined(x, flipped, k=5, seed=0, groups=groups)
        assert again.folds == base.folds
        assert again.penalties[f] == base.penalties[f] and again.penalties[f] in cb.PENALTY_GRID
        assert np.array_equal(_coefs(again.models[f]), _coefs(base.models[f]))
        others = [g for g in range(5) if g != f]
        assert any(not np.allclose(_coefs(again.models[g]), _coefs(base.models[g])) for g in others)


def test_a_fold_models_penalty_is_the_one_chosen_on_its_training_answers():
    x, y = _judges(n=80, seed=2)
    fit = cb.crossfit_combined(x, y, k=4, seed=1)
    folds = np.asarray(fit.folds)
    for f in range(4):
        train = folds != f
        assert fit.penalties[f] == cb.choose_penalty(x[train], y[train].astype(int))
        assert fit.models[f].model.C == fit.penalties[f]


def test_a_weak_penalty_wins_where_the_grades_follow_a_steep_rule_and_a_strong_one_on_noise():
    rng = np.random.default_rng(0)
    x = rng.random((150, 2))
    steep = (x[:, 0] > 0.5).astype(int)  # the grade is a sharp cut on one score: large weights fit it
    losses = cb.penalty_losses(x, steep)
    assert losses is not None and losses[-1] < losses[0] / 5
    assert cb.choose_penalty(x, steep) >= 100
    noise = (rng.random(150) < 0.5).astype(int)  # the grade ignores the scores: weights only overfit
    assert cb.choose_penalty(x, noise) <= 0.1


@pytest.mark.parametrize("C", [0.01, 1.0, 1000.0])
def test_the_inner_solver_fits_what_scikit_learn_fits(C):
    from sklearn.linear_model import LogisticRegression

    x, y = _judges(n=100, seed=4)
    mask = np.ones((1, 100))
    mask[0, :20] = 0  # rows left out of the fit
    beta = cb.l2_logistic(x, y.astype(float), mask, np.array([C]))[0]
    ref = LogisticRegression(C=C, tol=1e-10, max_iter=10_000).fit(x[20:], y[20:])
    assert np.allclose(beta, np.r_[ref.intercept_, ref.coef_[0]], atol=1e-5)


def test_inner_folds_are_stratified_and_keep_copies_together():
    y = np.array([1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0])
    groups = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
    folds = cb.stratified_folds(y, groups, 2, seed=0)
    assert all(len(set(folds[groups == g])) == 1 for g in range(6))
    assert sorted(y[folds == 0].tolist()) == sorted(y[folds == 1].tolist())  # one correct answer each


def test_too_few_answers_to_choose_keep_the_default_penalty():
    x = np.array([[0.1, 0.2], [0.9, 0.8], [0.2, 0.1], [0.8, 0.9]])
    assert cb.penalty_losses(x, np.array([0, 1, 0, 1]), groups=np.zeros(4)) is None
    assert cb.choose_penalty(x, np.array([0, 1, 0, 1]), groups=np.zeros(4)) == cb.DEFAULT_C
    assert cb.fit(x, np.array([1, 1, 1, 1])).C is None  # one grade: a constant, no penalty
