"""A stage run by the interpreter a venv was made from (no venv active) re-runs itself with the
repository's `.venv`: the venv's `python` is often a symlink to that very interpreter, so the
switch must compare environments (sys.prefix), not binaries."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
