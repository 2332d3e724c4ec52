"""Every stage in dvc.yaml depends on its own script and every library module it imports,
directly or through other modules (subpackages included), and on no more of the package than
that; the evaluation layer never imports LLM or search code."""
from __future__ import annotations

import ast
from pathlib import Path

import yaml

from conftest import ROOT


def module_file(mod: str) -> Path:
    """The file of a dotted ``rag_ablation`` module (a package's ``__init__.py``)."""
    base = ROOT / mod.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rag_ablation"):
            for a in node.names:  # `from rag_ablation.pkg import module` names a submodule
                sub = f"{node.module}.{a.name}"
                out.add(sub if module_file(sub).is_file() else node.module)
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
        todo.extend(imported_modules(module_file(mod)))
    return {module_file(m).relative_to(ROOT).as_posix() for m in seen}


def stages():
    out = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert out
    return {name: stage.get("do", stage) for name, stage in out.items()}


def test_stage_deps_match_imports():
    for name, body in stages().items():
        script = body["cmd"].split()[1]
        deps = {d for d in body["deps"] if d.endswith(".py")}
        expected = {script} | closure(ROOT / script)
        assert deps == expected, f"stage {name}: missing {sorted(expected - deps)}, extra {sorted(deps - expected)}"


def test_package_init_files_are_empty():
    for init in (ROOT / "rag_ablation").rglob("__init__.py"):
        assert init.read_text().strip() == "", f"{init} must stay empty so stage dependencies stay narrow"


def test_evaluation_never_depends_on_llm_or_search_code():
    for name in ("score", "evaluate", "stats", "report"):
        deps = set(stages()[name]["deps"])
        assert not any(d.startswith(("rag_ablation/llm/", "rag_ablation/retrieval/")) for d in deps), name
    for module in (ROOT / "rag_ablation" / "evaluation").glob("*.py"):
        bad = [m for m in closure(module) if m.startswith(("rag_ablation/llm/", "rag_ablation/retrieval/"))]
        assert not bad, f"{module.name} imports {bad}"


def test_the_question_sampler_is_apart_from_runtime_code():
    for name in ("retrieve", "labels", "generate", "score"):
        assert "rag_ablation/authoring/passages.py" not in stages()[name]["deps"], name
