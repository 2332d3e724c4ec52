"""Decline rate, CRAG-style score and the decline-threshold sweep (rag_ablation.evaluation.judges.unanswerable).

Fixtures are hand-built; expected values are written as the docstrings' formulas over counts
read off the fixture, and checked against scikit-learn (ROC AUC, balanced accuracy) on
random inputs with ties.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from rag_ablation.evaluation.statistics.inference import wilson_interval
from rag_ablation.evaluation.judges.unanswerable import (
    CragScore,
    DeclineRate,
    Sweep,
    crag_score,
    decline_rate,
    threshold_sweep,
)


def row(qid: str, *, answerable=1, refusal=0, correct=True) -> dict:
    return {"config": "dense", "id": qid, "answerable": answerable, "refusal": refusal,
            "relevant_in_prompt": 1 if answerable else None, "correct": correct}


ROWS = [
    row("a1", correct=True),  # +1
    row("a2", correct=1),  # +1
    row("a3", refusal=1, correct=False),  # 0: declined
    row("a4", correct=False),  # -1
    row("a5", correct=None),  # unknown: no score
    row("u3", answerable=0, refusal=1, correct=None),  # +1: declined
    row("u1", answerable=0, refusal=1, correct=None),  # +1
    row("u2", answerable=0, refusal=0, correct=True),  # -1: asserted an answer (verdict not read)
]
PER_QUESTION = [1, 1, 0, -1, 1, 1, -1]  # the scored questions, in order


# ----------------------------------------------------------------------- decline rate


def test_decline_rate_on_the_unanswerable_slice():
    rate = decline_rate(ROWS)
    assert isinstance(rate, DeclineRate)
    assert (rate.declines, rate.n) == (2, 3)
    w = wilson_interval(2, 3)
    assert (rate.estimate, rate.low, rate.high) == (2 / 3, w.low, w.high)
    assert rate.confidence == 0.95
    assert rate.answered_ids == ("u2",)
    d = rate.as_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert d["answered_ids"] == ["u2"]


def test_decline_rate_confidence_passes_through():
    rate = decline_rate(ROWS, confidence=0.8)
    w = wilson_interval(2, 3, confidence=0.8)
    assert (rate.low, rate.high, rate.confidence) == (w.low, w.high, 0.8)


def test_decline_rate_none_without_unanswerable_questions():
    assert decline_rate([]) is None
    assert decline_rate([row("a1"), row("a2", refusal=1)]) is None


# ------------------------------------------------------------------------- CRAG score


def test_crag_score_counts_and_formulas():
    c = crag_score(ROWS)
    assert isinstance(c, CragScore)
    assert (c.answerable_correct, c.answerable_declined, c.answerable_wrong) == (2, 1, 1)
    assert (c.unanswerable_declined, c.unanswerable_answered) == (2, 1)
    assert c.n == 8 and c.unknown == 1 and c.unknown_ids == ("a5",)
    scored = 2 + 1 + 1 + 2 + 1
    assert c.scored == scored == len(PER_QUESTION)
    assert (c.correct, c.missing, c.wrong) == (2 + 2, 1, 1 + 1)
    assert c.score == pytest.approx(sum(PER_QUESTION) / len(PER_QUESTION))
    assert c.score == ((2 + 2) - (1 + 1)) / scored
    assert c.accuracy == (2 + 2) / scored
    assert c.hallucination == (1 + 1) / scored
    assert c.missing_rate == 1 / scored
    assert c.score == pytest.approx(c.accuracy - c.hallucination)
    assert c.accuracy + c.hallucination + c.missing_rate == pytest.approx(1.0)


def test_crag_score_extremes():
    perfect = crag_score([row("a1"), row("u1", answerable=0, refusal=1)])
    assert perfect.score == 1.0 and perfect.hallucination == 0.0
    worst = crag_score([row("a1", correct=False), row("u1", answerable=0, refusal=0)])
    assert worst.score == -1.0 and worst.accuracy == 0.0
    silent = crag_score([row("a1", refusal=1), row("a2", refusal=1)])
    assert silent.score == 0.0 and silent.missing_rate == 1.0


def test_crag_score_empty_gives_none():
    for rows in ([], [row("a1", correct=None)]):
        c = crag_score(rows)
        assert c.scored == 0
        assert c.score is c.accuracy is c.hallucination is c.missing_rate is None


def test_crag_score_unanswerable_rows_need_no_verdict():
    c = crag_score([{"id": "u1", "answerable": 0, "refusal": 1}])
    assert c.score == 1.0


def test_crag_score_as_dict_is_json_ready():
    d = crag_score(ROWS).as_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert (d["correct"], d["missing"], d["wrong"], d["scored"]) == (4, 1, 2, 7)


# -------------------------------------------------------------------- threshold sweep

#                 0     1     2     3     4     5     6
SCORES = [0.9, 0.8, 0.8, 0.6, 0.5, 0.3, 0.2]
ANSWERABLE = [1, 1, 0, 0, 1, 0, 0]
VERDICTS = [True, False, True, None, True, False, None]
NA, NU = 3, 4


def expected_point(t: float) -> dict:
    """The SweepPoint fields at threshold t, straight from the definitions."""
    answered = [i for i, s in enumerate(SCORES) if s >= t]
    k_a = sum(ANSWERABLE[i] for i in answered)
    k_u = len(answered) - k_a
    known = [i for i in answered if VERDICTS[i] is not None]
    right = [i for i in known if VERDICTS[i]]
    return {
        "threshold": t,
        "answered": len(answered),
        "answerable_answered": k_a,
        "unanswerable_answered": k_u,
        "coverage": len(answered) / len(SCORES),
        "accuracy": k_a / len(answered) if answered else None,
        "answered_known": len(known),
        "answered_correct": len(right),
        "answer_accuracy": len(right) / len(known) if known else None,
        "false_decline_rate": (NA - k_a) / NA,
        "false_answer_rate": k_u / NU,
        "balanced_accuracy": (k_a / NA + (NU - k_u) / NU) / 2,
    }


def test_sweep_thresholds_and_points():
    sweep = threshold_sweep(SCORES, ANSWERABLE, correct=VERDICTS)
    assert isinstance(sweep, Sweep)
    assert (sweep.n, sweep.n_answerable, sweep.n_unanswerable) == (7, NA, NU)
    assert sweep.sentinel == math.nextafter(0.9, math.inf)
    assert [p.threshold for p in sweep.points] == [0.2, 0.3, 0.5, 0.6, 0.8, 0.9, sweep.sentinel]
    for p in sweep.points:
        assert p.as_dict() == pytest.approx(expected_point(p.threshold)), p.threshold


def test_sweep_hand_values():
    points = {p.threshold: p for p in threshold_sweep(SCORES, ANSWERABLE, correct=VERDICTS).points}
    lowest, top = points[0.2], points[0.9]
    assert (lowest.coverage, lowest.accuracy) == (1.0, 3 / 7)
    assert (lowest.false_decline_rate, lowest.false_answer_rate) == (0.0, 1.0)
    assert lowest.answer_accuracy == 3 / 5  # known verdicts 0,1,2,4,5; correct 0,2,4
    # strict rule: both questions scoring exactly 0.8 are answered at t = 0.8
    assert points[0.8].answered == 3 and points[0.8].accuracy == 2 / 3
    assert (top.answered, top.accuracy, top.false_decline_rate, top.false_answer_rate) == (1, 1.0, 2 / 3, 0.0)
    assert points[0.5].balanced_accuracy == (1 + 2 / 4) / 2


def test_sweep_sentinel_declines_everything():
    last = threshold_sweep(SCORES, ANSWERABLE).points[-1]
    assert last.threshold > max(SCORES) and math.isfinite(last.threshold)
    assert (last.answered, last.coverage, last.accuracy) == (0, 0.0, None)
    assert (last.false_decline_rate, last.false_answer_rate, last.balanced_accuracy) == (1.0, 0.0, 0.5)


def test_sweep_best_and_separation():
    sweep = threshold_sweep(SCORES, ANSWERABLE)
    # balanced accuracies: 0.2 -> .5, 0.3 -> .625, 0.5 -> .75, 0.6 -> .583, 0.8 -> .708, 0.9 -> .667
    assert sweep.best.threshold == 0.5
    assert sweep.best.balanced_accuracy == 0.75
    assert (sweep.best.false_decline_rate, sweep.best.false_answer_rate) == (0 / NA, 2 / NU)
    # answerable 0.9, 0.8, 0.5 against unanswerable 0.8, 0.6, 0.3, 0.2: wins 4 + (3 + 1/2) + 2
    assert sweep.auc == (4 + 3.5 + 2) / (NA * NU)
    assert sweep.auc == pytest.approx(roc_auc_score(ANSWERABLE, SCORES))
    assert sweep.answerable_mean == pytest.approx((0.9 + 0.8 + 0.5) / 3)
    assert sweep.answerable_median == 0.8
    assert sweep.unanswerable_mean == pytest.approx((0.8 + 0.6 + 0.3 + 0.2) / 4)
    assert sweep.unanswerable_median == pytest.approx((0.3 + 0.6) / 2)


def test_sweep_best_ties_go_to_the_lowest_threshold():
    # 0.2 answers both answerable and one unanswerable; 0.4 answers one answerable and none
    # of the unanswerable: both give balanced accuracy 3/4
    sweep = threshold_sweep([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    tied = [p.threshold for p in sweep.points if p.balanced_accuracy == 0.75]
    assert tied == [0.2, 0.4]
    assert sweep.best.threshold == 0.2
    # no threshold separates at all: answering everything (the lowest) is best
    flat = threshold_sweep([0.5, 0.5, 0.5], [1, 0, 1])
    assert flat.best.threshold == 0.5 and flat.best.coverage == 1.0 and flat.auc == 0.5


def test_sweep_perfect_separation():
    sweep = threshold_sweep([0.1, 0.2, 0.7, 0.9], [False, False, True, True])
    assert sweep.auc == 1.0
    assert sweep.best.threshold == 0.7 and sweep.best.balanced_accuracy == 1.0
    assert (sweep.best.false_decline_rate, sweep.best.false_answer_rate) == (0.0, 0.0)


@pytest.mark.parametrize("seed", range(5))
def test_sweep_against_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = 60
    answerable = rng.random(n) < 0.6
    answerable[:2] = [True, False]
    scores = np.round(rng.normal(answerable * 0.8, 1.0), 1)  # rounding makes ties
    sweep = threshold_sweep(scores, answerable)
    assert sweep.auc == pytest.approx(roc_auc_score(answerable, scores))
    for p in sweep.points:
        expected = balanced_accuracy_score(answerable, scores >= p.threshold)
        assert p.balanced_accuracy == pytest.approx(expected)
    best = max(p.balanced_accuracy for p in sweep.points)
    assert sweep.best.threshold == min(p.threshold for p in sweep.points if p.balanced_accuracy >= best - 1e-12)
    assert sweep.answerable_median == float(np.median(scores[answerable]))


def test_sweep_curve_for_vega_lite():
    sweep = threshold_sweep(SCORES, ANSWERABLE, correct=VERDICTS)
    curve = sweep.curve()
    assert [set(p) for p in curve] == [{"threshold", "coverage", "accuracy"}] * len(curve)
    # the sentinel point answers nothing: its accuracy is undefined and it is left out
    assert [p["threshold"] for p in curve] == [0.2, 0.3, 0.5, 0.6, 0.8, 0.9]
    assert curve[0] == {"threshold": 0.2, "coverage": 1.0, "accuracy": 3 / 7}
    correct = sweep.curve("correct")
    assert correct[0] == {"threshold": 0.2, "coverage": 1.0, "accuracy": 3 / 5}
    assert json.loads(json.dumps(curve, allow_nan=False)) == curve


def test_sweep_without_verdicts_has_no_answer_accuracy():
    sweep = threshold_sweep(SCORES, ANSWERABLE)
    assert not sweep.has_verdicts
    assert all(p.answer_accuracy is None and p.answered_known == 0 for p in sweep.points)
    all_unknown = threshold_sweep(SCORES, ANSWERABLE, correct=[None] * 7)
    assert all_unknown.has_verdicts and all(p.answer_accuracy is None for p in all_unknown.points)
    assert all_unknown.curve("correct") == []


def test_sweep_as_dict_is_json_ready():
    sweep = threshold_sweep(np.array(SCORES), np.array(ANSWERABLE, dtype=bool), correct=np.array(VERDICTS))
    d = sweep.as_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert d["best"]["threshold"] == 0.5 and len(d["points"]) == 7
    assert d["auc"] == sweep.auc


# ------------------------------------------------------------------------- bad input


@pytest.mark.bad_input
@pytest.mark.parametrize(
    ("scores", "answerable", "correct", "message"),
    [
        ([0.1, 0.2, 0.3], [1, 0], None, "answerable has 2 values but scores has 3"),
        ([0.1, 0.2], [1, 0], [True], "correct has 1 values but scores has 2"),
        ([0.1, math.nan], [1, 0], None, "non-finite value.*nan at index 1"),
        ([0.1, math.inf], [1, 0], None, "non-finite value.*inf at index 1"),
        ([0.1, None], [1, 0], None, "non-finite"),
        ([], [], None, "scores is empty"),
        ([[0.1, 0.2]], [1, 0], None, "1-D array"),
        (["high", 0.2], [1, 0], None, "must hold numbers"),
        ([0.1, 0.2], [1, 2], None, r"answerable\[1\] is 2; expected a bool or 0/1"),
        ([0.1, 0.2], [1.0, 0.0], None, r"answerable\[0\] is 1.0"),
        ([0.1, 0.2], [1, 0], ["yes", None], r"correct\[0\] is 'yes'"),
        ([0.1, 0.2], [1, 1], None, "found 2 answerable and 0 unanswerable"),
        ([0.1, 0.2], [0, 0], None, "found 0 answerable and 2 unanswerable"),
    ],
)
def test_sweep_bad_input(scores, answerable, correct, message):
    with pytest.raises(ValueError, match=message):
        threshold_sweep(scores, answerable, correct=correct)


@pytest.mark.bad_input
def test_sweep_curve_bad_accuracy():
    sweep = threshold_sweep(SCORES, ANSWERABLE)
    with pytest.raises(ValueError, match="expected one of \\['answerable', 'correct'\\]"):
        sweep.curve("precision")
    with pytest.raises(ValueError, match="needs answer verdicts"):
        sweep.curve("correct")


@pytest.mark.bad_input
@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([row("a1"), row("a1")], "'a1' appears in rows 0 and 1"),
        ([row("u1", answerable=0, refusal="no")], "refusal='no'; expected a bool or 0/1"),
        ([{"id": "u1", "answerable": 0}], "no 'refusal' key"),
    ],
)
@pytest.mark.parametrize("function", [decline_rate, crag_score])
def test_row_functions_bad_rows(function, rows, message):
    with pytest.raises(ValueError, match=message):
        function(rows)


@pytest.mark.bad_input
def test_crag_score_needs_verdict_key_on_answerable_rows():
    with pytest.raises(ValueError, match="no 'correct' key"):
        crag_score([{"id": "a1", "answerable": 1, "refusal": 0}])


@pytest.mark.bad_input
@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5])
@pytest.mark.parametrize("rows", [ROWS, []])
def test_decline_rate_bad_confidence(rows, confidence):
    with pytest.raises(ValueError, match="confidence must be strictly between 0 and 1"):
        decline_rate(rows, confidence=confidence)
