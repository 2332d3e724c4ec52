"""Held-out scores for grading order (rag_ablation.evaluation.judges.held_out).

Expected values: the split's sizes from its formula, a constant model's probability, the veto's
0, scikit-learn's logistic regression at the penalty the nested cross-validation chooses, and the
scores unchanged when the estimate part's grades are flipped.
"""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from rag_ablation.evaluation.judges.combined import choose_penalty
from rag_ablation.evaluation.judges.held_out import held_out_scores, split_by_question

KEYS = [("dense", "q1"), ("hybrid", "q1"), ("dense", "q2"), ("dense", "q3"), ("hybrid", "q3"), ("dense", "q4"),
        ("hybrid", "q4"), ("dense", "q5")]


def _data(n_questions=30, seed=0):
    """Two configs' answers to each question, two noisy scores of the grade each."""
    rng = np.random.default_rng(seed)
    keys = [(c, f"q{i:02d}") for i in range(n_questions) for c in ("dense", "hybrid")]
    y = rng.random(len(keys)) < 0.55
    x = np.clip(np.column_stack([0.4 * y + rng.normal(0.3, 0.2, y.size), 0.3 * y + rng.normal(0.3, 0.2, y.size)]),
                0, 1)
    return keys, x, y


@pytest.mark.parametrize("share,seed", [(0.4, 0), (0.4, 1), (0.5, 7), (0.8, 3)])
def test_split_puts_each_question_on_one_side_with_the_share_of_questions(share, seed):
    fit_rows, est_rows = split_by_question(KEYS, fit_share=share, seed=seed)
    assert sorted(fit_rows + est_rows) == list(range(len(KEYS)))
    fit_q, est_q = {KEYS[i][1] for i in fit_rows}, {KEYS[i][1] for i in est_rows}
    assert not fit_q & est_q
    assert len(fit_q) == round(share * 5)
    # the split depends on the questions and the seed, not on the order the answers come in
    shuffled = KEYS[::-1]
    again_fit, _ = split_by_question(shuffled, fit_share=share, seed=seed)
    assert {shuffled[i][1] for i in again_fit} == fit_q


def test_split_keeps_a_question_on_each_side_and_varies_with_the_seed():
    three = [("a", "q1"), ("a", "q2"), ("a", "q3")]
    assert len(split_by_question(three, fit_share=0.01, seed=0)[0]) == 1
    assert len(split_by_question(three, fit_share=0.99, seed=0)[1]) == 1
    splits = {tuple(split_by_question(KEYS, fit_share=0.4, seed=s)[0]) for s in range(10)}
    assert len(splits) > 1


@pytest.mark.bad_input
@pytest.mark.parametrize("keys,share", [(KEYS, 0.0), (KEYS, 1.0), ([("a", "q1"), ("b", "q1")], 0.5)])
def test_split_refuses_a_share_outside_zero_one_or_a_single_question(keys, share):
    with pytest.raises(ValueError):
        split_by_question(keys, fit_share=share, seed=0)


def test_scores_never_depend_on_the_estimate_parts_grades():
    keys, x, y = _data()
    for seed in range(5):
        fit_rows, est_rows = split_by_question(keys, fit_share=0.5, seed=seed)
        base = held_out_scores(x, y, fit_rows=fit_rows, score_rows=est_rows)
        flipped = y.copy()
        flipped[est_rows] = ~flipped[est_rows]
        assert np.array_equal(held_out_scores(x, flipped, fit_rows=fit_rows, score_rows=est_rows), base)
        # while flipping the fit part's grades moves them: the test above could fail
        refit = y.copy()
        refit[fit_rows] = ~refit[fit_rows]
        assert not np.allclose(held_out_scores(x, refit, fit_rows=fit_rows, score_rows=est_rows), base)


def test_scores_are_the_logistic_model_of_the_fit_part_at_its_nested_penalty():
    keys, x, y = _data(seed=2)
    fit_rows, est_rows = split_by_question(keys, fit_share=0.5, seed=0)
    c = choose_penalty(x[fit_rows], y[fit_rows].astype(int))
    expected = LogisticRegression(C=c, solver="lbfgs", max_iter=1000).fit(x[fit_rows], y[fit_rows]).predict_proba(
        x[est_rows])[:, 1]
    assert held_out_scores(x, y, fit_rows=fit_rows, score_rows=est_rows) == pytest.approx(expected, abs=1e-9)


def test_one_grade_in_the_fit_part_gives_its_value_and_the_veto_gives_zero():
    x = np.array([[0.2, 0.0], [0.7, 0.0], [0.4, 0.0], [0.9, 1.0]])
    y = np.array([True, True, False, False])
    assert held_out_scores(x, y, fit_rows=[0, 1], score_rows=[2, 3]).tolist() == [1.0, 1.0]
    assert held_out_scores(x, y, fit_rows=[0, 1], score_rows=[2, 3], veto=1).tolist() == [1.0, 0.0]


@pytest.mark.bad_input
def test_an_answer_both_fit_on_and_scored_is_refused():
    x, y = np.eye(3), [True, False, True]
    with pytest.raises(ValueError, match="both fit on and scored"):
        held_out_scores(x, y, fit_rows=[0, 1], score_rows=[1, 2])
    with pytest.raises(ValueError, match="no answers"):
        held_out_scores(x, y, fit_rows=[], score_rows=[1, 2])
