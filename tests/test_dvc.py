"""DVC behaviour of the real dvc.yaml, in a temporary git repository on the fixture corpus:
only changed configs rerun, `dvc exp run -S chunk_size=...` sweeps, a removed config leaves
the metrics, and a second `dvc repro` runs nothing."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import FIXTURES, ROOT

pytestmark = pytest.mark.slow

DVC = str(Path(sys.executable).parent / "dvc")


def sh(cwd, *cmd):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    assert res.returncode == 0, f"{' '.join(cmd)} failed:\n{res.stdout}\n{res.stderr}"
    return res.stdout + res.stderr


def ran(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    d = tmp_path_factory.mktemp("dvcrepo")
    for item in ("dvc.yaml", "stages", "rag_ablation", "prompts", ".dvcignore"):
        src = ROOT / item
        (shutil.copytree if src.is_dir() else shutil.copy)(src, d / item)
    shutil.copytree(FIXTURES / "corpus", d / "data/corpus")
    (d / "data/questions").mkdir(parents=True)
    shutil.copy(FIXTURES / "questions.jsonl", d / "data/questions/handbook.jsonl")
    shutil.copy(FIXTURES / "params.yaml", d / "params.yaml")
    for pyc in d.rglob("__pycache__"):
        shutil.rmtree(pyc)
    sh(d, "git", "init", "-q", "-b", "main")
    sh(d, DVC, "init", "-q")
    sh(d, DVC, "config", "core.analytics", "false")
    out = sh(d, DVC, "repro")
    assert {"retrieve@hybrid", "generate@bm25", "queries@rewrite"} <= ran(out)
    sh(d, "git", "add", "-A")
    sh(d, "git", "commit", "-q", "-m", "fixture pipeline")
    return d


def metrics(d):
    return json.loads((d / "metrics/retrieval.json").read_text())


def test_second_repro_runs_nothing(repo):
    out = sh(repo, DVC, "repro")
    assert ran(out) == set()
    assert "up to date" in out


def test_changing_one_config_reruns_only_its_instances(repo):
    p = yaml.safe_load((repo / "params.yaml").read_text())
    p["retrieval"]["hybrid"]["rrf_k"] = 30
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    out = sh(repo, DVC, "repro")
    assert ran(out) == {"retrieve@hybrid", "score", "evaluate"}
    sh(repo, "git", "checkout", "--", "params.yaml")
    sh(repo, DVC, "repro")  # restores the committed state (from the run-cache)


def test_exp_run_chunk_size_changes_the_metrics(repo):
    before = metrics(repo)
    sh(repo, DVC, "exp", "run", "-S", "chunk_size=150")
    after = metrics(repo)
    idx = json.loads((repo / "metrics/index/base.json").read_text())
    assert idx["n_chunks"] > 0
    assert after != before
    assert yaml.safe_load((repo / "params.yaml").read_text())["chunk_size"] == 150
    sh(repo, "git", "checkout", "--", ".")
    sh(repo, DVC, "checkout", "-q")


def test_removed_config_disappears_from_metrics(repo):
    p = yaml.safe_load((repo / "params.yaml").read_text())
    del p["retrieval"]["dense"]
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    out = sh(repo, DVC, "repro")
    assert {"score", "evaluate"} <= ran(out)
    assert "dense" not in metrics(repo) and "hybrid" in metrics(repo)
    sh(repo, "git", "checkout", "--", "params.yaml")
    sh(repo, DVC, "repro")


def test_evaluation_settings_never_rerun_generation(repo):
    p = yaml.safe_load((repo / "params.yaml").read_text())
    p["generation"]["refusal_phrases"].append("no idea")
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    out = sh(repo, DVC, "repro")
    # scoring reruns; evaluate only if a score changed (DVC stops at identical outputs)
    assert "score" in ran(out) and ran(out) <= {"score", "evaluate"}
    sh(repo, "git", "checkout", "--", "params.yaml")
    sh(repo, DVC, "repro")


def test_a_label_change_reruns_labels_and_scoring_only(repo):
    """Rankings live apart from labels: changing the span rule re-scores the stored rankings
    and never searches or generates again."""
    p = yaml.safe_load((repo / "params.yaml").read_text())
    p["labels"]["window"] = 25
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    out = sh(repo, DVC, "repro")
    labels_and_scoring = {"labels@base", "labels@heading", "score"}
    assert labels_and_scoring <= ran(out) <= labels_and_scoring | {"evaluate"}, ran(out)
    sh(repo, "git", "checkout", "--", "params.yaml")
    sh(repo, DVC, "repro")


def test_an_llm_code_edit_reruns_no_retrieval_or_scoring_stage(repo):
    """Editing a module of the LLM subpackage reruns the LLM stages (whose outputs are then
    byte-identical, so DVC stops there): no chunk, index, labels, retrieve or scoring stage."""
    prompting = repo / "rag_ablation/llm/prompting.py"
    original = prompting.read_text()
    prompting.write_text(original + "\n# an edit that changes no behaviour\n")
    try:
        out = sh(repo, DVC, "repro")
    finally:
        prompting.write_text(original)
    assert ran(out) and all(s.split("@")[0] in {"queries", "generate"} for s in ran(out)), ran(out)
    sh(repo, DVC, "repro")
