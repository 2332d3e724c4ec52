"""DVC runs of the real pipeline on the fixture corpus that are interrupted or run in parallel:
Ctrl-C of `dvc exp run` then a rerun gives what an uninterrupted run gives, and
`dvc queue start -j 2` runs two experiments at once as each would run alone.

Both run the stages up to `dense@base` only (dataset, chunk, dense: a model load and an
embedding), which is what a cold fixture pipeline spends most of its time on; a whole cold
`dvc repro` of the fixture takes about 85 s, too long to run twice here."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from rag_ablation.core.pipeline_files import stage_target
from rag_ablation.data.chunks import load_chunks

from conftest import GIT_ENV, VENV_BIN, default_sigint, lock_stages, make_fixture_repo, run_in

pytestmark = pytest.mark.slow_dvc

DVC = str(VENV_BIN / "dvc")
DENSE, CHUNK = stage_target("dense@base"), stage_target("chunk@base")
"""`index/dvc.yaml:dense@base`, as DVC takes and prints it from the top folder."""
OUTPUTS = ("dvc.lock", "index/dvc.lock", "data/build/chunks/base.jsonl", "data/build/dense/base/index.faiss",
           "data/build/dense/base/chunk_ids.json", "metrics/index/base.json")
"""The files `dvc exp run index/dvc.yaml:dense@base` writes (the lock files hold every output's hash)."""


def same_output(x: Path, y: Path) -> bool:
    """Byte-equal files; lock files equal as YAML: DVC appends each stage's entry as the stage
    finishes, and it runs independent stages (here `index_plan` beside `dataset` and `chunk@base`)
    in an order that changes from run to run, so the entries' order in the file says nothing."""
    if x.name == "dvc.lock":
        return yaml.safe_load(x.read_text()) == yaml.safe_load(y.read_text())
    return x.read_bytes() == y.read_bytes()


def env_with(cache: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", **GIT_ENV,
            "RAG_ABLATION_CACHE": str(cache)}


def committed_repo(d: Path) -> Path:
    d.mkdir()
    make_fixture_repo(d)
    run_in(d, "git", "add", "-A")
    run_in(d, "git", "commit", "-q", "-m", "fixture pipeline")
    return d


def test_ctrl_c_of_dvc_exp_run_then_rerun_equals_an_uninterrupted_run(tmp_path):
    """SIGINT to the process group of `dvc exp run` (what Ctrl-C in a terminal sends) while the
    dense stage runs: the run stops, `dvc status` says exactly that stage is missing, no
    half-written index is left, and the rerun writes the outputs of an uninterrupted run (in a
    second repository with a cache of its own, run alongside) byte for byte."""
    a, b = committed_repo(tmp_path / "a"), committed_repo(tmp_path / "b")
    whole = subprocess.Popen([DVC, "exp", "run", DENSE], cwd=b, env=env_with(tmp_path / "cache_b"),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    env = env_with(tmp_path / "cache_a")
    proc = subprocess.Popen([DVC, "exp", "run", DENSE], cwd=a, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, preexec_fn=default_sigint)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if f"Running stage '{DENSE}'" in line:
            time.sleep(1.0)  # the stage is loading its model
            os.killpg(proc.pid, signal.SIGINT)
            break
    seen.append(proc.stdout.read())
    assert proc.wait(timeout=120) != 0, "".join(seen)
    output = "".join(seen)
    assert f"Running stage '{DENSE}'" in output and "Ran experiment" not in output
    assert "interrupted (Ctrl-C)" in output and "Traceback" not in output, output
    assert list((a / "data/build/dense").iterdir()) == [], "no index folder, not even a temporary one"
    assert not (a / "metrics/index/base.json").exists()
    assert "up to date" in run_in(a, DVC, "status", "dataset", CHUNK, env=env)
    status = run_in(a, DVC, "status", DENSE, env=env)
    assert "deleted:            data/build/dense/base" in status

    rerun = run_in(a, DVC, "exp", "run", DENSE, env=env)
    assert f"Running stage '{DENSE}'" in rerun and f"Running stage '{CHUNK}'" not in rerun
    assert "up to date" in run_in(a, DVC, "status", DENSE, env=env)
    out, _ = whole.communicate(timeout=300)
    assert whole.returncode == 0, out
    for name in OUTPUTS:
        assert same_output(a / name, b / name), name


def exp_file(d: Path, name: str, path: str) -> str:
    """``path`` as committed by experiment ``name`` (its git ref under refs/exps)."""
    refs = run_in(d, "git", "for-each-ref", "refs/exps", "--format=%(refname)").split()
    [ref] = [r for r in refs if r.endswith(f"/{name}")]
    return run_in(d, "git", "show", f"{ref}:{path}")


def embedded_texts(cache: Path) -> int:
    import sqlite3

    db = sqlite3.connect(cache / "embeddings.sqlite")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
    finally:
        db.close()


def applied(d: Path, name: str, env: dict[str, str]) -> dict[str, object]:
    """Experiment ``name``'s lock entries, chunks, metrics, chunk ids and index vectors: its
    committed lock files and params, and its outputs checked out from DVC's cache."""
    import faiss

    for path in ("dvc.lock", "index/dvc.lock", "params.yaml", "metrics/index/base.json"):
        (d / path).parent.mkdir(parents=True, exist_ok=True)
        (d / path).write_text(exp_file(d, name, path))
    run_in(d, DVC, "checkout", CHUNK, DENSE, env=env)
    index = faiss.read_index(str(d / "data/build/dense/base/index.faiss"))
    return {"lock": lock_stages(d),
            "files": {p: (d / p).read_bytes() for p in ("data/build/chunks/base.jsonl", "metrics/index/base.json",
                                                         "data/build/dense/base/chunk_ids.json", "params.yaml")},
            "vectors": index.reconstruct_n(0, index.ntotal)}


def test_dvc_queue_runs_two_experiments_at_once_as_each_alone(tmp_path):
    """Two queued experiments (`dvc exp run --queue -S chunk_size=...`) run by `dvc queue start
    -j 2` with one shared embedding cache: both succeed; each has the chunks, metrics and lock
    entries that the same experiment has run alone in another repository with a cache of its
    own, and the same index up to the last float bits; the shared cache is intact and holds each
    text once.

    Why not the index bit for bit: a text's vector depends in its last bits on the other texts
    of its embedding batch (padding), and which texts a run embeds depends on what the shared
    cache already holds, so on which experiment got there first (docs/llm.md)."""
    import numpy as np

    sizes = (150, 200)
    a, b = committed_repo(tmp_path / "a"), committed_repo(tmp_path / "b")
    env, env_alone = env_with(tmp_path / "cache_a"), env_with(tmp_path / "cache_b")
    for n in sizes:
        run_in(a, DVC, "exp", "run", "--queue", "-S", f"chunk_size={n}", "-n", f"c{n}", DENSE, env=env)
    try:
        # `queue start` leaves its workers running detached with its stdout and stderr: into a file,
        # never a pipe, or waiting for the pipe to close waits for the workers (a hang seen in CI)
        with open(tmp_path / "queue-start.log", "w") as log:
            started = subprocess.run([DVC, "queue", "start", "-j", "2"], cwd=a, env=env, stdout=log,
                                     stderr=subprocess.STDOUT, timeout=120)
        assert started.returncode == 0, (tmp_path / "queue-start.log").read_text()
        # meanwhile, the first alone (the second only has to succeed: the same code path)
        run_in(b, DVC, "exp", "run", "-S", f"chunk_size={sizes[0]}", "-n", f"c{sizes[0]}", DENSE,
               env=env_alone)
        deadline = time.time() + 300
        while time.time() < deadline:
            status = run_in(a, DVC, "queue", "status", env=env)
            if "Queued" not in status and "Running" not in status:
                break
            time.sleep(1)
    finally:
        subprocess.run([DVC, "queue", "stop"], cwd=a, env=env, capture_output=True)
    assert status.count("Success") == 2, status
    texts: set[str] = set()
    for n in sizes:
        queued = applied(a, f"c{n}", env)
        assert f"chunk_size: {n}" in queued["files"]["params.yaml"].decode()
        chunks = load_chunks(a / "data/build/chunks/base.jsonl")  # checked out by applied()
        texts |= {c.text for c in chunks}
        assert len(queued["vectors"]) == len(chunks) > 0, n
        if n != sizes[0]:
            continue
        alone = applied(b, f"c{n}", env_alone)
        assert queued["files"] == alone["files"], n
        for stage in ("dataset", "chunk@base"):
            assert queued["lock"][stage] == alone["lock"][stage], (n, stage)
        assert queued["lock"]["dense@base"]["deps"] == alone["lock"]["dense@base"]["deps"], n
        np.testing.assert_allclose(queued["vectors"], alone["vectors"], rtol=0, atol=1e-6)
    # the shared cache holds each distinct text of both experiments once, and nothing else
    assert embedded_texts(tmp_path / "cache_a") == len(texts)
