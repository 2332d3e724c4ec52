"""A stand-in Ollama server for tests: no Ollama server can be installed on this machine (no
network but the package registries), so this small HTTP server on 127.0.0.1 speaks the parts of
Ollama's HTTP API the official client uses here (``/api/chat``, ``/api/tags``, ``/api/show``,
``/api/version``), answering non-streamed JSON shaped like the real server's. It is the one test
double for a service that cannot run here; the ``ollama`` client and ``httpx`` are real.

``StandIn.reply`` decides each chat answer from the messages (default: ``REPLY``).
"""
from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

MODEL = "smollm2:135m"
DIGEST = "9077e9f5a5a2" + "0" * 52  # 64 hex digits, like a real Ollama digest
REPLY = "Paris is the capital of France."


@dataclass
class StandIn:
    """What the stand-in server knows and what it was sent."""

    url: str
    models: dict[str, str] = field(default_factory=lambda: {MODEL: DIGEST})
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    reply: Callable[[list[dict[str, Any]]], str] = field(default=lambda messages: REPLY)
    # the first reply token's alternatives sent when a chat asks for logprobs (Ollama 0.12.11+
    # answers ``logprobs: [{token, logprob, top_logprobs: [...]}, ...]``); None: sent never
    top_logprobs: list[dict[str, Any]] | None = None

    def bodies(self, path: str) -> list[Any]:
        return [body for _, p, body in self.requests if p == path]


def _handler(state: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """Non-streamed answers in the shapes of Ollama's API."""

        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            return json.loads(raw) if raw else None

        def _missing(self, name: str) -> None:
            # Ollama's real body for a model it does not have
            self._send(404, {"error": f'model "{name}" not found, try pulling it first'})

        def do_GET(self) -> None:
            state.requests.append(("GET", self.path, None))
            if self.path == "/api/version":
                self._send(200, {"version": "0.12.0"})
            elif self.path == "/api/tags":
                self._send(200, {"models": [
                    {
                        "name": name,
                        "model": name,
                        "modified_at": "2025-01-01T00:00:00Z",
                        "size": 101_000_000,
                        "digest": digest,
                        "details": {"format": "gguf", "family": "llama", "parameter_size": "135M",
                                    "quantization_level": "Q4_1"},
                    }
                    for name, digest in state.models.items()
                ]})
            else:
                self._send(404, {"error": "404 page not found"})

        def do_POST(self) -> None:
            body = self._body()
            state.requests.append(("POST", self.path, body))
            name = (body or {}).get("model", "")
            if self.path == "/api/chat":
                if name not in state.models:
                    return self._missing(name)
                logprobs = ({"logprobs": [{"token": state.top_logprobs[0]["token"],
                                           "logprob": state.top_logprobs[0]["logprob"],
                                           "top_logprobs": state.top_logprobs[:body.get("top_logprobs") or 0]}]}
                            if body.get("logprobs") and state.top_logprobs else {})
                self._send(200, {
                    **logprobs,
                    "model": name,
                    "created_at": "2025-01-01T00:00:00Z",
                    "message": {"role": "assistant", "content": state.reply(body.get("messages", []))},
                    "done": True,
                    "done_reason": "stop",
                    "total_duration": 1_000_000,
                    "load_duration": 1000,
                    "prompt_eval_count": 31,
                    "prompt_eval_duration": 1000,
                    "eval_count": 8,
                    "eval_duration": 1000,
                })
            elif self.path == "/api/show":
                if name not in state.models:
                    return self._missing(name)
                self._send(200, {"modelfile": "", "parameters": "", "template": "",
                                 "details": {"format": "gguf"}, "model_info": {}})
            else:
                self._send(404, {"error": "404 page not found"})

    return Handler


@contextlib.contextmanager
def serving(reply: Callable[[list[dict[str, Any]]], str] | None = None) -> Iterator[StandIn]:
    """A stand-in Ollama server on a random free port of 127.0.0.1 for the ``with`` block;
    ``reply`` decides each chat answer (default: ``REPLY``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    state = StandIn(url=f"http://127.0.0.1:{server.server_address[1]}")
    if reply is not None:
        state.reply = reply
    server.RequestHandlerClass = _handler(state)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    """The stand-in server for one test, with the default reply."""
    with serving() as state:
        yield state
