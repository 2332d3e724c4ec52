"""The SQuAD importer on hand-built v1.1/v2.0 samples: documents, questions, the report of what
was dropped or adjusted, and outputs that are all or nothing."""
from __future__ import annotations

import json
import os

import pytest

from rag_ablation.data.corpus import load_corpus
from rag_ablation.datasets import imports
from rag_ablation.datasets.imports import DatasetImportError, NothingImported
from rag_ablation.datasets.squad import UNANSWERABLE_ANSWER, import_squad, sentence_bounds
from rag_ablation.core.errors import InvalidData, MissingInput, UserError
from rag_ablation.data.questions import check_spans, load_questions

CTX_A = ("Super Bowl 50 was an American football game. The Denver Broncos defeated the Carolina Panthers "
         "24 to 10 to earn their third title. It was played at Levi's Stadium.")
CTX_B = "The Panthers finished the regular season with a 15 to 1 record. Their quarterback was Cam Newton."
CTX_C = "Warsaw is the capital of Poland. Its population is about 1.7 million people."
LONG = "defeated the Carolina Panthers 24 to 10"  # 39 characters


def _qa(qid, question, answers=(), *, impossible=None):
    qa = {"id": qid, "question": question, "answers": [{"text": t, "answer_start": s} for t, s in answers]}
    if impossible is not None:
        qa["is_impossible"] = impossible
    return qa


def squad_v2() -> dict:
    return {"version": "v2.0", "data": [
        {"title": "Super_Bowl_50", "paragraphs": [
            {"context": CTX_A, "qas": [
                _qa("a1", "Who did the Broncos beat?", [(LONG, CTX_A.index(LONG)), ("Carolina Panthers", 0)],
                    impossible=False),
                _qa("a2", "Where was it played?", [("Levi's Stadium", CTX_A.index("Levi's Stadium"))]),  # short
                _qa("a3", "Who won Super Bowl 51?", impossible=True),
                # answer_start off by 5: the text is elsewhere in the context, kept and counted
                _qa("a4", "How did the Broncos earn a title?",
                    [("to earn their third title", CTX_A.index("to earn their third title") + 5)], impossible=False),
                _qa("a1", "A second question under an id already used?", [(LONG, CTX_A.index(LONG))]),
            ]},
            {"context": CTX_B, "qas": [
                # answer_start beyond the context: the text is found elsewhere, kept and counted
                _qa("b1", "What was the Panthers' record?", [("a 15 to 1 record", 10_000)], impossible=False),
                _qa("b2", "   ", [("Cam Newton", CTX_B.index("Cam Newton"))], impossible=False),
                _qa("b3", "Who coached the Panthers?", [], impossible=False),  # possible but no answers
                _qa("b4", "Which team lost the game by the largest margin ever?",
                    [("Seattle Seahawks lost by the largest margin", 0)], impossible=False),  # nowhere in context
            ]},
        ]},
        {"title": "Warsaw", "paragraphs": [{"context": CTX_C, "qas": [
            _qa("c1", "What is the population of Warsaw?", [("1.7 million", CTX_C.index("1.7 million"))],
                impossible=False),
            _qa("c2", "Who founded Warsaw?", [], impossible=True),
        ]}]},
    ]}


