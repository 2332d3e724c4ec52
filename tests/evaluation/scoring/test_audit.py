"""Label audits: extra acceptable spans, checked like question spans, re-scoring stored rankings."""
from __future__ import annotations

import json

import pytest

from rag_ablation.data.corpus import Document
from rag_ablation.core.errors import InvalidData
from rag_ablation.evaluation.scoring.audit import audited_relevant, load_audit, worksheet
from rag_ablation.data.questions import Question

DOCS = [Document("t/a.md", "t", "Settlement runs every night at 02:30 UTC after the ledger closes."),
        Document("t/b.md", "t", "The nightly batch starts at half past two, once the books are closed.")]
QS = [Question("q1", "When does settlement run?", "t/a.md", "every night at 02:30 UTC", "02:30 UTC", "main", "t"),
      Question("u1", "How many agencies?", None, None, "Not said.", "unanswerable", "t")]
PASSAGES = {"c0": "Buses report positions.", "c1": "The nightly batch starts at half past two, once the books are closed."}


def write(tmp_path, rows):
    p = tmp_path / "audit.jsonl"
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return p


def test_an_audit_span_makes_a_stored_passage_relevant(tmp_path):
    audit = load_audit(write(tmp_path, [{"id": "q1", "doc": "t/b.md", "span": "starts at half past two, once the books",
                                         "note": "same fact in other words"}]), QS, DOCS)
    assert len(audit) == 1
    out = audited_relevant({"q1": ["z9"]}, PASSAGES, audit, window=30)
    assert out == {"q1": ["z9", "c1"]}, "labels first, then the audited passages"
    assert audited_relevant({"q1": ["z9"]}, PASSAGES, [], window=30) == {"q1": ["z9"]}


def test_several_audit_spans_add_the_union_of_what_each_finds_alone():
    """Audited in one pass: each question gains what each of its spans finds on its own (the
    union), in the passages' order, and a question's spans never add to another question."""
    from rag_ablation.evaluation.scoring.audit import AuditSpan
    from rag_ablation.evaluation.scoring.labels import relevant_chunks

    passages = {"c0": "Buses report positions every thirty seconds to the depot.",
                "c1": "The nightly batch starts at half past two, once the books are closed.",
                "c2": "Settlement runs every night at 02:30 UTC after the ledger closes."}
    audit = [AuditSpan(id="q1", doc="t/b.md", span="starts at half past two, once the books", note=""),
             AuditSpan(id="q1", doc="t/a.md", span="every night at 02:30 UTC after the ledger", note=""),
             AuditSpan(id="q2", doc="t/c.md", span="report positions every thirty seconds", note="")]
    alone = {n: relevant_chunks({"x": a.span}, ((c, "", t) for c, t in passages.items()), window=30)["x"]
             for n, a in enumerate(audit)}
    out = audited_relevant({"q1": ["z9"], "q3": ["c2"]}, passages, audit, window=30)
    assert out == {"q1": ["z9"] + [c for c in passages if c in set(alone[0]) | set(alone[1])],
                   "q2": alone[2], "q3": ["c2"]}
    assert out["q1"] == ["z9", "c1", "c2"] and out["q2"] == ["c0"]


def test_no_audit_file_is_an_empty_audit(tmp_path):
    assert load_audit(tmp_path / "none.jsonl", QS, DOCS) == []


@pytest.mark.bad_input
def test_every_bad_line_is_named(tmp_path):
    p = write(tmp_path, [
        {"id": "nope", "doc": "t/b.md", "span": "starts at half past two, once the books", "note": "x"},
        {"id": "q1", "doc": "t/b.md", "span": "a span that is nowhere in it", "note": "x"},
        {"id": "q1", "doc": "b.md", "span": "starts at half past two, once the books", "note": "x"},
        {"id": "u1", "doc": "t/b.md", "span": "starts at half past two, once the books", "note": "x"},
        {"id": "q1", "doc": "t/b.md", "span": "short", "note": "x"},
        {"id": "q1", "span": "starts at half past two, once the books"},
        "{not json",
    ])
    with pytest.raises(InvalidData) as e:
        load_audit(p, QS, DOCS)
    msg = str(e.value)
    assert "7 problem(s)" in msg
    for expected in ("line 1: unknown question id 'nope'", "line 2: span not found in t/b.md",
                     "line 3: doc 'b.md' is not in the corpus", "line 4: question 'u1' is unanswerable",
                     "line 5: span has 5 characters, expected at least 20", "line 6: missing field(s) doc, note",
                     "line 7: not valid JSON"):
        assert expected in msg


def test_worksheet_lists_misses_with_their_top_passages():
    records = [{"id": "q1", "ranking": [{"chunk": "c0", "score": 1.0}, {"chunk": "c1", "score": 0.5}]}]
    rows = [{"config": "dense", "id": "q1", "answerable": 1, "first_relevant_rank": None}]
    text = worksheet("dense", records, PASSAGES, rows, QS, k=5)
    assert "## q1 (main)" in text and "1. `c0`" in text and "2. `c1`" in text
    assert "half past two" in text and "1 question(s)" in text
    hit = [{"config": "dense", "id": "q1", "answerable": 1, "first_relevant_rank": 2}]
    assert "## q1" not in worksheet("dense", records, PASSAGES, hit, QS, k=5)
