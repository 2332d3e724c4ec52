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
    out = dict(rrf([["a"], ["b"]], k=1, weights=[1.0, 3.0]))
    assert out == {"a": pytest.approx(0.5), "b": pytest.approx(1.5)}


def test_rrf_k_defaults_to_the_configs_default():
    from rag_ablation.core.config import DEFAULT_RRF_K
    lists = [["a", "b"], ["b", "c"]]
    assert rrf(lists) == rrf(lists, k=DEFAULT_RRF_K) == fuse("rrf", lists)


@pytest.mark.bad_input
@pytest.mark.parametrize("k", [0, -1, -0.5])
def test_rrf_rejects_a_k_that_is_not_positive(k):
    with pytest.raises(ValueError, match=f"rrf k must be a positive number .*got {k}"):
        rrf([["a"], ["b"]], k=k)


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


def test_ties_decide_whose_chunk_wins_an_rrf_tie():
    """A chunk at rank 1 of the dense list only and one at rank 1 of the BM25 list only have the
    same fused score; `ties` puts its retriever's list first, and RRF gives the tie to it."""
    from rag_ablation.retrieval.fusion import rrf
    from rag_ablation.retrieval.runner import tie_order
    dense, bm25 = ["d", "x"], ["b", "y"]
    for ties, first in (("dense", "d"), ("bm25", "b"), (None, "d")):
        lists, names = tie_order([dense, bm25], ["dense", "bm25"], ties)
        ranking = rrf(lists, k=60)
        assert ranking[0][0] == first and ranking[0][1] == ranking[1][1] == 1 / 61
        assert names[0] == ("bm25" if ties == "bm25" else "dense")
