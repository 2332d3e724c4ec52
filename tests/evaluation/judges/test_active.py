"""Grading order and the active estimate (rag_ablation.evaluation.judges.active).

Expected values are the module docstring's formulas written out, the exact expectation over
every possible order of a tiny population, statsmodels' Wilson interval, and a simulation on a
known population.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student_t
from statsmodels.stats.proportion import proportion_confint

from rag_ablation.core.config import (ACTIVE_UNIFORM_SHARE, DEFAULT_GRADE_ORDER, DEFAULT_GRADE_SCORE_JUDGE,
                                      GRADE_ORDERS)
from rag_ablation.core.errors import UnknownName
from rag_ablation.evaluation.judges.active import (ORDERS, active_estimate, active_order, draw_probabilities,
                                                   draw_term, order_by_name, random_estimate, random_order,
                                                   sequence_estimate)


def test_draw_probabilities_mix_uncertainty_with_uniform():
    s = [0.5, 0.0, 0.9, 1.0]
    u = [math.sqrt(x * (1 - x)) for x in s]
    q = draw_probabilities(s, uniform=0.5)
    assert q == pytest.approx([0.5 * ui / sum(u) + 0.5 / 4 for ui in u])
    assert q.sum() == pytest.approx(1.0)
    assert q[0] > q[2] > q[1] == q[3] == pytest.approx(0.5 / 4)


def test_scores_all_certain_draw_uniformly():
    assert draw_probabilities([0.0, 1.0, 1.0], uniform=0.1) == pytest.approx([1 / 3] * 3)


@pytest.mark.bad_input
@pytest.mark.parametrize("scores,uniform", [([0.5, 1.2], 0.5), ([float("nan")], 0.5), ([0.5], 0.0), ([0.5], 1.5),
                                            ([], 0.5)])
def test_bad_scores_or_uniform_share_are_refused(scores, uniform):
    with pytest.raises(ValueError):
        draw_probabilities(scores, uniform=uniform)


def test_active_order_draws_every_ungraded_answer_once_with_its_probability():
    s = [0.5, 0.1, 0.9, 0.3, 0.7]
    graded = [False, True, False, False, False]
    order = active_order(s, seed=3, graded=graded, uniform=0.4)
    assert sorted(d.index for d in order) == [0, 2, 3, 4]
    assert order == active_order(s, seed=3, graded=graded, uniform=0.4)  # seeded
    left = [0, 2, 3, 4]
    for d in order:  # each draw's probability is draw_probabilities over those still left
        q = draw_probabilities([s[i] for i in left], uniform=0.4)
        assert d.probability == pytest.approx(q[left.index(d.index)])
        assert d.rest_score == pytest.approx(sum(s[i] for i in left))
        left.remove(d.index)


def test_random_order_is_a_seeded_permutation_of_the_ungraded():
    order = random_order([0.5] * 6, seed=1, graded=[True] + [False] * 5)
    assert sorted(d.index for d in order) == [1, 2, 3, 4, 5]
    assert [d.index for d in order] == [d.index for d in random_order([0.5] * 6, seed=1, graded=[True] + [False] * 5)]
    assert {d.probability for d in order} == {1.0}


def test_default_order_is_random_and_one_score_judge_default_serves_both_commands():
    # Pinned by measurement (benchmarks/RESULTS.md, `active_grading.py`, held-out protocol: the
    # score never fit on the grades estimated): active order's 95% interval covers 77% to 91% of the
    # time after 10 and 20 grades on the example (accuracy 0.12) with every score, and a data set's
    # accuracy is unknown before grading. Change it only with a measurement that says otherwise.
    import argparse

    from rag_ablation.commands.grade import build_parser
    from rag_ablation.commands.label import add_grade_options

    assert DEFAULT_GRADE_ORDER == "random"
    workbench = argparse.ArgumentParser()
    add_grade_options(workbench)
    for args in (build_parser().parse_args([]), workbench.parse_args([])):
        assert (args.order, args.score_judge) == (DEFAULT_GRADE_ORDER, DEFAULT_GRADE_SCORE_JUDGE)


def test_orders_registry_matches_config_and_refuses_unknown_names():
    assert tuple(sorted(ORDERS)) == GRADE_ORDERS
    assert DEFAULT_GRADE_ORDER in ORDERS and 0 < ACTIVE_UNIFORM_SHARE <= 1
    assert order_by_name("active") is active_order
    with pytest.raises(UnknownName, match="expected one of: active, random"):
        order_by_name("smart")


def test_draw_term_formula():
    assert draw_term(True, score=0.2, probability=0.25, rest_score=1.5, known_correct=3) == pytest.approx(
        3 + 1.5 + (1 - 0.2) / 0.25)
    assert draw_term(False, score=0.2, probability=0.25, rest_score=1.5, known_correct=3) == pytest.approx(
        3 + 1.5 - 0.2 / 0.25)


def test_active_estimate_formula_and_single_draw():
    z = [30.0, 34.0, 26.0, 31.0]
    n_pop = 50
    est = active_estimate(z, n_pop)
    half = student_t.ppf(0.975, 3) * np.std(z, ddof=1) / (n_pop * math.sqrt(4))
    assert est.estimate == pytest.approx(np.mean(z) / n_pop)
    assert (est.low, est.high) == pytest.approx((np.mean(z) / n_pop - half, np.mean(z) / n_pop + half))
    one = active_estimate([12.0], 20)
    assert (one.estimate, one.low, one.high, one.n) == (0.6, 0.0, 1.0, 1)


def test_random_estimate_is_wilson_at_the_finite_population_size():
    verdicts = [True] * 7 + [False] * 5
    est = random_estimate(verdicts, 40)
    n_eff = 12 * 39 / 28
    low, high = proportion_confint(7 / 12 * n_eff, n_eff, alpha=0.05, method="wilson")
    assert (est.estimate, est.low, est.high) == pytest.approx((7 / 12, low, high))
    whole = random_estimate(verdicts, 12)
    assert (whole.low, whole.high) == (7 / 12, 7 / 12)


def _exact_mean(s: list[float], y: list[bool], n: int, uniform: float) -> float:
    """E[theta_hat] after n active draws: every order of the first n draws, weighted by its
    probability (the product of the draw probabilities)."""
    total = 0.0

    def walk(left: list[int], terms: list[float], known: int, weight: float) -> None:
        nonlocal total
        if len(terms) == n:
            total += weight * np.mean(terms) / len(s)
            return
        q = draw_probabilities([s[i] for i in left], uniform=uniform)
        for k, i in enumerate(left):
            z = draw_term(y[i], score=s[i], probability=q[k], rest_score=sum(s[j] for j in left), known_correct=known)
            walk([j for j in left if j != i], [*terms, z], known + y[i], weight * q[k])

    walk(list(range(len(s))), [], 0, 1.0)
    return total


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_active_estimate_is_exactly_unbiased_over_every_order(n):
    s = [0.9, 0.2, 0.5, 0.05, 0.7]
    y = [False, True, True, False, True]  # a score that is often wrong: unbiased all the same
    assert _exact_mean(s, y, n, uniform=0.3) == pytest.approx(sum(y) / len(y))


def test_active_estimate_unbiased_and_covers_by_simulation():
    rng = np.random.default_rng(7)
    n_pop = 60
    s = rng.uniform(0, 1, n_pop)
    y = rng.uniform(0, 1, n_pop) < s  # a calibrated score
    truth = y.mean()
    estimates, covered = [], []
    for rep in range(1500):
        order = active_order(s, seed=rep, uniform=0.5)
        est = sequence_estimate(order, list(s), list(y), 30, name="active")
        estimates.append(est.estimate)
        covered.append(est.low <= truth <= est.high)
    se = np.std(estimates) / math.sqrt(len(estimates))
    assert abs(np.mean(estimates) - truth) < 3 * se
    assert np.mean(covered) >= 0.92


def test_sequence_estimate_random_is_the_mean_of_the_first_grades():
    s = [0.5] * 10
    y = [True, False] * 5
    order = random_order(s, seed=2)
    est = sequence_estimate(order, s, y, 4, name="random")
    assert est.estimate == pytest.approx(np.mean([y[d.index] for d in order[:4]]))
