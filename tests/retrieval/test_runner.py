from __future__ import annotations

import time

import numpy as np
import pytest

from conftest import Q

from rag_ablation.retrieval.bm25 import make_scorer

from rag_ablation.data.text import regex_tokens
from rag_ablation.retrieval.faiss_index import build_flat_ip
from rag_ablation.core.config import RetrievalConfig
from rag_ablation.retrieval.runner import Retrievers, retrieve_one, run_config, step_latency
from rag_ablation.support.latency_rule import WARM


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


def test_a_dense_config_searches_with_the_batched_vectors_and_times_its_own_embedding(retrievers):
    """With ``embed_many``, run_config gets all vectors (the transformed texts where given) in one
    call and searches with them; each question's query_embed is still a timed single-text
    embedding of its own text, after one untimed warm-up of the first question."""
    calls, single = [], []

    def embed_many(texts):
        calls.append(list(texts))
        return np.stack([fake_vectors()[2] if "ledger" in t else QUERY for t in texts])

    def embed_query(text):
        single.append(text)
        time.sleep(0.002)
        return fake_vectors()[3]  # never searched with: the batched vector is

    retrievers.embed_many, retrievers.embed_query = embed_many, embed_query
    cfg = parse_config("d", {"chunking": "base", "method": "dense", "depth": 10})
    qs = [Q("a", "fare cap"), Q("b", "secrets rotate")]
    records, times = run_config(cfg, qs, retrievers, queries={"b": "the ledger"})
    assert calls == [["fare cap", "the ledger"]]
    assert [r["ranking"][0]["chunk"] for r in records] == ["c1", "c2"]
    assert single == ["fare cap"] * 3 + ["the ledger"] * 2, "one warm-up, then two timed calls per question"
    assert all(t["query_embed"] >= 0.002 for t in times)


def test_every_config_is_timed_alike_whichever_runs_first(retrievers):
    """The first config to use the model is charged no more than the next: the model's loading
    (here a 0.2 s first call) falls in the untimed warm-up, and every config times its own
    embedding (the bug: the first config paid every text's embedding, later ones a cache lookup)."""
    loaded = []

    def embed_query(text):
        if not loaded:
            loaded.append(1)
            time.sleep(0.2)
        return QUERY

    retrievers.embed_query = embed_query
    qs = [Q("a", "fare cap"), Q("b", "secrets rotate")]
    first = run_config(parse_config("d", {"chunking": "base", "method": "dense", "depth": 10}), qs, retrievers)[1]
    second = run_config(parse_config("e", {"chunking": "base", "method": "dense", "depth": 20}), qs, retrievers)[1]
    assert max(t["query_embed"] for t in first) < 0.1 and all("query_embed" in t for t in second)
    assert step_latency(first)["timing"] == WARM == step_latency(second)["timing"]


def test_a_large_question_set_times_an_even_spread_of_at_most_timed_questions(retrievers, monkeypatch):
    """With more questions than TIMED_QUESTIONS, every stride-th one is timed (the same in every
    config), the others searched with their cached vectors and never embedded one by one."""
    import rag_ablation.retrieval.runner as runner
    import rag_ablation.support.latency_rule as rule

    monkeypatch.setattr(rule, "TIMED_QUESTIONS", 3)
    assert [n for n in range(7) if runner.timed(n, 7)] == [0, 3, 6]  # stride ceil(7 / 3) = 3
    assert [n for n in range(3) if runner.timed(n, 3)] == [0, 1, 2]
    single = []
    retrievers.embed_query = lambda text: single.append(text) or QUERY
    retrievers.embed_many = lambda texts: np.stack([QUERY for _ in texts])
    qs = [Q(f"q{i}", f"text {i}") for i in range(7)]
    records, times = run_config(parse_config("d", {"chunking": "base", "method": "dense", "depth": 10}), qs,
                                retrievers)
    assert len(records) == 7 and len(times) == 3 and all("query_embed" in t for t in times)
    assert single == ["text 0"] * 3 + ["text 3"] * 2 + ["text 6"] * 2  # the warm-up, then the timed three, twice
    out = step_latency(times, 7)
    assert out["n_questions"] == 7 and out["n_timed"] == 3


