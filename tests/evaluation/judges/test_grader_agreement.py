"""Two graders' agreement (rag_ablation.evaluation.judges.grader_agreement): the pairs, kappa by
scikit-learn with the judges' bootstrap interval, the 2x2 table, and the disagreements."""
from __future__ import annotations

from rag_ablation.evaluation.judges.agreement import agreement
from rag_ablation.evaluation.judges.grader_agreement import (HOW_TO_ADD, grader_agreement, grader_detail,
                                                             grader_pairs)
from rag_ablation.evaluation.judges.grades import Grade, answer_sha256

FIRST = {"q1": "correct", "q2": "correct", "q3": "incorrect", "q4": "incorrect"}
SECOND = {"q1": "correct", "q2": "incorrect", "q3": "incorrect", "q4": "incorrect"}
HASHES = {("c", q): answer_sha256(f"answer {q}") for q in [*FIRST, "q5"]}


def grade(q: str, grader: str, verdict: str, *, text: str | None = None, note: str = "", role: str | None = None):
    return Grade(answer_sha256(text or f"answer {q}"), "c", grader, q, note, verdict, role=role)


def grades() -> list[Grade]:
    return ([grade(q, "ana", v, note=f"ana on {q}") for q, v in FIRST.items()]
            + [grade(q, "bo", v) for q, v in SECOND.items()]
            + [grade("q5", "ana", "correct"),  # graded once: no pair
               grade("q1", "cy", "incorrect"),  # a third grader: not used
               grade("q3", "bo", "correct", text="an older text")])  # stale: not used


def test_each_pair_is_the_first_grader_and_the_next_other_grader_on_the_current_text():
    pairs = grader_pairs(grades(), HASHES)
    assert [(p.key, p.first.grader, p.second.grader) for p in pairs] == [(("c", q), "ana", "bo") for q in FIRST]
    assert [p.agree for p in pairs] == [FIRST[q] == SECOND[q] for q in FIRST]


def test_kappa_is_cohens_with_the_judges_bootstrap_interval_and_the_table_counts_pairs():
    out = grader_agreement(grader_pairs(grades(), HASHES), resamples=300, seed=1, confidence=0.9)
    n = len(FIRST)
    p_o = sum(FIRST[q] == SECOND[q] for q in FIRST) / n
    share1 = sum(v == "correct" for v in FIRST.values()) / n
    share2 = sum(v == "correct" for v in SECOND.values()) / n
    p_e = share1 * share2 + (1 - share1) * (1 - share2)
    assert out["n"] == n and out["kappa"]["estimate"] == (p_o - p_e) / (1 - p_e)  # 0.5
    same = agreement([SECOND[q] == "correct" for q in FIRST], [FIRST[q] == "correct" for q in FIRST],
                     n_resamples=300, seed=1, confidence=0.9).kappa.as_dict()
    assert (out["kappa"]["low"], out["kappa"]["high"]) == (same["low"], same["high"])
    assert out["accuracy"]["estimate"] == p_o
    assert out["table"] == {"both_correct": 1, "first_only": 1, "second_only": 0, "both_incorrect": 2}


def test_two_graders_giving_every_answer_the_same_verdict_have_no_kappa():
    same = [grade("q1", "ana", "correct"), grade("q1", "bo", "correct")]
    out = grader_agreement(grader_pairs(same, HASHES), resamples=50, seed=0, confidence=0.95)
    assert out["kappa"]["estimate"] is None and out["kappa"]["reason"] and out["kappa"]["low"] is None


def test_the_detail_lists_disagreements_with_notes_and_adjudications_per_config():
    adjudicated = grade("q2", "dee", "incorrect", role="adjudicated")
    detail = grader_detail([*grades(), adjudicated], HASHES, ["c", "other"], resamples=50, seed=0, confidence=0.95)
    assert detail["status"] == "ok" and detail["graders"] == ["ana", "bo"] and list(detail["configs"]) == ["c"]
    assert detail["disagreements"] == [{
        "config": "c", "id": "q2", "answer_sha256": HASHES[("c", "q2")],
        "first": {"grader": "ana", "verdict": "correct", "note": "ana on q2"},
        "second": {"grader": "bo", "verdict": "incorrect", "note": ""}, "adjudicated": "incorrect"}]
    assert detail["adjudicated"] == 1


def test_without_a_second_grader_the_detail_says_how_to_add_one():
    assert grader_detail([grade("q1", "ana", "correct")], HASHES, ["c"], resamples=50, seed=0,
                         confidence=0.95) == {"status": "none", "reason": HOW_TO_ADD}
