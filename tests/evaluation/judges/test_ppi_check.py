"""The split-half check of PPI++ (rag_ablation.evaluation.judges.ppi_check), on hand-built grades."""
from __future__ import annotations

import numpy as np
import pytest

from rag_ablation.evaluation.judges.ppi_check import split_half_check, split_halves


def grades(n: int, correct: int) -> dict[str, bool]:
    return {f"q{i:03d}": i < correct for i in range(n)}


def noisy(hand: dict[str, bool], flip_every: int) -> dict[str, bool]:
    """The hand grades with every ``flip_every``-th answer (in id order) flipped."""
    return {k: (not v) if i % flip_every == 0 else v for i, (k, v) in enumerate(sorted(hand.items()))}


def test_the_split_is_seeded_disjoint_and_depends_only_on_the_ids():
    ids = [f"q{i}" for i in range(11)]
    lab, held = split_halves(ids, seed=3)
    assert (len(lab), len(held)) == (11 // 2, 11 - 11 // 2)
    assert set(lab).isdisjoint(held) and set(lab) | set(held) == set(ids)
    assert split_halves(list(reversed(ids)), seed=3) == (lab, held)
    assert split_halves(ids, seed=4) != (lab, held)


def test_a_perfect_judge_estimates_the_held_back_half_exactly():
    """lam = 1 and Yhat = Y: estimate = mean(Y_heldout) + mean(Y - Y) = the held-back accuracy."""
    hand = grades(40, 14)
    out, reason = split_half_check(hand, dict(hand), seed=0, splits=5)
    assert reason is None
    assert out["ppi"]["estimate"] == pytest.approx(out["heldout"])
    _, held = split_halves(list(hand), 0)
    assert out["heldout"] == pytest.approx(sum(hand[i] for i in held) / len(held))
    assert out["truth"] == pytest.approx(14 / 40)


def test_a_constant_judge_gives_the_labelled_half_alone():
    """A judge saying CORRECT to everything carries no information: lam = 0, the PPI++ interval
    is the classical one of the labelled half, gain 1."""
    hand = grades(30, 9)
    out, _ = split_half_check(hand, dict.fromkeys(hand, True), seed=1, splits=3)
    lab, _ = split_halves(list(hand), 1)
    y = np.array([hand[i] for i in lab], dtype=float)
    assert out["ppi"]["lam"] == 0.0 and out["ppi"]["gain"] == pytest.approx(1.0)
    assert out["ppi"]["estimate"] == pytest.approx(y.mean())
    assert (out["ppi"]["low"], out["ppi"]["high"]) == pytest.approx(
        (out["ppi"]["classical"]["low"], out["ppi"]["classical"]["high"]))


def test_the_first_split_is_ppi_py_on_that_split():
    import ppi_py

    hand = grades(60, 25)
    judge = noisy(hand, 5)
    out, _ = split_half_check(hand, judge, seed=7, splits=1, confidence=0.9)
    lab, held = split_halves(list(hand), 7)
    y = np.array([hand[i] for i in lab], dtype=float)
    yhat = np.array([judge[i] for i in lab], dtype=float)
    yhat_u = np.array([judge[i] for i in held], dtype=float)
    low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.1)
    assert (out["ppi"]["low"], out["ppi"]["high"]) == pytest.approx((float(low[0]), float(high[0])))
    assert out["covers"] == (float(low[0]) <= 25 / 60 <= float(high[0]))
    assert out["coverage"] == float(out["covers"]) and out["splits"] == 1


def test_coverage_and_widths_over_splits():
    """An informative judge: PPI++ covers the truth about as often as the labelled half alone
    and is narrower on average."""
    hand = grades(80, 30)
    out, _ = split_half_check(hand, noisy(hand, 10), seed=0, splits=100)
    assert 0.8 <= out["coverage"] <= 1.0 and 0.8 <= out["classical_coverage"] <= 1.0
    assert out["mean_width"] < out["mean_classical_width"]
    assert (out["n_labeled"], out["n_heldout"]) == (40, 40)


@pytest.mark.bad_input
def test_too_few_grades_bad_splits_and_missing_verdicts():
    out, reason = split_half_check(grades(3, 1), dict.fromkeys(grades(3, 1), True))
    assert out is None and "3 hand grades" in reason and "at least 4" in reason
    with pytest.raises(ValueError, match="splits must be at least 1, got 0"):
        split_half_check(grades(8, 3), dict.fromkeys(grades(8, 3), True), splits=0)
    hand = grades(8, 3)
    with pytest.raises(ValueError, match="no verdict for 1 graded answers, e.g. 'q007'"):
        split_half_check(hand, {k: v for k, v in hand.items() if k != "q007"})


@pytest.mark.bad_input
def test_fewer_labelled_grades_cut_the_same_permutation_elsewhere():
    """``labelled=n`` keeps the first n of the same seeded permutation (the default cut is
    n // 2), and the check reports n labelled and the rest held back; a cut that leaves fewer than
    2 grades on a side is refused."""
    from rag_ablation.evaluation.judges.ppi_check import split_half_scores

    ids = [f"q{i}" for i in range(12)]
    lab, held = split_halves(ids, seed=5, labelled=3)
    half, rest = split_halves(ids, seed=5)
    assert len(lab) == 3 and lab == half[:3] and held == half[3:] + rest
    hand = grades(20, 9)
    score = {k: 0.9 if v else 0.2 for k, v in hand.items()}
    out, _ = split_half_scores(hand, score, seed=0, splits=3, labelled=5)
    assert (out["n_labeled"], out["n_heldout"]) == (5, 15)
    with pytest.raises(ValueError, match="labelled must leave at least 2 grades on each side of 20, got 19"):
        split_half_scores(hand, score, seed=0, splits=3, labelled=19)
