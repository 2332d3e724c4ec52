"""rag-grade: which answers it shows (sample, resume, stale), back, the grades file written at
once, a real terminal (tmux), and bad input. Fixtures: 2 configs x 4 questions, a few passages."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import VENV_BIN
from rag_ablation.evaluation.grader import (Item, Session, equal_shares, load_answers, read_passages,
                                            read_questions, render, sample_items, to_grade)
from rag_ablation.evaluation.grades import Grade, answer_sha256, load_grades, write_grades

SCRIPT = VENV_BIN / "rag-grade"
GRADE = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "rag_ablation.evaluation.grader"]
TMUX = shutil.which("tmux")

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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """data/build/{answers,runs,questions.jsonl} of 2 configs, plus one unavailable config."""
    build = tmp_path / "data/build"
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
    return tmp_path


def grades_file(d: Path) -> Path:
    return d / "data/labels/grades.jsonl"


def grade_of(config: str, qid: str, verdict: str, *, answer: str | None = None, grader: str = "ana",
             note: str = "") -> Grade:
    text = ANSWERS[config][qid] if answer is None else answer
    return Grade(answer_sha256=answer_sha256(text), config=config, grader=grader, id=qid, note=note, verdict=verdict)


def items(d: Path) -> list[Item]:
    return load_answers(d / "data/build/answers").items


def run_grade(d: Path, *args: str, input: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([*GRADE, *args], cwd=d, input=input, capture_output=True, text=True, timeout=60,
                          check=False)


# --- which answers are shown ----------------------------------------------------------------


def fake_items(config: str, n: int) -> list[Item]:
    return [Item(config, f"{'main' if i % 3 else 'identifier'}-{i:02d}", "main" if i % 3 else "identifier", True,
                 f"answer {config} {i}", ()) for i in range(n)]


def test_sample_takes_equal_shares_per_config_and_depends_only_on_the_seed():
    pool = fake_items("dense", 12) + fake_items("hybrid", 12)
    s = sample_items(pool, 6, seed=1)
    assert [it.config for it in s] == ["dense"] * 3 + ["hybrid"] * 3
    assert s == sample_items(list(reversed(pool)), 6, seed=1)  # same seed, same sample, whatever the order
    # configs that answered the same questions get the same questions: the grades pair
    assert [it.id for it in s if it.config == "dense"] == [it.id for it in s if it.config == "hybrid"]
    # stratified by slice within a config: 4 of 12 are identifier, so 1 of 3
    assert sum(it.slice == "identifier" for it in s if it.config == "dense") == 1
    assert len({tuple(it.id for it in sample_items(pool, 6, seed=seed)) for seed in range(10)}) > 1
    # a remainder goes to the first config by name; a config short of answers gives its share away
    assert equal_shares({"hybrid": 12, "dense": 12}, 5) == {"hybrid": 2, "dense": 3}
    assert equal_shares({"a": 2, "b": 12}, 6) == {"a": 2, "b": 4}
    assert equal_shares({"a": 2, "b": 3}, 99) == {"a": 2, "b": 3}
    small = fake_items("a", 2) + fake_items("b", 12)
    assert [it.config for it in sample_items(small, 6, seed=0)].count("a") == 2


def test_without_a_sample_every_answer_in_config_then_id_order(project):
    got = to_grade(items(project), [])
    assert [it.key for it in got] == [(c, q) for c in ("dense", "hybrid") for q in ("q1", "q2", "q3", "q4")]


def test_resume_skips_current_grades_and_shows_stale_ones_again(project):
    grades = [grade_of("dense", "q1", "correct"),
              grade_of("dense", "q2", "correct", answer="an older answer text"),  # stale
              grade_of("hybrid", "q3", "correct", note="names the flag")]
    got = [it.key for it in to_grade(items(project), grades)]
    assert ("dense", "q1") not in got and ("hybrid", "q3") not in got
    assert ("dense", "q2") in got and len(got) == 6
    assert len(to_grade(items(project), grades, regrade=True)) == 8
    # a sample keeps its members whatever is graded, so a rerun resumes the same sample
    sample = to_grade(items(project), [], sample=4, seed=3)
    rest = to_grade(items(project), [grade_of(*sample[0].key, "correct")], sample=4, seed=3)
    assert rest == sample[1:]

    # the stale grade is shown as stale, and grading replaces it
    path = grades_file(project)
    write_grades(path, grades)
    session = Session(to_grade(items(project), grades), path, "bo", load_grades(path))
    assert session.current.key == ("dense", "q2")
    old, stale = session.previous_grade(session.current)
    assert stale and old.answer_sha256 == answer_sha256("an older answer text")
    screen = "\n".join(render(session, None, {}, width=100, height=40))
    assert "STALE grade: correct by ana" in screen
    session.grade("incorrect")
    by_key = {g.key: g for g in load_grades(path)}
    assert by_key[("dense", "q2")] == grade_of("dense", "q2", "incorrect", grader="bo")
    assert by_key[("hybrid", "q3")].note == "names the flag"  # the others are untouched


def test_back_goes_to_the_previous_answer_to_change_its_grade(project):
    path = grades_file(project)
    session = Session(to_grade(items(project), []), path, "ana", [])
    assert not session.back()  # nothing before the first
    session.note("  exact   port ")
    session.grade("correct")
    session.grade("incorrect")
    assert session.back() and session.current.key == ("dense", "q2") and session.pos == 1
    screen = "\n".join(render(session, None, {}, width=100, height=40))
    assert "[2/8]" in screen and "graded this session: incorrect by ana" in screen
    session.grade("correct")
    assert session.current.key == ("dense", "q3")
    assert load_grades(path) == [grade_of("dense", "q1", "correct", note="exact port"),
                                 grade_of("dense", "q2", "correct")]
    session.back()
    session.back()
    session.grade("incorrect")  # regrading keeps the note given before
    assert load_grades(path)[0] == grade_of("dense", "q1", "incorrect", note="exact port")
    assert session.done() == 2 and session.graded == {("dense", "q1"): "incorrect", ("dense", "q2"): "correct"}


def test_each_grade_replaces_the_file_at_once_and_keeps_other_grades(project):
    path = grades_file(project)
    other = grade_of("hybrid", "q4", "correct", grader="cy")
    write_grades(path, [other])
    session = Session(to_grade(items(project), [], sample=2, seed=0), path, "ana", load_grades(path))
    first = session.current
    inode = path.stat().st_ino
    session.grade("correct")
    # written at once, by rename (a new file, never a half-written one), no temp file left behind
    assert path.stat().st_ino != inode
    assert [g.key for g in load_grades(path)] == [first.key, other.key]
    assert sorted(p.name for p in path.parent.iterdir()) == ["grades.jsonl"]
    # another session's grade written meanwhile survives this session's next write
    late = grade_of("hybrid", "q2", "incorrect", grader="dee")
    write_grades(path, [*load_grades(path), late])
    session.grade("incorrect")
    assert {g.key for g in load_grades(path)} == {first.key, session.items[1].key, other.key, late.key}
    lines = path.read_text().splitlines()
    assert all(sorted(json.loads(line)) == ["answer_sha256", "config", "grader", "id", "note", "verdict"]
               for line in lines)


def test_passages_are_shown_with_their_ids_and_cut_to_fit(project):
    its = to_grade(items(project), [])
    long = {**PASSAGES, "t/a.md#0": "word " * 400}
    session = Session(its, grades_file(project), "ana", [])
    qs = read_questions(project / "data/build/questions.jsonl", its)
    assert read_passages(project / "data/build/runs", its)["dense"] == PASSAGES
    cut = render(session, qs["q1"], long, width=80, height=30)
    assert len(cut) <= 29 and all(len(line) < 80 for line in cut)
    assert "[1] t/a.md#0" in cut and any(line.endswith(" ...") for line in cut)
    whole = render(session, qs["q1"], long, width=80, height=30, full=True)
    assert len(whole) > 30 and sum(line.count("word") for line in whole) == 400


# --- the command, with standard input not a terminal (one key per line) ---------------------


def test_keys_from_lines_grade_go_back_and_skip(project):
    res = run_grade(project, "--grader", "ana", input="c\nw\nb\nx\nn\nnames 7443\nc\ns\nq\n")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "Which port does the ledger listen on?" in out and "Port 7443, by default." in out
    assert "[1] t/a.md#0" in out and "The ledger listens on port 7443 by default." in out
    assert "unknown key x: c correct, w wrong" in out
    assert "skipped hyde.json: config 'hyde' is unavailable: needs an LLM" in out
    assert "graded this session: 2 (2 correct, 0 incorrect), skipped 1" in out
    assert "grades matching the current answers: 2 of 8 answers (dense 2 of 4, hybrid 0 of 4)" in out
    assert load_grades(grades_file(project)) == [grade_of("dense", "q1", "correct"),
                                                 grade_of("dense", "q2", "correct", note="names 7443")]


def test_ctrl_c_loses_no_grade_given(project):
    proc = subprocess.Popen([*GRADE, "--grader", "ana"], cwd=project, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write("c\nw\n")
        proc.stdin.flush()
        path = grades_file(project)
        deadline = time.monotonic() + 20
        while not (path.is_file() and len(load_grades(path)) == 2):
            assert time.monotonic() < deadline, "the two grades were not written"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted: every grade given is saved" in out and "graded this session: 2" in out
    assert [g.verdict for g in load_grades(grades_file(project))] == ["correct", "incorrect"]


def test_nothing_to_grade_says_so_and_exits_0(project):
    write_grades(grades_file(project), [grade_of(c, q, "correct") for c in ANSWERS for q in ANSWERS[c]
                                        if c == "hybrid" or q != "q4"]
                 + [grade_of("dense", "q4", "correct", answer="stale text")])
    res = run_grade(project, "--config", "hybrid")
    assert res.returncode == 0, res.stderr
    assert "nothing to grade: every one of 4 answer(s) has a grade for its current answer text" in res.stdout
    res = run_grade(project, "--config", "dense", input="q\n")  # the stale one is shown again
    assert "[1/1]  dense  q4  slice unanswerable" in res.stdout and "STALE grade: correct by ana" in res.stdout
    assert "stale grades (answer text changed since; graded again when shown): 1" in res.stdout


# --- a real terminal --------------------------------------------------------------------------


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed: the real-terminal test drives rag-grade with it")
def test_in_a_real_terminal_it_grades_goes_back_and_resumes(project):
    server = str(project / "tmux.sock")  # a private server, its socket in the test's folder
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}

    def tmux(*args: str) -> str:
        return subprocess.run([TMUX, "-S", server, *args], capture_output=True, text=True, check=True, env=env,
                              timeout=20).stdout

    def screen_with(*texts: str, timeout: float = 15) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = tmux("capture-pane", "-p", "-t", "g")
            if all(t in screen for t in texts):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"the screen never showed {texts}; it shows:\n{screen}")
            time.sleep(0.05)

    def start(name: str) -> None:
        cmd = shlex.join([*GRADE, "--grader", "tess"]) + "; echo rag-grade exited $?; sleep 120"
        tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "40", "-c", str(project), cmd)

    def key(k: str) -> None:
        tmux("send-keys", "-t", "g", k)

    try:
        start("g")
        s = screen_with("[1/8]  dense  q1")
        assert "Which port does the ledger listen on?" in s and "Port 7443, by default." in s
        assert "[2] t/b.md#0" in s and "Settlement starts at 02:30 UTC every night" in s and "graded 0/8" in s
        key("c")
        screen_with("[2/8]  dense  q2", "When does the nightly settlement start?", "At 02:30 UTC.", "graded 1/8")
        key("w")
        screen_with("[3/8]  dense  q3", "Which flag makes bwctl only print its plan?", "The --dry-run flag.")
        key("b")
        screen_with("[2/8]  dense  q2", "graded this session: incorrect by tess")
        key("c")
        screen_with("[3/8]  dense  q3", "dense q2: correct, saved")
        key("z")
        screen_with("unknown key z: c correct, w wrong")
        key("s")
        screen_with("[4/8]  dense  q4  slice unanswerable (unanswerable)", "graded 2/8")
        key("q")
        s = screen_with("rag-grade exited 0")
        assert "graded this session: 2 (2 correct, 0 incorrect), skipped 1" in s
        assert load_grades(grades_file(project)) == [grade_of("dense", "q1", "correct", grader="tess"),
                                                     grade_of("dense", "q2", "correct", grader="tess")]
        tmux("kill-session", "-t", "g")

        start("g")  # resumes: the graded two are not shown again, the skipped one is
        s = screen_with("[1/6]  dense  q3", "graded 0/6")
        key("n")
        screen_with("note for dense q3 (Enter for none):")
        tmux("send-keys", "-t", "g", "-l", "recommends --force")
        key("Enter")
        screen_with("note for this grade: recommends --force")
        key("w")
        screen_with("[2/6]  dense  q4")
        key("q")
        screen_with("rag-grade exited 0")
        assert load_grades(grades_file(project))[2] == grade_of("dense", "q3", "incorrect", grader="tess",
                                                                note="recommends --force")
    finally:
        subprocess.run([TMUX, "-S", server, "kill-server"], capture_output=True, env=env, check=False)


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.bad_input
def test_missing_answers_folder_is_one_line_and_exit_2(tmp_path):
    res = run_grade(tmp_path)
    assert res.returncode == 2 and res.stdout == "" and res.stderr.count("\n") == 1
    assert res.stderr.startswith("error: no answers folder data/build/answers: expected one <config>.json")
    assert "dvc repro generate" in res.stderr


@pytest.mark.bad_input
def test_a_bad_grades_line_is_one_line_and_exit_2_and_the_file_is_kept(project):
    path = grades_file(project)
    good = json.dumps({"answer_sha256": answer_sha256("Port 7443."), "config": "dense", "grader": "ana",
                       "id": "q1", "note": "", "verdict": "correct"})
    path.parent.mkdir(parents=True)
    path.write_text(good + '\n{"config": "dense", "id": "q2", "verdict": "right"\n')
    before = path.read_bytes()
    res = run_grade(project, input="c\nq\n")
    assert res.returncode == 2 and res.stdout == "" and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("error: data/labels/grades.jsonl: 1 bad grade line(s): line 2: not valid JSON")
    assert "fix or delete these lines" in res.stderr
    assert path.read_bytes() == before


@pytest.mark.bad_input
def test_an_unknown_config_is_one_line_and_exit_2(project):
    res = run_grade(project, "--config", "bm25")
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "no answers for config(s) 'bm25'; answered configs are: dense, hybrid, hyde" in res.stderr
