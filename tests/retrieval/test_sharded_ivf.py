"""Sharded IVF (``faiss.shards > 1``): the merged on-disk index ranks exactly as the in-RAM
IndexIVFFlat of the same trained quantizer, for even and uneven splits and any nprobe; it loads
memory-mapped from wherever its folder has moved; its files are deterministic; bad shard
counts and a short merge are refused with one line and leave nothing behind; shards 1 changes
nothing."""
from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from rag_ablation.core.config import FaissConfig
from rag_ablation.retrieval import sharded_ivf
from rag_ablation.retrieval.faiss_index import build_index, describe, set_search_params
from rag_ablation.retrieval.indexes import load_dense, save_dense, save_dense_index, search_dense
from rag_ablation.retrieval.sharded_ivf import (
    IVFDATA_FILE,
    ShardedIndexError,
    fill_shard,
    merge_shards,
    shard_ranges,
    train_quantizer,
    training_sample,
)

N, D, NLIST, K = 1001, 16, 12, 10
CFG = FaissConfig(index="ivf", nlist=NLIST, nprobe=3)


def unit_rows(n: int, d: int = D, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def ids(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    return unit_rows(N)


@pytest.fixture(scope="module")
def reference(vectors):
    """The unsharded IndexIVFFlat: the same trained quantizer, every vector added in RAM."""
    index = train_quantizer(vectors, CFG)
    index.add(vectors)
    return index


@pytest.fixture(scope="module")
def sharded(tmp_path_factory, vectors):
    """Folders built with 2, 3 (uneven: 334/334/333) and 7 shards, by the dense stage's call."""
    root = tmp_path_factory.mktemp("sharded")
    out = {}
    for shards, threads in ((2, 1), (3, 2), (7, 2)):
        folder = root / f"s{shards}"
        built = save_dense_index(folder, vectors, dataclasses.replace(CFG, shards=shards), ids(N), {"dim": D},
                                 threads=threads)
        assert built == {"index": "ivf", "nlist": NLIST, "shards": shards}
        out[shards] = folder
    return out


def search_all(index, queries: np.ndarray, k: int = K):
    return index.search(np.ascontiguousarray(queries), k)


@pytest.mark.parametrize("nprobe", [1, 3, NLIST], ids=["nprobe_1", "nprobe_3", "nprobe_is_nlist"])
@pytest.mark.parametrize("shards", [2, 3, 7])
def test_merged_index_ranks_exactly_as_the_unsharded_one(sharded, reference, vectors, shards, nprobe):
    cfg = dataclasses.replace(CFG, nprobe=nprobe, shards=shards)
    index, chunk_ids, meta = load_dense(sharded[shards])
    set_search_params(index, cfg)
    set_search_params(reference, cfg)
    assert index.ntotal == N and chunk_ids == ids(N) and meta == {"dim": D}
    queries = np.concatenate([unit_rows(40, seed=1), vectors[::97]])
    scores, rows = search_all(index, queries)
    ref_scores, ref_rows = search_all(reference, queries)
    np.testing.assert_array_equal(rows, ref_rows)
    np.testing.assert_array_equal(scores, ref_scores)  # bit for bit: the same float32 codes, the same kernel
    assert (rows >= 0).all()


def test_shard_ranges_cover_the_rows_in_order_uneven_splits_first():
    assert shard_ranges(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert shard_ranges(N, 7)[0] == (0, 143) and shard_ranges(N, 7)[-1][1] == N
    assert shard_ranges(5, 5) == [(i, i + 1) for i in range(5)]
    for n, s in ((1001, 3), (17, 4), (8, 8)):
        sizes = [b - a for a, b in shard_ranges(n, s)]
        assert sum(sizes) == n and max(sizes) - min(sizes) <= 1


def test_training_sample_is_seeded_and_capped_at_256_rows_per_list():
    x = unit_rows(3000)
    sample = training_sample(x, 4, seed=0)
    assert sample.shape == (1024, D) and sample.dtype == np.float32
    np.testing.assert_array_equal(sample, training_sample(x, 4, seed=0))
    assert not np.array_equal(sample, training_sample(x, 4, seed=1))
    np.testing.assert_array_equal(training_sample(x, 12, seed=0), x)  # 3072 >= 3000: every row


def test_training_sample_from_a_file_is_the_arrays(tmp_path, monkeypatch):
    """Read block by block (blocks of 700 rows here, so the sample spans several) from the .npy."""
    x = unit_rows(3000)
    np.save(tmp_path / "v.npy", x)
    monkeypatch.setattr(sharded_ivf, "BLOCK", 700)
    np.testing.assert_array_equal(training_sample(tmp_path / "v.npy", 4, seed=3), training_sample(x, 4, seed=3))
    np.testing.assert_array_equal(training_sample(tmp_path / "v.npy", 12, seed=3), x)


def test_moved_folder_loads_memory_mapped_and_searches_the_same(sharded, reference, tmp_path):
    """DVC caches an output and checks it out elsewhere (possibly read-only): the folder is
    copied away, the original deleted, and the copy still searches from its own ivfdata."""
    src = tmp_path / "built"
    shutil.copytree(sharded[3], src)
    moved = tmp_path / "elsewhere" / "dense"
    moved.parent.mkdir()
    shutil.copytree(src, moved)
    shutil.rmtree(src)
    for f in moved.iterdir():
        f.chmod(0o444)
    index, _, _ = load_dense(moved)
    set_search_params(index, CFG)
    set_search_params(reference, CFG)
    q = unit_rows(5, seed=2)
    assert [search_dense(index, v, K) for v in q] == [search_dense(reference, v, K) for v in q]
    import faiss

    lists = faiss.extract_index_ivf(index).invlists
    assert isinstance(faiss.downcast_InvertedLists(lists), faiss.OnDiskInvertedLists)
    assert faiss.downcast_InvertedLists(lists).filename == str(moved.resolve() / IVFDATA_FILE)


def test_folder_of_symlinks_into_a_cache_loads(sharded, reference, tmp_path):
    """DVC's symlink checkout: each file of the folder links to a differently named file in a
    cache folder; the lists file is found beside the link, not beside its target."""
    cache, linked = tmp_path / "cache", tmp_path / "checkout" / "dense"
    cache.mkdir()
    linked.mkdir(parents=True)
    for i, f in enumerate(sorted(sharded[2].iterdir())):
        shutil.copy(f, cache / f"{i:02x}deadbeef")
        (linked / f.name).symlink_to(cache / f"{i:02x}deadbeef")
    index, _, _ = load_dense(linked)
    set_search_params(index, CFG)
    set_search_params(reference, CFG)
    q = unit_rows(5, seed=3)
    assert [search_dense(index, v, K) for v in q] == [search_dense(reference, v, K) for v in q]


def test_files_are_deterministic_whatever_the_threads(sharded, vectors, tmp_path):
    """The 3-shard folder (built on 2 threads) rebuilt on 1 thread: byte-identical files, and
    index.faiss names its lists file by bare name (no temporary path baked in)."""
    save_dense_index(tmp_path / "again", vectors, dataclasses.replace(CFG, shards=3), ids(N), {"dim": D}, threads=1)
    for name in ("index.faiss", IVFDATA_FILE, "chunk_ids.json"):
        assert (tmp_path / "again" / name).read_bytes() == (sharded[3] / name).read_bytes(), name
    assert str(tmp_path).encode() not in (tmp_path / "again" / "index.faiss").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again"]  # no work or staging folder left


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
def test_shards_1_writes_the_same_files_as_before(tmp_path, kind):
    x = unit_rows(300)
    cfg = FaissConfig(index=kind, nlist=8, nprobe=4, hnsw_m=8, ef_construction=40)
    built = save_dense_index(tmp_path / "new", x, cfg, ids(300), {"dim": D}, threads=2)
    before = build_index(x, cfg, threads=2)
    save_dense(tmp_path / "old", before, ids(300), {"dim": D})
    assert built == describe(before) and "shards" not in built
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["chunk_ids.json", "index.faiss"]
    for name in ("index.faiss", "chunk_ids.json"):
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "old" / name).read_bytes()


@pytest.mark.bad_input
def test_more_shards_than_chunks_is_refused_and_writes_nothing(tmp_path):
    old = tmp_path / "dense"
    old.mkdir()
    (old / "index.faiss").write_text("older index")
    with pytest.raises(ShardedIndexError) as e:
        save_dense_index(old, unit_rows(5), dataclasses.replace(CFG, shards=6), ids(5), {"dim": D})
    msg = str(e.value)
    assert "\n" not in msg and "faiss.shards: 6 shards for 5 chunks" in msg and "at most 5" in msg
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dense"]
    assert (old / "index.faiss").read_text() == "older index"


def filled_shards(folder: Path, vectors: np.ndarray, shards: int) -> tuple[str, list[str]]:
    """The trained index and the shard files of ``vectors`` in ``folder``, as ``build_sharded``'s
    steps 1 and 2 leave them (run in this process)."""
    import faiss

    np.save(folder / "v.npy", vectors)
    trained = str(folder / "trained.faiss")
    faiss.write_index(train_quantizer(vectors, CFG), trained)
    prefixes = []
    for i, (a, b) in enumerate(shard_ranges(len(vectors), shards)):
        prefixes.append(str(folder / f"shard-{i}"))
        assert fill_shard(str(folder / "v.npy"), a, b, trained, prefixes[-1])["rows"] == b - a
    return trained, prefixes


def test_streamed_merge_writes_faiss_own_merge_byte_for_byte(tmp_path, vectors, monkeypatch):
    """merge_shards copies the lists with plain reads and writes; FAISS's merge_from_multiple
    (faiss.contrib.ondisk.merge_ondisk) over the same shards in RAM gives the same two files."""
    import faiss

    trained, prefixes = filled_shards(tmp_path, vectors, 3)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    monkeypatch.chdir(tmp_path)  # merge_shards works in its output folder: restore the test's own after
    assert merge_shards(trained, prefixes, str(ours), N)["ntotal"] == N

    shards = []
    for a, b in shard_ranges(N, 3):
        shard = faiss.read_index(trained)
        shard.add_with_ids(vectors[a:b], np.arange(a, b, dtype=np.int64))
        shards.append(shard)
    monkeypatch.chdir(theirs)
    index = faiss.read_index(trained)
    ivf = faiss.extract_index_ivf(index)
    lists = faiss.OnDiskInvertedLists(ivf.nlist, ivf.code_size, IVFDATA_FILE)
    pointers = faiss.InvertedListsPtrVector()
    for shard in shards:
        pointers.push_back(shard.invlists)
    index.ntotal = ivf.ntotal = lists.merge_from_multiple(pointers.data(), pointers.size(), False)
    ivf.replace_invlists(lists, True)
    lists.this.disown()
    faiss.write_index(index, "index.faiss")
    for name in ("index.faiss", IVFDATA_FILE):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name


@pytest.mark.bad_input
def test_a_merge_short_of_the_chunk_count_is_refused_and_leaves_no_file(tmp_path, vectors, monkeypatch):
    """A shard that lost rows (here: one left out of the merge) must not give an index."""
    trained, prefixes = filled_shards(tmp_path, vectors, 2)
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(tmp_path)  # merge_shards works in its output folder: restore the test's own
    with pytest.raises(ShardedIndexError) as e:
        merge_shards(trained, prefixes[:1], str(out), N)
    msg = str(e.value)
    assert "\n" not in msg and f"merged sharded index has {shard_ranges(N, 2)[0][1]} vectors, expected {N}" in msg
    assert list(out.iterdir()) == []


@pytest.mark.bad_input
def test_a_failed_build_leaves_the_older_folder_and_no_temporary_files(tmp_path, vectors, monkeypatch):
    old = tmp_path / "dense"
    old.mkdir()
    (old / "index.faiss").write_text("older index")

    def fail(*args, **kwargs):
        raise ShardedIndexError("training failed")

    monkeypatch.setattr(sharded_ivf, "train_quantizer", fail)
    with pytest.raises(ShardedIndexError, match="training failed"):
        save_dense_index(old, vectors, dataclasses.replace(CFG, shards=2), ids(N), {"dim": D})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dense"]
    assert sorted(p.name for p in old.iterdir()) == ["index.faiss"]


@pytest.mark.bad_input
def test_stage_refuses_more_shards_than_chunks_with_exit_2(tmp_path):
    """The dense stage on the fixture corpus's one chunk with faiss.shards 2: one line, exit 2, no index."""
    import json
    import subprocess
    import sys

    import yaml

    from conftest import FIXTURES, ROOT

    chunk = {"id": "t/a.md#0", "doc": "t/a.md", "track": "t", "start": 0, "end": 22,
             "heading_path": ["A"], "heading": "", "body": "ledger entries nightly"}
    (tmp_path / "chunks.jsonl").write_text(json.dumps(chunk) + "\n")
    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    params["faiss"].update(index="ivf", shards=2)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    env = {**os.environ, "RAG_ABLATION_CACHE": str(tmp_path / ".cache")}
    res = subprocess.run([sys.executable, str(ROOT / "stages" / "dense_index.py"), "--chunks",
                          str(tmp_path / "chunks.jsonl"), "--out", str(tmp_path / "dense"), "--metrics",
                          str(tmp_path / "m.json")], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert res.returncode == 2, res.stderr
    assert "error: faiss.shards: 2 shards for 1 chunks" in res.stderr
    assert not (tmp_path / "dense").exists() and not (tmp_path / "m.json").exists()
    assert not [p for p in Path(tmp_path).iterdir() if p.name.startswith(".dense.")]


def test_stage_builds_a_sharded_index_that_loads_memory_mapped(tmp_path):
    """The dense stage with faiss.shards 2 on three chunks: shard processes are spawned from the
    stage script, the metrics report the shards, and the folder loads with its ivfdata."""
    import json
    import subprocess
    import sys

    import yaml

    from conftest import FIXTURES, ROOT

    bodies = ["ledger entries settle nightly", "the cache is warm after the first run", "queries embed once"]
    rows = [{"id": f"t/a.md#{i}", "doc": "t/a.md", "track": "t", "start": 0, "end": len(b),
             "heading_path": ["A"], "heading": "", "body": b} for i, b in enumerate(bodies)]
    (tmp_path / "chunks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    params["faiss"].update(index="ivf", shards=2)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    env = {**os.environ, "RAG_ABLATION_CACHE": str(tmp_path / ".cache")}
    res = subprocess.run([sys.executable, str(ROOT / "stages" / "dense_index.py"), "--chunks",
                          str(tmp_path / "chunks.jsonl"), "--out", str(tmp_path / "dense"), "--metrics",
                          str(tmp_path / "m.json")], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "m.json").read_text())["faiss"] == {"index": "ivf", "nlist": 3, "shards": 2}
    assert sorted(p.name for p in (tmp_path / "dense").iterdir()) == ["chunk_ids.json", "index.faiss", IVFDATA_FILE]
    assert not [p for p in Path(tmp_path).iterdir() if p.name.startswith(".dense.")]
    index, chunk_ids, _ = load_dense(tmp_path / "dense")
    assert index.ntotal == 3 and chunk_ids == [r["id"] for r in rows]
