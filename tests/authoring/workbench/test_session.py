"""session: write mode (sampled passages, resumable) and audit mode (a config's misses)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rag_ablation.data.passages import sample_passages
from rag_ablation.authoring.workbench.session import (AuditMode, Refused, Workbench, WorkbenchError, WriteMode,
                                                      corpus_digest, interleaved, locate, next_id, passage_key)
from rag_ablation.core.io import write_json
from rag_ablation.data.passages import Passage
from rag_ablation.core.errors import UserError
from rag_ablation.data.corpus import load_corpus
from rag_ablation.data.questions import check_spans, load_questions
from rag_ablation.evaluation.scoring.audit import load_audit

from workbench_tiny_project import ROOT, audit_project


def form(p, span, **over):
    """The page's form for passage ``p`` with ``span`` selected in it."""
    return {"passage": p["index"], "question": "How many bikes may ride one crossing of the boat?", "span": span,
            "span_start": p["text"].find(span), "answer": "Twelve.", "slice": "main",
            "id": p["suggested_ids"]["main"], **over}


def test_passages_come_in_the_chapters_seeded_order_and_a_rerun_resumes(project):
    proj, params = project
    sample, _ = sample_passages(proj.corpus, per_track=params.workbench.per_track, seed=params.workbench.seed)
    write = WriteMode(Workbench(proj, params))
    first = write.next()
    assert (first["total"], first["done"]) == (len(sample), 0)
    assert first["passage"]["text"] == sample[0].text and first["passage"]["doc"] == sample[0].doc
    span = first["passage"]["text"][40:100].strip()
    saved = write.save(form(first["passage"], span))
    assert saved["id"] == "main-ferries-01" and saved["span"] == span and saved["doc"] == sample[0].doc
    line = proj.questions.read_text(encoding="utf-8").splitlines()[-1]
    assert json.loads(line) == saved
    write.skip({"passage": 1, "reason": "code_table"})
    again = WriteMode(Workbench(proj, params)).next()  # a new session: the restart
    assert again["done"] == 2 and again["passage"]["text"] == sample[2].text
    assert again["passage"]["suggested_ids"]["main"] == "main-trams-01"
    log = [json.loads(x) for x in proj.log.read_text(encoding="utf-8").splitlines()]
    start = sample[0].start + sample[0].text.find(span)
    assert log[0] == {"kind": "question", "id": saved["id"], "mode": "write", "passage": passage_key(sample[0]),
                      "doc": sample[0].doc, "start": start, "end": start + len(span),
                      "corpus": corpus_digest(load_corpus(proj.corpus))}
    assert len(log[0]["corpus"]) == 16
    assert load_corpus(proj.corpus)[0].text[start:start + len(span)] == span, "offsets kept in the document"


def test_what_write_mode_writes_passes_the_questions_stage(project, tmp_path):
    proj, params = project
    write = WriteMode(Workbench(proj, params))
    for _ in range(3):
        p = write.next()["passage"]
        write.save(form(p, p["text"][10:80].strip(), question=f"What does passage {p['index']} say about it?"))
    questions = load_questions(proj.questions, min_span=params.labels.min_span)
    check_spans(questions, load_corpus(proj.corpus))
    res = subprocess.run([sys.executable, str(ROOT / "stages" / "questions.py"), "--corpus", str(proj.corpus),
                          "--questions", str(proj.questions), "--out", "build/q.jsonl", "--metrics", "build/m.json"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "build/m.json").read_text())["n_questions"] == 3


