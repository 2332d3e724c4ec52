"""The revision diff (rag_ablation.evaluation.statistics.revision_diff) on a tiny scores file at two
revisions; its text is in tests/evaluation/report/test_diff_text.py, the command, `rag-ablation
diff REV` on a git repository, in tests/commands/test_diff.py."""
from __future__ import annotations

import pytest
from diff_rows import new_rows, old_rows

from rag_ablation.core.config import StatsConfig
from rag_ablation.evaluation.statistics import inference as stats
from rag_ablation.evaluation.statistics.revision_diff import diff_rows

SETTINGS = StatsConfig(resamples=500)


def test_holm_runs_over_the_configs_compared():
    d = diff_rows(old_rows(), new_rows(), rev="base", commit="0" * 40, measure="hit_at_5", settings=SETTINGS,
                  params_order=["dense", "bm25"])
    assert [c.new for c in d.comparisons] == ["dense", "bm25"]
    dense, bm25 = d.comparisons
    assert bm25.binary.p == pytest.approx(min(1.0, 2 * (1 + 3) / 2**3))  # 1 fixed, 2 broken: 2 P(X <= 1 | n=3)
    assert [dense.binary.p_holm, bm25.binary.p_holm] == stats.holm([dense.binary.p, bm25.binary.p])
    assert bm25.binary.family == 2 and bm25.broken_ids == ("q1", "q2") and bm25.fixed_ids == ("q5",)
    assert (d.only_rev, d.only_workspace, d.unavailable) == (("old_only",), ("new_only",), ())


def test_configs_in_params_without_rows_are_unavailable():
    d = diff_rows(old_rows(), new_rows(), rev="base", commit="0" * 40, measure="hit_at_5", settings=SETTINGS,
                  params_order=["dense", "bm25", "hybrid_rerank"], selected=["bm25", "hybrid_rerank"])
    assert [c.new for c in d.comparisons] == ["bm25"] and d.unavailable == ("hybrid_rerank",)
