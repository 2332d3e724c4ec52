from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from rag_ablation.data.corpus import CorpusError, Document, load_corpus
from rag_ablation.data.question_stats import ambiguous_spans, lexical_overlap, span_regions
from rag_ablation.datasets.sources import read_sources
from rag_ablation.data.questions import QuestionError, check_spans, nearest_text, load_questions, slice_counts

GOOD = {"id": "a", "question": "When?", "doc": "t/d.md", "span": "at noon on every weekday", "answer": "Noon.",
        "slice": "main", "track": "t"}


def write(tmp_path, rows):
    p = tmp_path / "q.jsonl"
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return p


def test_fixture_questions_are_valid():
    qs = load_questions(FIXTURES / "questions.jsonl")
    check_spans(qs, load_corpus(FIXTURES / "corpus"))
    assert slice_counts(qs) == {"identifier": 3, "main": 3, "paraphrase": 1, "unanswerable": 1}


@pytest.mark.bad_input
def test_every_problem_is_listed_with_its_line(tmp_path):
    rows = [
        GOOD,
        "{not json",
        {**GOOD, "id": "a"},
        {**GOOD, "id": "b", "span": "short"},
        {k: v for k, v in GOOD.items() if k != "answer"} | {"id": "c"},
        {**GOOD, "id": "d", "slice": "unanswerable"},
        {**GOOD, "id": "e", "extra": 1},
    ]
    with pytest.raises(QuestionError) as e:
        load_questions(write(tmp_path, rows))
    msg = str(e.value)
    assert "line 2: not valid JSON" in msg
    assert "line 3: duplicate id 'a' (first on line 1)" in msg
    assert ("line 4: question 'b': span 'short' has 5 characters, expected at least 20 (labels.min_span); "
            "copy a longer span from the document or lower labels.min_span") in msg
    assert "line 5: missing field(s) answer" in msg
    assert "line 6: field 'doc' must be null for an unanswerable question" in msg
    assert "line 7: unknown field(s) extra" in msg
    assert "7 problem(s)" in msg  # line 6 breaks two rules (doc and span)


@pytest.mark.bad_input
def test_missing_file_says_what_is_expected(tmp_path):
    with pytest.raises(QuestionError, match="does not exist: expected JSON lines"):
        load_questions(tmp_path / "nope.jsonl")


@pytest.mark.bad_input
def test_stale_spans_name_every_question():
    docs = [Document("t/d.md", "t", "The job runs at noon on every weekday.")]
    qs = load_questions_from([GOOD, {**GOOD, "id": "b", "span": "this sentence was edited away"},
                              {**GOOD, "id": "c", "span": "this one is gone as well too"},
                              {**GOOD, "id": "d", "doc": "t/missing.md"}])
    with pytest.raises(QuestionError) as e:
        check_spans(qs, docs, seen={"c"})
    msg = str(e.value)
    assert msg.startswith("question set does not match the corpus: 1 question(s) name a document not in the corpus: "
                          "d (doc 't/missing.md'); 2 span(s) not in their document:\n")
    # b is new: "not found"; c was accepted by an earlier run: "stale"; each with the nearest text
    assert "\n  b: not found in the text of t/d.md; nearest: " in msg
    assert "\n  c: stale: found on an earlier run, so the document changed since; not in the text of t/d.md" in msg
    assert "`rag-ablation convert FILE` prints a converted file" in msg


@pytest.mark.bad_input
def test_a_span_missing_from_a_converted_file_names_its_converted_text_and_nearest_match():
    docs = [Document("p/guide.pdf", "p", "Logs are kept for ninety days on the archive tier.\n")]
    qs = load_questions_from([{**GOOD, "doc": "p/guide.pdf", "span": "Logs are kept for 90 days on the archive tier"}])
    with pytest.raises(QuestionError) as e:
        check_spans(qs, docs)
    assert ("\n  a: not found in the converted text of p/guide.pdf; nearest: 'Logs are kept for ninety days on the "
            "archive tier.'") in str(e.value)