def write(tmp_path, data, name="sample.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_v2_sample_documents_questions_and_report(tmp_path):
    src = write(tmp_path, squad_v2())
    corpus, qfile = tmp_path / "corpus", tmp_path / "questions" / "squad.jsonl"
    report = import_squad(src, corpus, qfile)

    docs = load_corpus(corpus)
    assert [d.doc for d in docs] == ["squad/Super_Bowl_50.md", "squad/Warsaw.md"]
    assert docs[0].text == f"# Super Bowl 50\n\n{CTX_A}\n\n{CTX_B}\n"
    assert docs[1].text == f"# Warsaw\n\n{CTX_C}\n"

    questions = load_questions(qfile)  # the format the pipeline reads, default 20-character floor
    check_spans(questions, docs)
    by_id = {q.id: q for q in questions}
    assert list(by_id) == ["a1", "a3", "a4", "c2"]
    assert by_id["a1"].to_json() == {"id": "a1", "question": "Who did the Broncos beat?",
                                     "doc": "squad/Super_Bowl_50.md", "span": LONG, "answer": LONG, "slice": "main",
                                     "track": "squad"}
    assert by_id["a3"].to_json() == {"id": "a3", "question": "Who won Super Bowl 51?", "doc": None, "span": None,
                                     "answer": UNANSWERABLE_ANSWER, "slice": "unanswerable", "track": "squad"}
    assert by_id["a4"].span == "to earn their third title"

    assert report.read == {"articles": 2, "paragraphs": 3, "questions": 11}
    assert (report.documents, report.questions, report.unanswerable) == (2, 4, 2)
    assert report.dropped == {"duplicate_id": 1, "empty_question": 1, "no_answers": 1,
                              "answer_not_in_context": 1, "span_too_short": 3}
    assert report.adjusted == {"answer_start_mismatch": 2}
    assert report.examples["duplicate_id"] == ["a1"]
    assert report.examples["answer_not_in_context"] == ["b4"]
    assert report.examples["span_too_short"] == ["a2", "b1", "c1"]
    assert report.examples["answer_start_mismatch"] == ["a4", "b1"]
    # every count of questions read is accounted for: written + dropped
    assert report.questions + report.n_dropped == report.read["questions"]
    text = report.summary()
    assert "3 span_too_short" in text and "(e.g. a2, b1, c1)" in text
    assert json.loads(json.dumps(report.to_json()))["dropped"]["duplicate_id"] == 1
    assert report.outputs == {"corpus": str(corpus / "squad"), "questions": str(qfile)}


def test_sentence_spans_keep_short_answers(tmp_path):
    src = write(tmp_path, squad_v2())
    corpus, qfile = tmp_path / "corpus", tmp_path / "q.jsonl"
    report = import_squad(src, corpus, qfile, span="sentence", track="sq")
    questions = load_questions(qfile)
    check_spans(questions, load_corpus(corpus))
    by_id = {q.id: q for q in questions}
    assert list(by_id) == ["a1", "a2", "a3", "a4", "b1", "c1", "c2"]
    assert by_id["b1"].span == "The Panthers finished the regular season with a 15 to 1 record."
    assert by_id["a2"].span == "It was played at Levi's Stadium."
    assert by_id["a2"].answer == "Levi's Stadium"  # the answer stays the answer text
    assert by_id["a2"].doc == "sq/Super_Bowl_50.md"
    # "1.7 million" holds a dot followed by a digit: one sentence, not split at "1."
    assert by_id["c1"].span == "Its population is about 1.7 million people."
    assert "span_too_short" not in report.dropped


def test_v11_without_is_impossible(tmp_path):
    data = {"version": "1.1", "data": [{"title": "Warsaw", "paragraphs": [{"context": CTX_C, "qas": [
        {"id": "w1", "question": "What is Warsaw?", "answers": [{"text": "the capital of Poland", "answer_start": 10}]},
    ]}]}]}
    report = import_squad(write(tmp_path, data), tmp_path / "c", tmp_path / "q.jsonl")
    assert [q.to_json()["span"] for q in load_questions(tmp_path / "q.jsonl")] == ["the capital of Poland"]
    assert (report.questions, report.unanswerable, report.dropped) == (1, 0, {})


def test_sentence_bounds_rule():
    c = 'He said "It is the U.S. Army." Then 3 more came!\nNext line here? yes.'
    def sent(answer):
        i = c.index(answer)
        b, e = sentence_bounds(c, i, i + len(answer))
        return c[b:e]
    assert sent("Then 3") == "Then 3 more came!"
    assert sent("Next") == "Next line here? yes."  # a line break ends a sentence; "? yes" does not
    assert sent("Army") == 'Army."'  # the documented weakness: "U.S. Army" splits...
    assert sent("U.S. Army") == 'He said "It is the U.S. Army."'  # ...but an answer across it gets both parts
    assert sent("He said") == 'He said "It is the U.S.'


@pytest.mark.bad_input
def test_structural_problems_are_listed_with_their_paths_and_nothing_is_written(tmp_path):
    data = squad_v2()
    del data["data"][0]["paragraphs"][0]["qas"][0]["question"]
    data["data"][0]["paragraphs"][1]["qas"][0]["answers"][0]["answer_start"] = "10"
    data["data"][1]["title"] = ""
    with pytest.raises(InvalidData) as e:
        import_squad(write(tmp_path, data), tmp_path / "corpus", tmp_path / "q.jsonl")
    msg = str(e.value)
    assert "3 problem(s)" in msg
    assert "data[0].paragraphs[0].qas[0]: missing 'question'" in msg
    assert "data[0].paragraphs[1].qas[0].answers[0].answer_start: expected an integer, found str" in msg
    assert "data[1].title: empty" in msg
    assert not (tmp_path / "corpus").exists() and not (tmp_path / "q.jsonl").exists()


@pytest.mark.bad_input
@pytest.mark.parametrize("content, expected", [
    ("{not json", "not valid JSON"),
    ('{"version": "v2.0"}', "expected an object with a 'data' list"),
    ("[]", "expected an object with a 'data' list"),
])
def test_not_squad(tmp_path, content, expected):
    (tmp_path / "x.json").write_text(content)
    with pytest.raises(InvalidData, match=expected):
        import_squad(tmp_path / "x.json", tmp_path / "c", tmp_path / "q.jsonl")


@pytest.mark.bad_input
def test_missing_file_unknown_mode_bad_track(tmp_path):
    with pytest.raises(MissingInput, match="does not exist"):
        import_squad(tmp_path / "nope.json", tmp_path / "c", tmp_path / "q.jsonl")
    src = write(tmp_path, squad_v2())
    with pytest.raises(UserError, match="unknown span mode 'paragraph'; expected one of: answer, sentence"):
        import_squad(src, tmp_path / "c", tmp_path / "q.jsonl", span="paragraph")
    with pytest.raises(DatasetImportError, match="cannot be a corpus folder"):
        import_squad(src, tmp_path / "c", tmp_path / "q.jsonl", track="../x")


@pytest.mark.bad_input
def test_all_dropped_writes_nothing(tmp_path):
    data = {"data": [{"title": "T", "paragraphs": [{"context": CTX_C, "qas": [
        _qa("x", "Population?", [("1.7 million", CTX_C.index("1.7 million"))])]}]}]}
    with pytest.raises(NothingImported, match=r"no question left(.|\n)*1 span_too_short"):
        import_squad(write(tmp_path, data), tmp_path / "c", tmp_path / "q.jsonl")
    assert not (tmp_path / "c").exists() and not (tmp_path / "q.jsonl").exists()


@pytest.mark.bad_input
def test_existing_outputs_need_overwrite_which_replaces_the_track(tmp_path):
    src = write(tmp_path, squad_v2())
    corpus, qfile = tmp_path / "corpus", tmp_path / "q.jsonl"
    (corpus / "squad").mkdir(parents=True)
    (corpus / "squad" / "stale.md").write_text("old import\n")
    (corpus / "handbook").mkdir()
    (corpus / "handbook" / "keep.md").write_text("another track\n")
    with pytest.raises(DatasetImportError, match="already exist.*overwrite=True"):
        import_squad(src, corpus, qfile)
    assert (corpus / "squad" / "stale.md").exists() and not qfile.exists()
    import_squad(src, corpus, qfile, overwrite=True)
    assert sorted(p.relative_to(corpus).as_posix() for p in corpus.rglob("*") if p.is_file()) == [
        "handbook/keep.md", "squad/Super_Bowl_50.md", "squad/Warsaw.md"]
    assert not [p for p in corpus.iterdir() if p.name.startswith(".")]  # no staging left behind


@pytest.mark.bad_input
def test_a_failure_while_writing_leaves_the_previous_outputs(tmp_path, monkeypatch):
    src = write(tmp_path, squad_v2())
    corpus, qfile = tmp_path / "corpus", tmp_path / "q.jsonl"
    import_squad(src, corpus, qfile, span="sentence")
    before = {p: p.read_bytes() for p in [qfile, *corpus.rglob("*.md")]}

    real_replace = os.replace
    def failing_replace(a, b):
        if str(b) == str(qfile):
            raise OSError("disk full")
        return real_replace(a, b)
    monkeypatch.setattr(imports.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        import_squad(src, corpus, qfile, span="answer", overwrite=True)
    # the track was swapped in before the failure: it is put back, and nothing is left behind
    assert {p: p.read_bytes() for p in [qfile, *corpus.rglob("*.md")]} == before
    assert not [p for p in [*corpus.iterdir(), *tmp_path.iterdir()] if p.name.startswith(".")]


# ---------------------------------------------------------------------------------------------
# --sample N --seed S: stratified by article, after the drops

ARTICLE_QUESTIONS = {"Alpha": 9, "Beta": 5, "Gamma": 3, "Delta": 1}  # questions kept per article (18)


def stratified_squad() -> dict:
    """Four articles of two paragraphs; article t holds ARTICLE_QUESTIONS[t] questions that are
    kept (every third one unanswerable) and one dropped as span_too_short."""
    data = []
    for title, n in ARTICLE_QUESTIONS.items():
        ctx = [f"The first paragraph about {title} is long enough to hold an answer of its own.",
               f"The second paragraph about {title} holds the other answers, and it is long enough too."]
        qas: list[list[dict]] = [[], []]
        for i in range(n):
            p = i % 2
            if i % 3 == 2:
                qas[p].append(_qa(f"{title}-{i}", f"Impossible question {i} on {title}?", impossible=True))
            else:
                ans = f"paragraph about {title}"
                qas[p].append(_qa(f"{title}-{i}", f"Question {i} on {title}?", [(ans, ctx[p].index(ans))]))
        qas[0].append(_qa(f"{title}-short", "Too short?", [(title, ctx[0].index(title))]))
        data.append({"title": title, "paragraphs": [{"context": c, "qas": q} for c, q in zip(ctx, qas)]})
    return {"version": "v2.0", "data": data}


def per_article(ids) -> dict[str, int]:
    titles = [i.rsplit("-", 1)[0] for i in ids]
    return {t: titles.count(t) for t in ARTICLE_QUESTIONS}


def largest_remainder(counts: dict[str, int], size: int) -> dict[str, int]:
    """docs/datasets.md's rule: each article's exact share size*c/n rounded down, plus one for the
    articles with the largest remainders (size*c % n; these counts have no equal remainders)."""
    n = sum(counts.values())
    floors = {t: size * c // n for t, c in counts.items()}
    top = sorted(counts, key=lambda t: -(size * counts[t] % n))[: size - sum(floors.values())]
    return {t: floors[t] + (t in top) for t in counts}


@pytest.mark.parametrize("doc", ["article", "paragraph"])
@pytest.mark.parametrize("size, expected", [(7, {"Alpha": 4, "Beta": 2, "Gamma": 1, "Delta": 0}),
                                            (10, {"Alpha": 5, "Beta": 3, "Gamma": 2, "Delta": 0}),
                                            (13, {"Alpha": 6, "Beta": 4, "Gamma": 2, "Delta": 1})])
def test_sample_is_stratified_by_article_by_the_largest_remainder(tmp_path, size, expected, doc):
    src = write(tmp_path, stratified_squad())
    full = import_squad(src, tmp_path / "all", tmp_path / "all.jsonl", doc=doc)
    report = import_squad(src, tmp_path / "c", tmp_path / "q.jsonl", doc=doc, sample=size, seed=0)
    ids = [q.id for q in load_questions(tmp_path / "q.jsonl")]
    all_ids = [q.id for q in load_questions(tmp_path / "all.jsonl")]
    assert per_article(all_ids) == ARTICLE_QUESTIONS
    assert per_article(ids) == expected == largest_remainder(ARTICLE_QUESTIONS, size)
    assert ids == [i for i in all_ids if i in ids]  # file order kept, within each article too
    # drawn after the drops: the dropped counts are the whole file's, and the report says what was sampled
    assert report.dropped == full.dropped == {"span_too_short": 4}
    assert (report.questions, report.sample.requested, report.sample.available) == (size, size, 18)
    assert f"sample: {size} of the 18 question(s) left after dropping (seed 0, stratified by article)" \
        in report.summary()
    assert report.sample.available + report.n_dropped == report.read["questions"] == 22
    # every document is written, the sampled-out articles' (Delta at 7 and 10) included
    assert sorted(p.name for p in (tmp_path / "c" / "squad").iterdir()) == \
        sorted(p.name for p in (tmp_path / "all" / "squad").iterdir())
    check_spans(load_questions(tmp_path / "q.jsonl"), load_corpus(tmp_path / "c"))


def test_sample_is_deterministic_per_seed_and_differs_between_seeds(tmp_path):
    src = write(tmp_path, stratified_squad())
    def sample(seed, name):
        import_squad(src, tmp_path / name, tmp_path / f"{name}.jsonl", sample=7, seed=seed)
        return (tmp_path / f"{name}.jsonl").read_bytes()
    assert sample(3, "a") == sample(3, "b")
    samples = {sample(seed, f"s{seed}") for seed in range(6)}
    assert len(samples) > 1
    for text in samples:  # every seed follows the same allocation
        assert per_article(json.loads(line)["id"] for line in text.decode().splitlines()) == \
            {"Alpha": 4, "Beta": 2, "Gamma": 1, "Delta": 0}


def test_sample_of_at_least_the_questions_left_writes_them_all(tmp_path):
    src = write(tmp_path, stratified_squad())
    import_squad(src, tmp_path / "all", tmp_path / "all.jsonl")
    for size in (18, 1000):
        report = import_squad(src, tmp_path / "c", tmp_path / "q.jsonl", sample=size, seed=5, overwrite=True)
        assert (tmp_path / "q.jsonl").read_bytes() == (tmp_path / "all.jsonl").read_bytes()
        assert report.sample.written == report.questions == 18
        assert f"asked for {size:,} question(s), 18 left after dropping: all 18 written (no sampling)" \
            in report.summary()


@pytest.mark.bad_input
@pytest.mark.parametrize("size", [0, -1])
def test_sample_below_one_is_refused_and_nothing_written(tmp_path, size):
    src = write(tmp_path, stratified_squad())
    with pytest.raises(DatasetImportError, match=rf"sample size {size} is not a positive whole number"):
        import_squad(src, tmp_path / "c", tmp_path / "q.jsonl", sample=size)
    assert not (tmp_path / "c").exists() and not (tmp_path / "q.jsonl").exists()


# ---------------------------------------------------------------------------------------------
# --doc paragraph


@pytest.mark.parametrize("span", ["answer", "sentence"])
def test_paragraph_documents_hold_their_questions_spans(tmp_path, span):
    src = write(tmp_path, squad_v2())
    corpus, qfile = tmp_path / "corpus", tmp_path / "q.jsonl"
    report = import_squad(src, corpus, qfile, span=span, doc="paragraph")
    docs = {d.doc: d.text for d in load_corpus(corpus)}
    assert docs == {"squad/Super_Bowl_50.p0000.md": f"# Super Bowl 50\n\n{CTX_A}\n",
                    "squad/Super_Bowl_50.p0001.md": f"# Super Bowl 50\n\n{CTX_B}\n",
                    "squad/Warsaw.p0000.md": f"# Warsaw\n\n{CTX_C}\n"}
    assert report.documents == 3
    questions = load_questions(qfile)  # the pipeline's own reading and check
    check_spans(questions, load_corpus(corpus))
    for q in questions:
        if q.answerable:
            assert q.span in docs[q.doc]
    by_id = {q.id: q for q in questions}
    assert by_id["a1"].doc == "squad/Super_Bowl_50.p0000.md" and by_id["a3"].doc is None
    # the same questions as one document per article, only their documents differ
    import_squad(src, tmp_path / "art", tmp_path / "art.jsonl", span=span)
    assert [(q.id, q.span) for q in load_questions(tmp_path / "art.jsonl")] == [(q.id, q.span) for q in questions]


def test_paragraph_names_number_merged_articles_on_and_stay_safe(tmp_path):
    long_title = "L" * 150
    data = {"data": [
        {"title": "AC/DC", "paragraphs": [{"context": CTX_A, "qas": [_qa("x1", "Who won?", [(LONG, CTX_A.index(LONG))])]},
                                          {"context": "  ", "qas": []}]},
        {"title": long_title, "paragraphs": [{"context": CTX_C, "qas": []}]},
        {"title": "AC/DC", "paragraphs": [{"context": CTX_B, "qas": [_qa("x2", "Impossible?", impossible=True)]}]},
    ]}
    report = import_squad(write(tmp_path, data), tmp_path / "c", tmp_path / "q.jsonl", doc="paragraph")
    names = sorted(p.name for p in (tmp_path / "c" / "squad").iterdir())
    acdc = imports.safe_file_name("AC/DC")
    assert acdc.startswith("AC_DC-")
    # paragraphs[1] of the first AC/DC is empty (no document); the second AC/DC article numbers on from 2
    assert [n for n in names if n.startswith(acdc)] == [f"{acdc}.p0000.md", f"{acdc}.p0002.md"]
    [long_name] = [n for n in names if n.startswith("L")]
    assert len(long_name) <= imports.MAX_NAME + 9 + len(".md")
    assert report.notes == {"empty_context": 1, "merged_title": 1}
    check_spans(load_questions(tmp_path / "q.jsonl"), load_corpus(tmp_path / "c"))
    assert import_squad(write(tmp_path, data), tmp_path / "c", tmp_path / "q.jsonl", doc="paragraph",
                        overwrite=True).to_json() == report.to_json()  # deterministic
    assert sorted(p.name for p in (tmp_path / "c" / "squad").iterdir()) == names


@pytest.mark.bad_input
def test_unknown_document_unit(tmp_path):
    with pytest.raises(UserError, match="unknown document unit 'sentence'; expected one of: article, paragraph"):
        import_squad(write(tmp_path, squad_v2()), tmp_path / "c", tmp_path / "q.jsonl", doc="sentence")
    assert not (tmp_path / "c").exists()


# ---------------------------------------------------------------------------------------------
# the span_too_short hint


def test_sentence_hint_only_where_it_applies(tmp_path):
    src = write(tmp_path, squad_v2())
    answer = import_squad(src, tmp_path / "a", tmp_path / "a.jsonl", span="answer")
    assert "--span sentence keeps more" in answer.reasons["span_too_short"]
    assert "--span sentence keeps more" in answer.summary()
    # with sentence spans a sentence under --min-span is still dropped, and no hint says to do what was done
    sentence = import_squad(src, tmp_path / "s", tmp_path / "s.jsonl", span="sentence", min_span=40)
    assert sentence.dropped["span_too_short"] >= 1
    assert sentence.reasons["span_too_short"] == "span shorter than the minimum (--min-span, at least the question " \
                                                "format's own): fewer than 40 characters"
    assert "keeps more" not in sentence.summary()
