"""The example team app of ``examples/own_app/`` (docs/own-app.md): its python function
``own_app.retriever:retrieve`` and its HTTP service ``own_app.serve``, each checked on its own
(hits that follow rag-ablation's contract, taken from real files of ``data/corpus``) and through
``run_app`` (the ``app@NAME`` stage's work) on a few handbook questions. Needs LangChain-core
(the optional extra ``app``); skipped without it."""
from __future__ import annotations

import math
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("langchain_core.retrievers")

from conftest import ROOT  # noqa: E402

EXAMPLES = ROOT / "examples"
if str(EXAMPLES) not in sys.path:  # what `path: [examples]` of the app's params does for the stage
    sys.path.insert(0, str(EXAMPLES))

import httpx  # noqa: E402
from own_app import retriever as own  # noqa: E402
from own_app import serve  # noqa: E402

from rag_ablation.core.config import AppConfig, RetrievalConfig  # noqa: E402
from rag_ablation.data.questions import load_questions  # noqa: E402
from rag_ablation.retrieval.external.app_run import run_app  # noqa: E402
from rag_ablation.retrieval.external.call_cache import CallCache  # noqa: E402
from rag_ablation.retrieval.external.hits import to_passages  # noqa: E402

CORPUS = ROOT / "data" / "corpus"
QUESTIONS = load_questions(ROOT / "data" / "questions" / "handbook.jsonl")
FARE_CAP = "What is the default daily fare cap multiplier?"


def file_text(doc: str) -> str:
    path = CORPUS / doc
    assert path.is_file(), f"{doc} is not a file under data/corpus"
    return path.read_text(encoding="utf-8")


def check_hits(hits: list[dict], k: int) -> None:
    """Hits of the contract, taken from the corpus: at most k, best first, ids unique, each text
    a substring of its document's file."""
    assert 0 < len(hits) <= k
    for h in hits:
        assert h["text"] and h["text"] in file_text(h["doc"])
        assert h["id"].startswith(h["doc"] + "#p")
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    assert len({h["id"] for h in hits}) == len(hits)


# the chunking and scoring, on a corpus small enough to work out by hand


@pytest.fixture
def tiny(tmp_path) -> Path:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.md").write_text("# Title\n\nalpha alpha beta\n\ngamma delta\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("short\n\n  \nepsilon zeta\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("alpha alpha alpha\n", encoding="utf-8")  # not Markdown: not read
    return tmp_path


def test_paragraphs_split_at_blank_lines_without_headings_or_short_blocks(tiny):
    got = own.paragraphs(tiny, min_chars=6)
    assert [(p.doc, p.id, p.text) for p in got] == [
        ("a/one.md", "a/one.md#p1", "alpha alpha beta"),
        ("a/one.md", "a/one.md#p2", "gamma delta"),
        ("b.md", "b.md#p1", "epsilon zeta"),  # "short" (5 characters, p0) left out; two blank lines split once
    ]


def test_tfidf_cosine_worked_by_hand(tiny):
    # 3 passages, every term in one of them: equal idf, so the cosine is that of the raw counts.
    # "alpha alpha beta" against "alpha": raw tf (2, 1) -> 2 / sqrt(5); sublinear (1 + ln 2, 1).
    raw = own.ParagraphTfidfRetriever(corpus=str(tiny), min_paragraph_chars=6, sublinear_tf=False)
    docs = raw.invoke("Alpha?")
    assert [(d.id, d.page_content, d.metadata) for d in docs] == [
        ("a/one.md#p1", "alpha alpha beta", {"doc": "a/one.md", "score": 0.894427})]
    sub = own.ParagraphTfidfRetriever(corpus=str(tiny), min_paragraph_chars=6, sublinear_tf=True)
    assert sub.invoke("alpha")[0].metadata["score"] == round((1 + math.log(2)) / math.sqrt((1 + math.log(2)) ** 2 + 1), 6)
    assert sub.invoke("alpha")[0].metadata["score"] == 0.861037
    assert raw.invoke("omega") == []  # no shared term: nothing returned


def test_ties_rank_in_corpus_order(tmp_path):
    (tmp_path / "z.md").write_text("fare one\n", encoding="utf-8")
    (tmp_path / "a.md").write_text("fare two\n", encoding="utf-8")
    docs = own.ParagraphTfidfRetriever(corpus=str(tmp_path), min_paragraph_chars=1).invoke("fare")
    assert [d.metadata["doc"] for d in docs] == ["a.md", "z.md"]
    assert docs[0].metadata["score"] == docs[1].metadata["score"]


# retrieve(): the python-method contract on the example corpus


def test_retrieve_returns_k_corpus_passages_as_documents():
    docs = own.retrieve(FARE_CAP, qid="q", k=5, corpus=str(CORPUS))
    hits = [{"text": d.page_content, "doc": d.metadata["doc"], "id": d.id, "score": d.metadata["score"]} for d in docs]
    assert len(hits) == 5
    check_hits(hits, 5)
    assert any("fare_cap.daily_multiplier" in h["text"] for h in hits)
    passages = to_passages(docs, qid="q", app="own")  # the project reads the Documents as they are
    assert [p.id for p in passages] == [h["id"] for h in hits]


def test_retrieve_is_deterministic_and_cached_per_settings():
    first = own.retrieve(FARE_CAP, qid="q", k=10, corpus=str(CORPUS))
    assert own.retrieve(FARE_CAP, qid="q", k=10, corpus=str(CORPUS)) == first
    assert own.get_retriever(str(CORPUS)) is own.get_retriever(str(CORPUS))
    assert own.get_retriever(str(CORPUS), sublinear_tf=False) is not own.get_retriever(str(CORPUS))


