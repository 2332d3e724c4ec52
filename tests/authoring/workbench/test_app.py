"""app: the Host/Origin checks, the JSON API, and a killed server losing nothing."""
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

from rag_ablation.authoring.workbench.app import create_app, own_hosts
from rag_ablation.data.corpus import load_corpus
from rag_ablation.data.questions import check_spans, load_questions

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"


@pytest.fixture
def client(bench):
    return TestClient(create_app(bench, hosts=own_hosts(PORT)), base_url=BASE)


def test_the_page_and_its_assets_are_served_with_a_strict_policy(client):
    page = client.get("/")
    assert page.status_code == 200 and "<script src=\"/app.js\"></script>" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    js = client.get("/app.js").text
    assert "textContent" in js and "innerHTML" not in js and "http" not in js.replace("HTTP ", "")
    assert "<link rel=\"stylesheet\" href=\"/app.css\">" in page.text and "//" not in page.text.split("<body>")[0]


@pytest.mark.bad_input
def test_a_foreign_host_or_origin_is_refused_with_a_message(client):
    r = client.get("/api/write/next", headers={"Host": "evil.example:8765"})
    assert r.status_code == 403
    assert r.json()["problems"] == [
        f"refused: Host 'evil.example:8765' is not this workbench's address (127.0.0.1:{PORT}, localhost:{PORT}); "
        f"open http://127.0.0.1:{PORT}/ in your own browser (requests from other sites are refused)"]
    r = client.post("/api/write/skip", json={"passage": 0, "reason": "skip"}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and "Origin 'http://evil.example' is not this workbench's address" in r.json()["problems"][0]
    r = client.post("/api/write/skip", json={"passage": 0, "reason": "skip"})
    assert r.status_code == 403 and "a request without an Origin header" in r.json()["problems"][0]
    assert client.get("/api/write/next", headers={"Host": f"localhost:{PORT}"}).status_code == 200


@pytest.mark.bad_input
def test_refusals_come_back_as_problems(client):
    origin = {"Origin": BASE}
    p = client.get("/api/write/next").json()["passage"]
    r = client.post("/api/write/save", headers=origin, json={"passage": p["index"], "question": "", "span": "x" * 5,
                                                              "answer": "a", "slice": "main", "id": "q-1"})
    assert r.status_code == 422
    problems = r.json()["problems"]
    assert any("field 'question' must be a non-empty string" in m for m in problems)
    assert any("expected at least 20 (labels.min_span)" in m for m in problems)
    r = client.post("/api/write/save", headers={**origin, "Content-Type": "application/json"}, content=b"{nope")
    assert r.status_code == 400 and r.json()["problems"] == ["the request body is not JSON"]
    assert client.get("/api/audit/next?config=nope").json()["problems"][0].startswith("unknown config with a run file")


def test_save_through_the_api_writes_the_line(client, bench):
    p = client.get("/api/write/next").json()["passage"]
    span = p["text"][50:120].strip()
    body = {"passage": p["index"], "question": "What does the pier schedule say?", "span": span,
            "span_start": p["text"].find(span), "answer": "Every forty minutes.", "slice": "main",
            "id": p["suggested_ids"]["main"]}
    check = client.post("/api/write/check", headers={"Origin": BASE}, json=body).json()
    assert check["ok"] and check["facts"]["n_docs"] == 1
    saved = client.post("/api/write/save", headers={"Origin": BASE}, json=body).json()
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
    p = httpx.get(base + "/api/write/next").json()["passage"]
    span = p["text"][20:90].strip()
    r = httpx.post(base + "/api/write/save", headers={"Origin": base},
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
        nxt = httpx.get(base + "/api/write/next").json()
        assert nxt["done"] == 1, "the restart resumes after the saved passage"
        second = save_next(base, 2)
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        proc.wait(timeout=10)
    finally:
        proc.kill()
    assert [q.id for q in load_questions(questions)] == [first["id"], second["id"]]
    check_spans(load_questions(questions), load_corpus(tmp_path / "data/corpus"))
    assert sorted(p.name for p in questions.parent.iterdir()) == ["handbook.jsonl", "handbook.workbench-log"]
