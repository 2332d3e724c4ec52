from __future__ import annotations

import pytest

from rag_ablation.evaluation.scoring.answer_measures import (answer_measures, answer_scores, contains_reference,
                                                     normalize_answer, token_f1)

PHRASES = ["don't say", "does not say"]


def test_normalize_and_token_f1():
    assert normalize_answer("The  Answer, is: 42!") == "answer is 42"
    # answer tokens {at, 0230, utc, nightly}, reference {0230, utc}: P = 2/4, R = 2/2
    assert token_f1("At 02:30 UTC nightly.", "02:30 UTC") == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert token_f1("nothing shared", "02:30 UTC") == 0.0
    assert token_f1("", "") == 1.0
    assert contains_reference("It runs at 02:30 UTC, every night.", "02:30 UTC")
    assert not contains_reference("It runs at night.", "02:30 UTC")


def test_answer_scores_per_question_then_means():
    a = answer_scores("02:30 UTC", "02:30 UTC", answerable=True, phrases=PHRASES)
    b = answer_scores("The passages don't say.", "Eight seconds.", answerable=True, phrases=PHRASES)
    u = answer_scores("The handbook does not say.", "The handbook does not say.", answerable=False, phrases=PHRASES)
    assert a == {"refusal": 0, "contains_reference": 1, "token_f1": 1.0}
    assert b == {"refusal": 1, "contains_reference": 0, "token_f1": 0.0}
    assert u == {"refusal": 1, "contains_reference": None, "token_f1": None}
    rows = [{**a, "answerable": 1}, {**b, "answerable": 1}, {**u, "answerable": 0}]
    assert answer_measures(rows) == {"n_answers": 3, "refusal_rate": 0.5, "contains_reference": 0.5,
                                     "token_f1": pytest.approx((1.0 + 0.0) / 2), "unanswerable_refusal_rate": 1.0}
    assert answer_measures([]) == {"n_answers": 0}


def test_lexical_support_is_averaged_over_the_answers_that_have_one():
    """Two answerable answers with support 1 and 1/3, one refusal without (not counted as 0);
    no answer with one: no ``lexical_support`` key at all."""
    a = {**answer_scores("02:30 UTC", "02:30 UTC", answerable=True, phrases=PHRASES), "lexical_support": 1.0}
    c = {**answer_scores("It runs at noon.", "02:30 UTC", answerable=True, phrases=PHRASES), "lexical_support": 1 / 3}
    b = {**answer_scores("The passages don't say.", "x", answerable=True, phrases=PHRASES), "lexical_support": None}
    out = answer_measures([{**r, "answerable": 1} for r in (a, b, c)])
    assert (out["lexical_support"], out["n_lexical_support"]) == (round((1.0 + 1 / 3) / 2, 6), 2)
    no_support = answer_measures([{**b, "answerable": 1}, {**a, "answerable": 1, "lexical_support": None}])
    assert "lexical_support" not in no_support and "n_lexical_support" not in no_support
