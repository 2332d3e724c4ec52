"""`embedding.engine: ray` (rag_ablation.retrieval.ray_embedding): the same vectors as the local
engine, bit for bit, from a local Ray and from a two-node cluster on this machine; a worker node
killed mid-stage costs nothing; a cluster that does not answer, or Ray not installed, is one line.

Skipped without the `ray` extra (`pip install -e .[ray]`). One two-node cluster
(``ray.cluster_utils.Cluster``, each node 1 CPU) is shared by the module."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow  # Ray clusters and the dense stage end to end

from conftest import FIXTURES, ROOT  # noqa: E402
from rag_ablation.core.config import EmbeddingConfig, RayConfig  # noqa: E402
from rag_ablation.retrieval import embeddings, ray_embedding  # noqa: E402

STAGE = ROOT / "stages" / "dense_index.py"
RAY_LINE = re.compile(r"ray: embedded (\d+) batches with (\d+) actors on (\d+) nodes \(([^)]*)\)")
EMBEDDED = re.compile(r"embedded (\d+) new texts, (\d+) from the cache")


def write_params(d: Path, *, engine: str = "local", threads: int = 1, address: str | None = None) -> None:
    p = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    p["embedding"].update(engine=engine, threads=threads)
    if address is not None:
        p["ray"] = {"address": address}
    (d / "params.yaml").write_text(yaml.safe_dump(p))


def numbered_chunks(path: Path, n: int) -> list[str]:
    """``n`` short distinct chunks of one made-up document, as the chunk stage writes them."""
    words = "ledger settles refunds nightly queue retries invoices audits replicas restores pages alerts".split()
    texts = []
    with open(path, "w") as f:
        for i in range(n):
            body = f"Entry {i}: " + " ".join(words[(i * 7 + j) % len(words)] for j in range(4 + i % 9))
            texts.append(body)
            f.write(json.dumps({"id": f"t/a.md#{i}", "doc": "t/a.md", "track": "t", "start": 0, "end": len(body),
                                "heading_path": ["A"], "heading": "", "body": body}) + "\n")
    return texts


def dense_args(d: Path, chunks: Path, out: str) -> list[str]:
    return [sys.executable, str(STAGE), "--chunks", str(chunks), "--out", str(d / out / "dense"),
            "--metrics", str(d / out / "m.json")]


def dense(d: Path, chunks: Path, out: str, cache: str, *, env: dict | None = None, ok: bool = True):
    """The dense stage in ``d`` (its params.yaml) with the embedding cache ``d/cache``."""
    res = subprocess.run(dense_args(d, chunks, out), cwd=d, capture_output=True, text=True,
                         env={**os.environ, "RAG_ABLATION_CACHE": str(d / cache), **(env or {})})
    if ok:
        assert res.returncode == 0, res.stderr
    return res


def same_outputs(a: Path, b: Path) -> None:
    """Both runs' index folders and metrics files hold the same bytes."""
    names = sorted(p.name for p in (a / "dense").iterdir())
    assert names == sorted(p.name for p in (b / "dense").iterdir()) and "index.faiss" in names
    for name in names:
        assert (a / "dense" / name).read_bytes() == (b / "dense" / name).read_bytes(), name
    assert (a / "m.json").read_bytes() == (b / "m.json").read_bytes()


def messages(stderr: str) -> list[str]:
    """The stage's stderr lines less the progress bar (embed_cached opens it before the engine
    connects, so it is there even when the connection fails)."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("embedding:")]


def cache_rows(cache: Path) -> int:
    try:
        with sqlite3.connect(cache / "embeddings.sqlite") as db:
            return db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.fixture(scope="module")
def handbook(tmp_path_factory):
    """The fixture corpus chunked (`base`) and indexed by the local engine."""
    d = tmp_path_factory.mktemp("handbook")
    shutil.copytree(FIXTURES / "corpus", d / "corpus")
    write_params(d)
    res = subprocess.run([sys.executable, str(ROOT / "stages" / "chunk.py"), "--name", "base", "--corpus", "corpus",
                          "--out", str(d / "chunks.jsonl")], cwd=d, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    dense(d, d / "chunks.jsonl", "local", "cache-local")
    return d


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A Ray cluster of two nodes on this machine (head and one worker, 1 CPU each), and the
    numbered chunks indexed by the local engine (started while the cluster comes up)."""
    from ray.cluster_utils import Cluster

    d = tmp_path_factory.mktemp("cluster")
    numbered_chunks(d / "chunks.jsonl", 320)
    write_params(d)
    local = subprocess.Popen(dense_args(d, d / "chunks.jsonl", "local"), cwd=d, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "RAG_ABLATION_CACHE": str(d / "cache-local")})
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    worker = c.add_node(num_cpus=1)
    c.wait_for_nodes()
    assert local.wait() == 0, local.stderr.read()
    write_params(d, engine="ray", address=c.address)
    yield d, c, worker
    c.shutdown()


