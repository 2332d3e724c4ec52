"""Fixtures of the workbench's tests: the tiny project (``tiny_project.py``) in ``tmp_path``."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("workbench_tiny_project", Path(__file__).with_name("tiny_project.py"))
assert _spec is not None and _spec.loader is not None
tiny = importlib.util.module_from_spec(_spec)
sys.modules["workbench_tiny_project"] = tiny
_spec.loader.exec_module(tiny)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """(Project, Params) of the tiny project, with ``tmp_path`` the current folder."""
    monkeypatch.chdir(tmp_path)
    return tiny.make_project(tmp_path)


@pytest.fixture
def bench(project):
    from rag_ablation.authoring.workbench.session import Workbench

    return Workbench(*project)
