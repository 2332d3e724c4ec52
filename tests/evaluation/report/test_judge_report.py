"""The report's graded-answer sections (rag_ablation.evaluation.report.judge_report)."""
from __future__ import annotations

from rag_ablation.core.config import SCORE_DIGITS
from rag_ablation.core.io import round_significant
from rag_ablation.evaluation.report.judge_report import grades_text, unanswerable_section


def test_the_best_threshold_is_printed_with_the_digits_the_scores_keep():
    """A top score is written to SCORE_DIGITS significant digits (scores.score_run), and the
    threshold is one of them: printed with as many, not padded with zeros."""
    cosine, rrf = round_significant(0.46489, SCORE_DIGITS), round_significant(0.0325203, SCORE_DIGITS)
    detail = {"configs": {c: {"status": "ok", "threshold": {
        "answerable_median": 0.6, "unanswerable_median": 0.5, "auc": 0.7,
        "best": {"threshold": t, "coverage": 0.82, "false_decline_rate": 0.143, "false_answer_rate": 0.5}}}
        for c, t in (("dense", cosine), ("hybrid", rrf))}}
    text = unanswerable_section(detail, ["dense", "hybrid"])
    assert f"| `dense` | 0.600 | 0.500 | 0.700 | {cosine} | 82.0% | 14.3% | 50.0% |" in text
    assert f"| `hybrid` | 0.600 | 0.500 | 0.700 | {rrf} | 82.0% | 14.3% | 50.0% |" in text
    assert (f"{cosine}", f"{rrf}") == ("0.465", "0.0325")


def test_the_grade_counts_say_what_stale_and_unknown_mean():
    """report.md and report.html word the counts alike (html_data passes this text): a stale grade
    graded another text of a current answer, an unknown one an answer that no longer exists."""
    text = grades_text({"matching": 5, "stale": 158, "unknown": 0, "answers": 8})
    assert text.startswith("5 hand grades (the data set's grades.jsonl") and "current text of 8 answers" in text
    assert "158 graded another text of a current answer (an earlier generation or another answer model: stale)" in text
    assert "0 an answer that no longer exists (unknown); neither is used" in text
    none = grades_text({"matching": 0, "stale": 0, "unknown": 0, "answers": 48})
    assert none.startswith("No hand grades") and "none of the 48 current answers" in none
