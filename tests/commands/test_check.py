"""`rag-ablation check` (rag_ablation.commands.check, through rag_ablation.commands.main) on the
committed per-question scores: exit status and files, --accept, --against a git revision, and
sides that cannot be compared."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml
from gate_rows import GATED, committed, of, project, reverted_to_dense  # noqa: F401  (committed is a fixture)

from rag_ablation.core.errors import UserError
from rag_ablation.core.io import rounded_floats
from rag_ablation.evaluation.gate.baseline import accepted_rows
from rag_ablation.evaluation.gate.rules import EXIT_FAIL
from rag_ablation.evaluation.scoring.scores import RETRIEVAL_FIELDS, read_scores, write_scores


def check(cwd, *args):
    return subprocess.run([sys.executable, "-m", "rag_ablation.commands.main", "check", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True)


def test_check_exit_status_and_files(tmp_path, committed):
    d = project(tmp_path, reverted_to_dense(committed), of(committed, GATED))
    res = check(d, "--md", "gate.md", "--junit", "gate.xml", "--json", "gate.json")
    assert res.returncode == 1, res.stderr
    assert "hybrid_heading identifier: recall@5 = " in res.stdout and res.stdout.rstrip().endswith(
        "hybrid_heading/all, hybrid_heading/identifier, hybrid_heading/main")
    assert (d / "gate.md").read_text().startswith("### Retrieval gate: FAIL")
    assert len(ET.parse(d / "gate.xml").getroot().findall("testcase")) == 4
    assert json.loads((d / "gate.json").read_text())["pass"] == 0


@pytest.fixture
def check_here(monkeypatch, capsys):
    """`rag-ablation check ARGS` in-process (through the command registry) in a folder: (exit
    status, stdout); a UserError is status 2 with its message, as `rag_ablation.core.runner` makes it."""
    from rag_ablation.commands.main import dispatch

    def call(cwd, *args):
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            dispatch(["check", *map(str, args)])
        except SystemExit as e:
            return e.code, capsys.readouterr().out
        except UserError as e:
            return 2, str(e)
        return 0, capsys.readouterr().out
    return call


def test_accept_round_trip(tmp_path, committed, check_here):
    d = project(tmp_path, committed)
    code, out = check_here(d, "--accept")
    assert code == 0 and "accepted: 172 rows of hybrid_heading written to metrics/gate_baseline.csv" in out
    # the baseline is written as every scores CSV is, its floats rounded (core.io.rounded_floats)
    assert read_scores(d / "metrics/gate_baseline.csv") == rounded_floats(of(committed, GATED))
    assert of(committed, GATED) == accepted_rows(committed, [GATED])
    code, out = check_here(d)
    assert code == 0 and out.rstrip().endswith("PASS: all 4 gated slice(s) passed")
    write_scores(d / "metrics/scores/retrieval.csv", reverted_to_dense(committed), RETRIEVAL_FIELDS)
    assert check_here(d)[0] == EXIT_FAIL
    code, out = check_here(d, "--accept")  # a review accepted the change: shown, then written
    assert code == 0 and "FAIL: 3 of 4" in out and "accepted: 172 rows" in out
    code, out = check_here(d)  # nothing is newly failing any more, but accepting never lowers the floors
    assert code == EXIT_FAIL and "newly failing, at most" not in out
    assert "FAIL: recall@5 0.625 is below the floor 0.800 (" in out


@pytest.mark.bad_input
def test_accept_refuses_a_revision_and_missing_configs(tmp_path, committed, check_here):
    d = project(tmp_path, of(committed, "dense"))
    code, message = check_here(d, "--accept", "--against", "main")
    assert code == 2 and message.startswith("--accept writes the baseline file, not a git revision")
    code, message = check_here(d, "--accept")
    assert code == 2 and message.startswith("cannot accept: no workspace rows for 'hybrid_heading'")
    assert not (d / "metrics/gate_baseline.csv").exists()


def git(repo, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def test_check_against_a_revision(tmp_path, committed, check_here):
    d = project(tmp_path, committed, floor=None)
    git(d, "init", "-q", "-b", "main")
    git(d, "add", "metrics")
    git(d, "commit", "-q", "-m", "scores")
    write_scores(d / "metrics/scores/retrieval.csv", reverted_to_dense(committed), RETRIEVAL_FIELDS)
    code, out = check_here(d, "--against", "main")
    assert code == EXIT_FAIL and "against main (" in out and "hybrid_heading identifier: recall@5 = " in out
    assert check_here(d, "--against", "main", "--config", "dense")[0] == 0, "dense itself did not change"
    code, message = check_here(d, "--against", "no-such-branch")
    assert code == 2 and message.startswith("unknown revision 'no-such-branch'")


@pytest.mark.bad_input
def test_check_incomparable_is_one_line_and_exit_2(tmp_path, committed):
    d = project(tmp_path, [r for r in committed if r["id"] != "main-guides-10"], of(committed, GATED))
    res = check(d)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("error: cannot compare 'hybrid_heading' with metrics/gate_baseline.csv: "
                                 "1 question(s) only in metrics/gate_baseline.csv: main-guides-10")
    assert res.stderr.count("\n") == 1
    (d / "metrics/gate_baseline.csv").unlink()
    res = check(d)
    assert res.returncode == 2 and "no accepted baseline metrics/gate_baseline.csv" in res.stderr


@pytest.mark.bad_input
def test_a_gated_config_left_out_of_run_configs_is_named_with_the_reason(tmp_path, committed):
    """The scores of a run that left the gated config out hold no rows of it: check says why
    (run_configs), not only that there are none; a name params.yaml does not know is left to the
    "no rows" message, which lists the scored configs."""
    d = project(tmp_path, [r for r in committed if r["config"] != GATED], of(committed, GATED))
    params = yaml.safe_load((d / "params.yaml").read_text())
    (d / "params.yaml").write_text(yaml.safe_dump({**params, "run_configs": ["dense", "bm25"]}, sort_keys=False))
    res = check(d)
    assert res.returncode == 2 and res.stdout == "" and res.stderr.count("\n") == 1, res.stderr
    assert (f"config {GATED!r} is not in run_configs (dense, bm25), so it does not run; add it to run_configs or run "
            "every config: dvc exp run -S run_configs=all") in res.stderr
    res = check(d, "--config", "no_such")
    assert res.returncode == 2 and "gated config 'no_such' has no rows" in res.stderr


def test_help_lists_the_command():
    res = subprocess.run([sys.executable, "-m", "rag_ablation.commands.main", "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "\n  check " in res.stdout


def answered_repo(tmp_path):
    """Tag ``base``: 24 answers of bm25, token F1 0.5 and the combined judge's score 0.6 each; the
    workspace: token F1 0.2 on q0-q2 (dropped by 0.3 > stats.margin), the combined score unchanged."""
    import shutil

    from score_rows import answer_row, write_answers, write_verdicts

    from conftest import FIXTURES

    d = tmp_path / "repo"
    (d / "metrics/scores").mkdir(parents=True)
    shutil.copy(FIXTURES / "params.yaml", d / "params.yaml")
    git(d, "init", "-q", "-b", "main")
    rows = [answer_row("bm25", f"q{i:02d}", 1) for i in range(24)]
    write_answers(d / "metrics/scores/answers.csv", rows)
    write_verdicts(d / "metrics/scores/verdicts.csv", [{"config": "bm25", "id": r["id"], "llm_score": "",
                                                        "combined_score": "0.6"} for r in rows])
    git(d, "add", "metrics")
    git(d, "commit", "-q", "-m", "answers")
    git(d, "tag", "base")
    write_answers(d / "metrics/scores/answers.csv", [{**r, "token_f1": 0.2} if i < 3 else r for i, r in enumerate(rows)])
    return d


def test_answers_are_gated_against_a_revision_on_token_f1_or_a_judge_score(tmp_path, check_here):
    d = answered_repo(tmp_path)
    code, out = check_here(d, "--against", "base", "--measure", "token_f1")
    assert code == EXIT_FAIL, out
    # gate.floor (0.5) is written for recall@5: the answer measure is gated without it
    assert out.startswith("note: gate.floor is written for gate.measure (a retrieval measure); token F1 is gated "
                          "without floors")
    assert "Answer gate: token F1 of bm25 against base (" in out and "no floor" in out
    # the mean (21 x 0.5 + 3 x 0.2) / 24; three questions dropped by more than the margin, one allowed
    assert f"bm25 all: token F1 = {(21 * 0.5 + 3 * 0.2) / 24:.3f}, newly failing ['q00', 'q01', 'q02'], newly passing []" in out
    assert "FAIL: 2 of 2 gated slice(s) failed: bm25/all, bm25/main" in out
    code, out = check_here(d, "--against", "base", "--measure", "combined_score", "--md", "gate.md")
    assert code == 0 and "bm25 all: combined judge score = 0.600, newly failing []" in out
    assert (d / "gate.md").read_text().startswith("### Answer gate: PASS")


@pytest.mark.bad_input
def test_an_answer_gate_without_a_revision_or_of_an_unanswered_config_is_one_line(tmp_path, check_here):
    d = answered_repo(tmp_path)
    code, message = check_here(d, "--measure", "token_f1")
    assert code == 2 and message == (
        "token_f1 is an answer measure: it is gated against the answers committed at a revision, not the retrieval "
        "baseline file (metrics/gate_baseline.csv); add --against REV, e.g. "
        "`rag-ablation check --against main --measure token_f1`")
    code, message = check_here(d, "--against", "base", "--measure", "token_f1", "--accept")
    assert code == 2 and message.startswith("--accept writes the retrieval baseline file; token_f1 is an answer measure")
    code, message = check_here(d, "--against", "base", "--measure", "token_f1", "--config", "dense")
    assert code == 2 and message == ("gated config(s) 'dense' have no answers in the workspace (answered configs: bm25; "
                                     "generation.configs): gate an answered config with --config NAME")
    code, message = check_here(d, "--against", "base", "--measure", "llm_score")
    assert code == 2 and "measure 'llm_score' is empty for config(s) bm25" in message


def test_another_retrieval_measure_is_gated_without_the_floors(tmp_path, committed, check_here):
    d = project(tmp_path, committed, of(committed, GATED))
    code, out = check_here(d)
    assert code == 0 and "recall@5 of hybrid_heading" in out and "no floor" not in out
    code, out = check_here(d, "--measure", "hit_at_5")  # the column gate.measure stands for: floors kept
    assert code == 0 and "note:" not in out and "no floor" not in out
    code, out = check_here(d, "--measure", "hit_at_10")
    assert code == 0 and out.startswith("note: gate.floor is written for gate.measure (recall@5); recall@10 is gated "
                                        "without floors") and "recall@10 of hybrid_heading" in out and "no floor" in out
