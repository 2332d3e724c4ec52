"""The grading order and its scores (rag_ablation.authoring.grade_order), the grades file's
``sampling`` record (rag_ablation.evaluation.judges.grades), an active session resumed after a
restart or a kill, and `rag-grade --order` end to end.
Fixtures: tests/grade_answers.py (2 configs x 4 questions)."""
from __future__ import annotations

import json
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest
from grade_answers import ANSWERS, grade_of, grades_file, project  # noqa: F401  (project is a fixture)

from rag_ablation.authoring.grade_order import (NO_SCORE, ORDERS, describe, estimate, last_draw, make_plan,
                                                read_scores, resume_seed)
from rag_ablation.authoring.grader import Session, load_answers, plan_grading, progress
from rag_ablation.core.config import DEFAULT_GRADE_ORDER, GRADE_ORDERS
from rag_ablation.core.errors import InvalidData, MissingInput, UnknownName, UserError
from rag_ablation.evaluation.judges.active import active_order, sequence_estimate
from rag_ablation.evaluation.judges.grades import Sampling, answer_sha256, load_grades, write_grades
from tests.commands.test_grade import GRADE, run_grade

KEYS = [(c, q) for c in ANSWERS for q in ANSWERS[c]]
F1 = {("dense", "q1"): "0.5", ("dense", "q2"): "1.0", ("dense", "q3"): "0.0", ("dense", "q4"): "",
      ("hybrid", "q1"): "0.4", ("hybrid", "q2"): "0.1", ("hybrid", "q3"): "0.9", ("hybrid", "q4"): ""}


