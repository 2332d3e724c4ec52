"""Hostile requests to every API endpoint: random bytes, deep nesting, huge strings, wrong types,
missing and unknown fields, bodies over the limit, passages, queries and configs that do not
exist. Each is refused with a 4xx and a JSON list of problems (never a 2xx, never a 5xx or a
traceback), quickly, and no file of the project changes.

The property test draws the bodies with hypothesis (``max_examples`` kept modest so it runs in
seconds); the table test sends a fixed set of them to each endpoint; the 100 MB test drives the
ASGI app with a body streamed from a generator, so neither the test nor the server holds it.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from rag_ablation.authoring.workbench.app import (FIELDS, FILE, FLAG, INDEX, MAX_DEPTH, OFFSET, OPTIONAL, SPAN_FIELDS,
                                                  SPANS, TEXT, create_app, own_hosts)
from rag_ablation.authoring.workbench.session import MAX_TEXT_CHARS, Workbench, WriteMode

from workbench_tiny_project import FixedDrafts, audit_project, reply

pytestmark = pytest.mark.bad_input

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
PAGE = {"Origin": BASE, "X-Workbench": "1"}
ENDPOINTS = sorted(FIELDS)
SECONDS = 5.0
"""The most one refused request may take (they take milliseconds)."""


def tree(root: Path) -> dict[str, str]:
    """Every file and folder under ``root``: relative path -> SHA-256 of its bytes ("dir" for a folder)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def served(project, tmp_path):
    """(client with the page's headers, the project folder) over the tiny project with a run file,
    scores, loaded queries, fixed searches and a fixed drafting model, so that every mode has
    something to refuse with."""
    proj, params = project
    audit_project(proj, params)
    bench = Workbench(proj, params)
    docs = {d.doc: d.text for d in bench.view.documents}
    ferries = docs["ferries/operations.md"]
    searchers = {"dense": lambda q: [("ferries/operations.md", ferries[34:466])],
                 "bm25": lambda q: [("ferries/operations.md", ferries[480:940])]}
    passages = WriteMode(bench).passages
    model = FixedDrafts({passages[0].text: reply("How often is there a boat?", "every forty minutes")})
    app = create_app(bench, hosts=own_hosts(PORT), searchers=searchers, llm=model,
                     llm_cache=tmp_path / "cache/prompts.sqlite")
    client = TestClient(app, base_url=BASE, headers=PAGE)
    r = client.post("/api/queries/load", json={"text": "how many bikes fit?\n"})
    assert r.status_code == 200, r.text
    return client, tmp_path


def refused(client: TestClient, endpoint: str, body: bytes) -> int:
    """POST ``body`` to ``endpoint``; checks the answer is a quick 4xx with problems; its status."""
    start = time.monotonic()
    r = client.post(f"/api/{endpoint}", content=body, headers={"Content-Type": "application/json"})
    took = time.monotonic() - start
    assert 400 <= r.status_code < 500, (endpoint, body[:200], r.status_code, r.text[:500])
    data = r.json()
    assert data["ok"] is False and data["problems"] and all(isinstance(m, str) for m in data["problems"])
    assert "Traceback" not in r.text and 'File "' not in r.text
    assert took < SECONDS, (endpoint, took)
    return r.status_code


# --- bodies ------------------------------------------------------------------------------------

def value_of(kind: str) -> st.SearchStrategy:
    """A plausible value of a field of ``kind`` (one the schema lets through)."""
    if kind in (TEXT, FILE):
        return st.text(max_size=40)
    if kind == INDEX:
        return st.integers(-3, 10)
    if kind == OFFSET:
        return st.none() | st.integers(-3, 500)
    if kind == FLAG:
        return st.booleans()
    return st.lists(st.fixed_dictionaries({k: value_of(v) for k, v in SPAN_FIELDS.items()}), max_size=3)


