"""Intervals, paired tests, power and subsampling over per-question results (rag_ablation.evaluation.statistics.inference).

Expected values come from scipy (bootstrap, binomtest, permutation_test), from closed forms
(hypergeometric probabilities, the design effect of perfectly homogeneous clusters) or are
written out by hand.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from rag_ablation.evaluation.statistics import inference as stats
from rag_ablation.evaluation.statistics.inference import (
    INTERVAL_FIELDS,
    MAX_CELLS,
    Interval,
    PairedCounts,
    bootstrap_mean_ci,
    check_count,
    check_open_unit,
    design_effect,
    holm,
    interval_dict,
    min_detectable_effect,
    min_detectable_effect_sd,
    paired_bootstrap_ci,
    paired_counts,
    resample_blocks,
    sign_flip_p,
    sign_test_p,
    subsample,
    wilson_interval,
)

RR_LEVELS = [0.0, 1.0, 1 / 2, 1 / 3, 1 / 5, 1 / 10]
SCIPY_METHOD = {"percentile": "percentile", "bca": "BCa"}


def hits(n: int = 150, p: float = 0.7, seed: int = 11) -> np.ndarray:
    """n Bernoulli(p) hit@k values as 0.0/1.0."""
    return (np.random.default_rng(seed).random(n) < p).astype(float)


def reciprocal_ranks(n: int = 150, seed: int = 12) -> np.ndarray:
    """n reciprocal-rank-like values drawn from {0, 1, 1/2, 1/3, 1/5, 1/10}."""
    return np.random.default_rng(seed).choice(RR_LEVELS, size=n)


def sparse_reciprocal_ranks() -> np.ndarray:
    """30 questions of a weak retriever: 25 misses. Small and skewed, so BCa's bias correction
    and acceleration move the bounds well away from the percentile interval's."""
    return np.array([1.0, 1.0, 1 / 2, 1 / 5, 1 / 10] + [0.0] * 25)


def scipy_rng(function, seed: int) -> dict:
    """A Generator for scipy's resampling functions, under whichever keyword this scipy takes."""
    name = "rng" if "rng" in inspect.signature(function).parameters else "random_state"
    return {name: np.random.default_rng(seed)}


def with_changes(base: np.ndarray, *, fixed: int, broken: int) -> np.ndarray:
    """A copy of 0/1 ``base`` with its first ``fixed`` misses turned into hits and first ``broken`` hits into misses."""
    new = base.copy()
    new[np.flatnonzero(base == 0)[:fixed]] = 1.0
    new[np.flatnonzero(base == 1)[:broken]] = 0.0
    return new


# ----------------------------------------------------------------- bootstrap_mean_ci


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize(
    "make", [hits, reciprocal_ranks, sparse_reciprocal_ranks], ids=["hits", "reciprocal-ranks", "sparse-rr"]
)
def test_bootstrap_mean_ci_agrees_with_scipy(make, method):
    # Same seed on both sides: scipy draws its resamples exactly as this module does, so
    # the comparison checks the interval formulas, not Monte Carlo luck.
    x = make()
    ours = bootstrap_mean_ci(x, method=method, n_resamples=10_000, seed=7, confidence=0.95)
    theirs = sps.bootstrap(
        (x,),
        np.mean,
        method=SCIPY_METHOD[method],
        n_resamples=10_000,
        confidence_level=0.95,
        **scipy_rng(sps.bootstrap, 7),
    ).confidence_interval
    assert ours.estimate == pytest.approx(x.mean(), abs=1e-12)
    assert ours.low == pytest.approx(theirs.low, abs=0.005)
    assert ours.high == pytest.approx(theirs.high, abs=0.005)
    assert ours.low < ours.estimate < ours.high
    assert (ours.n, ours.method) == (x.size, method)


def test_bca_differs_from_percentile_on_a_skewed_sample():
    x = sparse_reciprocal_ranks()
    percentile = bootstrap_mean_ci(x, method="percentile")
    bca = bootstrap_mean_ci(x, method="bca")
    # A right-skewed sample: BCa shifts both bounds up.
    assert bca.low > percentile.low + 0.01
    assert bca.high > percentile.high + 0.02


