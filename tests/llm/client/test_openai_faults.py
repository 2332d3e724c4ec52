"""The OpenAI-compatible backend, the retry helper and concurrent answering under server faults.

The server here is a stand-in (``tests/openai_stub.py``): a small HTTP server on 127.0.0.1 that
is a test double for a flaky, slow or dying LLM server, faults a real server cannot be made to
produce on demand. It answers with a pure function of the messages (``reply_for``), so every
right answer is known. httpx, SQLite and the prompt cache are the real ones; the real local
server is in ``test_openai_server.py``.
"""
from __future__ import annotations

import hashlib
import time

import httpx
import pytest

from rag_ablation.llm.client.base import Generation, LLMUnavailable
from rag_ablation.llm.client.concurrent import chat_many, check_concurrency
from rag_ablation.llm.client.openai_compat import HTTPStatus, OpenAICompatBackend, api_key_from_env
from rag_ablation.llm.client.prompt_cache import CachedLLM, PromptCache
from rag_ablation.support.retry import RetriesExhausted, backoff_delays, call_with_retries, is_transient

from openai_stub import MODEL, StubServer, reply_for


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


PROMPTS = [ask(f"question {i}") for i in range(6)]


def backend(stub: StubServer | str, **kw) -> OpenAICompatBackend:
    """A backend with fast retries (10 ms first backoff) for tests."""
    kw = {"retries": 2, "backoff": 0.01, "timeout": 5.0, **kw}
    urls = stub.url if isinstance(stub, StubServer) else stub
    return OpenAICompatBackend(MODEL, urls, **kw)


@pytest.fixture
def stub():
    with StubServer() as s:
        yield s


# --- the retry helper ----------------------------------------------------------------------


def test_backoff_doubles_from_a_small_base_and_is_capped() -> None:
    assert backoff_delays(3) == [0.25, 0.5, 1.0]
    assert backoff_delays(6, 1.0, max_backoff=8.0) == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_retry_helper_retries_passing_faults_only() -> None:
    slept: list[float] = []
    calls = iter([httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), "done"])

    def flaky():
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    assert call_with_retries(flaky, retries=3, backoff=0.1, sleep=slept.append) == "done"
    assert slept == [0.1, 0.2]

    def refused():
        raise ValueError("bad request")  # not a passing fault: raised at once, unchanged

    with pytest.raises(ValueError, match="bad request"):
        call_with_retries(refused, retries=3, sleep=slept.append)
    assert slept == [0.1, 0.2]

    def always_down():
        raise ConnectionError("down")

    with pytest.raises(RetriesExhausted) as err:
        call_with_retries(always_down, retries=2, backoff=0, sleep=slept.append)
    assert err.value.attempts == 3 and isinstance(err.value.last, ConnectionError)


def test_which_faults_pass() -> None:
    import ollama

    assert all(is_transient(e) for e in (httpx.ConnectError("x"), httpx.ReadTimeout("x"),
                                         httpx.RemoteProtocolError("x"), ConnectionError()))
    assert is_transient(Exception()) is False
    for code, passing in ((500, True), (503, True), (429, True), (400, False), (404, False), (401, False)):
        assert is_transient(ollama.ResponseError("error", code)) is passing, code
        assert is_transient(HTTPStatus(code, "body")) is passing, code


# --- one request ---------------------------------------------------------------------------


def test_answer_request_shape_and_identity(stub: StubServer) -> None:
    b = backend(stub, seed=7)
    gen = b.chat(ask("hello"), num_predict=16, stop=["\n"])
    assert gen.text == reply_for(ask("hello"))
    assert gen.completion_tokens > 0 and gen.prompt_tokens > 0 and gen.seconds > 0
    (sent,) = stub.chat_bodies
    assert sent == {"model": MODEL, "messages": ask("hello"), "max_tokens": 16, "temperature": 0.0,
                    "seed": 7, "stream": False, "stop": ["\n"]}  # num_ctx is not an OpenAI field
    ident = b.identity()
    assert ident["backend"] == "openai" and ident["model"] == MODEL
    assert ident["digest_of"] == "server model entry"
    # `created` changes on every listing; a new backend asks again and gets the same identity
    assert OpenAICompatBackend(MODEL, stub.url).identity() == ident
    assert stub.model_listings == 2
    assert b.settings() == {"temperature": 0.0, "seed": 7, "num_ctx": 4096}


