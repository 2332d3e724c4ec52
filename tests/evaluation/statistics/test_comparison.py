"""Intervals per config, paired comparisons with the baseline, subsampling and the metrics dict
(rag_ablation.evaluation.statistics.comparison, rag_ablation.evaluation.statistics.stats,
rag_ablation.evaluation.report.plot_data).

Expected values are written as formulas over the hand-built fixtures below, or are the
results of rag_ablation.evaluation.statistics.inference called directly with the same settings.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from score_rows import answer_row, config_rows, hits_to_ranks

from rag_ablation.core.config import StatsConfig
from rag_ablation.core.errors import InvalidData
from rag_ablation.evaluation.statistics import inference as stats
from rag_ablation.evaluation.statistics.comparison import (SIGNIFICANCE, VERDICTS, compare, comparison_dict, counts_in,
                                                        is_real, pair, real_change, rounded, rounded_p, verdict,
                                                        with_holm)
from rag_ablation.evaluation.statistics.stats import analyze, summarize_config, to_metrics
from rag_ablation.evaluation.report.plot_data import all_plots

SETTINGS = StatsConfig(resamples=2000, seed=3, min_slice=5, subsample_sizes=(4, 8, None), subsample_draws=200)
Z = float(sps.norm.ppf(0.975) + sps.norm.ppf(0.8))

# Ten answerable questions, slices a (q0..q5) and b (q6..q9), one unanswerable question.
SLICES = ["a"] * 6 + ["b"] * 4
DENSE_HITS = [1, 1, 1, 0, 0, 0, 1, 0, 1, 0]
HYBRID_HITS = [1, 1, 1, 1, 1, 0, 1, 1, 0, 0]  # fixed q3 q4 q7, broken q8
BM25_HITS = [0, 1, 1, 0, 0, 0, 1, 0, 1, 0]  # broken q0


def rows(config, hits, **kw):
    return config_rows(config, hits_to_ranks(hits), slices=SLICES, unanswerable=1, **kw)


def fixture_rows():
    return rows("dense", DENSE_HITS) + rows("hybrid", HYBRID_HITS) + rows("bm25", BM25_HITS)


def result(**settings):
    s = StatsConfig(**{**SETTINGS.__dict__, **settings})
    answers = [answer_row("dense", f"q{i}", c) for i, c in enumerate([1, 0, 1, 1, 0])]
    answers.append(answer_row("dense", "u0", None, answerable=False))
    return analyze(fixture_rows() + rows("not_in_params", HYBRID_HITS), answers,
                   configs=["dense", "rerank", "hybrid", "bm25"], answered=["dense", "hybrid"], settings=s)


def leaves(d, path=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from leaves(v, f"{path}{k}.")
        else:
            yield f"{path}{k}", v


# ------------------------------------------------------------------------ intervals


def test_config_interval_is_the_stats_bootstrap_of_the_mean():
    c = summarize_config("dense", rows("dense", DENSE_HITS), SETTINGS)
    assert c.available and c.n_unanswerable_excluded == 1 and c.overall.n == 10
    iv = c.overall.measures["recall_at_5"]
    expected = stats.bootstrap_mean_ci(np.array(DENSE_HITS, float), method="percentile", n_resamples=2000, seed=3,
                                       confidence=0.95)
    assert iv == expected
    assert iv.estimate == pytest.approx(sum(DENSE_HITS) / 10)
    assert c.overall.measures["mrr_at_10"].estimate == pytest.approx(sum(DENSE_HITS) / 3 / 10)  # hits at rank 3
    assert set(c.overall.measures) == {"recall_at_1", "recall_at_5", "recall_at_10", "mrr_at_10"}
    assert c.overall.measures["recall_at_1"].estimate == 0.0  # every hit is at rank 3


def test_slices_are_sorted_and_the_small_one_is_flagged():
    c = summarize_config("dense", rows("dense", DENSE_HITS), SETTINGS)
    assert list(c.by_slice) == ["a", "b"]
    assert (c.by_slice["a"].n, c.by_slice["a"].too_small) == (6, False)
    assert (c.by_slice["b"].n, c.by_slice["b"].too_small) == (4, True)  # 4 < min_slice 5
    assert c.by_slice["b"].measures["recall_at_5"].estimate == pytest.approx(2 / 4)


def test_cluster_bootstrap_reports_the_design_effect():
    cluster = StatsConfig(**{**SETTINGS.__dict__, "cluster": True})
    c = summarize_config("dense", rows("dense", DENSE_HITS), cluster)
    docs = [f"t/d{i % 3}.md" for i in range(10)]
    values = np.array(DENSE_HITS, float)
    assert c.overall.measures["recall_at_5"].method == "cluster-percentile"
    assert c.overall.design_effects["recall_at_5"] == stats.design_effect(values, docs, n_resamples=2000, seed=3)


def test_a_slice_from_one_document_falls_back_to_resampling_questions():
    cluster = StatsConfig(**{**SETTINGS.__dict__, "cluster": True})
    c = summarize_config("dense", config_rows("dense", hits_to_ranks(DENSE_HITS), docs=["t/one.md"] * 10), cluster)
    assert c.overall.measures["recall_at_5"].method == "percentile" and c.overall.design_effects == {}


def test_a_config_without_rows_is_unavailable():
    c = summarize_config("rerank", [], SETTINGS)
    assert (c.available, c.overall, dict(c.by_slice)) == (False, None, {})


# -------------------------------------------------------------------------- paired


def test_paired_counts_change_sign_test_and_mde():
    c = compare(rows("dense", DENSE_HITS), rows("hybrid", HYBRID_HITS), base="dense", new="hybrid",
                measure="hit_at_5", settings=SETTINGS)
    b = c.binary
    assert c.n == 10
    assert (b.counts.fixed, b.counts.broken, b.counts.both_right, b.counts.both_wrong) == (3, 1, 4, 2)
    assert b.delta.estimate == pytest.approx((sum(HYBRID_HITS) - sum(DENSE_HITS)) / 10)
    assert b.p == pytest.approx(2 * (1 + 4) / 2**4)  # 3 of 4 discordant, two-sided
    assert b.mde == pytest.approx(Z * math.sqrt((3 + 1) / 10 / 10))
    diffs = np.array(HYBRID_HITS, float) / 3 - np.array(DENSE_HITS, float) / 3
    assert c.rr.delta.estimate == pytest.approx(diffs.mean())
    assert c.rr.p_sign_flip == stats.sign_flip_p(diffs, n_resamples=2000, seed=3)
    assert c.rr.mde == pytest.approx(Z * diffs.std(ddof=1) / math.sqrt(10))


def test_fixed_and_broken_ids_per_slice():
    c = compare(rows("dense", DENSE_HITS), rows("hybrid", HYBRID_HITS), base="dense", new="hybrid",
                measure="hit_at_5", settings=SETTINGS)
    a, b = c.by_slice["a"], c.by_slice["b"]
    assert (a.fixed_ids, a.broken_ids, a.too_small) == (("q3", "q4"), (), False)
    assert (b.fixed_ids, b.broken_ids, b.too_small) == (("q7",), ("q8",), True)
    assert b.delta == pytest.approx((2 - 2) / 4)
    assert c.fixed_ids == ("q3", "q4", "q7") and c.broken_ids == ("q8",)


def test_questions_on_one_side_only_are_named_and_never_paired():
    base = config_rows("dense", hits_to_ranks([1, 0, 1]), ids=["q0", "q1", "gone"])
    new = config_rows("hybrid", hits_to_ranks([1, 1, 0, 1]), ids=["q0", "q1", "new1", "new2"])
    p = pair(base, new)
    assert [r["id"] for r in p.new] == ["q0", "q1"] and p.only_base == ("gone",) and p.only_new == ("new1", "new2")
    c = compare(base, new, base="dense", new="hybrid", measure="hit_at_5", settings=SETTINGS)
    assert c.n == 2 and c.only_base == ("gone",) and c.only_new == ("new1", "new2")
    assert (c.binary.counts.fixed, c.binary.counts.broken) == (1, 0)


def test_no_shared_question_gives_no_test_and_stays_out_of_the_family():
    none = compare(config_rows("a", [1], ids=["x"]), config_rows("b", [1], ids=["y"]), base="a", new="b",
                   measure="hit_at_5", settings=SETTINGS)
    assert (none.n, none.binary, none.rr) == (0, None, None)
    one = compare(rows("dense", DENSE_HITS), rows("hybrid", HYBRID_HITS), base="dense", new="hybrid",
                  measure="hit_at_5", settings=SETTINGS)
    adjusted = with_holm([none, one])
    assert adjusted[0] == none and adjusted[1].binary.family == 1
    assert adjusted[1].binary.p_holm == one.binary.p


def test_holm_adjusts_each_family_across_configs():
    r = result()
    hybrid, bm25 = r.comparison("hybrid"), r.comparison("bm25")
    assert [c.new for c in r.comparisons] == ["hybrid", "bm25"]  # params order, baseline and unavailable left out
    raw = [hybrid.binary.p, bm25.binary.p]
    assert [hybrid.binary.p_holm, bm25.binary.p_holm] == stats.holm(raw)
    assert [hybrid.rr.p_holm, bm25.rr.p_holm] == stats.holm([hybrid.rr.p_sign_flip, bm25.rr.p_sign_flip])
    assert hybrid.binary.family == bm25.rr.family == 2
    assert bm25.binary.p == pytest.approx(1.0)  # 0 fixed, 1 broken


def test_real_needs_an_interval_off_zero_and_a_small_holm_p():
    many = [0] * 14 + [1] * 6
    better = [1] * 14 + [1] * 6  # fixes 14, breaks none
    c = with_holm([compare(config_rows("d", hits_to_ranks(many)), config_rows("h", hits_to_ranks(better)),
                           base="d", new="h", measure="hit_at_5", settings=SETTINGS)])[0]
    assert c.binary.p_holm == pytest.approx(2 * 0.5**14) and c.binary.delta.low > 0
    assert is_real(c.binary)
    r = result()
    assert not is_real(r.comparison("hybrid").binary)  # 3 fixed, 1 broken: p = 0.625


@pytest.mark.parametrize(("delta", "low", "high", "p_holm", "expected"), [
    (0.1, 0.02, 0.2, 0.01, "real gain"),
    (-0.1, -0.2, -0.01, 0.049, "real loss"),
    (0.1, 0.02, 0.2, SIGNIFICANCE, "within the noise"),  # Holm p not strictly below
    (0.1, 0.0, 0.2, 0.001, "within the noise"),  # interval touches 0
    (-0.1, -0.2, 0.0, 0.001, "within the noise"),  # from below too
    (0.0, 0.0, 0.0, 1.0, "no change"),  # a point interval at 0: no question differs
    (0.0, 0.0, 0.0, 0.0, "no change"),  # whatever the p-value
])
def test_verdict_rule(delta, low, high, p_holm, expected):
    assert verdict(delta, low, high, p_holm) == expected and expected in VERDICTS
    assert real_change(low, high, p_holm) == expected.startswith("real")


def test_is_real_and_verdict_agree_on_a_comparison():
    many, better = [0] * 14 + [1] * 6, [1] * 20  # fixes 14, breaks none
    b = with_holm([compare(config_rows("d", hits_to_ranks(many)), config_rows("h", hits_to_ranks(better)),
                           base="d", new="h", measure="hit_at_5", settings=SETTINGS)])[0].binary
    assert is_real(b) and verdict(b.delta.estimate, b.delta.low, b.delta.high, b.p_holm) == "real gain"
    assert b.delta.estimate == pytest.approx(14 / 20)


# ----------------------------------------------------------------------- subsampling


def test_subsample_uses_the_stats_function_on_the_shared_questions():
    r = result()
    sub = r.subsample
    assert (sub.measure, sub.baseline, sub.total) == ("hit_at_5", "dense", 10)
    expected = stats.subsample(np.array(DENSE_HITS, float),
                               {"hybrid": np.array(HYBRID_HITS, float), "bm25": np.array(BM25_HITS, float)},
                               sizes=[4, 8, 10], draws=200, seed=3)
    assert list(sub.rows) == expected
    full = sub.rows[-1]
    assert full.n == 10 and full.lost_share == {"hybrid": 0.0, "bm25": 1.0}  # +0.2 and -0.1 on the whole set


# ---------------------------------------------------------------------------- answers


def test_answer_proxy_is_a_wilson_interval_over_answerable_questions():
    r = result()
    dense, hybrid = r.answers
    assert dense.interval == stats.wilson_interval(3, 5, confidence=0.95)  # the unanswerable row is left out
    assert hybrid.config == "hybrid" and hybrid.interval is None


def test_lexical_support_is_a_bootstrap_mean_over_the_answers_that_have_one():
    """dense's five answerable answers: four with lexical support, one refusal without (counted
    in ``n_undefined``, never as 0); the unanswerable row is left out. Rows without the column
    (``answer_row``) give no ``lexical_support`` key."""
    support = [1.0, None, 0.5, 0.75, 0.25]
    answers = [{**answer_row("dense", f"q{i}", 1), "lexical_support": v} for i, v in enumerate(support)]
    answers.append({**answer_row("dense", "u0", None, answerable=False), "lexical_support": None})
    out = analyze(fixture_rows(), answers, configs=["dense"], answered=["dense"], settings=SETTINGS)
    (dense,) = out.answers
    expected = stats.bootstrap_mean_ci([1.0, 0.5, 0.75, 0.25], n_resamples=SETTINGS.resamples, seed=SETTINGS.seed,
                                       method=SETTINGS.method, confidence=SETTINGS.confidence)
    assert dense.support == expected and dense.support.estimate == pytest.approx(2.5 / 4)
    assert dense.support_undefined == 1
    m = to_metrics(out)["dense"]["answers"]["lexical_support"]
    assert (m["value"], m["n"], m["n_undefined"]) == (rounded(2.5 / 4), 4, 1)
    assert (m["ci_low"], m["ci_high"]) == (rounded(expected.low), rounded(expected.high))
    assert "lexical_support" not in to_metrics(result())["dense"]["answers"]


# --------------------------------------------------------------------------- metrics


def test_metrics_are_nested_numbers_with_the_documented_keys():
    m = to_metrics(result())
    flat = dict(leaves(m))
    assert all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in flat.values())
    assert list(m) == ["dense", "rerank", "hybrid", "bm25"]  # params order; other configs ignored
    assert m["rerank"] == {"available": 0}
    h = m["hybrid"]["vs_baseline"]["hit_at_5"]
    assert (h["fixed"], h["broken"], h["both_right"], h["both_wrong"], h["family"]) == (3, 1, 4, 2, 2)
    assert h["delta"] == 0.2 and h["p_sign"] == 0.625 and h["real"] == 0
    assert h["mde"] == rounded(Z * math.sqrt(0.04))
    for key in ("hybrid.recall_at_5.value", "hybrid.recall_at_5.ci_low", "hybrid.recall_at_5.ci_high",
                "hybrid.by_slice.b.too_small", "hybrid.by_slice.b.recall_at_5.ci_low", "hybrid.by_slice.b.n",
                "hybrid.vs_baseline.rr_at_10.p_sign_flip", "hybrid.vs_baseline.by_slice.a.fixed",
                "dense.subsample.n_4.low", "dense.subsample.all.high", "hybrid.subsample.n_8.lost_share",
                "dense.answers.contains_reference.n", "dense.is_baseline", "hybrid.vs_baseline.only_config"):
        assert key in flat, key
    assert flat["hybrid.by_slice.b.too_small"] == 1 and flat["hybrid.by_slice.a.too_small"] == 0
    assert m["hybrid"]["answers"] == {"available": 0} and "vs_baseline" not in m["dense"]
    assert all(v == round(v, 4) for k, v in flat.items() if isinstance(v, float) and "p_" not in k)


def test_a_continuous_measure_counts_better_and_worse_and_old_files_still_read():
    """RR@10 as the measure: the questions better / worse by more than the margin are written
    ``better`` / ``worse`` (``within_margin``, ``both_zero``), never ``fixed`` / ``broken``, which
    stay a 0/1 measure's words; ``counts_in`` reads both, and a file written before the rename."""
    c = compare(rows("dense", DENSE_HITS), rows("hybrid", HYBRID_HITS), base="dense", new="hybrid",
                measure="rr_at_10", settings=SETTINGS)
    d = comparison_dict(c)
    rr = d["rr_at_10"]
    assert (rr["better"], rr["worse"], rr["within_margin"], rr["both_zero"]) == (3, 1, 4, 2)
    assert not {"fixed", "broken", "both_right", "both_wrong"} & set(rr)
    assert {(s["better"], s["worse"]) for s in d["by_slice"].values()} == {(2, 0), (1, 1)}
    assert all("fixed" not in s for s in d["by_slice"].values())
    binary = comparison_dict(compare(rows("dense", DENSE_HITS), rows("hybrid", HYBRID_HITS), base="dense",
                                     new="hybrid", measure="hit_at_5", settings=SETTINGS))
    assert (binary["hit_at_5"]["fixed"], binary["hit_at_5"]["broken"]) == (3, 1) and "better" not in binary["hit_at_5"]
    assert counts_in(rr) == (3, 1) == counts_in(binary["hit_at_5"])
    assert counts_in({"fixed": 2, "broken": 9, "margin": 0.01, "p_sign_flip": 0.004}) == (2, 9)  # an older file


