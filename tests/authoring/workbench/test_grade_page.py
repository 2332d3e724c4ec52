"""The workbench's "Grade answers" mode through its JSON API (rag_ablation.authoring.grade_page):
the screen's content, grades written whole, the order, and refusals. Fixtures: the tiny workbench
project with the answers of tests/grade_answers.py (2 configs x 4 questions) built beside it."""
from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
from grade_answers import ANSWERS, PASSAGES, QUESTIONS, grade_of, make_project
from starlette.testclient import TestClient

from rag_ablation.authoring.workbench.app import create_app, own_hosts
from rag_ablation.authoring.grade_page import GradeMode, GradeSource
from rag_ablation.authoring.workbench.store import STALE_SECONDS
from rag_ablation.evaluation.judges.grades import answer_sha256, load_grades, write_grades

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
PAGE = {"Origin": BASE, "X-Workbench": "1"}
GRADES = Path("data/labels/grades.jsonl")


def source(order: str = "listed", **kw) -> GradeSource:
    return GradeSource(**{"answers": Path("data/build/answers"), "questions": Path("data/build/questions.jsonl"),
                          "runs": Path("data/build/runs"), "grades": GRADES, "grader": "tess", "order": order,
                          "seed": 0, "score_dir": Path("metrics/scores"), "score_judge": "token_f1", **kw})


@pytest.fixture
def built(bench, tmp_path):
    make_project(tmp_path)
    return bench


def client_of(bench, grading: GradeSource | None, say=None) -> TestClient:
    mode = GradeMode(grading, say=say) if grading is not None else None
    return TestClient(create_app(bench, hosts=own_hosts(PORT), grading=mode), base_url=BASE, headers=PAGE)


def target(view: dict) -> dict:
    a = view["answer"]
    return {"config": a["config"], "id": a["id"], "answer_sha256": a["answer_sha256"]}


def test_the_screen_shows_question_reference_answer_and_the_passages_seen(built):
    c = client_of(built, source())
    view = c.post("/api/grade/next", json={}).json()
    a = view["answer"]
    q1 = next(q for q in QUESTIONS if q["id"] == "q1")
    assert (view["position"], view["total"], view["graded"], view["order"]) == (1, 8, 0, "listed")
    assert (a["config"], a["id"], a["answer"], a["answer_sha256"]) == ("dense", "q1", ANSWERS["dense"]["q1"],
                                                                      answer_sha256(ANSWERS["dense"]["q1"]))
    assert (a["question"], a["reference"]) == (q1["question"], q1["answer"])
    assert a["passages"] == [{"id": "t/a.md#0", "text": PASSAGES["t/a.md#0"]}, {"id": "t/b.md#0", "text": PASSAGES["t/b.md#0"]}]
    assert view["unavailable"] and "hyde" in view["unavailable"][0]


def test_grades_are_written_whole_with_notes_back_replaces_and_skip_writes_nothing(built):
    c = client_of(built, source())
    view = c.post("/api/grade/next", json={}).json()
    r = c.post("/api/grade/save", json={**target(view), "verdict": "correct", "note": "names the port"})
    assert r.status_code == 200 and r.json()["saved"] == {"config": "dense", "id": "q1", "verdict": "correct",
                                                          "note": "names the port", "support": None}
    view = r.json()
    assert view["answer"]["id"] == "q2" and view["graded"] == 1
    assert load_grades(GRADES) == [grade_of("dense", "q1", "correct", grader="tess", note="names the port")]
    view = c.post("/api/grade/skip", json=target(view)).json()
    assert view["answer"]["id"] == "q3" and len(load_grades(GRADES)) == 1
    view = c.post("/api/grade/back", json={}).json()
    view = c.post("/api/grade/back", json={}).json()
    assert view["answer"]["id"] == "q1" and view["answer"]["previous"]["verdict"] == "correct"
    c.post("/api/grade/save", json={**target(view), "verdict": "incorrect", "note": ""})
    assert load_grades(GRADES) == [grade_of("dense", "q1", "incorrect", grader="tess", note="names the port")]
    lines = c.post("/api/grade/summary", json={}).json()["lines"]
    assert any("graded this session: 1 (0 correct, 1 incorrect), skipped 1" in x for x in lines)


