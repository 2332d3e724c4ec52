from __future__ import annotations

import numpy as np
import pytest

from rag_ablation.evaluation.scoring.evaluate import config_metrics, metrics_file
from rag_ablation.evaluation.scoring.measures import first_relevant_rank, hit_at, rr_at, summarize

RANKS = [1, 3, None, 7, 12]


def test_first_relevant_rank():
    assert first_relevant_rank(["x", "a", "b"], {"b", "a"}) == 2
    assert first_relevant_rank([], {"a"}) is None
    assert first_relevant_rank(["x"], set()) is None


def test_bounds_are_inclusive():
    assert hit_at(5, 5) == 1.0 and hit_at(6, 5) == 0.0
    assert rr_at(10, 10) == pytest.approx(1 / 10) and rr_at(11, 10) == 0.0


def test_summary_formulas():
    s = summarize(RANKS)
    assert s["n_questions"] == 5
    assert s["recall_at_1"] == pytest.approx(1 / 5)
    assert s["recall_at_5"] == pytest.approx(2 / 5)
    assert s["recall_at_10"] == pytest.approx(3 / 5)
    assert s["mrr_at_10"] == pytest.approx((1 + 1 / 3 + 1 / 7) / 5)
    assert summarize([]) == {"n_questions": 0}


def test_equal_to_ir_measures_success_and_rr():
    ir_measures = pytest.importorskip("ir_measures")
    rng = np.random.default_rng(3)
    qrels, run, ranks = [], [], []
    for q in range(40):
        ranking = [f"d{i}" for i in rng.permutation(30)[:10]]
        relevant = {f"d{i}" for i in rng.choice(30, size=int(rng.integers(0, 3)), replace=False)}
        for d in relevant:
            qrels.append(ir_measures.Qrel(f"q{q}", d, 1))
        for pos, d in enumerate(ranking):
            run.append(ir_measures.ScoredDoc(f"q{q}", d, float(100 - pos)))
        ranks.append(first_relevant_rank(ranking, relevant))
    # ir_measures skips queries without any qrel; give every query a judged non-relevant doc
    for q in range(40):
        qrels.append(ir_measures.Qrel(f"q{q}", "never-retrieved", 0))
    agg = ir_measures.calc_aggregate(
        [ir_measures.Success @ 1, ir_measures.Success @ 5, ir_measures.Success @ 10, ir_measures.RR @ 10], qrels, run
    )
    ours = summarize(ranks)
    assert ours["recall_at_1"] == pytest.approx(agg[ir_measures.Success @ 1])
    assert ours["recall_at_5"] == pytest.approx(agg[ir_measures.Success @ 5])
    assert ours["recall_at_10"] == pytest.approx(agg[ir_measures.Success @ 10])
    assert ours["mrr_at_10"] == pytest.approx(agg[ir_measures.RR @ 10])


def test_config_metrics_per_slice_and_unavailable():
    unanswerable = {"config": "c", "slice": "unanswerable", "answerable": 0, "first_relevant_rank": None}
    rows = [
        {"config": "c", "slice": "main", "answerable": 1, "first_relevant_rank": 1},
        {"config": "c", "slice": "main", "answerable": 1, "first_relevant_rank": None},
        {"config": "c", "slice": "identifier", "answerable": 1, "first_relevant_rank": 4}, unanswerable, unanswerable]
    m = config_metrics(rows)
    assert m["available"] == 1 and m["n_unanswerable_excluded"] == 2
    assert m["recall_at_5"] == pytest.approx(2 / 3)
    assert m["by_slice"]["main"]["recall_at_1"] == pytest.approx(1 / 2)
    assert m["by_slice"]["identifier"]["mrr_at_10"] == pytest.approx(1 / 4)
    assert "unanswerable" not in m["by_slice"]
    whole = metrics_file(configs=["c", "r"], status={"c": "ok", "r": "unavailable"}, retrieval_rows=rows,
                         answered={}, answer_rows=[])
    assert whole == {"c": m, "r": {"available": 0}}


def test_step_latency_reports_only_steps_that_ran():
    from rag_ablation.retrieval.runner import step_latency

    out = step_latency([{"bm25_search": 0.002}, {"bm25_search": 0.004}])
    assert set(out) == {"n_questions", "n_timed", "timing", "total", "bm25_search"} and out["timing"] == "warm"
    assert out["total"]["p50_ms"] == pytest.approx(3.0)
    assert step_latency([]) == {"n_questions": 0}