def test_narrower_interval_at_lower_confidence():
    x = reciprocal_ranks()
    wide = bootstrap_mean_ci(x, confidence=0.95)
    narrow = bootstrap_mean_ci(x, confidence=0.80)
    assert wide.low < narrow.low < narrow.high < wide.high


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("clustered", [False, True])
def test_constant_sample_gives_a_point_interval(method, clustered):
    x = np.full(40, 0.2)
    clusters = np.repeat(["a", "b", "c", "d"], 10) if clustered else None
    result = bootstrap_mean_ci(x, method=method, clusters=clusters)
    assert result.low == result.high == result.estimate == pytest.approx(0.2)
    assert not any(math.isnan(v) for v in (result.low, result.high))


def test_single_question_gives_a_point_interval():
    assert bootstrap_mean_ci([1.0], method="bca") == Interval(1.0, 1.0, 1.0, 1, "bca")


def test_results_are_plain_python_numbers_and_serialize_to_json():
    x = hits()
    results = [
        bootstrap_mean_ci(x, method="bca"),
        paired_bootstrap_ci(x, 1 - x),
        wilson_interval(3, 10),
        paired_counts(x, 1 - x),
    ]
    for result in results:
        for value in dataclasses.asdict(result).values():
            assert type(value) in (float, int, str), (result, value)
        json.dumps(dataclasses.asdict(result))
    row = subsample(x, {"flip": 1 - x}, sizes=[20], draws=50)[0]
    assert all(type(v) is float for v in (row.baseline_low, *row.lost_share.values(), *row.reversed_share.values()))
    for value in (design_effect(x, np.arange(150) % 5), sign_test_p(4, 1), sign_flip_p(x - 0.5), *holm([0.2, 0.01])):
        assert type(value) is float
    assert type(min_detectable_effect(100, 0.2)) is float


def test_same_seed_same_interval_and_other_seed_differs():
    x = reciprocal_ranks()
    first = bootstrap_mean_ci(x, method="bca", seed=3)
    assert bootstrap_mean_ci(x, method="bca", seed=3) == first
    assert bootstrap_mean_ci(x, method="bca", seed=4) != first
    assert paired_bootstrap_ci(x, x[::-1], seed=3) == paired_bootstrap_ci(x, x[::-1], seed=3)


def test_block_size_does_not_change_results(monkeypatch):
    x = reciprocal_ranks()
    clusters = np.arange(150) % 9
    before = (
        bootstrap_mean_ci(x, method="bca", n_resamples=3_000, seed=1),
        bootstrap_mean_ci(x, n_resamples=3_000, seed=1, clusters=clusters),
        sign_flip_p(x - 0.3, n_resamples=3_000, seed=1),
        subsample(x, {"r": x[::-1]}, sizes=[30], draws=300, seed=1),
    )
    monkeypatch.setattr(stats, "BLOCK", 7)
    after = (
        bootstrap_mean_ci(x, method="bca", n_resamples=3_000, seed=1),
        bootstrap_mean_ci(x, n_resamples=3_000, seed=1, clusters=clusters),
        sign_flip_p(x - 0.3, n_resamples=3_000, seed=1),
        subsample(x, {"r": x[::-1]}, sizes=[30], draws=300, seed=1),
    )
    assert after[0] == before[0]
    assert after[1] == before[1]
    assert after[2] == pytest.approx(before[2], abs=1e-12)
    assert after[3] == before[3]


# ---------------------------------------------------------------- cluster bootstrap


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_singleton_clusters_match_the_plain_bootstrap(method):
    x = reciprocal_ranks()
    labels = [f"doc-{i}" for i in range(x.size)]
    plain = bootstrap_mean_ci(x, method=method, seed=5)
    clustered = bootstrap_mean_ci(x, method=method, seed=5, clusters=labels)
    assert clustered.method == f"cluster-{method}"
    assert clustered.estimate == pytest.approx(plain.estimate)
    assert clustered.low == pytest.approx(plain.low, abs=0.01)
    assert clustered.high == pytest.approx(plain.high, abs=0.01)
    assert design_effect(x, labels, seed=5) == pytest.approx(1.0, abs=0.05)


