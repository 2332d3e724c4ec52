"""The OpenAI-compatible backend against a real local server: llama-cpp-python's own
``llama_cpp.server`` serving the packaged SmolLM2-135M GGUF on 127.0.0.1.

The server is started through ``python -m rag_ablation.llm.client.llama_server`` (the same arguments
as ``python -m llama_cpp.server``): started plainly, it dies with SIGILL (exit 132) at the first
answer on these machines, because llama.cpp puts the weights in its AMX buffer; the wrapper turns
that off as ``LlamaCppBackend`` does. The server answers one request at a time on these cores,
so prompts are tiny and token budgets small. Skipped when llama-cpp-python's ``[server]``
extra is not installed.
"""
from __future__ import annotations

import importlib.util
import time

import pytest

from rag_ablation.llm.client import llama_server
from rag_ablation.llm.client.base import LLMUnavailable
from rag_ablation.llm.client.llama_cpp import LlamaCppBackend, default_gguf_path
from rag_ablation.llm.client.concurrent import chat_many
from rag_ablation.llm.client.openai_compat import OpenAICompatBackend
from rag_ablation.llm.client.prompt_cache import CachedLLM, PromptCache

SERVER_MODULES = ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")
_missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
if _missing:
    pytest.skip(f"llama-cpp-python's [server] extra is not installed (missing {', '.join(_missing)}); "
                f"install it with `pip install fastapi uvicorn sse-starlette 'starlette-context>=0.3.6,<0.4' "
                f"pydantic-settings`", allow_module_level=True)

ALIAS = "smollm2"
PROMPTS = [[{"role": "user", "content": q}] for q in
           ("What is the capital of France?", "Name a colour.", "What is 2 + 2?")]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> str:
    """A llama_cpp.server on a free port of 127.0.0.1 (one thread, 2,048-token context);
    yields its API root (``http://127.0.0.1:PORT/v1``) and stops it after the module."""
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    try:
        proc, url = llama_server.start(default_gguf_path(), alias=ALIAS, log=log,
                                       args=("--n_threads", "1", "--n_ctx", "2048"))
    except RuntimeError as e:
        pytest.fail(str(e))
    try:
        yield url
    finally:
        llama_server.stop(proc)
    assert proc.returncode in (0, -15), f"server died with {proc.returncode}:\n{log.read_text()[-2000:]}"


def test_answers_deterministically_with_stop_strings(server: str) -> None:
    b = OpenAICompatBackend(ALIAS, server, timeout=60)
    ident = b.identity()
    assert ident["backend"] == "openai" and ident["model"] == ALIAS
    assert ident["digest_of"] == "server model entry"
    gen = b.chat(PROMPTS[0], num_predict=16, stop=["."])
    assert gen.text.strip() and "." not in gen.text
    assert 0 < gen.completion_tokens <= 16 and gen.prompt_tokens > 5
    again = OpenAICompatBackend(ALIAS, server, timeout=60).chat(PROMPTS[0], num_predict=16, stop=["."])
    assert (again.text, again.prompt_tokens, again.completion_tokens) == (
        gen.text, gen.prompt_tokens, gen.completion_tokens)


def test_served_answer_equals_the_embedded_one(server: str) -> None:
    served = OpenAICompatBackend(ALIAS, server, timeout=60).chat(PROMPTS[1], num_predict=8)
    embedded = LlamaCppBackend(n_threads=1, n_ctx=2048).chat(PROMPTS[1], num_predict=8)
    assert served.text == embedded.text
    assert (served.prompt_tokens, served.completion_tokens) == (embedded.prompt_tokens, embedded.completion_tokens)


def test_concurrency_2_equals_sequential_through_the_cache(server: str, tmp_path) -> None:
    runs = {}
    for n in (1, 2):
        with PromptCache(tmp_path / f"c{n}.sqlite") as cache:
            llm = CachedLLM(OpenAICompatBackend(ALIAS, server, timeout=60), cache)
            results = chat_many(llm, PROMPTS, num_predict=6, concurrency=n)
            runs[n] = ([(g.text, g.prompt_tokens, g.completion_tokens) for g, _ in results],
                       [hit for _, hit in results], llm.stats(), len(cache))
    assert runs[1] == runs[2]
    assert runs[2][2] == {"calls": 3, "hits": 0, "misses": 3} and runs[2][3] == 3
    assert len({text for text, _, _ in runs[2][0]}) == 3


@pytest.mark.bad_input
def test_wrong_model_and_dead_port_each_give_one_message(server: str) -> None:
    # llama_cpp.server would answer a wrong name with its default model; the listing catches it
    with pytest.raises(LLMUnavailable) as err:
        OpenAICompatBackend("qwen2.5-0.5b", server, retries=0).chat(PROMPTS[0], num_predict=4)
    msg = str(err.value)
    assert "'qwen2.5-0.5b'" in msg and server in msg and f"lists: {ALIAS}" in msg and "llm.model" in msg

    dead = f"http://127.0.0.1:{llama_server.free_port()}/v1"
    start = time.monotonic()
    with pytest.raises(LLMUnavailable) as err:
        OpenAICompatBackend(ALIAS, dead, retries=2, backoff=0.05).chat(PROMPTS[0], num_predict=4)
    assert time.monotonic() - start < 3
    msg = str(err.value)
    assert dead in msg and f"'{ALIAS}'" in msg and "no server answers" in msg and "ConnectError" in msg
    assert "\n" not in msg


def test_top_logprobs_from_the_server_equal_the_embedded_models(server: str) -> None:
    """llama_cpp.server answers ``logprobs.content[0].top_logprobs``; the embedded backend reads
    the same distribution from the sampler's logits (no ``logits_all``): same tokens, same order,
    log probabilities equal to float32 rounding, and a reply no different from one asked without."""
    served = OpenAICompatBackend(ALIAS, server, timeout=60).chat(PROMPTS[2], num_predict=4, top_logprobs=5)
    embedded_backend = LlamaCppBackend(n_threads=1, n_ctx=2048)
    embedded = embedded_backend.chat(PROMPTS[2], num_predict=4, top_logprobs=5)
    assert served.top_logprobs is not None and embedded.top_logprobs is not None
    assert [t for t, _ in served.top_logprobs] == [t for t, _ in embedded.top_logprobs]
    assert served.top_logprobs[0][1] == pytest.approx(embedded.top_logprobs[0][1], abs=1e-3)
    assert all(a >= b for (_, a), (_, b) in zip(embedded.top_logprobs, embedded.top_logprobs[1:]))
    assert embedded.text == embedded_backend.chat(PROMPTS[2], num_predict=4).text == served.text
    # the greedy reply begins with the most likely first token
    assert embedded.text.startswith(embedded.top_logprobs[0][0].lstrip()) or embedded.top_logprobs[0][0].strip() == ""
