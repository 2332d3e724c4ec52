"""The support score (rag_ablation.evaluation.judges.support): strict parse, P(SUPPORTED) from the
first token's alternatives, the prompt, the scorer through the prompt cache, and the canaries."""
from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

import pytest

from rag_ablation.evaluation.judges.support import (CANARY_EXPECTED, CANARY_KINDS, SupportItem, answer_canaries,
                                                    opening_sentences, p_supported, parse_support, score_support,
                                                    shown_texts, support_canaries, support_messages)
from rag_ablation.evaluation.scoring.graded import doc_of
from rag_ablation.llm.client.base import Backend, Generation
from rag_ablation.llm.client.prompt_cache import CachedLLM, PromptCache
from rag_ablation.llm.client.prompting import load_template

from conftest import ROOT


@pytest.mark.parametrize("reply, verdict", [
    ("SUPPORTED", True), ("UNSUPPORTED", False), ("supported", True), ("Unsupported.", False),
    ("**SUPPORTED**", True), ("  SUPPORTED!\n", True), ('"UNSUPPORTED"', False),
    ("SUPPORTED or UNSUPPORTED", None), ("The answer is SUPPORTED", None), ("", None), ("SUP", None),
    ("UN SUPPORTED", None), ("[1]", None), ("Yes", None),
])
def test_support_replies_are_parsed_strictly(reply, verdict):
    assert parse_support(reply) is verdict


def test_p_supported_sums_the_tokens_that_begin_each_label():
    lp = math.log
    alternatives = [("S", lp(0.05)), (" SUP", lp(0.02)), ("Supp", lp(0.01)), ("UN", lp(0.03)), ("Un", lp(0.01)),
                    ("[", lp(0.4)), ("1", lp(0.2)), ("The", lp(0.1)), ("", lp(0.01))]
    m_s, m_u = 0.05 + 0.02 + 0.01, 0.03 + 0.01
    assert p_supported(alternatives) == pytest.approx(m_s / (m_s + m_u))
    assert p_supported([("UN", lp(0.3))]) == pytest.approx(0.0)
    assert p_supported([("**S", lp(0.3))]) == pytest.approx(1.0)


@pytest.mark.parametrize("alternatives", [None, [], [("[", math.log(0.5)), ("The", math.log(0.2))]])
def test_p_supported_is_none_without_label_mass(alternatives):
    assert p_supported(alternatives) is None


def test_the_prompt_shows_the_passages_numbered_in_prompt_order():
    template = load_template(ROOT / "prompts", "support", needs=["question", "passages", "answer"])
    (message,) = support_messages(template, "When?", ["second text", "first text"], "At two.")
    text = message["content"]
    assert message["role"] == "user" and "[1] second text\n\n[2] first text" in text
    assert "Question: When?" in text and "At two." in text and "SUPPORTED or UNSUPPORTED" in text


class Scripted(Backend):
    """A backend answering each prompt with a fixed reply and first-token alternatives."""

    def __init__(self, reply: str, alternatives: Sequence[tuple[str, float]] | None) -> None:
        self.reply, self.alternatives, self.asked = reply, alternatives, 0

    def identity(self) -> dict[str, Any]:
        return {"backend": "scripted"}

    def settings(self) -> dict[str, Any]:
        return {}

    def chat(self, messages, *, num_predict, stop=(), top_logprobs=0) -> Generation:
        self.asked += 1
        return Generation(text=self.reply, prompt_tokens=1, completion_tokens=1, seconds=0.0,
                          top_logprobs=tuple(self.alternatives) if top_logprobs and self.alternatives else None)


def test_score_support_goes_through_the_cache(tmp_path):
    backend = Scripted(" Supported.\n", [("S", math.log(0.3)), ("UN", math.log(0.1))])
    llm = CachedLLM(backend, PromptCache(tmp_path / "p.sqlite"))
    items = [SupportItem("q", ("passage",), "a"), SupportItem("q", ("passage",), "b")]
    scores = score_support(llm, "{question} {passages} {answer}", items, num_predict=6, top_logprobs=20)
    assert [(s.reply, s.verdict) for s in scores] == [("Supported.", True)] * 2
    assert scores[0].p_supported == pytest.approx(0.3 / (0.3 + 0.1))
    assert scores[0].record() == {"reply": "Supported.", "verdict": "supported", "p_supported": scores[0].p_supported}
    again = score_support(llm, "{question} {passages} {answer}", items, num_predict=6, top_logprobs=20)
    assert again == scores and backend.asked == 2 and llm.stats() == {"calls": 4, "hits": 2, "misses": 2}


def test_no_probabilities_give_no_score(tmp_path):
    llm = CachedLLM(Scripted("maybe", None), PromptCache(tmp_path / "p.sqlite"))
    (score,) = score_support(llm, "{question} {passages} {answer}", [SupportItem("q", ("p",), "a")], num_predict=6,
                             top_logprobs=0)
    assert score.p_supported is None and score.record()["verdict"] == "invalid"


