"""Imported data sets run through the pipeline: a small SQuAD v2.0 sample and a small BEIR folder
are imported, then the stage scripts (questions, queries, chunk, bm25 index, labels, retrieve,
score, evaluate) run on them exactly as dvc.yaml runs them, with a BM25 config."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from conftest import FIXTURES, ROOT
from rag_ablation.core.config import OUTPUT_DECIMALS
from rag_ablation.core.io import round_decimals
from rag_ablation.datasets.beir import import_beir
from rag_ablation.datasets.squad import import_squad

PARIS = ("Paris is the capital and most populous city of France. The city hosts the Louvre, which opened "
         "to the public in 1793 as the Museum of the Republic. The Seine river flows through the city from "
         "east to west, and the Eiffel Tower was completed in 1889 for the World's Fair.")
OSLO = ("Oslo is the capital of Norway and its most populous city. The Oslo Opera House, finished in 2008, "
        "sits on the waterfront of the Bjorvika district. The city council governs the municipality and "
        "the county of the same name, which were merged in 1948.")


def squad_sample() -> dict:
    def qa(qid, question, answer, context, impossible=False):
        start = context.find(answer) if answer else -1
        return {"id": qid, "question": question, "is_impossible": impossible,
                "answers": [] if impossible else [{"text": answer, "answer_start": start}]}
    return {"version": "v2.0", "data": [
        {"title": "Paris", "paragraphs": [{"context": PARIS, "qas": [
            qa("p1", "When did the Louvre open to the public?", "1793", PARIS),
            qa("p2", "When was the Eiffel Tower completed?", "1889", PARIS),
            qa("p3", "How many bridges cross the Seine?", "", PARIS, impossible=True)]}]},
        {"title": "Oslo", "paragraphs": [{"context": OSLO, "qas": [
            qa("o1", "When was the Oslo Opera House finished?", "2008", OSLO),
            qa("o2", "When were the municipality and county merged?", "1948", OSLO)]}]},
    ]}


def params(tmp_path, *, same_doc_only: bool):
    p = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    p["retrieval"] = {"bm25": p["retrieval"]["bm25"]}
    p["chunkings"] = {"base": p["chunkings"]["base"]}
    p["chunk_size"], p["chunk_overlap"] = 200, 40
    p["generation"]["configs"] = []
    p["gate"] = {"configs": ["bm25"]}
    p["stats"] = {"baseline": "bm25"}
    p["llm"] = {"backend": "none"}
    p["labels"]["same_doc_only"] = same_doc_only
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))


def stage(cwd, script, *args):
    res = subprocess.run([sys.executable, str(ROOT / "stages" / script), *map(str, args)], cwd=cwd,
                         capture_output=True, text=True, env={**os.environ, "RAG_ABLATION_CACHE": str(cwd / ".cache")})
    assert res.returncode == 0, f"{script}: {res.stderr}"
    return res.stderr


def run_pipeline(d, corpus, questions, qrels=None):
    b = d / "build"
    stage(d, "questions.py", "--corpus", corpus, "--questions", questions, "--out", b / "q.jsonl",
          "--metrics", d / "metrics/questions.json")
    stage(d, "queries.py", "--name", "none", "--questions", b / "q.jsonl", "--prompts", ROOT / "prompts",
          "--out", b / "queries/none.json", "--latency", d / "lat_q.json")
    stage(d, "chunk.py", "--name", "base", "--corpus", corpus, "--out", b / "chunks/base.jsonl")
    stage(d, "bm25_index.py", "--chunks", b / "chunks/base.jsonl", "--out", b / "bm25/base")
    stage(d, "labels.py", "--chunks", b / "chunks/base.jsonl", "--questions", b / "q.jsonl",
          "--out", b / "labels/base.json", "--metrics", d / "metrics/labels/base.json")
    stage(d, "retrieve.py", "--name", "bm25", "--questions", b / "q.jsonl", "--chunks", b / "chunks/base.jsonl",
          "--dense", b / "dense/base", "--bm25", b / "bm25/base", "--queries", b / "queries/none.json",
          "--query-vectors", b / "query_vectors/none", "--query-times", d / "lat_v.json",  # bm25: not read
          "--out", b / "runs/bm25.json", "--latency", d / "lat_r.json")
    (b / "answers").mkdir()
    (d / "audit.jsonl").write_text("")
    stage(d, "score.py", "--questions", b / "q.jsonl", "--runs", b / "runs", "--labels", b / "labels",
          "--answers", b / "answers", "--retrieval-out", d / "metrics/scores/retrieval.csv",
          "--answers-out", d / "metrics/scores/answers.csv", "--corpus", corpus, "--audit", d / "audit.jsonl",
          "--audited-out", d / "metrics/scores/audited.csv", *(("--qrels", qrels) if qrels else ()))
    stage(d, "evaluate.py", "--retrieval-scores", d / "metrics/scores/retrieval.csv",
          "--answer-scores", d / "metrics/scores/answers.csv", "--out", d / "metrics/retrieval.json")
    return json.loads((d / "metrics/retrieval.json").read_text())["bm25"]


def test_a_squad_sample_imports_and_runs(tmp_path):
    (tmp_path / "squad.json").write_text(json.dumps(squad_sample()))
    report = import_squad(tmp_path / "squad.json", tmp_path / "corpus", tmp_path / "questions.jsonl", span="sentence")
    r = report.to_json()
    assert (r["documents"], r["questions"], r["unanswerable"], r["dropped"]) == (2, 5, 1, {})
    params(tmp_path, same_doc_only=False)
    m = run_pipeline(tmp_path, tmp_path / "corpus", tmp_path / "questions.jsonl")
    assert m["n_questions"] == 4 and m["n_unanswerable_excluded"] == 1
    assert m["recall_at_10"] == 1.0, "two short documents: every sentence span is in the top ten"


def test_a_beir_sample_imports_and_runs_with_document_relevance(tmp_path):
    src = tmp_path / "beir"
    (src / "qrels").mkdir(parents=True)
    docs = [{"_id": "d1", "title": "Paris", "text": PARIS}, {"_id": "d2", "title": "Oslo", "text": OSLO}]
    queries = [{"_id": "q1", "text": "When did the Louvre open?"}, {"_id": "q2", "text": "Oslo opera house waterfront"},
               {"_id": "q3", "text": "a query without relevance judgments"}]
    (src / "corpus.jsonl").write_text("".join(json.dumps(x) + "\n" for x in docs))
    (src / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in queries))
    (src / "qrels/test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    report = import_beir(src, tmp_path / "corpus", tmp_path / "questions.jsonl")
    assert "q3" in json.dumps(report.to_json()), "the query without qrels is reported, not silently dropped"
    params(tmp_path, same_doc_only=True)
    m = run_pipeline(tmp_path, tmp_path / "corpus", tmp_path / "questions.jsonl")
    assert m["n_questions"] == 2 and m["recall_at_1"] == 1.0


def test_a_beir_folder_with_graded_qrels_is_scored_by_them(tmp_path):
    """Every judged document counts, with its grade: nDCG@10 by its formula from the stored
    ranking, hit@k on any relevant document, and the metrics file carries nDCG@10."""
    import csv
    import math

    src = tmp_path / "beir"
    (src / "qrels").mkdir(parents=True)
    docs = [{"_id": "d1", "title": "Paris", "text": PARIS}, {"_id": "d2", "title": "Oslo", "text": OSLO},
            {"_id": "d3", "title": "Capitals", "text": "Paris and Oslo are both capital cities with many museums."}]
    queries = [{"_id": "q1", "text": "capital city museum"}]
    (src / "corpus.jsonl").write_text("".join(json.dumps(x) + "\n" for x in docs))
    (src / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in queries))
    (src / "qrels/test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t1\n")
    import_beir(src, tmp_path / "corpus", tmp_path / "questions.jsonl")
    params(tmp_path, same_doc_only=True)
    m = run_pipeline(tmp_path, tmp_path / "corpus", tmp_path / "questions.jsonl",
                     qrels=tmp_path / "questions.gold.jsonl")
    run = json.loads((tmp_path / "build/runs/bm25.json").read_text())
    docs_ranked = list(dict.fromkeys(x["chunk"].rsplit("#", 1)[0] for x in run["questions"][0]["ranking"]))
    grade = {"beir/d1.md": 2, "beir/d3.md": 1}
    dcg = sum(grade.get(d, 0) / math.log2(i + 1) for i, d in enumerate(docs_ranked[:10], start=1))
    expected = dcg / (2 + 1 / math.log2(3))
    row = next(csv.DictReader((tmp_path / "metrics/scores/retrieval.csv").open()))
    written = round_decimals(expected, OUTPUT_DECIMALS)  # every float of an output file (core.io)
    assert float(row["ndcg_at_10"]) == written and row["n_relevant"] == "2"
    assert row["recall_at_100"] == "", "the fixture config keeps fewer than 100 chunks: unavailable, not 0"
    assert m["ndcg_at_10"] == written and "recall_at_100" not in m
    assert m["recall_at_1"] == float(grade.get(docs_ranked[0], 0) > 0)
