"""The views of the metrics files (rag_ablation.evaluation.report.metrics_view) on tiny hand-built
dicts shaped like metrics/stats.json, metrics/judge_detail.json, metrics/sweep.json and the
latency files."""
from __future__ import annotations


from rag_ablation.evaluation.report import metrics_view as mv
from rag_ablation.evaluation.statistics.stats import ANSWER_PROXY

CHANGE = {"delta": 0.1, "ci_low": 0.02, "ci_high": 0.2, "p_holm": 0.01, "fixed": 3, "broken": 0, "n": 30}
STATS = {
    "dense": {"available": 1, "n": 30, "answers": {"available": 1, ANSWER_PROXY: {"value": 0.5, "n": 20}}},
    "hybrid": {"available": 1, "n": 30, "vs_baseline": {"hit_at_5": CHANGE}},
    "bm25": {"available": 0},
    "rerank": {"available": 1, "n": 30},  # available, no comparison block
    "noisy": {"available": 1, "vs_baseline": {"hit_at_5": {**CHANGE, "p_holm": 0.2}}, "answers": {"available": 0}},
}


def test_available_reads_a_missing_config_or_flag_as_unavailable():
    assert [mv.available(STATS, c) for c in ("dense", "bm25", "missing")] == [True, False, False]
    assert mv.config_metrics(STATS, "missing") == {}


def test_baseline_comparisons_follow_the_given_order_and_skip_what_cannot_be_compared():
    configs = ["noisy", "dense", "bm25", "rerank", "hybrid", "missing"]
    got = mv.baseline_comparisons(STATS, configs, "dense")
    assert [name for name, _ in got] == ["noisy", "hybrid"]
    assert got[1][1] is STATS["hybrid"]["vs_baseline"]
    assert mv.baseline_comparisons(STATS, configs, "hybrid")[0][0] == "noisy"


