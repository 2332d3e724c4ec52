"""A stand-in OpenAI-compatible LLM server on 127.0.0.1: a test double for a flaky, slow or dying
server, which a real local server cannot be made to be on demand.

It answers ``GET /v1/models`` and non-streamed ``POST /v1/chat/completions`` in the shapes of
vLLM / llama.cpp's server, with a reply that is a pure function of the messages
(``reply_for``), so a test knows every right answer. Each chat request gets a 1-based number
``n``; ``plan(n, body)`` says what the server does with it:

- ``"ok"`` (the default): answer after ``delay(body)`` seconds;
- ``("status", code)``: answer HTTP ``code`` with an error body;
- ``("sleep", seconds)``: wait, then answer (slower than a client's timeout: a timeout);
- ``"garbage"``: HTTP 200 with a body that is not JSON;
- ``"die"``: drop the connection without answering and stop the server for good (a crash):
  from then on every connection is refused or dropped.

Requests are served in parallel (one thread each), over HTTP/1.1 keep-alive.
Used by ``tests/llm/client/test_openai_faults.py`` and ``benchmarks/llm_throughput.py``.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "stub-model"

Action = Any  # "ok" | "garbage" | "die" | ("status", int) | ("sleep", float)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that gave up (timeout) before a slow answer was written: expected here
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def reply_for(messages: list[dict[str, Any]]) -> str:
    """The stub's answer to ``messages``: a pure function of the last message's content."""
    return f"answer to: {messages[-1]['content']}"


@dataclass
class StubServer:
    """Start with ``start()`` (or as a context manager); ``url`` is the API root with ``/v1``."""

    models: tuple[str, ...] = (MODEL,)
    plan: Callable[[int, dict[str, Any]], Action] = lambda n, body: "ok"
    delay: Callable[[dict[str, Any]], float] = lambda body: 0.0
    port: int = 0
    chat_bodies: list[dict[str, Any]] = field(default_factory=list)  # every chat request received
    answered: list[str] = field(default_factory=list)  # last message content of each answered request
    list_models: bool = True  # False: no /v1/models route (HTTP 404), as on some servers
    model_listings: int = 0
    authorization: list[str | None] = field(default_factory=list)  # Authorization header of each request
    dead: bool = False

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stop_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the stub first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> StubServer:
        self._server = _Server(("127.0.0.1", self.port), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening, and drop the connections kept alive (as a stopped process would)."""
        self.dead = True
        with self._stop_lock:
            if self._server is not None and self._thread is not None and self._thread.is_alive():
                self._server.shutdown()
                self._server.server_close()
                self._thread.join(timeout=5)

    def die(self) -> None:
        """Stop for good, from inside a request (so in another thread)."""
        self.dead = True
        threading.Thread(target=self.stop, daemon=True).start()

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _handler(stub: StubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms delayed-ACK stall

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def _send(self, status: int, data: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _json(self, status: int, payload: Any) -> None:
            self._send(status, json.dumps(payload).encode())

        def _drop(self) -> None:
            self.close_connection = True  # no answer at all, as from a process that died

        def do_GET(self) -> None:
            if stub.dead:
                return self._drop()
            stub.authorization.append(self.headers.get("Authorization"))
            if self.path.rstrip("/") == "/v1/models" and stub.list_models:
                with stub._lock:
                    stub.model_listings += 1
                # `created` changes with every request, as on vLLM: it must not enter the identity
                self._json(200, {"object": "list", "data": [
                    {"id": m, "object": "model", "created": time.time_ns(), "owned_by": "stub",
                     "meta": {"n_params": 135_000_000, "n_ctx_train": 8192}} for m in stub.models]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}", "code": 404}})

        def do_POST(self) -> None:
            if stub.dead:
                return self._drop()
            stub.authorization.append(self.headers.get("Authorization"))
            n_bytes = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(n_bytes) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._json(404, {"error": {"message": f"no route {self.path}"}})
            with stub._lock:
                stub.chat_bodies.append(body)
                n = len(stub.chat_bodies)
            action = stub.plan(n, body)
            if action == "die":
                stub.die()
                return self._drop()
            if action == "garbage":
                return self._send(200, b'{"choices": [{"message": {"content": "trunc')
            if isinstance(action, tuple) and action[0] == "status":
                return self._json(action[1], {"error": {"message": f"stub error {action[1]}", "code": action[1]}})
            if body.get("model") not in stub.models:
                return self._json(404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                                  "type": "NotFoundError", "code": 404}})
            time.sleep(action[1] if isinstance(action, tuple) and action[0] == "sleep" else stub.delay(body))
            if stub.dead:
                return self._drop()
            text = reply_for(body["messages"])
            with stub._lock:
                stub.answered.append(body["messages"][-1]["content"])
            self._json(200, {
                "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10 + len(body["messages"][-1]["content"]) // 4,
                          "completion_tokens": len(text.split()), "total_tokens": 0},
            })

    return Handler
