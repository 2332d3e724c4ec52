"""Embeddings from an OpenAI-compatible server (``embedding.backend: openai``): vLLM, TEI,
Ollama's ``/v1``, llama.cpp's ``llama-server`` or llama-cpp-python's ``llama_cpp.server``.

``ServedEmbeddings`` sends ``POST {base}/embeddings`` with ``{"model", "input": [texts],
"encoding_format": "float"}`` over ``httpx``; ``base`` is the API root *including* ``/v1``
(``http://127.0.0.1:8080/v1``). It is the model object of ``embeddings.encode`` (its ``encode``
takes the texts and the batch size, as sentence-transformers' does) and of the engine
``embeddings.served_engine`` (``encode_batches``, which yields each batch as its request returns,
so ``embed_cached`` commits it at once). Vectors come back raw (float32, in input order); the
caller L2-normalizes them as it does for a local model.

**Several servers, several requests.** Requests go round-robin over ``base_urls`` (a retry goes
to the next one) with up to ``concurrency`` in flight (a thread pool). On each server's first
answer the model is checked: its ``/models`` listing must name ``model`` (a server without a
listing, HTTP 404, is not asked again), and the ``model`` field of the answer, when there is
one, must be ``model`` (``:latest`` aside, as Ollama adds it); the name the server gave is kept
in ``served_model``. All servers must give vectors of one dimension.

**Faults.** Passing faults are retried (``rag_ablation.support.retry``: connection refused or
dropped, timeouts, HTTP 5xx and 429, a body that is not JSON or JSON without a ``data`` list),
at most ``retries`` more times with exponential backoff. Permanent ones fail at once with one
``ServedEmbeddingError`` (a ``UserError``: one line, exit 2): other HTTP 4xx (401/403 a key, 404
a model or route), a model the server does not list, and an answer that cannot be the vectors
asked for (wrong count, dimension or ``index`` fields, values that are not finite numbers,
per-token vectors from a server that does not pool). When one request of a run fails, the
requests not yet sent are cancelled, those in flight are waited for and their batches still
yielded (so they are cached), then the error is raised.

The API key comes from the environment variable named by ``api_key_env`` and is sent as
``Authorization: Bearer``; it is read at the first request (so a run that finds everything in
the cache needs none) and is never part of a message, ``repr`` or the cache key.
"""
from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import httpx
import numpy as np

from rag_ablation.core.config import EmbeddingConfig
from rag_ablation.core.errors import UserError
from rag_ablation.support.retry import (DEFAULT_BACKOFF, DEFAULT_RETRIES, HTTPStatus, MalformedResponse, RetriesExhausted,
                                    call_with_retries, describe)


POOLING_HINT = ("start the server with pooling (llama.cpp's llama-server: --embeddings --pooling mean; "
                "llama_cpp.server: --embedding true --kv_overrides llama.pooling_type=int:1)")


class ServedEmbeddingError(UserError, RuntimeError):
    """The embedding server cannot give the vectors asked for; the message says which server,
    what it answered, what was expected and what to do."""


class _Cancelled(Exception):
    """Another request of the run failed: this one stops retrying (never retried itself)."""


def api_key_from_env(var: str | None) -> str | None:
    """The key in environment variable ``var`` (None when ``var`` is None); a named variable that
    is unset or empty raises ``ServedEmbeddingError`` naming it (and never a key)."""
    if var is None:
        return None
    key = os.environ.get(var, "").strip()
    if not key:
        raise ServedEmbeddingError(
            f"embedding.api_key_env names the environment variable {var}, which is not set or empty; "
            f"export {var}=<your API key> before running, or set embedding.api_key_env to null for a "
            f"server without keys")
    return key


def _same_model(asked: str, answered: str) -> bool:
    return answered == asked or answered.removesuffix(":latest") == asked.removesuffix(":latest")


