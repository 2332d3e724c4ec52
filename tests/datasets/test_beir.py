"""The BEIR importer on a hand-built folder: documents, questions, the gold file, every counted
problem (duplicates, unknown ids, negative scores, queries without a relevant document, identical
ids), grade-0 rows kept in the gold file, and
document-level relevance through the span labels with ``same_doc_only``."""
from __future__ import annotations

import json
import os

import pytest

from rag_ablation.data.corpus import load_corpus
from rag_ablation.datasets import imports
from rag_ablation.datasets.beir import NO_REFERENCE_ANSWER, import_beir
from rag_ablation.datasets.imports import DatasetImportError, NothingImported
from rag_ablation.core.errors import InvalidData, MissingInput
from rag_ablation.core.io import read_jsonl
from rag_ablation.evaluation.scoring.labels import relevant_chunks
from rag_ablation.data.questions import check_spans, load_questions
from rag_ablation.retrieval.chunking import chunk_corpus

D1 = ("Vitamin D levels were measured in 400 adults. Low levels were associated with more frequent "
      "respiratory infections during the winter months.\n\nThe association held after adjusting for age.")
D2 = "Zinc lozenges shortened the common cold by about two days in three randomized trials."
D3 = "Question three is also a document in this corpus, as in ArguAna and Quora."


def rows(*objs):
    return "".join(json.dumps(o) + "\n" for o in objs)


