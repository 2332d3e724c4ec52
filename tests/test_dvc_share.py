"""Sharing results across machines with DVC, on the real dvc.yaml and the fixture corpus.

"Machine A" runs the whole pipeline once and pushes its outputs and run-cache to a DVC remote
(a local folder here; S3, SSH, ... behave the same). Every other "machine" is a `git clone` of A
(code, params, dvc.lock and the git-tracked `cache: false` metrics, no DVC outputs, an empty
`.dvc/cache`) with an embedding/prompt cache of its own:

- a clone that runs `dvc pull --run-cache` then `dvc repro` runs no stage, the LLM stages
  included, and ends with A's metrics byte for byte; a clone that does not pull runs stages;
- the run-cache alone (`dvc fetch --run-cache`, outputs not checked out) restores only the
  stages whose outputs are all DVC-cached: DVC 3.67 pushes no object of a `cache: false`
  output, so a stage with one (most stages here: every latency and metrics file) reruns;
- the multi-machine sweep: two clones each run a slice of a grid, `dvc exp push` it to a shared
  bare git repository, and a third clone `dvc exp pull`s all of it and runs
  `rag-ablation sweep-report --all-exps` over the four experiments;
- `dvc pull --run-cache` from a remote that does not exist, or is empty, fails, and nothing runs.

The documentation of these commands: docs/scale.md, "Beyond one machine"."""
from __future__ import annotations

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rag_ablation.core.pipeline_files import stage_name, stage_target

from conftest import GIT_ENV, VENV_BIN, copy_repo, lock_stages, ran_stages as ran, run_in

pytestmark = pytest.mark.slow

DVC = str(VENV_BIN / "dvc")
RAG = str(VENV_BIN / "rag-ablation")


def restored(output: str) -> set[str]:
    """The stages DVC restored from the run-cache instead of running them."""
    return {stage_name(s) for s in re.findall(r"Stage '([^']+)' is cached - skipping run", output)}


def machine_env(cache: Path) -> dict[str, str]:
    """The environment of one "machine": the venv first on PATH, git's identity, and an
    embedding/prompt cache of its own. That cache lives outside DVC (SQLite files keyed by text
    hash; by default `.cache/` in the clone, but the test session sets one RAG_ABLATION_CACHE for
    every process of a test): a clone sharing A's would answer every prompt and embedding from
    it, so a stage that did rerun would look as cheap as a restored one, which no second machine
    gets. With its own (empty) cache a machine really recomputes what it runs, and a cache still
    empty after `dvc repro` shows that nothing was computed there."""
    return {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", **GIT_ENV,
            "RAG_ABLATION_CACHE": str(cache)}


