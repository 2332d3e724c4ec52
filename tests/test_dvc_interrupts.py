"""DVC runs of the real dvc.yaml on the fixture corpus that are interrupted or run in parallel:
Ctrl-C of `dvc exp run` then a rerun gives what an uninterrupted run gives, and
`dvc queue start -j 2` runs two experiments at once as each would run alone.

Both run the stages up to `dense@base` only (dataset, chunk, dense: a model load and an
embedding), which is what a cold fixture pipeline spends most of its time on; a whole cold
`dvc repro` of the fixture takes about 85 s, too long to run twice here."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import GIT_ENV, VENV_BIN, make_fixture_repo, run_in

pytestmark = pytest.mark.slow_dvc

DVC = str(VENV_BIN / "dvc")
OUTPUTS = ("dvc.lock", "data/build/chunks/base.jsonl", "data/build/dense/base/index.faiss",
           "data/build/dense/base/chunk_ids.json", "metrics/index/base.json")
"""The files `dvc exp run dense@base` writes (dvc.lock holds every output's hash)."""


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
    whole = subprocess.Popen([DVC, "exp", "run", "dense@base"], cwd=b, env=env_with(tmp_path / "cache_b"),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    env = env_with(tmp_path / "cache_a")
    proc = subprocess.Popen([DVC, "exp", "run", "dense@base"], cwd=a, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if "Running stage 'dense@base'" in line:
            time.sleep(1.0)  # the stage is loading its model
            os.killpg(proc.pid, signal.SIGINT)
            break
    seen.append(proc.stdout.read())
    assert proc.wait(timeout=120) != 0, "".join(seen)
    output = "".join(seen)
    assert "Running stage 'dense@base'" in output and "Ran experiment" not in output
    assert "interrupted (Ctrl-C)" in output and "Traceback" not in output, output
    assert list((a / "data/build/dense").iterdir()) == [], "no index folder, not even a temporary one"
    assert not (a / "metrics/index/base.json").exists()
    assert "up to date" in run_in(a, DVC, "status", "dataset", "chunk@base", env=env)
    status = run_in(a, DVC, "status", "dense@base", env=env)
    assert "deleted:            data/build/dense/base" in status

    rerun = run_in(a, DVC, "exp", "run", "dense@base", env=env)
    assert "Running stage 'dense@base'" in rerun and "Running stage 'chunk@base'" not in rerun
    assert "up to date" in run_in(a, DVC, "status", "dense@base", env=env)
    out, _ = whole.communicate(timeout=300)
    assert whole.returncode == 0, out
    for name in OUTPUTS:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
