"""The text of `rag-ablation diff` (rag_ablation.evaluation.report.diff_text) for the revision diff of
a tiny scores file at two revisions (tests/diff_rows.py); the numbers are tested in
tests/evaluation/statistics/test_revision_diff.py."""
from __future__ import annotations

from diff_rows import new_rows, old_rows

from rag_ablation.core.config import StatsConfig
from rag_ablation.evaluation.report.diff_text import format_markdown, format_text, summary_rows
from rag_ablation.evaluation.report.formatting import p_value, signed
from rag_ablation.evaluation.statistics.revision_diff import diff_rows

SETTINGS = StatsConfig(resamples=500)


def diff(**kwargs):
    return diff_rows(old_rows(), new_rows(), rev="base", commit="0" * 40, measure="hit_at_5", settings=SETTINGS,
                     **{"params_order": ["dense", "bm25"], **kwargs})


def test_configs_in_params_without_rows_are_named():
    d = diff(params_order=["dense", "bm25", "hybrid_rerank"], selected=["bm25", "hybrid_rerank"])
    assert "No scored rows on either side: hybrid_rerank." in format_text(d)
    assert "No scored rows on either side: hybrid_rerank." in format_markdown(d)


def test_summary_rows_hold_the_counts_the_change_and_the_verdict():
    d = diff()
    header, rows = summary_rows(d)
    assert header[7] == "Holm p (of 2)" and header[-1] == "verdict"
    dense, bm25 = rows
    assert dense[:5] == ["dense", "10", "0", "0", signed(0.0)] and dense[-1] == "no change"
    b = d.comparisons[1].binary
    assert bm25[:5] == ["bm25", "10", "1", "2", signed((1 - 2) / 10)]
    assert bm25[6:8] == [p_value(b.p), p_value(b.p_holm)] and bm25[-1] == "within the noise"


def test_text_and_markdown_name_the_questions_per_slice():
    d = diff()
    text, md = format_text(d), format_markdown(d)
    assert "bm25: fixed 1, broken 2" in text and "- `bm25`: fixed 1, broken 2" in md
    assert "  - identifier (too small to decide): broken q1, q2" in text
    assert md.startswith("### Retrieval against `base`") and "| `bm25` | 10 | 1 | 2 |" in md
    assert text.endswith("\n") and md.endswith("\n")
