"""page: the page's HTML, CSS and JavaScript are the files in ``static/``, served as they are, and
no Python file of the workbench holds them (or any other big piece of web code) in a string."""
from __future__ import annotations

import ast
import re

import pytest
from starlette.testclient import TestClient

from conftest import ROOT
from rag_ablation.authoring.workbench import page
from rag_ablation.authoring.workbench.app import CSP, create_app, own_hosts

PORT = 8765
WORKBENCH = ROOT / "rag_ablation/authoring/workbench"
MAX_WEB_LINES = 40
"""The project's rule: no Python string holds more than 40 lines of HTML, CSS or JavaScript."""
WEB_LINE = re.compile(r"</?[a-zA-Z][\w-]*[\s>/]|[{};]\s*$|=>|\b(?:const|let|function|document)\b")
"""A line that looks like HTML (a tag), CSS or JavaScript (a brace or semicolon at its end, an arrow, a keyword)."""


@pytest.fixture
def client(bench):
    return TestClient(create_app(bench, hosts=own_hosts(PORT)), base_url=f"http://127.0.0.1:{PORT}")


@pytest.mark.parametrize(("path", "name", "media_type"), [
    ("/", "index.html", "text/html; charset=utf-8"),
    ("/app.js", "app.js", "text/javascript; charset=utf-8"),
    ("/app.css", "app.css", "text/css; charset=utf-8"),
    ("/grade.js", "grade.js", "text/javascript; charset=utf-8"),
])
def test_each_url_of_the_page_serves_its_static_file_unchanged(client, path, name, media_type):
    r = client.get(path)
    assert r.status_code == 200 and r.content == (WORKBENCH / "static" / name).read_bytes()
    assert r.headers["content-type"] == media_type and r.headers["content-security-policy"] == CSP
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["cache-control"] == "no-store"


def test_the_page_loads_its_script_and_style_from_the_app_and_holds_neither_inline():
    html = (page.STATIC / "index.html").read_text(encoding="utf-8")
    assert re.findall(r"<script\b[^>]*>", html) == ['<script src="/app.js">', '<script src="/grade.js">']
    assert re.findall(r"<link\b[^>]*>", html) == ['<link rel="stylesheet" href="/app.css">']
    assert "<style" not in html and not re.search(r"<[^>]*\sstyle=", html), "no inline style (the CSP forbids it)"
    assert not re.search(r"<[^>]*\son[a-z]+=", html), "no inline event handlers (the CSP forbids them)"


def test_the_assets_are_the_files_of_the_static_folder_and_a_wheel_carries_them():
    assert sorted(name for name, _ in page.FILES.values()) == sorted(p.name for p in page.STATIC.iterdir())
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    package_data = re.search(r"^\[tool\.setuptools\.package-data\]\nrag_ablation = \[(.*)\]$", pyproject, re.M)
    assert package_data and '"authoring/workbench/static/*"' in package_data.group(1)


def test_a_missing_static_file_fails_when_the_app_is_made(tmp_path):
    (tmp_path / "index.html").write_text("<!doctype html>", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="app.js"):
        page.read_assets(tmp_path)


def web_lines(text: str) -> int:
    """How many lines of ``text`` look like HTML, CSS or JavaScript (``WEB_LINE``)."""
    return sum(1 for line in text.splitlines() if WEB_LINE.search(line))


def test_the_web_line_count_sees_the_page_files_and_not_prose():
    for name in ("index.html", "app.css", "app.js"):
        text = (page.STATIC / name).read_text(encoding="utf-8")
        assert web_lines(text) > 0.8 * len(text.splitlines()) - 2, name
    assert web_lines(page.__doc__ or "") <= 2


@pytest.mark.parametrize("module", sorted(p.name for p in WORKBENCH.glob("*.py")))
def test_no_python_file_of_the_workbench_holds_a_big_web_string(module):
    tree = ast.parse((WORKBENCH / module).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert web_lines(node.value) <= MAX_WEB_LINES, f"{module}:{node.lineno}: web code belongs in static/"
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
            assert web_lines(text) <= MAX_WEB_LINES, f"{module}:{node.lineno}: web code belongs in static/"
