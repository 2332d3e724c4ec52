"""``embedding.backend: openai``: the ``/v1/embeddings`` client (rag_ablation.retrieval.served_embeddings).

Two servers. Faults run against a loopback stub defined here (``EmbedStub``: vectors a pure
function of the text, and a per-request plan of what goes wrong), because a real server cannot
be made to fail on demand. The protocol runs against a REAL server: llama-cpp-python's
``llama_cpp.server`` with embeddings on, over the packaged SmolLM2-135M GGUF, mean-pooled (the
GGUF declares no pooling, so the server would answer per-token vectors; ``--kv_overrides
llama.pooling_type=int:1`` sets mean pooling). Its vectors mean little for retrieval; the tests
check dimension, count, order, batching, concurrency and the dense and retrieve stages end to
end. Skipped when llama-cpp-python's ``[server]`` extra is not installed.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from conftest import FIXTURES, ROOT
from rag_ablation.core.config import EmbeddingConfig
from rag_ablation.core.errors import UserError
from rag_ablation.llm.client import llama_server
from rag_ablation.retrieval.embeddings import (EmbeddingCache, cache_name, embed_cached, encode, make_engine,
                                               open_backend, truncated_share)
from rag_ablation.retrieval.served_embeddings import ServedEmbeddingError, ServedEmbeddings

DIM = 8
STUB_MODEL = "stub-embed"


def stub_vector(text: str) -> list[float]:
    """The stub's raw vector of ``text``: a pure function of it (never all zero)."""
    h = hashlib.sha256(text.encode()).digest()
    return [(b - 127.5) / 64 for b in h[:DIM]]


def unit(rows: Any) -> np.ndarray:
    a = np.asarray(rows, dtype=np.float32)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


# --- the stub ------------------------------------------------------------------------------

Action = Any  # "ok" | "garbage" | "die" | "shuffle" | "wrong_dim" | "wrong_count" | "nan" | "no_data"
#               | ("status", code) | ("sleep", seconds) | ("model", name)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that gave up: expected
            super().handle_error(request, client_address)


class EmbedStub:
    """``GET /v1/models`` and ``POST /v1/embeddings`` on 127.0.0.1; ``plan(n, body)`` decides what
    the n-th (1-based) embeddings request gets. ``inputs`` holds each answered request's texts."""

    def __init__(self, plan: Callable[[int, dict], Action] = lambda n, body: "ok", *,
                 models: tuple[str, ...] = (STUB_MODEL,), list_models: bool = True) -> None:
        self.plan, self.models, self.list_models = plan, models, list_models
        self.posts = 0
        self.inputs: list[list[str]] = []
        self.authorization: list[str | None] = []
        self.dead = False
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> EmbedStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.dead = True
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _json(self, status: int, payload: Any) -> None:
                self._send(status, json.dumps(payload).encode())

            def do_GET(self) -> None:
                if stub.dead:
                    self.close_connection = True
                    return
                if self.path.rstrip("/") == "/v1/models" and stub.list_models:
                    return self._json(200, {"object": "list", "data": [{"id": m, "object": "model"}
                                                                       for m in stub.models]})
                self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                if stub.dead:
                    self.close_connection = True
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path.rstrip("/") != "/v1/embeddings":
                    return self._json(404, {"error": {"message": f"no route {self.path}"}})
                with stub._lock:
                    stub.posts += 1
                    n = stub.posts
                    stub.authorization.append(self.headers.get("Authorization"))
                action = stub.plan(n, body)
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                if action == "die":  # a crash: no answer, and nothing listens from now on
                    stub.dead = True
                    threading.Thread(target=stub.stop, daemon=True).start()
                    self.close_connection = True
                    return
                if action == "garbage":
                    return self._send(200, b'{"object": "list", "data": [{"embedding": [0.1, 0.')
                if isinstance(action, tuple) and action[0] == "status":
                    return self._json(action[1], {"error": {"message": f"stub error {action[1]}"}})
                if isinstance(action, tuple) and action[0] == "sleep":
                    time.sleep(action[1])
                rows: list[list[Any]] = [stub_vector(t) for t in texts]
                if action == "wrong_dim":
                    rows = [r + [0.5] for r in rows]
                if action == "nan":
                    rows[0] = ["oops"] + rows[0][1:]
                data = [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]
                if action == "wrong_count":
                    data = data[:-1]
                if action == "shuffle":
                    data = data[::-1]
                model = action[1] if isinstance(action, tuple) and action[0] == "model" else body.get("model")
                payload: dict[str, Any] = {"object": "list", "data": data, "model": model}
                if action == "no_data":
                    payload = {"object": "list", "error": "busy"}
                with stub._lock:
                    stub.inputs.append(texts)
                self._json(200, payload)

        return Handler


