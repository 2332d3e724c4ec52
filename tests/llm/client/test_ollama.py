"""OllamaBackend against a stand-in Ollama server.

No Ollama server can be installed on this machine (no network but the package registries), so
these tests start a small HTTP server on 127.0.0.1 that speaks the parts of Ollama's HTTP API
the official client uses here (``/api/chat``, ``/api/tags``, ``/api/show``, ``/api/version``),
answering non-streamed JSON shaped like the real server's. This stand-in is the only test
double in the suite; the ``ollama`` client and ``httpx`` under it are the real libraries.
"""
from __future__ import annotations

import socket
import time

import pytest

from rag_ablation.llm.client.base import LLMUnavailable
from rag_ablation.llm.client.ollama import OllamaBackend
from rag_ablation.llm.client.registry import make_backend

from ollama_stub import DIGEST, MODEL, REPLY, StandIn, stand_in  # noqa: F401  (stand_in is a fixture)


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def test_chat_sends_deterministic_options_and_reads_token_counts(stand_in: StandIn) -> None:
    backend = make_backend("ollama", model=MODEL, host=stand_in.url, seed=7)
    gen = backend.chat(QUESTION, num_predict=64)

    assert gen.text == REPLY
    assert (gen.prompt_tokens, gen.completion_tokens) == (31, 8)
    assert gen.seconds >= 0
    (sent,) = stand_in.bodies("/api/chat")
    assert sent["model"] == MODEL
    assert sent["stream"] is False
    assert sent["messages"] == QUESTION
    assert sent["options"] == {"temperature": 0.0, "seed": 7, "num_ctx": 4096, "num_predict": 64}


def test_identity_carries_the_servers_digest(stand_in: StandIn) -> None:
    backend = OllamaBackend(MODEL, host=stand_in.url)
    assert backend.identity() == {"backend": "ollama", "model": MODEL, "digest": DIGEST}
    assert backend.identity() == backend.identity()
    assert len(stand_in.bodies("/api/tags")) == 1  # asked once, then memoised


def test_untagged_name_means_latest(stand_in: StandIn) -> None:
    stand_in.models = {"llama3.2:latest": "ab" * 32}
    assert OllamaBackend("llama3.2", host=stand_in.url).identity()["digest"] == "ab" * 32


def test_host_comes_from_env_when_not_given(stand_in: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", stand_in.url)
    backend = OllamaBackend(MODEL)
    assert backend.host == stand_in.url
    assert backend.chat(QUESTION, num_predict=4).text == REPLY


def test_default_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    assert OllamaBackend(MODEL).host == "http://127.0.0.1:11434"


@pytest.mark.bad_input
def test_model_not_present_names_ollama_pull(stand_in: StandIn) -> None:
    backend = OllamaBackend("qwen2.5:0.5b", host=stand_in.url)
    with pytest.raises(LLMUnavailable, match=r"`ollama pull qwen2\.5:0\.5b`"):
        backend.chat(QUESTION, num_predict=8)  # the server's real 404 body
    with pytest.raises(LLMUnavailable, match=r"`ollama pull qwen2\.5:0\.5b`"):
        backend.identity()  # absent from /api/tags


@pytest.mark.bad_input
def test_unreachable_host_says_ollama_serve_quickly() -> None:
    host = f"http://127.0.0.1:{_closed_port()}"
    backend = OllamaBackend(MODEL, host=host)
    start = time.monotonic()
    with pytest.raises(LLMUnavailable) as err:
        backend.chat(QUESTION, num_predict=8)
    assert time.monotonic() - start < 5
    assert host in str(err.value)
    assert "`ollama serve`" in str(err.value)
    with pytest.raises(LLMUnavailable, match="ollama serve"):
        backend.identity()


@pytest.mark.bad_input
def test_num_predict_must_be_positive(stand_in: StandIn) -> None:
    backend = OllamaBackend(MODEL, host=stand_in.url)
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="num_predict"):
            backend.chat(QUESTION, num_predict=bad)  # type: ignore[arg-type]
    assert stand_in.requests == []


def test_top_logprobs_are_asked_for_and_read_from_the_first_token(stand_in: StandIn) -> None:
    """Ollama answers ``logprobs`` per reply token with its ``top_logprobs``; the backend keeps the
    first token's, most likely first, and asks for them only when told to."""
    stand_in.top_logprobs = [{"token": "CORRECT", "logprob": -0.25}, {"token": "INCORRECT", "logprob": -1.5},
                             {"token": "Cor", "logprob": -4.0}]
    backend = make_backend("ollama", model=MODEL, host=stand_in.url)
    gen = backend.chat(QUESTION, num_predict=4, top_logprobs=2)
    assert gen.top_logprobs == (("CORRECT", -0.25), ("INCORRECT", -1.5))
    plain = backend.chat(QUESTION, num_predict=4)
    assert plain.top_logprobs is None and plain.text == gen.text
    first, second = stand_in.bodies("/api/chat")
    assert (first["logprobs"], first["top_logprobs"]) == (True, 2)
    assert "logprobs" not in second and "top_logprobs" not in second


def test_a_server_without_logprobs_gives_the_text_and_no_score(stand_in: StandIn) -> None:
    """An Ollama older than 0.12.11 ignores the request: the reply comes back without
    probabilities, and the generation says so with None (never a made-up number)."""
    gen = make_backend("ollama", model=MODEL, host=stand_in.url).chat(QUESTION, num_predict=4, top_logprobs=5)
    assert gen.text == REPLY and gen.top_logprobs is None
