"""`rag-ablation diff A B` and `rag-ablation sweep-report` where the sides are DVC experiments, made by a real `dvc exp run` in a
tiny git + DVC repository (the fixture params.yaml) whose one stage copies the scores file that
`chunk_size` names: the sweep `dvc exp run -S chunk_size=...` in miniature."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from diff_rows import new_rows, old_rows
from score_rows import write_retrieval

from conftest import FIXTURES, run_in

pytestmark = pytest.mark.slow

OLD, NEW = yaml.safe_load((FIXTURES / "params.yaml").read_text())["chunk_size"], 123

DVC_YAML = """stages:
  scores:
    cmd: cp scores_${chunk_size}.csv metrics/scores/retrieval.csv
    deps:
      - scores_${chunk_size}.csv
    params:
      - chunk_size
    outs:
      - metrics/scores/retrieval.csv:
          cache: false
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """main holds the old scores (chunk_size OLD); experiment exp-new runs chunk_size NEW (the
    new scores), exp-old chunk_size OLD again; exp-early is an experiment of an earlier commit whose
    pipeline wrote no scores file."""
    d = tmp_path_factory.mktemp("exps")
    run_in(d, "git", "init", "-q", "-b", "main")
    run_in(d, "dvc", "init", "-q")
    run_in(d, "dvc", "config", "core.analytics", "false")
    (d / "params.yaml").write_text((FIXTURES / "params.yaml").read_text())
    (d / "dvc.yaml").write_text("stages:\n  other:\n    cmd: echo 1 > other.txt\n    params:\n      - chunk_size\n"
                                "    outs:\n      - other.txt:\n          cache: false\n")
    run_in(d, "git", "add", "-A")
    run_in(d, "git", "commit", "-q", "-m", "a pipeline without scores")
    run_in(d, "dvc", "exp", "run", "-q", "-n", "exp-early", "-S", f"chunk_size={NEW}")
    run_in(d, "git", "checkout", "--", "params.yaml")  # `dvc exp run` leaves its params in the workspace
    write_retrieval(d / f"scores_{OLD}.csv", old_rows())
    write_retrieval(d / f"scores_{NEW}.csv", new_rows())
    (d / "metrics/scores").mkdir(parents=True)
    (d / "dvc.yaml").write_text(DVC_YAML)
    (d / "other.txt").unlink(missing_ok=True)
    run_in(d, "dvc", "repro", "-q")
    run_in(d, "git", "add", "-A")
    run_in(d, "git", "commit", "-q", "-m", "scores")
    run_in(d, "dvc", "exp", "run", "-q", "-n", "exp-new", "-S", f"chunk_size={NEW}")
    run_in(d, "dvc", "exp", "run", "-q", "-n", "exp-old", "-S", f"chunk_size={OLD}")
    return d


def run_diff(repo, *args):
    return subprocess.run([sys.executable, "-m", "rag_ablation.commands.main", "diff", *args], cwd=repo,
                          capture_output=True, text=True)


def test_two_experiments_are_paired_question_by_question(repo):
    res = run_diff(repo, "exp-old", "exp-new")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.startswith("experiment exp-new (") and " against experiment exp-old (" in out
    assert "bm25: fixed 1, broken 2" in out  # old -> new, as tests/commands/test_diff.py finds for two commits
    assert "Questions only at experiment exp-new (1): new1; not paired." in out
    assert "Configs only at experiment exp-old: old_only." in out
    assert "Configs only at experiment exp-new: new_only." in out


def test_the_reverse_direction_swaps_fixed_and_broken(repo):
    out = run_diff(repo, "exp-new", "exp-old").stdout
    assert "bm25: fixed 2, broken 1" in out


def test_a_revision_against_an_experiment_and_the_workspace_default(repo):
    res = run_diff(repo, "main", "exp-new")
    assert res.returncode == 0, res.stderr
    assert " against main (" in res.stdout and "bm25: fixed 1, broken 2" in res.stdout
    same = run_diff(repo, "exp-old")  # B: the workspace, which holds main's (old) scores
    assert same.returncode == 0, same.stderr
    assert same.stdout.startswith("Workspace against experiment exp-old (") and "fixed 1" not in same.stdout


def test_markdown_names_both_sides(repo):
    out = run_diff(repo, "exp-old", "exp-new", "--md").stdout
    assert out.startswith("### Retrieval against `experiment exp-old`, experiment exp-new against it")


@pytest.mark.bad_input
def test_an_unknown_name_lists_the_experiments_dvc_knows(repo):
    res = run_diff(repo, "exp-nope")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("error: unknown revision or experiment 'exp-nope': ")
    assert "the experiments DVC knows are: exp-early, exp-new, exp-old" in res.stderr
    assert res.stderr.count("\n") == 1


@pytest.mark.bad_input
def test_an_experiment_without_scores_is_one_line(repo):
    res = run_diff(repo, "exp-early", "exp-new")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("error: no metrics/scores/retrieval.csv at experiment 'exp-early' (commit ")
    assert "the experiment did not commit per-question scores" in res.stderr and res.stderr.count("\n") == 1


@pytest.mark.bad_input
def test_the_workspace_as_a_is_refused(repo):
    res = run_diff(repo, "workspace", "exp-new")
    assert res.returncode == 2 and "A is the workspace" in res.stderr


# ------------------------------------------------------------------- rag-ablation sweep-report


def run_sweep(repo, *args):
    return subprocess.run([sys.executable, "-m", "rag_ablation.commands.main", "sweep-report", *args], cwd=repo,
                          capture_output=True, text=True)


def test_sweep_report_over_every_experiment_of_the_current_commit(repo, tmp_path):
    """--all-exps finds exp-new and exp-old (not exp-early, of an earlier commit); each config
    scored there is a candidate; the fixture has no split, so it ranks on all questions."""
    out = tmp_path / "out"
    res = run_sweep(repo, "--all-exps", "--config", "bm25", "--config", "dense", "--out", str(out))
    assert res.returncode == 0, res.stderr
    data = json.loads((out / "sweep.json").read_text())
    # the two experiments' dense rows are identical: one candidate, the other its alias
    ranked = sorted(data["ranking"]) + [a for r in data["ranking"].values() for a in r["aliases"]]
    assert sorted(ranked) == ["bm25@exp-new", "bm25@exp-old", "dense@exp-new", "dense@exp-old"]
    assert data["baseline"] in ("dense@exp-new", "dense@exp-old") and data["chosen_on"] == "all"
    assert data["sides"] == {"exp-new": {"chunk_size": NEW}, "exp-old": {"chunk_size": OLD}}
    assert "new1" in data["unpaired_questions"] and "gone" in data["unpaired_questions"]


@pytest.mark.bad_input
def test_sweep_report_names_an_experiment_without_scores_and_an_unknown_one(repo, tmp_path):
    res = run_sweep(repo, "--exps", "exp-new", "exp-early", "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and res.stderr.startswith("error: no metrics/scores/retrieval.csv at experiment "
                                                         "'exp-early' (commit ")
    res = run_sweep(repo, "--exps", "exp-new", "exp-nope", "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and "the experiments DVC knows are: exp-early, exp-new, exp-old" in res.stderr
    assert not (tmp_path / "out").exists()
