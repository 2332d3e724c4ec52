"""Lexical support: the share of an answer's content words found in the passages its prompt showed."""
from __future__ import annotations

import pytest

from rag_ablation.evaluation.scoring.grounding import (
    REASONS,
    STOP_WORDS,
    answer_support,
    content_words,
    lexical_support,
)

SHOWN = "API keys are rotated every 90 days by the platform team; the old key stays valid for 24 hours."
UNRELATED = "Settlement runs nightly at 02:00 UTC and writes one ledger row per agency."


def test_an_answer_copied_from_a_shown_passage_scores_1():
    assert lexical_support(SHOWN, [UNRELATED, SHOWN]) == 1.0


def test_an_invented_number_costs_one_content_word():
    answer = "API keys are rotated every 45 days by the platform team."
    n = len(content_words(answer))
    assert "45" in content_words(answer) and n == 7  # api keys rotated 45 days platform team
    assert lexical_support(answer, [SHOWN]) == pytest.approx((n - 1) / n)


def test_an_answer_copied_from_a_passage_not_shown_scores_only_its_shared_words():
    content = content_words(UNRELATED)  # settlement runs nightly 02 00 utc writes one ledger row per agency
    shown = set(content_words(SHOWN))
    assert len(content) == 12 and [w for w in content if w in shown] == []
    assert lexical_support(UNRELATED, [SHOWN]) == 0.0
    near = "Keys are rotated nightly at 02:00 UTC."  # keys rotated nightly 02 00 utc: 2 of 6 shown
    assert lexical_support(near, [SHOWN]) == pytest.approx(2 / 6)


def test_stop_words_and_case_are_ignored():
    assert lexical_support("THE KEYS ARE ROTATED.", ["keys rotated"]) == 1.0
    assert lexical_support("The keys, they are rotated by us", ["Keys; ROTATED"]) == 1.0
    assert content_words("Is it the one? No, not 90.") == ["one", "no", "not", "90"]
    assert {"the", "every", "is"} <= STOP_WORDS and not {"no", "not"} & STOP_WORDS


@pytest.mark.parametrize("answer", ["", "   ", "The, of and it.", "?!"])
def test_an_answer_without_content_words_has_no_support_not_0_or_1(answer):
    assert lexical_support(answer, [SHOWN]) is None
    assert answer_support(answer, ["p"], {"p": SHOWN}, answerable=True, refused=False).reason == "no content words"


def test_undefined_answers_say_why():
    texts = {"p": SHOWN}
    assert answer_support("keys", ["p"], texts, answerable=True, refused=False).value == 1.0
    cases = {
        "unanswerable": answer_support("keys", ["p"], texts, answerable=False, refused=False),
        "refusal": answer_support("The passages do not say.", ["p"], texts, answerable=True, refused=True),
        "no content words": answer_support("it is", ["p"], texts, answerable=True, refused=False),
        "no passage shown": answer_support("keys", [], texts, answerable=True, refused=False),
        "passage text missing": answer_support("keys", ["p", "q"], texts, answerable=True, refused=False),
    }
    assert list(cases) == list(REASONS)
    assert {reason: (s.value, s.reason) for reason, s in cases.items()} == {r: (None, r) for r in REASONS}
