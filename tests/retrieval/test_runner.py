from __future__ import annotations

import numpy as np
import pytest

from conftest import Q

from rag_ablation.retrieval.bm25 import make_scorer

from rag_ablation.data.text import regex_tokens
from rag_ablation.retrieval.faiss_index import build_flat_ip
from rag_ablation.core.config import RetrievalConfig
from rag_ablation.retrieval.runner import Retrievers, retrieve_one, run_config


def parse_config(name, spec):
    return RetrievalConfig.from_params(name, spec, chunkings=("base",), transforms=("none",))

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
    dense = parse_config("d", {"chunking": "base", "method": "dense", "depth": 10})
    ranking, t = retrieve_one(dense, "when does the ledger settle", retrievers)
    assert ranking[0][0] == "c2" and set(t) == {"query_embed", "faiss_search"}
    bm25 = parse_config("b", {"chunking": "base", "method": "bm25", "depth": 10})
    ranking, t = retrieve_one(bm25, "what is the fare cap", retrievers)
    assert ranking[0][0] == "c0" and set(t) == {"bm25_search"}
    assert all(s > 0 for _, s in ranking), "chunks sharing no term with the query are not retrieved"
    hyb = parse_config("h", {"chunking": "base", "method": "hybrid", "depth": 10})
    ranking, t = retrieve_one(hyb, "what is the fare cap", retrievers)
    # dense ranks c1 first and c0 second; bm25 ranks c0 first: c0 = 1/62 + 1/61 beats c1 = 1/61 + 0
    fused = dict(ranking)
    assert ranking[0][0] == "c0" and fused["c0"] == pytest.approx(1 / 62 + 1 / 61)
    assert "fusion" in t


def test_run_config_ranks_every_question_and_stores_no_labels(retrievers):
    cfg = parse_config("b", {"chunking": "base", "method": "bm25", "depth": 10})
    qs = [Q("a", "fare cap"), Q("b", "secrets rotate"), Q("u", "how many fares?", "unanswerable", False)]
    records, times = run_config(cfg, qs, retrievers)
    assert [r["id"] for r in records] == ["a", "b", "u"] and len(times) == 3
    assert records[0]["ranking"][0] == {"chunk": "c0", "score": pytest.approx(records[0]["ranking"][0]["score"])}
    assert set(records[0]) == {"id", "slice", "answerable", "ranking"}, "run files hold rankings, never labels"
    assert records[2]["answerable"] is False and records[2]["ranking"], "unanswerable questions are ranked too"


def test_transformed_queries_go_to_first_stage_only(retrievers):
    cfg = parse_config("b", {"chunking": "base", "method": "bm25", "depth": 10})
    records, _ = run_config(cfg, [Q("a", "fare cap")], retrievers, queries={"a": "rotate secrets"})
    assert records[0]["ranking"][0]["chunk"] == "c3"