def beir_folder(tmp_path, *, qrels=None):
    f = tmp_path / "scifact"
    (f / "qrels").mkdir(parents=True)
    (f / "corpus.jsonl").write_text(rows(
        {"_id": "d1", "title": "Vitamin D and infections", "text": D1},
        {"_id": "d2", "title": None, "text": D2},
        {"_id": "q3", "title": "Self", "text": D3},  # same id as query q3
        {"_id": "d2", "title": "Again", "text": "a second entry under an id already used"},
        {"_id": "d4", "title": " ", "text": "  "},  # empty
        {"_id": "x/y z", "title": "Odd id", "text": "A document whose id needs a safe file name."},
    ) + "\n", encoding="utf-8")  # a blank line is allowed
    (f / "queries.jsonl").write_text(rows(
        {"_id": "q1", "text": "Does vitamin D protect against infections?"},
        {"_id": "q2", "text": "Is this query judged in another split only?"},
        {"_id": "q3", "text": "Is question three its own document?"},
        {"_id": "q4", "text": "   "},
        {"_id": "q1", "text": "a duplicate query id"},
        {"_id": 5, "text": "Do zinc lozenges help?"},  # an integer id becomes "5"
    ), encoding="utf-8")
    lines = qrels if qrels is not None else [
        "query-id\tcorpus-id\tscore",
        "q1\td2\t1", "q1\td1\t2",  # two gold documents: the higher score is the question's doc
        "q3\tq3\t1",  # judged against itself: ignored (ignore_identical_ids)
        "q3\td3\t1",  # unknown document
        "q3\td2\t1",
        "q9\td1\t1",  # unknown query
        "q1\tq3\t0",  # score 0: judged not relevant, kept with its grade
        "q1\td2\t1",  # repeated row
        "q4\td1\t1",  # row of a dropped (empty) query: goes with it
        "5\tx/y z\t1",
    ]
    (f / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f


def test_import_writes_documents_questions_and_gold(tmp_path):
    folder = beir_folder(tmp_path)
    corpus, qfile = tmp_path / "corpus", tmp_path / "questions" / "scifact.jsonl"
    report = import_beir(folder, corpus, qfile)

    docs = {d.doc: d for d in load_corpus(corpus)}
    odd = next(d for d in docs if d.startswith("scifact/x_y_z-"))
    assert sorted(docs) == sorted(["scifact/d1.md", "scifact/d2.md", "scifact/q3.md", odd])
    assert docs["scifact/d1.md"].text == f"# Vitamin D and infections\n\n{D1}\n"
    assert docs["scifact/d2.md"].text == f"{D2}\n"  # no title: no heading line

    questions = load_questions(qfile)
    check_spans(questions, list(docs.values()))
    q = {x.id: x for x in questions}
    assert list(q) == ["q1", "q3", "5"]
    assert q["q1"].to_json() == {"id": "q1", "question": "Does vitamin D protect against infections?",
                                 "doc": "scifact/d1.md", "span": docs["scifact/d1.md"].text.strip(),
                                 "answer": NO_REFERENCE_ANSWER, "slice": "main", "track": "scifact"}
    assert q["q3"].doc == "scifact/d2.md" and q["5"].doc == odd

    gold = [json.loads(line) for line in (tmp_path / "questions" / "scifact.gold.jsonl").read_text().splitlines()]
    assert gold == [
        {"id": "q1", "gold": [{"doc": "scifact/d1.md", "score": 2}, {"doc": "scifact/d2.md", "score": 1},
                              {"doc": "scifact/q3.md", "score": 0}], "exclude": []},
        {"id": "q3", "gold": [{"doc": "scifact/d2.md", "score": 1}], "exclude": ["scifact/q3.md"]},
        {"id": "5", "gold": [{"doc": odd, "score": 1}], "exclude": []},
    ]

    assert report.read == {"documents": 6, "queries": 6, "qrels rows": 10}
    assert (report.documents, report.questions, report.unanswerable) == (4, 3, 0)
    assert report.dropped == {
        "duplicate_document_id": 1, "empty_document": 1, "duplicate_query_id": 1, "empty_question": 1,
        "qrels_identical_ids": 1, "qrels_unknown_document": 1, "qrels_unknown_query": 1,
        "qrels_duplicate_row": 1, "qrels_query_dropped": 1, "no_qrels": 1,
    }
    assert report.dropped_by_kind() == {
        "documents": {"duplicate_document_id": 1, "empty_document": 1},
        "queries": {"duplicate_query_id": 1, "empty_question": 1, "no_qrels": 1},
        "qrels rows": {"qrels_duplicate_row": 1, "qrels_identical_ids": 1, "qrels_query_dropped": 1,
                       "qrels_unknown_document": 1, "qrels_unknown_query": 1},
    }
    assert report.examples["qrels_query_dropped"] == ["q4/d1"]  # the row of the empty query, counted as a row
    assert report.reading == ["qrels/test.tsv began with the header line 'query-id\\tcorpus-id\\tscore', skipped"]
    assert report.notes == {"identical_query_and_document_id": 1, "several_gold_documents": 1}
    assert report.examples["no_qrels"] == ["q2"]
    assert report.examples["qrels_identical_ids"] == ["q3/q3"]
    assert report.examples["qrels_unknown_document"] == ["q3/d3"]
    assert report.examples["qrels_unknown_query"] == ["q9/d1"]
    assert report.examples["identical_query_and_document_id"] == ["q3"]
    assert "1 no_qrels" in report.summary()


def test_report_counts_each_kind_of_record_apart(tmp_path):
    """Documents, queries and qrels rows are dropped and counted apart: for each kind, what
    was read is what was used plus what was dropped (no sample, no span_too_short here)."""
    report = import_beir(beir_folder(tmp_path), tmp_path / "c", tmp_path / "q.jsonl")
    gold = read_jsonl(tmp_path / "q.gold.jsonl")
    n_gold_rows = sum(len(g["gold"]) for g in gold)  # the qrels rows used
    totals = report.to_json()["dropped_totals"]
    assert totals == {"documents": report.read["documents"] - report.documents,  # 6 - 4
                      "queries": report.read["queries"] - report.questions,  # 6 - 3
                      "qrels rows": report.read["qrels rows"] - n_gold_rows}  # 10 - 5
    assert [report.dropped_of(k) for k in totals] == list(totals.values()) == [2, 3, 5]
    assert report.n_dropped == sum(totals.values())
    assert report.to_json()["dropped_by_kind"] == report.dropped_by_kind()
    summary = report.summary()
    assert "dropped documents: 2 of 6\n" in summary and "dropped queries: 3 of 6\n" in summary
    assert "dropped qrels rows: 5 of 10\n" in summary
    queries = summary.split("dropped queries:")[1].split("dropped qrels rows:")[0]
    assert "1 no_qrels: query without a relevant document" in queries and "1 empty_question:" in queries
    assert "qrels_" not in queries  # no row counted among the queries


def test_grade_0_rows_are_kept_to_the_exported_qrels_and_negative_ones_dropped(tmp_path):
    """A score-0 row (BEIR's "judged, not relevant"; 880 of DBpedia-entity's 3,709 test rows) is
    kept in the gold file with its grade, read back by the dataset and score stages, and written
    by the graded TREC export as ``qid 0 docno 0``; it changes no project measure. A query whose
    rows are all 0 has no relevant document: dropped as ``no_qrels``, its rows counted with it. A
    negative score is no grade and is dropped as ``qrels_score_negative``."""
    from rag_ablation.evaluation.scoring.graded import Qrel, graded_scores, read_qrels
    from rag_ablation.evaluation.scoring.trec import graded_qrels_lines

    folder = beir_folder(tmp_path, qrels=[
        "q1\td2\t0", "q1\td1\t1",  # a judged non-relevant document before the relevant one
        "q3\td1\t0", "q3\td2\t0",  # no relevant document at all
        "5\tx/y z\t1", "5\td1\t-1",  # a negative score
    ])
    report = import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl")
    qrels = read_qrels(tmp_path / "q.gold.jsonl")
    odd = load_questions(tmp_path / "q.jsonl")[1].doc
    assert qrels == {"q1": Qrel({"scifact/d1.md": 1, "scifact/d2.md": 0}), "5": Qrel({odd: 1})}
    assert [q.doc for q in load_questions(tmp_path / "q.jsonl")] == ["scifact/d1.md", odd], "doc: a relevant one"
    assert "several_gold_documents" not in report.notes, "one relevant document: grade 0 is not gold"
    assert graded_qrels_lines(qrels) == ["q1 0 scifact/d1.md 1", "q1 0 scifact/d2.md 0", f"5 0 {odd} 1"]
    assert report.dropped_by_kind()["queries"]["no_qrels"] == 2  # q2 (no row) and q3 (only grade 0)
    assert report.dropped_by_kind()["qrels rows"] == {"qrels_no_relevant": 2, "qrels_score_negative": 1}
    assert report.examples["qrels_no_relevant"] == ["q3/d1", "q3/d2"]
    assert report.examples["qrels_score_negative"] == ["5/d1"]
    assert report.read["qrels rows"] == 3 + report.dropped_of("qrels rows"), "rows read = gold rows + dropped"
    with_zero = graded_scores(["scifact/d2.md#0", "scifact/d1.md#0"], qrels["q1"], depth=100)
    assert with_zero == graded_scores(["scifact/d2.md#0", "scifact/d1.md#0"], Qrel({"scifact/d1.md": 1}), depth=100)


def _outputs(tmp_path, name):
    return [(tmp_path / p).read_bytes() for p in (f"{name}.jsonl", f"{name}.gold.jsonl")] + sorted(
        (p.name, p.read_bytes()) for p in (tmp_path / name / "scifact").iterdir())


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_qrels_file_without_its_header_imports_the_same(tmp_path, newline):
    """MS MARCO's BEIR qrels have no header line: the first line is then read as data, and the
    import is the same as with the header, but for the report line saying which."""
    headed = import_beir(beir_folder(tmp_path / "h"), tmp_path / "headed", tmp_path / "headed.jsonl")
    folder = beir_folder(tmp_path / "n")
    lines = (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]  # the header removed
    (folder / "qrels" / "test.tsv").write_text(newline.join(lines) + newline, encoding="utf-8")
    plain = import_beir(folder, tmp_path / "plain", tmp_path / "plain.jsonl")
    assert _outputs(tmp_path, "plain") == _outputs(tmp_path, "headed")
    assert plain.reading == ["qrels/test.tsv had no header line; its first line was read as data"]
    assert plain.examples["qrels_unknown_query"] == headed.examples["qrels_unknown_query"]
    same = ("read", "documents", "questions", "dropped", "dropped_by_kind", "dropped_totals", "notes", "examples")
    assert {k: plain.to_json()[k] for k in same} == {k: headed.to_json()[k] for k in same}
    assert "qrels/test.tsv had no header line; its first line was read as data" in plain.summary()


def test_a_first_line_whose_score_is_not_an_integer_is_a_header(tmp_path):
    """As BEIR's loader: a header with other names is skipped too, and the report shows it."""
    folder = beir_folder(tmp_path, qrels=["qid\tdocid\trelevance", "q1\td1\t1"])
    report = import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl")
    assert report.read["qrels rows"] == 1 and report.questions == 1
    assert report.reading == ["qrels/test.tsv began with the header line 'qid\\tdocid\\trelevance', skipped"]


def test_whole_document_span_labels_every_chunk_of_the_gold_document(tmp_path):
    """With ``same_doc_only`` the whole-document span makes every chunk of the first gold
    document relevant, and no other: document-level relevance for that one document."""
    folder = beir_folder(tmp_path)
    import_beir(folder, tmp_path / "corpus", tmp_path / "q.jsonl", track="sf")
    docs = load_corpus(tmp_path / "corpus")
    chunks = chunk_corpus(((d.doc, d.track, d.text) for d in docs), method="chars", size=80, overlap=10)
    questions = [q for q in load_questions(tmp_path / "q.jsonl") if q.id == "q1"]
    rel = relevant_chunks({q.id: q.span for q in questions}, ((c.id, c.doc, c.body) for c in chunks),
                          window=30, span_docs={q.id: q.doc for q in questions})
    of_d1 = [c.id for c in chunks if c.doc == "sf/d1.md" and len(c.body.strip()) >= 30]
    assert len(of_d1) >= 3 and rel["q1"] == of_d1


def test_identical_ids_kept_when_asked(tmp_path):
    report = import_beir(beir_folder(tmp_path), tmp_path / "c", tmp_path / "q.jsonl", ignore_identical_ids=False)
    gold = {r["id"]: r for r in map(json.loads, (tmp_path / "q.gold.jsonl").read_text().splitlines())}
    assert [g["doc"] for g in gold["q3"]["gold"]] == ["scifact/q3.md", "scifact/d2.md"]
    assert "qrels_identical_ids" not in report.dropped


@pytest.mark.bad_input
def test_missing_split_lists_the_splits(tmp_path):
    folder = beir_folder(tmp_path)
    with pytest.raises(MissingInput, match=r"no qrels/dev.tsv; splits found: test\. Pass one of them"):
        import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl", split="dev")
    with pytest.raises(MissingInput, match="does not exist"):
        import_beir(tmp_path / "nope", tmp_path / "c", tmp_path / "q.jsonl", track="x")
    (folder / "queries.jsonl").unlink()
    with pytest.raises(MissingInput, match="has no queries.jsonl"):
        import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl")


@pytest.mark.bad_input
def test_malformed_lines_are_all_listed_and_nothing_is_written(tmp_path):
    folder = beir_folder(tmp_path, qrels=["q1 d1 1", "q1\td2\t1"])  # a first line neither header nor row
    with (folder / "corpus.jsonl").open("a") as f:
        f.write('{"_id": "d9"}\n{broken\n["a list"]\n{"_id": "d8", "text": 3}\n')
    with pytest.raises(InvalidData) as e:
        import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl")
    msg = str(e.value)
    assert "5 problem(s)" in msg
    assert "corpus.jsonl line 8: missing field(s) text" in msg
    assert "corpus.jsonl line 9: not valid JSON" in msg
    assert "corpus.jsonl line 10: expected a JSON object, found list" in msg
    assert "corpus.jsonl line 11: field(s) text must be strings, found int" in msg
    assert ("qrels/test.tsv line 1: expected the header 'query-id\\tcorpus-id\\tscore' or a first row "
            "(3 tab-separated fields: query-id, corpus-id, integer score), found 'q1 d1 1'; fix the first line "
            "(the header line is optional)") in msg
    assert not (tmp_path / "c").exists() and not (tmp_path / "q.jsonl").exists()


@pytest.mark.bad_input
@pytest.mark.parametrize("first", ["", "query-id\tcorpus-id", "q1\td1\t", "q1\td1\t1\textra"])
def test_a_malformed_first_qrels_line_is_refused(tmp_path, first):
    """A first line that is neither a header (3 fields, the third not an integer) nor a row."""
    folder = beir_folder(tmp_path, qrels=[first, "q1\td1\t1"])
    with pytest.raises(InvalidData, match=r"qrels/test.tsv line 1: expected the header .* or a first row") as e:
        import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl")
    assert f"found {first!r}; fix the first line" in str(e.value)
    assert not (tmp_path / "c").exists()


@pytest.mark.bad_input
def test_an_empty_qrels_file_is_refused(tmp_path):
    folder = beir_folder(tmp_path)
    (folder / "qrels" / "test.tsv").write_text("", encoding="utf-8")
    with pytest.raises(InvalidData, match="qrels/test.tsv line 1: expected the header .* found an empty file"):
        import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl")


@pytest.mark.bad_input
def test_bad_qrels_rows(tmp_path):
    folder = beir_folder(tmp_path, qrels=["query-id\tcorpus-id\tscore", "q1 d1 1", "q1\td1\thigh"])
    with pytest.raises(InvalidData) as e:
        import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl")
    assert "line 2: expected 3 tab-separated fields (query-id, corpus-id, score), found 1" in str(e.value)
    assert "line 3: score 'high' is not an integer" in str(e.value)


@pytest.mark.bad_input
def test_no_usable_qrels_writes_nothing(tmp_path):
    folder = beir_folder(tmp_path, qrels=["query-id\tcorpus-id\tscore", "q1\td1\t0", "q2\tmissing\t1"])
    with pytest.raises(NothingImported, match=r"1 qrels_no_relevant(.|\n)*1 qrels_unknown_document"):
        import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl")
    assert not (tmp_path / "c").exists()


@pytest.mark.bad_input
def test_a_failure_on_the_last_file_restores_every_output(tmp_path, monkeypatch):
    folder = beir_folder(tmp_path)
    corpus, qfile = tmp_path / "corpus", tmp_path / "q.jsonl"
    import_beir(folder, corpus, qfile)
    gfile = tmp_path / "q.gold.jsonl"
    before = {p: p.read_bytes() for p in [qfile, gfile, *corpus.rglob("*.md")]}
    (folder / "corpus.jsonl").write_text(rows({"_id": "d1", "title": "New", "text": D1}))

    real_replace = os.replace
    def failing_replace(a, b):
        if str(b) == str(gfile):  # the questions file has already been replaced by now
            raise OSError("disk full")
        return real_replace(a, b)
    monkeypatch.setattr(imports.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        import_beir(folder, corpus, qfile, overwrite=True)
    assert {p: p.read_bytes() for p in [qfile, gfile, *corpus.rglob("*.md")]} == before
    assert not [p for p in [*corpus.iterdir(), *tmp_path.iterdir()] if p.name.startswith(".")]


# ---------------------------------------------------------------------------------------------
# --sample N --seed S: stratified by the question's doc, every document kept

DOC_QUERIES = {"d1": 5, "d2": 3, "d3": 1, "d4": 0}  # queries whose best gold document is each


def stratified_folder(tmp_path):
    f = tmp_path / "strat"
    (f / "qrels").mkdir(parents=True)
    (f / "corpus.jsonl").write_text(rows(*({"_id": d, "title": f"Document {d}", "text": f"{D2} ({d})"}
                                           for d in DOC_QUERIES)), encoding="utf-8")
    queries = [(f"{d}q{i}", d) for d, n in DOC_QUERIES.items() for i in range(n)]
    queries.sort(key=lambda x: x[0][::-1])  # interleave the documents' queries
    (f / "queries.jsonl").write_text(rows(*({"_id": q, "text": f"Question {q}?"} for q, _ in queries),
                                          {"_id": "qx", "text": "A query without qrels?"}), encoding="utf-8")
    lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t2" for q, d in queries),
             *(f"{q}\td4\t1" for q, _ in queries[:3])]  # a second, lower gold document for a few
    (f / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f


def test_sample_is_stratified_by_gold_document_and_keeps_the_corpus(tmp_path):
    folder = stratified_folder(tmp_path)
    full = import_beir(folder, tmp_path / "all", tmp_path / "all.jsonl")
    report = import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl", sample=5, seed=1)
    questions = load_questions(tmp_path / "q.jsonl")
    per_doc = {d: sum(q.doc == f"strat/{d}.md" for q in questions) for d in DOC_QUERIES}
    # exact shares 5*5/9, 5*3/9, 5*1/9 rounded down: 2, 1, 0; the 2 left go to the largest remainders,
    # d1 (25 % 9 = 7) and d2 (15 % 9 = 6), not d3 (5 % 9 = 5)
    assert per_doc == {"d1": 3, "d2": 2, "d3": 0, "d4": 0}
    all_ids = [q.id for q in load_questions(tmp_path / "all.jsonl")]
    assert [q.id for q in questions] == [i for i in all_ids if i in {q.id for q in questions}]
    gold = [json.loads(line) for line in (tmp_path / "q.gold.jsonl").read_text().splitlines()]
    full_gold = {g["id"]: g for g in map(json.loads, (tmp_path / "all.gold.jsonl").read_text().splitlines())}
    assert gold == [full_gold[q.id] for q in questions]  # the sampled questions' gold rows, whole
    assert sorted(p.name for p in (tmp_path / "c" / "strat").iterdir()) == ["d1.md", "d2.md", "d3.md", "d4.md"]
    assert report.documents == full.documents == 4
    assert report.dropped == full.dropped == {"no_qrels": 1}
    assert (report.sample.requested, report.sample.available, report.sample.by) == (5, 9, "document")
    assert "sample: 5 of the 9 question(s) left after dropping (seed 1, stratified by document)" in report.summary()
    check_spans(questions, load_corpus(tmp_path / "c"))


def test_sample_is_deterministic_per_seed_and_differs_between_seeds(tmp_path):
    folder = stratified_folder(tmp_path)
    def sample(seed, name):
        import_beir(folder, tmp_path / name, tmp_path / f"{name}.jsonl", sample=4, seed=seed)
        return (tmp_path / f"{name}.jsonl").read_bytes(), (tmp_path / f"{name}.gold.jsonl").read_bytes()
    assert sample(7, "a") == sample(7, "b")
    assert len({sample(seed, f"s{seed}") for seed in range(6)}) > 1


def test_sample_of_at_least_the_questions_left_writes_them_all(tmp_path):
    folder = beir_folder(tmp_path)
    import_beir(folder, tmp_path / "all", tmp_path / "all.jsonl")
    report = import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl", sample=3)
    assert (tmp_path / "q.jsonl").read_bytes() == (tmp_path / "all.jsonl").read_bytes()
    assert (tmp_path / "q.gold.jsonl").read_bytes() == (tmp_path / "all.gold.jsonl").read_bytes()
    assert "asked for 3 question(s), 3 left after dropping: all 3 written (no sampling)" in report.summary()


@pytest.mark.bad_input
def test_sample_below_one_is_refused_and_nothing_written(tmp_path):
    with pytest.raises(DatasetImportError, match="sample size 0 is not a positive whole number"):
        import_beir(beir_folder(tmp_path), tmp_path / "c", tmp_path / "q.jsonl", sample=0)
    assert not (tmp_path / "c").exists() and not (tmp_path / "q.jsonl").exists()
    assert not (tmp_path / "q.gold.jsonl").exists()


@pytest.mark.bad_input
def test_nothing_left_to_sample_is_nothing_imported(tmp_path):
    folder = beir_folder(tmp_path, qrels=["query-id\tcorpus-id\tscore", "q1\td1\t0"])
    with pytest.raises(NothingImported) as e:
        import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl", sample=2)
    assert "sample:" not in str(e.value)  # no sample line: there was nothing to sample
    assert not (tmp_path / "c").exists()


RAW_BREAKS = ["\x85", "\u2028", "\u2029"]
"""Line breaks to ``str.splitlines`` that JSON allows raw inside strings (web text holds them)."""


def raw_rows(*objs):
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs)


@pytest.mark.parametrize("char", RAW_BREAKS)
def test_raw_line_breaks_inside_corpus_queries_and_qrels_survive(tmp_path, char):
    """Only ``\\n`` ends a line of the BEIR files: a raw U+0085, U+2028 or U+2029 inside a
    string (or a qrels id) stays in its line and reaches the documents and questions."""
    f = tmp_path / "web"
    (f / "qrels").mkdir(parents=True)
    text = f"Zinc lozenges shortened{char}the common cold by about two days in three randomized trials."
    (f / "corpus.jsonl").write_text(raw_rows({"_id": "d1", "title": f"Zinc{char}and colds", "text": text},
                                             {"_id": "d2", "title": "", "text": D1}), encoding="utf-8")
    (f / "queries.jsonl").write_text(raw_rows({"_id": f"q{char}1", "text": f"Do zinc{char}lozenges help?"}),
                                     encoding="utf-8")
    (f / "qrels" / "test.tsv").write_text(f"query-id\tcorpus-id\tscore\r\nq{char}1\td1\t1\r\n", encoding="utf-8")
    report = import_beir(f, tmp_path / "corpus", tmp_path / "q.jsonl")
    assert report.read == {"documents": 2, "queries": 1, "qrels rows": 1}
    docs = {d.doc: d.text for d in load_corpus(tmp_path / "corpus")}
    assert docs["web/d1.md"] == f"# Zinc and colds\n\n{text}\n"  # the title is one line, whitespace collapsed
    [q] = load_questions(tmp_path / "q.jsonl")
    assert (q.id, q.question, q.doc) == (f"q{char}1", f"Do zinc{char}lozenges help?", "web/d1.md")
    assert read_jsonl(tmp_path / "q.gold.jsonl") == [{"id": f"q{char}1", "gold": [{"doc": "web/d1.md", "score": 1}],
                                                       "exclude": []}]


@pytest.mark.bad_input
@pytest.mark.parametrize("char", RAW_BREAKS + ["\x0b", "\x0c", "\x1c"])
def test_a_bad_beir_line_is_named_by_its_newline_line_number(tmp_path, char):
    """A raw control character (JSON forbids it) is one bad line, not two; a raw U+2028 is no
    line break at all: either way the lines after keep their true numbers."""
    folder = beir_folder(tmp_path)
    with (folder / "corpus.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"_id": "d7", "text": "a@b"}).replace("@", char) + "\n{broken\n")
    with (folder / "queries.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"_id": "q7", "text": "a@b"}).replace("@", char) + "\n")
    with pytest.raises(InvalidData) as e:
        import_beir(folder, tmp_path / "c", tmp_path / "q.jsonl")
    msg = str(e.value)
    if char in RAW_BREAKS:
        assert "1 problem(s)" in msg and "corpus.jsonl line 9: not valid JSON (Expecting property name" in msg
    else:
        assert "3 problem(s)" in msg
        assert "corpus.jsonl line 8: not valid JSON (Invalid control character at at column 25)" in msg
        assert "corpus.jsonl line 9: not valid JSON (Expecting property name" in msg
        assert "queries.jsonl line 7: not valid JSON (Invalid control character at at column 25)" in msg
    assert not (tmp_path / "c").exists()
