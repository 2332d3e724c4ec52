"""Which graded questions get canaries (rag_ablation.evaluation.judges.judge_checks.canary_questions)."""
from __future__ import annotations

from rag_ablation.evaluation.judges.judge_checks import bias_sample, canary_questions

GRADED = [f"q{i}" for i in range(10)]


def test_every_graded_question_without_a_sample_else_the_seeded_bias_sample():
    assert canary_questions(GRADED, None, 0) == GRADED
    assert canary_questions(GRADED, 4, 3) == bias_sample(GRADED, 4, 3)
    assert len(canary_questions(GRADED, 4, 3)) == 4 and canary_questions(GRADED, 99, 0) == sorted(GRADED)
