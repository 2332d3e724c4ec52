"""app: the Host/Origin/header checks, the JSON API (every endpoint a POST), and a killed server losing nothing."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import httpx
import pytest
from starlette.testclient import TestClient

from rag_ablation.authoring.workbench.app import INTERNAL, MAX_DEPTH, create_app, nesting, own_hosts
from rag_ablation.authoring.workbench.session import MAX_TEXT_CHARS, Workbench
from rag_ablation.data.corpus import load_corpus
from rag_ablation.data.questions import check_spans, load_questions

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
PAGE = {"Origin": BASE, "X-Workbench": "1"}
"""The headers the page's fetch sends with every API request."""


@pytest.fixture
def bare(bench):
    """A client sending no header of its own (what another site's page can make a browser send)."""
    return TestClient(create_app(bench, hosts=own_hosts(PORT)), base_url=BASE)


@pytest.fixture
def client(bench):
    """A client sending the page's headers."""
    return TestClient(create_app(bench, hosts=own_hosts(PORT)), base_url=BASE, headers=PAGE)


def test_the_page_and_its_assets_are_served_with_a_strict_policy(client):
    page = client.get("/")
    assert page.status_code == 200 and "<script src=\"/app.js\"></script>" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    js = client.get("/app.js").text
    assert "textContent" in js and "innerHTML" not in js and "http" not in js.replace("HTTP ", "")
    assert "<link rel=\"stylesheet\" href=\"/app.css\">" in page.text and "//" not in page.text.split("<body>")[0]


