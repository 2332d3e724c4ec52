"""The workbench's web layer: a Starlette app serving one page and a JSON API, for one user.

Security (the app binds to 127.0.0.1 only, ``rag_ablation.commands.label``):

- ``OwnOriginOnly`` refuses, with 403 and a message, any request whose ``Host`` is not one of
  the workbench's own addresses (``127.0.0.1:PORT``, ``localhost:PORT``): a page on another
  site whose name was rebound to 127.0.0.1 (DNS rebinding) sends its own name. A request that
  changes something (POST) must also carry an ``Origin`` that is the workbench's own.
- Paths are fixed when the app is made (``session.Project``); requests name passages,
  candidates, questions, chunks and configs by keys looked up in what was loaded.
- The page inserts every text with ``textContent``, never as HTML; its script and style are
  files of the app (``static/``, read once when the app is made: ``page.read_assets``), and the
  Content-Security-Policy allows no other source, no inline script or style.

API (JSON in, JSON out; a refusal is 422 with ``problems``, a list of messages)::

    GET  /api/write/next            POST /api/write/check|save|skip
    GET  /api/audit/configs         GET  /api/audit/next?config=NAME   POST /api/audit/accept|reject
    POST /api/queries/load          GET  /api/queries/next             POST /api/queries/check|save|skip
    GET  /api/drafts/next           POST /api/drafts/check|save
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from rag_ablation.core.errors import UserError
from rag_ablation.llm.client.base import Backend

from rag_ablation.authoring.workbench import page
from rag_ablation.authoring.workbench.checks import Verdict
from rag_ablation.authoring.workbench.drafts import DraftMode
from rag_ablation.authoring.workbench.pool import QueryMode, Search
from rag_ablation.authoring.workbench.session import AuditMode, Refused, Workbench, WriteMode

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SAFE_METHODS = ("GET", "HEAD")


def own_hosts(port: int) -> tuple[str, ...]:
    """The ``Host`` values the workbench on ``port`` answers to."""
    return (f"127.0.0.1:{port}", f"localhost:{port}")


def refusal(hosts: Sequence[str], what: str) -> str:
    """The message of a refused request (``what`` names the header and its value)."""
    return (f"refused: {what} is not this workbench's address ({', '.join(hosts)}); open "
            f"http://{hosts[0]}/ in your own browser (requests from other sites are refused)")


class OwnOriginOnly:
    """ASGI middleware: the Host and Origin checks of the module docstring."""

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
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = self.problem(scope)
            if problem is not None:
                await JSONResponse({"problems": [problem]}, status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


Handler = Callable[[dict[str, Any]], Any]


def _result(value: Any) -> Any:
    if isinstance(value, Verdict):
        return value.to_json()
    return {"ok": True} if value is None else value


def create_app(bench: Workbench, *, hosts: Sequence[str], searchers: Mapping[str, Search] | None = None,
               llm: Backend | None = None, llm_cache: Path | None = None) -> Starlette:
    """The app over ``bench``, answering only to ``hosts`` (``own_hosts``). ``searchers`` (tests)
    replaces the live searches of the label-queries mode; ``llm`` and ``llm_cache`` (tests) the
    drafts mode's model and prompt cache."""
    write, audit, queries = WriteMode(bench), AuditMode(bench), QueryMode(bench, searchers)
    drafts = DraftMode(bench, llm, cache=llm_cache)
    lock = threading.Lock()  # one change at a time: validation and append stay together

    def call(fn: Handler, payload: dict[str, Any]) -> Response:
        try:
            with lock:
                return JSONResponse(_result(fn(payload)))
        except Refused as e:
            return JSONResponse({"ok": False, "problems": e.problems}, status_code=422)
        except UserError as e:
            return JSONResponse({"ok": False, "problems": [str(e)]}, status_code=422)

    def post(fn: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                payload = json.loads(await request.body() or b"{}")
            except (json.JSONDecodeError, UnicodeDecodeError):
                return JSONResponse({"ok": False, "problems": ["the request body is not JSON"]}, status_code=400)
            if not isinstance(payload, dict):
                return JSONResponse({"ok": False, "problems": ["expected a JSON object"]}, status_code=400)
            return await run_in_threadpool(call, fn, payload)
        return endpoint

    def get(fn: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await run_in_threadpool(call, fn, dict(request.query_params))
        return endpoint

    def asset(file: page.Asset) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return Response(file.body, media_type=file.media_type, headers={
                "Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
                "Referrer-Policy": "no-referrer"})
        return endpoint

    routes = [
        *(Route(path, asset(file)) for path, file in page.read_assets().items()),
        Route("/api/write/next", get(lambda p: write.next())),
        Route("/api/write/check", post(write.check), methods=["POST"]),
        Route("/api/write/save", post(write.save), methods=["POST"]),
        Route("/api/write/skip", post(write.skip), methods=["POST"]),
        Route("/api/audit/configs", get(lambda p: {"configs": sorted(audit.configs()), "k": audit.k})),
        Route("/api/audit/next", get(lambda p: audit.next(str(p.get("config", ""))))),
        Route("/api/audit/accept", post(audit.accept), methods=["POST"]),
        Route("/api/audit/reject", post(audit.reject), methods=["POST"]),
        Route("/api/queries/load", post(queries.load), methods=["POST"]),
        Route("/api/queries/next", get(lambda p: queries.next())),
        Route("/api/queries/check", post(queries.check), methods=["POST"]),
        Route("/api/queries/save", post(queries.save), methods=["POST"]),
        Route("/api/queries/skip", post(queries.skip), methods=["POST"]),
        Route("/api/drafts/next", get(lambda p: drafts.next())),
        Route("/api/drafts/check", post(drafts.check), methods=["POST"]),
        Route("/api/drafts/save", post(drafts.save), methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(OwnOriginOnly, hosts=hosts)
    return app