def test_tiny_p_values_keep_significant_digits():
    assert rounded_p(3.0e-9) == 3.0e-9 and rounded_p(0.123456) == 0.1235 and rounded(-0.00001) == 0.0
    assert math.copysign(1, rounded(-0.00001)) == 1.0


def test_results_are_deterministic():
    assert to_metrics(result()) == to_metrics(result())


def test_an_unavailable_baseline_gives_no_comparisons():
    r = analyze(rows("hybrid", HYBRID_HITS), [], configs=["dense", "hybrid"], answered=[], settings=SETTINGS)
    assert r.comparisons == () and r.subsample is None
    assert to_metrics(r)["dense"] == {"available": 0} and "vs_baseline" not in to_metrics(r)["hybrid"]


def test_plot_rows_follow_params_order_and_mark_unavailable_configs():
    plots = all_plots(result())
    bars = [r for r in plots["configs.json"] if r["panel"] == "recall@5"]
    assert [r["config"] for r in bars] == ["dense", "rerank", "hybrid", "bm25"]
    assert bars[1] == {"config": "rerank", "panel": "recall@5", "available": 0, "order": 1, "panel_order": 1}
    assert [r["order"] for r in bars] == [0, 1, 2, 3]  # charts sort by it, not by name
    assert all(0 <= r["ci_low"] <= r["value"] <= r["ci_high"] <= 1 for r in bars if r["available"])
    assert {r["panel"] for r in plots["slices.json"]} >= {"b: recall@5 (n=4, too small to decide)"}
    assert [r["config"] for r in plots["changes.json"]] == ["hybrid", "bm25", "hybrid", "bm25"]
    assert {(r["config"], r["n"]) for r in plots["subsample.json"]} == {(c, n) for c in ("hybrid", "bm25")
                                                                        for n in (4, 8, 10)}


