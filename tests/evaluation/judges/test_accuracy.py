"""Accuracy three ways: hand grades, the judge alone, PPI++ (rag_ablation.evaluation.judges.accuracy).

Expected values come from ppi_py called directly on the same arrays, from
rag_ablation.evaluation.statistics.inference (Wilson) or are written out by hand.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from json_ready import plain
from scipy.stats import norm

from rag_ablation.evaluation.judges.accuracy import hand_only, judge_only, ppi_accuracy
from rag_ablation.evaluation.statistics.inference import wilson_interval

with warnings.catch_warnings():  # importing ppi_py silences every warning otherwise
    import ppi_py

T, F, N = True, False, None


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
        "from rag_ablation.evaluation.judges.accuracy import ppi_accuracy\n"
        "before = list(warnings.filters)\n"
        "ppi_accuracy([True, False, True], [True, False, False], [True, None, False])\n"
        "import sys; assert 'ppi_py' in sys.modules\n"
        "assert warnings.filters == before, warnings.filters[:2]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------------- bad input


@pytest.mark.bad_input
def test_unequal_lengths_are_named():
    with pytest.raises(ValueError, match="human_labeled has 3 verdicts but judge_labeled has 2"):
        ppi_accuracy([T, F, T], [T, F], [T, F])


@pytest.mark.bad_input
def test_empty_input_is_refused():
    with pytest.raises(ValueError, match="human is empty"):
        hand_only([])
    with pytest.raises(ValueError, match="judge_all is empty"):
        judge_only([])


@pytest.mark.bad_input
@pytest.mark.parametrize(
    ("judge", "found"),
    [([T, 1], r"judge_all\[1\] is 1 \(int\)"), ([T, "correct"], r"judge_all\[1\] is 'correct' \(str\)"),
     ([float("nan"), T], r"judge_all\[0\] is nan \(float\)")],
    ids=["int", "str", "nan"],
)
def test_a_judge_verdict_that_is_not_a_bool_or_none(judge, found):
    with pytest.raises(ValueError, match=found + r"; expected True, False or None \(invalid\)"):
        judge_only(judge)


@pytest.mark.bad_input
def test_a_hand_grade_is_never_invalid():
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
    with pytest.raises(ValueError, match="confidence must be strictly between 0 and 1; got 0"):
        ppi_accuracy([T, F], [T, F], [T, F], confidence=0)


def test_ppi_on_scores_equals_ppi_py_with_the_scores_as_predictions():
    import numpy as np
    import ppi_py

    from rag_ablation.evaluation.judges.accuracy import ppi_accuracy_scores

    rng = np.random.default_rng(0)
    y = rng.random(40) < 0.6
    s = np.clip(0.4 * y + rng.normal(0.3, 0.2, 40), 0, 1)
    su = rng.random(300)
    out = ppi_accuracy_scores(list(y), list(s), list(su), confidence=0.9)
    low, high = ppi_py.ppi_mean_ci(y.astype(float), s, su, alpha=0.1)
    assert (out.interval.low, out.interval.high) == pytest.approx((float(low[0]), float(high[0])))
    assert out.interval.method == "ppi++"


def test_crossppi_equals_ppi_py():
    import numpy as np
    import ppi_py

    from rag_ablation.evaluation.judges.accuracy import crossppi_accuracy

    rng = np.random.default_rng(1)
    y = rng.random(30) < 0.5
    s = rng.random(30)
    su = rng.random((100, 5))
    out = crossppi_accuracy(list(y), list(s), su, confidence=0.95)
    low, high = ppi_py.crossppi_mean_ci(y.astype(float), s, su, alpha=0.05)
    assert (out.interval.low, out.interval.high) == pytest.approx((float(np.ravel(low)[0]), float(np.ravel(high)[0])))
    assert out.lam == 1.0


def test_ppi_on_scores_covers_the_truth_for_simulated_judges_of_known_quality():
    """A judge whose score is informative (AUC about 0.85) and one that is noise: both PPI++
    intervals cover the true accuracy about 95% of the time; the informative one is narrower than
    the hand grades alone."""
    import numpy as np

    from rag_ablation.evaluation.judges.accuracy import ppi_accuracy_scores

    rng = np.random.default_rng(7)
    truth_p = 0.6
    for informative in (True, False):
        covers, gains = 0, []
        for _ in range(300):
            y_all = rng.random(400) < truth_p
            score = np.clip((0.45 * y_all if informative else 0) + rng.normal(0.3, 0.2, 400), 0, 1)
            lab = rng.choice(400, 40, replace=False)
            mask = np.zeros(400, bool)
            mask[lab] = True
            p = ppi_accuracy_scores(list(y_all[mask]), list(score[mask]), list(score[~mask]))
            covers += p.interval.low <= y_all.mean() <= p.interval.high
            gains.append(p.gain or 1.0)
        assert covers / 300 >= 0.91
        assert (np.median(gains) > 1.5) if informative else (np.median(gains) < 1.1)


def test_ppi_usefulness_compares_the_correlation_with_one_over_sqrt_n_minus_2():
    from rag_ablation.evaluation.judges.accuracy import ppi_usefulness

    human, verdicts = [True, True, False, False], [1.0, 0.0, 0.0, 0.0]  # r = 0.125 / (0.5 * sqrt(0.1875)) = 1/sqrt(3)
    many = ppi_usefulness(human, verdicts, 40)
    assert many.correlation == pytest.approx(1 / np.sqrt(3)) and many.level == pytest.approx(1 / np.sqrt(38))
    assert many.clears is True and many.words() == "yes: |r| 0.58 > 1/sqrt(n-2) = 0.16 at n = 40"
    few = ppi_usefulness(human, verdicts, 4)  # level 1/sqrt(2) = 0.71
    assert few.clears is False
    assert few.words() == ("no: |r| 0.58 <= 1/sqrt(n-2) = 0.71 at n = 4; PPI++ is not expected to beat the hand "
                           "grades alone")
    flat = ppi_usefulness(human, [1.0] * 4, 40)  # a judge that accepts everything carries nothing
    assert flat.correlation is None and flat.clears is False
    assert ppi_usefulness(human, verdicts, 2).as_dict()["words"] == "unknown: 2 hand grades are too few for the rule"
    with pytest.raises(ValueError, match="equal length"):
        ppi_usefulness(human, [1.0], 40)