def test_ray_engine_gives_the_local_engines_vectors_bit_for_bit(tmp_path):
    """Through embed_cached, at 2 torch threads (the threads a vector's last bits depend on: each
    actor gets `embedding.threads` of them): the Ray engine's vectors equal the local engine's."""
    texts = [f"Note {i}: the ledger settles refunds nightly" + " and retries the queue" * (i % 7) for i in range(40)]
    cfg = EmbeddingConfig(batch_size=16, threads=2, engine="ray")
    model = embeddings.load_model(cfg.model, threads=2)
    runs = {}
    for engine in ("local", "ray"):
        cache = embeddings.EmbeddingCache(tmp_path / f"{engine}.sqlite")
        runs[engine], stats = embeddings.embed_cached(
            texts, model_name=cfg.model, cache=cache, load=lambda: model, batch_size=cfg.batch_size, progress=False,
            engine=embeddings.make_engine(EmbeddingConfig(batch_size=16, threads=2, engine=engine), RayConfig()))
        cache.close()
        assert stats == {"texts": 40, "cached": 0, "computed": 40}
    assert np.array_equal(runs["local"], runs["ray"])
    assert not ray.is_initialized(), "the local Ray started for the run is shut down after it"


def test_stage_on_a_local_ray_writes_the_local_engines_index_byte_for_byte(handbook):
    write_params(handbook, engine="ray")
    try:
        res = dense(handbook, handbook / "chunks.jsonl", "ray", "cache-ray")
    finally:
        write_params(handbook)
    assert res.stdout == "", "Ray prints nothing on the stage's stdout"
    same_outputs(handbook / "local", handbook / "ray")
    n = sum(1 for _ in open(handbook / "chunks.jsonl"))
    assert EMBEDDED.search(res.stderr).groups() == (str(n), "0")
    assert RAY_LINE.search(res.stderr).group(2, 3) == ("1", "1")  # threads 1: one actor, one node


def test_stage_on_a_two_node_cluster_uses_both_nodes_and_writes_the_local_index(cluster):
    d, c, worker = cluster
    res = dense(d, d / "chunks.jsonl", "ray", "cache-ray")
    assert res.stdout == ""
    same_outputs(d / "local", d / "ray")
    assert EMBEDDED.search(res.stderr).groups() == ("320", "0")
    batches, actors, nodes, per_node = RAY_LINE.search(res.stderr).groups()
    assert (batches, actors, nodes) == ("20", "2", "2")
    ran = {part.split(":")[0] for part in per_node.split(", ")}
    assert ran == {c.head_node.node_id[:8], worker.node_id[:8]}, "both nodes embedded batches"
    again = dense(d, d / "chunks.jsonl", "ray", "cache-ray")  # the cluster was left running; all cached now
    assert EMBEDDED.search(again.stderr).groups() == ("0", "320") and "ray: embedded" not in again.stderr


def test_killing_a_worker_node_mid_stage_loses_nothing(cluster):
    """SIGKILL the worker node's raylet once some batches are cached: Ray restarts its actor on
    the head and retries its batches, the stage finishes with the local engine's index, and a
    rerun embeds nothing (every text was embedded, and committed, once)."""
    d, c, worker = cluster
    cache = d / "cache-kill"
    proc = subprocess.Popen(dense_args(d, d / "chunks.jsonl", "kill"), cwd=d, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "RAG_ABLATION_CACHE": str(cache)})
    deadline = time.time() + 120
    while cache_rows(cache) < 48 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, "the stage is still embedding when the node is killed"
    killed_at = cache_rows(cache)
    c.remove_node(worker, allow_graceful=False)
    out, err = proc.communicate(timeout=150)
    assert proc.returncode == 0, err
    assert killed_at < 320 and EMBEDDED.search(err).groups() == ("320", "0")
    assert out == "", "Ray's notice of the lost node goes to stderr, not the stage's stdout"
    same_outputs(d / "local", d / "kill")
    rerun = dense(d, d / "chunks.jsonl", "kill", "cache-kill")
    assert EMBEDDED.search(rerun.stderr).groups() == ("0", "320")
    assert cache_rows(cache) == 320


