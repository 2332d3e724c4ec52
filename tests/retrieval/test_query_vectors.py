"""The query vectors of one query transform, embedded once, and the embedding time charged to
every config that searches with them (rag_ablation/retrieval/query_vectors.py)."""
from __future__ import annotations

import numpy as np
import pytest

from rag_ablation.core.errors import UserError
from rag_ablation.retrieval.embeddings import EmbeddingCache, text_key
from rag_ablation.retrieval.query_vectors import (QueryEmbedder, QueryVectors, charged_times, embed_queries, embed_transform,
                                                  embedding_times, read_vectors, unavailable, write_vectors)
from rag_ablation.support.latency_rule import TIMED_RUNS, WARM


class Clock:
    """A clock that advances by the durations the fake embedder sets: each call returns the time so far."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fake_embedder(durations: dict[str, list[float]], clock: Clock, calls: list[str], cache: EmbeddingCache,
                  loads: list[int]) -> QueryEmbedder:
    """A query embedder whose model is fake: each single-text call on ``text`` takes the next of
    ``durations[text]`` seconds on ``clock``; batches go through ``cache`` (a model is loaded
    only for texts the cache lacks)."""
    def one(text):
        calls.append(text)
        loads.append(1)
        clock.now += durations[text].pop(0) if durations.get(text) else 0.0
        return np.ones(3, dtype=np.float32)
    return QueryEmbedder(load=lambda: "model", one=one, model_name="m",
                         many=lambda texts: embed_queries(texts, model_name="m", load=lambda: "model",
                                                          batch_size=2, cache=cache))


def test_each_timed_question_keeps_its_shortest_warm_run(tmp_path):
    """The first text is embedded once untimed (the model's first call), then each question
    ``TIMED_RUNS`` times; its time is the shortest run."""
    clock, calls = Clock(), []
    durations = {"a text": [0.5, 0.010, 0.012], "b text": [0.030, 0.020]}
    loads: list[int] = []
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cache.put_many("m", {text_key("a text"): np.ones(3), text_key("b text"): np.zeros(3)})
    qv, seconds = embed_transform(["a", "b"], ["a text", "b text"],
                                  embedder=fake_embedder(durations, clock, calls, cache, loads), clock=clock)
    cache.close()
    assert TIMED_RUNS == 2
    assert calls == ["a text", "a text", "a text", "b text", "b text"]  # warm-up, then two runs each
    assert seconds == pytest.approx({"a": 0.010, "b": 0.020})
    assert qv.ids == ["a", "b"] and qv.text_keys == [text_key("a text"), text_key("b text")]
    np.testing.assert_array_equal(qv.vectors, [[1, 1, 1], [0, 0, 0]])  # the cache's vectors, not the timed ones
    assert loads  # the model is used for the timing even when the cache held every vector


def test_no_questions_no_vectors_no_times():
    never = QueryEmbedder(load=lambda: pytest.fail("no model needed"), one=lambda t: pytest.fail("nothing to embed"),
                          many=lambda ts: pytest.fail("nothing to embed"), model_name="m")
    qv, seconds = embed_transform([], [], embedder=never)
    assert seconds == {} and qv.vectors.shape == (0, 0)
    assert embedding_times({}, 0) == {"n_questions": 0}


def test_the_folder_round_trips_and_is_the_same_bytes_every_time(tmp_path):
    qv = QueryVectors(ids=["a", "b"], text_keys=[text_key("x"), text_key("y")],
                      vectors=np.array([[0.6, 0.8], [1.0, 0.0]], dtype=np.float32), model="m")
    write_vectors(tmp_path / "v1", qv)
    write_vectors(tmp_path / "v2", qv)
    for name in ("vectors.npy", "index.json"):
        assert (tmp_path / "v1" / name).read_bytes() == (tmp_path / "v2" / name).read_bytes()
    back = read_vectors(tmp_path / "v1")
    assert back.ids == qv.ids and back.model == "m" and back.status == "ok"
    np.testing.assert_array_equal(back.for_texts(["b", "a"], ["y", "x"], model="m"), qv.vectors[[1, 0]])
    assert back.for_texts([], [], model="m").shape == (0, 2)
    np.testing.assert_array_equal(back.lookup(["a"], model="m")(["x"]), qv.vectors[[0]])
    write_vectors(tmp_path / "u", unavailable("query transform 'hyde' (hyde) needs an LLM"))
    assert read_vectors(tmp_path / "u").status == "unavailable"


@pytest.mark.bad_input
def test_stale_vectors_are_one_message_naming_the_question(tmp_path):
    qv = QueryVectors(ids=["a"], text_keys=[text_key("x")], vectors=np.ones((1, 2), dtype=np.float32), model="m")
    with pytest.raises(UserError, match="question 'a' was embedded from another text.*dvc repro"):
        qv.for_texts(["a"], ["another"], model="m")
    with pytest.raises(UserError, match="question 'z' has no vector"):
        qv.for_texts(["z"], ["x"], model="m")
    with pytest.raises(UserError, match="embedded with 'm', not 'other'"):
        qv.for_texts(["a"], ["x"], model="other")
    with pytest.raises(UserError, match="cannot read the query vectors.*query_vectors@TRANSFORM"):
        read_vectors(tmp_path / "missing")


def test_the_latency_record_carries_each_timed_questions_seconds():
    out = embedding_times({"a": 0.004, "b": 0.006}, 3)
    assert out["n_questions"] == 3 and out["n_timed"] == 2 and out["timing"] == WARM
    assert out["query_embed"]["p50_ms"] == pytest.approx(5.0)
    assert charged_times(out) == {"a": 0.004, "b": 0.006}
    assert charged_times({"n_questions": 0}) == {}


def test_query_embeddings_go_through_the_chunks_cache_and_match_single_encoding(tmp_path):
    """Real MiniLM: the batched vectors equal one-at-a-time encoding (to float rounding), and a
    second transform with the same texts loads no model and embeds nothing."""
    from rag_ablation.retrieval.embeddings import encode, load_model

    model = load_model("all-MiniLM-L6-v2", threads=1)
    loads = []

    def load():
        loads.append(1)
        return model

    texts = ["when does the ledger settle", "what is the fare cap", "when does the ledger settle", "rotate keys"]
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    first = embed_queries(texts, model_name="all-MiniLM-L6-v2", load=load, batch_size=2, cache=cache)
    assert first.shape == (4, 384) and loads == [1]
    single = np.stack([encode(model, [t])[0] for t in texts])
    np.testing.assert_allclose(first, single, atol=1e-5)
    again = embed_queries(texts, model_name="all-MiniLM-L6-v2", load=load, batch_size=2, cache=cache)
    assert loads == [1] and np.array_equal(first, again)
    cache.close()
