"""rag-grade's session (rag_ablation.authoring.grader): which answers it shows (sample,
resume, stale), back, the grades file written at once, the screen. The command (keys from
standard input, a real terminal, bad input) is tested in tests/commands/test_grade.py."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from grade_answers import ANSWERS, PASSAGES, grade_of, grades_file, project  # noqa: F401  (project is a fixture)

from rag_ablation.authoring.grader import (SECOND_PASS_HOW, SUPPORT_KEYS_LINE, Item, Session, adjudication_items,
                                           equal_shares, load_answers, own_grades, own_supports, plan_grading,
                                           read_passages, read_questions, render, sample_items, second_pass_items,
                                           support_pass_items, to_grade)
from rag_ablation.evaluation.judges.grades import Sampling, answer_sha256, load_grades, match_grades, write_grades


def items(d: Path) -> list[Item]:
    return load_answers(d / "data/build/answers").items


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

    # the stale grade is shown as stale; grading adds a grade for the current text and keeps the
    # old one, which applies again when its text comes back (another answer model switched back)
    path = grades_file(project)
    write_grades(path, grades)
    session = Session(to_grade(items(project), grades), path, "bo", load_grades(path))
    assert session.current.key == ("dense", "q2")
    old, stale = session.previous_grade(session.current)
    assert stale and old.answer_sha256 == answer_sha256("an older answer text")
    screen = "\n".join(render(session, None, {}, width=100, height=40))
    assert "STALE grade: correct by ana" in screen
    session.grade("incorrect")
    on_file = load_grades(path)
    q2 = [g for g in on_file if g.key == ("dense", "q2")]
    assert sorted(q2, key=lambda g: g.slot) == sorted(
        [grade_of("dense", "q2", "incorrect", grader="bo"),
         grade_of("dense", "q2", "correct", answer="an older answer text")], key=lambda g: g.slot)
    assert session.previous_grade(session.items[0]) == (grade_of("dense", "q2", "incorrect", grader="bo"), False)
    assert [g.note for g in on_file if g.key == ("hybrid", "q3")] == ["names the flag"]  # the others are untouched
    assert len(on_file) == len(grades) + 1
    older = {("dense", "q2"): "an older answer text"}
    assert match_grades(on_file, older).verdicts == {("dense", "q2"): True}


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


# --- progress and the end of the list --------------------------------------------------------


def plan_args(project: Path, path: Path, grades: list) -> tuple:
    """A session's arguments as rag-grade makes them (listed order): the list, the file, the grader, the plan."""
    its, plan = plan_grading(items(project), grades, order="listed")
    return its, path, "tess", grades, plan


def test_the_end_of_the_list_says_how_many_answers_are_graded_and_by_whom(project):
    path = grades_file(project)
    everything = [grade_of(c, q, "correct", grader="maintainer-1") for c, q in (it.key for it in items(project))]
    write_grades(path, everything)
    nothing_left = Session(*plan_args(project, path, everything))
    screen = render(nothing_left, None, {}, width=100, height=40)
    assert screen[:2] == ["All 8 answers in scope are graded (8 by maintainer-1): nothing is left to grade.",
                          "q: quit."]
    assert not any("0 answer(s)" in line for line in screen)

    write_grades(path, everything[:5])  # dense q1..q4 and hybrid q1 by maintainer-1
    session = Session(*plan_args(project, path, everything[:5]))
    session.grade("correct")
    session.skip()
    session.grade("incorrect")
    assert render(session, None, {}, width=100, height=40)[:3] == [
        "End of the list: 7 of the 8 answers in scope are graded (5 by maintainer-1, 2 by tess), 1 not yet.",
        "This session's list held 3: 2 graded, 1 skipped (shown again next time).",
        "b: back to the last answer, q: quit."]


# --- the second grader's blind pass ----------------------------------------------------------


