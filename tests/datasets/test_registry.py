"""The dataset switch: the `dataset` stage writes the chosen data set to one folder that the later
stages read; handbook is the repository's data unchanged, covidqa is read in place."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from conftest import FIXTURES, ROOT
from rag_ablation.data.corpus import load_corpus
from rag_ablation.datasets.registry import Sources, build_dataset, write_dataset
from rag_ablation.core.errors import UnknownName
from rag_ablation.data.questions import QuestionError, check_spans, load_questions


def run_stage(cwd, script, *args):
    return subprocess.run([sys.executable, str(ROOT / "stages" / script), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True)


def fixture_sources(tmp_path):
    audit = tmp_path / "audit.jsonl"
    audit.write_text('{"id": "x"}\n')  # copied as is; the score stage checks it
    return Sources(FIXTURES / "corpus", FIXTURES / "questions.jsonl", audit)


def test_handbook_is_the_repository_data_unchanged(tmp_path):
    src = fixture_sources(tmp_path)
    write_dataset(build_dataset("handbook", src, min_span=20), tmp_path / "out")
    assert load_corpus(tmp_path / "out/corpus") == load_corpus(FIXTURES / "corpus")
    assert (tmp_path / "out/questions.jsonl").read_bytes() == (FIXTURES / "questions.jsonl").read_bytes()
    assert (tmp_path / "out/audit.jsonl").read_text() == '{"id": "x"}\n'
    # a rebuild replaces the corpus folder whole (a document removed at the source disappears)
    (tmp_path / "out/corpus/ops/stale.md").write_text("# old\n\ntext\n")
    write_dataset(build_dataset("handbook", src, min_span=20), tmp_path / "out")
    assert not (tmp_path / "out/corpus/ops/stale.md").exists()
    assert not any(p.name.startswith(".") for p in (tmp_path / "out").iterdir())


@pytest.mark.bad_input
def test_handbook_problems_name_the_source_file(tmp_path):
    bad = tmp_path / "q.jsonl"
    bad.write_text("{not json\n")
    src = Sources(FIXTURES / "corpus", bad, tmp_path / "none.jsonl")
    with pytest.raises(QuestionError, match=rf"(?s){bad}: 1 problem\(s\).*line 1: not valid JSON"):
        build_dataset("handbook", src, min_span=20)


@pytest.mark.bad_input
def test_an_unknown_dataset_lists_the_valid_ones(tmp_path):
    with pytest.raises(UnknownName, match="unknown dataset 'squad'; expected one of: covidqa, handbook"):
        build_dataset("squad", fixture_sources(tmp_path), min_span=20)


def fake_covidqa(root):
    folder = root / "covidqa"
    folder.mkdir(parents=True)
    docs = [{"doc_id": "covidqa-7", "title": "T", "text": "A short paper title\n\nMasks reduce the spread of droplets."},
            {"doc_id": "covidqa-10", "title": "U", "text": "Another paper.\n\nIncubation lasts about five days."}]
    qs = [{"qid": "1", "question": "What do masks do?", "answer_spans": ["reduce the spread of droplets"],
           "evidence_spans": [], "gold_doc_ids": ["covidqa-7"]},
          {"qid": "2", "question": "How long?", "answer_spans": ["five days"], "evidence_spans": [],
           "gold_doc_ids": ["covidqa-10"]}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))


def test_covidqa_is_read_in_place_as_a_track_of_txt_documents(tmp_path, monkeypatch):
    fake_covidqa(tmp_path / "datasets")
    monkeypatch.setenv("RAG_ABLATION_DATASETS", str(tmp_path / "datasets"))
    write_dataset(build_dataset("covidqa", fixture_sources(tmp_path), min_span=20), tmp_path / "out")
    docs = load_corpus(tmp_path / "out/corpus")
    assert [d.doc for d in docs] == ["covidqa/covidqa-10.txt", "covidqa/covidqa-7.txt"]
    qs = load_questions(tmp_path / "out/questions.jsonl")
    check_spans(qs, docs)
    assert [q.to_json() for q in qs] == [{
        "id": "1", "question": "What do masks do?", "doc": "covidqa/covidqa-7.txt",
        "span": "reduce the spread of droplets", "answer": "reduce the spread of droplets", "slice": "main",
        "track": "covidqa"}]  # question 2's span is under labels.min_span
    assert (tmp_path / "out/audit.jsonl").read_text() == ""


def test_the_dataset_stage_then_the_questions_stage(tmp_path, monkeypatch):
    fake_covidqa(tmp_path / "datasets")
    monkeypatch.setenv("RAG_ABLATION_DATASETS", str(tmp_path / "datasets"))
    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    for name in ("handbook", "covidqa"):
        params["dataset"] = name
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        res = run_stage(tmp_path, "dataset.py", "--corpus", FIXTURES / "corpus", "--questions",
                        FIXTURES / "questions.jsonl", "--audit", tmp_path / "no-audit.jsonl", "--out", "ds")
        assert res.returncode == 0, res.stderr
        res = run_stage(tmp_path, "questions.py", "--corpus", "ds/corpus", "--questions", "ds/questions.jsonl",
                        "--out", "q.jsonl", "--metrics", "m.json")
        assert res.returncode == 0, res.stderr
        m = json.loads((tmp_path / "m.json").read_text())
        assert m["n_questions"] == (8 if name == "handbook" else 1), name
