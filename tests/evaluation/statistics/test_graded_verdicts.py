"""Verdicts on nDCG@10 for a graded data set: the MS MARCO situation, in a hand-built BEIR folder.

``tests/fixtures/beir_recall_tie`` is a BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)
of 8 queries, each with one passage graded 2 and one graded 1, and 8 unjudged distractors. Two
hand-written runs find both judged passages of every query in their top 5, so recall@5 is 1.0 for
both, as for every config on MS MARCO; ``dense`` ranks them first and second, ``bm25`` lower and
in the wrong order, so nDCG@10 differs on every query. With ``stats.measure: auto`` the report,
``diff``, the gate and the sweep give their verdict on nDCG@10 (a real loss for bm25); on recall@5
the same comparison is "no change". The paired test of a continuous measure is the sign-flip
test, checked against ``scipy.stats.permutation_test`` within Monte Carlo error and against
``scipy.stats.wilcoxon`` for the same conclusion.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from rag_ablation.core.config import GateConfig, StatsConfig
from rag_ablation.core.errors import UserError
from rag_ablation.datasets.beir import read_beir
from rag_ablation.evaluation.gate.rules import run_gate
from rag_ablation.evaluation.report.diff_text import format_text
from rag_ablation.evaluation.report.markdown import render
from rag_ablation.evaluation.scoring.graded import read_qrels
from rag_ablation.evaluation.scoring.scores import score_run
from rag_ablation.evaluation.statistics.comparison import (
    REAL_LOSS,
    NO_CHANGE,
    column_values,
    compare,
    measure_of_rows,
    pair,
    verdict,
)
from rag_ablation.evaluation.statistics.revision_diff import diff_rows
from rag_ablation.evaluation.statistics.stats import analyze, to_metrics
from rag_ablation.evaluation.statistics.sweep import summarise

FOLDER = Path(__file__).parents[2] / "fixtures" / "beir_recall_tie"
SETTINGS = StatsConfig(resamples=4000, seed=3)
QUERIES = 8
# bm25's ranks of the passage graded 2 and the one graded 1, per query (dense: 1 and 2)
BM25_RANKS = [(4, 3), (5, 2), (3, 4), (2, 5), (4, 3), (5, 3), (3, 5), (4, 2)]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(questions, qrels, track) of the fixture folder, read as ``rag-ablation import beir`` does."""
    _, questions, gold, _, _ = read_beir(FOLDER, track="tie")
    path = tmp_path_factory.mktemp("qrels") / "qrels.jsonl"
    path.write_text("".join(json.dumps(g) + "\n" for g in gold), encoding="utf-8")
    return questions, read_qrels(path)


def ranking(top: dict[int, str]) -> list[dict]:
    """Ten chunks: the judged passages at their ranks (1-based), distractors elsewhere."""
    fill = iter(f"tie/x{j}.md#0" for j in range(1, 9))
    return [{"chunk": top.get(rank) or next(fill), "score": 1.0 / rank} for rank in range(1, 11)]


def run(config: str, ranks: list[tuple[int, int]]) -> list[dict]:
    return [{"id": f"q{i}", "ranking": ranking({a: f"tie/p{i}a.md#0", b: f"tie/p{i}b.md#0"})}
            for i, (a, b) in enumerate(ranks, start=1)]


def rows_of(graded, config: str, ranks: list[tuple[int, int]], *, name: str | None = None) -> list[dict]:
    questions, qrels = graded
    return score_run(name or config, run(config, ranks), {}, questions, qrels=qrels, depth=10)


@pytest.fixture(scope="module")
def rows(graded):
    return {"dense": rows_of(graded, "dense", [(1, 2)] * QUERIES), "bm25": rows_of(graded, "bm25", BM25_RANKS)}


def ndcg(first: int, second: int) -> float:
    """nDCG@10 of grade 2 at rank ``first`` and grade 1 at rank ``second`` (ideal: 2 then 1)."""
    dcg = 2 / math.log2(first + 1) + 1 / math.log2(second + 1)
    return dcg / (2 / math.log2(2) + 1 / math.log2(3))


def test_the_fixture_reproduces_equal_recall_at_5_and_different_ndcg(rows):
    dense, bm25 = rows["dense"], rows["bm25"]
    assert [r["hit_at_5"] for r in dense] == [r["hit_at_5"] for r in bm25] == [1] * QUERIES
    assert [r["ndcg_at_10"] for r in dense] == pytest.approx([1.0] * QUERIES)
    assert [r["ndcg_at_10"] for r in bm25] == pytest.approx([ndcg(a, b) for a, b in BM25_RANKS])