WRONG = {
    TEXT: st.none() | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.lists(st.text(max_size=3), max_size=3)
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    INDEX: st.none() | st.text(max_size=5) | st.floats(allow_nan=False) | st.booleans() | st.lists(st.integers(), max_size=2),
    OFFSET: st.text(max_size=5) | st.floats(allow_nan=False) | st.booleans() | st.lists(st.integers(), max_size=2),
    FLAG: st.none() | st.integers() | st.text(max_size=5) | st.lists(st.booleans(), max_size=2),
    SPANS: st.none() | st.text(max_size=5) | st.integers() | st.lists(st.integers() | st.text(max_size=3), min_size=1,
                                                                       max_size=3),
}
WRONG[FILE] = WRONG[TEXT]
"""Values of another type than each kind's."""


def form(endpoint: str) -> st.SearchStrategy:
    """A body with every field of ``endpoint``, each of its kind."""
    return st.fixed_dictionaries({k: value_of(v) for k, v in FIELDS[endpoint].items()})


def dumps(obj: object) -> bytes:
    return json.dumps(obj).encode()


@st.composite
def hostile(draw: st.DrawFn) -> tuple[str, bytes]:
    """(endpoint, a body it must refuse)."""
    endpoint = draw(st.sampled_from(ENDPOINTS))
    spec = FIELDS[endpoint]
    how = draw(st.sampled_from(["bytes", "deep", "huge", "wrong", "missing", "unknown", "not_object", "too_big",
                                "no_such"]))
    if how == "bytes":
        body = draw(st.binary(max_size=300))
        try:
            if isinstance(json.loads(body), dict):
                body = b"{" + body  # still random, no longer a JSON object
        except (ValueError, UnicodeDecodeError, RecursionError):
            pass
        return endpoint, body
    if how == "deep":
        depth = draw(st.integers(MAX_DEPTH + 1, 3000))
        opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}"), (b'[{"b":', b"}]")]))
        inner = opener * depth + b"1" + closer * depth
        return endpoint, b'{"' + draw(st.sampled_from(list(spec) or ["x"])).encode() + b'": ' + inner + b"}"
    if how == "huge":
        texts = [k for k, v in spec.items() if v == TEXT]
        body = draw(form(endpoint))
        name = draw(st.sampled_from(texts)) if texts else "huge"
        body[name] = draw(st.sampled_from("xé\u2028<")) * draw(st.integers(MAX_TEXT_CHARS + 1, 3 * MAX_TEXT_CHARS))
        return endpoint, dumps(body)
    if how == "wrong" and spec:
        body = draw(form(endpoint))
        name = draw(st.sampled_from(list(spec)))
        body[name] = draw(WRONG[spec[name]])
        return endpoint, dumps(body)
    if how == "missing" and [k for k in spec if k not in OPTIONAL]:
        body = draw(form(endpoint))
        del body[draw(st.sampled_from([k for k in spec if k not in OPTIONAL]))]
        return endpoint, dumps(body)
    keys = [k for k, v in spec.items() if v == INDEX or k == "config"]
    if how == "no_such" and keys:  # well-formed, naming a passage, query or config that does not exist
        body = draw(form(endpoint))
        for k in keys:
            body[k] = (draw(st.text(max_size=20).filter(lambda c: c != "dense")) if k == "config"
                       else draw(st.integers(min_value=50) | st.integers(max_value=-1)))
        return endpoint, dumps(body)
    if how == "not_object":
        return endpoint, dumps(draw(st.none() | st.integers() | st.text(max_size=20) | st.lists(st.integers(), max_size=4)))
    if how == "too_big":
        return endpoint, b'{"x": "' + b"a" * 1_000_001 + b'"}'
    body = draw(form(endpoint))  # "unknown" (and "wrong"/"missing" for an endpoint with no such field)
    extra = draw(st.text(min_size=1, max_size=30).filter(lambda k: k not in spec))
    body[extra] = draw(st.none() | st.integers() | st.text(max_size=10))
    return endpoint, dumps(body)


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=hostile())
def test_every_endpoint_refuses_hostile_bodies_with_a_4xx_and_changes_no_file(served, case):
    client, root = served
    before = tree(root)
    endpoint, body = case
    refused(client, endpoint, body)
    assert tree(root) == before, f"{endpoint} changed a file"