@pytest.mark.bad_input
def test_write_mode_refuses_what_the_pipeline_would(bench):
    write = WriteMode(bench)
    p = write.next()["passage"]
    span = p["text"][40:100].strip()
    write.save(form(p, span))
    p2 = write.next()["passage"]
    cases = {
        "span not found in": form(p2, "a span typed by hand that the corpus does not hold"),
        "expected at least 20 (labels.min_span)": form(p2, "ten knots", id="main-ferries-02"),
        "duplicate id 'main-ferries-01'": form(p2, p2["text"][5:60].strip(), id="main-ferries-01"),
        "field 'question' must be a non-empty string": form(p2, p2["text"][5:60].strip(), question="  "),
    }
    for fragment, payload in cases.items():
        with pytest.raises(Refused) as e:
            write.save(payload)
        assert any(fragment in m for m in e.value.problems), (fragment, e.value.problems)
        assert write.check(payload).problems == e.value.problems
    assert len(bench.questions()) == 1, "nothing refused was written"
    with pytest.raises(WorkbenchError, match="must be an index from 0 to 3"):
        write.save({**form(p2, span), "passage": "../../etc/passwd"})
    with pytest.raises(UserError, match="unknown skip reason 'bored'; expected one of: code_table, skip"):
        write.skip({"passage": 0, "reason": "bored"})


@pytest.mark.bad_input
def test_a_track_too_small_for_per_track_says_which_key(project):
    proj, params = project
    from dataclasses import replace

    params = replace(params, workbench=replace(params.workbench, per_track=5))
    with pytest.raises(WorkbenchError, match=r"cannot sample passages: track 'ferries' has only 2 eligible .*"
                                             r"\(workbench.per_track in params.yaml\)"):
        WriteMode(Workbench(proj, params)).next()


def test_helpers():
    from rag_ablation.data.corpus import Document

    one, two = Document("a/x.md", "a", "text"), Document("a/y.md", "a", "more")
    assert corpus_digest([one, two]) == corpus_digest([two, one]) != corpus_digest([one])
    assert next_id(["main-a-01", "main-a-07", "main-b-09", "main-a-x"], "main", "a") == "main-a-08"
    assert next_id([], "paraphrase", "b") == "paraphrase-b-01"
    assert locate("ab", "ab cd ab", near=5) == 6 and locate("ab", "ab cd ab") == 0 and locate("zz", "ab") is None


def test_audit_mode_shows_the_misses_and_writes_accepted_passages(project):
    proj, params = project
    passages = audit_project(proj, params)
    audit = AuditMode(Workbench(proj, params))
    assert list(audit.configs()) == ["dense"]
    shown = audit.next("dense")
    k = params.workbench.audit_k
    assert (shown["missed"], shown["open"], shown["k"]) == (1, 1, k), "rank 3 > audit_k = 2 is a miss; rank 1 is not"
    assert shown["question"]["id"] == "main-trams-01"
    assert [p["chunk"] for p in shown["passages"]] == ["trams/maintenance.md#1", "ferries/operations.md#0"][:k]
    span = "Wheels are turned on the lathe at Eastgate"
    with pytest.raises(Refused, match="select the span with the mouse inside the passage"):
        audit.accept({"config": "dense", "id": "main-trams-01", "chunk": "ferries/operations.md#0", "span": span,
                      "note": "x"})
    with pytest.raises(Refused, match="field 'note' must be a non-empty string"):
        audit.accept({"config": "dense", "id": "main-trams-01", "chunk": "trams/maintenance.md#1", "span": span,
                      "note": ""})
    written = audit.accept({"config": "dense", "id": "main-trams-01", "chunk": "trams/maintenance.md#1",
                            "span": span, "note": "same depot"})
    assert written == {"id": "main-trams-01", "doc": "trams/maintenance.md", "span": span, "note": "same depot"}
    assert span in passages["trams/maintenance.md#1"]
    after = AuditMode(Workbench(proj, params)).next("dense")  # a restart
    assert [p["decision"] for p in after["passages"]] == ["accepted", None]
    audit.reject({"config": "dense", "id": "main-trams-01", "chunk": "ferries/operations.md#0"})
    done = audit.next("dense")
    assert (done["open"], done["question"]) == (0, None)
    lines = load_audit(proj.audit, Workbench(proj, params).questions(), load_corpus(proj.corpus))
    assert [a.span for a in lines] == [span]


