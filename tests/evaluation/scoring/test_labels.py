from __future__ import annotations

import pytest

from rag_ablation.data.text import normalize

from rag_ablation.evaluation.scoring.labels import relevant_chunks, span_windows


def test_normalize_collapses_whitespace():
    assert normalize("  a\n\n b\tc ") == "a b c"


def test_windows_of_a_long_span():
    span = "abcdefghij"
    w = span_windows(span, 4)
    assert w == {span[i : i + 4] for i in range(len(span) - 4 + 1)}


def test_a_short_span_is_its_own_window():
    assert span_windows("abc", 30) == {"abc"}


@pytest.mark.bad_input
def test_window_must_be_positive():
    with pytest.raises(ValueError, match="window must be positive"):
        span_windows("abc", 0)


def test_whole_span_partial_window_and_miss():
    span = "the quick brown fox jumps over the lazy dog near the river bank"
    bodies = [
        ("whole", "d", "Intro. " + span + " Outro."),
        ("tail", "d", "...the lazy dog near the river bank, said the report"),  # 36 chars of the span
        ("short", "d", "near the river bank"),  # 19 chars < window
        ("none", "d", "unrelated text"),
    ]
    rel = relevant_chunks({"q": span}, bodies, window=30)
    assert rel == {"q": ["whole", "tail"]}


def test_matching_ignores_whitespace_differences():
    rel = relevant_chunks({"q": "alpha beta gamma"}, [("c", "d", "alpha\n  beta\tgamma")], window=30)
    assert rel["q"] == ["c"]


def test_same_doc_only_restricts_to_the_question_document():
    span = "a span long enough to count as one"
    bodies = [("c1", "a.md", span), ("c2", "b.md", span)]
    assert relevant_chunks({"q": span}, bodies, window=30)["q"] == ["c1", "c2"]
    assert relevant_chunks({"q": span}, bodies, window=30, span_docs={"q": "b.md"})["q"] == ["c2"]


def test_every_question_appears_even_without_a_match():
    assert relevant_chunks({"q": "nothing like this anywhere"}, [("c", "d", "text")], window=10) == {"q": []}


def test_a_list_of_spans_labels_the_union():
    one = "the settlement window closes at five in the afternoon"
    two = "retries stop after the third failed attempt of the day"
    bodies = [("a", "d", f"x {one} y"), ("b", "d", f"z {two}"), ("c", "e", one), ("n", "d", "nothing")]
    union = relevant_chunks({"q": [one, two], "single": one}, bodies, window=30)
    assert union == {"q": ["a", "b", "c"], "single": ["a", "c"]}
    assert union["q"] == sorted(set(relevant_chunks({"q": one}, bodies)["q"]) | set(relevant_chunks({"q": two}, bodies)["q"]))
    same_doc = relevant_chunks({"q": (one, two)}, bodies, window=30, span_docs={"q": "d"})
    assert same_doc == {"q": ["a", "b"]}
    assert relevant_chunks({"q": [one]}, bodies) == relevant_chunks({"q": one}, bodies)