def write_scores(folder: Path, *, judge_column: dict[tuple[str, str], str] | None = None) -> Path:
    """answers.csv with token_f1 (F1); verdicts.csv with an llm_score column when given."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "answers.csv").write_text("config,id,slice,token_f1\n" + "".join(
        f"{c},{q},main,{F1[(c, q)]}\n" for c, q in KEYS))
    extra = ",llm_score" if judge_column else ""
    (folder / "verdicts.csv").write_text(f"config,id,hand,llm{extra}\n" + "".join(
        f"{c},{q},,1" + (f",{judge_column[(c, q)]}" if judge_column else "") + "\n" for c, q in KEYS))
    return folder


def test_orders_are_config_defaults():
    assert set(ORDERS) == set(GRADE_ORDERS) | {"listed"} and DEFAULT_GRADE_ORDER in ORDERS


def test_scores_prefer_the_judges_column_then_fall_back_to_token_f1(tmp_path):
    folder = write_scores(tmp_path / "s", judge_column={k: "0.25" for k in KEYS} | {("hybrid", "q4"): ""})
    llm = read_scores(folder, "llm")
    assert llm[("dense", "q1")] == 0.25 and llm[("hybrid", "q4")] == NO_SCORE
    f1 = read_scores(folder, "token_f1")  # verdicts.csv has no token_f1_score yet: answers.csv's token_f1
    assert f1 == {k: float(v) if v else NO_SCORE for k, v in F1.items()}


@pytest.mark.bad_input
def test_scores_unknown_judge_missing_files_and_bad_cells_are_refused(tmp_path):
    folder = write_scores(tmp_path / "s")
    with pytest.raises(UserError, match="has no column contains_score: judges with scores there: none"):
        read_scores(folder, "contains")
    with pytest.raises(MissingInput, match="dvc repro judge_eval"):
        read_scores(tmp_path / "none", "token_f1")
    (folder / "answers.csv").write_text("config,id,token_f1\ndense,q1,high\n")
    with pytest.raises(InvalidData, match=r"line 2, column token_f1: score 'high' is not a number from 0 to 1"):
        read_scores(folder, "token_f1")


def test_plans_listed_random_and_active():
    population = {k: answer_sha256(ANSWERS[k[0]][k[1]]) for k in KEYS}
    done = {("dense", "q1")}
    listed = make_plan(population, done, order="listed", seed=0)
    assert listed.keys == sorted(set(KEYS) - done) and listed.draws == {}
    rnd = [make_plan(population, done, order="random", seed=s).keys for s in range(4)]
    assert all(sorted(r) == listed.keys for r in rnd) and len({tuple(r) for r in rnd}) > 1
    scores = {k: float(v) if v else NO_SCORE for k, v in F1.items()}
    active = make_plan(population, done, order="active", seed=2, scores=scores)
    keys = sorted(population)
    expected = active_order([scores[k] for k in keys], seed=2, graded=[k in done for k in keys])
    assert active.keys == [keys[d.index] for d in expected]
    assert [active.draws[k][1] for k in active.keys] == expected
    with pytest.raises(UnknownName, match="expected one of: active, listed, random"):
        make_plan(population, done, order="smart", seed=0)


def test_active_session_records_sampling_and_the_estimate_is_the_weighted_one(project):
    found = load_answers(project / "data/build/answers").items
    scores = read_scores(write_scores(project / "metrics/scores"), "token_f1")
    items, plan = plan_grading(found, [], order="active", seed=5, scores=scores)
    path = grades_file(project)
    session = Session(items, path, "ana", [], plan)
    truth = {k: k[1] in ("q1", "q3") for k in KEYS}  # the verdicts given
    for _ in range(5):
        session.grade("correct" if truth[session.current.key] else "incorrect")
    grades = load_grades(path)
    assert all(g.sampling is not None and g.sampling.seed == 5 and g.sampling.population == 8 for g in grades)
    first = min(grades, key=lambda g: g.sampling.draw)
    assert (first.sampling.draw, first.sampling.rest, first.sampling.known_graded) == (1, 8, 0)
    keys = sorted(plan.population)
    got = estimate(grades, plan.population, seed=5)
    want = sequence_estimate([plan.draws[k][1] for k in plan.keys], [scores.get(k, NO_SCORE) for k in keys],
                             [truth[k] for k in keys], 5, name="active")
    assert (got.estimate, got.low, got.high, got.n) == pytest.approx((want.estimate, want.low, want.high, 5))
    # a regrade keeps how the answer was drawn
    session.back()
    session.grade("correct")
    again = {g.key: g for g in load_grades(path)}
    assert again[items[4].key].sampling == {g.key: g for g in grades}[items[4].key].sampling


def test_estimate_stops_at_the_first_gap(project):
    population = {k: answer_sha256(ANSWERS[k[0]][k[1]]) for k in KEYS}

    def graded(key, draw, known_graded):
        s = Sampling(draw=draw, known_correct=0, known_graded=known_graded, population=8, probability=0.125,
                     rest=9 - draw, rest_score=4.0, score=0.5, seed=0)
        return replace(grade_of(*key, "correct"), sampling=s)

    grades = [graded(KEYS[0], 1, 0), graded(KEYS[1], 3, 2)]  # draw 2 was skipped
    assert estimate(grades, population, seed=0).n == 1
    assert isinstance(estimate(grades, population, seed=9), str)


def test_sampling_round_trips_and_an_old_file_is_written_back_unchanged(tmp_path):
    old = tmp_path / "old.jsonl"
    write_grades(old, [grade_of("dense", "q1", "correct")])
    before = old.read_bytes()
    assert b"sampling" not in before
    write_grades(old, load_grades(old))
    assert old.read_bytes() == before
    s = Sampling(draw=1, known_correct=0, known_graded=0, population=8, probability=0.2, rest=8, rest_score=3.5,
                 score=0.4, seed=0)
    g = replace(grade_of("dense", "q2", "incorrect"), sampling=s)
    write_grades(old, [*load_grades(old), g])
    assert load_grades(old)[1] == g
    assert json.loads(old.read_text().splitlines()[1])["sampling"]["probability"] == 0.2


@pytest.mark.bad_input
@pytest.mark.parametrize("sampling,message", [
    ("x", "field 'sampling' must be an object"),
    ({"draw": 1}, "field 'sampling' lacks 'known_correct'"),
    ({"draw": 1.5, "known_correct": 0, "known_graded": 0, "population": 8, "probability": 0.2, "rest": 8,
      "rest_score": 3.5, "score": 0.4, "seed": 0}, "sampling.draw must be a whole number"),
    ({"draw": 1, "known_correct": 0, "known_graded": 0, "population": 8, "probability": 0.0, "rest": 8,
      "rest_score": 3.5, "score": 0.4, "seed": 0}, r"sampling.probability must be in \(0, 1\]"),
])
def test_a_bad_sampling_record_is_refused_naming_the_line(tmp_path, sampling, message):
    path = tmp_path / "grades.jsonl"
    write_grades(path, [grade_of("dense", "q1", "correct")])
    line = json.loads(path.read_text())
    path.write_text(json.dumps({**line, "sampling": sampling}) + "\n")
    with pytest.raises(InvalidData, match="line 1: " + message):
        load_grades(path)


def test_rag_grade_order_active_records_and_reports_the_estimate(project):
    write_scores(project / "metrics/scores")
    res = run_grade(project, "--grader", "ana", "--order", "active", "--seed", "1", input="c\nw\nc\nq\n")
    assert res.returncode == 0, res.stderr
    grades = load_grades(grades_file(project))
    assert sorted(g.sampling.draw for g in grades) == [1, 2, 3]
    assert "active estimate of the accuracy of all answers in scope:" in res.stdout
    assert "from the first 3 draw(s)" in res.stdout


@pytest.mark.bad_input
def test_rag_grade_order_active_without_scores_is_one_line_and_exit_2(project):
    res = run_grade(project, "--order", "active", "--score-judge", "llm")
    assert res.returncode == 2 and "metrics/scores/verdicts.csv" in res.stderr and "dvc repro judge_eval" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not grades_file(project).exists()


def test_rag_grade_default_order_is_a_seeded_permutation(project):
    def first_shown(seed: str) -> str:
        res = run_grade(project, "--seed", seed, input="q\n")
        assert res.returncode == 0, res.stderr
        return res.stdout.split("[1/8]")[1].split("slice")[0].strip()

    shown = {first_shown(s) for s in ("0", "1", "2", "3")}
    assert len(shown) > 1 and first_shown("1") == first_shown("1")


# --- an active session resumed: after a restart, and after a kill ---------------------------


def rounded(result) -> tuple:
    """An estimate as (draws, estimate, low, high), to 3 decimals."""
    return (result.n, round(result.estimate, 3), round(result.low, 3), round(result.high, 3))


def test_a_restarted_active_session_continues_its_draws_and_its_estimate(project):
    found = load_answers(project / "data/build/answers").items
    scores = read_scores(write_scores(project / "metrics/scores"), "token_f1")
    path = grades_file(project)
    truth = {k: k[1] in ("q1", "q3") for k in KEYS}

    def start() -> Session:  # what rag-grade and the workbench do when they start: read the file, plan
        on_file = load_grades(path)
        items, plan = plan_grading(found, on_file, order="active", seed=5, scores=scores)
        return Session(items, path, "ana", on_file, plan)

    def grade(session: Session, n: int) -> None:
        for _ in range(n):
            session.grade("correct" if truth[session.current.key] else "incorrect")

    first = start()
    assert first.plan.after == 0
    grade(first, 3)
    before = estimate(load_grades(path), first.plan.population, seed=5)
    assert rounded(before) == (3, 0.396, 0.0, 0.897)
    del first  # dropped without a summary or anything else, as a kill drops it
    second = start()
    assert second.plan.after == 3 and len(second.items) == 5
    assert [t for t, _ in sorted(second.plan.draws.values(), key=lambda d: d[0])] == [4, 5, 6, 7, 8]
    assert estimate(second.grades.values(), second.plan.population, seed=5) == before  # not a new "1 draw"
    assert progress(second) == "graded 3/8 in scope"  # not "0/5": the list left to grade
    grade(second, 2)
    records = sorted((g.sampling for g in load_grades(path)), key=lambda r: r.draw)
    assert [r.draw for r in records] == [1, 2, 3, 4, 5]
    # each draw knows the grades saved before it, in this session or the one before
    assert [(r.rest, r.known_graded, r.known_correct) for r in records] == [
        (8, 0, 0), (7, 1, 1), (6, 2, 1), (5, 3, 1), (4, 4, 2)]
    assert rounded(estimate(load_grades(path), second.plan.population, seed=5)) == (5, 0.725, 0.015, 1.0)
    third = start()
    assert third.plan.after == 5 and [third.plan.draws[k][0] for k in third.plan.keys] == [6, 7, 8]
    assert last_draw(load_grades(path), third.plan.population, seed=6) == 0  # another seed: a sequence of its own


def test_resumed_draws_are_seeded_apart_from_the_first_ones():
    assert resume_seed(5, 0) == 5
    assert len({resume_seed(5, 3), resume_seed(5, 4), resume_seed(6, 3), 5}) == 4
    population = {k: answer_sha256(ANSWERS[k[0]][k[1]]) for k in KEYS}
    scores = {k: 0.5 for k in KEYS}
    plan = make_plan(population, set(KEYS[:3]), order="active", seed=5, scores=scores, after=3)
    keys = sorted(population)
    expected = active_order([0.5] * 8, seed=resume_seed(5, 3), graded=[k in KEYS[:3] for k in keys])
    assert plan.keys == [keys[d.index] for d in expected] and plan.after == 3
    assert make_plan(population, set(), order="random", seed=5, after=3).after == 0  # only active order numbers draws


def test_a_gap_left_before_a_restart_stays_a_gap_and_no_draw_number_repeats(project):
    found = load_answers(project / "data/build/answers").items
    scores = read_scores(write_scores(project / "metrics/scores"), "token_f1")
    path = grades_file(project)
    items, plan = plan_grading(found, [], order="active", seed=5, scores=scores)
    session = Session(items, path, "ana", [], plan)
    session.grade("correct")
    skipped = session.current.key
    session.skip()  # draw 2 is not graded
    session.grade("incorrect")
    before = estimate(load_grades(path), plan.population, seed=5)
    assert before.n == 1
    items, plan = plan_grading(found, load_grades(path), order="active", seed=5, scores=scores)
    assert plan.after == 3 and len(items) == 6 and skipped in {it.key for it in items}  # drawn again, as draw 4 or later
    resumed = Session(items, path, "ana", load_grades(path), plan)
    resumed.grade("correct")
    assert sorted(g.sampling.draw for g in load_grades(path)) == [1, 3, 4]
    assert estimate(load_grades(path), plan.population, seed=5) == before  # still stops at the gap


def test_every_answer_graded_gives_the_accuracy_exactly_not_an_estimate():
    population = {k: answer_sha256(ANSWERS[k[0]][k[1]]) for k in KEYS}
    grades = [grade_of(c, q, "correct" if q in ("q1", "q2") else "incorrect", grader="maintainer-1") for c, q in KEYS]
    assert describe(estimate(grades, population, seed=0)) == (
        "active estimate: none needed: every one of the 8 answers in scope is graded (4 correct), so their accuracy "
        "is 0.500 exactly")
    assert describe(estimate(grades[:7], population, seed=0)) == (
        "active estimate: no grade in active order (seed 0) over these 8 answers yet")


def test_rag_grade_killed_in_active_order_resumes_at_the_next_draw(project):
    write_scores(project / "metrics/scores")
    args = ("--grader", "ana", "--order", "active", "--seed", "1")
    path = grades_file(project)
    proc = subprocess.Popen([*GRADE, *args], cwd=project, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write("c\nw\nc\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while not (path.is_file() and len(load_grades(path)) == 3):
            assert time.monotonic() < deadline and proc.poll() is None, "the three grades were not written"
            time.sleep(0.05)
        proc.kill()  # SIGKILL: no summary, nothing tidied up
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert sorted(g.sampling.draw for g in load_grades(path)) == [1, 2, 3]
    line = ("active estimate of the accuracy of all answers in scope: 0.653 (95% interval 0.000 to 1.000) from the "
            "first 3 draw(s)")
    population = {k: answer_sha256(ANSWERS[k[0]][k[1]]) for k in KEYS}
    assert describe(estimate(load_grades(path), population, seed=1)) == line
    res = run_grade(project, *args, input="q\n")  # restarted: the estimate is where the kill left it
    assert res.returncode == 0, res.stderr
    assert line in res.stdout and "graded 3/8 in scope" in res.stdout
    res = run_grade(project, *args, input="w\nc\nq\n")
    assert res.returncode == 0, res.stderr
    assert sorted(g.sampling.draw for g in load_grades(path)) == [1, 2, 3, 4, 5]
    assert "graded 5/8 in scope" in res.stdout and "from the first 5 draw(s)" in res.stdout