def test_a_finished_first_pass_offers_the_second_pass_and_an_unfinished_one_does_not(project):
    path = grades_file(project)
    everything = [grade_of(c, q, "correct", grader="maintainer-1") for c, q in (it.key for it in items(project))]
    screen = " ".join(render(Session(*plan_args(project, path, everything)), None, {}, width=100, height=40))
    assert "A second grader can now grade them blind" in screen and SECOND_PASS_HOW in screen
    screen = " ".join(render(Session(*plan_args(project, path, everything[:7])), None, {}, width=100, height=40))
    assert "second grader" not in screen


def blind_session(project: Path, path: Path, grader: str) -> Session:
    """A second pass as rag-grade --second-pass makes it (listed order)."""
    given = load_grades(path)
    its, plan = plan_grading(second_pass_items(items(project), given, grader), own_grades(given, grader),
                             order="listed")
    return Session(its, path, grader, given, plan, blind=True)


def test_the_second_pass_shows_only_answers_another_grader_graded_and_never_their_grade(project):
    path = grades_file(project)
    ana = [grade_of("dense", q, "incorrect", grader="ana", note=f"ana's note {q}") for q in ("q1", "q2", "q3")]
    bo_before = grade_of("dense", "q3", "correct", grader="bo")
    write_grades(path, [*ana, bo_before])
    session = blind_session(project, path, "bo")
    assert [it.key for it in session.items] == [("dense", "q1"), ("dense", "q2")]  # q3: bo graded it; q4: nobody
    assert session.previous_grade(session.items[0]) == (None, False)
    screen = "\n".join(render(session, None, {}, width=100, height=40))
    assert "ana" not in screen and "incorrect" not in screen and "graded 1/3 in scope" in screen
    session.note("bo's own note")
    session.grade("correct")
    session.back()
    screen = "\n".join(render(session, None, {}, width=100, height=40))
    assert "graded this session: correct by bo (note: bo's own note)" in screen and "ana" not in screen
    session.pos = 2
    end = "\n".join(render(session, None, {}, width=100, height=40))
    assert "(2 by bo)" in end and "ana" not in end and "second grader" not in end
    on_file = load_grades(path)  # ana's lines kept first, bo's beside them
    assert [(g.id, g.grader, g.verdict) for g in on_file] == [
        ("q1", "ana", "incorrect"), ("q1", "bo", "correct"), ("q2", "ana", "incorrect"),
        ("q3", "ana", "incorrect"), ("q3", "bo", "correct")]
    assert match_grades(on_file, {("dense", "q1"): ANSWERS["dense"]["q1"]}).verdicts == {("dense", "q1"): False}


def test_a_first_pass_regrade_replaces_the_grader_s_own_line_else_the_first_grader_s(project):
    path = grades_file(project)
    write_grades(path, [grade_of("dense", "q1", "incorrect", grader="ana"),
                        grade_of("dense", "q1", "correct", grader="bo")])
    session = Session(to_grade(items(project), [], regrade=True), path, "bo", load_grades(path))
    session.grade("incorrect")  # bo has a line: it is replaced, ana's stays first
    session.pos = 0
    session.grader = "cy"
    session.grade("correct")  # cy has none: the first grader's line is corrected, as before
    assert [(g.grader, g.verdict) for g in load_grades(path)] == [("cy", "correct"), ("bo", "incorrect")]


def test_an_adjudication_lists_the_disagreements_shows_both_grades_and_saves_an_adjudicated_line(project):
    path = grades_file(project)
    write_grades(path, [grade_of("dense", "q1", "correct", grader="ana", note="names the port"),
                        grade_of("dense", "q1", "incorrect", grader="bo", note="no default"),
                        grade_of("dense", "q2", "correct", grader="ana"), grade_of("dense", "q2", "correct", grader="bo"),
                        grade_of("dense", "q3", "correct", grader="ana")])
    given = load_grades(path)
    its = adjudication_items(items(project), given)
    assert [it.key for it in its] == [("dense", "q1")]  # q2: they agree; q3: one grader
    session = Session(its, path, "cy", given, adjudicate=True)
    screen = "\n".join(render(session, None, {}, width=100, height=40))
    assert "first grader: correct by ana (note: names the port)" in screen
    assert "second grader: incorrect by bo (note: no default)" in screen
    session.grade("incorrect")
    session.back()
    session.grade("correct")  # a second verdict replaces the adjudicated line
    lines = load_grades(path)
    assert [(g.grader, g.verdict, g.role) for g in lines if g.id == "q1"] == [
        ("ana", "correct", None), ("bo", "incorrect", None), ("cy", "correct", "adjudicated")]
    assert match_grades(lines, {("dense", "q1"): ANSWERS["dense"]["q1"]}).verdicts == {("dense", "q1"): True}