def client(stub: EmbedStub, **kw: Any) -> ServedEmbeddings:
    kw.setdefault("backoff", 0.01)
    return ServedEmbeddings(kw.pop("model", STUB_MODEL), kw.pop("base_urls", stub.url), **kw)


TEXTS = [f"text number {i} about ledgers" for i in range(10)]


# --- the protocol, against the stub ----------------------------------------------------------

def test_batches_split_in_order_and_sorted_by_index():
    with EmbedStub(lambda n, body: "shuffle" if n == 2 else "ok") as stub:
        vecs = client(stub).encode(TEXTS, batch_size=4)
    assert vecs.dtype == np.float32 and vecs.shape == (10, DIM)
    np.testing.assert_allclose(vecs, np.asarray([stub_vector(t) for t in TEXTS], dtype=np.float32))
    assert [len(b) for b in stub.inputs] == [4, 4, 2] and stub.posts == 3


def test_concurrency_and_round_robin_give_the_same_vectors():
    with EmbedStub(lambda n, body: ("sleep", 0.05)) as a, EmbedStub(lambda n, body: ("sleep", 0.05)) as b:
        one = client(a).encode(TEXTS, batch_size=2)
        four = client(a, base_urls=[a.url, b.url], concurrency=4).encode(TEXTS, batch_size=2)
    np.testing.assert_array_equal(one, four)
    assert a.posts == 5 + 3 and b.posts == 2  # the second run: 5 requests alternating a, b, a, b, a


def test_the_cache_key_names_the_served_model():
    st = EmbeddingConfig()
    served = EmbeddingConfig(backend="openai", model=st.model, base_urls=("http://127.0.0.1:1/v1",))
    assert cache_name(st) == st.model
    assert cache_name(served) == f"openai:{st.model}" != cache_name(st)
    other = EmbeddingConfig(backend="openai", model="bge-small", base_urls=("http://127.0.0.1:1/v1",))
    assert cache_name(other) != cache_name(served)


def test_the_model_object_has_no_tokenizer_so_truncation_is_unknown():
    assert truncated_share(ServedEmbeddings(STUB_MODEL, "http://127.0.0.1:1/v1"), ["a text"]) is None


def test_500_then_success_is_retried_to_the_same_vectors():
    with EmbedStub(lambda n, body: ("status", 500) if n == 1 else ("status", 503) if n == 2 else "ok") as stub:
        vecs = client(stub).encode(TEXTS[:3], batch_size=8)
    np.testing.assert_allclose(vecs, [stub_vector(t) for t in TEXTS[:3]], rtol=1e-6)
    assert stub.posts == 3


def test_malformed_json_and_a_missing_data_list_are_retried():
    plan = {1: "garbage", 2: "no_data"}
    with EmbedStub(lambda n, body: plan.get(n, "ok")) as stub:
        vecs = client(stub).encode(TEXTS[:2])
    assert vecs.shape == (2, DIM) and stub.posts == 3


