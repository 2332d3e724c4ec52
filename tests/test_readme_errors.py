"""The table of error messages (docs/errors.md, linked from the README), kept true to the code.

docs/errors.md's section `## Every error message` quotes, in the first cell of each table row, one
or more pieces of a message in backticks, with `…` where the message fills in a value (a path,
a name, a number). Each piece must occur in a string the code builds: a string literal or
f-string in rag_ablation/ or stages/ (docstrings do not count), read with each `{placeholder}`
of an f-string as `…` and adjacent literals joined as Python joins them. A reworded message
fails here, naming the row of docs/errors.md, so the table is updated with the code.
"""
from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("rag_ablation", "stages")
PAGE = Path("docs") / "errors.md"  # relative to ROOT
SECTION = "## Every error message"
GAP = "…"  # stands for one placeholder of an f-string
FRAGMENT = re.compile(r"`([^`]+)`")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of the module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _template(node: ast.JoinedStr) -> str:
    return "".join(v.value if isinstance(v, ast.Constant) else GAP for v in node.values)


@cache
def message_strings() -> tuple[str, ...]:
    """Every string literal and f-string (as a template) in the sources, docstrings left out."""
    out = []
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            skip = _docstrings(tree)
            inner = set()  # the literal parts of f-strings, counted with their f-string
            for node in ast.walk(tree):
                if isinstance(node, ast.JoinedStr):
                    inner.update(id(v) for v in node.values)
                    out.append(_template(node))
                elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                      and id(node) not in skip and id(node) not in inner):
                    out.append(node.value)
    return tuple(out)


def section_lines() -> list[tuple[int, str]]:
    """(line number, text) of the section, from its heading to the next `## ` or `# ` heading
    (its `### ` sub-headings stay inside)."""
    lines = (ROOT / PAGE).read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == SECTION]
    assert len(starts) == 1, f"{PAGE} must have exactly one {SECTION!r} heading, found {len(starts)}"
    out = []
    for i in range(starts[0] + 1, len(lines)):
        if lines[i].startswith("## ") or lines[i].startswith("# "):
            break
        out.append((i + 1, lines[i]))
    return out


def table_rows() -> list[tuple[int, list[str]]]:
    """(line number, cells) of every table row of the section, header and rule rows left out."""
    rows = []
    previous = ""
    for number, line in section_lines():
        if line.startswith("|"):
            is_rule = re.fullmatch(r"\|(\s*:?-+:?\s*\|)+\s*", line) is not None
            is_header = not previous.startswith("|")
            if not (is_rule or is_header):
                rows.append((number, [c.strip() for c in line.strip().strip("|").split("|")]))
        previous = line
    return rows


def test_the_section_is_a_table_of_messages():
    rows = table_rows()
    assert len(rows) >= 40, f"expected the table of every error message, found {len(rows)} rows"
    for number, cells in rows:
        assert len(cells) == 4, f"{PAGE} line {number}: expected 4 cells (message, where, meaning, fix), " \
                                f"found {len(cells)}: {cells}"
        assert FRAGMENT.findall(cells[0]), f"{PAGE} line {number}: the first cell quotes no message: {cells[0]}"
        assert all(cells), f"{PAGE} line {number}: an empty cell: {cells}"


def test_every_quoted_message_is_in_the_code():
    strings = message_strings()
    missing = [f"{PAGE} line {number}: `{fragment}` (row {cells[0]})"
               for number, cells in table_rows()
               for fragment in FRAGMENT.findall(cells[0])
               if not any(fragment in s for s in strings)]
    assert not missing, (f"these error messages of {PAGE} occur in no string of rag_ablation/ or stages/; "
                         "update the row to the message the code prints:\n  " + "\n  ".join(missing))


def test_a_fragment_is_quoted_once():
    seen: dict[str, int] = {}
    repeated = []
    for number, cells in table_rows():
        for fragment in FRAGMENT.findall(cells[0]):
            if fragment in seen:
                repeated.append(f"`{fragment}` on lines {seen[fragment]} and {number}")
            seen.setdefault(fragment, number)
    assert not repeated, "merge or reword these rows:\n  " + "\n  ".join(repeated)


def test_the_reader_of_strings_sees_fstrings_as_templates():
    tree = ast.parse('def f(p):\n    """a docstring"""\n    raise E(f"{p}: expected " f"a file, got {p!r}")\n')
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.JoinedStr))
    assert _template(node) == "…: expected a file, got …"
    assert len(_docstrings(tree)) == 1
