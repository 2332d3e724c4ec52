"""Support (groundedness) calibrated on hand support grades: labels, per-scorer calibration,
canaries at the all-grades threshold, verdicts, shares and the split retrieved-by-correct table."""
from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from rag_ablation.evaluation.judges.support_eval import (LEXICAL, LLM, MIN_LABELS, calibrate_scorer,
                                                         canary_acceptance, config_split, config_support,
                                                         evaluate_support, labels_of, level_counts, primary_scorer,
                                                         split_two_by_two, support_verdicts)
from rag_ablation.evaluation.judges.thresholds import best_threshold

SETTINGS = dict(folds=5, seed=0, resamples=200, confidence=0.95, crossfit_seeds=5, refit_resamples=20)


def _graded(n: int = 24) -> tuple[dict, dict, dict]:
    """``n`` answers of config ``c``: every third ``supported``, the others ``partly`` / ``not``;
    a scorer that ranks them perfectly (supported 0.8 + i/1000, others 0.2 + i/1000) and one
    that ranks them backwards."""
    levels = {("c", f"q{i:02d}"): ("supported" if i % 3 == 0 else "partly" if i % 3 == 1 else "not")
              for i in range(n)}
    good = {k: (0.8 if v == "supported" else 0.2) + int(k[1][1:]) / 1000 for k, v in levels.items()}
    bad = {k: 1 - v for k, v in good.items()}
    return levels, good, bad


def test_only_supported_is_positive_and_levels_are_counted():
    levels = {("c", "a"): "supported", ("c", "b"): "partly", ("c", "c"): "not", ("d", "a"): "supported"}
    assert labels_of(levels) == {("c", "a"): True, ("c", "b"): False, ("c", "c"): False, ("d", "a"): True}
    assert level_counts(levels) == {"supported": 2, "partly": 1, "not": 1}


def test_a_perfect_scorer_has_auc_1_and_a_separating_threshold():
    levels, good, bad = _graded()
    labels = labels_of(levels)
    out = calibrate_scorer(good, labels, **SETTINGS)
    keys = sorted(labels)
    assert out["status"] == "ok" and out["n"] == 24 and out["supported"] == 8 and out["unscored"] == 0
    assert out["auc"]["estimate"] == roc_auc_score([labels[k] for k in keys], [good[k] for k in keys]) == 1.0
    assert out["kappa"]["estimate"] == 1.0
    assert out["threshold"] == best_threshold([good[k] for k in keys], [labels[k] for k in keys])
    assert max(v for k, v in good.items() if not labels[k]) < out["threshold"] <= min(
        v for k, v in good.items() if labels[k])
    backwards = calibrate_scorer(bad, labels, **SETTINGS)
    assert backwards["auc"]["estimate"] == 0.0 and backwards["kappa"]["estimate"] <= 0.0


def test_answers_without_a_score_are_counted_not_scored():
    levels, good, _ = _graded()
    labels = labels_of(levels)
    missing = dict(good)
    for k in sorted(missing)[:4]:
        missing[k] = None
    out = calibrate_scorer(missing, labels, **SETTINGS)
    assert out["n"] == 20 and out["unscored"] == 4


def test_too_few_or_one_kind_of_labels_is_unavailable_with_the_reason():
    levels, good, _ = _graded(MIN_LABELS - 1)
    few = calibrate_scorer(good, labels_of(levels), **SETTINGS)
    assert few["status"] == "unavailable" and f"fewer than {MIN_LABELS}" in few["reason"]
    all_levels, all_good, _ = _graded()
    one = calibrate_scorer(all_good, {k: False for k in all_levels}, **SETTINGS)
    assert one["status"] == "unavailable" and "same level" in one["reason"]
    assert "auc" not in one and "threshold" not in one


def test_primary_is_the_best_median_kappa():
    cal = {LEXICAL: {"status": "ok", "kappa": {"estimate": 0.3}},
           LLM: {"status": "ok", "kappa": {"estimate": 0.5}}}
    assert primary_scorer(cal) == LLM
    assert primary_scorer({LEXICAL: cal[LEXICAL], LLM: {"status": "unavailable"}}) == LEXICAL
    assert primary_scorer({LEXICAL: {"status": "unavailable"}, LLM: {"status": "unavailable"}}) is None


def test_canaries_are_judged_at_the_all_grades_threshold_and_flagged_when_wrong():
    cal = {LEXICAL: {"status": "ok", "threshold": 0.5}, LLM: {"status": "unavailable"}}
    canaries = [{"kind": "unrelated_copy", LEXICAL: 0.1, "p_supported": 0.9},
                {"kind": "unrelated_copy", LEXICAL: 0.7, "p_supported": 0.9},
                {"kind": "shown_copy", LEXICAL: 1.0, "p_supported": 0.2},
                {"kind": "shown_copy", LEXICAL: None, "p_supported": 0.2}]
    out = canary_acceptance(canaries, cal, confidence=0.95)
    assert set(out["scorers"]) == {LEXICAL}, "an uncalibrated scorer judges no canary"
    unrelated, shown = out["scorers"][LEXICAL]["unrelated_copy"], out["scorers"][LEXICAL]["shown_copy"]
    assert (unrelated["accepted_count"], unrelated["n"], unrelated["expected_accept"]) == (1, 2, False)
    assert (shown["accepted_count"], shown["n"], shown["invalid"], shown["expected_accept"]) == (1, 1, 1, True)
    assert out["flags"] == [{"scorer": LEXICAL, "kind": "unrelated_copy", "against": 1, "n": 2,
                             "expected_accept": False}]
    assert canary_acceptance([], cal, confidence=0.95)["status"] == "unavailable"


