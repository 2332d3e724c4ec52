"""A judge's score read from verdicts.csv and joined onto answer rows."""
from __future__ import annotations

import pytest

from rag_ablation.core.errors import InvalidData, UserError
from rag_ablation.evaluation.scoring.judge_scores import judge_score, with_judge_score

ANSWERS = [{"config": "dense", "id": "q1", "token_f1": 0.5}, {"config": "dense", "id": "q2", "token_f1": 0.0},
           {"config": "hybrid", "id": "q1", "token_f1": 1.0}]


def test_a_cell_is_a_score_from_0_to_1_or_none_when_empty():
    assert judge_score("0.250000", "f") == 0.25 and judge_score("1", "f") == 1.0 and judge_score("0", "f") == 0.0
    assert judge_score("", "f") is None and judge_score("  ", "f") is None


@pytest.mark.bad_input
@pytest.mark.parametrize("text", ["1.5", "-0.1", "nan", "high", "inf"])
def test_a_cell_that_is_no_score_names_where_it_is(text):
    with pytest.raises(InvalidData, match=rf"verdicts.csv line 3, column llm_score: score '{text}' is not a number "
                                          r"from 0 to 1; rerun `dvc repro judge_eval`"):
        judge_score(text, "verdicts.csv line 3, column llm_score")


def test_the_score_is_joined_by_config_and_id_and_none_where_absent():
    verdicts = [{"config": "dense", "id": "q1", "llm_score": "0.900000"}, {"config": "dense", "id": "q2", "llm_score": ""},
                {"config": "bm25", "id": "q1", "llm_score": "0.1"}]
    out = with_judge_score(ANSWERS, verdicts, "llm_score", where="v")
    assert [r["llm_score"] for r in out] == [0.9, None, None]  # hybrid q1 has no verdict row
    assert out[0] == {**ANSWERS[0], "llm_score": 0.9} and "llm_score" not in ANSWERS[0]  # input rows untouched


@pytest.mark.bad_input
def test_verdicts_without_the_column_or_with_a_bad_cell_are_one_message():
    with pytest.raises(UserError, match=r"v has no column 'combined_score' \(judge scores there: llm_score\); "
                                        r"regenerate it with `dvc repro judge_eval`"):
        with_judge_score(ANSWERS, [{"config": "dense", "id": "q1", "llm_score": "0.5"}], "combined_score", where="v")
    with pytest.raises(InvalidData, match=r"v line 3, column llm_score: score '2' is not"):
        with_judge_score(ANSWERS, [{"config": "dense", "id": "q1", "llm_score": "0.5"},
                                   {"config": "dense", "id": "q2", "llm_score": "2"}], "llm_score", where="v")
