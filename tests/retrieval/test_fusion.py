from __future__ import annotations

import pytest

from rag_ablation.retrieval.fusion import append, fuse, rrf


def test_rrf_scores_follow_the_formula():
    out = dict(rrf([["a", "b"], ["b", "c"]], k=60))
    assert out["a"] == pytest.approx(1 / 61)
    assert out["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert out["c"] == pytest.approx(1 / 62)
    assert [c for c, _ in rrf([["a", "b"], ["b", "c"]], k=60)] == ["b", "a", "c"]


def test_rrf_weights_scale_each_list():
    out = dict(rrf([["a"], ["b"]], k=0, weights=[1.0, 3.0]))
    assert out == {"a": pytest.approx(1.0), "b": pytest.approx(3.0)}


def test_rrf_ties_break_by_best_rank_then_list_order():
    # a and x both score 1/61: a came first in list 0, x first in list 1 -> a wins the tie
    assert [c for c, _ in rrf([["a"], ["x"]], k=60)] == ["a", "x"]


def test_append_concatenates_without_repeats():
    assert [c for c, _ in append([["a", "b"], ["b", "c"]])] == ["a", "b", "c"]


@pytest.mark.bad_input
def test_unknown_fusion_and_bad_weights():
    with pytest.raises(ValueError, match="expected one of: append, rrf"):
        fuse("max", [["a"]])
    with pytest.raises(ValueError, match="2 rankings"):
        rrf([["a"], ["b"]], weights=[1.0])