def test_top_n_bounds_what_k_gets():
    assert len(own.retrieve(FARE_CAP, qid="q", k=50, corpus=str(CORPUS), top_n=3)) == 3


def test_the_swept_arguments_change_the_rankings():
    questions = [q.question for q in QUESTIONS[:20]]

    def rankings(**args) -> list[list[str]]:
        return [[d.id for d in own.retrieve(q, qid="q", k=10, corpus=str(CORPUS), **args)] for q in questions]

    base = rankings()
    assert rankings(sublinear_tf=False) != base
    long_only = rankings(min_paragraph_chars=200)
    assert long_only != base
    for q in questions[:5]:
        assert all(len(d.page_content) >= 200 for d in own.retrieve(q, qid="q", k=10, corpus=str(CORPUS),
                                                                    min_paragraph_chars=200))


# the HTTP service


@pytest.fixture(scope="module")
def server() -> Iterator[serve.SearchServer]:
    srv = serve.SearchServer(own.get_retriever(str(CORPUS)), port=0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10, trust_env=False) as c:
        yield c


def test_first_sentence():
    assert serve.first_sentence("  One. Two? Three!") == "One."
    assert serve.first_sentence("Version 2.1 ships. Then") == "Version 2.1 ships."
    assert serve.first_sentence("no end") == "no end"


def test_search_reply_shape(server, client):
    reply = client.post(f"{server.url}/search", json={"question": FARE_CAP, "qid": "q1", "k": 4})
    assert reply.status_code == 200
    data = reply.json()
    assert set(data) == {"hits", "version"} and data["version"] == "1"
    assert all(set(h) == {"text", "doc", "id", "score"} for h in data["hits"])
    check_hits(data["hits"], 4)
    assert len(data["hits"]) == 4
    direct = own.retrieve(FARE_CAP, qid="q1", k=4, corpus=str(CORPUS))
    assert [h["id"] for h in data["hits"]] == [d.id for d in direct]


def test_ask_answers_with_the_first_sentence_of_the_top_passage(server, client):
    data = client.post(f"{server.url}/ask", json={"question": FARE_CAP, "qid": "q1", "k": 3}).json()
    assert set(data) == {"answer", "passages", "version"}
    check_hits(data["passages"], 3)
    top = data["passages"][0]["text"]
    assert data["answer"] == serve.first_sentence(top) and top.startswith(data["answer"])


def test_ask_without_a_match_refuses(server, client):
    data = client.post(f"{server.url}/ask", json={"question": "xyzzy plugh", "qid": "q1", "k": 3}).json()
    assert data == {"answer": serve.NO_ANSWER, "passages": [], "version": "1"}


def test_bad_requests_and_stats(server, client):
    before = client.get(f"{server.url}/stats").json()["requests"]
    bad = client.post(f"{server.url}/search", content=b"not json")
    assert bad.status_code == 400 and "not JSON" in bad.json()["error"]
    assert client.post(f"{server.url}/search", json={"question": "x", "k": 0}).status_code == 400
    assert client.post(f"{server.url}/search", json={"qid": "q"}).status_code == 400
    assert client.post(f"{server.url}/nope", json={"question": "x"}).status_code == 404
    client.post(f"{server.url}/search", json={"question": FARE_CAP})
    after = client.get(f"{server.url}/stats").json()
    assert after == {"requests": {"search": before["search"] + 1, "ask": before["ask"]}, "version": "1"}


# through the project: run_app, as the app@NAME stage runs it


def run(name: str, spec: dict, tmp_path: Path, n: int = 4):
    cfg = RetrievalConfig.of_app(name, AppConfig.from_params(name, spec))
    with CallCache(tmp_path / "apps.sqlite") as cache:
        return run_app(cfg, QUESTIONS[:n], base=ROOT, cache=cache)


def check_run(result, *, calls: int) -> None:
    """Every question got ten passages, each the text of a corpus file, after ``calls`` calls."""
    assert result.summary["calls"] == calls and result.summary["short"] == 0 and result.summary["missing"] == 0
    for record in result.records:
        assert len(record["ranking"]) == 10
        for entry in record["ranking"]:
            doc = entry["chunk"].rsplit("#", 1)[0]
            assert result.passages[entry["chunk"]] in file_text(doc)


def test_python_app_through_run_app(tmp_path):
    spec = {"method": "python", "target": "own_app.retriever:retrieve", "path": ["examples"], "deps": "examples/own_app",
            "args": {"top_n": 10, "corpus": str(CORPUS)}}
    check_run(run("own_py", spec, tmp_path), calls=4)


def test_http_app_through_run_app(server, tmp_path):
    spec = {"method": "http", "url": f"{server.url}/search", "deps": "examples/own_app", "concurrency": 2,
            "version": "version"}
    result = run("own_http", spec, tmp_path)
    check_run(result, calls=4)  # the first question learns the version served (its reply kept), then 3 more
    assert result.summary["versions"] == ["1"]


def test_ask_app_through_run_app(server, tmp_path):
    spec = {"method": "http", "url": f"{server.url}/ask", "call": "ask", "hits": "passages", "deps": "examples/own_app"}
    result = run("own_ask", spec, tmp_path)
    check_run(result, calls=4)
    assert set(result.answers) == {q.id for q in QUESTIONS[:4]}
    for a in result.answers.values():
        top = result.passages[a["passages"][0]]
        assert top.startswith(a["answer"])
