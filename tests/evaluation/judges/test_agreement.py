"""Agreement of a judge with the hand grades (rag_ablation.evaluation.judges.agreement).

Expected values come from scikit-learn (accuracy, Cohen's kappa), from
rag_ablation.evaluation.statistics.inference (bootstrap) or are written out by hand.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from json_ready import plain
from sklearn.metrics import accuracy_score, cohen_kappa_score

from rag_ablation.evaluation.judges.agreement import agreement, confusion, disagreements
from rag_ablation.evaluation.statistics.inference import bootstrap_mean_ci

B = 2_000  # bootstrap resamples: enough for stable tests, fast

T, F, N = True, False, None

# A tiny fixture, counted by hand:
#   judge  T T T F F F T N N F
#   human  T T F T F F T T F F
#   cell   tp tp fp fn tn tn tp inv inv tn  -> tp 3, fp 1, fn 1, tn 3, invalid 2 (1 on a correct answer)
JUDGE = [T, T, T, F, F, F, T, N, N, F]
HUMAN = [T, T, F, T, F, F, T, T, F, F]


def random_pairs(n: int, seed: int, *, p_invalid: float = 0.0) -> tuple[list, list]:
    """n (judge, human) pairs: human ~ Bernoulli(0.6), judge agrees 80% of the time."""
    rng = np.random.default_rng(seed)
    human = rng.random(n) < 0.6
    judge = np.where(rng.random(n) < 0.8, human, ~human)
    invalid = rng.random(n) < p_invalid
    return [None if bad else bool(v) for v, bad in zip(judge, invalid)], [bool(v) for v in human]


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


# ------------------------------------------------------------------------- bad input


@pytest.mark.bad_input
def test_unequal_lengths_are_named():
    with pytest.raises(ValueError, match="judge has 3 verdicts but human has 2"):
        confusion([T, F, T], [T, F])
    with pytest.raises(ValueError, match="judge has 2 verdicts but human has 3"):
        agreement([T, F], [T, F, T], n_resamples=B)
    with pytest.raises(ValueError, match="keys has 2 entries but judge and human have 3"):
        disagreements(["a", "b"], [T, F, T], [T, F, T])


@pytest.mark.bad_input
def test_empty_input_is_refused():
    with pytest.raises(ValueError, match="judge is empty"):
        confusion([], [])
    with pytest.raises(ValueError, match="judge is empty"):
        agreement([], [], n_resamples=B)


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


@pytest.mark.bad_input
def test_a_hand_grade_is_never_invalid():
    with pytest.raises(ValueError,
                       match=r"human\[1\] is None \(NoneType\); expected True or False \(a hand grade is never invalid\)"):
        confusion([T, T], [T, None])


@pytest.mark.bad_input
def test_other_bad_arguments():
    with pytest.raises(ValueError, match="confidence must be strictly between 0 and 1; got 1.0"):
        agreement([T], [T], n_resamples=B, confidence=1.0)
    with pytest.raises(ValueError, match="n_resamples must be >= 1; got 0"):
        agreement([T], [T], n_resamples=0)
    with pytest.raises(ValueError, match="keys has the key 'a' more than once"):
        disagreements(["a", "a"], [T, F], [T, F])
