"""Bounded retries with exponential backoff for calls to an LLM server (Ollama, OpenAI-compatible).

A call is retried only for faults that may pass: the server could not be reached or dropped
the connection, a timeout, HTTP 5xx, HTTP 429 (too many requests), or a reply that was not
valid JSON (a body cut short). Any other failure (HTTP 4xx such as 400 bad request, 401
unauthorised or 404 model not found) is raised at once, unchanged: asking again would get the
same answer.

``call_with_retries(fn, retries=3, backoff=0.25)`` makes at most ``retries + 1`` attempts and
sleeps ``backoff * 2**i`` seconds (capped at ``max_backoff``) after the i-th failed attempt,
so the default waits 0.25 + 0.5 + 1 = 1.75 s in all before giving up. When every attempt failed
with a passing fault it raises ``RetriesExhausted`` carrying the attempt count and the last
error, which the backend turns into one ``LLMUnavailable`` message (server, model, last error,
what to do). There is no jitter: the callers here are one process with a few threads.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_RETRIES = 3
DEFAULT_BACKOFF = 0.25  # seconds before the first retry; doubled before each next one
MAX_BACKOFF = 8.0


class MalformedResponse(ValueError):
    """A server answered 2xx with a body that is not the JSON the API promises."""


class HTTPStatus(Exception):
    """A non-2xx answer of an HTTP API: ``status_code`` (what :func:`is_transient` reads) and the
    start of the body, whitespace collapsed."""

    def __init__(self, status_code: int, body: str) -> None:
        body = " ".join(body.split())
        super().__init__(f"HTTP {status_code}: {body[:300]}" if body else f"HTTP {status_code}")
        self.status_code = status_code
        self.body = body


class RetriesExhausted(Exception):
    """Every attempt failed with a passing fault; ``last`` is the last error."""

    def __init__(self, attempts: int, last: BaseException) -> None:
        super().__init__(f"{attempts} attempt(s) failed; last error: {describe(last)}")
        self.attempts = attempts
        self.last = last


def status_code(exc: BaseException) -> int | None:
    """The HTTP status an exception carries (``httpx.HTTPStatusError.response.status_code``,
    ``ollama.ResponseError.status_code``), else None."""
    code = getattr(exc, "status_code", None)
    if code is None:
        code = getattr(getattr(exc, "response", None), "status_code", None)
    return code if isinstance(code, int) and code > 0 else None


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a fault worth another attempt (see the module docstring)."""
    import httpx

    if isinstance(exc, (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError,
                        ConnectionError, TimeoutError, MalformedResponse, json.JSONDecodeError)):
        return True
    code = status_code(exc)
    return code is not None and (code == 429 or code >= 500)


def backoff_delays(retries: int, backoff: float = DEFAULT_BACKOFF, max_backoff: float = MAX_BACKOFF) -> list[float]:
    """The sleeps between the ``retries + 1`` attempts, in seconds."""
    return [min(backoff * 2**i, max_backoff) for i in range(retries)]


def call_with_retries(
    fn: Callable[[], T],
    *,
    retries: int = DEFAULT_RETRIES,
    backoff: float = DEFAULT_BACKOFF,
    max_backoff: float = MAX_BACKOFF,
    transient: Callable[[BaseException], bool] = is_transient,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``fn()``, tried again after a passing fault, at most ``retries + 1`` times in all.

    A failure that ``transient`` rejects is raised at once, unchanged. When the last attempt
    fails with a passing fault, ``RetriesExhausted`` is raised (from that error). Raises
    ``ValueError`` for a negative ``retries`` or ``backoff``."""
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be an int >= 0, got {retries!r}")
    if backoff < 0:
        raise ValueError(f"backoff must be >= 0 seconds, got {backoff!r}")
    delays = backoff_delays(retries, backoff, max_backoff)
    for attempt in range(retries + 1):
        try:
            return fn()
        except Exception as e:  # noqa: BLE001  (sorted by `transient`; the rest re-raised as is)
            if not transient(e):
                raise
            if attempt == retries:
                raise RetriesExhausted(attempt + 1, e) from e
            sleep(delays[attempt])
    raise AssertionError("unreachable")  # pragma: no cover


def describe(exc: BaseException) -> str:
    """A one-line description of an error for a message: its type and text, e.g.
    ``ReadTimeout: timed out`` or ``HTTPStatusError: HTTP 500: <body start>``."""
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
