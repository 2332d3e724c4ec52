"""A question written in the workbench is scored by `dvc repro`: the real dvc.yaml in a temporary
git repository on the fixture corpus (``conftest.make_fixture_repo``).

The pipeline runs once; then one question is saved through the workbench's own library onto the
fixture corpus, by ``Workbench.save_question``, the save every page mode goes through (write mode's
``WriteMode.save`` calls it with the passage and the span's offsets; the fixture's passages are
shorter than the 400 characters the sampler asks of a passage, so the record is built here as
the write form builds it). The second `dvc repro` reruns the ``questions`` stage, which accepts
the file unchanged, and every config with a run scores the new question.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import copy_repo, ran_stages as ran, run_in

pytestmark = pytest.mark.slow

DVC = str(Path(sys.executable).parent / "dvc")

NEW_ID = "main-api-01"
SPAN = "Requests over the limit receive error\n`RL-429` with a `Retry-After` header"
"""A span of ``api/limits.md`` across a line break, copied exactly as a mouse selection copies it."""


def test_a_question_saved_in_the_workbench_is_scored_by_dvc_repro(built_pipeline, tmp_path, monkeypatch):
    from rag_ablation.authoring.workbench.session import Project, Workbench
    from rag_ablation.core.config import load_config
    from rag_ablation.evaluation.scoring.scores import read_scores

    repo = copy_repo(built_pipeline, tmp_path / "repo")  # the fixture pipeline, built (conftest)
    before = read_scores(repo / "metrics/scores/retrieval.csv")
    configs = sorted({r["config"] for r in before})
    assert configs and NEW_ID not in {r["id"] for r in before}

    monkeypatch.chdir(repo)
    project = Project(corpus=Path("data/corpus"), questions=Path("data/questions/handbook.jsonl"),
                      audit=Path("data/labels/audit.jsonl"), runs=Path("data/build/runs"),
                      scores=Path("metrics/scores/retrieval.csv"), build=Path("data/build"))
    bench = Workbench(project, load_config(repo / "params.yaml"))
    text = (repo / "data/corpus/api/limits.md").read_text(encoding="utf-8")
    start = text.index(SPAN)
    record = {"id": NEW_ID, "question": "What does a client get back when it goes past its allowance?",
              "doc": "api/limits.md", "span": SPAN, "answer": "Error RL-429 with a Retry-After header.",
              "slice": "main", "track": "api"}
    bench.save_question(record, mode="write", passage=f"api/limits.md@{start}-{start + len(SPAN)}",
                        doc="api/limits.md", start=start, end=start + len(SPAN))
    lines = (repo / "data/questions/handbook.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1]) == record and len(lines) == 9

    out = run_in(repo, DVC, "repro")
    assert {"dataset", "questions", "score"} <= ran(out), ran(out)
    built = [json.loads(x) for x in (repo / "data/build/questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert NEW_ID in {q["id"] for q in built}, "the questions stage accepted the saved question"
    assert json.loads((repo / "metrics/questions.json").read_text())["n_questions"] == 9
    rows = [r for r in read_scores(repo / "metrics/scores/retrieval.csv") if r["id"] == NEW_ID]
    assert sorted(r["config"] for r in rows) == configs, "every config with a run scores the new question"
    assert all(r["answerable"] == 1 and r["slice"] == "main" and r["doc"] == "api/limits.md" for r in rows)
    assert all(r["n_relevant"] >= 1 for r in rows), "the span labels at least one chunk of every chunking"
