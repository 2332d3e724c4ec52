"""A stage run by the interpreter a venv was made from (no venv active) re-runs itself with the
repository's `.venv`: the venv's `python` is often a symlink to that very interpreter, so the
switch must compare environments (sys.prefix), not binaries."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag_ablation.core.pipeline_files import PIPELINE_FILES

from conftest import ROOT


def test_a_stage_started_by_the_base_interpreter_uses_the_repository_venv():
    base = Path(sys.base_prefix) / "bin" / "python3"
    if not base.is_file() or sys.prefix == sys.base_prefix:
        pytest.skip("the tests do not run in a venv made from a base interpreter here")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "RAG_ABLATION_REEXEC")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(sys.prefix))
    res = subprocess.run([str(base), "stages/report.py", "--help"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: report.py")


def test_a_stage_imports_the_package_beside_it_not_the_editable_install(tmp_path):
    """A queued DVC experiment runs in a copy of the repository: its stages must import the
    copy's library (the snapshot DVC hashed), even though the editable install points here."""
    copy = tmp_path / "copy"
    (copy / "stages").mkdir(parents=True)
    (copy / "stages" / "_env.py").write_text((ROOT / "stages" / "_env.py").read_text())
    (copy / "rag_ablation").mkdir()
    (copy / "rag_ablation" / "__init__.py").write_text("WHERE = 'the copy'\n")
    (copy / "stages" / "probe.py").write_text("import _env  # noqa: F401\nimport rag_ablation\n"
                                              "print(getattr(rag_ablation, 'WHERE', rag_ablation.__file__))\n")
    res = subprocess.run([sys.executable, "stages/probe.py"], cwd=copy, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "the copy"
    res = subprocess.run([sys.executable, str(copy / "stages" / "probe.py")], cwd=tmp_path, capture_output=True,
                         text=True)
    assert res.stdout.strip() == str(ROOT / "rag_ablation" / "__init__.py"), res.stderr


def test_a_queued_experiments_copy_finds_the_venv_of_its_repository(tmp_path, monkeypatch):
    """DVC runs a queued experiment in REPO/.dvc/tmp/exps/<run>/<copy>/ (a DVC repository of its
    own, without the untracked .venv): the stage looks past the copy's root to REPO's .venv."""
    import importlib.util as iu

    spec = iu.spec_from_file_location("stage_env", ROOT / "stages" / "_env.py")
    env = iu.module_from_spec(spec)
    spec.loader.exec_module(env)
    repo = tmp_path / "repo"
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").write_text("")
    copy = repo / ".dvc" / "tmp" / "exps" / "run" / "tmpab12"
    (copy / ".dvc").mkdir(parents=True)
    monkeypatch.chdir(copy)
    assert env._venv_python() == (repo / ".venv" / "bin" / "python").resolve()
    other = tmp_path / "other"
    (other / ".dvc").mkdir(parents=True)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text("")
    monkeypatch.chdir(other)
    assert env._venv_python() is None  # a plain repository stops at its own root


@pytest.mark.parametrize("given, expected", [
    ({}, {"GOMP_SPINCOUNT": "10000", "OMP_WAIT_POLICY": None}),
    ({"OMP_WAIT_POLICY": "PASSIVE"}, {"GOMP_SPINCOUNT": None, "OMP_WAIT_POLICY": "PASSIVE"}),
    ({"GOMP_SPINCOUNT": "300000"}, {"GOMP_SPINCOUNT": "300000", "OMP_WAIT_POLICY": None}),
])
def test_a_stage_sets_the_openmp_spin_count_unless_the_user_chose_a_setting(tmp_path, given, expected):
    """Before any library loads, every stage shortens OpenMP's busy-wait (GOMP_SPINCOUNT=10000);
    a setting of the user's own, either variable, is left exactly as given."""
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "_env.py").write_text((ROOT / "stages" / "_env.py").read_text())
    (tmp_path / "stages" / "probe.py").write_text(
        "import _env  # noqa: F401\nimport json, os\n"
        "print(json.dumps({k: os.environ.get(k) for k in ('GOMP_SPINCOUNT', 'OMP_WAIT_POLICY')}))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    res = subprocess.run([sys.executable, "stages/probe.py"], cwd=tmp_path, capture_output=True, text=True,
                         env={**env, **given})
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == expected


def test_dvc_parses_yaml_with_ruamels_c_parser_and_reads_the_same_values():
    """The environment holds ruamel.yaml's C parser (the `ruamel.yaml.clib` dependency), which
    DVC's safe loads of params.yaml and dvc.lock use, and it reads every YAML file DVC reads here
    exactly as ruamel's pure-Python parser does (same keys, values and types)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.main import CParser

    from dvc.utils.serialize import load_yaml

    assert CParser is not None, "ruamel.yaml.clib is missing: `make install` installs it"
    assert YAML(typ="safe").Parser is CParser
    files = [ROOT / "params.yaml", ROOT / "tests/fixtures/params.yaml", *(ROOT / f for f in PIPELINE_FILES),
             *(ROOT / Path(f).parent / "dvc.lock" for f in PIPELINE_FILES)]
    for path in files:
        fast = load_yaml(str(path))  # DVC's own loader (typ="safe")
        pure = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
        assert fast == pure and fast, path
