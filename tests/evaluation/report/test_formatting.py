"""How numbers are written (rag_ablation.evaluation.report.formatting): the forms of the graded-answer
sections, which may be None, beside the retrieval forms, which never are."""
from __future__ import annotations

from rag_ablation.evaluation.report.formatting import interval, num, num_or_na, percent, share, with_interval


def test_num_or_na_is_num_or_na():
    assert num_or_na(0.1126) == num(0.1126) == "0.113" and num_or_na(None) == "n/a"


def test_percent_keeps_one_decimal_where_share_keeps_none():
    assert percent(0.4375) == "43.8%" and share(0.4375) == "44%" and percent(None) == "n/a"


def test_with_interval_writes_the_estimate_and_its_bounds():
    assert with_interval(0.1126, 0.06, 0.2) == "0.113 (0.060 to 0.200)"
    assert with_interval(0.1126, 0.06, 0.2) == f"{num(0.1126)} ({interval({'ci_low': 0.06, 'ci_high': 0.2})})"
    assert with_interval(0.5, None, 0.7) == "0.500" and with_interval(None, 0.1, 0.2) == "n/a"
    assert with_interval(0.25, 0.1, 0.5, percent) == "25.0% (10.0% to 50.0%)"