TABLE = {
    "not JSON": (b"\xff\xfe{nope", 400),
    "empty": (b"", 400),
    "a list": (b"[1, 2]", 400),
    "deep": (b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}", 400),
    "deep in a string is fine, the unknown field is not": (b'{"zz": "' + b"[" * 5000 + b'"}', 422),
    "a huge integer": (b'{"passage": ' + b"9" * 5000 + b"}", 400),
    "unknown field": (b'{"zz": 1}', 422),
    "over the body limit": (b'{"x": "' + b"a" * 1_000_001 + b'"}', 413),
}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_each_endpoint_refuses_the_table_of_hostile_bodies(served, endpoint):
    client, root = served
    before = tree(root)
    for name, (body, status) in TABLE.items():
        assert refused(client, endpoint, body) == status, name
    spec = FIELDS[endpoint]
    for name, kind in spec.items():
        if kind == TEXT:
            body = {k: ("x" * (MAX_TEXT_CHARS + 1) if k == name else None) for k in spec}
            r = client.post(f"/api/{endpoint}", json=body)
            assert r.status_code == 422 and f"field {name!r} is {MAX_TEXT_CHARS + 1} characters long" in r.text
        if name not in OPTIONAL:
            r = client.post(f"/api/{endpoint}", json={k: v for k, v in spec.items() if k != name})
            assert r.status_code == 422 and f"missing field {name!r}" in r.json()["problems"], (endpoint, name)
    assert tree(root) == before


# --- a 100 MB body -----------------------------------------------------------------------------

CHUNK = 64 * 1024
HUNDRED_MB = 100_000_000


class Stream:
    """A body of ``size`` bytes made ``CHUNK`` at a time as the server asks for it; ``consumed``
    counts the bytes the server took."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.consumed = 0
        self.chunks = self._chunks()

    def _chunks(self) -> Iterator[bytes]:
        yield b'{"text": "'
        sent = 0
        while sent < self.size:
            n = min(CHUNK, self.size - sent)
            sent += n
            yield b"a" * n
        yield b'"}'

    async def receive(self) -> dict:
        chunk = next(self.chunks, None)
        if chunk is None:
            return {"type": "http.request", "body": b"", "more_body": False}
        self.consumed += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}


def post_stream(app, stream: Stream, *, declared: int | None) -> tuple[int, dict]:
    """POST ``stream`` to ``/api/queries/load`` straight through the ASGI interface (no test
    client reading the body first); (status, JSON answer)."""
    headers = [(b"host", f"127.0.0.1:{PORT}".encode()), (b"origin", BASE.encode()), (b"x-workbench", b"1"),
               (b"content-type", b"application/json")]
    headers.append((b"content-length", str(declared).encode()) if declared is not None
                   else (b"transfer-encoding", b"chunked"))
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/api/queries/load", "raw_path": b"/api/queries/load",
             "query_string": b"", "root_path": "", "headers": headers, "client": ("127.0.0.1", 50000),
             "server": ("127.0.0.1", PORT)}
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, stream.receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(body)


@pytest.mark.parametrize("declared", [HUNDRED_MB + 12, None], ids=["content-length", "chunked"])
def test_a_100_mb_body_is_refused_with_413_without_being_read_whole(served, bench, declared):
    client, root = served
    before = tree(root)
    limit = bench.params.workbench.max_body_bytes
    stream = Stream(HUNDRED_MB)
    tracemalloc.start()
    try:
        start = time.monotonic()
        status, data = post_stream(client.app, stream, declared=declared)
        took = time.monotonic() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 413 and data["problems"] == [
        f"the request body is larger than {limit} bytes (workbench.max_body_bytes in params.yaml)"]
    if declared is not None:
        assert stream.consumed == 0, "a Content-Length over the limit is refused before a byte is read"
    else:
        assert limit < stream.consumed <= limit + 2 * CHUNK, "reading stopped at the limit"
    assert peak < 20 * limit, f"peak memory {peak} bytes"
    assert took < SECONDS
    assert tree(root) == before
