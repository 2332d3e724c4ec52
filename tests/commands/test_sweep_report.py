"""`rag-ablation sweep-report` (rag_ablation.commands.sweep_report, through rag_ablation.commands.main)
on a temporary git repository: three commits (tags s1, s2, s3) of a 40-question scores file with
three configs each, latency files, and a dev/test split file in the workspace. Experiments as
sides are tested on a real `dvc exp run` in tests/commands/test_diff_experiments.py."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from score_rows import config_rows, hits_to_ranks, write_retrieval

from conftest import FIXTURES, GIT_ENV

IDS = [f"q{i}" for i in range(40)]
DOCS = [f"t/d{i // 2}.md" for i in range(40)]
HITS = {  # per tag, per config: hit@5 of q0..q39
    "s1": {"dense": [1, 0] * 20, "bm25": [1, 1, 0, 0] * 10, "hybrid": [1] * 20 + [0] * 20},
    "s2": {"dense": [1, 0] * 20, "bm25": [1, 1, 1, 0] * 10, "hybrid": [1] * 36 + [0] * 4},
    "s3": {"dense": [0, 0, 1, 0] * 10, "bm25": [1, 1, 0, 0] * 10, "hybrid": [1] * 30 + [0] * 10},
}
P95 = {"dense": 400.0, "bm25": 20.0, "hybrid": 450.0}


def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


def scores(tag):
    return [r for config, hits in HITS[tag].items()
            for r in config_rows(config, hits_to_ranks(hits), ids=IDS, docs=DOCS)]


SPLIT = "".join(json.dumps({"group": doc, "id": i, "side": "dev" if n < 20 else "test", "slice": "main"}) + "\n"
                for n, (i, doc) in enumerate(zip(IDS, DOCS)))
"""q0-q19 on dev, q20-q39 on test."""


def commit_side(d, tag, params, *, split_file=SPLIT):
    """Commit ``params`` (and the split file of its data set, unless ``split_file`` is None) as tag ``tag``."""
    (d / "params.yaml").write_text(yaml.safe_dump(params))
    path = d / "data" / "split" / f"{params['dataset']}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    if split_file is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(split_file)
    git(d, "add", "-A")
    git(d, "commit", "-q", "-m", tag)
    git(d, "tag", tag)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """Tags s1, s2, s3: the handbook with a dev/test split, each side's params and split file
    committed with its scores. The workspace is on another data set without a split (and holds
    no split file), so every split the tests see is the sides' own."""
    d = tmp_path_factory.mktemp("sweep")
    git(d, "init", "-q", "-b", "main")
    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    params["split"] = {"test_fraction": 0.5, "seed": 0}
    for n, tag in enumerate(HITS):
        params["chunk_size"] = 100 * (n + 1)
        write_retrieval(d / "metrics" / "scores" / "retrieval.csv", scores(tag))
        for config, ms in P95.items():
            path = d / "metrics" / "latency" / f"{config}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"timing": "warm", "total": {"p50_ms": ms / 2, "p95_ms": ms * (n + 1)}}))
        (d / "metrics" / "latency" / "generate_dense.json").write_text(json.dumps({"answer": {"p50_ms": 1500.0 * (n + 1)}}))
        commit_side(d, tag, params)
    (d / "params.yaml").write_text(yaml.safe_dump({**params, "dataset": "covidqa", "split": "none"}))
    (d / "data" / "split" / "handbook.jsonl").unlink()
    return d


def sweep(repo, *args):
    return subprocess.run([sys.executable, "-m", "rag_ablation.commands.main", "sweep-report", *args], cwd=repo,
                          capture_output=True, text=True)


