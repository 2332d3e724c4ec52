"""Several graders per answer text, the adjudicated grade, and which grade is *the* grade."""
import json

import pytest

from rag_ablation.core.errors import InvalidData
from rag_ablation.evaluation.judges.grades import (Grade, answer_sha256, chosen, load_grades, match_grades, support_of,
                                                 write_grades)

TEXT = "port 8080"
H = answer_sha256(TEXT)


def line(grader, verdict, qid="q0", **extra):
    return json.dumps({"answer_sha256": H, "config": "c", "grader": grader, "id": qid, "note": "",
                       "verdict": verdict, **extra})


def test_two_graders_of_one_text_keep_two_lines_and_the_first_grader_is_the_grade(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join([line("ana", "correct"), line("bo", "incorrect")]) + "\n")
    grades = load_grades(path)
    assert [(g.grader, g.verdict) for g in grades] == [("ana", "correct"), ("bo", "incorrect")]
    assert match_grades(grades, {("c", "q0"): TEXT}).verdicts == {("c", "q0"): True}  # ana's: the earliest line


def test_an_adjudicated_line_wins_wherever_it_stands_and_a_rewrite_keeps_it(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join([line("ana", "incorrect", role="adjudicated"),
                               line("ana", "correct"), line("bo", "incorrect")]) + "\n")
    grades = load_grades(path)
    assert chosen(grades)[("c", "q0", H)].adjudicated
    assert match_grades(grades, {("c", "q0"): TEXT}).verdicts == {("c", "q0"): False}
    write_grades(tmp_path / "h.jsonl", grades)
    assert load_grades(tmp_path / "h.jsonl") == grades
    assert '"role": "adjudicated"' in (tmp_path / "h.jsonl").read_text().splitlines()[0]


def test_a_rewrite_keeps_the_first_grader_first_among_other_texts(tmp_path):
    ana = Grade(H, "c", "zed", "q1", "", "correct")
    bo = Grade(H, "c", "abe", "q1", "", "incorrect")
    other = Grade(H, "c", "abe", "q0", "", "incorrect")
    write_grades(tmp_path / "g.jsonl", [ana, other, bo])
    assert load_grades(tmp_path / "g.jsonl") == [other, ana, bo]
    assert "role" not in (tmp_path / "g.jsonl").read_text()  # an ordinary grade is written as before


