"""Every stage of the pipeline (the dvc.yaml files of pipeline_files.PIPELINE_FILES) depends on
its own script and every library module it imports, directly or through other modules
(subpackages included), and on no more of the package than that. The exceptions are the folders
of :data:`FOLDERS`, each listed as one dependency where a stage imports any module of it:
``rag_ablation/core`` (config, errors, io, the stage runner, stage costs: every stage imports
it, and core imports nothing outside itself) and ``rag_ablation/llm/client`` (the LLM client:
every LLM stage imports it; the stage then depends on the whole folder and on everything the
folder imports). No stage depends on ``rag_ablation/commands`` (editing a command reruns no
stage), the evaluation layer never imports search code and calls the LLM layer only from the
judge runners, and no two modules of the package import each other in a circle."""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT, pipeline_stages

CORE = "rag_ablation/core"
FOLDERS = (CORE, "rag_ablation/llm/client")
"""Folders a stage lists as one dependency (``CORE`` first: every stage lists it)."""
JUDGE_RUNNERS = ("rag_ablation/evaluation/judges/judging.py", "rag_ablation/evaluation/judges/judge_checks.py",
                 "rag_ablation/evaluation/judges/support.py")
"""The only evaluation modules that call the LLM layer (they run the judges)."""


def module_file(mod: str) -> Path:
    """The file of a dotted ``rag_ablation`` module (a package's ``__init__.py``)."""
    base = ROOT / mod.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imported_modules(path: Path) -> set[str]:
    """The ``rag_ablation`` modules a file imports, at module level or inside a function."""
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


def expand(dep: str) -> set[str]:
    """A dependency path as the Python files it covers (a folder: every module below it)."""
    p = ROOT / dep
    if p.is_dir():
        return {f.relative_to(ROOT).as_posix() for f in p.rglob("*.py") if "__pycache__" not in f.parts}
    return {dep} if dep.endswith(".py") else set()


def stages():
    """Every stage of every dvc.yaml of the pipeline (pipeline_files.PIPELINE_FILES), by name."""
    out = pipeline_stages()
    assert out
    return {name: stage.get("do", stage) for name, stage in out.items()}


def library_modules() -> list[Path]:
    return sorted(p for p in (ROOT / "rag_ablation").rglob("*.py") if "__pycache__" not in p.parts)


def test_expand_covers_a_folder_and_skips_data_paths():
    assert expand(CORE) == {p.relative_to(ROOT).as_posix() for p in (ROOT / CORE).glob("*.py")}
    assert f"{CORE}/config.py" in expand(CORE)
    assert expand("stages/chunk.py") == {"stages/chunk.py"}
    assert expand("${data}/corpus") == set()


def test_core_imports_nothing_outside_core():
    for path in (ROOT / CORE).glob("*.py"):
        outside = {m for m in closure(path) if not m.startswith(CORE + "/")}
        assert not outside, f"{path.name} imports {sorted(outside)}: core must stay a closed set"


def wanted_deps(script: Path) -> list[str]:
    """The ``rag_ablation`` dependencies a stage script needs, as dvc.yaml lists them: each
    module of its import closure, except that a folder of :data:`FOLDERS` the closure touches
    (``CORE`` always) is one entry, standing for its every module and their closures."""
    files = closure(script)
    folders = [f for f in FOLDERS if f == CORE or any(m.startswith(f + "/") for m in files)]
    for folder in folders:
        for module in (ROOT / folder).glob("*.py"):
            files |= closure(module)
    return sorted(folders) + sorted(m for m in files if not any(m.startswith(f + "/") for f in folders))


def test_stage_deps_match_imports():
    for name, body in stages().items():
        script = body["cmd"].split()[1]
        listed = [d for d in body["deps"] if d.startswith(("rag_ablation", "stages/"))]
        assert CORE in listed, f"stage {name}: lists no {CORE} folder"
        for folder in FOLDERS:
            assert not any(d.startswith(folder + "/") for d in listed), f"stage {name}: list {folder} as the folder"
        deps = set().union(*(expand(d) for d in listed))
        expected = {script} | set().union(*(expand(d) for d in wanted_deps(ROOT / script)))
        assert deps == expected, f"stage {name}: missing {sorted(expected - deps)}, extra {sorted(deps - expected)}"
        assert len(listed) == len(set(listed)), f"stage {name}: a dependency is listed twice"


def test_llm_stages_list_the_client_as_one_folder():
    for name in ("queries", "generate", "judge", "judge_checks", "support"):
        assert "rag_ablation/llm/client" in stages()[name]["deps"], name


def test_the_client_folder_imports_only_core_and_support():
    for path in (ROOT / "rag_ablation/llm/client").glob("*.py"):
        outside = {m for m in closure(path) if not m.startswith(("rag_ablation/llm/client/", CORE + "/",
                                                                   "rag_ablation/support/"))}
        assert not outside, f"{path.name} imports {sorted(outside)}"


def test_no_stage_depends_on_commands():
    for name, body in stages().items():
        assert not any(d.startswith("rag_ablation/commands") for d in body["deps"]), name
    for script in (ROOT / "stages").glob("*.py"):
        assert not any(m.startswith("rag_ablation/commands/") for m in closure(script)), script.name
    for path in library_modules():
        if "commands" not in path.relative_to(ROOT).parts:
            bad = [m for m in imported_modules(path) if m.startswith("rag_ablation.commands")]
            assert not bad, f"{path} imports the commands {bad}"


def test_package_init_files_are_empty():
    for init in (ROOT / "rag_ablation").rglob("__init__.py"):
        assert init.read_text().strip() == "", f"{init} must stay empty so stage dependencies stay narrow"


def test_evaluation_never_depends_on_llm_or_search_code():
    for name in ("score", "evaluate", "stats", "report", "report_html", "judge_eval", "gate"):
        deps = set(stages()[name]["deps"])
        assert not any(d.startswith(("rag_ablation/llm/", "rag_ablation/retrieval/")) for d in deps), name
    for module in (ROOT / "rag_ablation" / "evaluation").rglob("*.py"):
        rel = module.relative_to(ROOT).as_posix()
        banned = ("rag_ablation/retrieval/",) if rel in JUDGE_RUNNERS else ("rag_ablation/llm/", "rag_ablation/retrieval/")
        bad = [m for m in closure(module) if m.startswith(banned)]
        assert not bad, f"{module.name} imports {bad}"
    for runner in JUDGE_RUNNERS:
        assert any(m.startswith("rag_ablation/llm/") for m in closure(ROOT / runner)), f"{runner} no longer runs a judge"


def test_the_question_sampler_is_apart_from_runtime_code():
    for name in ("retrieve", "labels", "generate", "score"):
        assert "rag_ablation/data/passages.py" not in stages()[name]["deps"], name


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or of one that imports
    itself (Tarjan's algorithm), each sorted; the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_import_circles_are_found():
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_circles({"a": {"a"}, "b": set()}) == [["a"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_the_package():
    graph = {module_name(p): imported_modules(p) for p in library_modules()}
    assert import_circles(graph) == []
