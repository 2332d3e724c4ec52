"""Running a team's app: the call cache, short and missing rankings, answers, and every bad
input with its one message (marked ``bad_input``). Tiny hand-built apps written into tmp_path."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rag_ablation.core.config import AppConfig, ConfigError, RetrievalConfig
from rag_ablation.core.errors import InvalidData, UserError
from rag_ablation.data.questions import Question
from rag_ablation.retrieval.external.app_run import deps_hash, run_app
from rag_ablation.retrieval.external.call_cache import CallCache
from rag_ablation.retrieval.external.files import read_trec
from rag_ablation.retrieval.external.hits import BadReply
from rag_ablation.retrieval.external.python_target import TargetNotFound

QUESTIONS = [Question(id=f"q{i}", question=f"question {i}", answer="a", span="s" * 20, doc="t/a.md", slice="main",
                      track="t") for i in range(3)]

APP = '''
CALLS = []
def retrieve(question, *, qid, k, n=12):
    CALLS.append(qid)
    return [{"text": f"passage {j} for {question}", "doc": "t/a.md", "id": str(j), "score": float(n - j)}
            for j in range(n)]
def ask(question, *, qid):
    return {"answer": "the answer to " + question, "passages": [{"text": "p", "doc": "t/a.md"}]}
def wrong(question, *, qid, k):
    return {"text": "not a list"}
def broken(question, *, qid, k):
    raise RuntimeError("index not loaded")
NOT_A_FUNCTION = 3
'''


@pytest.fixture
def app_dir(tmp_path):
    d = tmp_path / "code"
    d.mkdir()
    # a module name of its own per test: sys.modules keeps what an earlier test imported
    name = f"teamapp_{abs(hash(str(tmp_path))) % 10**8}"
    (d / f"{name}.py").write_text(APP)
    return d, name


def config(name: str, **spec) -> RetrievalConfig:
    return RetrievalConfig.of_app(name, AppConfig.from_params(name, spec))


def python_app(app_dir, function="retrieve", **extra) -> RetrievalConfig:
    d, module = app_dir
    return config("myapp", method="python", target=f"{module}:{function}", path=[str(d)], deps=str(d), **extra)


def run(cfg, tmp_path, questions=QUESTIONS):
    with CallCache(tmp_path / "apps.sqlite") as cache:
        return run_app(cfg, questions, base=tmp_path, cache=cache)


def test_a_rerun_asks_nothing_and_an_edit_to_deps_asks_again(app_dir, tmp_path):
    cfg = python_app(app_dir)
    first = run(cfg, tmp_path)
    assert (first.summary["calls"], first.summary["cached"]) == (3, 0)
    again = run(cfg, tmp_path)
    assert (again.summary["calls"], again.summary["cached"]) == (0, 3)
    assert again.records == first.records and again.summary["changed"] is False
    d, _ = app_dir
    (d / "notes.txt").write_text("a change to the app's folder")
    edited = run(cfg, tmp_path)
    assert edited.summary["calls"] == 3
    fresh = run(python_app(app_dir, fresh=True), tmp_path)
    assert fresh.summary["calls"] == 3


def test_args_are_passed_and_keyed(app_dir, tmp_path):
    ten = run(python_app(app_dir, args={"n": 10}), tmp_path)
    assert ten.summary["calls"] == 3
    assert [len(r["ranking"]) for r in ten.records] == [10, 10, 10]
    short = run(python_app(app_dir, args={"n": 4}), tmp_path)
    assert short.summary["calls"] == 3  # other args: other keys
    assert short.summary["short"] == 3 and short.summary["short_ids"] == ["q0", "q1", "q2"]


def test_run_records_keep_k_passages_with_doc_ids_and_texts(app_dir, tmp_path):
    result = run(python_app(app_dir), tmp_path)
    first = result.records[0]
    assert first["id"] == "q0" and len(first["ranking"]) == 10  # k = 10 of the 12 returned
    assert first["ranking"][0] == {"chunk": "t/a.md#0", "score": 12.0}
    assert result.passages["t/a.md#0"] == "passage 0 for question 0"
    # the app reuses ids across questions for other texts: each later text gets an id of its own
    assert result.summary["id_conflicts"] == 10  # ids 0 to 9: only the top k = 10 are kept
    second = result.records[1]["ranking"][0]["chunk"]
    assert second.startswith("t/a.md#0~") and result.passages[second] == "passage 0 for question 1"
    assert len(result.seconds) == 3 and result.answers == {}


def test_an_app_that_answers(app_dir, tmp_path):
    result = run(python_app(app_dir, function="ask", call="ask"), tmp_path)
    assert result.answers["q1"]["answer"] == "the answer to question 1"
    pid = result.answers["q1"]["passages"][0]
    assert pid.startswith("t/a.md#") and result.passages[pid] == "p"


def test_batches_call_once_per_batch(tmp_path):
    d = tmp_path / "code"
    d.mkdir()
    (d / "batchapp.py").write_text(
        "SIZES = []\n"
        "def many(questions, *, qids, k):\n"
        "    SIZES.append(len(questions))\n"
        "    return [[{'text': q, 'doc': 'd.md'}] for q in questions]\n")
    cfg = config("b", method="python", target="batchapp:many", path=[str(d)], deps=str(d), batch=2)
    result = run(cfg, tmp_path)
    import batchapp

    assert sorted(batchapp.SIZES) == [1, 2]
    assert result.records[2]["ranking"][0]["score"] == 1.0  # no score given: 1 / rank


def test_trec_ties_follow_trec_eval(tmp_path):
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"id": i, "doc": "d.md", "text": i}) + "\n"
                                              for i in ("a", "b", "c")))
    (tmp_path / "r.trec").write_text("q0 Q0 a 1 0.5 x\nq0 Q0 c 2 0.5 x\nq0 Q0 b 3 0.9 x\n")
    replies, ties = read_trec(tmp_path / "r.trec", tmp_path / "p.jsonl", questions={"q0"})
    # score descending, then docno descending (trec_eval): b (0.9), then c before a
    assert [h["id"] for h in replies["q0"]["hits"]] == ["b", "c", "a"] and ties == 1
    cfg = config("t", method="trec", run="r.trec", passages="p.jsonl", deps="r.trec")
    result = run(cfg, tmp_path, questions=QUESTIONS[:1])
    assert [x["chunk"] for x in result.records[0]["ranking"]] == ["d.md#b", "d.md#c", "d.md#a"]
    assert result.seconds == [] and result.summary["ties_resorted"] == 1  # a file: no call was timed


def test_deps_hash_skips_bytecode(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    before = deps_hash(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert deps_hash(tmp_path) == before
    (tmp_path / "a.py").write_text("x = 2\n")
    assert deps_hash(tmp_path) != before


# ----------------------------------------------------------------------------------- bad input


@pytest.mark.bad_input
def test_a_target_that_cannot_be_imported_names_module_and_roots(tmp_path):
    cfg = config("x", method="python", target="no_such_module:retrieve", path=["code"], deps=".")
    with pytest.raises(TargetNotFound, match=r"module 'no_such_module' cannot be imported.*import roots of `path`: "
                                             r".*code"):
        run(cfg, tmp_path)


@pytest.mark.bad_input
def test_a_target_that_is_not_a_function(app_dir, tmp_path):
    with pytest.raises(TargetNotFound, match="is a int, not a function"):
        run(python_app(app_dir, function="NOT_A_FUNCTION"), tmp_path)
    with pytest.raises(TargetNotFound, match="has no attribute 'missing'"):
        run(python_app(app_dir, function="missing"), tmp_path)


@pytest.mark.bad_input
def test_a_wrong_return_shape_names_the_question(app_dir, tmp_path):
    with pytest.raises(BadReply, match=r"question q\d: returned \{'text': 'not a list'\}; expected a list of hits"):
        run(python_app(app_dir, function="wrong"), tmp_path)


@pytest.mark.bad_input
def test_an_exception_in_the_app_keeps_finished_calls(tmp_path):
    d = tmp_path / "code"
    d.mkdir()
    (d / "flaky.py").write_text(
        "def retrieve(question, *, qid, k):\n"
        "    if qid == 'q2':\n"
        "        raise RuntimeError('index not loaded')\n"
        "    return [{'text': 't', 'doc': 'd.md'}]\n")
    cfg = config("f", method="python", target="flaky:retrieve", path=[str(d)], deps=str(d))
    with pytest.raises(UserError, match=r"question q2: the app raised RuntimeError: index not loaded"):
        run(cfg, tmp_path)
    with CallCache(tmp_path / "apps.sqlite") as cache:
        assert len(cache) == 2  # q0 and q1 were stored before q2 failed
    result = run(cfg, tmp_path, questions=QUESTIONS[:2])
    assert result.summary["calls"] == 0


@pytest.mark.bad_input
@pytest.mark.parametrize("hits, message", [
    ([{"doc": "d.md"}], r"hit 1: \"text\" is None; expected the passage's text"),
    ([{"text": "t"}], r"hit 1: \"doc\" is None; expected the passage's document"),
    ([{"text": "t", "doc": "d.md", "score": "high"}], r"\"score\" is 'high'; expected a finite number"),
    ([{"text": "t", "doc": "d.md", "id": "1"}, {"text": "u", "doc": "d.md", "id": "1"}],
     r"hit 2: id 'd.md#1' was already returned"),
    ("a string", r"returned 'a string'; expected a list of hits"),
])
def test_bad_hits(hits, message):
    from rag_ablation.retrieval.external.hits import to_passages

    with pytest.raises(BadReply, match=message):
        to_passages(hits, qid="q7", app="myapp")


class _Server:
    """A local HTTP service answering every POST with ``status`` and ``body`` (bytes)."""

    def __init__(self, status: int, body: bytes) -> None:
        outer = self
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                outer.requests += 1
                self.rfile.read(int(self.headers["content-length"]))
                self.send_response(status)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/search"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.bad_input
@pytest.mark.parametrize("status, body, message, requests", [
    (500, b"boom", r"no usable reply after 2 attempt\(s\) \(HTTPStatus: HTTP 500", 2),
    (200, b"<html>", r"no usable reply after 2 attempt\(s\) \(MalformedResponse: HTTP 200 reply is not JSON", 2),
    (404, b"not here", r"HTTPStatus: HTTP 404.*fix the request", 1),
    (200, b'{"results": []}', r"question q0: the reply has no hits at 'hits' \(no 'hits'; found results\)", 1),
])
def test_http_faults_have_one_message_and_no_run(tmp_path, status, body, message, requests):
    server = _Server(status, body)
    try:
        cfg = config("svc", method="http", url=server.url, deps=".", retries=1, concurrency=1)
        with pytest.raises(UserError, match=message):
            run(cfg, tmp_path, questions=QUESTIONS[:1])
        assert server.requests == requests
    finally:
        server.close()


@pytest.mark.bad_input
def test_http_body_placeholder_must_be_known(tmp_path):
    cfg = config("svc", method="http", url="http://127.0.0.1:9/x", deps=".", body={"q": "{query}"})
    with pytest.raises(UserError, match=r"\{query\} is not one of \{question\}, \{qid\}, \{k\}"):
        run(cfg, tmp_path, questions=QUESTIONS[:1])


@pytest.mark.bad_input
@pytest.mark.parametrize("run_text, message", [
    ("q0 Q0 a 1 0.5\n", r"line 1: 5 column\(s\).*expected six"),
    ("q0 Q0 a 1 high x\n", r"line 1: score 'high' is not a number"),
    ("q0 Q0 a 1 0.5 x\nq0 Q0 a 2 0.4 x\n", r"line 2: docno 'a' repeated for question q0 \(first at line 1\)"),
    ("q0 Q0 z 1 0.5 x\n", r"line 1: docno 'z' is not in .*p.jsonl"),
    ("q9 Q0 a 1 0.5 x\n", r"1 question id\(s\) not in the question set \(q9\)"),
])
def test_bad_trec_runs(tmp_path, run_text, message):
    (tmp_path / "p.jsonl").write_text(json.dumps({"id": "a", "doc": "d.md", "text": "t"}) + "\n")
    (tmp_path / "r.trec").write_text(run_text)
    with pytest.raises(InvalidData, match=message):
        read_trec(tmp_path / "r.trec", tmp_path / "p.jsonl", questions={"q0"})


@pytest.mark.bad_input
def test_bad_answers_file(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "q0", "answer": 3, "passages": []}) + "\n")
    cfg = config("ans", method="file", answers="a.jsonl", deps="a.jsonl")
    with pytest.raises(InvalidData, match=r"a.jsonl, line 1: got .*expected \{\"id\": question id, \"answer\""):
        run(cfg, tmp_path)


@pytest.mark.bad_input
@pytest.mark.parametrize("spec, message", [
    ({"method": "python", "deps": "."}, r"apps.x.target: missing; it is required"),
    ({"method": "python", "target": "m:f", "deps": ".", "url": "http://a"}, r"apps.x.url: does not apply here.*method python"),
    ({"method": "http", "url": "ftp://a", "deps": "."}, r"apps.x.url: expected an http:// or https:// URL"),
    ({"method": "python", "target": "m:f", "deps": ".", "k": 5}, r"apps.x.k: expected at least 10"),
    ({"method": "python", "target": "m:f", "deps": ".", "args": {"k": 3}}, r"qid and k are passed by the project"),
    ({"method": "sql", "deps": "."}, r"apps.x.method: expected one of file, http, python, trec"),
    ({"method": "trec", "run": "r", "deps": "."}, r"apps.x.passages: missing"),
    ({"method": "python", "target": "m:f"}, r"apps.x.deps: missing"),
])
def test_bad_app_params(spec, message):
    with pytest.raises(ConfigError, match=message):
        AppConfig.from_params("x", spec)


@pytest.mark.bad_input
def test_an_app_name_must_differ_from_every_retrieval_config():
    import yaml

    from conftest import FIXTURES
    from rag_ablation.core.config import Params

    raw = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    name = next(iter(raw["retrieval"]))
    raw["apps"] = {name: {"method": "python", "target": "m:f", "deps": "."}}
    with pytest.raises(ConfigError, match=rf"apps: '{name}' also named under retrieval"):
        Params.from_params(raw)
