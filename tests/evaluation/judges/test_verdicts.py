"""Verdicts read as code arrays (rag_ablation.evaluation.judges.verdicts)."""

from __future__ import annotations

import numpy as np
import pytest

from rag_ablation.evaluation.judges.verdicts import INVALID, check_same_length, verdict_codes

T, F, N = True, False, None


def test_verdicts_become_int8_codes():
    codes = verdict_codes([T, F, N, np.True_, np.False_], "judge", allow_invalid=True)
    assert codes.dtype == np.int8
    assert codes.tolist() == [1, 0, INVALID, 1, 0]
    assert verdict_codes((F, T), "human", allow_invalid=False).tolist() == [0, 1]


def test_equal_lengths_pass():
    check_same_length(np.zeros(3), np.ones(3), ("a", "b"))


@pytest.mark.bad_input
@pytest.mark.parametrize(
    ("values", "found"),
    [([T, 1], r"x\[1\] is 1 \(int\)"), ([T, "correct"], r"x\[1\] is 'correct' \(str\)"),
     ([float("nan")], r"x\[0\] is nan \(float\)")],
    ids=["int", "str", "nan"],
)
def test_only_bools_and_none_are_judge_verdicts(values, found):
    with pytest.raises(ValueError, match=found + r"; expected True, False or None \(invalid\)"):
        verdict_codes(values, "x", allow_invalid=True)


@pytest.mark.bad_input
def test_a_hand_grade_is_never_none():
    with pytest.raises(ValueError,
                       match=r"x\[0\] is None \(NoneType\); expected True or False \(a hand grade is never invalid\)"):
        verdict_codes([N], "x", allow_invalid=False)


@pytest.mark.bad_input
@pytest.mark.parametrize("values", ["TF", b"TF", {"a": True}, iter([True])], ids=["str", "bytes", "mapping", "iterator"])
def test_a_sequence_is_required(values):
    with pytest.raises(ValueError, match="x must be a sequence of verdicts; got "):
        verdict_codes(values, "x", allow_invalid=True)


@pytest.mark.bad_input
def test_empty_and_unequal_inputs_are_named():
    with pytest.raises(ValueError, match="x is empty; expected at least one verdict"):
        verdict_codes([], "x", allow_invalid=True)
    with pytest.raises(ValueError, match="a has 2 verdicts but b has 3; expected one verdict per answer in both"):
        check_same_length(np.zeros(2), np.zeros(3), ("a", "b"))