def test_a_rerun_resumes_and_keeps_other_grades(built):
    write_grades(GRADES, [grade_of("dense", "q1", "correct"), grade_of("hybrid", "q9", "correct", answer="gone")])
    view = client_of(built, source()).post("/api/grade/next", json={}).json()
    assert view["answer"]["id"] == "q2" and view["total"] == 7
    client_of(built, source()).post("/api/grade/save", json={**target(view), "verdict": "correct", "note": ""})
    assert {g.id for g in load_grades(GRADES)} == {"q1", "q2", "q9"}


def write_scores(tmp_path: Path) -> None:
    scores = tmp_path / "metrics/scores"
    scores.mkdir(parents=True)
    (scores / "answers.csv").write_text("config,id,token_f1\n" + "".join(
        f"{cfg},{q},0.{i}\n" for i, (cfg, q) in enumerate((c, q) for c in ANSWERS for q in ANSWERS[c])))


def test_active_order_records_sampling_and_shows_the_estimate(built, tmp_path):
    write_scores(tmp_path)
    c = client_of(built, source("active", seed=3))
    view = c.post("/api/grade/next", json={}).json()
    assert "no grade in active order" in view["estimate"]
    view = c.post("/api/grade/save", json={**target(view), "verdict": "correct", "note": ""}).json()
    (g,) = load_grades(GRADES)
    assert g.sampling is not None and (g.sampling.draw, g.sampling.seed, g.sampling.population) == (1, 3, 8)
    assert "from the first 1 draw(s)" in view["estimate"]


def test_a_restarted_server_continues_the_active_draws_the_estimate_and_the_progress(built, tmp_path):
    write_scores(tmp_path)
    c = client_of(built, source("active", seed=3))
    view = c.post("/api/grade/next", json={}).json()
    for verdict in ("correct", "incorrect"):
        view = c.post("/api/grade/save", json={**target(view), "verdict": verdict, "note": ""}).json()
    assert (view["position"], view["total"], view["graded"], view["in_scope"]) == (3, 8, 2, 8)
    before = view["estimate"]
    assert before.endswith("from the first 2 draw(s)")
    restarted = client_of(built, source("active", seed=3))  # a new mode reads the files again, as a restart does
    view = restarted.post("/api/grade/next", json={}).json()
    assert (view["position"], view["total"], view["graded"], view["in_scope"]) == (1, 6, 2, 8)
    assert view["estimate"] == before  # not "no grade" nor "1 draw": the same draws
    restarted.post("/api/grade/save", json={**target(view), "verdict": "correct", "note": ""})
    assert sorted(g.sampling.draw for g in load_grades(GRADES)) == [1, 2, 3]


def test_every_answer_graded_by_someone_else_is_said_in_words(built, tmp_path):
    write_scores(tmp_path)
    write_grades(GRADES, [grade_of(c, q, "correct" if q == "q1" else "incorrect", grader="maintainer-1")
                          for c in ANSWERS for q in ANSWERS[c]])
    view = client_of(built, source("active")).post("/api/grade/next", json={}).json()
    assert (view["answer"], view["total"], view["graded"], view["in_scope"]) == (None, 0, 8, 8)
    assert view["end"] == "All 8 answers in scope are graded (8 by maintainer-1): nothing is left to grade."
    assert view["estimate"] == ("active estimate: none needed: every one of the 8 answers in scope is graded "
                                "(2 correct), so their accuracy is 0.250 exactly")


def test_the_end_of_a_session_says_what_is_graded_and_what_was_skipped(built):
    c = client_of(built, source())
    view = c.post("/api/grade/next", json={}).json()
    assert view["end"] is None
    for n in range(8):
        view = (c.post("/api/grade/skip", json=target(view)) if n == 3 else
                c.post("/api/grade/save", json={**target(view), "verdict": "correct", "note": ""})).json()
    assert view["answer"] is None and view["end"] == (
        "End of the list: 7 of the 8 answers in scope are graded (7 by tess), 1 not yet. This session's list held 8: "
        "7 graded, 1 skipped (shown again next time).")


