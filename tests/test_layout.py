"""The library's layout as docs/pipeline.md draws it, checked against the tree and the imports.

The "Layout" section's map is the one place the rooms' order is written: under
``rag_ablation/``, each room is a line ``<indent>NAME/`` (a subroom one level deeper), listed from
the lowest room to the highest, followed by the modules it holds. A folder's own modules sit
above its subrooms (``llm/``'s generation imports ``llm/client/``), so the order is the map's
post-order: children first, then their parent. A module may import its own room or a lower one,
never a higher one. Every module must be named in its room's entry, and every room drawn must be
a folder of the package.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from conftest import ROOT
from test_deps import imported_modules, library_modules, module_file

PACKAGE = ROOT / "rag_ablation"
HEADER = re.compile(r"^( {2,7})([a-z_]+)/(?=\s|$)(.*)$")


@dataclass
class Room:
    path: str
    depth: int
    text: list[str] = field(default_factory=list)
    children: list[Room] = field(default_factory=list)


def layout_block(doc: str) -> list[str]:
    """The lines of the code block under ``## Layout``, from ``rag_ablation/`` to the next line
    that starts at the margin."""
    section = doc.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1].splitlines()
    start = next(i for i, line in enumerate(block) if line.startswith("rag_ablation/"))
    out = []
    for line in block[start + 1:]:
        if line and not line.startswith(" "):
            break
        out.append(line)
    return out


def parse_rooms(lines: list[str]) -> list[Room]:
    """The rooms of the map as a forest, in the order drawn; each room keeps its text (the
    header line and the lines under it until the next header)."""
    top: list[Room] = []
    stack: list[Room] = []
    current: Room | None = None
    for line in lines:
        m = HEADER.match(line)
        if m:
            depth = len(m.group(1)) // 2
            while stack and stack[-1].depth >= depth:
                stack.pop()
            parent = stack[-1] if stack else None
            path = f"{parent.path}/{m.group(2)}" if parent else m.group(2)
            current = Room(path, depth, [m.group(3)])
            (parent.children if parent else top).append(current)
            stack.append(current)
        elif current is not None:
            current.text.append(line)
    return top


def post_order(rooms: list[Room]) -> list[Room]:
    out: list[Room] = []
    for room in rooms:
        out.extend(post_order(room.children))
        out.append(room)
    return out


def map_rooms() -> list[Room]:
    return post_order(parse_rooms(layout_block((ROOT / "docs/pipeline.md").read_text())))


def room_of(path: Path) -> str:
    return path.parent.relative_to(PACKAGE).as_posix()


def test_the_map_is_parsed_into_nested_rooms_in_post_order():
    lines = ["  core/      config, io", "                 errors", "  llm/       generation",
             "    client/  base", "  commands/  main"]
    rooms = post_order(parse_rooms(lines))
    assert [r.path for r in rooms] == ["core", "llm/client", "llm", "commands"]
    assert rooms[0].text == ["      config, io", "                 errors"]


def test_every_room_drawn_is_a_package_folder_and_every_folder_is_drawn():
    drawn = [r.path for r in map_rooms()]
    assert len(drawn) == len(set(drawn)), "a room is drawn twice"
    folders = {room_of(p) for p in library_modules() if p.parent != PACKAGE}
    assert set(drawn) == folders, f"not drawn: {sorted(folders - set(drawn))}; not folders: {sorted(set(drawn) - folders)}"


def test_every_module_is_named_in_its_room():
    text = {r.path: " ".join(r.text) for r in map_rooms()}
    missing = [p.relative_to(ROOT).as_posix() for p in library_modules()
               if p.name != "__init__.py" and not re.search(rf"(?<![\w.]){p.stem}(?!\w)", text.get(room_of(p), ""))]
    assert not missing, f"modules missing from docs/pipeline.md's layout map: {missing}"


def test_no_import_runs_upward():
    rank = {r.path: i for i, r in enumerate(map_rooms())}
    upward = []
    for path in library_modules():
        if path.parent == PACKAGE:
            continue
        mine = rank[room_of(path)]
        for mod in imported_modules(path):
            target = module_file(mod)
            if target.parent == PACKAGE:
                continue
            theirs = rank[room_of(target)]
            if theirs > mine:
                upward.append(f"{path.relative_to(ROOT)} ({room_of(path)}) imports {mod} ({room_of(target)})")
    assert not upward, "imports that run upward:\n" + "\n".join(upward)


def test_an_upward_import_would_be_found():
    rank = {r.path: i for i, r in enumerate(map_rooms())}
    assert rank["core"] < rank["data"] < rank["llm/client"] < rank["llm"] < rank["evaluation/judges"] < rank["commands"]


CODE_LINE = re.compile(r"^\s*</?[a-zA-Z!][^>]*>|[;{}]\s*$")
"""A line of HTML (a tag at its start), CSS or JavaScript (ending in ``;``, ``{`` or ``}``)."""
MAX_FRONT_END_LINES = 40


def front_end_lines(text: str) -> int:
    """How many lines of ``text`` read as HTML, CSS or JavaScript (:data:`CODE_LINE`)."""
    return sum(bool(CODE_LINE.search(line)) for line in text.splitlines())


def test_front_end_lines_are_counted():
    assert front_end_lines("<div>\n  a = 1;\n.x {\n}\nplain words\n") == 4
    assert front_end_lines('"""A docstring.\n\nIt says what a function does: nothing more.\n"""') == 0


def test_no_python_file_holds_the_front_end_in_a_string():
    import ast

    heavy = []
    for path in library_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                n = front_end_lines(node.value)
                if n > MAX_FRONT_END_LINES:
                    heavy.append(f"{path.relative_to(ROOT)} line {node.lineno}: {n} lines of HTML, CSS or JavaScript")
    assert not heavy, "front-end code belongs in its own files:\n" + "\n".join(heavy)
