"""rag-grade and `rag-ablation grade` (rag_ablation.commands.grade): keys from standard input that
is not a terminal (one key per line), Ctrl-C, nothing to grade, a real terminal (tmux), and bad
input. Fixtures: 2 configs x 4 questions, a few passages (tests/grade_answers.py)."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from grade_answers import ANSWERS, grade_of, grades_file, make_project, project  # noqa: F401  (project is a fixture)

from conftest import VENV_BIN, default_sigint
from rag_ablation.evaluation.judges.grades import answer_sha256, load_grades, write_grades

SCRIPT = VENV_BIN / "rag-grade"
GRADE = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "rag_ablation.commands.grade"]
TMUX = shutil.which("tmux")


def run_grade(d: Path, *args: str, input: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([*GRADE, *args], cwd=d, input=input, capture_output=True, text=True, timeout=60,
                          check=False)


# --- the command, with standard input not a terminal (one key per line) ---------------------


def test_keys_from_lines_grade_go_back_and_skip(project):
    res = run_grade(project, "--grader", "ana", "--order", "listed", input="c\nw\nb\nx\nn\nnames 7443\nc\ns\nq\n")
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
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
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
    assert "nothing to grade: all 4 answers in scope have a grade for their current answer text (4 by ana; " \
        "--regrade shows them again)" in res.stdout
    res = run_grade(project, "--config", "dense", input="q\n")  # the stale one is shown again
    assert "[1/1]  dense  q4  slice unanswerable" in res.stdout and "STALE grade: correct by ana" in res.stdout
    assert "stale grades (for another text of a current answer: an earlier generation or another answer model; " \
        "kept, and shown again for grading): 1" in res.stdout


def test_rag_ablation_grade_is_rag_grade(tmp_path):
    keys = "c\nw\nb\nx\nn\nnames 7443\nc\ns\nq\n"
    alias = run_grade(make_project(tmp_path / "a"), "--grader", "ana", input=keys)
    sub = subprocess.run([sys.executable, "-m", "rag_ablation.commands.main", "grade", "--grader", "ana"],
                         cwd=make_project(tmp_path / "b"), input=keys, capture_output=True, text=True, timeout=60)
    assert (sub.returncode, sub.stdout, sub.stderr) == (alias.returncode, alias.stdout, alias.stderr) and not sub.returncode
    assert load_grades(grades_file(tmp_path / "a")) == load_grades(grades_file(tmp_path / "b"))


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
        cmd = shlex.join([*GRADE, "--grader", "tess", "--order", "listed"]) + "; echo rag-grade exited $?; sleep 120"
        tmux("new-session", "-d", "-s", name, "-x", "100", "-y", "40", "-c", str(project), cmd)

    def key(k: str) -> None:
        tmux("send-keys", "-t", "g", k)

    try:
        start("g")
        s = screen_with("[1/8]  dense  q1")
        assert "Which port does the ledger listen on?" in s and "Port 7443, by default." in s
        assert "[2] t/b.md#0" in s and "Settlement starts at 02:30 UTC every night" in s
        assert "graded 0/8 in scope" in s
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
        # the progress counts the 2 grades on file among the 8 answers in scope, not this list's 0 of 6
        s = screen_with("[1/6]  dense  q3  slice identifier  graded 2/8 in scope")
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
    assert "dvc repro answer/dvc.yaml:generate" in res.stderr


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


def test_grades_go_to_the_selected_data_sets_own_file(tmp_path, monkeypatch):
    """handbook: data/labels/grades.jsonl; an imported set: its own grades.jsonl; covidqa keeps none
    in the repository, so grading it needs --grades."""
    import shutil

    import yaml

    from conftest import FIXTURES
    from rag_ablation.commands.grade import default_grades
    from rag_ablation.core.errors import UserError

    folder = tmp_path / "data" / "imported" / "mine"
    shutil.copytree(FIXTURES / "corpus", folder / "corpus")
    shutil.copy(FIXTURES / "questions.jsonl", folder / "questions.jsonl")
    monkeypatch.chdir(tmp_path)
    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    for name, expected in (("handbook", "data/labels/grades.jsonl"), ("mine", "data/imported/mine/grades.jsonl")):
        params["dataset"] = name
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        assert default_grades().as_posix() == expected
    params["dataset"] = "covidqa"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(UserError, match="data set 'covidqa' keeps no hand grades in the repository: pass --grades"):
        default_grades()


def test_the_second_pass_grades_blind_beside_the_first_grader(project):
    write_grades(grades_file(project), [grade_of("dense", "q1", "incorrect", note="ana saw no port")])
    res = run_grade(project, "--second-pass", "--grader", "bo", "--order", "listed", input="c\nq\n")
    assert res.returncode == 0, res.stderr
    assert "[1/1]  dense  q1" in res.stdout and "graded this session: 1 (1 correct, 0 incorrect)" in res.stdout
    assert "incorrect by" not in res.stdout and "ana" not in res.stdout
    assert [(g.grader, g.verdict) for g in load_grades(grades_file(project))] == [("ana", "incorrect"),
                                                                                  ("bo", "correct")]
    res = run_grade(project, "--second-pass", "--grader", "bo")
    assert "nothing to grade in the second pass: 'bo' has graded all 1 answers another grader graded" in res.stdout


@pytest.mark.bad_input
def test_the_second_pass_in_active_order_is_one_line_and_exit_2(project):
    res = run_grade(project, "--second-pass", "--order", "active")
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "--second-pass takes --order listed or random" in res.stderr


def test_adjudicate_shows_both_graders_and_saves_the_adjudicated_grade(project):
    write_grades(grades_file(project), [grade_of("dense", "q1", "correct", grader="ana"),
                                        grade_of("dense", "q1", "incorrect", grader="bo", note="no default")])
    res = run_grade(project, "--adjudicate", "--grader", "cy", "--order", "listed", input="w\nq\n")
    assert res.returncode == 0, res.stderr
    assert "first grader: correct by ana" in res.stdout and "second grader: incorrect by bo (note: no default)" in res.stdout
    assert [(g.grader, g.verdict, g.role) for g in load_grades(grades_file(project))][-1] == ("cy", "incorrect",
                                                                                           "adjudicated")
    res = run_grade(project, "--adjudicate")
    assert "nothing to adjudicate: all 1 disagreements have an adjudicated grade" in res.stdout


@pytest.mark.bad_input
def test_second_pass_and_adjudicate_together_are_one_line_and_exit_2(project):
    res = run_grade(project, "--second-pass", "--adjudicate")
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "--second-pass and --adjudicate are two sessions: pass one of them" in res.stderr


# --- support: 1 2 3 before c or w, and the support pass (--support) ----------------------------


def test_support_keys_before_a_verdict_and_the_support_pass_add_support_to_own_grades(project):
    write_grades(grades_file(project), [grade_of("dense", "q1", "correct", note="names the port"),
                                        grade_of("dense", "q2", "correct"), grade_of("hybrid", "q1", "correct", grader="bo")])
    res = run_grade(project, "--grader", "ana", "--config", "dense", "--order", "listed", input="3\nw\nq\n")
    assert res.returncode == 0, res.stderr
    assert "support not kept for this answer's grade: press c or w" in res.stdout
    res = run_grade(project, "--support", "--grader", "ana", "--order", "listed", input="c\n2\n9\n1\nq\n")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "[1/2]  dense  q1  slice main  support 1/3 in scope  support pass" in out  # q3 came with its support
    assert "your grade: correct (note: names the port), kept" in out
    assert "[1] t/a.md#0" in out and "The ledger listens on port 7443 by default." in out  # the passages shown
    assert "support pass: verdict and note stay; 1 supported, 2 partly, 3 not, s skip" in out
    assert "dense q1: support partly (verdict correct kept), saved" in out
    assert "unknown key 9: 1 supported, 2 partly, 3 not, s skip" in out
    assert "support graded this session: 2 (1 supported, 1 partly, 0 not), skipped 0" in out
    assert "answers with a support grade: 3 of 8 (1 supported, 1 partly, 1 not)" in out
    assert "hybrid" not in out.split("support graded this session")[0].split("skipped hyde.json")[-1]  # bo's answer
    assert load_grades(grades_file(project)) == [
        replace(grade_of("dense", "q1", "correct", note="names the port"), support="partly"),
        replace(grade_of("dense", "q2", "correct"), support="supported"),
        replace(grade_of("dense", "q3", "incorrect"), support="not"),
        grade_of("hybrid", "q1", "correct", grader="bo")]
    res = run_grade(project, "--support", "--grader", "ana")
    assert "nothing to grade in the support pass: 'ana' has given support to all 3 answers in scope that 'ana' " \
        "graded (--regrade shows them again)" in res.stdout
    res = run_grade(project, "--support", "--grader", "cy")
    assert "nothing to grade in the support pass: 'cy' has graded no answer in scope" in res.stdout


@pytest.mark.bad_input
def test_the_support_pass_with_another_pass_or_in_active_order_is_one_line_and_exit_2(project):
    res = run_grade(project, "--support", "--second-pass")
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "--second-pass and --support are two sessions: pass one of them" in res.stderr
    res = run_grade(project, "--support", "--order", "active")
    assert res.returncode == 2 and "--support takes --order listed or random" in res.stderr


def test_the_help_names_the_support_keys_and_the_support_pass():
    res = subprocess.run([*GRADE, "--help"], capture_output=True, text=True, timeout=60, check=True)
    assert "1 supported, 2 partly, 3 not" in " ".join(res.stdout.split())
    assert "--support" in res.stdout