@pytest.mark.bad_input
def test_a_timeout_on_every_attempt_gives_one_message():
    with EmbedStub(lambda n, body: ("sleep", 1.0)) as stub:
        with pytest.raises(ServedEmbeddingError) as err:
            client(stub, timeout=0.2, retries=1).encode(TEXTS[:2])
    msg = str(err.value)
    assert "no answer within the 0.2 s timeout (2 attempts" in msg and "embedding.timeout" in msg
    assert isinstance(err.value, UserError) and "\n" not in msg


@pytest.mark.bad_input
def test_malformed_json_every_time_gives_up_after_the_retries():
    with EmbedStub(lambda n, body: "garbage") as stub:
        with pytest.raises(ServedEmbeddingError, match=r"failed 3 times; last error MalformedResponse: .*not JSON"):
            client(stub, retries=2).encode(TEXTS[:2])
    assert stub.posts == 3


@pytest.mark.bad_input
@pytest.mark.parametrize("action, message", [
    ("wrong_dim", "the server returned vectors of dimension 9, but earlier answers had 8"),
    ("wrong_count", "the server returned 3 vectors for 4 texts"),
    ("nan", "the vector of text 0 is not a non-empty list of finite numbers (got \"['oops', "),
    (("model", "other-model"), "the server answered with model 'other-model'"),
])
def test_an_answer_that_cannot_be_the_vectors_fails_at_once(action, message):
    """The first request sets the dimension (8); the second gets the bad answer: one error, no retry."""
    with EmbedStub(lambda n, body: action if n == 2 else "ok") as stub:
        with pytest.raises(ServedEmbeddingError) as err:
            client(stub).encode(TEXTS[:8], batch_size=4)
    assert message in str(err.value) and stub.url in str(err.value)
    assert stub.posts == 2


@pytest.mark.bad_input
def test_a_model_the_server_does_not_list_fails_before_embedding():
    with EmbedStub(models=("bge-small", "e5-base")) as stub:
        with pytest.raises(ServedEmbeddingError, match=r"does not serve this model \(its /models lists: bge-small, "
                                                       r"e5-base\); set embedding.model"):
            client(stub, model="nomic-embed").encode(TEXTS[:2])
    assert stub.posts == 0


@pytest.mark.bad_input
def test_401_fails_at_once_and_names_the_key_setting(monkeypatch):
    monkeypatch.setenv("EMBED_TEST_KEY", "sk-secret-value")
    with EmbedStub(lambda n, body: ("status", 401)) as stub:
        with pytest.raises(ServedEmbeddingError) as err:
            client(stub, api_key_env="EMBED_TEST_KEY").encode(TEXTS[:2])
    msg = str(err.value)
    assert "the embedding server rejected the request (HTTP 401" in msg and "embedding.api_key_env" in msg
    assert "sk-secret-value" not in msg and stub.posts == 1
    assert stub.authorization == ["Bearer sk-secret-value"]


@pytest.mark.bad_input
def test_a_missing_api_key_variable_is_named_and_nothing_is_sent(monkeypatch):
    monkeypatch.delenv("EMBED_TEST_KEY", raising=False)
    with EmbedStub() as stub:
        model = client(stub, api_key_env="EMBED_TEST_KEY")  # building it needs no key
        with pytest.raises(ServedEmbeddingError, match="names the environment variable EMBED_TEST_KEY, which is "
                                                       "not set or empty; export EMBED_TEST_KEY="):
            model.encode(TEXTS[:2])
    assert stub.posts == 0


@pytest.mark.bad_input
def test_no_server_gives_one_message_naming_the_url():
    with EmbedStub() as stub:
        url = stub.url
    with pytest.raises(ServedEmbeddingError) as err:
        ServedEmbeddings(STUB_MODEL, url, retries=1, backoff=0.01).encode(TEXTS[:2])
    assert f"at {url}: no embedding server answers (2 attempts" in str(err.value)