def test_homogeneous_clusters_inflate_variance_by_the_cluster_size():
    # 10 documents of 15 questions, each document all hits or all misses: the intraclass
    # correlation is 1, so the design effect 1 + (m - 1) * icc is the cluster size m = 15.
    x = np.repeat([1, 1, 0, 1, 0, 1, 1, 0, 1, 0], 15).astype(float)
    clusters = np.repeat([f"doc-{d}" for d in range(10)], 15)
    effect = design_effect(x, clusters, seed=2)
    assert effect > 5
    assert effect == pytest.approx(15, rel=0.1)
    plain = bootstrap_mean_ci(x, seed=2)
    for method in ("percentile", "bca"):
        clustered = bootstrap_mean_ci(x, seed=2, clusters=clusters, method=method)
        assert clustered.high - clustered.low > 2 * (plain.high - plain.low)
        assert clustered.estimate == plain.estimate == pytest.approx(0.6)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_equal_size_clusters_match_scipy_on_the_cluster_means(method):
    # With equal cluster sizes the resampled mean over questions is the mean of the drawn
    # clusters' means, and leaving one cluster out is leaving one cluster mean out: the
    # cluster bootstrap is scipy's bootstrap of the 12 cluster means.
    rng = np.random.default_rng(50)
    cluster_means = rng.choice([0.05, 0.1, 0.1, 0.2, 0.3, 0.9], size=12)
    x = np.concatenate([np.clip(rng.normal(m, 0.05, size=10), 0, 1) for m in cluster_means])
    clusters = np.repeat([f"doc-{d:02d}" for d in range(12)], 10)
    ours = bootstrap_mean_ci(x, method=method, clusters=clusters, seed=3)
    theirs = sps.bootstrap(
        (x.reshape(12, 10).mean(axis=1),),
        np.mean,
        method=SCIPY_METHOD[method],
        n_resamples=10_000,
        **scipy_rng(sps.bootstrap, 3),
    ).confidence_interval
    assert ours.method == f"cluster-{method}"
    assert (ours.estimate, ours.n) == (pytest.approx(x.mean()), 120)
    assert ours.low == pytest.approx(theirs.low, abs=0.005)
    assert ours.high == pytest.approx(theirs.high, abs=0.005)


def test_cluster_resample_mean_weights_questions_not_clusters():
    # One document with 8 hits, two with a single miss each. A resample draws 3 documents;
    # with k draws of the big one its mean is 8k / (8k + 3 - k): 0, 0.8, 16/17 or 1 with
    # probabilities 8/27, 12/27, 6/27, 1/27 (the mean of cluster means would give k/3).
    # The 20% quantile falls in k = 0, the 80% quantile in k = 2.
    x = np.array([1.0] * 8 + [0.0, 0.0])
    clusters = ["big"] * 8 + ["a", "b"]
    result = bootstrap_mean_ci(x, clusters=clusters, confidence=0.6)
    assert result.estimate == pytest.approx(0.8)
    assert result.low == 0.0
    assert result.high == pytest.approx(16 / 17)


# ------------------------------------------------------------------ paired bootstrap


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_paired_bootstrap_agrees_with_scipy(method):
    base = hits(seed=21)
    new = with_changes(base, fixed=20, broken=8)
    ours = paired_bootstrap_ci(base, new, method=method, seed=9)
    theirs = sps.bootstrap(
        (base, new),
        lambda b, n, axis=-1: np.mean(n - b, axis=axis),
        paired=True,
        method=SCIPY_METHOD[method],
        n_resamples=10_000,
        confidence_level=0.95,
        **scipy_rng(sps.bootstrap, 9),
    ).confidence_interval
    assert ours.estimate == pytest.approx(12 / 150)
    assert ours.low == pytest.approx(theirs.low, abs=0.005)
    assert ours.high == pytest.approx(theirs.high, abs=0.005)


