"""The workbench's "Grade answers" mode in headless Chromium, as a person uses it: the terminal
grader's keys (n note, c, w, b back, p passages), the question, reference, answer and passages on
the page, an answer holding markup shown as text, and `rag-ablation label` killed with SIGKILL
while it rewrites the grades file: the file stays whole, a restart resumes (its progress counts the
grades already saved) and prints the killed save's temporary file it removes; the end of the list
when someone else graded every answer, which offers the second grader's pass; and that blind
pass, which never shows nor receives the first grader's verdict, note or name.

`rag-ablation label` runs as a user runs it, in the tiny workbench project
(tests/authoring/workbench/tiny_project.py) with the answers of tests/grade_answers.py built
beside it. Debian's chromium (``/usr/bin/chromium``) is driven by Playwright; no browser is
downloaded. Helpers: tests/commands/test_label_browser.py.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from grade_answers import ANSWERS, QUESTIONS, grade_of, make_project

from commands.test_label_browser import CHROMIUM, _tiny, chromium_page, shows
from rag_ablation.authoring.workbench.store import STALE_SECONDS
from rag_ablation.evaluation.judges.grades import Grade, load_grades, write_grades

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=f"no chromium at {CHROMIUM} (apt-get install chromium)"),
]

GRADES = Path("data/labels/grades.jsonl")
MARKUP = "<b>Use</b> --force.<script>document.title = 'owned'</script>"
OLD = 60_000
"""Grades of answers that are no longer current, so that each save rewrites a file of some
megabytes and a kill can land inside it."""


def start_label(cwd: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "rag_ablation.commands.main", "label", "--order", "listed",
                             "--grader", "tess"], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:\d+", line)
    assert m, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
    return proc, m.group(0)


def temp_files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.startswith(".grades.jsonl.") and p.name.endswith(".tmp")}


def open_grade_view(page, base: str) -> None:
    page.goto(base + "/")
    page.click("nav .tab[data-view=grade]")
    assert shows(page, "#g-progress", "graded")


def test_grading_in_the_browser_and_a_kill_mid_save_leaves_the_grades_file_whole(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _tiny().make_project(tmp_path)
    make_project(tmp_path)
    dense = tmp_path / "data/build/answers/dense.json"
    data = json.loads(dense.read_text())
    data["answers"][2]["answer"] = MARKUP  # q3
    dense.write_text(json.dumps(data))
    old = [Grade(answer_sha256=f"{i:064x}", config="old", grader="ana", id=f"old-{i:05d}", note="an older model " * 6,
                 verdict="correct") for i in range(OLD)]
    write_grades(GRADES, old)
    q1 = next(q for q in QUESTIONS if q["id"] == "q1")
    proc, base = start_label(tmp_path)
    try:
        with chromium_page() as page:
            open_grade_view(page, base)
            assert shows(page, "#g-progress", "[1/8]")
            assert shows(page, "#g-question", q1["question"]) and shows(page, "#g-reference", q1["answer"])
            assert shows(page, "#g-answer", ANSWERS["dense"]["q1"])
            assert shows(page, "#g-passages", "The ledger listens on port 7443 by default.")
            page.keyboard.press("n")
            page.keyboard.type("names the port")
            page.keyboard.press("Enter")
            page.keyboard.press("c")
            assert shows(page, "#g-progress", "[2/8]") and shows(page, "#g-messages", "dense q1: correct (note: names")
            page.keyboard.press("w")
            assert shows(page, "#g-progress", "[3/8]")
            assert page.text_content("#g-answer") == MARKUP, "markup in an answer is shown as text"
            assert page.query_selector("#g-answer b") is None and page.title() != "owned"
            page.keyboard.press("p")
            assert shows(page, "#g-whole", "Passages cut (p)")
            page.keyboard.press("b")
            assert shows(page, "#g-progress", "[2/8]") and shows(page, "#g-previous", "incorrect by tess")
            page.keyboard.press("c")  # the regrade replaces the grade
            assert shows(page, "#g-progress", "[3/8]")
            page.screenshot(path=str(tmp_path / "grade.png"), full_page=True)
            graded = {(g.config, g.id): g for g in load_grades(GRADES) if g.config != "old"}
            assert {k: (g.verdict, g.note) for k, g in graded.items()} == {
                ("dense", "q1"): ("correct", "names the port"), ("dense", "q2"): ("correct", "")}
            before = temp_files(GRADES.parent)
            page.keyboard.press("w")  # dense q3, while the server rewrites the whole file:
            deadline = time.monotonic() + 30
            while not temp_files(GRADES.parent) - before:
                assert time.monotonic() < deadline, "the save never started writing"
                time.sleep(0.0005)
            os.kill(proc.pid, signal.SIGKILL)  # mid-save: its temporary file is being written
            proc.wait(timeout=10)
    finally:
        proc.kill()
    text = GRADES.read_text(encoding="utf-8")
    assert text.endswith("\n")
    after = load_grades(GRADES)  # every line whole: the old file, or the new one
    ours = {(g.config, g.id) for g in after if g.config != "old"}
    assert sum(g.config == "old" for g in after) == OLD
    assert ours in ({("dense", "q1"), ("dense", "q2")}, {("dense", "q1"), ("dense", "q2"), ("dense", "q3")})
    # the kill's leftover is seconds old and is kept at the restart (it may be a running save's);
    # one older than STALE_SECONDS (60 s) is a killed save's, removed and printed
    left = temp_files(GRADES.parent)
    stale = GRADES.parent / ".grades.jsonl.k3j9x2.tmp"
    stale.write_text('{"answer_sha256": "')
    os.utime(stale, (time.time() - STALE_SECONDS - 1,) * 2)
    proc, base = start_label(tmp_path)
    try:
        with chromium_page() as page:
            open_grade_view(page, base)
            first = "q4" if ("dense", "q3") in ours else "q3"
            assert shows(page, "#g-progress", f"[1/{8 - len(ours)}]  graded {len(ours)}/8 answers in scope")
            assert shows(page, "#g-answer", ANSWERS["dense"]["q4"] if first == "q4" else MARKUP)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    assert {(g.config, g.id) for g in load_grades(GRADES) if g.config != "old"} == ours
    assert not stale.exists() and temp_files(GRADES.parent) == left
    assert proc.stdout is not None
    assert f"rag-ablation label: removed {stale}, left by a grade save that was killed" \
        in proc.stdout.read()


def test_every_answer_graded_by_a_maintainer_is_said_in_words_on_the_page(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _tiny().make_project(tmp_path)
    make_project(tmp_path)
    write_grades(GRADES, [grade_of(c, q, "correct", grader="maintainer-1") for c in ANSWERS for q in ANSWERS[c]])
    proc, base = start_label(tmp_path)
    try:
        with chromium_page() as page:
            page.goto(base + "/")
            page.click("nav .tab[data-view=grade]")
            assert shows(page, "#g-progress", "All 8 answers in scope are graded (8 by maintainer-1): nothing is "
                                              "left to grade. (order listed)")
            assert "0 answer(s)" not in page.text_content("#g-progress")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


SECRET = "first-grader-note-5c1"
FIRST = "grader-one-x9"
PAGE_TEXT = "document.body.innerText + document.documentElement.outerHTML"


def test_the_second_pass_never_shows_the_first_grader_s_grade(tmp_path, monkeypatch):
    """Every answer graded incorrect by FIRST, with a note: the page offers the second pass, and
    bo's blind pass shows every answer with no trace of FIRST's verdict, note or name, in the
    page's text, its DOM, or any response of the server; bo's grades are lines beside FIRST's."""
    monkeypatch.chdir(tmp_path)
    _tiny().make_project(tmp_path)
    make_project(tmp_path)
    write_grades(GRADES, [grade_of(c, q, "incorrect", grader=FIRST, note=SECRET) for c in ANSWERS for q in ANSWERS[c]])
    proc, base = start_label(tmp_path)
    responses: list = []
    bodies: list[str] = []
    try:
        with chromium_page() as page:
            page.on("response", lambda r: responses.append(r) if "/api/grade/" in r.url else None)
            open_grade_view(page, base)
            assert shows(page, "#g-progress", f"All 8 answers in scope are graded (8 by {FIRST})")
            assert shows(page, "#g-offer", "Every answer in scope is graded once. A second grader can now grade them "
                                           "blind")
            page.fill("#g-grader", "bo")
            page.click("#g-second")
            assert shows(page, "#g-progress", "[1/8]  graded 0/8 answers in scope (order listed; second pass by bo")
            assert shows(page, "#g-answer", ANSWERS["dense"]["q1"])
            seen = [page.evaluate(PAGE_TEXT)]
            page.keyboard.press("c")
            assert shows(page, "#g-progress", "[2/8]") and shows(page, "#g-messages", "dense q1: correct, saved")
            page.keyboard.press("b")
            assert shows(page, "#g-previous", "graded this session: correct by bo")
            seen.append(page.evaluate(PAGE_TEXT))
            for n in range(2, 10):  # c regrades q1 (bo's own line is replaced), then the other seven
                page.keyboard.press("c")
                assert shows(page, "#g-progress", f"[{n}/8]" if n <= 8 else "End of the list")
                seen.append(page.evaluate(PAGE_TEXT))
            assert shows(page, "#g-progress", "all 8 answers in scope are graded (8 by bo)")
            page.click("#g-summary")
            assert shows(page, "#g-messages", "graded this session: 8 (8 correct, 0 incorrect)")
            seen.append(page.evaluate(PAGE_TEXT))
            page.screenshot(path=str(tmp_path / "second-pass.png"), full_page=True)
            # the first pass asked /api/grade/next only; every other request is of the second pass
            bodies = [r.text() for r in responses if not r.url.endswith("/api/grade/next")]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    blind = bodies
    assert len(blind) >= 12 and all('"pass":"second"' in b or '"lines"' in b for b in blind)
    for text in [*seen, *blind]:
        assert SECRET not in text and FIRST not in text, "the first grader's note or name reached the page"
        assert "incorrect by" not in text and '"verdict":"incorrect"' not in text
    lines = [(g.id, g.grader, g.verdict) for g in load_grades(GRADES) if g.config == "dense"]
    assert lines[:2] == [("q1", FIRST, "incorrect"), ("q1", "bo", "correct")] and len(lines) == 8


