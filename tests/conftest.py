from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rag_ablation.evaluation.scoring.scores import RETRIEVAL_FIELDS
from rag_ablation.core.io import datasets_dir
from rag_ablation.core.pipeline_files import PIPELINE_FILES, stage_name

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# external data sets are found through one setting: $RAG_ABLATION_DATASETS, default ../shared/datasets
COVIDQA = datasets_dir() / "covidqa"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own embedding/prompt cache folder, so no test sees another's."""
    monkeypatch.setenv("RAG_ABLATION_CACHE", str(tmp_path_factory.mktemp("cache")))


def ran_stages(output: str) -> set[str]:
    """The stages DVC's ``output`` says it ran (``Running stage 'NAME'``), each by its name
    without its file (``index/dvc.yaml:chunk@base`` -> ``chunk@base``)."""
    return {stage_name(s) for s in re.findall(r"Running stage '([^']+)'", output)}


def pipeline_stages(repo: Path = ROOT) -> dict:
    """Stage (group) name -> its definition, from every dvc.yaml of the pipeline in ``repo``."""
    return {name: stage for f in PIPELINE_FILES
            for name, stage in yaml.safe_load((repo / f).read_text(encoding="utf-8"))["stages"].items()}


def lock_stages(repo: Path) -> dict:
    """Stage name -> its lock entry, from the lock file beside each dvc.yaml of the pipeline in
    ``repo`` (the names are unique across the files: tests/core/test_pipeline_files.py)."""
    out: dict = {}
    for f in PIPELINE_FILES:
        lock = repo / Path(f).parent / "dvc.lock"
        if lock.is_file():
            out.update(yaml.safe_load(lock.read_text(encoding="utf-8"))["stages"])
    return out


def copy_pipeline(dest: Path) -> None:
    """The pipeline's own files (its dvc.yaml files) into the folder ``dest``, at the same paths."""
    for f in PIPELINE_FILES:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / f, dest / f)


@dataclass
class Q:
    """A question with only what retrieval and generation read (tests' hand-built fixtures)."""

    id: str
    question: str
    slice: str = "main"
    answerable: bool = True


GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
VENV_BIN = Path(sys.executable).parent


def run_in(cwd: Path, *cmd: str, env: dict | None = None) -> str:
    """Run ``cmd`` in ``cwd`` with the environment's bin folder first on PATH; fail the test
    with the command's output if it exits non-zero. Returns stdout + stderr."""
    env = env or {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", **GIT_ENV}
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    assert res.returncode == 0, f"{' '.join(cmd)} failed:\n{res.stdout}\n{res.stderr}"
    return res.stdout + res.stderr


def make_fixture_repo(d: Path) -> Path:
    """A git + DVC repository in ``d`` holding the project's pipeline, code and prompts with the
    fixture corpus, questions and params, committed on ``main`` (nothing run yet)."""
    copy_pipeline(d)
    for item in ("stages", "rag_ablation", "prompts", ".dvcignore"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, d / item)
    shutil.copytree(FIXTURES / "corpus", d / "data/corpus")
    (d / "data/questions").mkdir(parents=True)
    shutil.copy(FIXTURES / "questions.jsonl", d / "data/questions/handbook.jsonl")
    shutil.copy(FIXTURES / "params.yaml", d / "params.yaml")
    (d / "data/labels").mkdir(parents=True)
    (d / "data/labels/audit.jsonl").write_text("")  # no audit yet
    (d / "data/labels/grades.jsonl").write_text("")  # no hand grades yet
    (d / "data/imported").mkdir(parents=True)
    shutil.copy(ROOT / "data/imported/README.md", d / "data/imported/README.md")  # the dataset stage depends on it
    (d / "metrics").mkdir(exist_ok=True)  # no accepted gate baseline yet: the gate has nothing to compare
    (d / "metrics/gate_baseline.csv").write_text(",".join(RETRIEVAL_FIELDS) + "\n")
    for pyc in d.rglob("__pycache__"):
        shutil.rmtree(pyc)
    dvc = str(VENV_BIN / "dvc")
    run_in(d, "git", "init", "-q", "-b", "main")
    run_in(d, dvc, "init", "-q")
    run_in(d, dvc, "config", "core.analytics", "false")
    return d


@pytest.fixture(scope="session")
def built_pipeline(tmp_path_factory) -> Path:
    """The fixture pipeline built once per session: :func:`make_fixture_repo`, ``dvc repro``, the
    result committed on ``main``. A template, never changed: a test takes its own copy with
    :func:`copy_repo` (seconds) instead of building the pipeline again (a minute or more on 2
    cores). The repro uses a cache folder of the template's own (embeddings and LLM replies),
    so a copy that reruns stages under its test's private cache recomputes what it reruns."""
    d = make_fixture_repo(tmp_path_factory.mktemp("built"))
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", **GIT_ENV,
           "RAG_ABLATION_CACHE": str(tmp_path_factory.mktemp("built-cache"))}
    out = run_in(d, str(VENV_BIN / "dvc"), "repro", env=env)
    assert {"retrieve@hybrid", "generate@bm25", "queries@rewrite"} <= ran_stages(out), out
    run_in(d, "git", "add", "-A")
    run_in(d, "git", "commit", "-q", "-m", "fixture pipeline")
    return d


def copy_repo(src: Path, dest: Path) -> Path:
    """A copy of the repository ``src`` (work tree, git history, DVC cache) at ``dest``, which
    must not exist yet. DVC keeps no absolute paths in a repository, so the copy is a clone
    with its outputs already in place: ``dvc status`` is clean in it as in ``src``."""
    shutil.copytree(src, dest, symlinks=True)
    return dest


def default_sigint() -> None:
    """``preexec_fn`` for a process a test will interrupt with SIGINT: SIGINT back to its default.

    A run started with SIGINT ignored (``nohup``, a background job of a non-interactive shell,
    some CI runners) hands the ignore to every child, and a Python child that starts with SIGINT
    ignored never raises KeyboardInterrupt, so a Ctrl-C test would wait in vain. Handlers (not
    ignores) are reset by exec anyway, so this changes nothing for an interactive run."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
