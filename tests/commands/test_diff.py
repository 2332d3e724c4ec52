"""`rag-ablation diff REV` (rag_ablation.commands.diff, through rag_ablation.commands.main) on a
temporary git repository with two commits of a tiny scores file."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from diff_rows import new_rows, old_rows
from score_rows import write_retrieval, write_verdicts

from conftest import FIXTURES


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
    return subprocess.run([sys.executable, "-m", "rag_ablation.commands.main", "diff", *args], cwd=repo, capture_output=True,
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
    assert res.stderr.startswith("error: unknown revision or experiment 'no-such-branch': git knows no branch, tag or "
                                 "commit by that name and DVC no experiment; DVC knows no experiment in this repository")
    assert res.stderr.count("\n") == 1


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


def test_answer_measures_are_compared_from_the_answer_scores(tmp_path):
    """`--measure token_f1` (continuous: sign-flip test, better / worse by more than the margin)
    and `--measure contains_reference` (0/1: fixed and broken, exact sign test) read
    metrics/scores/answers.csv at each side; the table has no MRR@10 columns, the title says
    "Answers"."""
    from score_rows import answer_row, write_answers

    d = tmp_path / "repo"
    d.mkdir()
    git(d, "init", "-q", "-b", "main")
    scores = d / "metrics" / "scores" / "answers.csv"

    def rows(f1: float, contains: int) -> list[dict]:
        return [{**answer_row("dense", f"q{i}", contains if i < 6 else 0), "token_f1": f1} for i in range(12)]

    write_answers(scores, rows(0.2, 0))
    git(d, "add", "metrics")
    git(d, "commit", "-q", "-m", "old answers")
    git(d, "tag", "base")
    write_answers(scores, rows(0.6, 1))
    shutil.copy(FIXTURES / "params.yaml", d / "params.yaml")
    res = run_diff(d, "base", "--measure", "token_f1")
    assert res.returncode == 0, res.stderr
    row = next(line for line in res.stdout.splitlines() if line.startswith("dense "))
    # 12 paired questions, all 12 better by 0.4 (> the 0.01 margin), none worse, +0.400
    assert row.split()[1:5] == ["12", "12", "0", "+0.400"] and row.endswith("real gain"), row
    assert "MRR@10" not in res.stdout and "token F1 (token_f1);" in res.stdout
    res = run_diff(d, "base", "--measure", "contains_reference", "--md")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("### Answers against `base`")
    assert "| config | n | fixed | broken | Δ contains the reference |" in res.stdout
    # 6 fixed, 0 broken: exact sign test p = 2 x 0.5^6 = 0.03125
    assert "| `dense` | 12 | 6 | 0 | +0.500 | +0.250 to +0.750 | 0.031 | 0.031 |" in res.stdout, res.stdout


@pytest.fixture()
def judged(tmp_path):
    """Tag ``base``: 12 answers of dense with the LLM judge's P(correct) 0.3 and the combined
    judge's 0.2; the workspace: P(correct) 0.9 on q0-q5 (0.3 on the rest), combined 0.2 + 0.05."""
    from score_rows import answer_row, write_answers

    d = tmp_path / "repo"
    d.mkdir()
    git(d, "init", "-q", "-b", "main")
    answers = [answer_row("dense", f"q{i}", 0) for i in range(12)]
    write_answers(d / "metrics" / "scores" / "answers.csv", answers)
    verdicts = d / "metrics" / "scores" / "verdicts.csv"
    write_verdicts(verdicts, [{"config": "dense", "id": f"q{i}", "llm_score": "0.3", "combined_score": "0.2"}
                              for i in range(12)])
    git(d, "add", "metrics")
    git(d, "commit", "-q", "-m", "old verdicts")
    git(d, "tag", "base")
    write_verdicts(verdicts, [{"config": "dense", "id": f"q{i}", "llm_score": "0.9" if i < 6 else "0.3",
                               "combined_score": "0.25"} for i in range(12)])
    shutil.copy(FIXTURES / "params.yaml", d / "params.yaml")
    return d


def test_a_judge_score_is_a_measure_read_from_the_verdicts(judged):
    """`--measure llm_score` / `combined_score` pair the answers by question with that column of
    metrics/scores/verdicts.csv joined in: continuous, sign-flip test, better / worse by more
    than stats.margin (0.01)."""
    res = run_diff(judged, "base", "--measure", "llm_score")
    assert res.returncode == 0, res.stderr
    row = next(line for line in res.stdout.splitlines() if line.startswith("dense "))
    # 6 of 12 better by 0.6, 6 unchanged: mean change 6 x 0.6 / 12 = +0.300
    assert row.split()[1:5] == ["12", "6", "0", "+0.300"], row
    assert "LLM judge P(correct) (llm_score);" in res.stdout
    res = run_diff(judged, "base", "--measure", "combined_score", "--md")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("### Answers against `base`")
    # every answer up by 0.05 (> the margin): 12 better, none worse
    assert "| `dense` | 12 | 12 | 0 | +0.050 |" in res.stdout, res.stdout


@pytest.mark.bad_input
def test_an_empty_or_bad_judge_score_is_one_line_and_exit_2(judged):
    verdicts = judged / "metrics" / "scores" / "verdicts.csv"
    write_verdicts(verdicts, [{"config": "dense", "id": f"q{i}", "llm_score": "", "combined_score": "1.5" if i == 3
                               else "0.2"} for i in range(12)])
    res = run_diff(judged, "base", "--measure", "llm_score")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert ("measure 'llm_score' is empty for config(s) dense: the judge gave no score there: a backend that returns "
            "no probabilities") in res.stderr
    assert "choose another measure (--measure or stats.measure): contains_reference, token_f1, combined_score" in res.stderr
    res = run_diff(judged, "base", "--measure", "combined_score")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert ("metrics/scores/verdicts.csv at workspace line 5, column combined_score: score '1.5' is not a number "
            "from 0 to 1") in res.stderr