def test_verdicts_take_the_hand_label_first_then_the_threshold():
    keys = [("c", "a"), ("c", "b"), ("c", "c"), ("c", "d")]
    labels = {("c", "a"): False}
    scores = {("c", "a"): 0.9, ("c", "b"): 0.9, ("c", "c"): 0.1, ("c", "d"): None}
    assert support_verdicts(keys, labels, scores, 0.5) == {("c", "a"): False, ("c", "b"): True,
                                                           ("c", "c"): False, ("c", "d"): None}
    assert support_verdicts(keys, labels, scores, None) == {("c", "a"): False, ("c", "b"): None,
                                                            ("c", "c"): None, ("c", "d"): None}


def test_shares_use_wilson_intervals():
    levels = {("c", "a"): "supported", ("c", "b"): "not", ("c", "c"): "partly"}
    verdicts = {("c", "a"): True, ("c", "b"): False, ("c", "c"): False, ("c", "d"): True, ("c", "e"): None}
    out = config_support("c", ["a", "b", "c", "d", "e"], levels, verdicts, confidence=0.95)
    assert out["hand"]["estimate"] == pytest.approx(1 / 3) and out["hand"]["n"] == 3
    assert out["judged"]["estimate"] == pytest.approx(2 / 4) and out["judged"]["n"] == 4
    assert out["hand"]["low"] < 1 / 3 < out["hand"]["high"]
    assert config_support("c", [], {}, {}, confidence=0.95) == {"hand": None, "judged": None}


def _row(i, *, answerable=1, relevant=1, correct=True):
    return {"id": i, "answerable": answerable, "relevant_in_prompt": relevant if answerable else None,
            "correct": correct}


def test_split_table_puts_every_known_answer_in_one_cell():
    rows = [_row("a"), _row("b"), _row("c"), _row("d", correct=False), _row("e", relevant=0),
            _row("f", correct=None), _row("g", answerable=0)]
    supported = {"a": True, "b": False, "c": None, "e": False}
    out = split_two_by_two(rows, supported)
    assert out["retrieved"] == {"correct_supported": 1, "correct_unsupported": 1, "correct_support_unknown": 1,
                                "wrong": 1}
    assert out["missed"] == {"correct_supported": 0, "correct_unsupported": 1, "correct_support_unknown": 0,
                             "wrong": 0}
    assert out["unknown"] == 1 and out["unanswerable_skipped"] == 1
    md = config_split("c", rows, {("c", k): v for k, v in supported.items()}, correct_source="hand grades",
                      support_source="hand grades, else lexical_support")["markdown"]
    assert "| yes | 1 | 1 | 1 | 1 |" in md and "| no | 0 | 1 | 0 | 0 |" in md
    assert "support from hand grades, else lexical_support" in md


def test_evaluate_support_calibrates_both_scorers_and_judges_ungraded_answers():
    levels, good, bad = _graded()
    keys = sorted(levels) + [("c", "new")]
    scores = {LEXICAL: {**good, ("c", "new"): 0.95}, LLM: bad}
    block, verdicts = evaluate_support(levels=levels, scores=scores, canaries=[], keys=keys, **SETTINGS)
    assert block["status"] == "ok" and block["levels"] == {"supported": 8, "partly": 8, "not": 8}
    assert block["primary"] == LEXICAL and block["source"] == "hand grades, else lexical_support"
    assert verdicts[("c", "new")] is True, "an ungraded answer is judged by the primary's threshold"
    assert all(verdicts[k] == (v == "supported") for k, v in levels.items())
    kappas = [cohen_kappa_score([v == "supported" for v in levels.values()],
                                [good[k] >= block["calibration"][LEXICAL]["threshold"] for k in levels])]
    assert kappas == [1.0]
    none, v2 = evaluate_support(levels={}, scores={}, canaries=[], keys=keys, **SETTINGS)
    assert none["status"] == "no grades" and none["primary"] is None and set(v2.values()) == {None}


def test_a_model_not_asked_is_one_reason_and_its_canaries_still_judge_lexical_support():
    """``not_asked`` (support.ask_llm false): the llm scorer is unavailable with that reason, not
    a count of unscored grades; the lexical scorer is calibrated and judged on the canaries, which
    carry no P(SUPPORTED)."""
    levels, good, _ = _graded()
    canaries = [{"kind": "unrelated_copy", "lexical_support": 0.0, "p_supported": None},
                {"kind": "shown_copy", "lexical_support": 1.0, "p_supported": None}]
    block, _ = evaluate_support(levels=levels, scores={LEXICAL: good, LLM: {}}, canaries=canaries,
                                keys=sorted(levels), not_asked="support.ask_llm is false", **SETTINGS)
    assert block["calibration"][LLM]["status"] == "unavailable"
    assert block["calibration"][LLM]["reason"] == "support.ask_llm is false" and block["calibration"][LLM]["n"] == 0
    assert block["primary"] == LEXICAL and block["canaries"]["status"] == "ok"
    assert set(block["canaries"]["scorers"]) == {LEXICAL} and block["canaries"]["flags"] == []
