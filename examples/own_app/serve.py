"""The team's retriever behind a local HTTP JSON service (standard library only).

Run from the repository, with ``examples`` importable::

    PYTHONPATH=examples python -m own_app.serve --port 8000      # or: python examples/own_app/serve.py

It binds to 127.0.0.1 only and prints one line with its address (``--port 0`` picks a free port).
Routes, all JSON:

- ``POST /search`` ``{"question": str, "qid": str, "k": int}`` (``qid`` and ``k`` optional; ``k``
  at most the retriever's ``top_n``) -> ``{"hits": [{"text", "doc", "id", "score"}], "version"}``,
  the hits best first (``own_app.retriever``), ``version`` the app's ``__version__``;
- ``POST /ask`` (same body) -> ``{"answer": str, "passages": hits, "version"}``: an extractive
  "whole app" whose answer is the first sentence of the best passage (a refusal when none matches);
- ``GET /stats`` -> ``{"requests": {"search": n, "ask": n}, "version"}``: the POSTs answered so far
  (a benchmark counts the calls that reached the app with it).

``--delay-ms`` sleeps that long in every POST before answering (a stand-in for a slower model
or network, for benchmarks). A body that is not JSON or lacks a question string gets HTTP 400,
an unknown route 404, both with ``{"error": message}``. Connections are kept alive (HTTP/1.1),
one thread each.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the `own_app` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.documents import Document  # noqa: E402

from own_app import __version__  # noqa: E402
from own_app.retriever import ParagraphTfidfRetriever, get_retriever  # noqa: E402

HOST = "127.0.0.1"
ROUTES = ("search", "ask")
"""The POST routes, each counted in ``/stats``."""
NO_ANSWER = "I don't know: no passage matches the question."
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class BadRequest(ValueError):
    """A request body the service cannot answer; the message is sent back with HTTP 400."""


def first_sentence(text: str) -> str:
    """The text up to and including the first ``.``, ``!`` or ``?`` followed by whitespace (all of
    ``text``, stripped, when there is none)."""
    return SENTENCE_END.split(text.strip(), maxsplit=1)[0]


def hit_of(doc: Document) -> dict[str, Any]:
    """One Document as the JSON hit of a reply: text, doc, id and score."""
    return {"text": doc.page_content, "doc": doc.metadata["doc"], "id": doc.id, "score": doc.metadata["score"]}


def parse_request(body: bytes, *, top_n: int) -> tuple[str, int]:
    """The question and ``k`` of a request body (module docstring); ``k`` defaults to ``top_n``.
    Raises ``BadRequest`` saying what is wrong."""
    try:
        data = json.loads(body or b"null")
    except ValueError as e:
        raise BadRequest(f"the body is not JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("question"), str) or not data["question"].strip():
        raise BadRequest('expected a JSON object with "question" (a non-empty string), "qid" and "k"')
    k = data.get("k", top_n)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise BadRequest(f'"k" is {k!r}; expected a positive integer')
    return data["question"], k


def search(retriever: ParagraphTfidfRetriever, question: str, k: int) -> dict[str, Any]:
    """The reply of ``POST /search``."""
    return {"hits": [hit_of(d) for d in retriever.invoke(question)[:k]], "version": __version__}


def ask(retriever: ParagraphTfidfRetriever, question: str, k: int) -> dict[str, Any]:
    """The reply of ``POST /ask``: the first sentence of the best passage, and the passages."""
    hits = [hit_of(d) for d in retriever.invoke(question)[:k]]
    answer = first_sentence(hits[0]["text"]) if hits else NO_ANSWER
    return {"answer": answer, "passages": hits, "version": __version__}


class SearchServer(ThreadingHTTPServer):
    """The service: one retriever, a fixed delay per POST, and a count of POSTs per route."""

    daemon_threads = True
    request_queue_size = 128  # connections waiting to be accepted: a benchmark opens many at once

    def __init__(self, retriever: ParagraphTfidfRetriever, *, port: int = 0, delay_ms: float = 0.0,
                 quiet: bool = True) -> None:
        super().__init__((HOST, port), Handler)
        self.retriever = retriever
        self.delay_s = delay_ms / 1000.0
        self.quiet = quiet
        self.requests = dict.fromkeys(ROUTES, 0)
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        """The service's root, ``http://127.0.0.1:PORT``."""
        return f"http://{HOST}:{self.port}"

    def count(self, route: str) -> None:
        with self._lock:
            self.requests[route] += 1

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": dict(self.requests), "version": __version__}


class Handler(BaseHTTPRequestHandler):
    """The routes of the module docstring."""

    protocol_version = "HTTP/1.1"
    # headers and body leave in two writes: without TCP_NODELAY, Nagle's algorithm holds the body
    # back until the client's delayed ACK (about 40 ms on Linux) on a kept-alive connection
    disable_nagle_algorithm = True
    server: SearchServer

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json; charset=utf-8")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802  (the http.server interface)
        if self.path == "/stats":
            self._send(200, self.server.stats())
        else:
            self._send(404, {"error": f"no GET route {self.path}; try GET /stats or POST /search, /ask"})

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        route = self.path.strip("/")
        if route not in ROUTES:
            self._send(404, {"error": f"no POST route {self.path}; expected /search or /ask"})
            return
        server = self.server
        try:
            question, k = parse_request(body, top_n=server.retriever.top_n)
        except BadRequest as e:
            self._send(400, {"error": str(e)})
            return
        server.count(route)
        if server.delay_s:
            time.sleep(server.delay_s)
        answer = search if route == "search" else ask
        self._send(200, answer(server.retriever, question, k))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (the http.server interface)
        if not self.server.quiet:
            super().log_message(format, *args)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=8000, help="0: pick a free port (printed)")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="sleep this long in every POST")
    ap.add_argument("--corpus", default="data/corpus", help="the folder of Markdown files (default %(default)s)")
    ap.add_argument("--top-n", type=int, default=10)
    ap.add_argument("--min-paragraph-chars", type=int, default=40)
    ap.add_argument("--sublinear-tf", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--log", action="store_true", help="log every request to stderr")
    args = ap.parse_args(argv)
    retriever = get_retriever(args.corpus, top_n=args.top_n, min_paragraph_chars=args.min_paragraph_chars,
                              sublinear_tf=args.sublinear_tf)
    server = SearchServer(retriever, port=args.port, delay_ms=args.delay_ms, quiet=not args.log)
    print(f"own_app {__version__} serving {retriever.n_passages} passages on {server.url} "
          f"(POST /search, POST /ask, GET /stats)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
