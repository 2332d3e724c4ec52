"""The Ollama backend (``OllamaBackend``, registry name ``ollama``): a model served by an Ollama
server, reached through the official ``ollama`` Python client, with retries of passing faults
(``rag_ablation.support.retry``). Its identity keys on the digest the server lists for the model.
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from rag_ablation.llm.client.base import (Backend, Generation, LLMUnavailable, check_num_predict,
                                         first_token_alternatives)
from rag_ablation.support.retry import DEFAULT_BACKOFF, DEFAULT_RETRIES, RetriesExhausted, call_with_retries, describe

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


def _canonical_ollama_name(model: str) -> str:
    """Ollama's name for a model: a name without a tag means the ``latest`` tag."""
    last = model.rsplit("/", 1)[-1]
    return model if ":" in last else f"{model}:latest"


class OllamaBackend(Backend):
    """A model served by an Ollama server, through the official ``ollama`` Python client.

    ``host`` defaults to the ``OLLAMA_HOST`` environment variable, else
    ``http://127.0.0.1:11434``. Every request carries ``temperature``, ``seed``, ``num_ctx``
    (context window, tokens) and ``num_predict`` as options, so the server's or Modelfile's
    defaults never decide an answer. ``timeout`` is the HTTP timeout in seconds for each request;
    a request that fails with a passing fault (connection error, timeout, HTTP 5xx or 429,
    malformed JSON) is tried again up to ``retries`` times, ``backoff`` seconds after the first
    failure and twice as long after each next one (``rag_ablation.support.retry``).

    Nothing is sent until ``identity`` or ``chat`` is called.
    """

    name: ClassVar[str] = "ollama"

    def __init__(
        self,
        model: str,
        host: str | None = None,
        seed: int = 0,
        temperature: float = 0.0,
        num_ctx: int = 4096,
        timeout: float = 120,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
    ) -> None:
        try:
            import ollama
        except ImportError as e:
            raise LLMUnavailable(
                f"cannot use Ollama model {model!r}: the ollama Python client is not "
                f"installed; install it with `pip install ollama`"
            ) from e
        self.model = model
        self.host = host or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST
        self.seed = seed
        self.temperature = temperature
        self.num_ctx = num_ctx
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._client = ollama.Client(host=self.host, timeout=timeout)
        self._identity: dict[str, Any] | None = None

    def _unreachable(self, failed: RetriesExhausted | None = None) -> LLMUnavailable:
        """The error for a server that does not answer at ``self.host``."""
        tried = f" ({failed.attempts} attempts; last error {describe(failed.last)})" if failed else ""
        return LLMUnavailable(
            f"cannot use Ollama model {self.model!r}: no Ollama server answers at {self.host}{tried}; "
            f"start it with `ollama serve` (or set OLLAMA_HOST / host= to where it runs)"
        )

    def _not_pulled(self) -> LLMUnavailable:
        """The error for a model the server does not have."""
        return LLMUnavailable(
            f"Ollama model {self.model!r} is not present on the server at {self.host}; "
            f"get it with `ollama pull {self.model}`"
        )

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``self._client.<method>``, retrying passing faults up to ``retries`` times.
        'Server down' (connection refused or connect timeout, every attempt), a passing fault
        that persists (HTTP 5xx, read timeouts, malformed JSON) and 'model missing' (HTTP 404
        "model ... not found") raise ``LLMUnavailable`` naming the host, the model, the last
        error and the fix. Other errors (e.g. HTTP 400) pass through at once."""
        import httpx
        import ollama

        try:
            return call_with_retries(lambda: getattr(self._client, method)(*args, **kwargs),
                                     retries=self.retries, backoff=self.backoff)
        except RetriesExhausted as e:
            # the client turns httpx.ConnectError into the builtin ConnectionError (whose text
            # does not name the host); older clients and connect timeouts arrive as httpx's own
            if isinstance(e.last, (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout)):
                raise self._unreachable(e) from None
            raise LLMUnavailable(
                f"Ollama model {self.model!r} at {self.host} failed {e.attempts} times; last error "
                f"{describe(e.last)}; check the server's log (the `ollama serve` output), raise "
                f"llm.timeout if answers are only slow, or llm.retries if the server is overloaded"
            ) from None
        except ollama.ResponseError as e:
            if e.status_code == 404 and "not found" in str(e.error).lower():
                raise self._not_pulled() from None
            raise

    def identity(self) -> dict[str, Any]:
        """``{"backend": "ollama", "model": <name as given>, "digest": <server's digest>}``.

        The digest is the one ``/api/tags`` lists for the model (a name without a tag means
        ``:latest``); it is asked once per backend instance."""
        if self._identity is None:
            wanted = _canonical_ollama_name(self.model)
            listing = self._call("list")
            for entry in listing.models:
                names = {n for n in (getattr(entry, "model", None), getattr(entry, "name", None)) if n is not None}
                if wanted in {_canonical_ollama_name(n) for n in names}:
                    self._identity = {
                        "backend": self.name,
                        "model": self.model,
                        "digest": entry.digest,
                    }
                    break
            else:
                raise self._not_pulled()
        return dict(self._identity)

    def settings(self) -> dict[str, Any]:
        """``{"temperature", "seed", "num_ctx"}`` (``timeout`` and ``host`` only change where
        and how long)."""
        return {"temperature": self.temperature, "seed": self.seed, "num_ctx": self.num_ctx}

    def chat(self, messages: list[dict[str, Any]], *, num_predict: int, stop: Sequence[str] = (),
             top_logprobs: int = 0) -> Generation:
        """One non-streamed ``/api/chat`` call; token counts are the server's
        ``prompt_eval_count`` and ``eval_count``; see ``Backend.chat``.

        ``top_logprobs`` > 0 passes ``logprobs=True, top_logprobs=k`` (ollama-python 0.6.1 and
        later; Ollama 0.12.11 and later answer them) and reads the first entry of the reply's
        ``logprobs``. An older client, which has no such arguments, or a server that answers
        without them gives ``Generation.top_logprobs = None``."""
        check_num_predict(num_predict)
        options = {**self.settings(), "num_predict": num_predict, **({"stop": list(stop)} if stop else {})}
        extra: dict[str, Any] = {}
        if top_logprobs > 0 and _client_takes_logprobs():
            extra = {"logprobs": True, "top_logprobs": top_logprobs}
        start = time.perf_counter()
        resp = self._call("chat", model=self.model, messages=messages, options=options, stream=False, **extra)
        seconds = time.perf_counter() - start
        return Generation(
            text=resp.message.content or "",
            prompt_tokens=int(resp.prompt_eval_count or 0),
            completion_tokens=int(resp.eval_count or 0),
            seconds=seconds,
            top_logprobs=_first_token_logprobs(resp) if extra else None,
        )


def _client_takes_logprobs() -> bool:
    """Whether the installed ollama client's ``Client.chat`` has the ``top_logprobs`` argument."""
    import inspect

    import ollama

    return "top_logprobs" in inspect.signature(ollama.Client.chat).parameters


def _first_token_logprobs(resp: Any) -> tuple[tuple[str, float], ...] | None:
    """The first reply token's alternatives in an Ollama chat response (``logprobs[0].top_logprobs``,
    attribute or key access), or None when there are none."""
    entries = getattr(resp, "logprobs", None)
    if entries is None and isinstance(resp, dict):
        entries = resp.get("logprobs")
    if not entries:
        return None
    first = entries[0]
    alts = first.get("top_logprobs") if isinstance(first, dict) else getattr(first, "top_logprobs", None)
    return first_token_alternatives(alts)