@pytest.mark.bad_input
@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_server_dying_mid_run_keeps_the_finished_batches(tmp_path, concurrency):
    """Batches 1-4 are answered, the 5th request kills the server: the 4 finished batches are in the
    cache; a rerun against a new server embeds only the rest (counted requests)."""
    texts = [f"chunk {i:02d} " + "x" * (40 - i) for i in range(20)]  # distinct lengths: a fixed batch order
    cfg = EmbeddingConfig(backend="openai", model=STUB_MODEL, base_urls=("http://127.0.0.1:1/v1",),
                          batch_size=2, concurrency=concurrency, retries=1)
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    with EmbedStub(lambda n, body: "die" if n == 5 else ("sleep", 0.05 * (n % 3))) as stub:
        model = client(stub, concurrency=concurrency, retries=1)
        with pytest.raises(ServedEmbeddingError, match="no embedding server answers|the server dropped the connection"):
            embed_cached(texts, model_name=cache_name(cfg), cache=cache, load=lambda: model, batch_size=2,
                         progress=False, engine=make_engine(cfg))
    with sqlite3.connect(tmp_path / "e.sqlite") as db:
        stored = db.execute("SELECT COUNT(*) FROM vectors WHERE model = ?", [cache_name(cfg)]).fetchone()[0]
    answered = sum(len(b) for b in stub.inputs)
    assert stored == answered and 8 <= answered < 20  # every answered batch was committed
    with EmbedStub() as again:
        vecs, stats = embed_cached(texts, model_name=cache_name(cfg), cache=cache, load=lambda: client(again),
                                   batch_size=2, progress=False, engine=make_engine(cfg))
    assert stats == {"texts": 20, "cached": answered, "computed": 20 - answered}
    assert again.posts == (20 - answered) // 2
    assert not set(map(tuple, again.inputs)) & set(map(tuple, stub.inputs))
    np.testing.assert_allclose(vecs, unit([stub_vector(t) for t in texts]), atol=1e-6)
    cache.close()


def test_the_engine_yields_each_batch_as_it_returns():
    """With concurrency 2, a slow first request does not hold back the batches after it."""
    # the batch holding TEXTS[0] is the slow one, whichever request reaches the stub first
    with EmbedStub(lambda n, body: ("sleep", 0.6) if TEXTS[0] in body["input"] else "ok") as stub:
        model = client(stub, concurrency=2)
        order = [i for i, _ in model.encode_batches([TEXTS[0:2], TEXTS[2:4], TEXTS[4:6]])]
    assert order[-1] == 0 and sorted(order) == [0, 1, 2]


# --- a real server: llama_cpp.server over SmolLM2 -------------------------------------------

SERVER_MODULES = ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")
ALIAS = "smollm2"
needs_server = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in SERVER_MODULES),
    reason="llama-cpp-python's [server] extra is not installed (pip install fastapi uvicorn sse-starlette "
           "'starlette-context>=0.3.6,<0.4' pydantic-settings)")


