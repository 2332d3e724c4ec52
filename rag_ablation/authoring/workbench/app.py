"""The workbench's web layer: a Starlette app serving one page and a JSON API, for one user.

Security (the app binds to 127.0.0.1 only, ``rag_ablation.commands.label``):

- ``OwnOriginOnly`` refuses, with 403 and a message, any request whose ``Host`` is not one of
  the workbench's own addresses (``127.0.0.1:PORT``, ``localhost:PORT``): a page on another
  site whose name was rebound to 127.0.0.1 (DNS rebinding) sends its own name. A request that
  changes something (POST) must also carry an ``Origin`` that is the workbench's own.
- Every API request is a POST (no GET runs a model, samples or writes), and carries the header
  ``X-Workbench: 1`` (``API_HEADER``) or the browser's ``Sec-Fetch-Site: same-origin``: a page of
  another site can make the browser send a GET (an ``<img>``, a ``<script>``) or a form's POST
  without either, and a cross-site fetch with a custom header needs a CORS preflight, which
  this app never grants.
- A request body is read up to ``workbench.max_body_bytes`` (413 above it, before it is read
  whole: a larger ``Content-Length`` is refused unread, a chunked body is counted while it
  streams); JSON nested deeper than ``MAX_DEPTH`` is refused (400) before it is parsed; each
  endpoint's fields are checked (``FIELDS``: names, types, at most ``MAX_TEXT_CHARS``
  characters of text) before any mode sees them (422 naming the field).
- No traceback reaches a response: an unexpected error answers 500 with ``INTERNAL`` and is
  printed to stderr, where ``rag-ablation label`` runs (``NoTraceback``).
- Paths are fixed when the app is made (``session.Project``); requests name passages,
  candidates, questions, chunks and configs by keys looked up in what was loaded.
- The page inserts every text with ``textContent``, never as HTML; its script and style are
  files of the app (``static/``, read once when the app is made: ``page.read_assets``), and the
  Content-Security-Policy allows no other source, no inline script or style.

API (POST, a JSON object in, JSON out; a refusal is 4xx with ``problems``, a list of messages)::

    /api/write/next|check|save|skip              (next: {} or {"track": NAME}; "" is every track, interleaved)
    /api/questions/saved|undo                    (undo: {"id": the last saved question's})
    /api/audit/configs|next|accept|reject        (configs: those that ran; next: {"config": NAME})
    /api/queries/load|next|check|save|skip
    /api/drafts/next|check|save
    /api/grade/next|save|skip|back|summary       (save: {config, id, answer_sha256, verdict, note, support?})
    /api/grade/second|first                      (second: {grader}: the blind second pass)
    /api/grade/supportpass|support               (supportpass: {grader}; support: {config, id, answer_sha256, support})
"""
from __future__ import annotations

import json
import re
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rag_ablation.core.errors import UserError
from rag_ablation.llm.client.base import Backend

from rag_ablation.authoring.workbench import page
from rag_ablation.authoring.workbench.checks import Verdict
from rag_ablation.authoring.workbench.drafts import DraftMode
from rag_ablation.authoring.workbench.pool import QueryMode, Search
from rag_ablation.authoring.workbench.session import (MAX_TEXT_CHARS, AuditMode, Refused, Workbench,
                                                      WorkbenchError, WriteMode, text_field)

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SAFE_METHODS = ("GET", "HEAD")
API = "/api/"
"""The prefix of the JSON API's paths (every one a POST, each carrying ``API_HEADER``)."""
API_HEADER = ("x-workbench", "1")
"""The header (lower-case name, value) the page sends with every API request."""
MAX_DEPTH = 20
"""The deepest nesting of arrays and objects a request body may hold (the page's is 3)."""
MAX_SPANS = 50
"""The most spans one label-queries request may mark."""
INTERNAL = ("internal error: the workbench could not answer this request; the details are printed where "
            "`rag-ablation label` runs")
"""The message of a 500: nothing of the error itself (no traceback, no path) reaches the page."""


def own_hosts(port: int) -> tuple[str, ...]:
    """The ``Host`` values the workbench on ``port`` answers to."""
    return (f"127.0.0.1:{port}", f"localhost:{port}")


def refusal(hosts: Sequence[str], what: str) -> str:
    """The message of a refused request (``what`` names the header and its value)."""
    return (f"refused: {what} is not this workbench's address ({', '.join(hosts)}); open "
            f"http://{hosts[0]}/ in your own browser (requests from other sites are refused)")


