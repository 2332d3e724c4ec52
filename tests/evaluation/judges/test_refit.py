"""Cross-fitted kappa repeated over fold seeds, and its interval from a bootstrap that re-fits
(issue 48, item 2): the median, the interval's width against the fixed-threshold one, and that
no repetition ever judges an answer by a threshold or model its own grade helped choose."""
from __future__ import annotations

import statistics

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from rag_ablation.evaluation.judges import refit
from rag_ablation.evaluation.judges.agreement import agreement
from rag_ablation.evaluation.judges.combined import crossfit_combined
from rag_ablation.evaluation.judges.thresholds import crossfit_verdicts, group_folds


def _noisy(n=60, seed=1):
    """A score that ranks the grades well but not perfectly (ties on purpose): its best
    threshold moves with the answers it is chosen on."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.55
    s = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0, 1).round(2)
    return s, y


def _two_scores(n=60, seed=2):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.6
    x = np.column_stack([np.clip(0.3 * y + rng.normal(0.3, 0.2, n), 0, 1) for _ in range(2)])
    return x, y


def test_the_estimate_is_the_median_of_the_seeds_kappas_computed_by_hand():
    # a stub cross-fitter: seed s gives the verdicts below, whose kappas against y are by hand
    y = np.array([True, True, False, False])
    by_seed = {0: [True, True, False, False],   # perfect: kappa 1
               1: [True, False, True, False],   # p_o 0.5, p_e 0.5: kappa 0
               2: [True, True, True, False],    # p_o 0.75, p_e 0.5: kappa 0.5
               3: [False, False, True, True]}   # all wrong: kappa -1

    def stub(rows, seed):
        return np.asarray(by_seed[seed % 4])[rows], None

    three = refit.repeated_crossfit(stub, y, seeds=3, first_seed=0, resamples=5, confidence=0.9)["kappa"]
    assert three.by_seed == (1.0, 0.0, 0.5) and three.estimate == 0.5  # median of 1, 0, 0.5
    four = refit.repeated_crossfit(stub, y, seeds=4, first_seed=0, resamples=5, confidence=0.9)["kappa"]
    assert four.estimate == 0.25  # even count: the mean of the middle two (0 and 0.5)
    shifted = refit.repeated_crossfit(stub, y, seeds=2, first_seed=2, resamples=5, confidence=0.9)["kappa"]
    assert shifted.by_seed == (0.5, -1.0) and shifted.estimate == -0.25 and shifted.first_seed == 2


def test_the_median_over_seeds_of_a_real_judge_matches_sklearn_seed_by_seed():
    s, y = _noisy(n=14)
    got = refit.repeated_crossfit(refit.judge_fitter(s, y, k=3), y, seeds=5, first_seed=7, resamples=10,
                                  confidence=0.95)
    expected = [cohen_kappa_score(y, crossfit_verdicts(s, y, k=3, seed=seed).verdicts) for seed in range(7, 12)]
    assert got["kappa"].by_seed == pytest.approx(expected, abs=1e-12)
    assert got["kappa"].estimate == pytest.approx(statistics.median(expected), abs=1e-12)
    assert got["auc"] is None  # the judge's score is its own: no fitted AUC


def test_the_refit_interval_holds_the_estimate_and_is_wider_than_holding_thresholds_fixed():
    s, y = _noisy()
    one = crossfit_verdicts(s, y, k=5, seed=0)
    assert len(set(one.thresholds)) > 1  # the fixture's thresholds move with the folds
    fixed = agreement(list(one.verdicts), list(y), n_resamples=400, seed=0, confidence=0.9).kappa
    got = refit.repeated_crossfit(refit.judge_fitter(s, y, k=5), y, seeds=21, first_seed=0, resamples=400,
                                  confidence=0.9)["kappa"]
    assert got.low <= got.estimate <= got.high
    assert got.high - got.low >= fixed.interval.high - fixed.interval.low
    assert got.by_seed[0] == pytest.approx(fixed.estimate, abs=1e-12)  # seed 0 is the one-seed cross-fit
    again = refit.repeated_crossfit(refit.judge_fitter(s, y, k=5), y, seeds=21, first_seed=0, resamples=400,
                                    confidence=0.9)["kappa"]
    assert again == got  # seeded: the same figures every run


def test_the_combined_judge_refits_its_model_and_reports_its_out_of_fold_auc():
    x, y = _two_scores()
    one = crossfit_combined(x, y, k=5, seed=0)
    fixed = agreement(list(one.verdicts), list(y), n_resamples=200, seed=0, confidence=0.9).kappa
    got = refit.repeated_crossfit(refit.combined_fitter(x, y, k=5), y, seeds=9, first_seed=0, resamples=200,
                                  confidence=0.9)
    k, a = got["kappa"], got["auc"]
    assert k.low <= k.estimate <= k.high and k.high - k.low >= fixed.interval.high - fixed.interval.low
    assert a is not None and a.low <= a.estimate <= a.high and len(a.by_seed) == 9
    assert k.as_dict()["min"] == min(k.by_seed) and k.as_dict()["seeds"] == 9


def test_copies_of_an_answer_in_a_resample_share_a_fold():
    rows = np.array([3, 1, 3, 0, 2, 1, 3, 4])
    folds = group_folds(rows, rows.size, 3, seed=0)
    for r in set(rows.tolist()):
        assert len(set(folds[rows == r].tolist())) == 1
    assert (group_folds(None, 9, 3, seed=4) == group_folds(np.arange(9), 9, 3, seed=4)).all()


def _resamples(n, count, seed=5):
    return np.random.default_rng(seed).integers(0, n, size=(count, n))


@pytest.mark.parametrize("kind", ["judge", "combined"])
def test_repeated_cross_fitting_never_judges_an_answer_by_its_own_grade(kind):
    """Flip each answer's grade in turn: over every fold seed of the repetition, and in bootstrap
    resamples that copy it, the verdict (and, for the combined judge, the score) of every copy of
    that answer stays the same; only thresholds and models it trains may move."""
    if kind == "judge":
        s, y = _noisy(n=24)
        make = lambda labels: refit.judge_fitter(s, labels, k=4)  # noqa: E731
    else:
        x, y = _two_scores(n=24)
        make = lambda labels: refit.combined_fitter(x, labels, k=4)  # noqa: E731
    base = make(y)
    plans = [(np.arange(y.size), seed) for seed in range(4)]  # the repetition over seeds
    plans += [(rows, 100 + b) for b, rows in enumerate(_resamples(y.size, 3))]  # refit draws, copies included
    before = [base(rows, seed) for rows, seed in plans]
    moved = 0
    for i in range(y.size):
        y2 = y.copy()
        y2[i] = not y2[i]
        flipped = make(y2)
        for (rows, seed), (v0, s0) in zip(plans, before):
            v1, s1 = flipped(rows, seed)
            mine = rows == i
            assert (v1[mine] == v0[mine]).all(), (i, seed)
            if s0 is not None:
                assert (s1[mine] == s0[mine]).all(), (i, seed)
            moved += int((v1 != v0).any())
    assert moved > 0  # the flips do reach other answers' verdicts: the check is not vacuous


@pytest.mark.bad_input
def test_one_grade_only_is_refused():
    with pytest.raises(ValueError, match="both grades"):
        refit.repeated_crossfit(refit.judge_fitter([0.1, 0.2], [True, True], k=2), [True, True], seeds=2,
                                first_seed=0, resamples=2, confidence=0.9)