def start_embedding_server(log: Path) -> tuple[subprocess.Popen, str]:
    """``python -m rag_ablation.llm.client.llama_server`` (llama_cpp.server without the AMX crash) over
    SmolLM2 with embeddings on and mean pooling, one thread, on a free port, once it answers."""
    from rag_ablation.llm.client.llama_cpp import default_gguf_path

    return llama_server.start(default_gguf_path(), alias=ALIAS, log=log, args=(
        "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "2048", *llama_server.EMBEDDING_ARGS))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc, url = start_embedding_server(tmp_path_factory.mktemp("embed_server") / "server.log")
    try:
        yield url
    finally:
        llama_server.stop(proc)


SHORT = ["The ledger closes at midnight.", "Refunds take five days.", "hello", "Who approves expenses?",
         "A much longer sentence about the quarterly audit of every regional office in the company.",
         "Passwords rotate every ninety days.", "x"]


@needs_server
@pytest.mark.slow
def test_real_server_vectors_match_per_text_requests(server):
    model = ServedEmbeddings(ALIAS, server, timeout=60)
    batched = encode(model, SHORT, batch_size=3)  # requests of 3, 3 and 1 texts
    assert batched.shape == (len(SHORT), 576) and batched.dtype == np.float32
    assert model.dim == 576 and model.served_model == {server: ALIAS}
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    single = np.concatenate([encode(model, [t]) for t in SHORT])
    np.testing.assert_allclose(batched, single, atol=1e-5)
    assert len({v.tobytes() for v in batched}) == len(SHORT)
    two = encode(ServedEmbeddings(ALIAS, server, timeout=60, concurrency=2), SHORT, batch_size=2)
    np.testing.assert_allclose(two, batched, atol=1e-5)


@needs_server
@pytest.mark.bad_input
@pytest.mark.slow
def test_real_server_wrong_model_fails_at_once(server):
    # llama_cpp.server would embed with its one model under any name; its listing catches it
    with pytest.raises(ServedEmbeddingError, match=r"does not serve this model \(its /models lists: smollm2\)"):
        ServedEmbeddings("bge-small", server, retries=0).encode(["a"])


@needs_server
@pytest.mark.slow
def test_dense_and_retrieve_stages_embed_through_the_server(server, tmp_path):
    """The dense stage builds its index from the server's vectors (metrics: truncation null), and
    the retrieve stage embeds the questions through the server into the same cache."""
    shutil.copytree(FIXTURES / "corpus", tmp_path / "corpus")
    shutil.copy(FIXTURES / "questions.jsonl", tmp_path / "questions.jsonl")
    shutil.copytree(ROOT / "prompts", tmp_path / "prompts")
    p = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    p["embedding"] = {"backend": "openai", "model": ALIAS, "base_urls": [server], "batch_size": 8,
                      "concurrency": 2, "timeout": 60}
    assert p["retrieval"]["dense"] == {"chunking": "base", "method": "dense", "depth": 20, "query": "none"}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
    env = {**os.environ, "RAG_ABLATION_CACHE": str(tmp_path / ".cache")}
    b = tmp_path / "build"

    def stage(script: str, *args: Any) -> str:
        res = subprocess.run([sys.executable, str(ROOT / "stages" / script), *map(str, args)], cwd=tmp_path,
                             capture_output=True, text=True, env=env)
        assert res.returncode == 0, res.stderr
        return res.stderr

    stage("questions.py", "--corpus", "corpus", "--questions", "questions.jsonl", "--out", b / "q.jsonl",
          "--metrics", tmp_path / "metrics/questions.json")
    stage("queries.py", "--name", "none", "--questions", b / "q.jsonl", "--prompts", "prompts",
          "--out", b / "queries/none.json", "--latency", tmp_path / "metrics/latency/queries_none.json")
    stage("chunk.py", "--name", "base", "--corpus", "corpus", "--out", b / "chunks/base.jsonl")
    err = stage("dense_index.py", "--chunks", b / "chunks/base.jsonl", "--out", b / "dense/base",
                "--metrics", tmp_path / "metrics/index/base.json")
    n_chunks = len((b / "chunks/base.jsonl").read_text().splitlines())
    m = json.loads((tmp_path / "metrics/index/base.json").read_text())
    assert m["n_chunks"] == n_chunks and m["max_seq_length"] is None and m["truncated_share"] is None
    assert f"embedded {n_chunks} new texts, 0 from the cache" in err and "unknown for a served model" in err

    db = sqlite3.connect(tmp_path / ".cache/embeddings.sqlite")
    rows = lambda: dict(db.execute("SELECT model, COUNT(*) FROM vectors GROUP BY model").fetchall())  # noqa: E731
    assert rows() == {f"openai:{ALIAS}": n_chunks}
    stage("query_vectors.py", "--name", "none", "--questions", b / "q.jsonl", "--queries", b / "queries/none.json",
          "--out", b / "query_vectors/none", "--latency", tmp_path / "metrics/latency/query_embed_none.json")
    stage("retrieve.py", "--name", "dense", "--questions", b / "q.jsonl", "--chunks", b / "chunks/base.jsonl",
          "--dense", b / "dense/base", "--bm25", b / "bm25/base", "--queries", b / "queries/none.json",
          "--query-vectors", b / "query_vectors/none", "--query-times", tmp_path / "metrics/latency/query_embed_none.json",
          "--out", b / "runs/dense.json", "--latency", tmp_path / "metrics/latency/dense.json")
    run = json.loads((b / "runs/dense.json").read_text())
    n_questions = len(run["questions"])
    assert run["status"] == "ok" and n_questions == 8
    assert rows() == {f"openai:{ALIAS}": n_chunks + n_questions}  # the questions went through the server
    db.close()

    # the ranking is the server's: the first question's top score is its best cosine by the server's vectors
    from rag_ablation.data.chunks import load_chunks

    model = open_backend(EmbeddingConfig(backend="openai", model=ALIAS, base_urls=(server,)))
    chunk_vecs = encode(model, [c.text for c in load_chunks(b / "chunks/base.jsonl")], batch_size=8)
    first = json.loads((b / "q.jsonl").read_text().splitlines()[0])
    assert run["questions"][0]["id"] == first["id"]
    best = float(np.max(chunk_vecs @ encode(model, [first["question"]])[0]))
    assert run["questions"][0]["ranking"][0]["score"] == pytest.approx(best, abs=1e-4)


@pytest.mark.bad_input
@pytest.mark.slow
def test_dense_stage_stops_with_one_line_and_keeps_the_finished_batches(tmp_path):
    """A bad answer mid-run: the dense stage exits 2 with one `error:` line and writes no index;
    the batch answered before it is cached, so the rerun (healthy server) sends only the rest."""
    body = [f"Chunk {i} says the ledger closes at {i} o'clock" + "." * i for i in range(6)]
    chunks = [{"id": f"t/a.md#{i}", "doc": "t/a.md", "track": "t", "start": 0, "end": len(b),
               "heading_path": ["A"], "heading": "", "body": b} for i, b in enumerate(body)]
    (tmp_path / "chunks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in chunks))
    p = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    env = {**os.environ, "RAG_ABLATION_CACHE": str(tmp_path / ".cache")}

    def dense(stub: EmbedStub) -> subprocess.CompletedProcess:
        p["embedding"] = {"backend": "openai", "model": STUB_MODEL, "base_urls": [stub.url], "batch_size": 2}
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
        return subprocess.run([sys.executable, str(ROOT / "stages/dense_index.py"), "--chunks", "chunks.jsonl",
                               "--out", "dense", "--metrics", "m.json"], cwd=tmp_path, capture_output=True,
                              text=True, env=env)

    with EmbedStub(lambda n, body: "wrong_dim" if n == 2 else "ok") as bad:
        res = dense(bad)
    assert res.returncode == 2, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: embedding model '{STUB_MODEL}' at {bad.url}: the server returned vectors of "
                           "dimension 9, but earlier answers had 8; ")
    assert not (tmp_path / "dense").exists() and not (tmp_path / "m.json").exists()
    with sqlite3.connect(tmp_path / ".cache/embeddings.sqlite") as db:
        assert db.execute("SELECT model, COUNT(*) FROM vectors GROUP BY model").fetchall() == [(f"openai:{STUB_MODEL}", 2)]
    with EmbedStub() as good:
        res = dense(good)
    assert res.returncode == 0, res.stderr
    assert good.posts == 2 and "embedded 4 new texts, 2 from the cache" in res.stderr
    m = json.loads((tmp_path / "m.json").read_text())
    assert m["n_chunks"] == 6 and m["max_seq_length"] is None and m["truncated_share"] is None
