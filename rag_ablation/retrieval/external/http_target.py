"""``method: http``: a team's retriever (or whole app) behind an HTTP service.

Each question is one POST of a JSON body to ``url``, the URL the user's params name (no other
address is ever asked). The body is the ``body`` template with every ``{question}``, ``{qid}``,
``{k}`` and ``{NAME}`` of ``args`` filled in, inside strings at any depth; a string that is
exactly one placeholder takes the value's own JSON type (``"{k}"`` becomes the number 10). The
reply must be JSON: the hits are the list at the dotted path ``hits`` (``data.results``; an
integer part indexes a list), each hit's fields read under ``fields`` (``text``, ``doc``, ``id``,
``score``); with ``call: ask`` the answer is at the dotted path ``answer``. ``version``, when set,
is the dotted path of the version the service reports.

A connection error, a timeout, HTTP 5xx or 429, or a reply that is not JSON is tried again up to
``retries`` times (``rag_ablation.support.retry``); then, or at once for another 4xx, the run
stops with one message naming the app, the question and the last error (every reply already
received stays in the cache).
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rag_ablation.core.config import AppConfig
from rag_ablation.core.errors import UserError
from rag_ablation.support.retry import HTTPStatus, MalformedResponse, RetriesExhausted, call_with_retries, describe

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ServiceFailed(UserError):
    """An http app could not be asked, or its reply lacks what params say it holds."""


def fill(template: Any, values: Mapping[str, Any]) -> Any:
    """``template`` with each ``{NAME}`` of ``values`` filled in (module docstring); an unknown
    placeholder raises ``ServiceFailed`` naming it."""
    if isinstance(template, Mapping):
        return {k: fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values) for v in template]
    if not isinstance(template, str):
        return template

    def value(name: str) -> Any:
        if name not in values:
            raise ServiceFailed(f"body template: {{{name}}} is not one of {', '.join('{' + v + '}' for v in values)}; "
                                f"fix apps.<name>.body, or add {name} to args")
        return values[name]

    whole = PLACEHOLDER.fullmatch(template)
    if whole:
        return value(whole.group(1))
    return PLACEHOLDER.sub(lambda m: str(value(m.group(1))), template)


def dig(reply: Any, path: str, *, what: str) -> Any:
    """The value at dotted ``path`` of ``reply`` (an integer part indexes a list); raises
    ``KeyError`` with a message naming ``what`` and the part missing."""
    value = reply
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            keys = ", ".join(map(str, list(value)[:10])) if isinstance(value, Mapping) else type(value).__name__
            raise KeyError(f"the reply has no {what} at {path!r} (no {part!r}; found {keys})")
    return value


class HttpCaller:
    """Asks one http app (module docstring), one question per request."""

    batch = 1

    def __init__(self, app: AppConfig) -> None:
        import httpx

        assert app.url is not None
        self.app = app
        headers = {"content-type": "application/json", **app.headers}
        if app.api_key_env:
            key = os.environ.get(app.api_key_env)
            if not key:
                raise ServiceFailed(f"app {app.url}: environment variable {app.api_key_env} (api_key_env) is not set; "
                                    f"export it with the service's key")
            headers["authorization"] = f"Bearer {key}"
        self._client = httpx.Client(timeout=httpx.Timeout(app.timeout), headers=headers, follow_redirects=False,
                                    trust_env=False)
        self.version: str | None = None

    def identity(self) -> dict[str, Any]:
        a = self.app
        return {"method": "http", "url": a.url, "call": a.call, "body": a.body, "args": dict(a.args), "k": a.k,
                "hits": a.hits, "answer": a.answer if a.call == "ask" else None, "fields": dict(a.fields),
                "version": self.version}

    def _post(self, body: Any) -> Any:
        import httpx

        def once() -> Any:
            resp = self._client.post(self.app.url or "", json=body)
            if resp.status_code >= 400:
                raise HTTPStatus(resp.status_code, resp.text)
            try:
                return resp.json()
            except ValueError:
                raise MalformedResponse(f"HTTP {resp.status_code} reply is not JSON: {resp.text[:120]!r}") from None

        try:
            return call_with_retries(once, retries=self.app.retries)
        except RetriesExhausted as e:
            raise ServiceFailed(f"{self.app.url}: no usable reply after {e.attempts} attempt(s) ({describe(e.last)}); "
                                f"is the service running? Finished calls are cached: rerun when it is") from None
        except (HTTPStatus, httpx.HTTPError) as e:
            raise ServiceFailed(f"{self.app.url}: {describe(e)}; fix the request (url, body, headers) in "
                                f"params.yaml") from None

    def reply(self, qid: str, text: str) -> dict[str, Any]:
        """The service's reply to one question as ``{"hits", "answer", "version"}`` (hits as the
        contract's mappings)."""
        a = self.app
        body = fill(a.body, {**a.args, "question": text, "qid": qid, "k": a.k})
        raw = self._post(body)
        try:
            hits = dig(raw, a.hits, what="hits")
            answer = dig(raw, a.answer, what="answer") if a.call == "ask" else None
            version = dig(raw, a.version, what="version") if a.version else None
        except KeyError as e:
            raise ServiceFailed(f"{a.url}, question {qid}: {e.args[0]}; fix apps.<name>.hits / answer / version "
                                f"in params.yaml to the reply's layout") from None
        if isinstance(hits, list):
            f = a.fields
            hits = [{key: h.get(f[key]) for key in f} if isinstance(h, Mapping) else h for h in hits]
        return {"hits": hits, "answer": answer, "version": None if version is None else str(version)}

    def __call__(self, questions: Sequence[tuple[str, str]]) -> list[Any]:
        return [self.reply(qid, text) for qid, text in questions]

    def close(self) -> None:
        self._client.close()
