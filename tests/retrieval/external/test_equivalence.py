"""The key property of apps: the project's own bm25 config, wrapped as a team's app, scores
exactly as the built-in config does, through each way in (python target, http service, TREC run
file), because span labels judge a passage by its text. The reference is the committed
``metrics/scores/retrieval.csv`` (rows of config ``bm25``, written by ``dvc repro``): every column
but ``config`` and ``n_relevant`` (which an app leaves empty: only its own top k is known) must
be equal, question by question."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import ROOT

from rag_ablation.core.config import AppConfig, RetrievalConfig, load_config
from rag_ablation.data.corpus import load_corpus
from rag_ablation.data.questions import load_questions
from rag_ablation.evaluation.scoring.foreign import foreign_relevant
from rag_ablation.evaluation.scoring.graded import doc_of
from rag_ablation.evaluation.scoring.scores import RETRIEVAL_FIELDS, read_scores, score_run, to_csv
from rag_ablation.evaluation.scoring.trec import write_run
from rag_ablation.retrieval.external.app_run import run_app
from rag_ablation.retrieval.external.call_cache import CallCache

FIXTURE = ROOT / "tests" / "fixtures" / "own_app"
PARAMS = load_config(ROOT / "params.yaml")
BASE = PARAMS.chunking("base")
ARGS = {"corpus": str(ROOT / "data" / "corpus"), "size": BASE.size, "overlap": BASE.overlap}
QUESTIONS = load_questions(ROOT / "data" / "questions" / "handbook.jsonl")
DOCS = {d.doc for d in load_corpus(ROOT / "data" / "corpus")}
COMPARED = [f for f in RETRIEVAL_FIELDS if f not in ("config", "n_relevant")]
"""The columns compared, written as the score stage writes them (so "equal" means byte-identical)."""


def committed_bm25() -> str:
    rows = [r for r in read_scores(ROOT / "metrics" / "scores" / "retrieval.csv") if r["config"] == "bm25"]
    assert len(rows) == len(QUESTIONS)
    return to_csv(rows, COMPARED)


def scored(name: str, app: dict, tmp_path) -> str:
    cfg = RetrievalConfig.of_app(name, AppConfig.from_params(name, app))
    with CallCache(tmp_path / "apps.sqlite") as cache:
        result = run_app(cfg, QUESTIONS, base=ROOT, cache=cache)
    run = {"questions": result.records, "passages": result.passages}
    relevant, counts = foreign_relevant(run, QUESTIONS, labels=PARAMS.labels, known_docs=DOCS)
    assert counts["unlabelled"] == 0
    rows = score_run(name, result.records, relevant, QUESTIONS, depth=cfg.k, count_relevant=False)
    assert all(r["n_relevant"] is None for r in rows)
    return to_csv(rows, COMPARED)


PYTHON_APP = {"method": "python", "target": "bm25_app:retrieve", "path": [str(FIXTURE.relative_to(ROOT))],
              "deps": str(FIXTURE.relative_to(ROOT)), "args": ARGS}


@pytest.fixture(scope="module")
def python_rows(tmp_path_factory):
    return scored("bm25_py", PYTHON_APP, tmp_path_factory.mktemp("py"))


def test_python_target_scores_as_the_builtin_bm25(python_rows):
    assert python_rows == committed_bm25()


class _Search(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802  (the http.server interface)
        import bm25_app  # imported by the python target above: its folder is on sys.path

        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        hits = bm25_app.retrieve(body["q"], qid=body["id"], k=body["depth"], **ARGS)
        data = json.dumps({"result": {"docs": [{"body": h["text"], "path": h["doc"], "cid": h["id"],
                                                 "bm25": h["score"]} for h in hits]}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_http_service_scores_as_the_builtin_bm25(python_rows, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Search)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        app = {"method": "http", "url": f"http://127.0.0.1:{server.server_port}/search",
               "body": {"q": "{question}", "id": "{qid}", "depth": "{k}"}, "hits": "result.docs",
               "fields": {"text": "body", "doc": "path", "id": "cid", "score": "bm25"},
               "deps": str(FIXTURE.relative_to(ROOT)), "concurrency": 4}
        assert scored("bm25_http", app, tmp_path) == committed_bm25()
    finally:
        server.shutdown()
        server.server_close()


def test_trec_run_exported_and_read_back_scores_as_the_builtin_bm25(python_rows, tmp_path):
    cfg = RetrievalConfig.of_app("bm25_py", AppConfig.from_params("bm25_py", PYTHON_APP))
    with CallCache(tmp_path / "apps.sqlite") as cache:
        result = run_app(cfg, QUESTIONS, base=ROOT, cache=cache)
    write_run(tmp_path / "bm25.trec", "bm25", {r["id"]: r["ranking"] for r in result.records})
    (tmp_path / "passages.jsonl").write_text("".join(
        json.dumps({"id": pid, "doc": doc_of(pid), "text": text}) + "\n" for pid, text in result.passages.items()))
    app = {"method": "trec", "run": str(tmp_path / "bm25.trec"), "passages": str(tmp_path / "passages.jsonl"),
           "deps": str(tmp_path)}
    assert scored("bm25_trec", app, tmp_path) == committed_bm25()