def test_server_without_a_model_listing_keys_on_the_name() -> None:
    with StubServer(list_models=False) as s:
        ident = backend(s).identity()
    assert ident["digest_of"] == "model name"
    assert ident["digest"] == hashlib.sha256(MODEL.encode()).hexdigest()


def test_http_500_then_success_is_retried(stub: StubServer) -> None:
    stub.plan = lambda n, body: ("status", 500) if n <= 2 else "ok"
    assert backend(stub).chat(ask("q"), num_predict=8).text == reply_for(ask("q"))
    assert len(stub.chat_bodies) == 3


def test_429_is_retried_and_400_fails_at_once(stub: StubServer) -> None:
    stub.plan = lambda n, body: ("status", 429) if n == 1 else "ok"
    assert backend(stub).chat(ask("q"), num_predict=8).text == reply_for(ask("q"))
    assert len(stub.chat_bodies) == 2
    stub.plan = lambda n, body: ("status", 400)
    with pytest.raises(LLMUnavailable) as err:
        backend(stub).chat(ask("q"), num_predict=8)
    assert len(stub.chat_bodies) == 3  # one more request, no retry
    assert "HTTP 400" in str(err.value) and stub.url in str(err.value)


@pytest.mark.bad_input
def test_persistent_500_stops_with_one_message(stub: StubServer) -> None:
    stub.plan = lambda n, body: ("status", 500)
    with pytest.raises(LLMUnavailable) as err:
        backend(stub, retries=2).chat(ask("q"), num_predict=8)
    msg = str(err.value)
    assert len(stub.chat_bodies) == 3
    assert stub.url in msg and repr(MODEL) in msg and "HTTP 500" in msg and "failed 3 times" in msg
    assert "\n" not in msg and "llm.retries" in msg


@pytest.mark.bad_input
def test_slower_than_the_timeout_is_retried_then_fails(stub: StubServer) -> None:
    stub.plan = lambda n, body: ("sleep", 1.5)
    b = backend(stub, timeout=0.2, retries=1)
    b.identity()
    start = time.monotonic()
    with pytest.raises(LLMUnavailable) as err:
        b.chat(ask("q"), num_predict=8)
    assert time.monotonic() - start < 1.4  # two 0.2 s timeouts, not the server's 1.5 s
    assert len(stub.chat_bodies) == 2
    msg = str(err.value)
    assert stub.url in msg and "0.2 s timeout" in msg and "ReadTimeout" in msg and "llm.timeout" in msg


def test_malformed_json_is_retried_then_fails(stub: StubServer) -> None:
    stub.plan = lambda n, body: "garbage" if n == 1 else "ok"
    assert backend(stub).chat(ask("q"), num_predict=8).text == reply_for(ask("q"))
    stub.plan = lambda n, body: "garbage"
    with pytest.raises(LLMUnavailable, match="not JSON") as err:
        backend(stub, retries=1).chat(ask("q"), num_predict=8)
    assert stub.url in str(err.value)
    assert len(stub.chat_bodies) == 4


@pytest.mark.bad_input
def test_wrong_model_and_dead_server_each_give_one_message(stub: StubServer) -> None:
    wrong = OpenAICompatBackend("no-such-model", stub.url, retries=0)
    with pytest.raises(LLMUnavailable) as err:
        wrong.chat(ask("q"), num_predict=8)
    assert "'no-such-model'" in str(err.value) and MODEL in str(err.value) and stub.url in str(err.value)
    assert stub.chat_bodies == []  # caught by the model listing, before any answer is asked for

    url = stub.url
    stub.stop()
    start = time.monotonic()
    with pytest.raises(LLMUnavailable) as err:
        backend(url).chat(ask("q"), num_predict=8)
    assert time.monotonic() - start < 3
    assert url in str(err.value) and "no server answers" in str(err.value) and "llm.base_urls" in str(err.value)


def test_requests_spread_across_base_urls_and_fail_over() -> None:
    with StubServer() as a, StubServer() as b:
        be = backend([a.url, b.url])
        for i in range(4):
            be.chat(ask(f"q{i}"), num_predict=8)
        assert (len(a.chat_bodies), len(b.chat_bodies)) == (2, 2)
        b.stop()  # one machine goes away mid-run: its turn is retried on the other
        assert be.chat(ask("q4"), num_predict=8).text == reply_for(ask("q4"))
        assert be.chat(ask("q5"), num_predict=8).text == reply_for(ask("q5"))
        assert len(a.chat_bodies) == 4


