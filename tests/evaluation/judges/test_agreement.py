"""Judge calibration statistics (rag_ablation.evaluation.judges.calibration).

Expected values come from scikit-learn (accuracy, Cohen's kappa), from ppi_py called directly on
the same arrays, from rag_ablation.evaluation.statistics.inference (Wilson, bootstrap) or are written out by hand.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import accuracy_score, cohen_kappa_score

from rag_ablation.evaluation.judges.calibration import (
    CANARY_EXPECT_ACCEPT,
    agreement,
    canary_rates,
    confusion,
    disagreements,
    hand_only,
    judge_only,
    ppi_accuracy,
)
from rag_ablation.evaluation.statistics.inference import bootstrap_mean_ci, wilson_interval

with warnings.catch_warnings():  # importing ppi_py silences every warning otherwise
    import ppi_py

B = 2_000  # bootstrap resamples: enough for stable tests, fast

T, F, N = True, False, None

# A tiny fixture, counted by hand:
#   judge  T T T F F F T N N F
#   human  T T F T F F T T F F
#   cell   tp tp fp fn tn tn tp inv inv tn  -> tp 3, fp 1, fn 1, tn 3, invalid 2 (1 on a correct answer)
JUDGE = [T, T, T, F, F, F, T, N, N, F]
HUMAN = [T, T, F, T, F, F, T, T, F, F]


def plain(obj) -> bool:
    """True when ``obj`` is built only of JSON-ready Python values (no numpy scalars, no tuples)."""
    if obj is None or type(obj) in (bool, int, float, str):
        return not (type(obj) is float and math.isnan(obj))
    if type(obj) is list:
        return all(plain(v) for v in obj)
    if type(obj) is dict:
        return all(type(k) is str and plain(v) for k, v in obj.items())
    return False


def random_pairs(n: int, seed: int, *, p_invalid: float = 0.0) -> tuple[list, list]:
    """n (judge, human) pairs: human ~ Bernoulli(0.6), judge agrees 80% of the time."""
    rng = np.random.default_rng(seed)
    human = rng.random(n) < 0.6
    judge = np.where(rng.random(n) < 0.8, human, ~human)
    invalid = rng.random(n) < p_invalid
    return [None if bad else bool(v) for v, bad in zip(judge, invalid)], [bool(v) for v in human]


def labeled_unlabeled(n: int, big_n: int, seed: int, judge: str, p: float = 0.7):
    """Hand grades on n answers, and a judge on those and on big_n others."""
    rng = np.random.default_rng(seed)
    y, y_unlabeled = rng.random(n) < p, rng.random(big_n) < p
    if judge == "perfect":
        jl, ju = y.copy(), y_unlabeled.copy()
    elif judge == "uncorrelated":
        jl, ju = rng.random(n) < 0.6, rng.random(big_n) < 0.6
    else:  # noisy: flips 15% of the truth
        jl, ju = y ^ (rng.random(n) < 0.15), y_unlabeled ^ (rng.random(big_n) < 0.15)
    return [bool(v) for v in y], [bool(v) for v in jl], [bool(v) for v in ju]


# ----------------------------------------------------------------------- confusion


def test_confusion_counts_each_cell_and_the_invalid_verdicts():
    table = confusion(JUDGE, HUMAN)
    assert (table.tp, table.fp, table.fn, table.tn) == (3, 1, 1, 3)
    assert (table.invalid, table.invalid_on_correct) == (2, 1)
    assert (table.n, table.total) == (8, 10)
    assert table.as_dict() == {
        "tp": 3, "fp": 1, "fn": 1, "tn": 3, "n": 8, "invalid": 2, "invalid_on_correct": 1, "total": 10,
    }


def test_numpy_bools_are_verdicts():
    table = confusion(np.array([True, False]), np.array([True, True]))
    assert (table.tp, table.fn) == (1, 1)


# ----------------------------------------------------------------------- agreement


def test_rates_on_the_tiny_fixture_are_the_hand_computed_ones():
    result = agreement(JUDGE, HUMAN, n_resamples=B, seed=3)
    assert (result.n, result.invalid) == (8, 2)
    assert result.accuracy.estimate == pytest.approx(6 / 8)
    assert result.tpr.estimate == pytest.approx(3 / 4)  # tp / (tp + fn)
    assert result.tnr.estimate == pytest.approx(3 / 4)  # tn / (tn + fp)
    # p_o = 6/8; p_e = (4*4 + 4*4) / 64 = 1/2; kappa = (3/4 - 1/2) / (1 - 1/2)
    assert result.kappa.estimate == pytest.approx(0.5)
    assert [result.accuracy.interval.n, result.tpr.interval.n, result.tnr.interval.n, result.kappa.interval.n] == [
        8, 4, 4, 8,
    ]


def test_rates_on_an_unbalanced_fixture():
    #  judge T T T T T F F ; human T T T F F T F -> tp 3, fp 2, fn 1, tn 1
    result = agreement([T, T, T, T, T, F, F], [T, T, T, F, F, T, F], n_resamples=B, seed=0)
    assert result.tpr.estimate == pytest.approx(3 / 4)
    assert result.tnr.estimate == pytest.approx(1 / 3)
    p_o, p_e = 4 / 7, (5 * 4 + 2 * 3) / 49
    assert result.kappa.estimate == pytest.approx((p_o - p_e) / (1 - p_e))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_accuracy_and_kappa_agree_with_sklearn(seed):
    judge, human = random_pairs(80, seed, p_invalid=0.1)
    result = agreement(judge, human, n_resamples=B, seed=seed)
    valid = [(j, h) for j, h in zip(judge, human) if j is not None]
    j, h = zip(*valid)
    assert result.n == len(valid)
    assert result.invalid == len(judge) - len(valid)
    assert result.accuracy.estimate == pytest.approx(accuracy_score(h, j), abs=1e-12)
    assert result.kappa.estimate == pytest.approx(cohen_kappa_score(h, j), abs=1e-12)


def test_accuracy_interval_is_the_stats_bootstrap_of_the_agreement_values():
    # Same seed, same draws: the accuracy resamples are bootstrap_mean_ci's resampled means.
    judge, human = random_pairs(60, 7, p_invalid=0.1)
    result = agreement(judge, human, n_resamples=B, seed=5)
    agree = [float(j == h) for j, h in zip(judge, human) if j is not None]
    expected = bootstrap_mean_ci(agree, n_resamples=B, seed=5, method="percentile")
    assert result.accuracy.interval.low == pytest.approx(expected.low, abs=1e-12)
    assert result.accuracy.interval.high == pytest.approx(expected.high, abs=1e-12)
    assert result.accuracy.dropped == 0


def test_intervals_hold_the_estimates_and_are_reproducible():
    judge, human = random_pairs(50, 4)
    first = agreement(judge, human, n_resamples=B, seed=9)
    again = agreement(judge, human, n_resamples=B, seed=9)
    other = agreement(judge, human, n_resamples=B, seed=10)
    assert first == again
    assert first.kappa.interval != other.kappa.interval
    for stat in first.statistics().values():
        assert stat.interval.low <= stat.estimate <= stat.interval.high
        assert stat.interval.method == "percentile"
    assert 0.0 <= first.tpr.interval.low and first.tpr.interval.high <= 1.0


def test_a_resample_without_a_human_incorrect_pair_is_dropped_from_tnr_only():
    # One human-incorrect answer among 20: about (19/20)^20 = 36% of resamples miss it.
    human = [T] * 19 + [F]
    judge = [T] * 18 + [F, F]
    result = agreement(judge, human, n_resamples=B, seed=1)
    indices = np.random.default_rng(1).integers(0, 20, size=(B, 20))  # the same draws
    missed = int(np.count_nonzero(~(indices == 19).any(axis=1)))
    assert result.tnr.dropped == missed
    assert 0.25 * B < missed < 0.5 * B
    assert result.tpr.dropped == result.accuracy.dropped == 0
    # Kappa is undefined when the resample holds only the human-correct pairs the judge accepted
    # (both raters constant, same verdict); that is rarer than missing pair 19.
    assert 0 < result.kappa.dropped < missed
    assert result.tnr.estimate == 1.0 and result.tnr.interval.low == 1.0


def test_kappa_is_none_when_both_raters_give_every_answer_the_same_verdict():
    result = agreement([T, T, T], [T, T, T], n_resamples=B, seed=0)
    assert result.accuracy.estimate == 1.0
    assert result.kappa.estimate is None and result.kappa.interval is None
    assert "expected agreement is 1" in result.kappa.reason
    assert result.kappa.dropped == B
    assert result.tnr.estimate is None and "TNR is 0/0" in result.tnr.reason
    assert result.tpr.estimate == 1.0 and result.tpr.reason is None


@pytest.mark.parametrize(
    ("judge", "human"),
    [([T, T, T, T], [T, F, T, F]), ([T, F, T, F], [F, F, F, F]), ([T, T, T], [F, F, F])],
    ids=["judge-constant", "human-constant", "both-constant-opposite"],
)
def test_kappa_is_zero_when_agreement_is_exactly_chance(judge, human):
    result = agreement(judge, human, n_resamples=B, seed=0)
    assert result.kappa.estimate == 0.0
    assert cohen_kappa_score(human, judge) == 0.0


def test_every_statistic_is_none_when_every_judge_verdict_is_invalid():
    result = agreement([N, N, N], [T, F, T], n_resamples=B, seed=0)
    assert (result.n, result.invalid) == (0, 3)
    for stat in result.statistics().values():
        assert stat.estimate is None and stat.interval is None
        assert stat.dropped == B
        assert stat.reason == "no answer has a valid judge verdict"


def test_agreement_as_dict_is_json_ready():
    out = agreement(JUDGE, HUMAN, n_resamples=B, seed=0).as_dict()
    assert plain(out)
    assert out["n"] == 8 and out["invalid"] == 2 and out["confusion"]["tp"] == 3
    assert set(out["kappa"]) == {"estimate", "low", "high", "n", "dropped", "n_resamples", "reason"}
    undefined = agreement([T, T], [T, T], n_resamples=B, seed=0).as_dict()
    assert plain(undefined) and undefined["kappa"]["estimate"] is None
    json.dumps(out)


# ------------------------------------------------------------------- disagreements


def test_disagreements_name_the_keys_sorted():
    keys = [("dense", f"q{i}") for i in (9, 8, 7, 6, 5, 4, 3, 2, 1, 0)]
    result = disagreements(keys, JUDGE, HUMAN)
    assert result.false_accepts == (("dense", "q7"),)  # position 2
    assert result.false_rejects == (("dense", "q6"),)  # position 3
    assert result.invalid == (("dense", "q1"), ("dense", "q2"))  # positions 7 and 8
    out = result.as_dict()
    assert plain(out)
    assert out["invalid"] == [["dense", "q1"], ["dense", "q2"]]


def test_disagreements_with_string_ids():
    result = disagreements(["b", "a", "c"], [F, F, T], [T, T, T])
    assert result.false_rejects == ("a", "b") and result.false_accepts == () and result.invalid == ()


# --------------------------------------------------------------- accuracy three ways


def test_hand_only_is_the_wilson_interval_of_the_grades():
    result = hand_only([T, T, F, T, F], confidence=0.9)
    expected = wilson_interval(3, 5, confidence=0.9)
    assert result.interval == expected
    assert (result.source, result.estimate, result.n, result.invalid) == ("hand", 0.6, 5, 0)
    assert plain(result.as_dict())


def test_judge_only_leaves_invalid_verdicts_out_and_counts_them():
    result = judge_only([T, N, T, F, N, F, T])
    assert result.estimate == pytest.approx(3 / 5)
    assert (result.n, result.invalid) == (5, 2)
    assert result.interval == wilson_interval(3, 5)
    nothing = judge_only([N, N])
    assert (nothing.estimate, nothing.interval, nothing.n, nothing.invalid) == (None, None, 0, 2)
    assert plain(nothing.as_dict())


def direct_ppi(human, judge_labeled, judge_unlabeled, *, alpha, lam=None):
    """ppi_py itself on the arrays, an invalid judge verdict counted as 0."""
    y = np.array(human, dtype=float)
    yhat = np.array([v is True for v in judge_labeled], dtype=float)
    yhat_u = np.array([v is True for v in judge_unlabeled], dtype=float)
    low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=alpha, lam=lam)
    estimate = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam)
    return float(np.ravel(estimate)[0]), float(np.ravel(low)[0]), float(np.ravel(high)[0])


@pytest.mark.parametrize("kind", ["perfect", "noisy", "uncorrelated"])
def test_ppi_agrees_with_a_direct_ppi_py_call(kind):
    human, jl, ju = labeled_unlabeled(40, 400, 3, kind)
    jl[0], ju[5], ju[6] = None, None, None  # invalid verdicts count as 0 on both sides
    result = ppi_accuracy(human, jl, ju, confidence=0.9)
    estimate, low, high = direct_ppi(human, jl, ju, alpha=0.1)
    assert result.estimate == pytest.approx(estimate, abs=1e-12)
    assert (result.interval.low, result.interval.high) == pytest.approx((low, high), abs=1e-12)
    assert (result.invalid_labeled, result.invalid_unlabeled) == (1, 2)
    assert (result.n_labeled, result.n_unlabeled, result.interval.n) == (40, 400, 440)
    # The reported lambda is the one ppi_py tuned: fixing it reproduces the interval.
    assert 0.0 <= result.lam <= 1.0
    fixed = direct_ppi(human, jl, ju, alpha=0.1, lam=result.lam)
    assert fixed == pytest.approx((estimate, low, high), abs=1e-9)


def test_classical_interval_is_the_hand_computed_clt_interval():
    human, jl, ju = labeled_unlabeled(30, 300, 8, "noisy")
    result = ppi_accuracy(human, jl, ju, confidence=0.95)
    p = sum(human) / 30
    half = norm.ppf(0.975) * math.sqrt(p * (1 - p) / 30)  # sd of 0/1 values with divisor n
    assert result.classical.estimate == pytest.approx(p)
    assert (result.classical.low, result.classical.high) == pytest.approx((p - half, p + half), abs=1e-12)
    low, high = ppi_py.classical_mean_ci(np.array(human, dtype=float), alpha=0.05)
    assert (result.classical.low, result.classical.high) == pytest.approx((float(low), float(high)), abs=1e-12)
    width_ratio = (result.classical.high - result.classical.low) / (result.interval.high - result.interval.low)
    assert result.n_eff == pytest.approx(30 * width_ratio**2)
    assert result.gain == pytest.approx(result.n_eff / 30)


def test_an_invalid_judge_verdict_counts_as_incorrect():
    human, jl, ju = labeled_unlabeled(40, 200, 4, "noisy")
    jl_invalid = [None if not v else v for v in jl[:20]] + jl[20:]
    ju_invalid = [None if not v else v for v in ju[:50]] + ju[50:]
    with_none = ppi_accuracy(human, jl_invalid, ju_invalid)
    with_false = ppi_accuracy(human, [bool(v) for v in jl_invalid], [bool(v) for v in ju_invalid])
    assert with_none.invalid_labeled == jl[:20].count(False) > 0
    assert with_none.invalid_unlabeled == ju[:50].count(False) > 0
    assert with_false.invalid_labeled == with_false.invalid_unlabeled == 0
    assert (with_none.estimate, with_none.interval.low, with_none.interval.high, with_none.lam) == (
        with_false.estimate, with_false.interval.low, with_false.interval.high, with_false.lam,
    )


def test_a_perfect_judge_narrows_the_interval():
    human, jl, ju = labeled_unlabeled(50, 500, 2, "perfect")
    result = ppi_accuracy(human, jl, ju)
    assert result.interval.high - result.interval.low < result.classical.high - result.classical.low
    assert result.n_eff > 3 * 50 and result.gain > 3  # about (n + N) / n = 11 at best
    assert result.interval.low <= result.estimate <= result.interval.high


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_an_uncorrelated_judge_gains_about_nothing(seed):
    human, jl, ju = labeled_unlabeled(60, 600, seed, "uncorrelated")
    result = ppi_accuracy(human, jl, ju)
    assert 0.95 <= result.gain <= 1.15
    assert result.lam < 0.3


def test_identical_hand_grades_give_no_nan():
    _, jl, ju = labeled_unlabeled(20, 100, 5, "uncorrelated")
    result = ppi_accuracy([True] * 20, jl, ju)
    assert result.lam == 0.0
    assert result.estimate == 1.0
    assert (result.interval.low, result.interval.high) == (1.0, 1.0)
    assert (result.classical.low, result.classical.high) == (1.0, 1.0)
    assert result.n_eff is None and result.gain is None
    assert "all hand grades are identical" in result.note
    assert plain(result.as_dict())


def test_a_constant_judge_gives_the_hand_grades_alone():
    human, _, _ = labeled_unlabeled(20, 100, 6, "noisy")
    result = ppi_accuracy(human, [True] * 20, [True] * 100)
    assert result.lam == 0.0
    assert (result.interval.low, result.interval.high) == pytest.approx(
        (result.classical.low, result.classical.high), abs=1e-12
    )
    assert result.gain == pytest.approx(1.0)
    assert "same verdict" in result.note
    assert plain(result.as_dict())


def test_a_judge_whose_every_verdict_is_invalid_gives_no_nan():
    # The judge is then constant 0 everywhere: ppi_py's tuned lambda is 0/0 and its interval NaN.
    human = [True, False, True, False]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert all(math.isnan(v) for v in direct_ppi(human, [None] * 4, [None] * 8, alpha=0.05))
    result = ppi_accuracy(human, [None] * 4, [None] * 8)
    assert (result.estimate, result.lam, result.gain) == (0.5, 0.0, 1.0)
    assert (result.invalid_labeled, result.invalid_unlabeled) == (4, 8)
    assert (result.interval.low, result.interval.high) == (result.classical.low, result.classical.high)


def test_ppi_as_dict_is_json_ready():
    out = ppi_accuracy(*labeled_unlabeled(20, 60, 1, "noisy")).as_dict()
    assert plain(out)
    assert out["classical"]["method"] == "clt" and out["note"] is None
    json.dumps(out)


def test_ppi_leaves_the_warning_filters_alone():
    # A fresh interpreter: importing ppi_py there would run warnings.simplefilter("ignore").
    code = (
        "import warnings\n"
        "from rag_ablation.evaluation.judges.calibration import ppi_accuracy\n"
        "before = list(warnings.filters)\n"
        "ppi_accuracy([True, False, True], [True, False, False], [True, None, False])\n"
        "import sys; assert 'ppi_py' in sys.modules\n"
        "assert warnings.filters == before, warnings.filters[:2]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------------ canaries


def test_canary_rates_with_expectations():
    rates = canary_rates(
        {
            "dummy_yes": [T, F, F, F, N],
            "paraphrased_reference": [T, T, F, T],
            "empty": [N, N],
        }
    )
    assert list(rates) == ["dummy_yes", "paraphrased_reference", "empty"]
    dummy = rates["dummy_yes"]
    assert (dummy.expected_accept, dummy.accepted, dummy.accepted_count, dummy.n, dummy.invalid) == (
        False, 0.25, 1, 4, 1,
    )
    assert dummy.wrong == 0.25
    assert dummy.interval == wilson_interval(1, 4)
    para = rates["paraphrased_reference"]
    assert (para.expected_accept, para.accepted, para.wrong) == (True, 0.75, pytest.approx(0.25))
    empty = rates["empty"]
    assert (empty.accepted, empty.interval, empty.wrong, empty.n, empty.invalid) == (None, None, None, 0, 2)
    assert all(plain(rate.as_dict()) for rate in rates.values())


def test_default_canary_expectations():
    assert {kind for kind, accept in CANARY_EXPECT_ACCEPT.items() if accept} == {
        "padded_reference", "paraphrased_reference",
    }
    assert {"dummy_yes", "dummy_sure", "question_repeated", "empty"} <= set(CANARY_EXPECT_ACCEPT)


def test_other_canary_kinds_need_an_expectation():
    rates = canary_rates({"wrong_number": [F, F, T]}, expect_accept={"wrong_number": False})
    assert rates["wrong_number"].accepted == pytest.approx(1 / 3)


# ------------------------------------------------------------------------- bad input


@pytest.mark.bad_input
def test_unequal_lengths_are_named():
    with pytest.raises(ValueError, match="judge has 3 verdicts but human has 2"):
        confusion([T, F, T], [T, F])
    with pytest.raises(ValueError, match="judge has 2 verdicts but human has 3"):
        agreement([T, F], [T, F, T], n_resamples=B)
    with pytest.raises(ValueError, match="human_labeled has 3 verdicts but judge_labeled has 2"):
        ppi_accuracy([T, F, T], [T, F], [T, F])
    with pytest.raises(ValueError, match="keys has 2 entries but judge and human have 3"):
        disagreements(["a", "b"], [T, F, T], [T, F, T])


@pytest.mark.bad_input
def test_empty_input_is_refused():
    with pytest.raises(ValueError, match="judge is empty"):
        confusion([], [])
    with pytest.raises(ValueError, match="judge is empty"):
        agreement([], [], n_resamples=B)
    with pytest.raises(ValueError, match="human is empty"):
        hand_only([])
    with pytest.raises(ValueError, match="judge_all is empty"):
        judge_only([])
    with pytest.raises(ValueError, match="verdicts is empty"):
        canary_rates({})
    with pytest.raises(ValueError, match=r"verdicts\['empty'\] is empty"):
        canary_rates({"empty": []})


@pytest.mark.bad_input
@pytest.mark.parametrize(
    ("judge", "found"),
    [([T, 1], r"judge\[1\] is 1 \(int\)"), ([T, "correct"], r"judge\[1\] is 'correct' \(str\)"),
     ([float("nan"), T], r"judge\[0\] is nan \(float\)")],
    ids=["int", "str", "nan"],
)
def test_a_judge_verdict_that_is_not_a_bool_or_none(judge, found):
    with pytest.raises(ValueError, match=found + r"; expected True, False or None \(invalid\)"):
        agreement(judge, [T, T], n_resamples=B)
    with pytest.raises(ValueError, match="judge_all" + found.removeprefix("judge")):
        judge_only(judge)


@pytest.mark.bad_input
def test_a_hand_grade_is_never_invalid():
    with pytest.raises(ValueError,
                       match=r"human\[1\] is None \(NoneType\); expected True or False \(a hand grade is never invalid\)"):
        confusion([T, T], [T, None])
    with pytest.raises(ValueError, match=r"human_labeled\[0\] is 0 \(int\)"):
        ppi_accuracy([0, 1], [T, F], [T, F])
    with pytest.raises(ValueError, match="must be a sequence of verdicts; got str"):
        hand_only("TF")


@pytest.mark.bad_input
def test_ppi_needs_two_labeled_and_two_unlabeled_answers():
    with pytest.raises(ValueError, match="human_labeled has 1 hand grade; PPI needs at least 2 labeled answers"):
        ppi_accuracy([T], [T], [T, F, T])
    with pytest.raises(ValueError, match="judge_unlabeled has 1 verdict; PPI needs at least 2 unlabeled"):
        ppi_accuracy([T, F], [T, F], [T])


@pytest.mark.bad_input
def test_other_bad_arguments():
    with pytest.raises(ValueError, match="confidence must be strictly between 0 and 1; got 1.0"):
        agreement([T], [T], n_resamples=B, confidence=1.0)
    with pytest.raises(ValueError, match="n_resamples must be >= 1; got 0"):
        agreement([T], [T], n_resamples=0)
    with pytest.raises(ValueError, match="confidence must be strictly between 0 and 1; got 0"):
        ppi_accuracy([T, F], [T, F], [T, F], confidence=0)
    with pytest.raises(ValueError, match=r"canary kind 'odd' has no expectation; known kinds are \["):
        canary_rates({"odd": [T]})
    with pytest.raises(ValueError, match="keys has the key 'a' more than once"):
        disagreements(["a", "a"], [T, F], [T, F])