def test_a_file_without_roles_reads_as_before(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text(line("ana", "correct") + "\n")
    assert load_grades(path) == [Grade(H, "c", "ana", "q0", "", "correct")]


@pytest.mark.bad_input
def test_a_grader_with_two_verdicts_for_one_text_an_unknown_role_and_two_adjudications_are_named(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join([
        line("ana", "correct"), line("ana", "incorrect"),
        line("bo", "correct", role="referee"),
        line("cy", "correct", role="adjudicated"), line("dee", "incorrect", role="adjudicated"),
    ]) + "\n")
    with pytest.raises(InvalidData) as e:
        load_grades(path)
    msg = str(e.value)
    assert "3 bad grade line(s)" in msg
    assert ("line 2: config 'c' question 'q0' is graded again for the same answer text (first on line 1) by the "
            "same grader 'ana', with another verdict (correct, then incorrect): keep the one meant") in msg
    assert "line 3: role 'referee' is not one of adjudicated" in msg
    assert "line 5: config 'c' question 'q0' has a second adjudicated grade for the same answer text (first on line 4)" in msg


@pytest.mark.bad_input
def test_an_adjudicated_line_with_sampling_is_refused(tmp_path):
    sampling = {"draw": 1, "known_correct": 0, "known_graded": 0, "population": 2, "probability": 0.5, "rest": 2,
                "rest_score": 1.0, "score": 0.5, "seed": 0}
    path = tmp_path / "g.jsonl"
    path.write_text(line("ana", "correct", role="adjudicated", sampling=sampling) + "\n")
    with pytest.raises(InvalidData, match="line 1: an adjudicated grade has no 'sampling'"):
        load_grades(path)


def test_the_stale_count_counts_each_answer_text_once():
    old = answer_sha256("an older text")
    grades = [Grade(old, "c", "ana", "q0", "", "correct"), Grade(old, "c", "bo", "q0", "", "correct")]
    m = match_grades(grades, {("c", "q0"): TEXT})
    assert (m.verdicts, m.stale, m.unknown) == ({}, 1, 0)


# --- support: is the answer supported by the passages the model was shown? --------------------


def test_a_file_without_support_rewrites_byte_identical_and_reads_support_as_none(tmp_path):
    path = tmp_path / "g.jsonl"
    write_grades(path, [Grade(H, "c", "ana", "q0", "exact", "correct"), Grade(H, "c", "bo", "q0", "", "incorrect")])
    before = path.read_bytes()
    grades = load_grades(path)
    assert [g.support for g in grades] == [None, None]
    write_grades(tmp_path / "h.jsonl", grades)
    assert (tmp_path / "h.jsonl").read_bytes() == before
    assert b"support" not in before


def test_support_round_trips_and_is_written_only_on_the_lines_that_have_it(tmp_path):
    graded = [Grade(H, "c", "ana", "q0", "", "correct", support="partly"),
              Grade(H, "c", "bo", "q0", "", "correct"),
              Grade(H, "c", "cy", "q0", "", "incorrect", role="adjudicated", support="not")]
    path = tmp_path / "g.jsonl"
    write_grades(path, graded)
    assert load_grades(path) == graded
    assert [json.loads(x).get("support") for x in path.read_text().splitlines()] == ["partly", None, "not"]
    assert path.read_text().splitlines()[0] == json.dumps(
        {"answer_sha256": H, "config": "c", "grader": "ana", "id": "q0", "note": "", "support": "partly",
         "verdict": "correct"})


@pytest.mark.bad_input
def test_a_support_level_outside_the_three_is_one_error_naming_the_line(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join([line("ana", "correct", support="supported"), line("bo", "correct", support="yes")])
                    + "\n")
    with pytest.raises(InvalidData) as e:
        load_grades(path)
    msg = str(e.value)
    assert "1 bad grade line(s)" in msg
    assert ("line 2: support 'yes' is not one of supported, partly, not (supported: every claim of the answer is in "
            "the passages shown; partly: some are; not: none is; leave 'support' out when it is not graded)") in msg


def test_the_support_of_an_answer_is_the_adjudicated_lines_else_the_earliest_line_with_one():
    other = answer_sha256("another text")
    grades = [
        # q0: ana gave none, bo gave partly, dee too late: bo's is the earliest with support
        Grade(H, "c", "ana", "q0", "", "correct"), Grade(H, "c", "bo", "q0", "", "correct", support="partly"),
        Grade(H, "c", "dee", "q0", "", "correct", support="supported"),
        # q1: the adjudicated line's support wins wherever it stands
        Grade(H, "c", "ana", "q1", "", "correct", support="supported"),
        Grade(H, "c", "cy", "q1", "", "incorrect", role="adjudicated", support="not"),
        # q2: an adjudicated line without support leaves the earliest line's
        Grade(H, "c", "cy", "q2", "", "incorrect", role="adjudicated"),
        Grade(H, "c", "ana", "q2", "", "incorrect", support="partly"),
        # q3: support given for another text only (stale): none
        Grade(other, "c", "ana", "q3", "", "correct", support="supported"),
        # q4: graded, no support; q5: no current answer
        Grade(H, "c", "ana", "q4", "", "correct"), Grade(H, "c", "ana", "q5", "", "correct", support="not"),
    ]
    hashes = {("c", q): H for q in ("q0", "q1", "q2", "q3", "q4")}
    assert support_of(grades, hashes) == {("c", "q0"): "partly", ("c", "q1"): "not", ("c", "q2"): "partly"}
    assert support_of(grades, {("c", "q3"): other}) == {("c", "q3"): "supported"}
