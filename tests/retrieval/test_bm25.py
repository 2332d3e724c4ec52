from __future__ import annotations

import numpy as np
import pytest

from rag_ablation.data.text import get_tokenizer, regex_tokens

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


def _cfg(**kw):
    from rag_ablation.core.config import Bm25Config

    return Bm25Config(**kw)


def test_the_index_folder_keeps_tokens_by_default_and_the_bm25s_matrix_with_mmap(tmp_path):
    from rag_ablation.retrieval.bm25 import BM25sScorer, open_bm25, save_bm25

    tokens = [regex_tokens(d) for d in DOCS]
    ids = [f"c{i}" for i in range(len(DOCS))]
    for name, cfg in [("tokens", _cfg()), ("bm25s", _cfg(impl="bm25s", epsilon=0.0)),
                      ("mapped", _cfg(impl="bm25s", epsilon=0.0, mmap=True, k1=1.2, b=0.7))]:
        for copy in ("a", "b"):
            save_bm25(tmp_path / copy / name, chunk_ids=ids, tokens=tokens, tokenizer="regex", bm25=cfg)
        files = sorted(p.relative_to(tmp_path / "a" / name) for p in (tmp_path / "a" / name).rglob("*") if p.is_file())
        for f in files:  # the same inputs give the same bytes
            assert (tmp_path / "a" / name / f).read_bytes() == (tmp_path / "b" / name / f).read_bytes(), f
        assert ("tokens.jsonl" in map(str, files)) == (not cfg.mmap)
        scorer, got_ids = open_bm25(tmp_path / "a" / name, cfg)
        assert got_ids == ids
        expected = make_scorer(cfg.impl, tokens, k1=cfg.k1, b=cfg.b, epsilon=cfg.epsilon)
        if cfg.mmap:
            assert isinstance(scorer, BM25sScorer) and isinstance(scorer._bm25.scores["data"], np.memmap)
        for q in ["the counter", "task_destroy stack", "unknownword", ""]:
            np.testing.assert_array_equal(scorer.scores(regex_tokens(q)), expected.scores(regex_tokens(q)))


@pytest.mark.bad_input
def test_an_index_folder_of_the_other_mmap_setting_says_to_rerun_the_stage(tmp_path):
    from rag_ablation.retrieval.bm25 import open_bm25, save_bm25

    tokens = [regex_tokens(d) for d in DOCS]
    ids = [f"c{i}" for i in range(len(DOCS))]
    mapped, plain = _cfg(impl="bm25s", epsilon=0.0, mmap=True), _cfg(impl="bm25s", epsilon=0.0)
    save_bm25(tmp_path / "m", chunk_ids=ids, tokens=tokens, tokenizer="regex", bm25=mapped)
    save_bm25(tmp_path / "t", chunk_ids=ids, tokens=tokens, tokenizer="regex", bm25=plain)
    with pytest.raises(ValueError, match=r"holds a memory-mapped bm25s index but no tokens.*rerun the bm25 stage"):
        open_bm25(tmp_path / "m", plain)
    with pytest.raises(FileNotFoundError, match=r"no bm25s index.*rebuild it"):
        open_bm25(tmp_path / "t", mapped)
    with pytest.raises(ValueError, match=r"built with .*'k1': 1\.5.*expected .*'k1': 1\.2"):
        open_bm25(tmp_path / "m", _cfg(impl="bm25s", epsilon=0.0, mmap=True, k1=1.2))
    with pytest.raises(FileNotFoundError, match=r"no BM25 index \(expected chunk_ids.json\); run the bm25 stage"):
        open_bm25(tmp_path / "missing", plain)
    (tmp_path / "t/chunk_ids.json").write_text('{"chunk_ids": ["c0"], "tokenizer": "regex"}')
    with pytest.raises(ValueError, match=r"has 5 chunks but 1 chunk ids; rerun the bm25 stage"):
        open_bm25(tmp_path / "t", plain)


@pytest.mark.bad_input
def test_a_bm25_config_made_in_code_is_checked_as_params_are():
    from rag_ablation.core.config import ConfigError

    with pytest.raises(ConfigError, match="bm25.mmap: true needs impl bm25s"):
        _cfg(mmap=True)  # rank_bm25 by default: mmap would silently serve bm25s scores
    with pytest.raises(ConfigError, match="bm25.epsilon: expected 0 with impl bm25s"):
        _cfg(impl="bm25s", mmap=True)  # epsilon 0.25 by default
