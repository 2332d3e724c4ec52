from __future__ import annotations

import numpy as np
import pytest

from conftest import Q

from rag_ablation.bm25 import make_scorer, regex_tokens
from rag_ablation.indexes import build_flat_ip
from rag_ablation.retrieval import ConfigError, Retrievers, parse_config, retrieve_one, run_config

CHUNKINGS = {"base": {}}
IDS = ["c0", "c1", "c2", "c3"]
TEXTS = ["fare cap is three fares", "buses report positions", "the ledger settles nightly", "rotate secrets monthly"]


def fake_vectors():
    """Hand-built unit vectors: chunk i points along axis i."""
    return np.eye(4, dtype=np.float32)


# nearest c1, then c0, then c2 and c3 (tied at 0)
QUERY = np.array([0.6, 0.8, 0.0, 0.0], dtype=np.float32)


@pytest.fixture
def retrievers():
    return Retrievers(
        dense_index=build_flat_ip(fake_vectors()), dense_ids=IDS,
        embed_query=lambda text: fake_vectors()[2] if "ledger" in text else QUERY,
        bm25=make_scorer("rank_bm25", [regex_tokens(t) for t in TEXTS], k1=1.5, b=0.75, epsilon=0.25),
        bm25_ids=IDS, chunk_text=dict(zip(IDS, TEXTS)),
    )


def test_dense_bm25_and_hybrid(retrievers):
    dense = parse_config("d", {"chunking": "base", "method": "dense", "depth": 10}, CHUNKINGS)
    ranking, t = retrieve_one(dense, "when does the ledger settle", retrievers)
    assert ranking[0][0] == "c2" and set(t) == {"query_embed", "faiss_search"}
    bm25 = parse_config("b", {"chunking": "base", "method": "bm25", "depth": 10}, CHUNKINGS)
    ranking, t = retrieve_one(bm25, "what is the fare cap", retrievers)
    assert ranking[0][0] == "c0" and set(t) == {"bm25_search"}
    assert all(s > 0 for _, s in ranking), "chunks sharing no term with the query are not retrieved"
    hyb = parse_config("h", {"chunking": "base", "method": "hybrid", "depth": 10}, CHUNKINGS)
    ranking, t = retrieve_one(hyb, "what is the fare cap", retrievers)
    # dense ranks c1 first and c0 second; bm25 ranks c0 first: c0 = 1/62 + 1/61 beats c1 = 1/61 + 0
    fused = dict(ranking)
    assert ranking[0][0] == "c0" and fused["c0"] == pytest.approx(1 / 62 + 1 / 61)
    assert "fusion" in t


def test_run_config_records_first_relevant_rank(retrievers):
    cfg = parse_config("b", {"chunking": "base", "method": "bm25", "depth": 10}, CHUNKINGS)
    qs = [Q("a", "fare cap"), Q("b", "secrets rotate"), Q("u", "how many fares?", "unanswerable", False)]
    records, times = run_config(cfg, qs, {"a": ["c0"], "b": ["c2"]}, retrievers)
    assert [r["id"] for r in records] == ["a", "b", "u"] and len(times) == 3
    assert records[0]["first_relevant_rank"] == 1
    assert records[1]["first_relevant_rank"] is None
    assert records[2]["answerable"] is False and records[2]["ranking"], "unanswerable questions are ranked too"


def test_transformed_queries_go_to_first_stage_only(retrievers):
    cfg = parse_config("b", {"chunking": "base", "method": "bm25", "depth": 10}, CHUNKINGS)
    records, _ = run_config(cfg, [Q("a", "fare cap")], {"a": ["c3"]}, retrievers, queries={"a": "rotate secrets"})
    assert records[0]["ranking"][0]["chunk"] == "c3" and records[0]["first_relevant_rank"] == 1


@pytest.mark.bad_input
@pytest.mark.parametrize("spec,message", [
    ({"chunking": "nope", "method": "dense"}, "expected one of the chunkings: base"),
    ({"chunking": "base", "method": "splade"}, "expected one of: dense, bm25, hybrid"),
    ({"chunking": "base", "method": "hybrid", "fusion": "max"}, "expected one of: append, rrf"),
    ({"chunking": "base", "method": "dense", "k": 5}, "expected at least 10"),
    ({"chunking": "base", "method": "dense", "depth": 5}, "expected at least k=10"),
    ({"chunking": "base", "method": "dense", "topk": 5}, "unknown key(s) topk"),
    ({"method": "dense"}, "missing key 'chunking'"),
    ({"chunking": "base", "method": "dense", "rerank": {"depth": 5}}, "rerank must be null or a mapping"),
    ({"chunking": "base", "method": "dense", "query": "hide"}, "expected one of the query_transforms: hyde, none"),
])
def test_bad_configs_name_the_key(spec, message):
    with pytest.raises(ConfigError, match="retrieval.x") as e:
        parse_config("x", spec, CHUNKINGS, {"none": {}, "hyde": {}})
    assert message in str(e.value)
