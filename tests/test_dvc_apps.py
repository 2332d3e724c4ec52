"""A team's own app under DVC, in a copy of the built fixture pipeline: `app@NAME` runs the
app, scoring and the reports take it in beside the built-in configs, a second `dvc repro` runs
nothing, and an edit to the app's code reruns that app only (asking it again), with nothing
downstream rerun when its rankings are unchanged."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from conftest import FIXTURES, ROOT, copy_repo, ran_stages as ran, run_in

pytestmark = pytest.mark.slow

DVC = str(Path(sys.executable).parent / "dvc")
try:
    import langchain_core  # noqa: F401

    EXAMPLE = True
except ImportError:
    EXAMPLE = False


@pytest.fixture(scope="module")
def repo(built_pipeline, tmp_path_factory):
    """The built fixture pipeline with the bm25 wrapper of tests/fixtures/own_app as app ``ownbm25``."""
    d = copy_repo(built_pipeline, tmp_path_factory.mktemp("apps") / "repo")
    shutil.copytree(FIXTURES / "own_app", d / "apps/own")
    params = yaml.safe_load((d / "params.yaml").read_text())
    params["apps"] = {"ownbm25": {"method": "python", "target": "bm25_app:retrieve", "path": ["apps/own"],
                                  "deps": "apps/own", "args": {"corpus": "data/corpus", "size": params["chunk_size"],
                                                               "overlap": params["chunk_overlap"]}}}
    if EXAMPLE:  # the worked example of docs/own-app.md, a LangChain retriever (the optional extra `app`)
        shutil.copytree(ROOT / "examples", d / "examples", ignore=shutil.ignore_patterns("__pycache__"))
        params["apps"]["tfidf"] = {"method": "python", "target": "own_app.retriever:retrieve", "path": ["examples"],
                                   "deps": "examples/own_app", "args": {"min_paragraph_chars": 40}}
    (d / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    out = run_in(d, DVC, "repro")
    assert "app@ownbm25" in ran(out) and "retrieve@bm25" not in ran(out), out
    run_in(d, "git", "add", "-A")
    run_in(d, "git", "commit", "-q", "-m", "app ownbm25")
    return d


def rows(d: Path, config: str) -> list[dict]:
    import csv

    with open(d / "metrics/scores/retrieval.csv") as f:
        return [{k: v for k, v in r.items() if k not in ("config", "n_relevant")}
                for r in csv.DictReader(f) if r["config"] == config]


def test_the_app_is_scored_and_reported_beside_the_builtin_configs(repo):
    assert rows(repo, "ownbm25") == rows(repo, "bm25") != []
    summary = json.loads((repo / "metrics/apps.json").read_text())["ownbm25"]
    assert summary["unlabelled"] == 0 and summary["missing"] == 0
    assert "ownbm25" in json.loads((repo / "metrics/retrieval.json").read_text())
    report = (repo / "metrics/report.md").read_text()
    assert "## Your apps" in report and "| ownbm25 |" in report
    latency = json.loads((repo / "metrics/latency/ownbm25.json").read_text())
    assert latency["n_timed"] == latency["n_questions"] > 0 and latency["total"]["p95_ms"] > 0


def test_second_repro_runs_nothing(repo):
    assert ran(run_in(repo, DVC, "repro")) == set()


def test_an_edit_to_the_app_reruns_it_only_and_asks_again(repo):
    app = repo / "apps/own/bm25_app.py"
    app.write_text(app.read_text() + "\n# a comment: the code changed, the rankings do not\n")
    out = run_in(repo, DVC, "repro")
    assert ran(out) == {"app@ownbm25"}, out
    latency = json.loads((repo / "metrics/latency/ownbm25.json").read_text())
    assert latency["calls"] == latency["n_questions"] and latency["cached"] == 0
    run_in(repo, "git", "checkout", "-q", "--", ".")


@pytest.mark.skipif(not EXAMPLE, reason="the example app needs langchain-core: pip install -e '.[app]'")
def test_the_example_app_runs_and_a_sweep_of_its_argument_reruns_only_it(repo):
    summary = json.loads((repo / "metrics/apps.json").read_text())["tfidf"]
    assert summary["missing"] == 0 and summary["unlabelled"] == 0
    assert len(rows(repo, "tfidf")) == len(rows(repo, "bm25"))
    out = run_in(repo, DVC, "exp", "run", "-S", "apps.tfidf.args.min_paragraph_chars=200")
    stages = ran(out)
    assert "app@tfidf" in stages and not any(s.startswith(("app@ownbm25", "retrieve@", "generate@")) for s in stages), out
    # the block-style params survive DVC's rewrite of the file
    assert yaml.safe_load((repo / "params.yaml").read_text())["apps"]["tfidf"]["args"] == {"min_paragraph_chars": 200}
    run_in(repo, "git", "checkout", "-q", "--", ".")
    run_in(repo, DVC, "checkout", "-q", "--force")

