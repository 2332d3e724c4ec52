"""pool: pooled, shuffled, config-blind candidates and the label-queries mode."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from rag_ablation.authoring.workbench.pool import QUERY_TRACK, Candidate, QueryMode, parse_queries, pooled
from rag_ablation.authoring.workbench.session import Refused, Workbench, WorkbenchError
from rag_ablation.data.corpus import load_corpus
from rag_ablation.data.questions import check_spans, load_questions

from workbench_tiny_project import ROOT

BIKES = "the crew counts them against the limit of twelve bicycles"
WIND = "When the wind at the harbour mouth exceeds forty knots the skipper may cancel a crossing"
LATHE = "Wheels are turned on the lathe at Eastgate once every sixty thousand kilometres"


def test_the_pool_is_the_union_of_each_top_depth_each_passage_once_shuffled_by_seed_and_query():
    a = [("d/1.md", "one"), ("d/2.md", "two"), ("d/3.md", "three")]
    b = [("d/2.md", "two "), ("d/4.md", "four"), ("d/1.md", "one")]
    got = pooled({"x": a, "y": b}, depth=2, seed=8, query="q")
    union = sorted({Candidate("d/1.md", "one"), Candidate("d/2.md", "two"), Candidate("d/4.md", "four")},
                   key=lambda c: (c.doc, c.text))
    random.Random("8:q").shuffle(union)
    assert got == union, "'two ' and 'two' are one passage (whitespace normalized); d/3 is below depth 2"
    assert pooled({"y": b, "x": a}, depth=2, seed=8, query="q") == got, "the configs' order does not matter"
    assert pooled({"renamed": a, "other": b}, depth=2, seed=8, query="q") == got, "nor their names"


def test_queries_are_read_from_plain_text_or_json_lines():
    assert parse_queries("how do  I pay?\n\n  how do I pay?\nwhere is the pier\n") == ["how do I pay?", "where is the pier"]
    text = '{"query": "a b"}\n{"question": "c"}\n{"text": "d", "n": 1}\nplain one\n'
    assert parse_queries(text) == ["a b", "c", "d", "plain one"]


@pytest.mark.bad_input
def test_a_queries_file_without_queries_is_refused():
    with pytest.raises(WorkbenchError, match="queries line 2: a JSON object without a query"):
        parse_queries('{"query": "ok"}\n{"id": 3}\n')
    with pytest.raises(WorkbenchError, match="no queries found"):
        parse_queries("\n  \n")


def fake_searchers(bench):
    """Two configs that rank fixed passages of the tiny corpus (doc, text)."""
    docs = {d.doc: d.text for d in bench.view.documents}
    ferries, trams = docs["ferries/operations.md"], docs["trams/maintenance.md"]
    first = ("ferries/operations.md", ferries[34:466])
    second = ("ferries/operations.md", ferries[480:940])
    third = ("trams/maintenance.md", trams[475:898])
    return {"dense": lambda q: [first, third], "bm25": lambda q: [second, first]}


def test_label_queries_writes_span_spans_and_unanswerable_and_logs_the_pool(bench):
    mode = QueryMode(bench, fake_searchers(bench))
    assert mode.load({"text": "how many bikes fit?\nwhen is a crossing cancelled?\nwhat is the fare?\n"}) == \
        {"added": 3, "total": 3}
    shown = mode.next()
    assert shown["query"]["text"] == "how many bikes fit?" and len(shown["candidates"]) == 3
    assert not {"dense", "bm25"} & set(json.dumps(shown).split('"')), "no config named in what the page gets"
    by_text = {c["text"]: c["index"] for c in shown["candidates"]}
    one = next(i for t, i in by_text.items() if BIKES in t)
    saved = mode.save({"query": 0, "id": shown["query"]["suggested_id"], "answer": "Twelve.", "slice": "main",
                       "spans": [{"candidate": one, "span": BIKES}]})
    assert saved == {"id": "main-queries-01", "question": "how many bikes fit?", "doc": "ferries/operations.md",
                     "span": BIKES, "answer": "Twelve.", "slice": "main", "track": "ferries"}
    second = mode.next()
    idx = {c["text"]: c["index"] for c in second["candidates"]}
    two = [{"candidate": next(i for t, i in idx.items() if s in t), "span": s} for s in (WIND, BIKES)]
    several = mode.save({"query": 1, "id": second["query"]["suggested_id"], "answer": "Over forty knots.",
                         "spans": two})
    assert several["span"] is None and several["spans"] == [WIND, BIKES]
    third = mode.next()
    none = mode.save({"query": 2, "id": third["query"]["unanswerable_id"], "answer": "The corpus does not say.",
                      "unanswerable": True})
    assert (none["doc"], none["span"], none["slice"], none["track"]) == (None, None, "unanswerable", QUERY_TRACK)
    assert mode.next()["query"] is None
    check_spans(load_questions(bench.project.questions), load_corpus(bench.project.corpus))
    logged = [e for e in bench.log.events("question")]
    assert [e["pool"] for e in logged] == [{"depth": 3, "configs": ["bm25", "dense"]}] * 3
    assert [e["query"] for e in logged] == ["how many bikes fit?", "when is a crossing cancelled?", "what is the fare?"]
    assert QueryMode(Workbench(bench.project, bench.params), fake_searchers(bench)).next()["done"] == 3, "a rerun resumes"
    res = subprocess.run([sys.executable, str(ROOT / "stages" / "questions.py"), "--corpus", str(bench.project.corpus),
                          "--questions", str(bench.project.questions), "--out", "build/q.jsonl", "--metrics", "build/m.json"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert json.loads(Path("build/m.json").read_text())["by_slice"] == {"main": 2, "unanswerable": 1}


@pytest.mark.bad_input
def test_label_queries_refuses_spans_outside_their_passage_or_across_documents(bench):
    mode = QueryMode(bench, fake_searchers(bench))
    mode.load({"text": "how many bikes fit?\n"})
    cands = mode.next()["candidates"]
    ferry_bikes = next(c["index"] for c in cands if BIKES in c["text"])
    tram = next(c["index"] for c in cands if LATHE in c["text"])
    with pytest.raises(Refused, match="is not in the passage it was marked in"):
        mode.save({"query": 0, "id": "x-01", "answer": "a", "spans": [{"candidate": tram, "span": BIKES}]})
    with pytest.raises(Refused, match="the spans come from 2 documents"):
        mode.save({"query": 0, "id": "x-01", "answer": "a",
                   "spans": [{"candidate": tram, "span": LATHE}, {"candidate": ferry_bikes, "span": BIKES}]})
    with pytest.raises(Refused, match="mark the answering span inside a passage"):
        mode.save({"query": 0, "id": "x-01", "answer": "a", "spans": []})
    with pytest.raises(Refused, match="expected at least 20"):
        mode.save({"query": 0, "id": "x-01", "answer": "a", "spans": [{"candidate": ferry_bikes, "span": "twelve"}]})
    assert not bench.project.questions.exists()


@pytest.mark.bad_input
def test_an_empty_pool_configs_says_what_to_set(project):
    proj, params = project
    from dataclasses import replace

    params = replace(params, workbench=replace(params.workbench, pool_configs=()))
    mode = QueryMode(Workbench(proj, params))
    mode.load({"text": "q\n"})
    with pytest.raises(WorkbenchError, match="workbench.pool_configs is empty"):
        mode.next()


def test_open_searchers_pools_a_real_bm25_index_built_as_the_stages_build_it(project):
    from dataclasses import replace

    from rag_ablation.core.io import write_jsonl
    from rag_ablation.data.text import get_tokenizer
    from rag_ablation.retrieval.bm25 import save_bm25
    from rag_ablation.retrieval.chunking import chunk_corpus, chunk_options
    from rag_ablation.authoring.workbench.pool import open_searchers

    proj, params = project
    params = replace(params, workbench=replace(params.workbench, pool_configs=("bm25",), pool_depth=2))
    chunking = params.config("bm25").chunking
    docs = load_corpus(proj.corpus)
    chunks = chunk_corpus(((d.doc, d.track, d.text) for d in docs), **chunk_options(params.chunking(chunking)))
    write_jsonl(proj.build / "chunks" / f"{chunking}.jsonl", [c.to_json() for c in chunks])
    tokenize = get_tokenizer(params.bm25.tokenizer)
    save_bm25(proj.build / "bm25" / chunking, chunk_ids=[c.id for c in chunks], tokens=[tokenize(c.text) for c in chunks],
              tokenizer=params.bm25.tokenizer, bm25=params.bm25)
    search = open_searchers(params, proj.build)["bm25"]
    ranked = search("lathe wheels kilometres")
    assert 1 <= len(ranked) <= 2 and ranked[0][0] == "trams/maintenance.md" and "lathe" in ranked[0][1]
    mode = QueryMode(Workbench(proj, params))
    mode.load({"text": "lathe wheels kilometres\n"})
    shown = mode.next()
    assert [c["text"] for c in shown["candidates"]] == [c.text for c in pooled({"bm25": ranked}, depth=2, seed=8,
                                                                             query="lathe wheels kilometres")]


@pytest.mark.bad_input
def test_a_pooled_config_whose_chunks_are_not_built_says_to_run_dvc_repro(project):
    proj, params = project
    from rag_ablation.authoring.workbench.pool import open_searchers

    with pytest.raises(WorkbenchError, match=r"no chunks file .*base.jsonl for pooled config dense: run `dvc repro` first"):
        open_searchers(params, proj.build)