def test_paired_interval_is_narrower_than_unpaired_for_correlated_configs():
    # Two configs that agree on most questions: resampling questions jointly cancels the
    # shared question difficulty, so the paired interval is far narrower than the one for a
    # difference of two independent means (widths adding in quadrature).
    base = hits(seed=22)
    new = with_changes(base, fixed=10, broken=3)
    paired = paired_bootstrap_ci(base, new)
    widths = [interval.high - interval.low for interval in (bootstrap_mean_ci(base), bootstrap_mean_ci(new))]
    assert paired.high - paired.low < 0.6 * math.hypot(*widths)


# ------------------------------------------------------------------- binary outcomes


@pytest.mark.parametrize(
    ("successes", "n", "confidence"),
    [(0, 10, 0.95), (3, 10, 0.95), (10, 10, 0.95), (105, 150, 0.95), (1, 1, 0.95), (42, 60, 0.9)],
)
def test_wilson_interval_matches_scipy(successes, n, confidence):
    expected = sps.binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    result = wilson_interval(successes, n, confidence=confidence)
    assert result.estimate == successes / n
    assert result.low == pytest.approx(expected.low, abs=1e-12)
    assert result.high == pytest.approx(expected.high, abs=1e-12)
    assert (result.n, result.method) == (n, "wilson")


def test_paired_counts_on_a_hand_built_example():
    base = [1, 1, 1, 0, 0, 0, 1, 0]
    new = [1, 0, 1, 1, 0, 1, 1, 0]
    # q0 both right, q1 broken, q2 both right, q3 fixed, q4 both wrong, q5 fixed,
    # q6 both right, q7 both wrong
    counts = paired_counts(base, new)
    assert counts == PairedCounts(fixed=2, broken=1, both_right=3, both_wrong=2)
    assert counts.n == 8
    assert counts.disagreement == pytest.approx(3 / 8)
    assert paired_counts(np.array(base, dtype=bool), np.array(new, dtype=bool)) == counts


def test_sign_test_is_the_exact_binomial_test():
    assert sign_test_p(15, 5) == pytest.approx(sps.binomtest(15, 20, 0.5).pvalue)
    assert sign_test_p(15, 5) == pytest.approx(0.0414, abs=5e-4)
    assert sign_test_p(5, 15) == sign_test_p(15, 5)
    assert sign_test_p(3, 0) == pytest.approx(2 * 0.5**3)
    assert sign_test_p(0, 0) == 1.0
    assert sign_test_p(7, 7) == pytest.approx(1.0)


# ------------------------------------------------------------------------- sign flip


def test_sign_flip_p_is_never_zero():
    differences = np.full(60, 0.5)
    assert sign_flip_p(differences, n_resamples=2_000) == 1 / 2_001
    assert sign_flip_p(-differences, n_resamples=2_000) == 1 / 2_001


def test_sign_flip_p_agrees_with_scipy_permutation_test():
    d = np.array([0.5, -0.2, 0.33, 0.1, 0.0, 0.25, -0.5, 0.8, 0.2, -0.1, 0.3, 0.15])
    # 12 differences have 4,096 sign patterns, so scipy computes the exact p-value.
    exact = sps.permutation_test(
        (d,),
        lambda x, axis: np.mean(x, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=10_000,
        alternative="two-sided",
        **scipy_rng(sps.permutation_test, 0),
    ).pvalue
    assert sign_flip_p(d, n_resamples=10_000, seed=4) == pytest.approx(exact, abs=0.02)


def test_sign_flip_p_edge_cases():
    assert sign_flip_p(np.zeros(30)) == 1.0
    d = reciprocal_ranks() - reciprocal_ranks(seed=13)
    assert sign_flip_p(d, seed=1) == sign_flip_p(d, seed=1)
    assert 0 < sign_flip_p(d) <= 1


# ----------------------------------------------------------------------------- holm


def test_holm_hand_computed():
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.3, 0.01]) == pytest.approx([0.6, 0.6, 0.03])  # running max lifts 0.5 to 0.6
    assert holm([0.7, 0.6, 0.01]) == pytest.approx([1.0, 1.0, 0.03])  # 0.6 * 2 capped at 1
    assert holm([0.02]) == [0.02]
    assert holm([]) == []