def test_auto_is_ndcg_on_graded_rows_and_hit_at_5_on_span_rows(rows):
    graded_rows = rows["dense"] + rows["bm25"]
    assert measure_of_rows("auto", graded_rows) == "ndcg_at_10"
    assert measure_of_rows("auto", [{**r, "ndcg_at_10": None} for r in graded_rows]) == "hit_at_5"
    assert measure_of_rows("rr_at_10", graded_rows) == "rr_at_10"


@pytest.mark.bad_input
def test_a_measure_the_rows_lack_is_one_clear_error(rows):
    with pytest.raises(UserError, match=r"recall_at_100.*retrieval\.NAME\.k.*100"):
        measure_of_rows("recall_at_100", rows["dense"])  # a 10-deep run has no recall@100
    with pytest.raises(UserError, match=r"ndcg_at_10.*graded qrels"):
        measure_of_rows("ndcg_at_10", [{**r, "ndcg_at_10": None} for r in rows["dense"]])


def test_the_report_gives_its_verdict_on_ndcg_and_says_so(rows):
    result = analyze(rows["dense"] + rows["bm25"], [], configs=["dense", "bm25"], answered=[],
                     settings=SETTINGS)
    assert result.settings.measure == "ndcg_at_10"
    change = result.comparison("bm25").binary
    assert change.measure == "ndcg_at_10" and change.test == "sign-flip"
    expected = np.mean([ndcg(a, b) for a, b in BM25_RANKS]) - 1.0
    assert change.delta.estimate == pytest.approx(expected)
    assert (change.counts.fixed, change.counts.broken) == (0, QUERIES)  # worse by more than the margin everywhere
    assert change.p == pytest.approx((4000 * 2 / 2**QUERIES + 1) / 4001, abs=0.006)  # all 8 signs one way
    assert verdict(change.delta.estimate, change.delta.low, change.delta.high, change.p_holm) == REAL_LOSS
    metrics = to_metrics(result)
    vs = metrics["bm25"]["vs_baseline"]["ndcg_at_10"]
    assert vs["margin"] == 0.01 and "p_sign_flip" in vs and "p_sign" not in vs
    # one vocabulary: a continuous measure's questions are better / worse, in stats.json as in the report
    assert (vs["better"], vs["worse"], vs["within_margin"], vs["both_zero"]) == (0, QUERIES, 0, 0)
    assert not {"fixed", "broken", "both_right", "both_wrong"} & set(vs)
    by_slice = metrics["bm25"]["vs_baseline"]["by_slice"]["main"]
    assert (by_slice["better"], by_slice["worse"]) == (0, QUERIES) and "fixed" not in by_slice
    assert metrics["bm25"]["recall_at_5"]["value"] == metrics["dense"]["recall_at_5"]["value"] == 1.0
    md = render(metrics, configs=["dense", "bm25"], answered=[], settings=SETTINGS)
    assert "Measure: nDCG@10 (`ndcg_at_10`)" in md
    line = next(x for x in md.splitlines() if x.startswith("| `bm25` | 8 | 0 | 8 |"))  # n, better, worse
    assert "real loss" in line and "p (sign-flip test)" in md and "worse by >0.01" in md


def test_on_recall_at_5_the_same_comparison_is_no_change(rows):
    c = compare(rows["dense"], rows["bm25"], base="dense", new="bm25", measure="hit_at_5", settings=SETTINGS)
    b = c.binary
    assert b.test == "sign" and (b.counts.fixed, b.counts.broken) == (0, 0)
    assert verdict(b.delta.estimate, b.delta.low, b.delta.high, b.p_holm) == NO_CHANGE


def test_diff_gives_its_verdict_on_ndcg(rows, graded):
    old = rows_of(graded, "dense", [(1, 2)] * QUERIES, name="pipeline")
    new = rows_of(graded, "bm25", BM25_RANKS, name="pipeline")
    d = diff_rows(old, new, rev="main", commit="0" * 40, measure="auto", settings=SETTINGS)
    assert d.measure == "ndcg_at_10"
    text = format_text(d)
    assert "nDCG@10 (ndcg_at_10)" in text and "p (sign-flip)" in text and REAL_LOSS in text
    assert "worse by >0.01 8" in text


def test_the_gate_checks_ndcg_and_fails_the_loss(rows, graded):
    old = rows_of(graded, "dense", [(1, 2)] * QUERIES, name="pipeline")
    new = rows_of(graded, "bm25", BM25_RANKS, name="pipeline")
    rules = GateConfig(configs=("pipeline",), min_questions=5, max_newly_failing=1)
    result = run_gate(old, new, rules=rules, settings=SETTINGS, against="the baseline")
    assert result.measure == "ndcg_at_10" and not result.passed
    overall = result.slices[0]
    assert len(overall.newly_failing) == QUERIES and overall.recall == pytest.approx(
        np.mean([ndcg(a, b) for a, b in BM25_RANKS]))
    on_recall = run_gate(old, new, rules=GateConfig(configs=("pipeline",), measure="hit_at_5", min_questions=5),
                         settings=SETTINGS, against="the baseline")
    assert on_recall.measure == "hit_at_5" and on_recall.passed  # recall@5 sees nothing