def test_support_with_a_verdict_and_the_support_pass_with_the_passages_in_view(tmp_path, monkeypatch):
    """2 then c saves dense q1 correct with support partly; the support pass of --grader (tess)
    lists tess's graded answers without support, shows tess's verdict and note (as text) and the
    passages the model saw; c is refused there, 1 and a click on Not save at once, verdicts kept."""
    monkeypatch.chdir(tmp_path)
    _tiny().make_project(tmp_path)
    make_project(tmp_path)
    note = "<i>names</i> the time"
    write_grades(GRADES, [grade_of("dense", "q2", "correct", grader="tess", note=note),
                          grade_of("dense", "q3", "incorrect", grader="tess")])
    proc, base = start_label(tmp_path)
    try:
        with chromium_page() as page:
            open_grade_view(page, base)
            assert shows(page, "#g-progress", "[1/6]") and shows(page, "#g-answer", ANSWERS["dense"]["q1"])
            page.keyboard.press("2")
            assert page.is_checked("input[name=g-support][value=partly]")
            page.keyboard.press("c")
            assert shows(page, "#g-messages", "dense q1: correct, support partly, saved")
            assert page.is_checked("input[name=g-support][value='']")  # the next answer starts without one
            page.fill("#g-support-grader", "")
            page.click("#g-support-start")
            assert shows(page, "#g-progress", "[1/2]  support-graded 1/3 answers in scope (order listed; support pass "
                                              "by tess")
            assert shows(page, "#g-answer", ANSWERS["dense"]["q2"])
            assert shows(page, "#g-previous", f"your grade: correct (note: {note}), kept; support: not graded yet")
            assert page.query_selector("#g-previous i") is None, "a note's markup is shown as text"
            assert shows(page, "#g-passages", "Settlement starts at 02:30 UTC every night")  # what the model saw
            page.keyboard.press("c")
            assert shows(page, "#g-messages", "support pass: the verdict stays")
            page.keyboard.press("1")
            assert shows(page, "#g-progress", "[2/2]") and shows(page, "#g-messages", "dense q2: correct (note: ")
            assert shows(page, "#g-previous", "your grade: incorrect, kept; support: not graded yet")
            # a click, not page.check: the save resets the form for the end of the list, so the radio may
            # already be unchecked again when Playwright looks at it
            page.click("input[name=g-support][value=not]")
            assert shows(page, "#g-progress", "all 3 answers in scope are support-graded (3 by tess)")
            page.screenshot(path=str(tmp_path / "support-pass.png"), full_page=True)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    assert [(g.id, g.grader, g.verdict, g.note, g.support) for g in load_grades(GRADES)] == [
        ("q1", "tess", "correct", "", "partly"), ("q2", "tess", "correct", note, "supported"),
        ("q3", "tess", "incorrect", "", "not")]