def test_holm_matches_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(3).random(12) ** 3
    expected = multitest.multipletests(p, method="holm")[1]
    assert holm(list(p)) == pytest.approx(list(expected))


# ----------------------------------------------------------------------------- power


@pytest.mark.parametrize(("n", "disagreement", "expected"), [(100, 0.2, 0.1253), (100, 0.1, 0.0886), (1000, 0.1, 0.0280)])
def test_min_detectable_effect_published_anchors(n, disagreement, expected):
    assert min_detectable_effect(n, disagreement) == pytest.approx(expected, abs=5e-5)


def test_min_detectable_effect_formulas():
    z = sps.norm.ppf(1 - 0.05 / 2) + sps.norm.ppf(0.8)
    assert min_detectable_effect(250, 0.15) == pytest.approx(z * math.sqrt(0.15 / 250))
    z90 = sps.norm.ppf(1 - 0.01 / 2) + sps.norm.ppf(0.9)
    assert min_detectable_effect(250, 0.15, alpha=0.01, power=0.9) == pytest.approx(z90 * math.sqrt(0.15 / 250))
    assert min_detectable_effect_sd(100, 0.3) == pytest.approx(z * 0.3 / 10)
    assert min_detectable_effect(0, 0.2) == math.inf
    assert min_detectable_effect_sd(0, 0.3) == math.inf


# ------------------------------------------------------------------------ subsample


