from __future__ import annotations

import pytest

from rag_ablation.llm.generation import answer_prompts, answer_questions
from rag_ablation.llm.client.prompt_cache import CachedLLM, PromptCache
from rag_ablation.llm.client.llama_cpp import LlamaCppBackend
from rag_ablation.llm.client.prompting import TemplateError, fill, format_passages, load_template
from rag_ablation.llm.transforms import transform_queries

from conftest import ROOT, Q


def test_templates_fill_literally_and_must_have_placeholders(tmp_path):
    (tmp_path / "t.txt").write_text("Q: {question}\n{passages}")
    t = load_template(tmp_path, "t", needs=["question", "passages"])
    assert fill(t, question="what is {x}?", passages="P") == "Q: what is {x}?\nP"
    assert format_passages(["a ", "b"]) == "[1] a\n\n[2] b"


@pytest.mark.bad_input
def test_missing_template_and_placeholder(tmp_path):
    (tmp_path / "t.txt").write_text("no placeholders")
    with pytest.raises(TemplateError, match=r"lacks the placeholder\(s\) \{question\}"):
        load_template(tmp_path, "t", needs=["question"])
    with pytest.raises(TemplateError, match="not found; templates in .*: t"):
        load_template(tmp_path, "nope", needs=["question"])


def test_shipped_templates_load():
    for name in ("answer_escape_hatch", "answer_revised"):
        load_template(ROOT / "prompts", name, needs=["passages", "question"])
    for name in ("rewrite", "hyde"):
        load_template(ROOT / "prompts", name, needs=["question"])


@pytest.mark.slow
def test_answer_prompts_number_the_top_k_passages_into_the_template():
    """The top k of each ranking, in ranking order; a shorter ranking gives fewer passages and a
    question without one gets none (its prompt still asks it)."""
    qs = [Q("a", "When?"), Q("b", "How long?"), Q("c", "Who?")]
    text = {"c1": "one", "c2": "two", "c3": "three"}
    template = "P:\n{passages}\nQ: {question}"
    passages, prompts = answer_prompts(qs, {"a": ["c2", "c1", "c3"], "b": ["c3"]}, text, template=template, k=2)
    assert passages == [["c2", "c1"], ["c3"], []]
    assert prompts[0] == [{"role": "user", "content": fill(template, passages=format_passages(["two", "one"]),
                                                           question="When?")}]
    assert prompts[2][0]["content"] == fill(template, passages=format_passages([]), question="Who?")


def test_only_changed_prompts_reach_the_llm(tmp_path):
    """Re-answering after one question's top passages changed: the cache serves the rest."""
    llm = CachedLLM(LlamaCppBackend(n_threads=1), PromptCache(tmp_path / "p.sqlite"))
    qs = [Q("a", "When does settlement run?"), Q("b", "How long is the tap window?"), Q("c", "Who is on call?")]
    text = {"c1": "Settlement runs at 02:30 UTC.", "c2": "Repeat taps within 8 seconds are ignored.",
            "c3": "The on-call rotation changes on Tuesdays.", "c4": "Buses report every 10 seconds."}
    template = (ROOT / "prompts" / "answer_escape_hatch.txt").read_text()
    first = {"a": ["c1", "c4"], "b": ["c2", "c4"], "c": ["c3", "c4"]}
    r1, _ = answer_questions(qs, first, text, llm=llm, template=template, k=2, num_predict=24)
    assert llm.stats() == {"calls": 3, "hits": 0, "misses": 3}
    second = {**first, "b": ["c4", "c2"]}  # only b's passages moved
    r2, timings = answer_questions(qs, second, text, llm=llm, template=template, k=2, num_predict=24)
    assert llm.stats() == {"calls": 6, "hits": 2, "misses": 4}
    # every answer keeps a timing; a cached one keeps the time of the call that made it
    assert [t["cached"] for t in timings] == [True, False, True] and timings[0]["seconds"] > 0
    assert r2[0] == r1[0] and r2[2] == r1[2] and r2[1]["passages"] == ["c4", "c2"]
    assert r2[1]["prompt_sha256"] != r1[1]["prompt_sha256"]


@pytest.mark.slow
def test_rewrite_transform_uses_the_llm_and_none_does_not(tmp_path):
    qs = [Q("a", "settlement time?")]
    assert transform_queries(qs, kind="none").queries == {"a": "settlement time?"}
    llm = CachedLLM(LlamaCppBackend(n_threads=1), PromptCache(tmp_path / "p.sqlite"))
    template = (ROOT / "prompts" / "rewrite.txt").read_text()
    out = transform_queries(qs, kind="rewrite", template=template, llm=llm, num_predict=24)
    assert out.queries["a"] and out.queries["a"] != "settlement time?" and llm.stats()["misses"] == 1


@pytest.mark.bad_input
def test_unknown_transform_kind():
    with pytest.raises(ValueError, match="expected one of: none, rewrite, hyde"):
        transform_queries([], kind="expand")


def test_generation_latency():
    from rag_ablation.llm.generation import generation_latency

    out = generation_latency([{"seconds": 2.0, "completion_tokens": 10}, {"seconds": 4.0, "completion_tokens": 40}])
    assert out["answer"]["p50_ms"] == pytest.approx(3000.0)
    assert out["completion_tokens_per_second"]["p50"] == pytest.approx((5.0 + 10.0) / 2)
    assert generation_latency([]) == {"answer": {}, "completion_tokens_per_second": {}}