@pytest.mark.bad_input
def test_audit_mode_names_only_known_configs_questions_and_passages(project):
    proj, params = project
    audit_project(proj, params)
    audit = AuditMode(Workbench(proj, params))
    with pytest.raises(UserError, match=r"config 'bm25' has no misses to audit: no run file \(run `dvc repro`\); "
                       r"pick one of: dense$"):
        audit.next("bm25")
    with pytest.raises(UserError, match=r"unknown config that ran .* '../../../etc/passwd'; expected one of: dense$"):
        audit.next("../../../etc/passwd")
    with pytest.raises(UserError, match="unknown question dense missed 'main-ferries-01'"):
        audit.reject({"config": "dense", "id": "main-ferries-01", "chunk": "ferries/operations.md#0"})
    with pytest.raises(UserError, match="unknown passage of main-trams-01's top 2 'trams/maintenance.md#0'"):
        audit.reject({"config": "dense", "id": "main-trams-01", "chunk": "trams/maintenance.md#0"})


def test_interleaved_takes_the_tracks_in_turn():
    def p(track, n):
        return Passage(f"{track}/x.md", track, n, n + 1, "t")

    passages = [p("b", 0), p("a", 0), p("a", 1), p("c", 0), p("a", 2), p("c", 1)]
    # a's passages are 1, 2, 4; b's 0; c's 3, 5: the first of a, b, c, then the second of a, c, then a's third
    assert interleaved(passages) == [1, 0, 3, 2, 5, 4]
    assert sorted(interleaved(passages)) == list(range(len(passages))) and interleaved([]) == []


def test_write_mode_interleaves_the_tracks_or_walks_the_one_chosen(project):
    proj, params = project
    write = WriteMode(Workbench(proj, params))
    assert [p.track for p in write.passages] == ["ferries", "ferries", "trams", "trams"]
    first = write.next()
    assert first["passage"]["index"] == 0 and first["track"] == ""
    assert first["tracks"] == {"ferries": {"total": 2, "done": 0}, "trams": {"total": 2, "done": 0}}
    write.skip({"passage": 0, "reason": "skip"})
    second = write.next()
    assert second["passage"]["index"] == 2, "the second passage shown is the other track's first"
    assert second["tracks"]["ferries"] == {"total": 2, "done": 1} and second["done"] == 1
    assert write.next("ferries")["passage"]["index"] == 1, "a chosen track: its passages in sample order"
    assert write.next("trams")["passage"]["index"] == 2
    write.skip({"passage": 1, "reason": "skip"})
    assert write.next("ferries")["passage"] is None and write.next()["passage"]["index"] == 2


@pytest.mark.bad_input
def test_an_unknown_track_is_refused_listing_the_samples(bench):
    with pytest.raises(UserError, match="unknown track 'buses'; expected one of: ferries, trams"):
        WriteMode(bench).next("buses")


