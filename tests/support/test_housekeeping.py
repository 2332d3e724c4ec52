"""`rag-ablation prune` on a two-stage DVC pipeline in a fresh git repository, split over two
dvc.yaml files as the project's is (the per-config stage in index/dvc.yaml, running in the top
folder): after one config leaves params.yaml, exactly that config's outputs are leftovers (its
committed metric, its build output and its entry in index/dvc.lock), never a file no stage
wrote (a command's metrics, a user's note)."""
from __future__ import annotations

import pytest
import yaml

from conftest import VENV_BIN, run_in
from rag_ablation.support.housekeeping import Stale, prune, stale

INDEX_YAML = """\
vars:
  - ../params.yaml
stages:
  retrieve:
    foreach: ${configs}
    do:
      wdir: ..
      cmd: mkdir -p build/runs metrics/latency && echo ${key} > build/runs/${key}.json
        && echo 1 > metrics/latency/${key}.json
      params:
        - configs.${key}
      outs:
        - build/runs/${key}.json
      metrics:
        - metrics/latency/${key}.json:
            cache: false
"""
DVC_YAML = """\
stages:
  score:
    cmd: ls build/runs > metrics/scores.txt
    deps:
      - build/runs
    outs:
      - metrics/scores.txt:
          cache: false
"""


@pytest.fixture
def pipeline(tmp_path):
    d = tmp_path / "repo"
    d.mkdir()
    run_in(d, "git", "init", "-q")
    run_in(d, str(VENV_BIN / "dvc"), "init", "-q")
    (d / "dvc.yaml").write_text(DVC_YAML)
    (d / "index").mkdir()
    (d / "index/dvc.yaml").write_text(INDEX_YAML)
    (d / "params.yaml").write_text(yaml.safe_dump({"configs": {"dense": {"k": 1}, "hybrid": {"k": 2}}}))
    run_in(d, str(VENV_BIN / "dvc"), "repro", "-q")
    (d / "metrics" / "sweep.json").write_text("{}\n")  # written by a command, not a stage
    run_in(d, "git", "add", "-A")
    run_in(d, "git", "commit", "-q", "-m", "two configs")
    (d / "build" / "runs" / "notes.txt").write_text("mine\n")  # a user's file, never committed
    return d


def test_a_removed_config_leaves_its_committed_metric_build_output_and_lock_entry(pipeline):
    d = pipeline
    (d / "params.yaml").write_text(yaml.safe_dump({"configs": {"dense": {"k": 1}}}))
    found = stale(d)
    assert found.files == ("metrics/latency/hybrid.json",)
    assert found.build == ("build/runs/hybrid.json",)
    assert found.lock_entries == ("index/dvc.lock:retrieve@hybrid",)
    assert "/hybrid.json" in (d / "build/runs/.gitignore").read_text().splitlines()
    prune(d, apply=True)
    assert (d / "build/runs/.gitignore").read_text().splitlines() == ["/dense.json"]
    assert not (d / "build/runs/hybrid.json").exists() and not (d / "metrics/latency/hybrid.json").exists()
    assert (d / "build/runs/dense.json").is_file() and (d / "build/runs/notes.txt").is_file()
    assert "metrics/sweep.json" in run_in(d, "git", "ls-files").split()
    assert list(yaml.safe_load((d / "index/dvc.lock").read_text())["stages"]) == ["retrieve@dense"]
    assert list(yaml.safe_load((d / "dvc.lock").read_text())["stages"]) == ["score"]
    run_in(d, str(VENV_BIN / "dvc"), "repro", "-q")
    assert (d / "metrics/scores.txt").read_text().split() == ["dense.json", "notes.txt"]
    assert stale(d) == Stale((), (), ())


def test_nothing_is_a_leftover_while_every_config_is_in_params(pipeline):
    assert stale(pipeline) == Stale((), (), ())


@pytest.mark.bad_input
def test_a_lock_entry_pointing_outside_the_repository_is_never_a_leftover(pipeline):
    """A hand-edited dvc.lock whose removed stage records `../outside.txt` and an absolute path:
    the lock entry is a leftover, the files are not touched."""
    d = pipeline
    outside = d.parent / "outside.txt"
    outside.write_text("keep\n")
    lock = yaml.safe_load((d / "dvc.lock").read_text())
    lock["stages"]["gone"] = {"cmd": "true", "outs": [{"path": "../outside.txt"}, {"path": str(outside)}]}
    (d / "dvc.lock").write_text(yaml.safe_dump(lock))
    assert stale(d) == Stale((), ("dvc.lock:gone",), ())
    prune(d, apply=True)
    assert outside.read_text() == "keep\n"
    assert "gone" not in yaml.safe_load((d / "dvc.lock").read_text())["stages"]


def test_a_gitignore_left_without_lines_stays_so_a_clean_checkout_keeps_the_folder(pipeline):
    """Every config removed: both runs go, and build/runs/.gitignore stays tracked and empty,
    so the folder `score` depends on exists in a fresh clone and `dvc repro` runs there."""
    d = pipeline
    (d / "build/runs/notes.txt").unlink()
    (d / "params.yaml").write_text(yaml.safe_dump({"configs": {}}))
    assert stale(d).build == ("build/runs/dense.json", "build/runs/hybrid.json")
    prune(d, apply=True)
    assert (d / "build/runs/.gitignore").read_text() == ""
    run_in(d, str(VENV_BIN / "dvc"), "repro", "-q")
    run_in(d, "git", "add", "-A")
    run_in(d, "git", "commit", "-q", "-m", "no config")
    clone = d.parent / "clone"
    run_in(d.parent, "git", "clone", "-q", str(d), str(clone))
    assert (clone / "build/runs").is_dir()
    run_in(clone, str(VENV_BIN / "dvc"), "repro", "-q")
    assert (clone / "metrics/scores.txt").read_text() == ""
