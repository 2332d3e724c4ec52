"""`dvc repro score` of the real dvc.yaml on the fixture corpus with a document and a question
holding raw U+2028 and U+0085 (web-scraped text does). Both are line breaks to `str.splitlines`
but not to JSON Lines: the chunk stage writes them raw (`ensure_ascii=False`), and every stage
after it must read them back on their own line (rag_ablation.core.io.numbered_lines).

Kept cheap: `llm.backend: none` (no model is loaded; the LLM stages write "unavailable"), one
chunking, the retrieval configs `dense` and `bm25`, and `dvc repro score` runs only the stages
`score` needs (dataset, questions, chunk, dense, bm25, labels, queries@none, query_vectors@none, retrieve, generate)."""
from __future__ import annotations

import csv
import json

import pytest
import yaml

from conftest import VENV_BIN, make_fixture_repo, ran_stages, run_in
from rag_ablation.core.io import read_jsonl
from rag_ablation.data.chunks import load_chunks

pytestmark = pytest.mark.slow

DVC = str(VENV_BIN / "dvc")
LS, NEL = "\u2028", "\x85"
SENTENCE = f"Pages sent from the web console{LS}carry a note{NEL}in the alert router's log."


def test_raw_line_separators_in_a_document_and_a_question_reach_score(tmp_path):
    d = make_fixture_repo(tmp_path)
    paging = d / "data/corpus/ops/paging.md"
    paging.write_text(paging.read_text(encoding="utf-8") + f"\n{SENTENCE}\n", encoding="utf-8")
    qfile = d / "data/questions/handbook.jsonl"
    rows = [json.loads(line) for line in qfile.read_text(encoding="utf-8").split("\n") if line.strip()]
    for r in rows:
        if r["id"] == "q-ack":
            r["question"] = f"How fast must someone{LS}respond to a P1{NEL}page?"
    qfile.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert LS in qfile.read_text(encoding="utf-8") and NEL in qfile.read_text(encoding="utf-8")

    p = yaml.safe_load((d / "params.yaml").read_text())
    p["llm"]["backend"] = "none"
    p["chunkings"] = {"base": {}}
    p["retrieval"] = {k: v for k, v in p["retrieval"].items() if k in ("dense", "bm25")}
    p["query_transforms"] = {"none": {}}
    p["generation"]["configs"] = ["bm25"]
    (d / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))

    out = run_in(d, DVC, "repro", "score")
    ran = ran_stages(out)
    assert {"dataset", "questions", "chunk@base", "bm25@base", "labels@base", "retrieve@dense", "retrieve@bm25",
            "score"} <= ran, out

    chunk_file = d / "data/build/chunks/base.jsonl"
    raw = chunk_file.read_text(encoding="utf-8")
    assert LS in raw and NEL in raw, "the chunk stage writes the characters raw"
    assert any(SENTENCE in c.body for c in load_chunks(chunk_file))
    [ack] = [q for q in read_jsonl(d / "data/build/questions.jsonl") if q["id"] == "q-ack"]
    assert ack["question"] == f"How fast must someone{LS}respond to a P1{NEL}page?"
    with (d / "metrics/scores/retrieval.csv").open(newline="", encoding="utf-8") as f:
        scored = {(row["config"], row["id"]) for row in csv.DictReader(f)}
    assert {("bm25", "q-ack"), ("dense", "q-ack")} <= scored