@pytest.mark.bad_input
def test_a_foreign_host_or_origin_is_refused_with_a_message(client):
    r = client.post("/api/write/next", json={}, headers={"Host": "evil.example:8765"})
    assert r.status_code == 403
    assert r.json()["problems"] == [
        f"refused: Host 'evil.example:8765' is not this workbench's address (127.0.0.1:{PORT}, localhost:{PORT}); "
        f"open http://127.0.0.1:{PORT}/ in your own browser (requests from other sites are refused)"]
    r = client.post("/api/write/skip", json={"passage": 0, "reason": "skip"}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and "Origin 'http://evil.example' is not this workbench's address" in r.json()["problems"][0]
    r = client.post("/api/write/skip", json={"passage": 0, "reason": "skip"}, headers={"Origin": ""})
    assert r.status_code == 403
    assert client.post("/api/write/next", json={}, headers={"Host": f"localhost:{PORT}",
                                                            "Origin": f"http://localhost:{PORT}"}).status_code == 200


@pytest.mark.bad_input
def test_a_post_without_origin_or_an_api_request_without_the_header_is_refused(bare, bench):
    r = bare.post("/api/write/skip", json={"passage": 0, "reason": "skip"}, headers={"X-Workbench": "1"})
    assert r.status_code == 403 and "a request without an Origin header" in r.json()["problems"][0]
    for path in ("/api/write/next", "/api/drafts/next", "/api/audit/configs", "/api/queries/next"):
        # what <img src=...> or <script src=...> of another site sends: a GET, no Origin, no header
        r = bare.get(path)
        assert r.status_code == 403, path
        assert r.json()["problems"] == [
            f"refused: an API request without the header X-Workbench: 1 (a page of another site cannot send it); "
            f"open http://127.0.0.1:{PORT}/ in your own browser"]
        r = bare.post(path, json={}, headers={"Origin": BASE})  # a form's POST cannot add the header either
        assert r.status_code == 403 and "without the header X-Workbench: 1" in r.json()["problems"][0]
    r = bare.post("/api/write/next", json={}, headers={"Origin": BASE, "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 200, "a browser's own same-origin fetch is let through"
    r = bare.post("/api/write/next", json={}, headers={"Origin": BASE, "Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    assert bare.get("/").status_code == 200, "the page itself needs no header"
    assert not bench.project.log.exists()


@pytest.mark.bad_input
def test_no_get_does_work(client):
    for path in ("/api/write/next", "/api/audit/configs", "/api/audit/next?config=dense", "/api/queries/next",
                 "/api/drafts/next"):
        r = client.get(path)
        assert r.status_code == 405, path
        assert r.json()["problems"][0].startswith("GET is not how this is asked (HTTP 405)")
    r = client.post("/nope", json={})
    assert r.status_code in (404, 405) and r.json()["problems"]


@pytest.mark.bad_input
def test_refusals_come_back_as_problems(client):
    p = client.post("/api/write/next", json={}).json()["passage"]
    r = client.post("/api/write/save", json={"passage": p["index"], "question": "", "span": "x" * 5,
                                             "answer": "a", "slice": "main", "id": "q-1"})
    assert r.status_code == 422
    problems = r.json()["problems"]
    assert any("field 'question' must be a non-empty string" in m for m in problems)
    assert any("expected at least 20 (labels.min_span)" in m for m in problems)
    r = client.post("/api/write/save", headers={"Content-Type": "application/json"}, content=b"{nope")
    assert r.status_code == 400 and r.json()["problems"] == ["the request body is not JSON"]
    assert client.post("/api/write/next", content=b"").status_code == 400
    r = client.post("/api/write/next", json=[1])
    assert r.status_code == 400 and r.json()["problems"] == ["expected a JSON object"]
    assert client.post("/api/audit/next", json={"config": "nope"}).json()["problems"][0].startswith(
        "unknown config that ran")


@pytest.mark.bad_input
def test_each_field_is_checked_by_name_type_and_length(client, bench):
    p = client.post("/api/write/next", json={}).json()["passage"]
    form = {"passage": p["index"], "question": "What does the pier schedule say?", "span": p["text"][50:120],
            "answer": "Every forty minutes.", "slice": "main", "id": "main-ferries-01"}
    cases = {
        "question": ("x" * (MAX_TEXT_CHARS + 1),
                     f"field 'question' is {MAX_TEXT_CHARS + 1} characters long; expected at most {MAX_TEXT_CHARS}"),
        "span": ("y" * 30_000, f"field 'span' is 30000 characters long; expected at most {MAX_TEXT_CHARS}"),
        "answer": (["a"], "field 'answer' must be a string, found list"),
        "passage": ("0", "field 'passage' must be an integer, found str"),
        "span_start": ("3", "field 'span_start' must be an integer or null, found str"),
    }
    for name, (value, message) in cases.items():
        for endpoint in ("check", "save"):
            r = client.post(f"/api/write/{endpoint}", json={**form, name: value})
            assert r.status_code == 422 and r.json()["problems"] == [message], (name, endpoint, r.text)
    r = client.post("/api/write/save", json={**form, "extra": 1})
    assert r.status_code == 422 and r.json()["problems"][0].startswith("unknown field 'extra'; expected passage,")
    r = client.post("/api/write/save", json={k: v for k, v in form.items() if k != "answer"})
    assert r.status_code == 422 and r.json()["problems"] == ["missing field 'answer'"]
    r = client.post("/api/queries/save", json={"query": 0, "id": "x", "question": "q", "answer": "a", "slice": "main",
                                               "unanswerable": False, "spans": [{"candidate": 0, "span": "z" * 20_001}]})
    assert r.status_code == 422 and r.json()["problems"] == [
        f"field 'spans[0].span' is 20001 characters long; expected at most {MAX_TEXT_CHARS}"]
    r = client.post("/api/queries/load", json={"text": "q" * 20_001})
    assert r.status_code == 422 and "queries line 1: a query of 20001 characters" in r.json()["problems"][0]
    assert not bench.project.questions.exists() and not bench.project.log.exists()


@pytest.mark.bad_input
def test_deep_nesting_and_big_bodies_are_refused_before_parsing(client, bench):
    deep = b'{"a": ' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}"
    r = client.post("/api/write/check", content=deep, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["problems"] == [
        f"the request body nests arrays or objects deeper than {MAX_DEPTH} levels"]
    assert nesting(b'{"a": "[[[[[[", "b": [[{"c": "\\\"]]]"}]]}') == 4, "brackets in strings do not count"
    assert nesting(b"[" * 100_000) == MAX_DEPTH + 1, "counting stops past the limit"
    limit = bench.params.workbench.max_body_bytes
    assert limit == 1_000_000
    r = client.post("/api/queries/load", json={"text": "q\n" * (limit // 2)})
    assert r.status_code == 413 and r.json()["problems"] == [
        f"the request body is larger than {limit} bytes (workbench.max_body_bytes in params.yaml)"]
    r = client.post("/api/write/check", content=b"{}", headers={"Content-Length": "abc"})
    assert r.status_code == 400


def test_an_unexpected_error_answers_500_without_a_traceback(project, capsys):
    proj, params = project
    bench = Workbench(proj, params)
    client = TestClient(create_app(bench, hosts=own_hosts(PORT)), base_url=BASE, headers=PAGE)

    def broken():
        raise RuntimeError("secret detail /home/someone/path")

    bench.slices = broken  # type: ignore[method-assign]
    r = client.post("/api/write/next", json={})
    assert r.status_code == 500 and r.json() == {"ok": False, "problems": [INTERNAL]}
    assert "secret" not in r.text and "Traceback" not in r.text
    err = capsys.readouterr().err
    assert "internal error answering POST /api/write/next" in err and "RuntimeError: secret detail" in err


def test_save_through_the_api_writes_the_line(client, bench):
    p = client.post("/api/write/next", json={}).json()["passage"]
    span = p["text"][50:120].strip()
    body = {"passage": p["index"], "question": "What does the pier schedule say?", "span": span,
            "span_start": p["text"].find(span), "answer": "Every forty minutes.", "slice": "main",
            "id": p["suggested_ids"]["main"]}
    check = client.post("/api/write/check", json=body).json()
    assert check["ok"] and check["facts"]["n_docs"] == 1
    saved = client.post("/api/write/save", json=body).json()
    assert json.loads(bench.project.questions.read_text(encoding="utf-8")) == saved


def start(cwd):
    """`rag-ablation label` in ``cwd`` on a free port; (process, base URL) once it is serving."""
    proc = subprocess.Popen([sys.executable, "-m", "rag_ablation.commands.main", "label"], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    assert m, (line, proc.stderr.read() if proc.poll() is not None else "")
    base = m.group(0).rstrip("/")
    for _ in range(100):
        try:
            httpx.get(base + "/", timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.05)
    return proc, base


def save_next(base, n):
    page = {"Origin": base, "X-Workbench": "1"}
    p = httpx.post(base + "/api/write/next", json={}, headers=page).json()["passage"]
    span = p["text"][20:90].strip()
    r = httpx.post(base + "/api/write/save", headers=page,
                   json={"passage": p["index"], "question": f"Question number {n} about this passage?", "span": span,
                         "answer": "An answer.", "slice": "main", "id": p["suggested_ids"]["main"]})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
def test_killing_the_server_loses_nothing_and_a_restart_resumes(project, tmp_path):
    proc, base = start(tmp_path)
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", base) and not base.endswith(":0")
        first = save_next(base, 1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
    questions = tmp_path / "data/questions/handbook.jsonl"
    text = questions.read_text(encoding="utf-8")
    assert text.endswith("\n") and [json.loads(x) for x in text.splitlines()] == [first]
    proc, base = start(tmp_path)
    try:
        nxt = httpx.post(base + "/api/write/next", json={}, headers={"Origin": base, "X-Workbench": "1"}).json()
        assert nxt["done"] == 1, "the restart resumes after the saved passage"
        second = save_next(base, 2)
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        proc.wait(timeout=10)
    finally:
        proc.kill()
    assert [q.id for q in load_questions(questions)] == [first["id"], second["id"]]
    check_spans(load_questions(questions), load_corpus(tmp_path / "data/corpus"))
    assert sorted(p.name for p in questions.parent.iterdir()) == ["handbook.jsonl", "handbook.workbench-log"]


def test_the_api_offers_a_chosen_track_lists_saved_questions_and_undoes_the_last(client, bench):
    trams = client.post("/api/write/next", json={"track": "trams"}).json()
    assert trams["track"] == "trams" and trams["passage"]["track"] == "trams"
    p = client.post("/api/write/next", json={}).json()["passage"]
    span = p["text"][40:100].strip()
    form = {"passage": p["index"], "question": "What does the first passage say?", "span": span,
            "span_start": p["text"].find(span), "answer": "So.", "slice": "main", "id": "main-ferries-01"}
    assert client.post("/api/write/save", json=form).status_code == 200
    saved = client.post("/api/questions/saved", json={}).json()
    assert (saved["total"], saved["undo"], [q["id"] for q in saved["questions"]]) == (1, "main-ferries-01",
                                                                                      ["main-ferries-01"])
    r = client.post("/api/questions/undo", json={"id": "main-ferries-02"})
    assert r.status_code == 422 and "only the last saved question can be undone" in r.json()["problems"][0]
    undone = client.post("/api/questions/undo", json={"id": "main-ferries-01"}).json()
    assert undone["passage"]["index"] == p["index"] and undone["span_start"] == form["span_start"]
    assert bench.project.questions.read_text(encoding="utf-8") == ""
    r = client.post("/api/write/next", json={"track": "buses"})
    assert r.status_code == 422 and r.json()["problems"] == ["unknown track 'buses'; expected one of: ferries, trams"]
