"""The example data (issue "Example data"): the handbook corpus and its question set hold the
promised counts, every span is valid, and the `main` slice is exactly one question per passage
that the committed sampler draws."""
from __future__ import annotations

import re

import pytest

from conftest import ROOT
from rag_ablation.data.corpus import load_corpus
from rag_ablation.data.text import normalize
from rag_ablation.data.passages import sample_passages
from rag_ablation.data.question_stats import ambiguous_spans, overlap_by_slice
from rag_ablation.data.questions import check_spans, load_questions, slice_counts

CORPUS = ROOT / "data" / "corpus"
QUESTIONS = ROOT / "data" / "questions" / "handbook.jsonl"


@pytest.fixture(scope="module")
def docs():
    return load_corpus(CORPUS)


@pytest.fixture(scope="module")
def questions():
    return load_questions(QUESTIONS)


def test_corpus_size_and_tracks(docs):
    assert len(docs) >= 40
    assert sum(len(d.text) for d in docs) >= 200_000
    assert {d.track for d in docs} == {"api-reference", "architecture", "guides", "policies", "postmortems", "runbooks"}


def test_corpus_structure(docs):
    tables = []
    for d in docs:
        for block in re.findall(r"(?:^\|.*\n?)+", d.text, flags=re.M):
            tables.append(len(block))
    assert sum(n > 800 for n in tables) >= 8
    assert all(re.search(r"^### ", d.text, re.M) or re.search(r"^## ", d.text, re.M) for d in docs)
    assert sum("```" in d.text for d in docs) >= 10
    identifiers = {m for d in docs for m in re.findall(r"`([A-Za-z_][\w.\-]*[\w)])`", d.text)
                   if re.search(r"[_.\-]|\(\)|[a-z][A-Z]|^[A-Z]+-", m)}
    assert len(identifiers) >= 60
    links = [m for d in docs for m in re.findall(r"\]\((\.\./[^)#]+|[\w\-]+\.md)", d.text)]
    assert len(links) >= 40


def test_cross_references_resolve(docs):
    for d in docs:
        for target in re.findall(r"\]\(((?:\.\./)?[\w\-/]+\.md)", d.text):
            path = (CORPUS / d.doc).parent / target
            assert path.resolve().is_file(), f"{d.doc} links to missing {target}"


def test_questions_valid_and_counted(docs, questions):
    check_spans(questions, docs)
    counts = slice_counts(questions)
    assert counts["main"] >= 90 and counts["identifier"] >= 30
    assert counts["paraphrase"] >= 15 and counts["unanswerable"] >= 15
    assert ambiguous_spans(questions, docs, region=800) == []


def test_paraphrases_share_fewer_words_than_main(docs, questions):
    overlap = overlap_by_slice(questions, docs)
    assert overlap["paraphrase"] < overlap["main"]


def test_main_slice_is_one_question_per_sampled_passage(questions):
    passages, _ = sample_passages(CORPUS, per_track=15, seed=8)
    main = [q for q in questions if q.slice == "main"]
    used = {}
    for q in main:
        hits = [i for i, p in enumerate(passages) if p.doc == q.doc and normalize(q.span) in normalize(p.text)]
        assert hits, f"{q.id}: span is not inside any sampled passage"
        assert hits[0] not in used, f"{q.id} and {used.get(hits[0])} share a passage"
        used[hits[0]] = q.id
    assert len(used) == len(passages) == 90
