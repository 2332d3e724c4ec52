"""Canary rates of a judge (rag_ablation.evaluation.judges.canaries)."""

from __future__ import annotations

import pytest
from json_ready import plain

from rag_ablation.evaluation.judges.canaries import CANARY_EXPECT_ACCEPT, canary_rates
from rag_ablation.evaluation.statistics.inference import wilson_interval

T, F, N = True, False, None


# ------------------------------------------------------------------------ canaries


def test_canary_rates_with_expectations():
    rates = canary_rates(
        {
            "dummy_yes": [T, F, F, F, N],
            "paraphrased_reference": [T, T, F, T],
            "empty": [N, N],
        }
    )
    assert list(rates) == ["dummy_yes", "paraphrased_reference", "empty"]
    dummy = rates["dummy_yes"]
    assert (dummy.expected_accept, dummy.accepted, dummy.accepted_count, dummy.n, dummy.invalid) == (
        False, 0.25, 1, 4, 1,
    )
    assert dummy.wrong == 0.25
    assert dummy.interval == wilson_interval(1, 4)
    para = rates["paraphrased_reference"]
    assert (para.expected_accept, para.accepted, para.wrong) == (True, 0.75, pytest.approx(0.25))
    empty = rates["empty"]
    assert (empty.accepted, empty.interval, empty.wrong, empty.n, empty.invalid) == (None, None, None, 0, 2)
    assert all(plain(rate.as_dict()) for rate in rates.values())


def test_default_canary_expectations():
    assert {kind for kind, accept in CANARY_EXPECT_ACCEPT.items() if accept} == {
        "padded_reference", "paraphrased_reference",
    }
    assert {"dummy_yes", "dummy_sure", "question_repeated", "empty"} <= set(CANARY_EXPECT_ACCEPT)


def test_other_canary_kinds_need_an_expectation():
    rates = canary_rates({"wrong_number": [F, F, T]}, expect_accept={"wrong_number": False})
    assert rates["wrong_number"].accepted == pytest.approx(1 / 3)


# ------------------------------------------------------------------------- bad input


@pytest.mark.bad_input
def test_empty_input_is_refused():
    with pytest.raises(ValueError, match="verdicts is empty"):
        canary_rates({})
    with pytest.raises(ValueError, match=r"verdicts\['empty'\] is empty"):
        canary_rates({"empty": []})


@pytest.mark.bad_input
def test_other_bad_arguments():
    with pytest.raises(ValueError, match=r"canary kind 'odd' has no expectation; known kinds are \["):
        canary_rates({"odd": [T]})
