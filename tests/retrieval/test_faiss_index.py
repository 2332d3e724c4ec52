"""FAISS index types: flat is today's index byte for byte; ivf searching every list and hnsw
with a wide search recover flat's exact top k; builds are deterministic; search settings come
from params at load time; bad settings are refused with the key path."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rag_ablation.core.config import ConfigError, FaissConfig
from rag_ablation.retrieval.faiss_index import (
    build_flat_ip,
    build_index,
    describe,
    effective_nlist,
    index_kind,
    set_search_params,
)
from rag_ablation.retrieval.indexes import load_dense, save_dense, search_dense

K = 10


def unit_rows(n: int, d: int = 16, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def serialized(index) -> bytes:
    import faiss

    return faiss.serialize_index(index).tobytes()


def round_trip(tmp_path, index, cfg: FaissConfig):
    """Save and load as the dense and retrieve stages do, with ``cfg``'s search settings."""
    save_dense(tmp_path / "dense", index, [f"c{i}" for i in range(index.ntotal)], {"dim": index.d})
    loaded, _, _ = load_dense(tmp_path / "dense")
    set_search_params(loaded, cfg)
    return loaded


def test_flat_is_todays_index_byte_for_byte():
    import faiss

    x = unit_rows(200)
    today = faiss.IndexFlatIP(x.shape[1])  # what the dense stage built before index types
    today.add(x)
    assert serialized(build_index(x, FaissConfig(), threads=2)) == serialized(today)
    assert serialized(build_flat_ip(x)) == serialized(today)
    assert describe(today) == {"index": "flat"} and FaissConfig().index == "flat"


@pytest.mark.parametrize("cfg", [
    FaissConfig(index="ivf", nlist=12, nprobe=12),
    FaissConfig(index="hnsw", hnsw_m=8, ef_construction=40, ef_search=400),
], ids=["ivf_nprobe_is_nlist", "hnsw_wide_ef_search"])
def test_exhaustive_settings_recover_the_exact_top_k(tmp_path, cfg):
    x, queries = unit_rows(400), unit_rows(30, seed=1)
    flat = build_index(x, FaissConfig())
    ann = round_trip(tmp_path, build_index(x, cfg, threads=2), cfg)
    assert index_kind(ann) == cfg.index
    for q in queries:
        exact, approx = search_dense(flat, q, K), search_dense(ann, q, K)
        assert [r for r, _ in approx] == [r for r, _ in exact]
        np.testing.assert_allclose([s for _, s in approx], [s for _, s in exact], rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_builds_are_deterministic_whatever_the_threads(kind):
    x = unit_rows(600)
    cfg = FaissConfig(index=kind, nlist=16, nprobe=4, hnsw_m=8, ef_construction=40)
    assert serialized(build_index(x, cfg, threads=1)) == serialized(build_index(x, cfg, threads=2))
    if kind == "ivf":  # the seed is what fixes the k-means training
        other = dataclasses.replace(cfg, seed=1)
        assert serialized(build_index(x, other)) != serialized(build_index(x, cfg))


def test_search_settings_are_set_at_load_time_not_baked_in(tmp_path):
    x = unit_rows(300)
    built = FaissConfig(index="ivf", nlist=10, nprobe=1)
    index = build_index(x, built)
    assert round_trip(tmp_path / "a", index, built).nprobe == 1
    assert round_trip(tmp_path / "b", index, dataclasses.replace(built, nprobe=7)).nprobe == 7
    hnsw = FaissConfig(index="hnsw", hnsw_m=8, ef_construction=40, ef_search=77)
    loaded = round_trip(tmp_path / "c", build_index(x, hnsw), hnsw)
    assert loaded.hnsw.efSearch == 77
    assert describe(loaded) == {"ef_construction": 40, "hnsw_m": 8, "index": "hnsw"}


def test_fewer_vectors_than_lists_clamps_nlist(tmp_path):
    x = unit_rows(6)
    cfg = FaissConfig(index="ivf", nlist=64, nprobe=64)
    index = round_trip(tmp_path, build_index(x, cfg), cfg)
    assert effective_nlist(6, 64) == 6 and effective_nlist(100, 64) == 64
    assert describe(index) == {"index": "ivf", "nlist": 6} and index.nprobe == 6
    assert [r for r, _ in search_dense(index, x[3], K)] == [r for r, _ in search_dense(build_flat_ip(x), x[3], K)]


@pytest.mark.bad_input
def test_bad_settings_are_refused_with_the_key_path():
    with pytest.raises(ConfigError, match=r"faiss\.index: expected one of flat, hnsw, ivf, got 'pq'"):
        FaissConfig.from_params({"index": "pq"})
    with pytest.raises(ConfigError, match=r"faiss\.nprobe: expected at most faiss\.nlist \(8\), got 9"):
        FaissConfig.from_params({"nlist": 8, "nprobe": 9})
    with pytest.raises(ConfigError, match=r"faiss\.hnsw_m: expected an integer >= 2"):
        FaissConfig.from_params({"hnsw_m": 1})
    with pytest.raises(ConfigError, match=r"faiss\.nlist: expected a positive integer, got 0"):
        FaissConfig.from_params({"nlist": 0})
    with pytest.raises(ConfigError, match=r"faiss: unknown key\(s\) efsearch"):
        FaissConfig.from_params({"efsearch": 10})
    with pytest.raises(ValueError, match="unknown FAISS index type 'pq'; expected one of: flat, hnsw, ivf"):
        build_index(unit_rows(4), dataclasses.replace(FaissConfig(), index="pq"))
    with pytest.raises(ValueError, match="non-empty 2-D array"):
        build_index(np.zeros((0, 16), dtype=np.float32), FaissConfig(index="hnsw"))
