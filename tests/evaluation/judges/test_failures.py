"""Failure table and retrieved-by-correct 2x2 table of one config's answers
(rag_ablation.evaluation.judges.failures).

Fixtures are hand-built answer rows; expected counts are read off the fixture and shares are
written as the formulas the docstrings give.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_ablation.evaluation.judges.failures import (
    FAILURE_CATEGORIES,
    FailureTable,
    TwoByTwo,
    failure_table,
    two_by_two,
)
from rag_ablation.evaluation.statistics.inference import wilson_interval


def row(qid: str, *, answerable=1, refusal=0, relevant=1, correct=True, **extra) -> dict:
    """An answer row as ``read_scores`` gives it (0/1 ints) with the verdict joined on as ``correct``."""
    return {"config": "dense", "id": qid, "answerable": answerable, "refusal": refusal,
            "relevant_in_prompt": relevant if answerable else None, "correct": correct, **extra}


def unanswerable(qid: str, *, refusal=0) -> dict:
    return row(qid, answerable=0, refusal=refusal, correct=None)


# One answer per failure kind, some kinds more than once; ids deliberately out of order.
MIXED = [
    row("q09", refusal=1, relevant=1, correct=False),  # refused with relevant
    row("q02", refusal=1, relevant=0, correct=None),  # refused without (verdict not needed)
    row("q01", refusal=1, relevant=0, correct=False),  # refused without
    row("q05", relevant=1, correct=False),  # wrong with relevant
    row("q08", relevant=0, correct=False),  # wrong without: retrieval failure
    row("q03", relevant=0, correct=0),  # wrong without
    row("q07", relevant=1, correct=True),  # correct with
    row("q04", relevant=1, correct=1),  # correct with
    row("q10", relevant=1, correct=True),  # correct with
    row("q06", relevant=0, correct=True),  # correct without
    row("q12", relevant=1, correct=None),  # unknown
    row("q11", relevant=0, correct=None),  # unknown
    unanswerable("u1"),
    unanswerable("u2", refusal=1),
]
MIXED_IDS = {
    "refused_with_relevant": ["q09"],
    "refused_without_relevant": ["q01", "q02"],
    "wrong_with_relevant": ["q05"],
    "wrong_without_relevant": ["q03", "q08"],
    "correct_with_relevant": ["q04", "q07", "q10"],
    "correct_without_relevant": ["q06"],
    "unknown": ["q11", "q12"],
}
N_ANSWERABLE = 12


# ---------------------------------------------------------------------- failure table


def test_failure_table_counts_ids_and_shares():
    table = failure_table(MIXED)
    assert table.n == N_ANSWERABLE
    assert table.unanswerable_skipped == 2
    assert list(table.cells()) == list(FAILURE_CATEGORIES)
    for name, ids in MIXED_IDS.items():
        cell = getattr(table, name)
        assert cell.ids == tuple(ids), name
        assert cell.count == len(ids), name
        assert cell.share == len(ids) / N_ANSWERABLE, name
    assert sum(c.count for c in table.cells().values()) == table.n
    assert sum(c.share for c in table.cells().values()) == pytest.approx(1.0)


def test_failure_table_refusal_wins_over_verdict():
    # a refusal graded "correct" is still a refusal: the grading rule makes it incorrect anyway
    table = failure_table([row("a", refusal=1, relevant=1, correct=True),
                           row("b", refusal=1, relevant=0, correct=True)])
    assert table.refused_with_relevant.ids == ("a",)
    assert table.refused_without_relevant.ids == ("b",)
    assert table.correct_with_relevant.count == table.correct_without_relevant.count == 0


def test_failure_table_accepts_bools_and_numpy_flags():
    as_ints = failure_table(MIXED)
    as_bools = failure_table([{k: (bool(v) if k in ("answerable", "refusal") else v) for k, v in r.items()}
                              for r in MIXED])
    as_numpy = failure_table([{**r, "answerable": np.int64(r["answerable"]), "refusal": np.bool_(r["refusal"])}
                              for r in MIXED])
    assert as_ints == as_bools == as_numpy


def test_failure_table_empty_groups_give_none_shares():
    for rows in ([], [unanswerable("u1"), unanswerable("u2", refusal=1)]):
        table = failure_table(rows)
        assert table.n == 0
        assert table.unanswerable_skipped == len(rows)
        for cell in table.cells().values():
            assert cell.count == 0 and cell.share is None and cell.ids == ()


def test_failure_table_unanswerable_rows_need_no_verdict_or_relevance():
    bare = {"id": "u1", "answerable": False}
    assert failure_table([bare, row("q1")]).n == 1


def test_failure_table_as_dict_is_json_ready():
    d = failure_table(MIXED).as_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert d["n"] == N_ANSWERABLE and d["unanswerable_skipped"] == 2
    assert d["wrong_without_relevant"] == {"count": 2, "share": 2 / N_ANSWERABLE, "ids": ["q03", "q08"]}
    assert set(d) == {"n", "unanswerable_skipped", *FAILURE_CATEGORIES}
    assert isinstance(failure_table(MIXED), FailureTable)


# -------------------------------------------------------------------------- 2x2 table

# retrieved: 3 correct, 1 wrong; missed: 1 correct, 2 wrong; 2 unknown; 1 unanswerable
GRID = [
    row("r1", relevant=1, correct=True),
    row("r2", relevant=1, correct=True),
    row("r3", relevant=1, correct=1),
    row("r4", relevant=1, correct=False),
    row("m1", relevant=0, correct=True),
    row("m2", relevant=0, correct=False),
    row("m3", relevant=0, correct=0, refusal=1),  # a refusal: its verdict decides (incorrect)
    row("x2", relevant=1, correct=None),
    row("x1", relevant=0, correct=None),
    unanswerable("u1", refusal=1),
]


def test_two_by_two_counts_and_row_shares():
    t = two_by_two(GRID, source="hand grades")
    assert (t.retrieved_correct, t.retrieved_wrong, t.missed_correct, t.missed_wrong) == (3, 1, 1, 2)
    assert t.n == 3 + 1 + 1 + 2
    assert t.unknown == 2 and t.unknown_ids == ("x1", "x2")
    assert t.unanswerable_skipped == 1
    assert t.correct_given_retrieved == 3 / (3 + 1)
    assert t.correct_given_missed == 1 / (1 + 2)
    assert t.correct_given_retrieved_interval == wilson_interval(3, 3 + 1)
    assert t.correct_given_missed_interval == wilson_interval(1, 1 + 2)
    assert t.source == "hand grades"


def test_two_by_two_uses_the_verdict_not_the_refusal_flag():
    # a refusal the source graded correct stays correct here: the table shows the source's verdicts
    t = two_by_two([row("a", refusal=1, relevant=1, correct=True)], source="judge: gpt-x")
    assert t.retrieved_correct == 1
    no_refusal_key = [{"id": "b", "answerable": 1, "relevant_in_prompt": 0, "correct": False}]
    assert two_by_two(no_refusal_key, source="hand grades").missed_wrong == 1


def test_two_by_two_empty_row_gives_none():
    t = two_by_two([row("r1", relevant=1, correct=True), row("r2", relevant=1, correct=False),
                    row("m1", relevant=0, correct=None)], source="judge: small")
    assert t.correct_given_retrieved == 1 / 2
    assert t.correct_given_missed is None and t.correct_given_missed_interval is None
    assert t.unknown == 1 and t.n == 2
    empty = two_by_two([], source="hand grades")
    assert empty.n == 0 and empty.correct_given_retrieved is None and empty.correct_given_missed is None


def test_two_by_two_as_dict_carries_source_and_is_json_ready():
    t = two_by_two(GRID, source="judge: qwen2.5-7b")
    d = t.as_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert d["source"] == "judge: qwen2.5-7b"
    assert d["n"] == 7 and d["unknown_ids"] == ["x1", "x2"]
    w = wilson_interval(1, 3)
    assert d["correct_given_missed_interval"] == {"estimate": w.estimate, "low": w.low, "high": w.high}
    assert isinstance(t, TwoByTwo)


def test_two_by_two_markdown():
    assert two_by_two(GRID, source="hand grades").markdown() == (
        "| relevant passage in prompt | correct | wrong | share correct |\n"
        "| --- | --- | --- | --- |\n"
        "| yes | 3 | 1 | 75% |\n"
        "| no | 1 | 2 | 33% |\n"
        "\n"
        "Correctness from hand grades; 7 answer(s) to answerable questions with a known verdict; "
        "2 with an unknown verdict left out."
    )
    only_retrieved = two_by_two([row("r1", relevant=1)], source="judge: j").markdown()
    assert "| no | 0 | 0 | n/a |" in only_retrieved
    assert "Correctness from judge: j;" in only_retrieved


# ------------------------------------------------------------------------- bad input


@pytest.mark.bad_input
@pytest.mark.parametrize("function", [failure_table, lambda rows: two_by_two(rows, source="hand grades")])
@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{k: v for k, v in row("q1").items() if k != "correct"}], "no 'correct' key"),
        ([row("q1", correct="yes")], "correct='yes'; expected a bool, 0/1 or None"),
        ([row("q1", relevant=None)], "relevant_in_prompt=None; expected a bool or 0/1"),
        ([row("q1", relevant=2)], "relevant_in_prompt=2"),
        ([row("q1", answerable=1.0)], "answerable=1.0"),
        ([{"id": "q1", "refusal": 0}], "no 'answerable' key"),
        ([row("q1"), row("q1")], "'q1' appears in rows 0 and 1"),
        ([{"answerable": 1}], "row 0 has no 'id' key"),
        ([row("")], "expected a non-empty string"),
        (["q1"], "row 0 is a str; expected a mapping"),
    ],
)
def test_bad_rows(function, rows, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        function(rows)


@pytest.mark.bad_input
def test_failure_table_needs_refusal():
    with pytest.raises(ValueError, match="no 'refusal' key"):
        failure_table([{"id": "q1", "answerable": 1, "relevant_in_prompt": 1, "correct": True}])


@pytest.mark.bad_input
def test_rows_must_be_iterable():
    with pytest.raises(ValueError, match="iterable of mappings"):
        failure_table(3)


@pytest.mark.bad_input
@pytest.mark.parametrize("source", ["", "hand", "judge: ", "judge:x", "Hand grades", None, 1])
def test_two_by_two_bad_source(source):
    with pytest.raises(ValueError, match="expected 'hand grades' or 'judge: <name>'"):
        two_by_two(GRID, source=source)