def test_nearest_text_is_the_best_matching_passage():
    text = "alpha beta gamma. The backup runs every night at 01:15 UTC. Then delta."
    # aligned on the longest shared block (" night at 01:15 UTC"), as long as the span: "every" is one
    # character longer than "each", so the excerpt starts one character into "The"
    span = "The backup runs each night at 01:15 UTC"
    assert nearest_text(text, span, context=0) == "he backup runs every night at 01:15 UTC"
    assert len(nearest_text(text, span, context=0)) == len(span)
    assert nearest_text("abc", "xyz") == ""


def load_questions_from(rows, tmp=[]):  # noqa: B006 - tiny helper
    import tempfile
    from pathlib import Path

    d = Path(tempfile.mkdtemp())
    return load_questions(write(d, rows))


def test_span_check_normalizes_whitespace():
    docs = [Document("t/d.md", "t", "The job runs at noon\non   every weekday.")]
    check_spans(load_questions_from([GOOD]), docs)


def test_lexical_overlap_counts_content_words():
    # content words of the question: {deploy, freeze, start}; passage has deploy and freeze
    assert lexical_overlap("When does the deploy freeze start?", "The deploy freeze begins in December.") == pytest.approx(2 / 3)
    assert lexical_overlap("the of and", "anything") == 0.0


def test_span_regions_and_ambiguity():
    span = "rotated every thirty days"
    far = Document("t/a.md", "t", f"Keys are {span}. " + "x" * 900 + f" Again: {span}.")
    near = Document("t/b.md", "t", f"Keys are {span}; yes, {span}.")
    assert span_regions(span, [far], region=800) == 2
    assert span_regions(span, [near], region=800) == 1
    assert span_regions(span, [far, near], region=800) == 3
    qs = load_questions_from([{**GOOD, "doc": "t/b.md", "span": span}])
    assert ambiguous_spans(qs, [near], region=800) == []
    assert ambiguous_spans(qs, [near, far], region=800) == ["a"]


@pytest.mark.bad_input
def test_corpus_problems_are_all_listed(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "loose.md").write_text("x")
    (tmp_path / "t" / "a.pdf").write_text("x")
    (tmp_path / "t" / "b.md").write_bytes(b"\xff\xfe bad")
    (tmp_path / "t" / "c.md").write_text("   ")
    (tmp_path / "t" / "d.xyz").write_text("x")
    (tmp_path / "t" / ".hidden").write_text("ignored")
    with pytest.raises(CorpusError) as e:
        read_sources(tmp_path)
    msg = str(e.value)
    assert "4 problem(s)" in msg
    assert "loose.md" not in msg, "a file directly under the root is a document of track _root"
    assert "t/a.pdf: " in msg and "t/d.xyz: suffix .xyz is not a document format" in msg
    assert "t/b.md: not UTF-8" in msg
    assert "t/c.md: empty document" in msg
    # the built corpus (the dataset stage's output) is read as texts, whatever the suffix
    (tmp_path / "t" / "a.pdf").write_text("converted text")
    with pytest.raises(CorpusError) as e:
        load_corpus(tmp_path)
    assert "2 problem(s)" in str(e.value) and "t/b.md: not UTF-8" in str(e.value)


