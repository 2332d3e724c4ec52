"""Several graders per answer text, the adjudicated grade, and which grade is *the* grade."""
import json

import pytest

from rag_ablation.core.errors import InvalidData
from rag_ablation.evaluation.judges.grades import Grade, answer_sha256, chosen, load_grades, match_grades, write_grades

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