def test_api_key_from_env_is_sent_and_never_shown(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-0123456789"
    monkeypatch.setenv("RAG_TEST_KEY", secret)
    b = OpenAICompatBackend(MODEL, stub.url, api_key=api_key_from_env("RAG_TEST_KEY"), retries=0)
    b.chat(ask("q"), num_predict=4)
    assert set(stub.authorization) == {f"Bearer {secret}"}
    assert secret not in repr(b) + str(b.identity()) + str(b.settings())
    stub.plan = lambda n, body: ("status", 401)
    with pytest.raises(LLMUnavailable) as err:
        b.chat(ask("q2"), num_predict=4)
    assert secret not in str(err.value) and "llm.api_key_env" in str(err.value)
    monkeypatch.delenv("RAG_TEST_KEY")
    with pytest.raises(LLMUnavailable, match="RAG_TEST_KEY, which is not set"):
        api_key_from_env("RAG_TEST_KEY")


# --- many requests through the cache -------------------------------------------------------


def _texts(results: list[tuple[Generation, bool]]) -> list[str]:
    return [g.text for g, _ in results]


def test_concurrent_answers_equal_sequential_in_order(stub: StubServer, tmp_path) -> None:
    # later prompts answer sooner, so completion order is the reverse of input order
    stub.delay = lambda body: 0.01 * (10 - int(body["messages"][-1]["content"].split()[-1]))
    prompts = [ask(f"question {i}") for i in range(8)] + [ask("question 3")]  # one repeat
    runs = {}
    for n in (1, 4):
        with PromptCache(tmp_path / f"c{n}.sqlite") as cache:
            llm = CachedLLM(backend(stub), cache)
            results = chat_many(llm, prompts, num_predict=8, concurrency=n)
            runs[n] = (_texts(results), [hit for _, hit in results], llm.stats(), len(cache))
    assert runs[1] == runs[4]
    assert runs[4][0] == [reply_for(p) for p in prompts]
    assert runs[4][1] == [False] * 8 + [True]
    assert runs[4][2] == {"calls": 9, "hits": 1, "misses": 8}
    sent = len(stub.chat_bodies)
    with PromptCache(tmp_path / "c4.sqlite") as cache:  # a rerun is served from the cache alone
        llm = CachedLLM(backend(stub), cache)
        again = chat_many(llm, prompts, num_predict=8, concurrency=4)
    assert _texts(again) == runs[4][0] and llm.stats()["hits"] == 9 and len(stub.chat_bodies) == sent


def test_server_dying_mid_run_loses_no_finished_answer(tmp_path) -> None:
    path = tmp_path / "prompts.sqlite"
    with StubServer(plan=lambda n, body: "die" if n == 4 else "ok", delay=lambda body: 0.05) as first:
        with PromptCache(path) as cache:
            llm = CachedLLM(backend(first, retries=1), cache)
            with pytest.raises(LLMUnavailable) as err:
                chat_many(llm, PROMPTS, num_predict=8, concurrency=2)
            assert first.url in str(err.value) and repr(MODEL) in str(err.value)
            answered = set(first.answered)
            assert 1 <= len(answered) <= 3
            assert len(cache) == len(answered)  # every answer that came back was stored
            assert llm.stats()["misses"] == len(answered)

    with StubServer() as second, PromptCache(path) as cache:  # rerun, on a server elsewhere
        llm = CachedLLM(backend(second), cache)
        results = chat_many(llm, PROMPTS, num_predict=8, concurrency=2)
        sent = [b["messages"][-1]["content"] for b in second.chat_bodies]
    assert sorted(sent) == sorted(p[0]["content"] for p in PROMPTS if p[0]["content"] not in answered)
    assert llm.stats() == {"calls": 6, "hits": len(answered), "misses": 6 - len(answered)}
    assert _texts(results) == [reply_for(p) for p in PROMPTS]  # what an uninterrupted run gives


def test_concurrency_is_checked() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="concurrency"):
            check_concurrency(bad)
    assert check_concurrency(2) == 2 and check_concurrency(1) == 1