def test_each_step_keeps_the_shorter_of_two_runs(retrievers):
    """A step slowed once by something else on the machine (here the first timed embedding of
    each question, 50 ms) is charged its own cost: the shorter run."""
    seen = {}

    def embed_query(text):
        seen[text] = seen.get(text, 0) + 1
        if seen[text] == 2:  # the first timed run (the first call of "a" is the warm-up)
            time.sleep(0.05)
        return QUERY

    retrievers.embed_query = embed_query
    qs = [Q("a", "fare cap")]
    times = run_config(parse_config("d", {"chunking": "base", "method": "dense", "depth": 10}), qs, retrievers)[1]
    assert times[0]["query_embed"] < 0.04


def test_a_dense_config_without_a_query_embedder_is_refused(retrievers):
    retrievers.embed_query = None
    with pytest.raises(ValueError, match="no query embedder"):
        retrieve_one(parse_config("d", {"chunking": "base", "method": "dense", "depth": 10}), "x", retrievers)


def test_charged_embedding_times_replace_the_configs_own(retrievers):
    """Given the embedding seconds measured once for its query transform, a dense config embeds
    nothing itself (no embedder is even set) and each timed question is charged its own time;
    the ranking is the one its cached vector gives."""
    retrievers.embed_query = None
    retrievers.embed_many = lambda texts: np.stack([QUERY for _ in texts])
    qs = [Q("a", "fare cap"), Q("b", "secrets rotate")]
    dense = parse_config("d", {"chunking": "base", "method": "dense", "depth": 10})
    records, times = run_config(dense, qs, retrievers, embed_seconds={"a": 0.004, "b": 0.006})
    assert [t["query_embed"] for t in times] == [0.004, 0.006]
    assert [x["chunk"] for x in records[0]["ranking"]][:2] == ["c1", "c0"]
    assert step_latency(times)["query_embed"]["p50_ms"] == pytest.approx(5.0)  # the middle of 4 and 6 ms
    bm25 = parse_config("b", {"chunking": "base", "method": "bm25", "depth": 10})
    assert "query_embed" not in run_config(bm25, qs, retrievers, embed_seconds={"a": 1.0, "b": 1.0})[1][0]


def test_a_timed_question_without_a_charged_time_is_refused(retrievers):
    retrievers.embed_many = lambda texts: np.stack([QUERY for _ in texts])
    dense = parse_config("d", {"chunking": "base", "method": "dense", "depth": 10})
    with pytest.raises(ValueError, match="'b' is timed but has no query embedding time"):
        run_config(dense, [Q("a", "fare cap"), Q("b", "x")], retrievers, embed_seconds={"a": 0.004})
    retrievers.embed_many = None
    with pytest.raises(ValueError, match="no query vectors"):
        run_config(dense, [Q("a", "fare cap")], retrievers, embed_seconds={"a": 0.004})


def test_resolved_config_records_only_the_settings_the_config_uses():
    from rag_ablation.core.config import Bm25Config, EmbeddingConfig, FaissConfig
    from rag_ablation.retrieval.runner import resolved_config
    dense = parse_config("d", {"chunking": "base", "method": "dense", "depth": 10})
    bm25 = parse_config("b", {"chunking": "base", "method": "bm25", "depth": 10})
    hybrid = parse_config("h", {"chunking": "base", "method": "hybrid", "depth": 10})
    emb, b25, flat = EmbeddingConfig(), Bm25Config(), FaissConfig()
    assert resolved_config(bm25, embedding=emb, bm25=b25, faiss=flat) == {
        **bm25.resolved(), "embedding_model": None, "bm25": b25.scoring()}
    assert resolved_config(dense, embedding=emb, bm25=b25, faiss=flat) == {
        **dense.resolved(), "embedding_model": emb.model, "bm25": None}
    assert resolved_config(hybrid, embedding=emb, bm25=b25, faiss=flat)["bm25"] == b25.scoring()
    served = EmbeddingConfig.from_params({"backend": "openai", "base_urls": ["http://127.0.0.1:8000/v1"]})
    ivf, hnsw = FaissConfig(index="ivf", nlist=12, nprobe=4), FaissConfig(index="hnsw", ef_search=40)
    out = resolved_config(dense, embedding=served, bm25=b25, faiss=ivf)
    assert out["embedding_backend"] == "openai" and out["faiss"] == {"index": "ivf", "nprobe": 4}
    assert resolved_config(hybrid, embedding=emb, bm25=b25, faiss=hnsw)["faiss"] == {"index": "hnsw", "ef_search": 40}
    assert "faiss" not in resolved_config(bm25, embedding=served, bm25=b25, faiss=ivf)
    assert "embedding_backend" not in resolved_config(bm25, embedding=served, bm25=b25, faiss=ivf)
