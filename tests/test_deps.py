"""Every stage in dvc.yaml depends on its own script and every library module it imports,
directly or through other modules, and on no more of the package than that."""
from __future__ import annotations

import ast
from pathlib import Path

import yaml

from conftest import ROOT


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rag_ablation"):
            if node.module == "rag_ablation":
                out.update(f"rag_ablation.{a.name}" for a in node.names)
            else:
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("rag_ablation."))
    return out


def closure(path: Path) -> set[str]:
    seen: set[str] = set()
    todo = list(imported_modules(path))
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        todo.extend(imported_modules(ROOT / (mod.replace(".", "/") + ".py")))
    return {f"{m.replace('.', '/')}.py" for m in seen}


def test_stage_deps_match_imports():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert stages
    for name, stage in stages.items():
        body = stage.get("do", stage)
        script = body["cmd"].split()[1]
        deps = {d for d in body["deps"] if d.endswith(".py")}
        expected = {script} | closure(ROOT / script)
        assert deps == expected, f"stage {name}: missing {sorted(expected - deps)}, extra {sorted(deps - expected)}"