def problem(status: int, *problems: str) -> JSONResponse:
    return JSONResponse({"ok": False, "problems": list(problems)}, status_code=status)


class OwnOriginOnly:
    """ASGI middleware: the Host, Origin and API header checks of the module docstring."""

    def __init__(self, app: ASGIApp, hosts: Sequence[str]) -> None:
        self.app = app
        self.hosts = tuple(hosts)

    def problem(self, scope: Scope) -> str | None:
        """Why the request is refused, or None."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if host not in self.hosts:
            return refusal(self.hosts, f"Host {host!r}")
        origin = headers.get("origin")
        if origin is not None and origin not in {f"http://{h}" for h in self.hosts}:
            return refusal(self.hosts, f"Origin {origin!r}")
        if origin is None and scope.get("method") not in SAFE_METHODS:
            return refusal(self.hosts, "a request without an Origin header")
        name, value = API_HEADER
        if (str(scope.get("path", "")).startswith(API) and headers.get(name) != value
                and headers.get("sec-fetch-site") != "same-origin"):
            return (f"refused: an API request without the header X-Workbench: {value} (a page of another site "
                    f"cannot send it); open http://{self.hosts[0]}/ in your own browser")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            why = self.problem(scope)
            if why is not None:
                await problem(403, why)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class NoTraceback:
    """ASGI middleware, the outermost: an unexpected error answers 500 with ``INTERNAL`` (when no
    answer has started) and its traceback goes to stderr, never to the client."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception:
            print(f"rag-ablation label: internal error answering {scope.get('method')} {scope.get('path')}:",
                  file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            if not started:
                await problem(500, INTERNAL)(scope, receive, send)


class BadRequest(Exception):
    """A request body refused before any mode sees it: its HTTP status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def too_large(limit: int) -> BadRequest:
    return BadRequest(413, f"the request body is larger than {limit} bytes (workbench.max_body_bytes in params.yaml)")


async def read_body(request: Request, limit: int) -> bytes:
    """The body of ``request``, at most ``limit`` bytes: a larger ``Content-Length`` is refused
    before a byte is read, a body without one (chunked) as soon as it passes the limit."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not re.fullmatch(r"[0-9]{1,19}", declared.strip()):
            raise BadRequest(400, "the Content-Length header is not a number of bytes")
        if int(declared) > limit:
            raise too_large(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large(limit)
    return bytes(body)


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def nesting(body: bytes, stop: int = MAX_DEPTH) -> int:
    """How deep arrays and objects nest in the JSON text ``body``, without parsing it or recursing:
    the brackets outside strings are counted (an unterminated string's count too: it is no JSON
    anyway). Counting stops past ``stop``."""
    depth = deepest = 0
    for b in _STRING.sub(b'""', body).translate(None, _NOT_BRACKETS):
        if b in b"[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop:
                    break
        else:
            depth -= 1
    return deepest


def parse_body(body: bytes) -> dict[str, Any]:
    """The JSON object a request body holds, or ``BadRequest`` (400)."""
    if nesting(body) > MAX_DEPTH:
        raise BadRequest(400, f"the request body nests arrays or objects deeper than {MAX_DEPTH} levels")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # JSONDecodeError is a ValueError, as is an int too long
        raise BadRequest(400, "the request body is not JSON") from None
    if not isinstance(payload, dict):
        raise BadRequest(400, "expected a JSON object")
    return payload


# --- the fields of each endpoint --------------------------------------------------------------

TEXT, FILE, INDEX, OFFSET, FLAG, SPANS = "text", "file", "index", "offset", "flag", "spans"
"""The kinds of field: ``TEXT`` a string of at most ``MAX_TEXT_CHARS`` characters, ``FILE`` a
string bounded by the body limit only (a queries file), ``INDEX`` an integer, ``OFFSET`` an
integer or null, ``FLAG`` true or false, ``SPANS`` a list of at most ``MAX_SPANS`` marked spans
(``SPAN_FIELDS``)."""
OPTIONAL = {"span_start", "support", "track"}
"""The fields a request may leave out (the page sends every field of its form; write/next
without ``track`` offers every track, interleaved; grade/save without ``support`` stores no
support grade, and grade/support refuses a request without one, naming the levels)."""

WRITE_FORM = {"passage": INDEX, "question": TEXT, "span": TEXT, "span_start": OFFSET, "answer": TEXT,
              "slice": TEXT, "id": TEXT}
QUERY_FORM = {"query": INDEX, "id": TEXT, "question": TEXT, "answer": TEXT, "slice": TEXT, "spans": SPANS,
              "unanswerable": FLAG}
DRAFT_FORM = {"passage": INDEX, "verdict": TEXT, "question": TEXT, "span": TEXT, "span_start": OFFSET,
              "answer": TEXT, "id": TEXT}
AUDIT_TARGET = {"config": TEXT, "id": TEXT, "chunk": TEXT}
SPAN_FIELDS = {"candidate": INDEX, "span": TEXT, "span_start": OFFSET}
GRADE_TARGET = {"config": TEXT, "id": TEXT, "answer_sha256": TEXT}

FIELDS: dict[str, dict[str, str]] = {
    "write/next": {"track": TEXT}, "write/check": WRITE_FORM, "write/save": WRITE_FORM,
    "write/skip": {"passage": INDEX, "reason": TEXT},
    "audit/configs": {}, "audit/next": {"config": TEXT}, "audit/accept": {**AUDIT_TARGET, "span": TEXT, "note": TEXT},
    "audit/reject": AUDIT_TARGET,
    "queries/load": {"text": FILE}, "queries/next": {}, "queries/check": QUERY_FORM, "queries/save": QUERY_FORM,
    "queries/skip": {"query": INDEX},
    "drafts/next": {}, "drafts/check": DRAFT_FORM, "drafts/save": DRAFT_FORM,
    "questions/saved": {}, "questions/undo": {"id": TEXT},
    "grade/next": {}, "grade/save": {**GRADE_TARGET, "verdict": TEXT, "note": TEXT, "support": TEXT}, "grade/skip": GRADE_TARGET,
    "grade/back": {}, "grade/summary": {}, "grade/second": {"grader": TEXT}, "grade/first": {},
    "grade/supportpass": {"grader": TEXT}, "grade/support": {**GRADE_TARGET, "support": TEXT},
}
"""Each endpoint (its path after ``/api/``): its fields and their kinds. Every other field is
refused, as is a missing one (``OPTIONAL`` aside)."""


def _short(name: str) -> str:
    return repr(name if len(name) <= 40 else name[:40] + "...")


def kind_problem(name: str, kind: str, value: Any) -> str | None:
    """Why ``value`` is not a field ``name`` of ``kind``, or None."""
    found = type(value).__name__ if value is not None else "null"
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind in (TEXT, FILE):
        if not isinstance(value, str):
            return f"field {_short(name)} must be a string, found {found}"
        if kind == TEXT and len(value) > MAX_TEXT_CHARS:
            return f"field {_short(name)} is {len(value)} characters long; expected at most {MAX_TEXT_CHARS}"
    elif kind == INDEX and not is_int:
        return f"field {_short(name)} must be an integer, found {found}"
    elif kind == OFFSET and not (is_int or value is None):
        return f"field {_short(name)} must be an integer or null, found {found}"
    elif kind == FLAG and not isinstance(value, bool):
        return f"field {_short(name)} must be true or false, found {found}"
    elif kind == SPANS:
        if not isinstance(value, list):
            return f"field {_short(name)} must be a list of marked spans, found {found}"
        if len(value) > MAX_SPANS:
            return f"field {_short(name)} holds {len(value)} spans; expected at most {MAX_SPANS}"
        for n, item in enumerate(value):
            if not isinstance(item, dict):
                return f"field {_short(name)}: span {n} must be an object with candidate and span"
            inner = field_problems(item, SPAN_FIELDS, where=f"{name}[{n}].")
            if inner:
                return inner[0]
    return None


def field_problems(payload: Mapping[str, Any], spec: Mapping[str, str], *, where: str = "") -> list[str]:
    """Why ``payload`` is not a request of ``spec`` (field -> kind): unknown, missing and
    ill-typed fields, each named."""
    out = [f"unknown field {_short(where + k)}; expected {', '.join(spec) or 'no field'}" for k in payload
           if k not in spec]
    out += [f"missing field {_short(where + k)}" for k in spec if k not in payload and k not in OPTIONAL]
    for k, kind in spec.items():
        if k in payload:
            why = kind_problem(where + k, kind, payload[k])
            if why:
                out.append(why)
    return out[:20]


Handler = Callable[[dict[str, Any]], Any]


class Grading(Protocol):
    """The Grade answers mode (``rag_ablation.authoring.grade_page.GradeMode``, made by
    ``rag-ablation label``: it drives the terminal grader's session, a layer above this one)."""

    def next(self) -> Any: ...
    def save(self, payload: Mapping[str, Any]) -> Any: ...
    def skip(self, payload: Mapping[str, Any]) -> Any: ...
    def back(self) -> Any: ...
    def summary(self) -> Any: ...
    def second(self, payload: Mapping[str, Any]) -> Any: ...
    def first(self) -> Any: ...
    def support_pass(self, payload: Mapping[str, Any]) -> Any: ...
    def support(self, payload: Mapping[str, Any]) -> Any: ...


class GradingOff:
    """The grade mode of an app made without one: every request is refused with a message."""

    def _off(self, *payload: Any) -> Any:
        raise WorkbenchError("grading is off in this workbench (its start said why): start `rag-ablation label` "
                             "from the project's root, with --grades FILE for a data set without its own")

    next = save = skip = back = summary = second = first = support_pass = support = _off


def _result(value: Any) -> Any:
    if isinstance(value, Verdict):
        return value.to_json()
    return {"ok": True} if value is None else value


async def not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 404
    what = "no such page or API endpoint" if status == 404 else f"{request.method} is not how this is asked (HTTP {status})"
    return problem(status, f"{what}: {request.url.path}")


def create_app(bench: Workbench, *, hosts: Sequence[str], searchers: Mapping[str, Search] | None = None,
               llm: Backend | None = None, llm_cache: Path | None = None,
               grading: Grading | None = None) -> Starlette:
    """The app over ``bench``, answering only to ``hosts`` (``own_hosts``). ``searchers`` (tests)
    replaces the live searches of the label-queries mode; ``llm`` and ``llm_cache`` (tests) the
    drafts mode's model and prompt cache; ``grading`` the Grade answers mode (None: its requests
    are refused with a message)."""
    write, audit, queries = WriteMode(bench), AuditMode(bench), QueryMode(bench, searchers)
    drafts = DraftMode(bench, llm, cache=llm_cache)
    grade: Grading = grading if grading is not None else GradingOff()
    lock = threading.Lock()  # one change at a time: validation and append stay together
    limit = bench.params.workbench.max_body_bytes

    def call(fn: Handler, payload: dict[str, Any]) -> Response:
        try:
            with lock:
                return JSONResponse(_result(fn(payload)))
        except Refused as e:
            return JSONResponse({"ok": False, "problems": e.problems}, status_code=422)
        except UserError as e:
            return problem(422, str(e))

    def post(name: str, fn: Handler) -> Route:
        spec = FIELDS[name]

        async def endpoint(request: Request) -> Response:
            try:
                payload = parse_body(await read_body(request, limit))
            except BadRequest as e:
                return problem(e.status, e.message)
            wrong = field_problems(payload, spec)
            if wrong:
                return problem(422, *wrong)
            return await run_in_threadpool(call, fn, payload)
        return Route(API + name, endpoint, methods=["POST"])

    def asset(file: page.Asset) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return Response(file.body, media_type=file.media_type, headers={
                "Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
                "Referrer-Policy": "no-referrer"})
        return endpoint

    handlers: dict[str, Handler] = {
        "write/next": lambda p: write.next(text_field(p, "track")), "write/check": write.check, "write/save": write.save,
        "write/skip": write.skip,
        "audit/configs": lambda p: audit.listing(),
        "audit/next": lambda p: audit.next(text_field(p, "config")),
        "audit/accept": audit.accept, "audit/reject": audit.reject,
        "queries/load": queries.load, "queries/next": lambda p: queries.next(), "queries/check": queries.check,
        "queries/save": queries.save, "queries/skip": queries.skip,
        "drafts/next": lambda p: drafts.next(), "drafts/check": drafts.check, "drafts/save": drafts.save,
        "questions/saved": lambda p: bench.saved_list(), "questions/undo": write.undo,
        "grade/next": lambda p: grade.next(), "grade/save": grade.save, "grade/skip": grade.skip,
        "grade/back": lambda p: grade.back(), "grade/summary": lambda p: grade.summary(),
        "grade/second": grade.second, "grade/first": lambda p: grade.first(),
        "grade/supportpass": grade.support_pass, "grade/support": grade.support,
    }
    assert handlers.keys() == FIELDS.keys()
    routes = [
        *(Route(path, asset(file), methods=["GET", "HEAD"]) for path, file in page.read_assets().items()),
        *(post(name, fn) for name, fn in handlers.items()),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: not_found})
    app.add_middleware(OwnOriginOnly, hosts=hosts)
    app.add_middleware(NoTraceback)  # added last: the outermost of the app's own middleware
    return app
