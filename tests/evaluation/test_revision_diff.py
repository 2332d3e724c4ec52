"""`rag-ablation diff REV` (rag_ablation.evaluation.revision_diff, rag_ablation.main) on a
temporary git repository with two commits of a tiny scores file."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from score_rows import config_rows, hits_to_ranks, write_retrieval

from conftest import FIXTURES
from rag_ablation.config import StatsConfig
from rag_ablation.evaluation import stats
from rag_ablation.evaluation.revision_diff import diff_rows, format_markdown, format_text

IDS = [f"q{i}" for i in range(10)]
SLICES = ["identifier"] * 5 + ["paraphrase"] * 5
OLD = {"dense": [1, 1, 1, 0, 0, 1, 1, 0, 1, 0], "bm25": [1, 1, 1, 1, 0, 0, 1, 1, 1, 0]}
NEW = {"dense": OLD["dense"], "bm25": [1, 0, 0, 1, 0, 1, 1, 1, 1, 0]}  # broken q1 q2 (identifier), fixed q5
SETTINGS = StatsConfig(resamples=500)


def old_rows():
    rows = [r for name, hits in OLD.items()
            for r in config_rows(name, hits_to_ranks(hits) + [3], slices=SLICES + ["paraphrase"], ids=IDS + ["gone"])]
    return rows + config_rows("old_only", [1, 1], ids=["q0", "q1"])


def new_rows():
    rows = [r for name, hits in NEW.items()
            for r in config_rows(name, hits_to_ranks(hits) + [None], slices=SLICES + ["identifier"],
                                 ids=IDS + ["new1"])]
    return rows + config_rows("new_only", [1], ids=["q0"])


def git(repo, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """Commit ``empty`` has no scores; tag ``base`` has the old scores; HEAD the new ones."""
    d = tmp_path_factory.mktemp("repo")
    git(d, "init", "-q", "-b", "main")
    (d / "README.md").write_text("scratch\n")
    git(d, "add", "README.md")
    git(d, "commit", "-q", "-m", "no scores yet")
    git(d, "tag", "empty")
    scores = d / "metrics" / "scores" / "retrieval.csv"
    write_retrieval(scores, old_rows())
    git(d, "add", "metrics")
    git(d, "commit", "-q", "-m", "old scores")
    git(d, "tag", "base")
    write_retrieval(scores, new_rows())
    git(d, "commit", "-q", "-am", "new scores")
    shutil.copy(FIXTURES / "params.yaml", d / "params.yaml")  # config order and stats defaults; untracked
    return d


def run_diff(repo, *args):
    return subprocess.run([sys.executable, "-m", "rag_ablation.main", "diff", *args], cwd=repo, capture_output=True,
                          text=True)


def test_diff_names_the_broken_questions_per_slice(repo):
    res = run_diff(repo, "base")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "Workspace against base (" in out
    assert "bm25: fixed 1, broken 2" in out
    assert "  - identifier (too small to decide): broken q1, q2" in out
    assert "  - paraphrase (too small to decide): fixed q5" in out
    assert "Questions only at base (1): gone; not paired." in out
    assert "Questions only in the workspace (1): new1; not paired." in out
    assert "Configs only at base: old_only." in out and "Configs only in the workspace: new_only." in out
    row = next(line for line in out.splitlines() if line.startswith("bm25 "))
    assert row.split()[1:5] == ["10", "1", "2", "-0.100"]  # 10 paired questions, (1 - 2) / 10
    dense = next(line for line in out.splitlines() if line.startswith("dense "))
    assert dense.split()[1:5] == ["10", "0", "0", "+0.000"] and dense.endswith("no change")


def test_markdown_for_a_pull_request(repo):
    res = run_diff(repo, "base", "--md", "--config", "bm25", "--measure", "hit_at_1")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.startswith("### Retrieval against `base`")
    assert "| config | n | fixed | broken | Δ recall@1 |" in out
    assert "| `bm25` | 10 | 0 | 0 |" in out  # every hit is at rank 3: nothing changes at rank 1
    assert "`dense`" not in out and "old_only" not in out


@pytest.mark.bad_input
def test_unknown_revision_is_one_line_and_exit_2(repo):
    res = run_diff(repo, "no-such-branch")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("error: unknown revision 'no-such-branch'") and res.stderr.count("\n") == 1


@pytest.mark.bad_input
def test_revision_without_scores_is_one_line_and_exit_2(repo):
    res = run_diff(repo, "empty")
    assert res.returncode == 2
    assert res.stderr.startswith("error: no metrics/scores/retrieval.csv at revision 'empty'")
    assert res.stderr.count("\n") == 1


@pytest.mark.bad_input
def test_unknown_config_is_one_line_and_exit_2(repo):
    res = run_diff(repo, "base", "--config", "nope")
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "unknown config(s) 'nope'; scored configs are: dense, bm25, new_only, old_only" in res.stderr


def test_holm_runs_over_the_configs_compared():
    d = diff_rows(old_rows(), new_rows(), rev="base", commit="0" * 40, measure="hit_at_5", settings=SETTINGS,
                  params_order=["dense", "bm25"])
    assert [c.new for c in d.comparisons] == ["dense", "bm25"]
    dense, bm25 = d.comparisons
    assert bm25.binary.p_sign == pytest.approx(min(1.0, 2 * (1 + 3) / 2**3))  # 1 fixed, 2 broken: 2 P(X <= 1 | n=3)
    assert [dense.binary.p_holm, bm25.binary.p_holm] == stats.holm([dense.binary.p_sign, bm25.binary.p_sign])
    assert bm25.binary.family == 2 and bm25.broken_ids == ("q1", "q2") and bm25.fixed_ids == ("q5",)
    assert (d.only_rev, d.only_workspace, d.unavailable) == (("old_only",), ("new_only",), ())


def test_configs_in_params_without_rows_are_named():
    d = diff_rows(old_rows(), new_rows(), rev="base", commit="0" * 40, measure="hit_at_5", settings=SETTINGS,
                  params_order=["dense", "bm25", "hybrid_rerank"], selected=["bm25", "hybrid_rerank"])
    assert [c.new for c in d.comparisons] == ["bm25"] and d.unavailable == ("hybrid_rerank",)
    assert "No scored rows on either side: hybrid_rerank." in format_text(d)
    assert "No scored rows on either side: hybrid_rerank." in format_markdown(d)
