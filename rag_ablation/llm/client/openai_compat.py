"""The OpenAI-compatible backend (``OpenAICompatBackend``, registry name ``openai``), for any
server that speaks the OpenAI chat completions API: vLLM, TGI, llama.cpp's
``llama-server``, llama-cpp-python's ``llama_cpp.server`` (``python -m
rag_ablation.llm.client.llama_server`` on these machines), Ollama's ``/v1``, or a hosted endpoint.

Requests go over ``httpx`` (no ``openai`` package): ``GET {base}/models`` once per base URL to
check the model and take its identity, then one non-streamed ``POST {base}/chat/completions``
per answer. ``base`` is the API root *including* ``/v1``, as for the OpenAI SDK, e.g.
``http://127.0.0.1:8000/v1``. With several base URLs, requests are spread round-robin across
them (a retry goes to the next one), and every server must list the same model.

**What the cache keys on.** Served models have no file whose bytes can be hashed, so
``identity()["digest"]`` is the sha256 of what the server says about the model: its
``/v1/models`` entry without the fields that change from one request or restart to the next
(``created``, ``permission``/``permissions``). llama.cpp's ``llama-server`` lists the parameter
count and file size there; vLLM the weights' path (``root``) and ``max_model_len``; Ollama's
``/v1`` and llama-cpp-python's server only the name. When the server has no ``/models`` listing
(HTTP 404), the digest is the sha256 of the model name alone (``digest_of: "model name"``). In
both cases new weights served under an unchanged name and listing are *not* noticed: serve them
under a new name, use ``backend: ollama`` (which keys on Ollama's content digest), or clear the
prompt cache.

**Determinism.** Every request carries ``temperature`` and ``seed`` and ``max_tokens``;
engines that batch requests (vLLM, TGI) may still give slightly different text under load than
alone. ``num_ctx`` is recorded in ``settings()`` (so it is part of the cache key and of the
answers' file) but not sent: the OpenAI API has no such field; the server's own context size
(e.g. ``--n_ctx``, ``--max-model-len``) decides.

**Faults.** Connection errors, timeouts, HTTP 5xx and 429, and malformed JSON are retried
(``rag_ablation.support.retry``); other 4xx fail at once. Anything that keeps the model from
answering raises ``LLMUnavailable`` with one message naming the server URL, the model, the last
error and what to do. The API key (``api_key``, read from the environment variable named by
``llm.api_key_env``) is sent as ``Authorization: Bearer``; it is never part of the identity,
the settings, a message or ``repr``.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import httpx

from rag_ablation.llm.client.base import (Backend, Generation, LLMUnavailable, check_num_predict,
                                         first_token_alternatives)
from rag_ablation.support.retry import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    HTTPStatus,
    MalformedResponse,
    RetriesExhausted,
    call_with_retries,
    describe,
)

# /v1/models entry fields that change between requests or restarts of the same model
VOLATILE_MODEL_FIELDS = frozenset({"created", "permission", "permissions"})


def api_key_from_env(var: str | None) -> str | None:
    """The API key in environment variable ``var`` (None when ``var`` is None). A named
    variable that is unset or empty raises ``LLMUnavailable`` naming it."""
    if var is None:
        return None
    key = os.environ.get(var, "")
    if not key.strip():
        raise LLMUnavailable(
            f"llm.api_key_env names the environment variable {var}, which is not set; "
            f"export {var}=<your API key> before running, or set llm.api_key_env to null for a "
            f"server without keys"
        )
    return key.strip()


def _first_token_logprobs(choice: Any) -> tuple[tuple[str, float], ...] | None:
    """The first reply token's alternatives of one chat completion choice
    (``logprobs.content[0].top_logprobs``), or None when the server sent none."""
    logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    first = content[0] if isinstance(content, list) and content else None
    return first_token_alternatives(first.get("top_logprobs")) if isinstance(first, dict) else None


def _normalise_urls(base_urls: str | Sequence[str]) -> tuple[str, ...]:
    urls = (base_urls,) if isinstance(base_urls, str) else tuple(base_urls)
    if not urls:
        raise ValueError("base_urls: expected at least one URL, e.g. http://127.0.0.1:8000/v1")
    for u in urls:
        if not isinstance(u, str) or not u.startswith(("http://", "https://")):
            raise ValueError(f"base_urls: expected http:// or https:// URLs, got {u!r}")
    return tuple(u.rstrip("/") for u in urls)


class OpenAICompatBackend(Backend):
    """A model behind one or several OpenAI-compatible servers (see the module docstring).

    ``model`` is the name the server lists in ``/v1/models`` (vLLM: the Hugging Face id or
    ``--served-model-name``; llama.cpp servers: the alias or file path; Ollama: ``name:tag``).
    ``timeout`` is the HTTP timeout of each request in seconds; ``retries`` the number of extra
    attempts after a passing fault, ``backoff`` the first wait between attempts (doubled each
    time). Nothing is sent until ``identity`` or ``chat`` is called. Thread-safe: ``chat`` may
    be called from several threads at once (``rag_ablation.llm.client.concurrent``).
    """

    name: ClassVar[str] = "openai"

    def __init__(
        self,
        model: str,
        base_urls: str | Sequence[str],
        api_key: str | None = None,
        seed: int = 0,
        temperature: float = 0.0,
        num_ctx: int = 4096,
        timeout: float = 120.0,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model: expected a model name the server lists, got {model!r}")
        self.model = model
        self.base_urls = _normalise_urls(base_urls)
        self.seed = seed
        self.temperature = temperature
        self.num_ctx = num_ctx
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=httpx.Timeout(timeout), headers=headers,
                                    limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))
        self._next = 0
        self._lock = threading.Lock()
        self._identity: dict[str, Any] | None = None

    def __repr__(self) -> str:  # no API key here
        return f"OpenAICompatBackend(model={self.model!r}, base_urls={list(self.base_urls)!r})"

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    # --- errors --------------------------------------------------------------------------

    def _error(self, url: str, problem: str, fix: str) -> LLMUnavailable:
        return LLMUnavailable(f"model {self.model!r} at {url}: {problem}; {fix}")

    def _exhausted(self, urls: list[str], e: RetriesExhausted) -> LLMUnavailable:
        where = urls[-1] if len(set(urls)) == 1 else ", ".join(dict.fromkeys(urls))
        last = e.last
        if isinstance(last, (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError)):
            problem = f"no server answers ({e.attempts} attempts; last error {describe(last)})"
            fix = ("start the server (e.g. `vllm serve MODEL`, `llama-server -m FILE.gguf`, or "
                   "`python -m rag_ablation.llm.client.llama_server --model FILE.gguf`) or fix llm.base_urls")
        elif isinstance(last, httpx.TimeoutException):
            problem = (f"no answer within the {self.timeout:g} s timeout ({e.attempts} attempts; "
                       f"last error {describe(last)})")
            fix = "raise llm.timeout, lower the load on the server (llm.concurrency), or check the server's log"
        else:
            problem = f"failed {e.attempts} times; last error {describe(last)}"
            fix = "check the server's log, or raise llm.retries if the server is only overloaded"
        return self._error(where, problem, fix)

    def _rejected(self, url: str, err: HTTPStatus) -> LLMUnavailable:
        if err.status_code in (401, 403):
            fix = "set llm.api_key_env to the environment variable holding a key this server accepts"
        elif err.status_code == 404:
            fix = (f"check that llm.model is a name the server lists at {url}/models and that "
                   f"llm.base_urls ends with the API root (e.g. http://127.0.0.1:8000/v1)")
        else:
            fix = ("the server refused the request (a prompt longer than its context? lower "
                   "generation.k or num_predict, or raise the server's context size)")
        return self._error(url, f"the server rejected the request ({err})", fix)

    # --- HTTP ----------------------------------------------------------------------------

    def _pick(self) -> str:
        with self._lock:
            url = self.base_urls[self._next % len(self.base_urls)]
            self._next += 1
        return url

    def _request(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        """One HTTP request; the parsed JSON body, or ``HTTPStatus`` / ``MalformedResponse`` /
        httpx's own errors."""
        resp = self._client.request(method, url, json=body)
        if resp.status_code >= 300:
            raise HTTPStatus(resp.status_code, resp.text)
        try:
            return resp.json()
        except ValueError as e:
            raise MalformedResponse(f"{url} answered HTTP {resp.status_code} with a body that is not "
                                    f"JSON: {resp.text[:120]!r}") from e

    # --- Backend -------------------------------------------------------------------------

    def _entry(self, url: str) -> dict[str, Any] | None:
        """This model's ``/models`` entry at ``url`` without volatile fields; None when the
        server has no listing (HTTP 404). A listing without the model raises ``LLMUnavailable``."""
        tried = [url]
        try:
            listing = call_with_retries(lambda: self._request("GET", f"{url}/models"),
                                        retries=self.retries, backoff=self.backoff)
        except RetriesExhausted as e:
            raise self._exhausted(tried, e) from None
        except HTTPStatus as e:
            if e.status_code == 404:
                return None
            raise self._rejected(url, e) from None
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list):
            raise self._error(url, f"{url}/models answered without a 'data' list ({str(listing)[:120]!r})",
                              "check that llm.base_urls points at an OpenAI-compatible API root such as "
                              "http://127.0.0.1:8000/v1")
        for entry in data:
            if isinstance(entry, dict) and entry.get("id") == self.model:
                return {k: v for k, v in entry.items() if k not in VOLATILE_MODEL_FIELDS}
        names = [str(e.get("id")) for e in data if isinstance(e, dict)]
        shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        raise self._error(url, f"the server does not list this model (it lists: {shown or 'nothing'})",
                          "set llm.model to one of those names, or start the server with this model")

    def identity(self) -> dict[str, Any]:
        """``{"backend": "openai", "model", "digest", "digest_of"}``: ``digest`` is the sha256
        of the canonical JSON of the model's ``/models`` entry (``digest_of: "server model
        entry"``), or of the model name when the server has no listing (``digest_of: "model
        name"``). Asked once per base URL, then memoised; every base URL must answer and agree."""
        with self._lock:
            if self._identity is not None:
                return dict(self._identity)
        entries = {url: self._entry(url) for url in self.base_urls}
        distinct = {json.dumps(e, sort_keys=True) for e in entries.values()}
        if len(distinct) > 1:
            shown = "; ".join(f"{u}: {json.dumps(e, sort_keys=True)[:200]}" for u, e in entries.items())
            raise self._error(", ".join(self.base_urls), f"the servers describe the model differently ({shown})",
                              "point llm.base_urls at servers of the same model and version")
        entry = next(iter(entries.values()))
        if entry is None:
            digest, source = hashlib.sha256(self.model.encode("utf-8")).hexdigest(), "model name"
        else:
            canonical = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            digest, source = hashlib.sha256(canonical.encode("utf-8")).hexdigest(), "server model entry"
        ident = {"backend": self.name, "model": self.model, "digest": digest, "digest_of": source}
        with self._lock:
            self._identity = ident
        return dict(ident)

    def settings(self) -> dict[str, Any]:
        """``{"temperature", "seed", "num_ctx"}`` (URLs, key, timeout and retries only change
        where and how long)."""
        return {"temperature": self.temperature, "seed": self.seed, "num_ctx": self.num_ctx}

    def chat(self, messages: list[dict[str, Any]], *, num_predict: int, stop: Sequence[str] = (),
             top_logprobs: int = 0) -> Generation:
        """One non-streamed chat completion (``max_tokens=num_predict``, ``stop`` when given);
        token counts are the server's ``usage``. Checks the model first (``identity``, once);
        see ``Backend.chat``. ``top_logprobs`` > 0 sends ``logprobs: true`` and
        ``top_logprobs`` and reads ``choices[0].logprobs.content[0].top_logprobs`` (as vLLM,
        llama.cpp's servers and OpenAI answer); a server that answers without them gives
        ``Generation.top_logprobs = None``."""
        check_num_predict(num_predict)
        self.identity()
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": num_predict,
                                "temperature": self.temperature, "seed": self.seed, "stream": False}
        if stop:
            body["stop"] = list(stop)
        if top_logprobs > 0:
            body.update(logprobs=True, top_logprobs=top_logprobs)
        start = time.perf_counter()

        def parse(url: str, out: Any) -> Generation:
            try:
                message = out["choices"][0]["message"]
                text = message.get("content") or ""
                usage = out.get("usage") or {}
                return Generation(text=str(text), prompt_tokens=int(usage.get("prompt_tokens") or 0),
                                  completion_tokens=int(usage.get("completion_tokens") or 0),
                                  seconds=time.perf_counter() - start,
                                  top_logprobs=_first_token_logprobs(out["choices"][0]) if top_logprobs > 0 else None)
            except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
                raise MalformedResponse(f"{url}/chat/completions answered JSON without choices[0].message "
                                        f"({str(out)[:120]!r})") from e

        tried: list[str] = []

        def attempt() -> Generation:
            base = self._pick()
            tried.append(base)
            return parse(base, self._request("POST", f"{base}/chat/completions", body))

        try:
            return call_with_retries(attempt, retries=self.retries, backoff=self.backoff)
        except RetriesExhausted as e:
            raise self._exhausted(tried, e) from None
        except HTTPStatus as e:
            raise self._rejected(tried[-1], e) from None