def test_change_of_and_its_verdict():
    vs = mv.vs_baseline(STATS, "hybrid")
    assert mv.change_of(vs, "hit_at_5") is CHANGE
    assert mv.change_of(vs, "rr_at_10") is None and mv.change_of(None, "hit_at_5") is None
    assert mv.vs_baseline(STATS, "dense") is None
    assert mv.change_verdict(CHANGE) == "real gain"
    assert mv.change_verdict(STATS["noisy"]["vs_baseline"]["hit_at_5"]) == "within the noise"  # 0.2 >= 0.05
    assert mv.change_verdict({"delta": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p_holm": 1.0}) == "no change"
    assert mv.change_verdict({**CHANGE, "delta": -0.1, "ci_low": -0.2, "ci_high": -0.02}) == "real loss"


def test_answer_proxy_needs_an_available_answers_block():
    assert mv.answer_proxy(STATS, "dense") == {"value": 0.5, "n": 20}
    assert [mv.answer_proxy(STATS, c) for c in ("noisy", "hybrid", "missing")] == [None, None, None]


def test_lexical_support_needs_an_available_answers_block_that_has_it():
    support = {"value": 0.8, "ci_low": 0.7, "ci_high": 0.9, "n": 18, "n_undefined": 2}
    stats = {"dense": {"available": 1, "answers": {"available": 1, "contains_reference": {"value": 0.5, "n": 20},
                                                   "lexical_support": support}},
             "hybrid": {"available": 1, "answers": {"available": 0, "lexical_support": support}}}
    assert mv.lexical_support(stats, "dense") == support
    assert [mv.lexical_support(s, c) for s, c in ((stats, "hybrid"), (stats, "missing"), (STATS, "dense"))] == [
        None, None, None]


HAND = {"estimate": 0.5, "low": 0.3, "high": 0.7, "n": 10}
DETAIL = {
    "configs": {"dense": {"status": "ok", "accuracy": {"hand": HAND},
                          "failures": {"hand": {"n": 10, "unknown": {"count": 1, "share": 0.1, "ids": ["q1"]}}}},
                "hybrid": {"status": "skipped", "reason": "no answers"}},
    "calibration": {"llm": {"confusion": {"tp": 1}}, "contains": {"reason": "no hand grades"}},
    "canaries": {"llm": {"empty": {"accepted": 0.0, "n": 4}}, "contains": {"status": "skipped", "reason": "off"},
                 "token_f1": None},
    "bias": {"length": {"pairs": 3, "consistent": 2}},
}


def test_judged_configs_and_why_not():
    assert [mv.is_judged(DETAIL, c) for c in ("dense", "hybrid", "missing")] == [True, False, False]
    assert mv.not_judged_reason(DETAIL, "hybrid") == "no answers" and mv.not_judged_reason(DETAIL, "missing") is None
    assert mv.hand_accuracy(DETAIL, "dense") is HAND and mv.hand_accuracy(DETAIL, "hybrid") is None
    assert mv.failure_table(DETAIL, "dense", "hand")["unknown"]["ids"] == ["q1"]
    assert mv.failure_table(DETAIL, "dense", "judge") == {} and mv.failure_table({}, "dense", "hand") == {}


def test_calibration_canaries_and_length_bias():
    assert mv.is_calibrated(mv.calibration(DETAIL, "llm")) and not mv.is_calibrated(mv.calibration(DETAIL, "contains"))
    assert mv.calibration(DETAIL, "missing") == {}
    assert mv.canary_results(DETAIL, "llm") == {"empty": {"accepted": 0.0, "n": 4}}
    assert [mv.canary_results(DETAIL, j) for j in ("contains", "token_f1", "missing")] == [None, None, None]
    assert [mv.canaries_not_run_reason(DETAIL, j) for j in ("contains", "token_f1")] == ["off", "not run"]
    assert mv.length_bias_ran(mv.length_bias(DETAIL)) and not mv.length_bias_ran(mv.length_bias({}))


def comparison(method="percentile"):
    ok = {"status": "ok", "n": 8, "baseline_accuracy": 0.25, "accuracy": 0.5, "fixed": 3, "broken": 1,
          "fixed_ids": ["a", "b", "c"], "broken_ids": ["d"], "p_mcnemar": 0.625,
          "difference": {"estimate": 0.25, "low": -0.125, "high": 0.5, "method": method}}
    return {"comparison": {"baseline": "dense", "configs": {"hybrid": ok, "bm25": {"status": "skipped"}}}}


def test_answer_comparison_keeps_file_order_and_the_reason_of_an_uncompared_config():
    comp = mv.answer_comparison(comparison())
    assert comp is not None and comp.baseline == "dense" and [r.config for r in comp.rows] == ["hybrid", "bm25"]
    hybrid, bm25 = comp.rows
    d = hybrid.difference
    assert (d.n, d.delta, d.ci_low, d.ci_high, d.fixed, d.broken) == (8, 0.5 - 0.25, -0.125, 0.5, 3, 1)
    assert d.fixed_ids == ("a", "b", "c") and d.broken_ids == ("d",) and not comp.clustered
    assert bm25.difference is None and (bm25.status, bm25.reason) == ("skipped", None)
    assert mv.answer_comparison(comparison("cluster-percentile")).clustered


def test_no_answer_comparison_without_configs():
    assert mv.answer_comparison({}) is None
    assert mv.answer_comparison({"comparison": {"baseline": "dense", "configs": {}}}) is None


def test_sweep_view_ranks_best_first_then_by_name():
    sweep = {"measure": "hit_at_5", "winner": {"name": "b@w"}, "tie_set_size": 2,
             "ranking": {"c@w": {"rank": 2}, "b@w": {"rank": 1, "letter": "a"}, "a@w": {"rank": 2}, "z@w": {}}}
    view = mv.sweep_view(sweep)
    assert view is not None and [r["candidate"] for r in view.rows] == ["b@w", "a@w", "c@w", "z@w"]
    assert set(view.rows[0]) == {"candidate", *mv.SWEEP_RANKING_FIELDS} and view.rows[0]["letter"] == "a"
    assert view.rows[3]["rank"] is None  # no integer rank: last
    assert (view.measure, view.winner, view.tie_set_size, view.baseline) == ("hit_at_5", "b@w", 2, None)
    assert mv.sweep_view(None) is None and mv.sweep_view({"ranking": []}) is None


def test_latency_files(tmp_path):
    assert mv.latency_in('{"total": {"p95_ms": 12}}', "total", "p95_ms") == 12.0
    assert [mv.latency_in(t, "total", "p95_ms") for t in ("{bad", "[]", '{"total": {"p95_ms": true}}')] == [None] * 3
    (tmp_path / "dense.json").write_text('{"total": {"p95_ms": 1.5}}', encoding="utf-8")
    (tmp_path / "bm25.json").write_bytes(b"\xff")
    assert mv.latency_value(tmp_path, "dense", "total", "p95_ms") == 1.5
    assert mv.latency_value(tmp_path, "bm25", "total", "p95_ms") is None  # not UTF-8
    assert mv.latency_value(tmp_path, "hyde", "total", "p95_ms") is None  # no file


def test_stats_settings_read_auto_as_the_stage_used_it():
    from rag_ablation.core.config import StatsConfig
    graded = {"a": {"available": 1, "recall_at_5": {}, "ndcg_at_10": {}}, "b": {"available": 1, "ndcg_at_10": {}},
              "gone": {"available": 0}}
    assert mv.stats_settings(StatsConfig(), graded, ["a", "b", "gone"]).measure == "ndcg_at_10"
    spans = {"a": {"available": 1, "recall_at_5": {}}, "b": {"available": 1, "ndcg_at_10": {}}}
    assert mv.stats_settings(StatsConfig(), spans, ["a", "b"]).measure == "hit_at_5"
    assert mv.stats_settings(StatsConfig(measure="rr_at_10"), graded, ["a"]).measure == "rr_at_10"


def test_measure_comparisons_read_each_measure_its_rows_and_their_verdicts():
    change = {"delta": -0.05, "ci_low": -0.09, "ci_high": -0.01, "fixed": 2, "broken": 9, "margin": 0.01,
              "p_sign_flip": 0.004, "p_holm": 0.008, "family": 2, "real": 1}
    # bm25's entry is as judge_eval writes it now (better / worse); hybrid's as an older file did (fixed / broken)
    noise = {"delta": 0.01, "ci_low": -0.02, "ci_high": 0.04, "better": 5, "worse": 4, "margin": 0.01,
             "p_sign_flip": 0.5, "p_holm": 0.5, "family": 2, "real": 0}
    detail = {"measure_comparison": {"baseline": "dense", "order": ["token_f1", "combined_score"], "measures": {
        "token_f1": {"status": "ok", "label": "token F1", "test": "sign-flip", "configs": {
            "hybrid": {"status": "ok", "n": 40, "baseline_mean": 0.3, "mean": 0.25, "token_f1": change,
                       "better_ids": ["q1", "q2"], "worse_ids": ["q3"]},
            "bm25": {"status": "ok", "n": 40, "baseline_mean": 0.3, "mean": 0.31, "token_f1": noise},
            "gone": {"status": "unavailable", "reason": "no answerable question answered by both dense and gone"}}},
        "combined_score": {"status": "unavailable", "reason": "combined judge score is empty for 3 answer(s) of bm25"}}}}
    f1, combined = mv.measure_comparisons(detail)
    assert (f1.measure, f1.label, f1.test, f1.baseline, f1.reason) == ("token_f1", "token F1", "sign-flip", "dense", None)
    hybrid, bm25, gone = f1.rows
    assert (hybrid.n, hybrid.mean, hybrid.delta, hybrid.better, hybrid.worse, hybrid.p, hybrid.p_holm) == (
        40, 0.25, -0.05, 2, 9, 0.004, 0.008)
    assert (hybrid.verdict, bm25.verdict) == ("real loss", "within the noise")
    assert (bm25.better, bm25.worse) == (5, 4)
    assert (hybrid.better_ids, hybrid.worse_ids, bm25.better_ids) == (("q1", "q2"), ("q3",), ())  # bm25: an older file
    assert gone == mv.MeasureRow("gone", reason="no answerable question answered by both dense and gone")
    assert combined.rows == () and combined.reason == "combined judge score is empty for 3 answer(s) of bm25"
    assert mv.measure_comparisons({}) == () == mv.measure_comparisons({"measure_comparison": {}})
    # without "order" (the file's keys are sorted), file order
    unordered = {"measure_comparison": {k: v for k, v in detail["measure_comparison"].items() if k != "order"}}
    unordered["measure_comparison"]["measures"] = dict(sorted(unordered["measure_comparison"]["measures"].items()))
    assert [m.measure for m in mv.measure_comparisons(unordered)] == ["combined_score", "token_f1"]
