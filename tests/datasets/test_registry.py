"""The dataset switch: the `dataset` stage writes the chosen data set to one folder that the later
stages read; handbook is the repository's data unchanged, covidqa is read in place."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import FIXTURES, ROOT
from rag_ablation.data.corpus import load_corpus
from rag_ablation.datasets.registry import Sources, build_dataset, write_dataset
from rag_ablation.core.config import ConfigError, Params
from rag_ablation.core.errors import UserError
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
@pytest.mark.bad_input
def test_an_unknown_dataset_lists_the_valid_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=r"unknown dataset 'squad': expected one of covidqa, handbook or an imported "
                                        r"data set under data/imported/ \(here: none\)"):
        build_dataset("squad", fixture_sources(tmp_path), min_span=20)


def imported_set(root, name="mine", *, grades=True):
    """An imported data set in ``root/data/imported/NAME`` (the fixture corpus and questions, its
    own one-line audit and, with ``grades``, one hand grade)."""
    folder = root / "data" / "imported" / name
    shutil.copytree(FIXTURES / "corpus", folder / "corpus")
    shutil.copy(FIXTURES / "questions.jsonl", folder / "questions.jsonl")
    (folder / "audit.jsonl").write_text('{"id": "mine-audit"}\n')
    if grades:
        (folder / "grades.jsonl").write_text('{"id": "mine-grade"}\n')
    return folder


def test_an_imported_set_brings_its_own_audit_and_grades_never_the_handbooks(tmp_path, monkeypatch):
    imported_set(tmp_path)
    imported_set(tmp_path, "bare", grades=False)
    monkeypatch.chdir(tmp_path)
    handbook_src = fixture_sources(tmp_path)
    handbook_src = Sources(handbook_src.corpus, handbook_src.questions, handbook_src.audit, tmp_path / "hb-grades.jsonl")
    (tmp_path / "hb-grades.jsonl").write_text('{"id": "handbook-grade"}\n')
    ds = build_dataset("mine", handbook_src, min_span=20)
    assert ds.audit_text == '{"id": "mine-audit"}\n' and ds.grades_text == '{"id": "mine-grade"}\n'
    assert ds.questions_text == (FIXTURES / "questions.jsonl").read_text()
    bare = build_dataset("bare", handbook_src, min_span=20)
    assert bare.grades_text == "" and "handbook" not in bare.audit_text
    assert build_dataset("handbook", handbook_src, min_span=20).grades_text == '{"id": "handbook-grade"}\n'
    write_dataset(ds, tmp_path / "out")
    assert (tmp_path / "out" / "grades.jsonl").read_text() == '{"id": "mine-grade"}\n'


@pytest.mark.bad_input
def test_params_refuse_a_dataset_that_is_neither_built_in_nor_imported(tmp_path, monkeypatch):
    imported_set(tmp_path)
    monkeypatch.chdir(tmp_path)
    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    params["dataset"] = "mine"
    assert Params.from_params(params).dataset == "mine"
    params["dataset"] = "nope"
    with pytest.raises(ConfigError, match=r"params.yaml.dataset: expected one of covidqa, handbook or the name of an "
                                          r"imported data set \(data/imported/NAME/ holding corpus/ and questions.jsonl; "
                                          r"here: mine\), got 'nope'"):
        Params.from_params(params)


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
    assert (tmp_path / "out/audit.jsonl").read_text() == "\n"  # no audit: one blank line (below)


def test_a_file_without_records_is_one_blank_line_never_an_empty_file(tmp_path, monkeypatch):
    """COVID-QA (like a BEIR import) brings no audit and no hand grades, and no qrels: each file is
    written as one blank line, which every reader reads as no record. An empty file made DVC print
    "WARNING: '<file>' is empty." each time it saved it as an output or a dependency: 14 lines on
    every run of a BEIR import (dvc/output.py, ``Output.save``); the stage's last line says the
    counts once."""
    from rag_ablation.core.io import numbered_json_lines
    from rag_ablation.evaluation.judges.grades import load_grades
    from rag_ablation.evaluation.scoring.graded import read_qrels

    fake_covidqa(tmp_path / "datasets")
    monkeypatch.setenv("RAG_ABLATION_DATASETS", str(tmp_path / "datasets"))
    ds = build_dataset("covidqa", fixture_sources(tmp_path), min_span=20)
    assert (ds.audit_lines, ds.grade_lines, ds.qrels_lines) == (0, 0, 0)
    write_dataset(ds, tmp_path / "out")
    for name in ("audit.jsonl", "grades.jsonl", "qrels.jsonl"):
        path = tmp_path / "out" / name
        assert path.read_bytes() == b"\n" and path.stat().st_size > 0, name
        assert numbered_json_lines(path) == ([], []), name
    assert load_grades(tmp_path / "out/grades.jsonl") == [] and read_qrels(tmp_path / "out/qrels.jsonl") == {}


def test_the_dataset_stage_then_the_questions_stage(tmp_path, monkeypatch):
    fake_covidqa(tmp_path / "datasets")
    monkeypatch.setenv("RAG_ABLATION_DATASETS", str(tmp_path / "datasets"))
    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    for name in ("handbook", "covidqa"):
        params["dataset"] = name
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        res = run_stage(tmp_path, "dataset.py", "--corpus", FIXTURES / "corpus", "--questions",
                        FIXTURES / "questions.jsonl", "--audit", tmp_path / "no-audit.jsonl",
                        "--grades", tmp_path / "no-grades.jsonl", "--out", "ds")
        assert res.returncode == 0, res.stderr
        assert {"handbook": f"dataset handbook: read {FIXTURES / 'corpus'}, {FIXTURES / 'questions.jsonl'}\n",
                "covidqa": f"dataset covidqa: read {tmp_path / 'datasets' / 'covidqa'} (in place, never copied); "
                           f"not the handbook's files named on the command line (read for dataset: handbook only)\n",
                }[name] in res.stderr, "the data set selected and what was read, not the handbook's paths"
        res = run_stage(tmp_path, "questions.py", "--corpus", "ds/corpus", "--questions", "ds/questions.jsonl",
                        "--out", "q.jsonl", "--metrics", "m.json")
        assert res.returncode == 0, res.stderr
        m = json.loads((tmp_path / "m.json").read_text())
        assert m["n_questions"] == (8 if name == "handbook" else 1), name


def test_the_dataset_stage_runs_an_imported_set_by_its_name(tmp_path):
    imported_set(tmp_path)
    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    params["dataset"] = "mine"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    (tmp_path / "hb-grades.jsonl").write_text('{"id": "handbook-grade"}\n')
    res = run_stage(tmp_path, "dataset.py", "--corpus", FIXTURES / "corpus", "--questions",
                    FIXTURES / "questions.jsonl", "--audit", tmp_path / "no-audit.jsonl",
                    "--grades", tmp_path / "hb-grades.jsonl", "--out", "ds")
    assert res.returncode == 0, res.stderr
    assert "dataset mine: " in res.stderr and "8 questions, 1 audit lines, 1 hand grades" in res.stderr
    folder = "data/imported/mine"
    assert (f"dataset mine: read {folder}/corpus, {folder}/questions.jsonl, {folder}/audit.jsonl, {folder}/grades.jsonl; "
            f"not the handbook's files named on the command line (read for dataset: handbook only)\n") in res.stderr
    assert str(FIXTURES) not in res.stderr, "the handbook's paths, given on the command line, are not named as read"
    assert (tmp_path / "ds" / "grades.jsonl").read_text() == '{"id": "mine-grade"}\n'
