"""Damaged cache files are detected, named and never used; contention is not damage."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT

from rag_ablation.llm.client.base import Generation
from rag_ablation.llm.client.prompt_cache import PromptCache
from rag_ablation.retrieval.embeddings import EmbeddingCache
from rag_ablation.support.sqlite_cache import CacheDamaged, CacheUnwritable

GEN = Generation(text="x" * 300, prompt_tokens=1, completion_tokens=1, seconds=0.1)


def filled_prompt_cache(path, n=400):
    with PromptCache(path) as cache:
        for i in range(n):
            cache.put(f"k{i}", GEN)
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the main file, as after a clean close
    con.close()


@pytest.mark.bad_input
def test_a_foreign_file_in_place_of_the_prompt_cache_is_refused(tmp_path):
    path = tmp_path / "prompts.sqlite"
    path.write_bytes(b"this is not a database, it is a stray text file\n" * 100)
    with pytest.raises(CacheDamaged) as e:
        PromptCache(path)
    msg = str(e.value)
    assert str(path) in msg and "move it aside" in msg and f"mv {path} {path}.damaged" in msg
    assert path.read_bytes().startswith(b"this is not"), "the damaged file is left as it was, for inspection"


@pytest.mark.bad_input
def test_a_truncated_prompt_cache_is_refused(tmp_path):
    path = tmp_path / "prompts.sqlite"
    filled_prompt_cache(path)
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    with pytest.raises(CacheDamaged, match="prompt cache .* is damaged"):
        with PromptCache(path) as cache:
            for i in range(400):
                cache.get(f"k{i}")


@pytest.mark.bad_input
def test_a_damaged_embedding_cache_is_refused(tmp_path):
    path = tmp_path / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many("m", {f"t{i}": np.ones(384, dtype=np.float32) for i in range(300)})
    cache.close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(path.read_bytes())
    data[4096:8192] = b"\xff" * 4096  # a page overwritten with garbage
    path.write_bytes(bytes(data))
    with pytest.raises(CacheDamaged, match="embedding cache .* is damaged"):
        c = EmbeddingCache(path)
        c.get_many("m", [f"t{i}" for i in range(300)])


def test_a_healthy_cache_opens_and_keeps_its_entries(tmp_path):
    path = tmp_path / "prompts.sqlite"
    filled_prompt_cache(path, n=50)
    with PromptCache(path) as cache:
        assert len(cache) == 50 and cache.get("k7") == GEN


@pytest.mark.bad_input
def test_a_stage_with_a_damaged_cache_says_so_in_one_line(tmp_path):
    """generate@ with a damaged prompt cache: exit 2, one line naming the file, no output."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "prompts.sqlite").write_bytes(b"garbage" * 1000)
    (tmp_path / "params.yaml").write_text((ROOT / "tests/fixtures/params.yaml").read_text())
    run = {"config": {}, "status": "ok", "reason": None, "passages": {"c1": "Settlement runs nightly."},
           "questions": [{"id": "q-ack", "slice": "main", "answerable": True, "ranking": [{"chunk": "c1", "score": 1.0}]}]}
    import json

    (tmp_path / "run.json").write_text(json.dumps(run))
    (tmp_path / "q.jsonl").write_text((ROOT / "tests/fixtures/questions.jsonl").read_text().splitlines()[1] + "\n")
    env = {**os.environ, "RAG_ABLATION_CACHE": str(cache)}
    res = subprocess.run([sys.executable, str(ROOT / "stages/generate.py"), "--name", "bm25", "--run", str(tmp_path / "run.json"),
                          "--questions", str(tmp_path / "q.jsonl"), "--prompts", str(ROOT / "prompts"),
                          "--out", str(tmp_path / "a.json"), "--latency", str(tmp_path / "l.json")],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("error: the prompt cache") and str(cache / "prompts.sqlite") in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "a.json").exists()


@pytest.mark.bad_input
def test_a_full_disk_is_named_as_such_and_the_cache_keeps_its_answers(tmp_path):
    """SQLITE_FULL (here through ``max_page_count``, as a full disk gives it) is not damage:
    moving the file aside would throw away intact answers, so the message says to free space."""
    path = tmp_path / "prompts.sqlite"
    filled_prompt_cache(path, n=20)
    with PromptCache(path) as cache:
        pages = cache._conn.execute("PRAGMA page_count").fetchone()[0]
        cache._conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(CacheUnwritable) as err:
            for i in range(200):
                cache.put(f"new{i}", GEN)
    msg = str(err.value)
    assert f"the prompt cache {path} cannot grow: the disk holding it is full" in msg
    assert "free space" in msg and "RAG_ABLATION_CACHE" in msg and "damaged" not in msg and "mv " not in msg
    with PromptCache(path) as cache:
        assert all(cache.get(f"k{i}") == GEN for i in range(20))


@pytest.mark.bad_input
def test_a_read_only_embedding_cache_is_named_as_such_and_keeps_its_vectors(tmp_path):
    path = tmp_path / "embeddings.sqlite"
    vectors = EmbeddingCache(path)
    vectors.put_many("m", {"a": np.ones(4, dtype=np.float32)})
    vectors._db.execute("PRAGMA query_only = 1")  # SQLITE_READONLY, as a read-only file gives it (root ignores modes)
    with pytest.raises(CacheUnwritable, match=r"the embedding cache .*embeddings\.sqlite cannot be written .*writable"):
        vectors.put_many("m", {"b": np.zeros(4, dtype=np.float32)})
    vectors.close()
    vectors = EmbeddingCache(path)
    assert set(vectors.get_many("m", ["a", "b"])) == {"a"}
    vectors.close()


OPENER = """
import sys, time
from pathlib import Path
from rag_ablation.support.sqlite_cache import open_cache
folder, start = Path(sys.argv[1]), float(sys.argv[2])
for i in range(20):
    while time.time() < start + 0.05 * i:
        pass
    conn = open_cache(folder / f"{i}.sqlite", what="prompt", timeout=30)
    conn.execute("CREATE TABLE IF NOT EXISTS t (a)")
    conn.close()
print("opened")
"""


def test_two_processes_opening_a_new_cache_at_the_same_moment_both_get_it(tmp_path):
    # Both switch a fresh file to WAL at once: SQLite answers one of them "database is locked"
    # without waiting (one in four openings failed so before the switch was retried).
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.time() + 2.0
    procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(tmp_path), str(start)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "opened", err
    for i in range(20):
        conn = sqlite3.connect(tmp_path / f"{i}.sqlite")
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()