# --- support: with a verdict, or in a support pass over this grader's own grades --------------


def test_support_held_before_a_verdict_is_saved_with_it_and_kept_by_a_regrade(project):
    path = grades_file(project)
    session = Session(to_grade(items(project), [], order="listed"), path, "ana", [])
    session.hold_support("partly")
    screen = "\n".join(render(session, None, {}, width=100, height=40))
    assert "support for this grade: partly (press c or w)" in screen
    assert "SUPPORT (optional, then c or w): 1 supported, 2 partly, 3 not" in screen
    session.grade("correct")
    session.grade("incorrect")  # no support given: none written
    session.back()
    session.back()
    session.grade("incorrect")  # a regrade keeps the support given before, as it keeps the note
    assert load_grades(path) == [replace(grade_of("dense", "q1", "incorrect"), support="partly"),
                                 grade_of("dense", "q2", "incorrect")]
    assert '"support"' not in path.read_text().splitlines()[1]


def test_the_support_pass_lists_this_grader_s_current_grades_without_support_and_keeps_the_verdict(project):
    path = grades_file(project)
    sampling = Sampling(draw=1, known_correct=0, known_graded=0, population=8, probability=0.25, rest=8,
                        rest_score=4.0, score=0.5, seed=0)
    q1 = replace(grade_of("dense", "q1", "correct", note="names the port"), sampling=sampling)
    bo_q1 = grade_of("dense", "q1", "incorrect", grader="bo")
    q2 = grade_of("dense", "q2", "correct", grader="bo")  # another grader's: not in ana's pass
    q3 = replace(grade_of("dense", "q3", "incorrect"), support="not")  # done already
    q4 = grade_of("dense", "q4", "incorrect", answer="an older answer text")  # stale: not in the pass
    write_grades(path, [q1, bo_q1, q2, q3, q4])
    given = load_grades(path)
    pool = support_pass_items(items(project), given, "ana")
    assert [it.key for it in pool] == [("dense", "q1"), ("dense", "q3")]
    its, plan = plan_grading(pool, own_supports(given, "ana"), order="listed")
    assert [it.key for it in its] == [("dense", "q1")]
    assert len(plan_grading(pool, own_supports(given, "ana"), order="listed", regrade=True)[0]) == 2
    session = Session(its, path, "ana", given, plan, support_pass=True)
    screen = "\n".join(render(session, None, PASSAGES, width=100, height=40))
    assert "[1/1]  dense  q1  slice main  support 1/2 in scope  support pass" in screen
    assert "your grade: correct (note: names the port), kept\nsupport: not graded yet\n" in screen
    assert "SUPPORT: is every claim of the answer stated in the passages below? 1 supported, 2 partly, 3 not" in screen
    assert "The ledger listens on port 7443 by default." in screen  # the passages the model saw
    assert SUPPORT_KEYS_LINE in screen and "by bo" not in screen and "incorrect" not in screen
    g = session.save_support("supported")
    assert g == replace(q1, support="supported")
    assert load_grades(path) == [replace(q1, support="supported"), bo_q1, q2, q3, q4]  # only ana's q1 line changed
    end = "\n".join(render(session, None, {}, width=100, height=40))
    assert "End of the list: all 2 answers in scope are support-graded (2 by ana)" in end
    assert "second grader" not in end.lower()
    session.back()
    assert "support this session: supported; 1, 2 or 3 changes it" in "\n".join(
        render(session, None, {}, width=100, height=40))
    session.save_support("partly")
    assert load_grades(path)[0] == replace(q1, support="partly")