def files_under(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def outputs(d: Path) -> list[str]:
    """The DVC outputs present in clone ``d`` (git holds only the .gitignore files DVC wrote)."""
    return [str(p) for p in (d / "data/build").rglob("*") if p.is_file() and p.name != ".gitignore"]


class Machines:
    """A's repository, its DVC remote and a factory of clones (each a machine of its own)."""

    def __init__(self, root: Path):
        self.root = root
        self.a = root / "A"
        self.remote = root / "dvc-remote"
        self.n = 0

    def clone(self, src: Path | str | None = None, name: str | None = None) -> tuple[Path, dict[str, str]]:
        """A fresh `git clone` of ``src`` (default A) with its own embedding/prompt cache."""
        self.n += 1
        name = name or f"clone{self.n}"
        d, env = self.root / name, machine_env(self.root / f"cache-{name}")
        run_in(self.root, "git", "clone", "-q", str(src or self.a), name, env=env)
        return d, env


@pytest.fixture(scope="module")
def machines(built_pipeline, tmp_path_factory) -> Machines:
    """Machine A: the fixture pipeline as run once in the session (conftest.built_pipeline: the
    whole cold pipeline, LLM stages included, with its run-cache), copied, committed with a DVC
    remote as its default, and `dvc push --run-cache`: the outputs of dvc.lock and every
    run-cache entry."""
    m = Machines(tmp_path_factory.mktemp("share"))
    env = machine_env(m.root / "cache-A")
    copy_repo(built_pipeline, m.a)
    assert "Running stage" not in run_in(m.a, DVC, "repro", env=env), "the copy is up to date"
    run_in(m.a, DVC, "remote", "add", "-d", "shared", str(m.remote), env=env)
    run_in(m.a, "git", "add", "-A", env=env)
    run_in(m.a, "git", "commit", "-q", "-m", "fixture pipeline, run, with a shared DVC remote", env=env)
    run_in(m.a, DVC, "push", "--run-cache", env=env)
    assert any((m.remote / "runs").rglob("*")), "the run-cache entries are on the remote"
    return m


def test_a_clone_that_pulls_the_run_cache_reruns_no_stage(machines):
    """`dvc pull --run-cache` then `dvc repro`: every stage is up to date (the LLM stages too),
    nothing was embedded or prompted, and the workspace is A's: git sees no change (so every
    git-tracked metrics file and lock file are A's bytes) and the pulled outputs equal A's."""
    b, env = machines.clone(name="B")
    assert outputs(b) == [] and not (b / ".dvc/cache").exists()
    run_in(b, DVC, "pull", "--run-cache", env=env)
    out = run_in(b, DVC, "repro", env=env)
    stages = lock_stages(b)
    assert ran(out) == set(), ran(out)
    assert len(re.findall(r"Stage '[^']+' didn't change, skipping", out)) == len(stages), out
    assert {"generate@bm25", "generate@hybrid_rerank", "judge@bm25", "queries@rewrite"} <= set(stages)
    assert run_in(b, "git", "status", "--porcelain", env=env) == ""
    assert files_under(b / "metrics") == files_under(machines.a / "metrics")
    for folder in ("data/build/answers", "data/build/judgments", "data/build/runs", "data/build/queries"):
        assert files_under(b / folder) == files_under(machines.a / folder), folder
    cache = Path(env["RAG_ABLATION_CACHE"])
    assert not cache.exists() or not any(cache.iterdir()), "B embedded or prompted something"


def test_a_clone_without_the_pull_runs_stages(machines):
    """The negative: the same clone without the pull has no outputs, so `dvc repro` runs the
    stages (here only as far as the first chunking: the whole pipeline would be a cold run)."""
    c, env = machines.clone()
    out = run_in(c, DVC, "repro", stage_target("chunk@base"), env=env)
    assert ran(out) == {"dataset", "chunk@base"}, out


def test_the_run_cache_alone_restores_only_stages_whose_outputs_dvc_caches(machines):
    """`dvc fetch --run-cache`: the run-cache entries and dvc.lock's outputs in the local cache,
    nothing checked out. `dvc repro` restores a stage from the run-cache only when every output
    is DVC-cached (`chunk`, `index_plan`, `bm25`): a `cache: false` output's bytes are saved in
    the local cache by the run that made them but never pushed (DVC 3.67 pushes only cached
    outputs), so `dataset` (its committed `metrics/corpus.json`, the documents per format and the
    files left out, which `dvc metrics diff` shows in review) and `questions` (`metrics/
    questions.json`) run again, as would every stage with a latency or metrics file, the LLM
    stages among them. `dataset` writes the same bytes, so what follows it is restored."""
    d, env = machines.clone()
    run_in(d, DVC, "fetch", "--run-cache", env=env)
    out = run_in(d, DVC, "repro", stage_target("bm25@base"), env=env)
    assert ran(out) == {"dataset"}, out
    assert restored(out) == {"chunk@base", "index_plan", "bm25@base"}, out
    out = run_in(d, DVC, "repro", "questions", env=env)
    assert ran(out) == {"questions"}, out
    assert run_in(d, "git", "status", "--porcelain", env=env) == "", "the rerun wrote the same bytes"


@pytest.mark.bad_input
@pytest.mark.parametrize("remote", ["missing", "empty"])
def test_pulling_from_a_missing_or_empty_remote_fails_and_runs_nothing(machines, remote):
    """A remote folder that does not exist, or exists and holds nothing: `dvc pull --run-cache`
    exits non-zero with DVC's own message (the hashes it could not find, then "failed to pull
    data from the cloud"; it names no remote and first prints "Everything is up to date."), and
    restores and runs nothing."""
    e, env = machines.clone()
    url = machines.root / f"{remote}-remote"
    if remote == "empty":
        url.mkdir()
    run_in(e, DVC, "remote", "add", "--local", remote, str(url), env=env)
    res = subprocess.run([DVC, "pull", "--run-cache", "-r", remote], cwd=e, env=env, capture_output=True,
                         text=True)
    output = res.stdout + res.stderr
    assert res.returncode != 0, output
    assert "Missing cache files" in output and "failed to pull data from the cloud" in output, output
    assert ran(output) == set() and outputs(e) == []
    assert not (e / ".dvc/cache/runs").exists(), "no run-cache entry came from nowhere"


SLICES = {"M1": {"r-base-10": ("base", 10), "r-base-15": ("base", 15)},
          "M2": {"r-heading-10": ("heading", 10), "r-heading-15": ("heading", 15)}}
"""The sweep: the `rewrite` config (BM25 over LLM-rewritten queries; not answered) at two
chunkings and two depths, one chunking per machine. Only `index_plan`, `retrieve@rewrite` and
`score` rerun for each; the query rewrites are the pulled ones."""


def run_slice(machine: Path, env: dict[str, str], slice_: dict[str, tuple[str, int]]) -> str:
    """One machine's share of the sweep: pull A's outputs, run its experiments, push them."""
    run_in(machine, DVC, "pull", env=env)
    out = ""
    for name, (chunking, depth) in slice_.items():
        # every key of the grid on every run: `dvc exp run` in the workspace leaves the previous
        # experiment's params there. The target `score` stops at the per-question scores (what
        # sweep-report reads); the sweep in the docs runs the whole pipeline
        out += run_in(machine, DVC, "exp", "run", "-n", name, "-S", f"retrieval.rewrite.chunking={chunking}",
                      "-S", f"retrieval.rewrite.depth={depth}", "score", env=env)
    run_in(machine, DVC, "exp", "push", "origin", env=env)
    return out


def test_two_machines_each_run_a_slice_and_a_third_summarises_the_sweep(machines):
    """A shared bare git repository holds A's commit (`git push`); two clones each run two
    experiments at the same time and `dvc exp push origin` them (git refs to the bare repo,
    outputs to the DVC remote); a third clone `dvc exp pull origin` (every experiment of its
    commit) and `rag-ablation sweep-report --all-exps` ranks all four."""
    origin = machines.root / "origin.git"
    run_in(machines.root, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    run_in(machines.a, "git", "remote", "add", "origin", str(origin))
    run_in(machines.a, "git", "push", "-q", "origin", "main")
    workers = {name: machines.clone(origin, name) for name in SLICES}
    with ThreadPoolExecutor(len(workers)) as pool:
        outs = {name: pool.submit(run_slice, *workers[name], SLICES[name]) for name in workers}
        outs = {name: f.result() for name, f in outs.items()}
    for out in outs.values():
        assert ran(out) <= {"index_plan", "retrieve@rewrite", "score"}, ran(out)
    names = sorted(n for s in SLICES.values() for n in s)
    refs = run_in(origin, "git", "for-each-ref", "refs/exps", "--format=%(refname:lstrip=-1)").split()
    assert sorted(refs) == names, "`dvc exp push` put every experiment in the bare repository"

    m3, env = machines.clone(origin, "M3")
    run_in(m3, DVC, "exp", "pull", "origin", env=env)
    # the baseline is stats.baseline (dense) on the first experiment
    summary = run_in(m3, RAG, "sweep-report", "--all-exps", "--config", "dense", "--config", "rewrite", env=env)
    sweep = json.loads((m3 / "metrics/sweep.json").read_text())
    # candidates with identical per-question results are one candidate, the others its aliases
    ranked = sorted([*sweep["ranking"], *(a for r in sweep["ranking"].values() for a in r["aliases"])])
    assert ranked == sorted(f"{c}@{n}" for n in names for c in ("dense", "rewrite"))
    assert f"Sweep: {len(sweep['ranking'])} candidates" in summary, summary
    for name, (chunking, depth) in {n: v for s in SLICES.values() for n, v in s.items()}.items():
        assert f"`{name}`: `retrieval.rewrite.chunking={chunking}`, `retrieval.rewrite.depth={depth}`" in summary
    # `dvc exp pull` brought the experiments' DVC-cached outputs too: the third machine applies
    # one another machine ran and reproduces it without running a stage
    run_in(m3, "git", "stash", "-q", "--include-untracked", env=env)  # the summary's files
    run_in(m3, DVC, "exp", "apply", "r-heading-10", env=env)
    out = run_in(m3, DVC, "repro", "score", env=env)
    assert ran(out) == set(), out
    assert "chunking: heading" in (m3 / "params.yaml").read_text()