def test_a_killed_saves_temporary_file_is_removed_and_said_only_when_older_than_60_s(built):
    GRADES.parent.mkdir(parents=True, exist_ok=True)
    stale, fresh = GRADES.parent / ".grades.jsonl.k3j9x2.tmp", GRADES.parent / ".grades.jsonl.a1b2c3.tmp"
    for tmp in (stale, fresh):
        tmp.write_text('{"answer_sha256": "')
    assert STALE_SECONDS == 60
    os.utime(stale, (time.time() - 61,) * 2)
    os.utime(fresh, (time.time() - 50,) * 2)  # perhaps another process's save, still running
    said: list[str] = []
    c = client_of(built, source(), say=said.append)
    assert said == [] and stale.exists()  # the mode starts on its first request
    c.post("/api/grade/next", json={})
    assert said == [f"rag-ablation label: removed {stale}, left by a grade save that was killed (the grades file is "
                    f"whole and keeps every grade that was acknowledged)"]
    assert not stale.exists() and fresh.exists()
    c.post("/api/grade/next", json={})
    assert len(said) == 1


@pytest.mark.bad_input
def test_a_grade_for_another_answer_than_the_one_shown_is_refused_and_nothing_is_written(built):
    c = client_of(built, source())
    view = c.post("/api/grade/next", json={}).json()
    r = c.post("/api/grade/save", json={**target(view), "id": "q2", "verdict": "correct", "note": ""})
    assert r.status_code == 422 and "reload the page" in r.json()["problems"][0]
    r = c.post("/api/grade/save", json={**target(view), "answer_sha256": "0" * 64, "verdict": "correct", "note": ""})
    assert r.status_code == 422
    assert not GRADES.exists()


@pytest.mark.bad_input
@pytest.mark.parametrize("body,message", [
    ({"verdict": "maybe", "note": ""}, "verdict 'maybe' is not one of correct, incorrect"),
    ({"verdict": "correct"}, "missing field 'note'"),
    ({"verdict": "correct", "note": "", "extra": 1}, "unknown field 'extra'"),
    ({"verdict": 1, "note": ""}, "field 'verdict' must be a string"),
])
def test_bad_grade_requests_are_refused_naming_the_field(built, body, message):
    c = client_of(built, source())
    view = c.post("/api/grade/next", json={}).json()
    r = c.post("/api/grade/save", json={**target(view), **body})
    assert r.status_code == 422 and any(message in p for p in r.json()["problems"])
    assert not GRADES.exists()


@pytest.mark.bad_input
def test_without_answers_or_a_source_the_mode_says_what_to_do(bench):
    r = client_of(bench, source()).post("/api/grade/next", json={})
    assert r.status_code == 422 and "no answers folder" in r.json()["problems"][0]
    r = client_of(bench, None).post("/api/grade/next", json={})
    assert r.status_code == 422 and "grading is off" in r.json()["problems"][0]


@pytest.mark.bad_input
def test_another_sites_request_cannot_grade(built):
    c = TestClient(create_app(built, hosts=own_hosts(PORT), grading=GradeMode(source())), base_url=BASE)
    body = {"config": "dense", "id": "q1", "answer_sha256": answer_sha256(ANSWERS["dense"]["q1"]),
            "verdict": "correct", "note": ""}
    assert c.post("/api/grade/save", json=body, headers={"Origin": "http://evil.example"}).status_code == 403
    assert c.post("/api/grade/save", json=body, headers={"Origin": BASE}).status_code == 403  # no X-Workbench
    assert c.get("/api/grade/next", headers=PAGE).status_code in (403, 404, 405)
    assert not GRADES.exists()


# --- the second grader's blind pass -------------------------------------------------------------

SECRET = "ana-only-note-7f3"