def written(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_the_winner_is_chosen_on_dev_and_confirmed_on_test(repo, tmp_path):
    out = tmp_path / "out"
    res = sweep(repo, "--revs", "s1", "s2", "s3", "--out", str(out))
    assert res.returncode == 0, res.stderr
    data = json.loads((out / "sweep.json").read_text())
    assert data["chosen_on"] == "dev" and data["questions"] == 20 and data["test_questions"] == 20
    # dense@s2 repeats dense@s1 and bm25@s3 repeats bm25@s1 question for question: one candidate each
    assert data["candidates"] == 7 and data["baseline"] == "dense@s1"
    assert data["ranking"]["dense@s1"]["aliases"] == ["dense@s2"] and data["ranking"]["bm25@s1"]["aliases"] == ["bm25@s3"]
    assert "dense@s2" not in data["ranking"] and "bm25@s3" not in data["ranking"]
    # on dev (q0-q19) hybrid is right everywhere at s1, s2 and s3: an exact tie, and s1 comes first
    winner = data["winner"]
    assert winner["name"] == "hybrid@s1" and winner["value"] == 1.0
    assert set(winner["exact_ties"]) == {"hybrid@s2", "hybrid@s3"}
    assert winner["test"]["value"] == 0.0  # hybrid@s1 misses every test question: q20-q39
    assert winner["baseline_test"]["value"] == 0.5
    assert winner["test_change"]["delta"] == -0.5
    assert winner["winners_curse"]["value"] == 1.0
    assert data["ranking"]["hybrid@s2"]["rank"] == 1 and data["ranking"]["dense@s3"]["rank"] == 7
    assert data["ranking"]["bm25@s1"]["p95_ms"] == 20.0 and data["ranking"]["bm25@s2"]["p95_ms"] == 40.0
    assert data["ranking"]["bm25@s1"]["pareto"] is True and data["ranking"]["dense@s1"]["pareto"] is False
    assert data["sides"] == {"s1": {"chunk_size": 100}, "s2": {"chunk_size": 200}, "s3": {"chunk_size": 300}}
    assert data["dataset"] == "handbook", "the report page shows a sweep only on the data set it was made on"
    assert data["ranking"]["dense@s3"]["answer_s"] == 4.5 and data["ranking"]["bm25@s2"]["answer_s"] is None
    md = (out / "sweep.md").read_text()
    assert res.stdout == md
    assert "**Winner** (chosen on the 20 dev questions): `hybrid@s1`" in md
    assert "**On the 20 held-out test questions**: recall@5 0.000" in md
    assert "rag-ablation sweep-report --revs s1 s2 s3 --out" in md
    assert "| s/answer (P50) |" in md and "median seconds per answer" in md
    plot = json.loads((out / "plots" / "sweep_cost.json").read_text())
    assert [r["candidate"] for r in plot][:2] == ["bm25@s1", "bm25@s2"] and len(plot) == 7
    assert "`dense@s1` also stands for `dense@s2`" in md


def test_no_split_ranks_on_all_questions_and_the_output_is_deterministic(repo, tmp_path):
    first = tmp_path / "a"
    args = ["--revs", "s1", "s2", "--config", "hybrid", "--config", "bm25", "--no-split", "--baseline", "bm25@s1",
            "--out", str(first)]
    assert sweep(repo, *args).returncode == 0
    names = ("sweep.json", "sweep.md", "plots/sweep_cost.json")
    before = [(first / name).read_bytes() for name in names]
    assert sweep(repo, *args).returncode == 0
    assert [(first / name).read_bytes() for name in names] == before
    data = json.loads((first / "sweep.json").read_text())
    assert data["chosen_on"] == "all" and data["questions"] == 40 and "test" not in data["winner"]
    assert data["winner"]["name"] == "hybrid@s2" and data["winner"]["value"] == 36 / 40
    # hybrid@s2 against bm25@s1 (1,1,0,0 repeated): wins on q2,q3,q6,... up to q35 = 18, loses on q36, q37
    assert data["ranking"]["hybrid@s2"]["win_rate"] == pytest.approx(round(18 / 20, 4))
    assert "a" in data["ranking"]["hybrid@s2"]["letter"]
    assert "No held-out questions" in (first / "sweep.md").read_text()


@pytest.mark.bad_input
@pytest.mark.parametrize("args, message", [
    (["--revs", "s1", "--config", "dense"], "needs at least two candidates; found 1"),
    (["--revs", "s1", "nope"], "unknown revision or experiment 'nope'"),
    (["--revs", "s1", "s2", "--config", "rerank"], "config(s) 'rerank' not scored at s1; scored configs there: "
                                                   "bm25, dense, hybrid"),  # params order (safe_dump sorts)
    (["--revs", "s1", "s2", "--baseline", "dense@s9"], "baseline 'dense@s9' is not a candidate"),
    ([], "no sides: name the candidates with --exps NAME ..., --all-exps or --revs REV ..."),
])
def test_bad_input_is_one_message_exit_2_and_nothing_written(repo, tmp_path, args, message):
    out = tmp_path / "out"
    res = sweep(repo, *args, "--out", str(out))
    assert res.returncode == 2
    assert res.stderr.count("error:") == 1 and message in res.stderr, res.stderr
    assert written(out) == []


@pytest.mark.bad_input
def test_sides_on_different_data_sets_are_refused_with_nothing_written(repo, tmp_path):
    params = repo / "params.yaml"
    before = params.read_text()
    try:
        params.write_text(before.replace("dataset: handbook", "dataset: covidqa"))
        res = sweep(repo, "--revs", "s1", "workspace", "--out", str(tmp_path / "out"))
    finally:
        params.write_text(before)
    assert res.returncode == 2 and res.stderr.count("error:") == 1, res.stderr
    assert "the sides ran on different data sets: handbook at s1; covidqa at workspace" in res.stderr
    assert written(tmp_path / "out") == []


def test_an_old_latency_file_gives_no_latency_and_no_front(repo, tmp_path):
    """A latency file without ``"timing": "warm"`` (the first config paid the model) is not
    compared: the candidate has no latency, as on the report page."""
    latency = repo / "metrics" / "latency" / "hybrid.json"
    params = repo / "params.yaml"
    before, before_params = latency.read_text(), params.read_text()
    try:  # the workspace on the sides' data set for this test (the fixture's is another one)
        params.write_text(before_params.replace("dataset: covidqa", "dataset: handbook"))
        latency.write_text(json.dumps({"total": {"p95_ms": 1.0}}))
        res = sweep(repo, "--revs", "s1", "workspace", "--no-split", "--out", str(tmp_path / "out"))
    finally:
        latency.write_text(before)
        params.write_text(before_params)
    assert res.returncode == 0, res.stderr
    ranking = json.loads((tmp_path / "out" / "sweep.json").read_text())["ranking"]
    # hybrid (bm25 at the workspace repeats bm25@s1 question for question: one candidate)
    assert ranking["hybrid@workspace"]["p95_ms"] is None and ranking["hybrid@workspace"]["pareto"] is False
    assert ranking["hybrid@s1"]["p95_ms"] == P95["hybrid"]


@pytest.mark.bad_input
def test_an_unknown_measure_is_refused_by_the_parser_with_nothing_written(repo, tmp_path):
    res = sweep(repo, "--revs", "s1", "s2", "--measure", "hit_at_3", "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and "invalid choice: 'hit_at_3'" in res.stderr
    assert written(tmp_path / "out") == []


def test_each_side_s_data_set_and_split_are_its_own_and_the_report_says_which(repo, tmp_path):
    """The workspace names another data set with no split and holds no split file: the sides'
    own params (handbook, a split) and split files decide, and the report names both."""
    out = tmp_path / "out"
    res = sweep(repo, "--revs", "s2", "s1", "--config", "dense", "--config", "hybrid", "--out", str(out))
    assert res.returncode == 0, res.stderr
    data = json.loads((out / "sweep.json").read_text())
    assert data["dataset"] == "handbook" and data["chosen_on"] == "dev"
    assert (data["questions"], data["test_questions"]) == (20, 20)
    assert data["baseline"] == "dense@s2", "the first side named, not the first in name order"
    md = (out / "sweep.md").read_text()
    assert "Data set `handbook` (each side's params.yaml); dev/test: each side's own `data/split/handbook.jsonl`." in md
    assert "Baseline `dense@s2`: `stats.baseline` on the first side named (s2)" in md
    res = sweep(repo, "--revs", "s1", "s2", "--baseline", "bm25@s2", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "Baseline `bm25@s2`: given with `--baseline`." in (out / "sweep.md").read_text()


@pytest.fixture()
def copy(repo, tmp_path):
    """A copy of the module's repository that a test may add commits to."""
    d = tmp_path / "copy"
    shutil.copytree(repo, d)
    return d


def handbook_params(d, tag="s3", **changes):
    return {**yaml.safe_load(subprocess.run(["git", "show", f"{tag}:params.yaml"], cwd=d, capture_output=True,
                                            text=True, check=True).stdout), **changes}


@pytest.mark.bad_input
def test_a_side_with_a_split_but_no_split_file_says_how_to_make_it(copy, tmp_path):
    commit_side(copy, "s4", handbook_params(copy), split_file=None)
    res = sweep(copy, "--revs", "s1", "s4", "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and res.stderr.count("error:") == 1
    assert ("params.yaml at s4 has a split but data/split/handbook.jsonl does not exist there: run `dvc repro split`"
            in res.stderr)
    assert written(tmp_path / "out") == []


@pytest.mark.bad_input
def test_sides_that_disagree_on_the_split_are_refused_unless_no_split(copy, tmp_path):
    off = "".join(line.replace('"dev"', '"all"').replace('"test"', '"all"') + "\n" for line in SPLIT.splitlines())
    commit_side(copy, "s4", handbook_params(copy, split="none"), split_file=off)
    res = sweep(copy, "--revs", "s1", "s4", "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and res.stderr.count("error:") == 1
    assert "the sides disagree on the split: a dev/test split at s1, `split: none` at s4;" in res.stderr
    assert written(tmp_path / "out") == []
    res = sweep(copy, "--revs", "s1", "s4", "--no-split", "--out", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "out" / "sweep.json").read_text())["chosen_on"] == "all"


@pytest.mark.bad_input
def test_split_files_that_give_a_question_two_sides_are_refused(copy, tmp_path):
    moved = SPLIT.replace('"id": "q0", "side": "dev"', '"id": "q0", "side": "test"')
    assert moved != SPLIT
    commit_side(copy, "s4", handbook_params(copy), split_file=moved)
    res = sweep(copy, "--revs", "s1", "s4", "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and res.stderr.count("error:") == 1
    assert "the split files of the sides disagree on 1 question(s): q0 (dev at s1, test at s4);" in res.stderr
    assert written(tmp_path / "out") == []


@pytest.mark.bad_input
def test_sides_of_different_data_sets_are_one_line_naming_them(copy, tmp_path):
    workspace = (copy / "params.yaml").read_text()
    commit_side(copy, "s4", handbook_params(copy, dataset="squad"))
    (copy / "params.yaml").write_text(workspace)  # back on covidqa: the workspace is a side here
    res = sweep(copy, "--revs", "s1", "s2", "s4", "workspace", "--out", str(tmp_path / "out"))
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and res.stderr.count("error:") == 1, res.stderr
    assert ("the sides ran on different data sets: handbook at s1, s2; squad at s4; covidqa at workspace; a sweep "
            "ranks the questions of one data set" in res.stderr)
    assert written(tmp_path / "out") == []


def test_a_judge_score_ranks_the_answered_configs(tmp_path):
    """`--measure combined_score` ranks each side's answered configs on the combined judge's score
    (metrics/scores/verdicts.csv joined to answers.csv): a continuous measure, sign-flip tests."""
    from score_rows import answer_row, write_answers, write_verdicts

    d = tmp_path / "repo"
    d.mkdir()
    git(d, "init", "-q", "-b", "main")
    params = {**yaml.safe_load((FIXTURES / "params.yaml").read_text()), "split": "none"}
    ids = [f"q{i}" for i in range(20)]
    for tag, scores in (("a", {"dense": 0.4, "hybrid_heading": 0.5}), ("b", {"dense": 0.4, "hybrid_heading": 0.8})):
        write_answers(d / "metrics" / "scores" / "answers.csv",
                      [answer_row(config, i, 0) for config in scores for i in ids])
        write_verdicts(d / "metrics" / "scores" / "verdicts.csv",
                       [{"config": config, "id": i, "llm_score": "", "combined_score": str(score)}
                        for config, score in scores.items() for i in ids])
        commit_side(d, tag, params, split_file=None)
    out = tmp_path / "out"
    res = sweep(d, "--revs", "a", "b", "--measure", "combined_score", "--out", str(out))
    assert res.returncode == 0, res.stderr
    data = json.loads((out / "sweep.json").read_text())
    assert data["measure"] == "combined_score" and data["baseline"] == "dense@a"
    # dense@b repeats dense@a answer for answer: three candidates
    assert data["candidates"] == 3 and data["ranking"]["dense@a"]["aliases"] == ["dense@b"]
    assert data["winner"]["name"] == "hybrid_heading@b" and data["winner"]["value"] == 0.8
    assert data["winner"]["exact_ties"] == [] and data["ranking"]["hybrid_heading@a"]["rank"] == 2
    assert "combined judge score" in (out / "sweep.md").read_text()
    res = sweep(d, "--revs", "a", "b", "--measure", "llm_score", "--out", str(tmp_path / "none"))
    assert res.returncode == 2 and "measure 'llm_score' is empty for config(s) dense, hybrid_heading" in res.stderr
    assert written(tmp_path / "none") == []
