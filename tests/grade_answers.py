"""Answers to hand-grade, for rag-grade's tests (tests/authoring/test_grader.py, the
session; tests/commands/test_grade.py, the command): 2 configs x 4 questions, a few passages,
one config unavailable; grades of them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_ablation.evaluation.judges.grades import Grade, answer_sha256

QUESTIONS = [
    {"id": "q1", "question": "Which port does the ledger listen on?", "answer": "Port 7443, by default.",
     "slice": "main", "doc": "t/a.md", "span": "The ledger listens on port 7443 by default", "track": "t"},
    {"id": "q2", "question": "When does the nightly settlement start?", "answer": "At 02:30 UTC.",
     "slice": "main", "doc": "t/b.md", "span": "Settlement starts at 02:30 UTC every night", "track": "t"},
    {"id": "q3", "question": "Which flag makes bwctl only print its plan?", "answer": "The --dry-run flag.",
     "slice": "identifier", "doc": "t/c.md", "span": "pass --dry-run to print the plan only", "track": "t"},
    {"id": "q4", "question": "How many runbooks does the handbook hold?", "answer": "The handbook does not say.",
     "slice": "unanswerable", "doc": None, "span": None, "track": "t"},
]
PASSAGES = {"t/a.md#0": "The ledger listens on port 7443 by default.",
            "t/b.md#0": "Settlement starts at 02:30 UTC every night, after the books close.",
            "t/c.md#0": "Before applying a change, pass --dry-run to print the plan only."}
ANSWERS = {
    "dense": {"q1": "Port 7443.", "q2": "At 02:30 UTC.", "q3": "Use --force.", "q4": "There are 12 runbooks."},
    "hybrid": {"q1": "It listens on 7443.", "q2": "The passages don't say.", "q3": "The --dry-run flag.",
               "q4": "The passages don't say how many runbooks there are."},
}
SHOWN = {"q1": ["t/a.md#0", "t/b.md#0"], "q2": ["t/b.md#0"], "q3": ["t/c.md#0", "t/a.md#0"], "q4": ["t/b.md#0"]}


def record(qid: str, answer: str) -> dict:
    q = next(q for q in QUESTIONS if q["id"] == qid)
    return {"id": qid, "slice": q["slice"], "answerable": q["slice"] != "unanswerable", "answer": answer,
            "passages": SHOWN[qid], "prompt_sha256": "0" * 64}


def make_project(d: Path) -> Path:
    """data/build/{answers,runs,questions.jsonl} of 2 configs, plus one unavailable config, in ``d``."""
    build = d / "data/build"
    (build / "answers").mkdir(parents=True)
    (build / "runs").mkdir()
    (build / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    for config, answers in ANSWERS.items():
        (build / "answers" / f"{config}.json").write_text(json.dumps(
            {"config": config, "status": "ok", "reason": None,
             "answers": [record(qid, a) for qid, a in answers.items()]}))
        (build / "runs" / f"{config}.json").write_text(json.dumps(
            {"config": config, "status": "ok", "reason": None, "questions": [], "passages": PASSAGES}))
    (build / "answers/hyde.json").write_text(json.dumps(
        {"config": "hyde", "status": "unavailable", "reason": "needs an LLM, and llm.backend is none", "answers": []}))
    return d


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """data/build/{answers,runs,questions.jsonl} of 2 configs, plus one unavailable config."""
    return make_project(tmp_path)


def grades_file(d: Path) -> Path:
    return d / "data/labels/grades.jsonl"


def grade_of(config: str, qid: str, verdict: str, *, answer: str | None = None, grader: str = "ana",
             note: str = "") -> Grade:
    text = ANSWERS[config][qid] if answer is None else answer
    return Grade(answer_sha256=answer_sha256(text), config=config, grader=grader, id=qid, note=note, verdict=verdict)