def test_the_subsampling_plot_counts_a_loss_gone_not_a_gain_that_never_was():
    """hybrid gains (+0.2) and bm25 loses (-0.1) on all 10 questions: each point is the share of
    draws that would not have shown that change (a gain lost or reversed; a loss gone or turned
    into a gain), so both are 0 with every question drawn, where bm25's was "100% gain gone"."""
    r = result()
    full = next(row for row in r.subsample.rows if row.n == 10)
    assert (full.lost_share["bm25"], full.reversed_share["bm25"]) == (1.0, 1.0)  # a loss: no gain, every draw
    points = {(p["config"], p["n"]): p for p in all_plots(r)["subsample.json"]}
    assert points[("hybrid", 10)] == {"config": "hybrid", "n": 10, "value": 0.0, "reversed": 0.0, "change": "gain"}
    assert points[("bm25", 10)] == {"config": "bm25", "n": 10, "value": 0.0, "reversed": 0.0, "change": "loss"}
    four = next(row for row in r.subsample.rows if row.n == 4)
    assert points[("bm25", 4)]["value"] == rounded(1 - four.reversed_share["bm25"])  # no loss, or a gain
    assert points[("bm25", 4)]["reversed"] == rounded(1 - four.lost_share["bm25"])  # a gain
    assert points[("hybrid", 4)]["value"] == rounded(four.lost_share["hybrid"])