def test_the_sweep_ranks_on_ndcg_and_folds_copies(rows, graded):
    copy = rows_of(graded, "dense", [(1, 2)] * QUERIES, name="dense")
    s = summarise({"dense@a": rows["dense"], "bm25@a": rows["bm25"], "dense@b": copy}, measure="auto",
                  baseline="dense@b", settings=SETTINGS)
    assert s.measure == "ndcg_at_10" and s.names == ("dense@a", "bm25@a") and s.aliases == (("dense@b",), ())
    assert s.baseline == 0  # dense@b names dense@a's candidate
    assert s.tie_set == (0,) and s.beats[0] == (1,)
    on_recall = summarise({"dense@a": rows["dense"], "bm25@a": rows["bm25"]}, measure="hit_at_5",
                          baseline="dense@a", settings=SETTINGS)
    assert on_recall.names == ("dense@a",) and on_recall.aliases == (("bm25@a",),)  # recall@5 cannot tell them apart
    assert on_recall.tie_set == (0,) and on_recall.winner == 0


def continuous_pair(n: int = 60, shift: float = 0.04, seed: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """nDCG-like values in [0, 1] for two configs, the second a little better on average."""
    rng = np.random.default_rng(seed)
    base = rng.beta(2, 2, n)
    return base, np.clip(base + rng.normal(shift, 0.12, n), 0, 1)


@pytest.mark.parametrize("shift", [0.0, 0.04, 0.08])
def test_the_sign_flip_p_matches_scipys_paired_permutation_test(shift):
    before, after = continuous_pair(shift=shift)
    rows_b = [{"config": "a", "id": f"q{i}", "slice": "main", "doc": "d", "answerable": 1, "ndcg_at_10": float(v),
               "rr_at_10": 0.0} for i, v in enumerate(before)]
    rows_a = [{**r, "config": "b", "ndcg_at_10": float(v)} for r, v in zip(rows_b, after)]
    c = compare(rows_b, rows_a, base="a", new="b", measure="ndcg_at_10", settings=StatsConfig(resamples=20000))
    paired = pair(rows_b, rows_a)
    x, y = column_values(paired.new, "ndcg_at_10"), column_values(paired.base, "ndcg_at_10")
    ref = sps.permutation_test((x, y), lambda a, b, axis: np.mean(a - b, axis=axis), permutation_type="samples",
                               vectorized=True, n_resamples=20000, alternative="two-sided",
                               random_state=np.random.default_rng(1)).pvalue
    # two independent Monte Carlo estimates of one p: within 4 standard errors of each other
    se = math.sqrt(2 * ref * (1 - ref) / 20000) + 1e-4
    assert c.binary.p == pytest.approx(ref, abs=4 * se)
    wilcoxon = sps.wilcoxon(x, y).pvalue  # another paired test: the same conclusion at 0.05, away from the edge
    if min(c.binary.p, wilcoxon) < 0.01 or max(c.binary.p, wilcoxon) > 0.1:
        assert (c.binary.p < 0.05) == (wilcoxon < 0.05)


def test_the_sign_flip_p_matches_ranxs_fisher_randomization_test():
    """ranx's Fisher randomization test (what ``ranx.compare(..., stat_test="fisher")`` runs) on the
    same per-question values: its p is ``k / B`` with its own draws, ours ``(k + 1) / (B + 1)``:
    equal within Monte Carlo error."""
    fisher = pytest.importorskip("ranx.statistical_tests").fisher_randomization_test
    for shift in (0.0, 0.04, 0.08):
        before, after = continuous_pair(shift=shift)
        ours = compare(
            [{"config": "a", "id": f"q{i}", "slice": "main", "doc": "d", "answerable": 1, "ndcg_at_10": float(v),
              "rr_at_10": 0.0} for i, v in enumerate(before)],
            [{"config": "b", "id": f"q{i}", "slice": "main", "doc": "d", "answerable": 1, "ndcg_at_10": float(v),
              "rr_at_10": 0.0} for i, v in enumerate(after)],
            base="a", new="b", measure="ndcg_at_10", settings=StatsConfig(resamples=20000)).binary.p
        theirs, _ = fisher(before, after, n_permutations=20000, max_p=0.05, random_seed=42)
        se = math.sqrt(2 * theirs * (1 - theirs) / 20000) + 1e-4
        assert ours == pytest.approx(theirs, abs=4 * se + 1 / 20000)