@pytest.mark.bad_input
def test_missing_corpus_folder(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        load_corpus(tmp_path / "nope")


@pytest.mark.bad_input
def test_a_link_out_of_the_corpus_is_named(tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("# Not part of the corpus\n\nprivate text\n")
    root = tmp_path / "corpus"
    (root / "t").mkdir(parents=True)
    (root / "t" / "ok.md").write_text("# Fine\n\nA real document.\n")
    (root / "t" / "leak.md").symlink_to(outside)
    with pytest.raises(CorpusError, match=r"t/leak.md: a link to .*secret.md, outside the corpus"):
        load_corpus(root)


@pytest.mark.bad_input
@pytest.mark.parametrize("doc", ["../etc/passwd", "t/../../x.md", "/etc/passwd"])
def test_a_doc_path_must_stay_under_the_corpus(tmp_path, doc):
    with pytest.raises(QuestionError, match=r"field 'doc' must be a path under the corpus root"):
        load_questions(write(tmp_path, [{**GOOD, "doc": doc}]))


@pytest.mark.bad_input
def test_min_span_is_a_parameter(tmp_path):
    rows = [GOOD, {**GOOD, "id": "b", "span": "noon on every"}]  # 24 and 13 characters
    assert [q.id for q in load_questions(write(tmp_path, rows), min_span=10)] == ["a", "b"]
    with pytest.raises(QuestionError) as e:
        load_questions(write(tmp_path, rows), min_span=25)
    msg = str(e.value)
    assert "line 1: question 'a': span 'at noon on every weekday' has 24 characters, expected at least 25" in msg
    assert "line 2: question 'b'" in msg and "2 problem(s)" in msg


@pytest.mark.bad_input
def test_the_questions_stage_takes_min_span_from_params(tmp_path):
    import subprocess
    import sys

    import yaml

    from conftest import ROOT

    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    params["labels"]["min_span"] = 1000
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    res = subprocess.run([sys.executable, str(ROOT / "stages/questions.py"), "--corpus", str(FIXTURES / "corpus"),
                          "--questions", str(FIXTURES / "questions.jsonl"), "--out", "q.jsonl", "--metrics", "m.json"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 2, res.stderr
    answerable = [q for q in load_questions(FIXTURES / "questions.jsonl") if q.answerable]
    assert res.stderr.count("expected at least 1000 (labels.min_span)") == len(answerable)
    assert all(f"question {q.id!r}" in res.stderr for q in answerable)
    assert not (tmp_path / "q.jsonl").exists()


SPANS = {**GOOD, "span": None, "spans": ["at noon on every weekday", "every weekday at noon sharp"]}


def test_a_question_may_carry_a_list_of_spans(tmp_path):
    docs = [Document("t/d.md", "t", "The job runs at noon on every weekday. Put another way: every weekday at noon sharp.")]
    no_span_key = {k: v for k, v in SPANS.items() if k != "span"} | {"id": "b"}
    qs = load_questions(write(tmp_path, [GOOD, SPANS | {"id": "s"}, no_span_key]))
    check_spans(qs, docs)
    assert qs[0].spans is None and qs[0].relevant_spans == ("at noon on every weekday",)
    assert qs[1].relevant_spans == tuple(SPANS["spans"]) and qs[2].relevant_spans == tuple(SPANS["spans"])
    # a question without `spans` is written back with exactly the old fields (byte-identical files)
    assert list(qs[0].to_json()) == ["id", "question", "doc", "span", "answer", "slice", "track"]
    assert qs[1].to_json()["spans"] == SPANS["spans"] and qs[1].to_json()["span"] is None
    from rag_ablation.data.questions import Question
    assert Question(**qs[1].to_json()) == qs[1]  # how later stages read it back


@pytest.mark.bad_input
def test_bad_span_lists_are_named(tmp_path):
    rows = [
        SPANS | {"span": "at noon on every weekday"},
        SPANS | {"id": "b", "spans": []},
        SPANS | {"id": "c", "spans": ["at noon on every weekday", "short"]},
        {**GOOD, "id": "d", "slice": "unanswerable", "doc": None, "span": None, "spans": ["at noon on every weekday"]},
        SPANS | {"id": "e", "spans": "at noon on every weekday"},
    ]
    with pytest.raises(QuestionError) as e:
        load_questions(write(tmp_path, rows))
    msg = str(e.value)
    assert "line 1: fields 'span' and 'spans' both set" in msg
    assert "line 2: field 'spans' must be a non-empty list of non-empty strings, found []" in msg
    assert "line 3: question 'c': spans[1] 'short' has 5 characters, expected at least 20" in msg
    assert "line 4: field 'spans' must be null for an unanswerable question" in msg
    assert "line 5: field 'spans' must be a non-empty list" in msg
    assert "5 problem(s)" in msg


@pytest.mark.bad_input
def test_each_span_of_a_list_is_checked_in_its_document(tmp_path):
    docs = [Document("t/d.md", "t", "The job runs at noon on every weekday.")]
    qs = load_questions(write(tmp_path, [SPANS]))
    with pytest.raises(QuestionError,
                       match=r"1 span\(s\) not in their document:\n  a \(spans\[1\]\): not found in the text of t/d.md"):
        check_spans(qs, docs)


def test_ambiguity_and_overlap_use_every_span():
    span = "rotated every thirty days"
    near = Document("t/b.md", "t", f"Keys are {span}; yes, {span}. Tokens expire after one full hour.")
    far = Document("t/a.md", "t", "Tokens expire after one full hour. " + "x" * 900)
    qs = load_questions_from([{**GOOD, "doc": "t/b.md", "span": None,
                               "spans": [span, "Tokens expire after one full hour"]}])
    assert ambiguous_spans(qs, [near], region=800) == []
    assert ambiguous_spans(qs, [near, far], region=800) == ["a"]  # the second span occurs in both documents


@pytest.mark.bad_input
def test_the_labels_stage_flags_questions_with_too_many_relevant_chunks(tmp_path):
    import subprocess
    import sys

    import yaml

    from conftest import ROOT
    from rag_ablation.data.corpus import load_corpus as corpus_of
    from rag_ablation.core.io import write_jsonl
    from rag_ablation.retrieval.chunking import chunk_corpus

    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    params["labels"]["max_relevant"] = 1
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    docs = corpus_of(FIXTURES / "corpus")
    chunks = chunk_corpus(((d.doc, d.track, d.text) for d in docs), method="fixed", size=60, overlap=40)
    write_jsonl(tmp_path / "chunks.jsonl", [c.to_json() for c in chunks])
    write_jsonl(tmp_path / "q.jsonl", [q.to_json() for q in load_questions(FIXTURES / "questions.jsonl")])
    res = subprocess.run([sys.executable, str(ROOT / "stages/labels.py"), "--chunks", "chunks.jsonl",
                          "--questions", "q.jsonl", "--out", "labels.json", "--metrics", "m.json"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    relevant = json.loads((tmp_path / "labels.json").read_text())["relevant"]
    m = json.loads((tmp_path / "m.json").read_text())
    over = {q: len(ids) for q, ids in relevant.items() if len(ids) > 1}
    assert over and m["over_max_relevant"] == over and m["n_over_max_relevant"] == len(over)
    assert m["max_relevant"] == 1 and m["max_n_relevant"] == max(map(len, relevant.values()))
    assert "more than 1 relevant chunks (labels.max_relevant" in res.stderr
    assert sorted(json.loads((tmp_path / "labels.json").read_text())) == ["relevant", "same_doc_only", "unlabeled", "window"]


@pytest.mark.bad_input
def test_a_doc_without_its_track_gets_a_hint():
    docs = [Document("runbooks/x.md", "runbooks", "The job runs at noon on every weekday."),
            Document("guides/x.md", "guides", "other"), Document("guides/y.md", "guides", "other")]
    qs = load_questions_from([{**GOOD, "doc": "x.md"}, {**GOOD, "id": "b", "doc": "guide/y.md"},
                              {**GOOD, "id": "c", "doc": "z.md"}])
    with pytest.raises(QuestionError) as e:
        check_spans(qs, docs)
    msg = str(e.value)
    assert "a (doc 'x.md'; did you mean runbooks/x.md or guides/x.md? the path must include the track)" in msg
    assert "b (doc 'guide/y.md'; did you mean guides/y.md? the path must include the track)" in msg
    assert "c (doc 'z.md')" in msg


RAW_BREAKS = ["\x85", "\u2028", "\u2029"]
"""Line breaks to ``str.splitlines`` that JSON allows raw inside strings (web text holds them)."""


@pytest.mark.parametrize("char", RAW_BREAKS)
def test_a_question_file_may_hold_raw_line_breaks_inside_strings(tmp_path, char):
    row = {**GOOD, "question": f"When{char}does it run?", "answer": f"Noon.{char}Every weekday."}
    p = tmp_path / "q.jsonl"
    p.write_text(json.dumps(row, ensure_ascii=False) + "\n" + json.dumps({**GOOD, "id": "b"}) + "\n", encoding="utf-8")
    qs = load_questions(p)
    assert [(q.id, q.question, q.answer) for q in qs] == [("a", row["question"], row["answer"]), ("b", "When?", "Noon.")]


@pytest.mark.bad_input
@pytest.mark.parametrize("char", RAW_BREAKS + ["\x0b", "\x0c", "\x1c"])
def test_a_bad_question_line_is_named_by_its_newline_line_number(tmp_path, char):
    """Only ``\\n`` ends a line: a raw U+2028 inside a string is no break, and a raw control
    character (which JSON forbids) makes one bad line, not two, so later numbers stay true."""
    rows = [json.dumps({**GOOD, "question": "When@?"}).replace("@", char), "{not json"]  # raw, even a control
    with pytest.raises(QuestionError) as e:
        load_questions(write(tmp_path, rows))
    msg = str(e.value)
    if char in RAW_BREAKS:
        assert "1 problem(s)" in msg and "line 2: not valid JSON (Expecting property name enclosed" in msg
    else:
        assert "2 problem(s)" in msg and "line 1: not valid JSON (Invalid control character at" in msg
        assert "line 2: not valid JSON (Expecting property name enclosed" in msg
    assert "line 3" not in msg


def test_a_document_with_raw_line_breaks_reaches_the_chunk_file_whole(tmp_path):
    """Text from the web holds U+0085, U+2028 and U+2029; the chunk stage writes them raw
    (``write_jsonl``), and every stage after it reads them back unchanged."""
    from rag_ablation.core.io import write_jsonl
    from rag_ablation.data.chunks import load_chunks
    from rag_ablation.retrieval.chunking import chunk_corpus

    odd = "".join(RAW_BREAKS) + "\x0b\x0c\x1c"
    (tmp_path / "corpus" / "t").mkdir(parents=True)
    (tmp_path / "corpus" / "t" / "d.md").write_text(
        f"# Title{odd}here\n\nThe job runs{odd}at noon.\n\n" + "Another paragraph of plain text. " * 20,
        encoding="utf-8")
    docs = load_corpus(tmp_path / "corpus")
    chunks = chunk_corpus(((d.doc, d.track, d.text) for d in docs), method="chars", size=120, overlap=20)
    out = tmp_path / "chunks.jsonl"
    write_jsonl(out, [c.to_json() for c in chunks])
    back = load_chunks(out)
    assert back == chunks and len(back) > 1
    assert f"runs{odd}at" in back[0].body


def test_passages_default_to_the_one_passage_budget():
    from rag_ablation.data.passages import PASSAGE_BUDGET, split_passages
    from rag_ablation.data.question_stats import source_passage
    text = "\n\n".join(f"Paragraph {i} " + "w" * 300 for i in range(6))
    assert split_passages(text, "t/a.md", "t") == split_passages(text, "t/a.md", "t", PASSAGE_BUDGET)
    assert all(len(p.text) <= PASSAGE_BUDGET for p in split_passages(text, "t/a.md", "t"))
    assert source_passage("Paragraph 3", text) == source_passage("Paragraph 3", text, budget=PASSAGE_BUDGET)


@pytest.mark.bad_input
def test_sampling_passages_needs_per_track_and_seed(tmp_path):
    from rag_ablation.data.passages import sample_passages
    with pytest.raises(TypeError, match="per_track"):
        sample_passages(tmp_path)