def test_undo_takes_back_the_last_saved_questions_and_their_passages_come_back(project):
    proj, params = project
    hand = {"id": "main-ferries-09", "question": "How many bikes may ride one crossing?", "doc": "ferries/operations.md",
            "span": "the limit of twelve bicycles per", "answer": "Twelve.", "slice": "main", "track": "ferries"}
    proj.questions.write_text(json.dumps(hand) + "\n", encoding="utf-8")
    bench = Workbench(proj, params)
    write = WriteMode(bench)
    before = proj.questions.read_bytes()
    assert bench.undoable() is None
    with pytest.raises(Refused, match="nothing to undo: the last line of .* is not a question saved in the workbench"):
        bench.undo("main-ferries-09")
    p0 = write.next()["passage"]  # passage 0 holds the hand-written span: done, so the next is shown
    assert p0["index"] == 2
    first = write.save(form(p0, p0["text"][40:100].strip(), id="main-trams-01"))
    after_first = proj.questions.read_bytes()
    p1 = write.next()["passage"]
    second = write.save(form(p1, p1["text"][30:90].strip(), id="main-ferries-10"))
    listed = bench.saved_list()
    assert listed["total"] == 3 and listed["undo"] == second["id"]
    assert [q["id"] for q in listed["questions"]] == [second["id"], first["id"], hand["id"]], "newest first"
    assert listed["questions"][0]["spans"] == [second["span"]] and listed["file"] == str(proj.questions)

    with pytest.raises(Refused, match="only the last saved question can be undone, and that is 'main-ferries-10'"):
        bench.undo(first["id"])
    undone = write.undo({"id": second["id"]})
    assert undone["undone"] == second and undone["mode"] == "write"
    assert undone["passage"]["index"] == p1["index"] and undone["passage"]["text"] == p1["text"]
    assert p1["text"][undone["span_start"]:].startswith(second["span"]), "the span's offset in its passage"
    assert proj.questions.read_bytes() == after_first, "the file as it was before the save, byte for byte"
    assert write.next()["passage"]["index"] == p1["index"], "its passage is to do again"
    assert write.undo({"id": first["id"]})["passage"]["index"] == 2, "undo again: the save before"
    assert proj.questions.read_bytes() == before and bench.undoable() is None, "the hand-written line is never undone"

    again = WriteMode(Workbench(proj, params))  # a restart keeps the undos
    assert again.next()["done"] == 1 and again.next()["passage"]["index"] == 2
    resaved = again.save(form(p0, p0["text"][40:100].strip(), id="main-trams-01"))
    assert again.bench.undoable() == resaved["id"] == first["id"], "an undone id is free again"
    kinds = [(e["kind"], e["id"]) for e in again.bench.log.events()]
    assert kinds == [("question", "main-trams-01"), ("question", "main-ferries-10"), ("undo", "main-ferries-10"),
                     ("undo", "main-trams-01"), ("question", "main-trams-01")]


@pytest.mark.bad_input
def test_undo_leaves_a_line_edited_in_by_hand(bench):
    write = WriteMode(bench)
    p = write.next()["passage"]
    saved = write.save(form(p, p["text"][40:100].strip()))
    with bench.project.questions.open("a", encoding="utf-8") as f:  # the editor adds a line after the save
        f.write(json.dumps({**saved, "id": "main-ferries-99"}) + "\n")
    before = bench.project.questions.read_bytes()
    with pytest.raises(Refused, match="nothing to undo"):
        write.undo({"id": saved["id"]})
    assert bench.project.questions.read_bytes() == before and "undo" not in {e["kind"] for e in bench.log.events()}


def test_the_audit_menu_lists_only_the_configs_that_ran(project):
    proj, params = project
    audit_project(proj, params)  # dense: a run file and scores
    write_json(proj.runs / "rewrite.json", {"config": "rewrite", "status": "unavailable",
                                                  "reason": "the LLM is off", "passages": {}, "questions": []})
    write_json(proj.runs / "bm25.json", {"config": "bm25", "status": "ok", "reason": None, "passages": {},
                                         "questions": []})  # a run file, but no scores of it
    audit = AuditMode(Workbench(proj, params))
    listing = audit.listing()
    assert listing["configs"] == audit.configs() == ["dense"] and listing["k"] == params.workbench.audit_k
    left = listing["left_out"]
    assert set(left) == set(params.retrieval) - {"dense"}
    assert left["rewrite"] == "did not run (unavailable: the LLM is off)"
    assert left["bm25"] == "not in the scores file (run `dvc repro`)"
    assert left["hyde"] == "no run file (run `dvc repro`)"
    with pytest.raises(UserError, match=r"config 'rewrite' has no misses to audit: did not run \(unavailable"):
        audit.next("rewrite")