@pytest.mark.bad_input
def test_an_address_that_refuses_is_one_line_and_exit_2(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    numbered_chunks(tmp_path / "chunks.jsonl", 3)
    write_params(tmp_path, engine="ray", address=f"127.0.0.1:{port}")
    t = time.monotonic()
    res = dense(tmp_path, tmp_path / "chunks.jsonl", "out", "cache", ok=False)
    assert res.returncode == 2 and time.monotonic() - t < 30
    assert messages(res.stderr) == [
        f"error: ray.address 127.0.0.1:{port}: no Ray cluster answers there (ConnectionRefusedError: [Errno 111] "
        "Connection refused); start one with `ray start --head --port PORT` and set ray.address to HOST:PORT of its "
        "head, or set ray.address to null for a local Ray"]
    assert not (tmp_path / "out").exists()


@pytest.mark.bad_input
def test_an_address_that_takes_connections_but_is_no_ray_head_is_one_line_within_the_bound(tmp_path):
    """ray.init waits forever on a port that accepts but never speaks Ray: the stage gives up
    after $RAG_ABLATION_RAY_CONNECT_TIMEOUT seconds (30 by default) with one line, exit 2."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        port = s.getsockname()[1]
        numbered_chunks(tmp_path / "chunks.jsonl", 3)
        write_params(tmp_path, engine="ray", address=f"127.0.0.1:{port}")
        t = time.monotonic()
        res = dense(tmp_path, tmp_path / "chunks.jsonl", "out", "cache", ok=False,
                    env={"RAG_ABLATION_RAY_CONNECT_TIMEOUT": "4"})
        took = time.monotonic() - t
    assert res.returncode == 2 and took < 25, took
    assert messages(res.stderr) == [
        f"error: ray.address 127.0.0.1:{port}: no Ray cluster answers there (it takes connections, but no Ray head "
        "answered within 4 s); start one with `ray start --head --port PORT` and set ray.address to HOST:PORT of its "
        "head, or set ray.address to null for a local Ray"]
    assert not (tmp_path / "out").exists()


@pytest.mark.bad_input
def test_engine_ray_without_ray_installed_says_how_to_install_it(tmp_path):
    """Ray made unimportable in the stage's process (``sys.modules["ray"] = None``)."""
    numbered_chunks(tmp_path / "chunks.jsonl", 3)
    write_params(tmp_path, engine="ray")
    code = ("import os, runpy, sys; sys.modules['ray'] = None; sys.argv = sys.argv[1:]; "
            "sys.path.insert(0, os.path.dirname(sys.argv[0])); runpy.run_path(sys.argv[0], run_name='__main__')")
    res = subprocess.run([sys.executable, "-c", code, *dense_args(tmp_path, tmp_path / "chunks.jsonl", "out")[1:]],
                         cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "RAG_ABLATION_CACHE": str(tmp_path / "cache")})
    assert res.returncode == 2, res.stderr
    lines = messages(res.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: embedding.engine: ray needs Ray, which is not installed")
    assert "`pip install -e .[ray]`" in lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.bad_input
def test_make_engine_without_ray_raises_the_install_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ray_embedding.RayUnavailable, match=r"pip install -e \.\[ray\]"):
        embeddings.make_engine(EmbeddingConfig(engine="ray"), RayConfig())


def test_actors_never_take_more_threads_than_the_cluster_has_cpus():
    assert ray_embedding.actors_for(2, 1, 20) == 2
    assert ray_embedding.actors_for(2, 2, 20) == 1
    assert ray_embedding.actors_for(5, 2, 20) == 2
    assert ray_embedding.actors_for(8, 1, 3) == 3  # no more actors than batches
