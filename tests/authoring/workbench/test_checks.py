"""checks: the questions stage's validation on the file as it would be, and the live facts."""
from __future__ import annotations

import pytest

from rag_ablation.authoring.workbench.checks import CorpusView, question_problems, span_facts
from rag_ablation.core.config import Params
from rag_ablation.authoring.workbench.store import append_record
from rag_ablation.data.corpus import Document, load_corpus
from rag_ablation.data.question_stats import lexical_overlap, source_passage
from rag_ablation.evaluation.scoring.labels import relevant_chunks

from workbench_tiny_project import params_raw

SPAN = "the crew counts them against the limit of twelve bicycles per crossing"


def record(**over):
    base = {"id": "main-ferries-01", "question": "How many bikes may ride one crossing?", "doc": "ferries/operations.md",
            "span": SPAN, "answer": "Twelve bicycles per crossing.", "slice": "main", "track": "ferries"}
    return {**base, **over}


def problems(project, rec, min_span=20):
    proj, _ = project
    return question_problems(proj.questions, rec, min_span=min_span, documents=load_corpus(proj.corpus))


def test_a_good_question_has_no_problems(project):
    assert problems(project, record()) == []


@pytest.mark.bad_input
def test_a_span_not_in_the_corpus_is_refused(project):
    got = problems(project, record(span="the crew counts them against the limit of thirteen bicycles"))
    assert got == ["span not found in ferries/operations.md (as labels match it: markup, hyphens and whitespace "
                   "aside): select the span with the mouse inside the passage, copied exactly"]


@pytest.mark.bad_input
def test_a_span_shorter_than_min_span_is_refused_with_the_stages_message(project):
    got = problems(project, record(span="twelve bicycles"), min_span=20)
    assert len(got) == 1 and "has 15 characters, expected at least 20 (labels.min_span)" in got[0]


@pytest.mark.bad_input
def test_a_duplicate_id_is_refused_naming_the_first_line(project):
    proj, _ = project
    append_record(proj.questions, record())
    got = problems(project, record(question="Another question about bicycles?"))
    assert got == ["duplicate id 'main-ferries-01' (first on line 1)"]


@pytest.mark.bad_input
def test_an_empty_question_is_refused(project):
    assert problems(project, record(question="")) == ["field 'question' must be a non-empty string, found ''"]


@pytest.mark.bad_input
def test_problems_of_older_lines_are_named_apart(project):
    proj, _ = project
    proj.questions.write_text("not json\n", encoding="utf-8")
    assert problems(project, record()) == ["already in the file: line 1: not valid JSON (Expecting value at column 1)"]


def test_the_facts_are_the_labels_stages_and_the_questions_stages_numbers(project):
    proj, params = project
    docs = load_corpus(proj.corpus)
    view = CorpusView.build(docs, params)
    question = "How many bicycles may board one harbour ferry crossing?"
    got = span_facts(view, params, question=question, doc="ferries/operations.md", spans=[SPAN])
    want_chunks = relevant_chunks({"q": SPAN}, view.bodies, window=params.labels.window)["q"]
    overlap = round(lexical_overlap(question, source_passage(SPAN, docs[0].text)), 4)
    assert got.facts == {"n_docs": 1, "n_chunks": len(want_chunks), "overlap": overlap, "span_chars": [len(SPAN)],
                         "chunking": "base"}
    assert view.chunking == params.config(params.stats.baseline).chunking
    assert (overlap > 0.6) == any("workbench.overlap_warn" in w for w in got.warnings)


def test_a_common_span_and_a_high_overlap_are_warned_about():
    raw = params_raw(overlap_warn=0.1)
    raw["labels"]["max_relevant"] = 1
    params = Params.from_params(raw)
    text = "Intro.\n\nthe shared sentence appears in both files here.\n"
    docs = [Document("a/x.md", "a", text), Document("b/y.md", "b", text)]
    view = CorpusView.build(docs, params)
    got = span_facts(view, params, question="Which shared sentence appears?", doc="a/x.md",
                     spans=["the shared sentence appears in both files"])
    assert got.facts["n_docs"] == 2 == got.facts["n_chunks"]
    assert any("more than labels.max_relevant (1)" in w for w in got.warnings)
    assert any("above workbench.overlap_warn (10%)" in w for w in got.warnings)