# ------------------------------------------------------------------------ bad input


@pytest.mark.bad_input
def test_a_repeated_question_is_invalid_data():
    twice = rows("dense", DENSE_HITS) + rows("dense", DENSE_HITS)[:1]
    with pytest.raises(InvalidData, match="'q0' appears twice for config 'dense'"):
        analyze(twice, [], configs=["dense"], answered=[], settings=SETTINGS)


@pytest.mark.bad_input
def test_an_empty_measure_of_an_answerable_question_is_invalid_data():
    broken = rows("dense", DENSE_HITS)
    broken[2] = {**broken[2], "hit_at_5": None}
    with pytest.raises(InvalidData, match="hit_at_5 is empty for answerable question.*q2"):
        summarize_config("dense", broken, SETTINGS)


def test_graded_measures_get_intervals_only_where_every_row_has_them():
    graded = rows("dense", DENSE_HITS)
    ndcg = [0.9, 0.8, 0.7, 0.0, 0.1, 0.0, 0.6, 0.2, 0.5, 0.0]
    answerable = [r for r in graded if r["answerable"]]
    for r, v in zip(answerable, ndcg):
        r.update(ndcg_at_10=v, recall_at_100=None)
    for r in graded:
        if not r["answerable"]:
            r.update(ndcg_at_10=None, recall_at_100=None)
    m = to_metrics(analyze(graded + rows("hybrid", HYBRID_HITS), [], configs=["dense", "hybrid"], answered=[],
                           settings=SETTINGS))
    assert m["dense"]["ndcg_at_10"]["value"] == pytest.approx(np.mean(ndcg))
    assert "recall_at_100" not in m["dense"], "empty cells (a shallow config): unavailable, no interval"
    assert "ndcg_at_10" not in m["hybrid"], "span-labelled rows carry no graded measure"
    assert m["dense"]["recall_at_5"]["value"] == pytest.approx(np.mean(DENSE_HITS))
