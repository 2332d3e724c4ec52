from __future__ import annotations

import numpy as np
import pytest

from rag_ablation.text import get_tokenizer, regex_tokens

from rag_ablation.retrieval.bm25 import make_scorer, top_k

DOCS = [
    "Call `pfcount` to read the counter.",
    "task_destroy frees the task and its stack.",
    "RefCell gives interior mutability at run time.",
    "The counter is read and the task is freed.",
    "the the the the and and of of",
]


def test_regex_tokenizer_keeps_identifiers_whole():
    assert regex_tokens("What does `pfcount` return?") == ["what", "does", "pfcount", "return"]
    assert regex_tokens("task_destroy and RefCell?") == ["task_destroy", "and", "refcell"]
    assert regex_tokens("farebox-api") == ["farebox", "api"]


def test_whitespace_tokenizer_shows_the_regression():
    ws = get_tokenizer("whitespace")
    assert "pfcount?" in ws("what is pfcount?") and "`pfcount`" in ws(DOCS[0])


@pytest.mark.bad_input
def test_unknown_names_list_valid_ones():
    with pytest.raises(ValueError, match="expected one of: regex, whitespace"):
        get_tokenizer("split")
    with pytest.raises(ValueError, match="expected one of: bm25s, rank_bm25"):
        make_scorer("lucene", [["a"]], k1=1.5, b=0.75, epsilon=0.25)
    with pytest.raises(ValueError, match="zero chunks"):
        make_scorer("rank_bm25", [], k1=1.5, b=0.75, epsilon=0.25)
    with pytest.raises(ValueError, match="set bm25.epsilon to 0"):
        make_scorer("bm25s", [["a"]], k1=1.5, b=0.75, epsilon=0.25)


def test_identifier_query_finds_its_chunk():
    tokens = [regex_tokens(d) for d in DOCS]
    scorer = make_scorer("rank_bm25", tokens, k1=1.5, b=0.75, epsilon=0.25)
    assert top_k(scorer.scores(regex_tokens("what does pfcount return?")), 1)[0][0] == 0
    assert top_k(scorer.scores(regex_tokens("explain task_destroy?")), 1)[0][0] == 1


def test_bm25s_equals_rank_bm25_with_the_floor_matched():
    tokens = [regex_tokens(d) for d in DOCS] * 3  # 'the' in most chunks: negative idf
    ref = make_scorer("rank_bm25", tokens, k1=1.2, b=0.7, epsilon=0.0)
    fast = make_scorer("bm25s", tokens, k1=1.2, b=0.7, epsilon=0.0)
    for q in ["the counter", "task_destroy stack", "refcell the", "unknownword"]:
        np.testing.assert_allclose(fast.scores(regex_tokens(q)), ref.scores(regex_tokens(q)), rtol=1e-5, atol=1e-6)


def test_top_k_is_deterministic_on_ties():
    assert top_k(np.array([1.0, 2.0, 2.0, 0.5]), 3) == [(1, 2.0), (2, 2.0), (0, 1.0)]
    assert len(top_k(np.array([1.0]), 5)) == 1


def test_top_k_equals_a_full_stable_sort():
    rng = np.random.default_rng(0)
    for _ in range(200):
        scores = rng.integers(0, 5, size=int(rng.integers(1, 40))).astype(float)  # many ties
        k = int(rng.integers(0, 50))
        expected = np.lexsort((np.arange(len(scores)), -scores))[: min(k, len(scores))]
        assert [i for i, _ in top_k(scores, k)] == list(expected)


def test_a_memory_mapped_bm25s_index_scores_as_the_in_memory_one(tmp_path):
    from rag_ablation.retrieval.bm25 import load_bm25s

    tokens = [regex_tokens(d) for d in DOCS] * 3
    built = make_scorer("bm25s", tokens, k1=1.2, b=0.7, epsilon=0.0)
    built.save(tmp_path / "a")
    make_scorer("bm25s", tokens, k1=1.2, b=0.7, epsilon=0.0).save(tmp_path / "b")
    for f in sorted((tmp_path / "a").iterdir()):  # deterministic, and numpy arrays without pickle
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name
        if f.suffix == ".npy":
            np.load(f, allow_pickle=False)
    mapped = load_bm25s(tmp_path / "a", k1=1.2, b=0.7, mmap=True)
    assert isinstance(mapped._bm25.scores["data"], np.memmap)
    for q in ["the counter", "task_destroy stack", "refcell the", "unknownword", ""]:
        np.testing.assert_array_equal(mapped.scores(regex_tokens(q)), built.scores(regex_tokens(q)))


@pytest.mark.bad_input
def test_a_bm25s_index_of_other_params_or_none_is_refused(tmp_path):
    from rag_ablation.retrieval.bm25 import load_bm25s

    make_scorer("bm25s", [regex_tokens(d) for d in DOCS], k1=1.2, b=0.7, epsilon=0.0).save(tmp_path / "a")
    with pytest.raises(ValueError, match=r"built with .*'k1': 1\.2.*expected .*'k1': 1\.5.*; rebuild it"):
        load_bm25s(tmp_path / "a", k1=1.5, b=0.7)
    with pytest.raises(FileNotFoundError, match="no bm25s index"):
        load_bm25s(tmp_path / "missing", k1=1.2, b=0.7)