class ServedEmbeddings:
    """A model behind OpenAI-compatible ``/embeddings`` servers (see the module docstring).
    Nothing is sent until ``encode``/``encode_batches``; thread-safe."""

    tokenizer = None  # no local tokenizer: embeddings.truncated_share gives None (unknown)
    max_seq_length = None  # the server's own limit, unknown here

    def __init__(self, model: str, base_urls: str | Sequence[str], *, api_key_env: str | None = None,
                 concurrency: int = 1, timeout: float = 60.0, retries: int = DEFAULT_RETRIES,
                 backoff: float = DEFAULT_BACKOFF) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model: expected the model name the server serves, got {model!r}")
        urls = (base_urls,) if isinstance(base_urls, str) else tuple(base_urls)
        if not urls or not all(isinstance(u, str) and u.startswith(("http://", "https://")) for u in urls):
            raise ValueError(f"base_urls: expected http:// or https:// API roots, got {list(urls)!r}")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
        self.model = model
        self.base_urls = tuple(u.rstrip("/") for u in urls)
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.dim: int | None = None  # set by the first answer; every later one must agree
        self.served_model: dict[str, str] = {}  # base URL -> the model name its answers give
        self.requests = 0  # POSTs sent (attempts included)
        self._lock = threading.Lock()
        self._next = 0
        self._checked: set[str] = set()  # base URLs whose listing was read
        self._client: httpx.Client | None = None

    @classmethod
    def from_config(cls, cfg: EmbeddingConfig) -> ServedEmbeddings:
        return cls(cfg.model, cfg.base_urls, api_key_env=cfg.api_key_env, concurrency=cfg.concurrency,
                   timeout=cfg.timeout, retries=cfg.retries)

    def __repr__(self) -> str:  # no API key here
        return f"ServedEmbeddings(model={self.model!r}, base_urls={list(self.base_urls)!r})"

    def close(self) -> None:
        """Close the HTTP connections (a later request opens new ones)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    # --- the model interface -------------------------------------------------------------

    def encode(self, texts: Sequence[str], batch_size: int = 32, show_progress_bar: bool = False,
               convert_to_numpy: bool = True, normalize_embeddings: bool = False) -> np.ndarray:
        """Raw float32 vectors of ``texts`` in input order, shape ``(len(texts), dim)``: requests
        of ``batch_size`` texts, ``concurrency`` at a time. ``normalize_embeddings`` must be
        False (the caller normalizes); the other keywords are sentence-transformers' and ignored."""
        if normalize_embeddings:
            raise ValueError("ServedEmbeddings.encode returns raw vectors; normalize them with embeddings.l2_normalize")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        texts = list(texts)
        batches = [texts[i : i + batch_size] for i in range(0, len(texts), batch_size)]
        rows: list[np.ndarray | None] = [None] * len(batches)
        for i, vecs in self.encode_batches(batches):
            rows[i] = vecs
        if not batches:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        return np.concatenate([r for r in rows if r is not None]).astype(np.float32)

    def encode_batches(self, batches: Sequence[Sequence[str]]) -> Iterator[tuple[int, np.ndarray]]:
        """``(batch number, raw float32 vectors)`` for every batch, one request each, in the order
        the requests return (``concurrency`` in flight). When one fails, the batches already
        returned or in flight are still yielded before its error is raised."""
        todo = [list(b) for b in batches]
        if not todo:
            return
        client = self._http()  # the key is read here, in the caller's thread: one clear error
        stop = threading.Event()
        if self.concurrency == 1 or len(todo) == 1:
            for i, b in enumerate(todo):
                yield i, self._embed(client, b, stop)
            return
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo)), thread_name_prefix="embed-request")
        futures: dict[Future[np.ndarray], int] = {pool.submit(self._embed, client, b, stop): i
                                                  for i, b in enumerate(todo)}
        not_done = set(futures)
        error: BaseException | None = None
        try:
            while not_done and error is None:
                done, not_done = wait(not_done, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=futures.__getitem__):
                    exc = fut.exception()
                    if exc is None:
                        yield futures[fut], fut.result()
                    elif error is None:
                        error = exc
            if error is not None:
                stop.set()  # requests waiting to retry give up; those not started are cancelled
                for fut in not_done:
                    fut.cancel()
                wait(not_done)
                for fut in sorted(not_done, key=futures.__getitem__):  # in flight when it failed: keep them
                    if not fut.cancelled() and fut.exception() is None:
                        yield futures[fut], fut.result()
                raise error
        except BaseException:  # Ctrl-C, the consumer closing the generator: wait for nothing
            stop.set()
            for fut in not_done:
                fut.cancel()
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    # --- HTTP ----------------------------------------------------------------------------

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                key = api_key_from_env(self.api_key_env)
                headers = {"Authorization": f"Bearer {key}"} if key else {}
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout), headers=headers,
                    limits=httpx.Limits(max_connections=max(4, self.concurrency),
                                        max_keepalive_connections=max(4, self.concurrency)))
            return self._client

    def _pick(self) -> str:
        with self._lock:
            url = self.base_urls[self._next % len(self.base_urls)]
            self._next += 1
        return url

    @staticmethod
    def _request(client: httpx.Client, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        resp = client.request(method, url, json=body)
        if resp.status_code >= 300:
            raise HTTPStatus(resp.status_code, resp.text)
        try:
            return resp.json()
        except ValueError as e:
            raise MalformedResponse(f"HTTP {resp.status_code} with a body that is not JSON: {resp.text[:120]!r}") from e

    def _embed(self, client: httpx.Client, texts: list[str], stop: threading.Event) -> np.ndarray:
        """One batch, retried on passing faults (each attempt to the next base URL)."""
        tried: list[str] = []
        body = {"model": self.model, "input": texts, "encoding_format": "float"}

        def attempt() -> np.ndarray:
            if stop.is_set():
                raise _Cancelled()
            base = self._pick()
            tried.append(base)
            self._check_listing(client, base)
            with self._lock:
                self.requests += 1
            return self._parse(base, self._request(client, "POST", f"{base}/embeddings", body), len(texts))

        def sleep(seconds: float) -> None:
            if stop.wait(seconds):
                raise _Cancelled()

        try:
            return call_with_retries(attempt, retries=self.retries, backoff=self.backoff, sleep=sleep)
        except RetriesExhausted as e:
            raise self._exhausted(tried, e) from None
        except HTTPStatus as e:
            raise self._rejected(tried[-1], e) from None

    def _check_listing(self, client: httpx.Client, base: str) -> None:
        """Once per base URL: its ``/models`` listing names the model (no listing: nothing to check)."""
        with self._lock:
            if base in self._checked:
                return
        try:
            listing = self._request(client, "GET", f"{base}/models")
        except HTTPStatus as e:
            if e.status_code not in (404, 405):
                raise
            listing = None
        data = listing.get("data") if isinstance(listing, dict) else None
        if isinstance(data, list):
            names = [str(m.get("id")) for m in data if isinstance(m, dict)]
            if names and not any(_same_model(self.model, n) for n in names):
                shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
                raise self._error(base, f"the server does not serve this model (its /models lists: {shown})",
                                  "set embedding.model to one of those names, or serve this model there")
        with self._lock:
            self._checked.add(base)

    # --- answers -------------------------------------------------------------------------

    def _parse(self, base: str, out: Any, n: int) -> np.ndarray:
        """The ``(n, dim)`` float32 vectors of one answer, in input order (sorted by ``index``)."""
        data = out.get("data") if isinstance(out, dict) else None
        if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
            raise MalformedResponse(f"{base}/embeddings answered JSON without a 'data' list of objects "
                                    f"({str(out)[:120]!r})")
        served = out.get("model")
        if isinstance(served, str) and served:
            self._check_served_model(base, served)
        if len(data) != n:
            raise self._error(base, f"the server returned {len(data)} vectors for {n} texts",
                              "check the server's log; a server that drops or merges inputs cannot be used")
        indices = [d.get("index") for d in data]
        if all(i is None for i in indices):
            ordered = data  # no index fields: the list order is the input order
        else:
            if sorted(i for i in indices if isinstance(i, int) and not isinstance(i, bool)) != list(range(n)):
                shown = ", ".join(map(repr, indices[:10])) + (", ..." if n > 10 else "")
                raise self._error(base, f"the vectors' 'index' fields are {shown}, not each of 0..{n - 1} once",
                                  "check the server's log; its answer cannot be matched to the texts")
            ordered = sorted(data, key=lambda d: d["index"])
        rows = [d.get("embedding") for d in ordered]
        for j, row in enumerate(rows):
            if isinstance(row, list) and row and isinstance(row[0], list):
                raise self._error(base, f"the server returned a list of {len(row)} per-token vectors for text {j}, "
                                  "not one vector per text (no pooling)", POOLING_HINT)
            if isinstance(row, str):
                raise self._error(base, f"the vector of text {j} is a string ({row[:40]!r}...), not a list of "
                                  "numbers", "serve float vectors (this client asks for encoding_format float)")
            if (not isinstance(row, list) or not row
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in row)):
                shown = str(row)[:80]
                raise self._error(base, f"the vector of text {j} is not a non-empty list of finite numbers "
                                  f"(got {shown!r})", "check the server's log and that it serves an embedding model")
        dims = {len(r) for r in rows}
        if len(dims) > 1:
            raise self._error(base, f"the server returned vectors of different dimensions ({sorted(dims)}) in one answer",
                              "check the server's log")
        dim = dims.pop()
        with self._lock:
            if self.dim is None:
                self.dim = dim
            expected = self.dim
        if dim != expected:
            raise self._error(base, f"the server returned vectors of dimension {dim}, but earlier answers had "
                              f"{expected}", "point embedding.base_urls only at servers of the same model")
        return np.asarray(rows, dtype=np.float32).reshape(n, dim)

    def _check_served_model(self, base: str, served: str) -> None:
        if not _same_model(self.model, served):
            raise self._error(base, f"the server answered with model {served!r}",
                              f"set embedding.model to {served!r} (the cache keys vectors by that name), or "
                              "point embedding.base_urls at a server of this model")
        with self._lock:
            self.served_model.setdefault(base, served)
            others = set(self.served_model.values())
        if len(others) > 1:
            raise self._error(", ".join(self.served_model), f"the servers name their model differently "
                              f"({', '.join(sorted(others))})", "list only servers of the same model")

    # --- errors --------------------------------------------------------------------------

    def _error(self, url: str, problem: str, fix: str) -> ServedEmbeddingError:
        return ServedEmbeddingError(f"embedding model {self.model!r} at {url}: {problem}; {fix}")

    def _exhausted(self, urls: list[str], e: RetriesExhausted) -> ServedEmbeddingError:
        where = ", ".join(dict.fromkeys(urls))
        last = e.last
        if isinstance(last, (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError)):
            problem = f"no embedding server answers ({e.attempts} attempts; last error {describe(last)})"
            fix = ("start the server (e.g. `vllm serve MODEL`, TEI's `text-embeddings-router --model-id MODEL`, "
                   "`ollama serve`, `llama-server --embeddings -m FILE.gguf`) or fix embedding.base_urls")
        elif isinstance(last, (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)):
            problem = f"the server dropped the connection ({e.attempts} attempts; last error {describe(last)})"
            fix = "check the server's log (did it crash or restart?); the batches already returned are cached"
        elif isinstance(last, httpx.TimeoutException):
            problem = (f"no answer within the {self.timeout:g} s timeout ({e.attempts} attempts; "
                       f"last error {describe(last)})")
            fix = ("raise embedding.timeout, lower embedding.batch_size or embedding.concurrency, "
                   "or check the server's log")
        else:
            problem = f"failed {e.attempts} times; last error {describe(last)}"
            fix = "check the server's log, or raise embedding.retries if the server is only overloaded"
        return self._error(where, problem, fix)

    def _rejected(self, url: str, err: HTTPStatus) -> ServedEmbeddingError:
        if err.status_code in (401, 403):
            fix = "set embedding.api_key_env to the environment variable holding a key this server accepts"
        elif err.status_code == 404:
            fix = (f"check that embedding.model is a model the server serves and that embedding.base_urls "
                   f"ends with the API root (e.g. http://127.0.0.1:8080/v1, so that {url}/embeddings exists)")
        elif err.status_code == 413:
            fix = "lower embedding.batch_size, or raise the server's request size limit"
        else:
            fix = ("the server refused the request (texts longer than it accepts? lower chunk_size or "
                   "embedding.batch_size, or raise the server's limits)")
        return self._error(url, f"the embedding server rejected the request ({err})", fix)
