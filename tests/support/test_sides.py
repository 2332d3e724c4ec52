"""What a comparison side holds (rag_ablation.support.sides): its files, its data set and split as
its own params.yaml sets them, and the order ``--all-exps`` takes experiments in. Resolving names
through DVC on real experiments is tested in tests/commands/test_diff_experiments.py."""
from __future__ import annotations

import json
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from conftest import GIT_ENV
from rag_ablation.core.errors import UserError
from rag_ablation.support import sides as sides_module
from rag_ablation.support.sides import Side, commit_times, head_experiments, questions_of, read_side_file, split_at


def commit(d: Path, message: str, when: int) -> str:
    env = {**os.environ, **GIT_ENV, "GIT_COMMITTER_DATE": f"{when} +0000", "GIT_AUTHOR_DATE": f"{when} +0000"}
    subprocess.run(["git", "add", "-A"], cwd=d, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=d, check=True, env=env)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=d, check=True, env=env, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture()
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True)
    return tmp_path


def test_commit_times_are_the_committer_times(repo):
    first = commit(repo, "a", 1_700_000_000)
    second = commit(repo, "b", 1_700_000_100)
    assert commit_times([second, first, second], repo) == {first: 1_700_000_000, second: 1_700_000_100}
    assert commit_times([], repo) == {}


def test_all_exps_are_taken_in_the_order_dvc_ran_them_not_by_name(repo, monkeypatch):
    """DVC's random names sort in no meaningful order: the experiment committed first comes first."""
    ran_first = commit(repo, "zesty-lamb", 1_700_000_000)
    ran_second = commit(repo, "abler-fawn", 1_700_000_050)
    ran_third = commit(repo, "mossy-kilt", 1_700_000_050)  # same second: by name

    class Experiments:
        @staticmethod
        def ls(all_commits: bool = False):
            return {"main": [("abler-fawn", ran_second), ("mossy-kilt", ran_third), ("zesty-lamb", ran_first)]}

    class Repo:
        experiments = Experiments()

    @contextmanager
    def fake_repo(path):
        yield Repo()

    import dvc.repo
    monkeypatch.setattr(dvc.repo, "Repo", fake_repo)
    assert [s.name for s in head_experiments(repo)] == ["zesty-lamb", "abler-fawn", "mossy-kilt"]
    assert head_experiments(repo)[0] == Side("zesty-lamb", "experiment", ran_first)


def test_a_side_s_data_set_and_split_come_from_its_own_files(repo):
    (repo / "params.yaml").write_text(yaml.safe_dump({"dataset": "tiny", "split": {"test_fraction": 0.3, "seed": 2}}))
    (repo / "data" / "split").mkdir(parents=True)
    (repo / "data" / "split" / "tiny.jsonl").write_text(json.dumps({"id": "q1", "side": "test"}) + "\n")
    sha = commit(repo, "tiny", 1_700_000_000)
    (repo / "params.yaml").write_text(yaml.safe_dump({"split": "none"}))  # the workspace moves on
    (repo / "data" / "split" / "tiny.jsonl").unlink()
    side = Side("e1", "experiment", sha)
    workspace = Side("workspace", "workspace", None)
    committed = questions_of(side, repo)
    assert (committed.dataset, committed.split.test_fraction, committed.split.seed) == ("tiny", 0.3, 2)
    assert split_at(side, "tiny", repo) == {"q1": "test"}
    here = questions_of(workspace, repo)
    assert (here.dataset, here.split.enabled) == ("handbook", False), "a key left out takes config.py's default"
    assert split_at(workspace, "tiny", repo) is None and read_side_file(workspace, Path("nope"), repo) is None
    assert sides_module.SPLIT_DIR == Path("data/split")


@pytest.mark.bad_input
@pytest.mark.parametrize("params, message", [
    ("split: off\n", "params.yaml at experiment e1: split: expected a block such as"),
    ("dataset: [a]\n", "params.yaml at experiment e1: dataset: expected a data set name, got ['a']"),
    ("- a\n", "params.yaml at experiment e1 must hold a mapping of keys, found list"),
])
def test_a_side_s_bad_params_name_the_side(repo, params, message):
    (repo / "params.yaml").write_text(params)
    side = Side("e1", "experiment", commit(repo, "bad", 1_700_000_000))
    with pytest.raises(UserError) as e:
        questions_of(side, repo)
    assert str(e.value).startswith(message), str(e.value)