def gain_population(n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """A baseline with half hits and a config that fixes 30 questions and breaks 10 (gain 0.1)."""
    base = np.zeros(n)
    base[np.random.default_rng(31).permutation(n)[: n // 2]] = 1.0
    return base, with_changes(base, fixed=30, broken=10)


def exact_lost_share(n: int, fixed: int = 30, broken: int = 10, total: int = 200) -> float:
    """P(fixed <= broken in a random n-subset): multivariate hypergeometric, summed exactly."""
    neutral = total - fixed - broken
    favourable = sum(
        math.comb(fixed, f) * math.comb(broken, b) * math.comb(neutral, n - f - b)
        for f in range(n + 1)
        for b in range(f, n - f + 1)
    )
    return favourable / math.comb(total, n)


def test_subsample_lost_share_matches_the_hypergeometric_probability():
    base, new = gain_population()
    rows = subsample(base, {"new": new}, sizes=[200, 20, 60, 500, 20], draws=2_000, seed=5)
    assert [row.n for row in rows] == [20, 60, 200]
    by_n = {row.n: row for row in rows}
    for n in (20, 60):
        assert by_n[n].lost_share["new"] == pytest.approx(exact_lost_share(n), abs=0.035)
        assert by_n[n].reversed_share["new"] <= by_n[n].lost_share["new"]
    assert by_n[20].lost_share["new"] > 0.1
    assert by_n[20].lost_share["new"] > by_n[60].lost_share["new"] > by_n[200].lost_share["new"] == 0.0
    assert all(row.draws == 2_000 for row in rows)


def test_subsample_baseline_range_is_the_hypergeometric_90_percent_range():
    base, new = gain_population()
    row = subsample(base, {"new": new}, sizes=[20], draws=2_000, seed=6)[0]
    counts = sps.hypergeom(200, 100, 20)
    assert row.baseline_low == pytest.approx(counts.ppf(0.05) / 20, abs=0.05 + 1e-9)
    assert row.baseline_high == pytest.approx(counts.ppf(0.95) / 20, abs=0.05 + 1e-9)
    assert row.baseline_low < 0.5 < row.baseline_high


def test_subsample_full_size_row_is_the_full_set():
    base, new = gain_population()
    worse = with_changes(base, fixed=0, broken=5)
    row = subsample(base, {"new": new, "worse": worse, "same": base}, sizes=[1_000], draws=100)[0]
    assert row.n == 200
    assert row.baseline_low == row.baseline_high == base.mean()
    assert row.lost_share == {"new": 0.0, "worse": 1.0, "same": 1.0}
    assert row.reversed_share == {"new": 0.0, "worse": 1.0, "same": 0.0}


def test_subsample_is_deterministic_and_paired():
    base, new = gain_population()
    first = subsample(base, {"new": new, "same": base.copy()}, sizes=[20, 40], draws=500, seed=8)
    assert subsample(base, {"new": new, "same": base.copy()}, sizes=[20, 40], draws=500, seed=8) == first
    assert subsample(base, {"new": new, "same": base.copy()}, sizes=[20, 40], draws=500, seed=9) != first
    # Paired subsets: a config identical to the baseline has gain exactly 0 on every subset.
    assert [row.lost_share["same"] for row in first] == [1.0, 1.0]
    assert [row.reversed_share["same"] for row in first] == [0.0, 0.0]


# ------------------------------------------------------------------ writing intervals


def test_interval_dict_writes_every_field_by_default_in_field_order():
    iv = Interval(0.123456, 0.1, 0.2, 7, "percentile")
    out = interval_dict(iv)
    assert out == dataclasses.asdict(iv) == {"estimate": 0.123456, "low": 0.1, "high": 0.2, "n": 7,
                                             "method": "percentile"}
    assert list(out) == list(INTERVAL_FIELDS) == [f.name for f in dataclasses.fields(Interval)]


def test_interval_dict_keeps_each_callers_keys_and_order():
    iv = Interval(0.123456, -0.00001, 0.2, 7, "percentile")
    assert interval_dict(iv, ("estimate", "low", "high")) == {"estimate": 0.123456, "low": -0.00001, "high": 0.2}
    assert interval_dict(iv, ("low", "high")) == {"low": -0.00001, "high": 0.2}
    metrics = interval_dict(iv, {"estimate": "value", "low": "ci_low", "high": "ci_high"},
                            number=lambda v: round(v, 4) + 0.0)
    assert metrics == {"value": 0.1235, "ci_low": 0.0, "ci_high": 0.2}
    assert list(metrics) == ["value", "ci_low", "ci_high"]
    assert math.copysign(1, metrics["ci_low"]) == 1.0
    # the output follows the order of `keys`; `number` touches the bounds only, never n or method
    assert list(interval_dict(iv, {"n": "n", "estimate": "delta", "method": "how"}, number=lambda v: -v).items()) == [
        ("n", 7), ("delta", -0.123456), ("how", "percentile")]


def test_interval_dict_of_no_interval_gives_every_key_none():
    assert interval_dict(None, ("low", "high", "n")) == {"low": None, "high": None, "n": None}
    assert interval_dict(None, {"estimate": "value", "low": "ci_low"}) == {"value": None, "ci_low": None}
    assert interval_dict(None) == dict.fromkeys(INTERVAL_FIELDS)


@pytest.mark.bad_input
def test_interval_dict_refuses_an_unknown_field():
    with pytest.raises(ValueError, match=r"unknown interval field\(s\) \['width'\]"):
        interval_dict(Interval(0.5, 0.4, 0.6, 10, "wilson"), ("estimate", "width"))


def test_shared_argument_checks_and_resample_blocks():
    assert check_count(np.int64(3), "n") == 3 and type(check_count(np.int64(3), "n")) is int
    assert check_open_unit(0.95, "confidence") == 0.95
    for bad in (True, 3.0, "3"):
        with pytest.raises(ValueError, match="n must be an integer"):
            check_count(bad, "n")
    with pytest.raises(ValueError, match="alpha must be strictly between 0 and 1; got 1"):
        check_open_unit(1, "alpha")
    blocks = list(resample_blocks(10_001, 1))
    assert blocks[0] == (0, stats.BLOCK) and sum(rows for _, rows in blocks) == 10_001
    assert [start for start, _ in blocks] == [sum(rows for _, rows in blocks[:i]) for i in range(len(blocks))]
    wide = list(resample_blocks(5, MAX_CELLS))  # one row fills a block
    assert wide == [(i, 1) for i in range(5)]


# ------------------------------------------------------------------------- bad input


@pytest.mark.bad_input
@pytest.mark.parametrize("values", [[], np.zeros((3, 2)), [0.5, float("nan")]], ids=["empty", "2-D", "nan"])
def test_bootstrap_rejects_bad_values(values):
    with pytest.raises(ValueError, match=r"values (is empty|must be a 1-D array|has 1 non-finite)"):
        bootstrap_mean_ci(values)


@pytest.mark.bad_input
def test_unknown_method_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown interval method 'bc'; expected one of \['bca', 'percentile'\]"):
        bootstrap_mean_ci([0.0, 1.0], method="bc")
    with pytest.raises(ValueError, match="unknown interval method 'studentized'"):
        paired_bootstrap_ci([0.0, 1.0], [1.0, 1.0], method="studentized")


@pytest.mark.bad_input
@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, -0.2, float("nan")])
def test_confidence_outside_the_open_unit_interval(confidence):
    with pytest.raises(ValueError, match=r"confidence must be strictly between 0 and 1; got"):
        bootstrap_mean_ci([0.0, 1.0], confidence=confidence)
    with pytest.raises(ValueError, match=r"confidence must be strictly between 0 and 1; got"):
        wilson_interval(1, 2, confidence=confidence)


@pytest.mark.bad_input
def test_unequal_lengths_are_named():
    with pytest.raises(ValueError, match="base has 3 values but new has 2"):
        paired_bootstrap_ci([0.0, 1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="base has 2 values but new has 3"):
        paired_counts([0, 1], [1, 1, 0])
    with pytest.raises(ValueError, match=r"baseline has 3 values but others\['b'\] has 2"):
        subsample([0.0, 1.0, 1.0], {"b": [1.0, 1.0]}, sizes=[2])
    with pytest.raises(ValueError, match="clusters has 2 labels but there are 3 questions"):
        bootstrap_mean_ci([0.0, 1.0, 1.0], clusters=["a", "b"])


@pytest.mark.bad_input
def test_other_bad_inputs_name_what_was_found():
    with pytest.raises(ValueError, match="clusters has 1 distinct label; the cluster bootstrap needs at least 2"):
        design_effect([0.0, 1.0, 1.0], ["a", "a", "a"])
    with pytest.raises(ValueError, match=r"base must hold only 0/1 \(miss/hit\) values; found \[0.5\]"):
        paired_counts([0.5, 1.0], [1, 1])
    with pytest.raises(ValueError, match="n is 0"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match=r"successes \(11\) exceeds n \(10\)"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError, match="fixed must be >= 0; got -1"):
        sign_test_p(-1, 3)
    with pytest.raises(ValueError, match=r"p-values must lie in \[0, 1\]; found \[1.2\]"):
        holm([0.5, 1.2])
    with pytest.raises(ValueError, match=r"disagreement must be a share in \[0, 1\]; got 1.5"):
        min_detectable_effect(100, 1.5)
    with pytest.raises(ValueError, match="power must be strictly between 0 and 1; got 1.0"):
        min_detectable_effect_sd(100, 0.3, power=1.0)
    with pytest.raises(ValueError, match="each size must be >= 1; got 0"):
        subsample([0.0, 1.0], {}, sizes=[0])
    with pytest.raises(ValueError, match="differences is empty"):
        sign_flip_p([])
    with pytest.raises(ValueError, match=r"n_resamples must be an integer; got 100.0"):
        bootstrap_mean_ci([0.0, 1.0], n_resamples=100.0)
