"""Answered configs compared on every answer (judge_eval's ``measure_comparison``): token F1 and the
primary judge's score, paired by question, with the stats stage's test. The sign-flip p is checked
against ``scipy.stats.permutation_test`` within Monte Carlo error, the sign test's against
``scipy.stats.binomtest``, and the means and change against their formulas."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from rag_ablation.core.config import StatsConfig
from rag_ablation.evaluation.statistics.answer_verdicts import (
    JUDGE_FREE,
    SCORE_COLUMNS,
    measure_comparison,
    verdict_measures,
)

SETTINGS = StatsConfig(resamples=4000, seed=1, margin=0.05, min_slice=3)

# Twelve answerable questions in two slices (x: q0..q5, y: q6..q11) and one unanswerable (u0).
BASE_F1 = [0.0, 0.2, 0.1, 0.0, 0.5, 0.3, 0.0, 0.1, 0.4, 0.2, 0.0, 0.1]
NEW_F1 = [0.6, 0.5, 0.4, 0.3, 0.9, 0.6, 0.4, 0.1, 0.7, 0.6, 0.5, 0.12]
BASE_HIT = [0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0]
NEW_HIT = [1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0]


def rows(config, f1, hit, *, score=None):
    out = [{"config": config, "id": f"q{i}", "slice": "x" if i < 6 else "y", "doc": f"d{i % 3}", "answerable": 1,
            "token_f1": v, "contains_reference": h, "combined_score": None if score is None else score[i]}
           for i, (v, h) in enumerate(zip(f1, hit))]
    return out + [{"config": config, "id": "u0", "slice": "unanswerable", "doc": "d0", "answerable": 0,
                   "token_f1": None, "contains_reference": None, "combined_score": None}]


def test_the_measures_are_token_f1_then_the_primary_judges_score():
    assert verdict_measures(None) == (JUDGE_FREE,) == ("token_f1",)
    assert verdict_measures("combined") == ("token_f1", "combined_score")
    assert verdict_measures("llm") == ("token_f1", "llm_score")
    assert verdict_measures("token_f1") == ("token_f1",)  # its score is token F1 itself: compared once
    assert verdict_measures("contains") == ("token_f1", "contains_reference")
    with pytest.raises(KeyError, match="known judges: " + ", ".join(SCORE_COLUMNS)):
        verdict_measures("gpt-judge")
    assert verdict_measures("llm", lexical_support=True) == ("token_f1", "lexical_support", "llm_score")
    assert verdict_measures(None, lexical_support=True) == ("token_f1", "lexical_support")


def test_lexical_support_is_compared_on_the_questions_where_both_answers_have_one():
    """Lexical support is undefined for q0 in dense and q1 in hybrid (refusals): the other ten
    questions are paired, the two are on one side each and counted per config, and the measure is
    not unavailable (as token F1 would be with an empty cell)."""
    base_support = [None, 0.5, 0.4, 0.6, 0.5, 0.3, 0.2, 0.5, 0.4, 0.6, 0.5, 0.3]
    new_support = [0.9, None, 0.8, 0.9, 0.7, 0.8, 0.6, 0.9, 0.8, 0.7, 0.9, 0.8]
    data = [{**r, "lexical_support": None if r["id"] == "u0" else support[int(r["id"][1:])]}
            for config, f1, hit, support in (("dense", BASE_F1, BASE_HIT, base_support),
                                              ("hybrid", NEW_F1, NEW_HIT, new_support))
            for r in rows(config, f1, hit)]
    out = measure_comparison(data, ["dense", "hybrid"], measures=["token_f1", "lexical_support"], settings=SETTINGS)
    m = out["measures"]["lexical_support"]
    assert (m["status"], m["label"], m["test"], m["undefined"]) == ("ok", "lexical support", "sign-flip",
                                                                     {"dense": 1, "hybrid": 1})
    e = m["configs"]["hybrid"]
    both = [i for i in range(12) if base_support[i] is not None and new_support[i] is not None]
    before = np.array([base_support[i] for i in both])
    after = np.array([new_support[i] for i in both])
    assert (e["n"], e["only_config"], e["only_baseline"]) == (10, 1, 1)
    assert e["baseline_mean"] == round(before.mean(), 4) and e["mean"] == round(after.mean(), 4)
    assert e["lexical_support"]["delta"] == round((after - before).mean(), 4)
    assert out["measures"]["token_f1"]["configs"]["hybrid"]["n"] == 12  # token F1 still pairs every question


def test_token_f1_is_compared_with_the_sign_flip_test_over_every_answered_question():
    out = measure_comparison(rows("dense", BASE_F1, BASE_HIT) + rows("hybrid", NEW_F1, NEW_HIT),
                             ["dense", "hybrid"], measures=["token_f1"], settings=SETTINGS)
    assert out["baseline"] == "dense" and out["order"] == ["token_f1"]
    m = out["measures"]["token_f1"]
    assert (m["status"], m["label"], m["test"]) == ("ok", "token F1", "sign-flip")
    e = m["configs"]["hybrid"]
    before, after = np.array(BASE_F1), np.array(NEW_F1)
    diff = after - before
    assert e["n"] == 12 and e["only_config"] == e["only_baseline"] == 0  # u0 is unanswerable: not paired
    assert e["baseline_mean"] == round(before.mean(), 4) and e["mean"] == round(after.mean(), 4)
    c = e["token_f1"]
    assert c["delta"] == round(diff.mean(), 4) and c["ci_low"] <= c["delta"] <= c["ci_high"]
    # better / worse: moved by more than stats.margin (0.05); q7 (0.1 -> 0.1) and q11 (+0.02) did not
    assert (c["better"], c["worse"], c["margin"]) == (int((diff > 0.05).sum()), int((diff < -0.05).sum()), 0.05) == (10, 0, 0.05)
    assert "fixed" not in c and "broken" not in c  # a continuous measure's words, as the reports print them
    ref = sps.permutation_test((before, after), lambda b, a: np.mean(a - b), permutation_type="samples",
                               n_resamples=20000, alternative="two-sided", random_state=0).pvalue
    # the exact p is 4 / 2^12: only all signs + or all - (q7's zero difference either way) reach |observed mean|
    assert ref == pytest.approx(4 / 2**12, abs=0.002)
    assert abs(c["p_sign_flip"] - ref) < 4 * math.sqrt(ref * (1 - ref) / SETTINGS.resamples) + 2 / SETTINGS.resamples
    assert c["p_holm"] == c["p_sign_flip"] and c["family"] == 1 and c["real"] == 1
    assert set(e["by_slice"]) == {"x", "y"} and e["by_slice"]["x"]["n"] == 6
    # the questions that moved by more than the margin, named (q7: no change, q11: +0.02)
    assert e["better_ids"] == sorted(f"q{i}" for i in range(12) if i not in (7, 11)) and e["worse_ids"] == []


def test_a_0_1_measure_keeps_the_exact_sign_test_and_holm_runs_over_the_configs():
    data = rows("dense", BASE_F1, BASE_HIT) + rows("hybrid", NEW_F1, NEW_HIT) + rows("bm25", BASE_F1, BASE_HIT)
    out = measure_comparison(data, ["dense", "hybrid", "bm25"], measures=["contains_reference"], settings=SETTINGS)
    m = out["measures"]["contains_reference"]
    assert m["test"] == "sign" and list(m["configs"]) == ["hybrid", "bm25"]
    hybrid, same = (m["configs"][c]["contains_reference"] for c in ("hybrid", "bm25"))
    fixed = sum(1 for b, n in zip(BASE_HIT, NEW_HIT) if n > b)
    assert (hybrid["fixed"], hybrid["broken"]) == (fixed, 0) == (7, 0)
    p = sps.binomtest(fixed, fixed, 0.5).pvalue
    assert hybrid["p_sign"] == pytest.approx(p, rel=1e-3)
    # Holm over two configs: the smaller p doubled; the copy of the baseline has p 1 and no change
    assert hybrid["p_holm"] == pytest.approx(2 * p, rel=1e-3) and hybrid["family"] == same["family"] == 2
    assert (same["fixed"], same["broken"], same["delta"], same["p_holm"]) == (0, 0, 0.0, 1.0)


def test_a_judge_score_missing_on_some_answer_is_unavailable_with_the_count():
    score = [0.5] * 12
    gappy = list(score)
    gappy[3] = gappy[4] = None
    data = rows("dense", BASE_F1, BASE_HIT, score=score) + rows("hybrid", NEW_F1, NEW_HIT, score=gappy)
    out = measure_comparison(data, ["dense", "hybrid"], measures=["token_f1", "combined_score"], settings=SETTINGS)
    assert out["measures"]["token_f1"]["status"] == "ok"
    assert out["measures"]["combined_score"] == {
        "status": "unavailable", "label": "combined judge score",
        "reason": "combined judge score is empty for 2 answer(s) of hybrid"}


def test_the_baseline_is_stats_baseline_when_answered_else_the_first_config():
    data = rows("bm25", BASE_F1, BASE_HIT) + rows("hybrid", NEW_F1, NEW_HIT)
    out = measure_comparison(data, ["hybrid", "bm25"], measures=["token_f1"], settings=SETTINGS)
    assert out["baseline"] == "hybrid" and list(out["measures"]["token_f1"]["configs"]) == ["bm25"]
    out = measure_comparison(data, ["hybrid", "bm25"], measures=["token_f1"],
                             settings=StatsConfig(baseline="bm25", resamples=100))
    assert out["baseline"] == "bm25" and list(out["measures"]["token_f1"]["configs"]) == ["hybrid"]


def test_one_answered_config_or_no_shared_question_compares_nothing():
    assert measure_comparison(rows("dense", BASE_F1, BASE_HIT), ["dense"], measures=["token_f1"], settings=SETTINGS) == {}
    other = [{**r, "id": r["id"] + "-other"} for r in rows("hybrid", NEW_F1, NEW_HIT)]
    out = measure_comparison(rows("dense", BASE_F1, BASE_HIT) + other, ["dense", "hybrid"], measures=["token_f1"],
                             settings=SETTINGS)
    assert out["measures"]["token_f1"]["configs"]["hybrid"] == {
        "status": "unavailable", "reason": "no answerable question answered by both dense and hybrid"}
