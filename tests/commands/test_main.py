"""The `rag-ablation` command registry (rag_ablation.commands.main) and the installed entry points:
`rag-ablation --help`, `rag-ablation COMMAND --help` for every command of COMMANDS and `rag-grade
--help` work; command code (argument parsing, the runner) lives in rag_ablation/commands only."""
from __future__ import annotations

import ast
import importlib
import subprocess

import pytest

from conftest import ROOT, VENV_BIN
from rag_ablation.commands.main import COMMANDS


def script(name: str) -> str:
    path = VENV_BIN / name
    assert path.is_file(), f"{path} is missing: install the project (`pip install -e .`) to get its entry points"
    return str(path)


def run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def test_top_level_help_lists_every_command():
    res = run(script("rag-ablation"), "--help")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: rag-ablation ")
    for name in COMMANDS:
        assert f"\n  {name} " in res.stdout, name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help(name):
    res = run(script("rag-ablation"), name, "--help")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"usage: rag-ablation {name} ") and res.stderr == ""


def test_rag_grade_is_an_alias_of_the_grade_command():
    res = run(script("rag-grade"), "--help")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: rag-grade ")
    sub = run(script("rag-ablation"), "grade", "--help")
    assert sub.stdout.replace("rag-ablation grade", "rag-grade").split() == res.stdout.split()


@pytest.mark.bad_input
def test_bad_grade_options_are_argparse_errors_in_both_forms():
    for cmd, prog in (((script("rag-grade"),), "rag-grade"), ((script("rag-ablation"), "grade"), "rag-ablation grade")):
        res = run(*cmd, "--sample", "0")
        assert res.returncode == 2 and res.stdout == ""
        assert res.stderr.endswith(f"{prog}: error: --sample must be at least 1, found 0\n")
        res = run(*cmd, "--grader", " ")
        assert res.returncode == 2 and res.stderr.endswith(f"{prog}: error: --grader must not be empty\n")


def test_every_command_module_provides_a_parser_and_run():
    for name, command in COMMANDS.items():
        assert command.module.startswith("rag_ablation.commands."), name
        module = importlib.import_module(command.module)
        assert module.build_parser(f"rag-ablation {name}").prog == f"rag-ablation {name}"
        assert callable(module.run), name


def _imports(path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_only_commands_parse_arguments_or_use_the_runner():
    """Editing a command reruns no stage: the library stages import has no argument parsing and
    no entry point (rag_ablation.core.runner is for stages and commands)."""
    package = ROOT / "rag_ablation"
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] == "commands" or path == package / "core" / "runner.py":
            continue
        found = _imports(path) & {"argparse", "rag_ablation.core.runner"}
        assert not found, f"{path.relative_to(ROOT)} imports {sorted(found)}: move it to rag_ablation/commands/"