def verdicts_in(obj) -> list:
    """Every ``verdict`` value anywhere in a JSON response."""
    if isinstance(obj, dict):
        return [v for k, v in obj.items() if k == "verdict"] + [x for v in obj.values() for x in verdicts_in(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in verdicts_in(v)]
    return []


def test_the_second_pass_never_sends_the_first_grader_s_verdict_note_or_name(built):
    first = [grade_of(c, q, "incorrect", grader="ana", note=SECRET) for c in ANSWERS for q in ANSWERS[c]]
    write_grades(GRADES, first[:3])  # dense q1..q3 graded by ana
    c = client_of(built, source())
    responses = [c.post("/api/grade/second", json={"grader": "bo"})]
    view = responses[-1].json()
    assert (view["pass"], view["grader"], view["total"], view["graded"], view["in_scope"]) == ("second", "bo", 3, 0, 3)
    assert view["answer"]["id"] == "q1" and view["answer"]["previous"] is None
    responses.append(c.post("/api/grade/save", json={**target(view), "verdict": "correct", "note": "bo's"}))
    responses.append(c.post("/api/grade/back", json={}))  # bo's own grade is shown, ana's is not
    assert responses[-1].json()["answer"]["previous"]["grader"] == "bo"
    view = responses[-1].json()
    for _ in range(3):
        responses.append(c.post("/api/grade/skip", json=target(view)))
        view = responses[-1].json()
        if view["answer"] is None:
            break
    responses.append(c.post("/api/grade/summary", json={}))
    for r in responses:
        assert r.status_code == 200, r.text
        assert SECRET not in r.text and "ana" not in r.text
        assert "incorrect" not in verdicts_in(r.json())
    assert view["end"].startswith("End of the list: 1 of the 3 answers in scope are graded (1 by bo)")
    assert [(g.id, g.grader) for g in load_grades(GRADES)] == [("q1", "ana"), ("q1", "bo"), ("q2", "ana"),
                                                               ("q3", "ana")]
    view = c.post("/api/grade/first", json={}).json()  # back to --grader tess's first pass: ana's grades count
    assert (view["pass"], view["grader"], view["graded"], view["total"]) == ("first", "tess", 3, 5)


def test_a_finished_first_pass_offers_the_second_and_an_active_server_draws_it_at_random(built, tmp_path):
    write_scores(tmp_path)
    write_grades(GRADES, [grade_of(c, q, "correct", grader="ana") for c in ANSWERS for q in ANSWERS[c]])
    c = client_of(built, source("active"))
    view = c.post("/api/grade/next", json={}).json()
    assert view["answer"] is None and view["second_offer"].startswith("Every answer in scope is graded once.")
    assert "Second grader form" in view["second_offer"]
    view = c.post("/api/grade/second", json={"grader": "bo"}).json()
    assert (view["order"], view["total"], view["second_offer"]) == ("random", 8, None) and "estimate" not in view


@pytest.mark.bad_input
def test_a_second_pass_without_a_name_is_refused(built):
    r = client_of(built, source()).post("/api/grade/second", json={"grader": "  "})
    assert r.status_code == 422 and "type your name for the second pass" in r.json()["problems"][0]


# --- support: with the verdict, or in the support pass --------------------------------------------


def test_support_is_saved_with_the_verdict_and_the_support_pass_adds_it_keeping_the_verdict(built):
    write_grades(GRADES, [grade_of("dense", "q2", "correct", grader="ana"),
                          grade_of("hybrid", "q1", "incorrect", grader="ana", note="no port"),
                          grade_of("hybrid", "q2", "correct", grader="ana")])
    c = client_of(built, source())
    view = c.post("/api/grade/next", json={}).json()
    assert view["support_levels"] == ["supported", "partly", "not"] and view["pass"] == "first"
    r = c.post("/api/grade/save", json={**target(view), "verdict": "correct", "note": "", "support": "partly"})
    assert r.status_code == 200 and r.json()["saved"]["support"] == "partly"
    assert load_grades(GRADES)[0] == replace(grade_of("dense", "q1", "correct", grader="tess"), support="partly")

    view = c.post("/api/grade/supportpass", json={"grader": "ana"}).json()
    assert (view["pass"], view["grader"], view["total"], view["graded"], view["in_scope"]) == ("support", "ana", 3, 0, 3)
    a = view["answer"]
    assert (a["config"], a["id"], a["previous"]) == ("dense", "q2", None)
    assert a["own"] == {"verdict": "correct", "note": "", "support": None, "this_session": False}
    assert a["passages"] == [{"id": "t/b.md#0", "text": PASSAGES["t/b.md#0"]}]  # what the model was shown
    r = c.post("/api/grade/save", json={**target(view), "verdict": "correct", "note": ""})
    assert r.status_code == 422 and "the support pass keeps the verdicts" in r.json()["problems"][0]
    view = c.post("/api/grade/support", json={**target(view), "support": "supported"}).json()
    assert view["saved"] == {"config": "dense", "id": "q2", "verdict": "correct", "note": "", "support": "supported"}
    assert view["answer"]["own"]["verdict"] == "incorrect" and view["graded"] == 1
    view = c.post("/api/grade/support", json={**target(view), "support": "not"}).json()
    view = c.post("/api/grade/skip", json=target(view)).json()
    assert view["answer"] is None and view["end"].startswith(
        "End of the list: 2 of the 3 answers in scope are support-graded (2 by ana), 1 not yet.")
    assert load_grades(GRADES) == [
        replace(grade_of("dense", "q1", "correct", grader="tess"), support="partly"),
        replace(grade_of("dense", "q2", "correct", grader="ana"), support="supported"),
        replace(grade_of("hybrid", "q1", "incorrect", grader="ana", note="no port"), support="not"),
        grade_of("hybrid", "q2", "correct", grader="ana")]
    lines = c.post("/api/grade/summary", json={}).json()["lines"]
    assert "support graded this session: 2 (1 supported, 0 partly, 1 not), skipped 1" in lines
    assert "answers with a support grade: 3 of 8 (1 supported, 1 partly, 1 not)" in lines
    view = c.post("/api/grade/supportpass", json={"grader": ""}).json()  # no name: --grader's own (tess)
    assert (view["grader"], view["total"], view["in_scope"]) == ("tess", 0, 1)
    assert view["end"] == "All 1 answers in scope are support-graded (1 by tess): nothing is left to grade."
    assert c.post("/api/grade/first", json={}).json()["pass"] == "first"


@pytest.mark.bad_input
def test_bad_support_requests_are_refused_and_nothing_is_written(built):
    write_grades(GRADES, [grade_of("dense", "q1", "correct", grader="tess")])
    before = GRADES.read_bytes()
    c = client_of(built, source())
    view = c.post("/api/grade/next", json={}).json()
    r = c.post("/api/grade/save", json={**target(view), "verdict": "correct", "note": "", "support": "mostly"})
    assert r.status_code == 422 and r.json()["problems"] == [
        "support 'mostly' is not one of supported, partly, not (supported: every claim of the answer is in the "
        "passages shown; partly: some are; not: none is)"]
    r = c.post("/api/grade/support", json={**target(view), "support": "supported"})  # not in the support pass
    assert r.status_code == 422 and "support alone is saved in the support pass" in r.json()["problems"][0]
    view = c.post("/api/grade/supportpass", json={"grader": "tess"}).json()
    r = c.post("/api/grade/support", json=target(view))  # no level
    assert r.status_code == 422 and r.json()["problems"][0].startswith("support '' is not one of supported")
    r = c.post("/api/grade/support", json={**target(view), "id": "q2", "support": "not"})
    assert r.status_code == 422 and "reload the page" in r.json()["problems"][0]
    r = c.post("/api/grade/support", json={**target(view), "support": 3})
    assert r.status_code == 422 and "field 'support' must be a string" in r.json()["problems"][0]
    assert GRADES.read_bytes() == before
    ext = TestClient(create_app(built, hosts=own_hosts(PORT), grading=GradeMode(source())), base_url=BASE)
    body = {**target(view), "support": "not"}
    assert ext.post("/api/grade/support", json=body, headers={"Origin": "http://evil.example"}).status_code == 403
    assert ext.post("/api/grade/supportpass", json={"grader": "x"}, headers={"Origin": BASE}).status_code == 403
    assert GRADES.read_bytes() == before