def test_opening_sentences_skip_headings_tables_and_code():
    text = "# Title\n\n| a | b |\n|---|---|\n\nShort one. Then a second sentence here! Third one.\n"
    assert opening_sentences(text) == "Short one. Then a second sentence here!"
    long_first = "A first sentence that is long enough to stand on its own as a canary answer, surely. Second."
    assert opening_sentences(long_first) == long_first.removesuffix(" Second.")
    assert opening_sentences("```\nprint(1). x\n```\n| only | a table |\n## Heading") == ""


# a tiny corpus: three documents, prose in every chunk
TEXTS = {
    "a.md#0": "Backups run nightly at two. They are kept for thirty days.",
    "a.md#1": "# Restores\n\nA restore needs the --force flag. It takes about an hour.",
    "b.md#0": "The rate limit is five hundred requests per minute. Bursts are allowed.",
    "b.md#1": "Keys rotate every ninety days. Old keys stop working a week later.",
    "c.md#0": "On-call engineers acknowledge pages within five minutes. Escalation follows.",
}
QUESTIONS = {"q1": "When do backups run?", "q2": "What is the rate limit?", "q3": "How fast are pages acknowledged?"}
RECORDS = [
    {"id": "q2", "answer": "Five hundred per minute.", "passages": ["b.md#0", "a.md#0"]},
    {"id": "q1", "answer": "At two.", "passages": ["a.md#0", "a.md#1"]},
    {"id": "q3", "answer": "Within five minutes.", "passages": ["c.md#0"]},
]


def test_canaries_copy_an_unshown_document_and_a_shown_passage():
    canaries = support_canaries(RECORDS, QUESTIONS, TEXTS, n=3, seed=0)
    assert [(c.id, c.kind) for c in canaries] == [(q, k) for q in ("q1", "q2", "q3") for k in CANARY_KINDS]
    records = {r["id"]: r for r in RECORDS}
    for c in canaries:
        shown = records[c.id]["passages"]
        assert c.item.passages == tuple(TEXTS[p] for p in shown) and c.item.question == QUESTIONS[c.id]
        assert c.text == c.item.answer == opening_sentences(TEXTS[c.source]) and c.text
        if c.kind == "unrelated_copy":
            assert c.source not in shown and doc_of(c.source) not in {doc_of(p) for p in shown}
        else:
            assert c.source in shown
    assert CANARY_EXPECTED == {"unrelated_copy": False, "shown_copy": True}


def test_canaries_are_seeded_and_independent_of_record_order():
    first = support_canaries(RECORDS, QUESTIONS, TEXTS, n=2, seed=7)
    assert first == support_canaries(list(reversed(RECORDS)), QUESTIONS, TEXTS, n=2, seed=7)
    assert len({c.id for c in first}) == 2 and len(first) == 4
    picks = {tuple((c.id, c.source) for c in support_canaries(RECORDS, QUESTIONS, TEXTS, n=2, seed=s))
             for s in range(20)}
    assert len(picks) > 1, "the seed changes the selection"
    assert support_canaries(RECORDS, QUESTIONS, TEXTS, n=0, seed=0) == []


def test_an_answer_whose_passages_are_unknown_gets_no_canary():
    unknown = {"id": "q1", "answer": "x", "passages": ["a.md#0", "gone.md#3"]}
    assert shown_texts(unknown["passages"], TEXTS) is None and shown_texts([], TEXTS) is None
    assert answer_canaries(unknown, QUESTIONS["q1"], TEXTS, rng=random.Random(0)) == []
    assert support_canaries([unknown], QUESTIONS, TEXTS, n=5, seed=0) == []


def test_no_unrelated_copy_when_every_passage_is_from_a_shown_document():
    only_a = {k: v for k, v in TEXTS.items() if k.startswith("a.md")}
    canaries = answer_canaries(RECORDS[1], QUESTIONS["q1"], only_a, rng=random.Random(0))
    assert [c.kind for c in canaries] == ["shown_copy"]


@pytest.mark.bad_input
def test_a_negative_canary_count_is_one_message():
    with pytest.raises(ValueError, match="support.canaries must be >= 0, got -1"):
        support_canaries(RECORDS, QUESTIONS, TEXTS, n=-1, seed=0)


def test_each_answers_canaries_are_asked_right_after_it():
    from rag_ablation.evaluation.judges.support import grouped_order

    answers = ["a", "b", "c"]
    canaries = ["b", "a", "b", "z"]  # canary j was made for answer canaries[j]; z's answer was not asked
    order = grouped_order(answers, canaries)
    joined = [*answers, *(f"canary of {q}" for q in canaries)]
    assert [joined[k] for k in order] == ["a", "canary of a", "b", "canary of b", "canary of b", "c", "canary of z"]
    assert sorted(order) == list(range(len(joined))), "every prompt asked once"
    assert grouped_order([], []) == [] and grouped_order(["a"], []) == [0]
