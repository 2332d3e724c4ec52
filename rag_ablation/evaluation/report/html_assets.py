"""The files the offline pages inline, in ``assets/`` beside this module, each checked against
its pinned SHA-256 whenever it is read.

The chart libraries vega, vega-lite and vega-embed, vendored (with their licenses and a
README): the browser build of each npm package at the version of :data:`PACKAGES`, one copy in
the project. ``metrics/report.html`` (:mod:`rag_ablation.evaluation.report.html`) and the
``dvc plots`` page template (``rag_ablation.commands.plots_template``) both read them here, so
no page fetches anything and neither needs npm or a network to be built.

The report page's own front-end, written in this project (:data:`PAGE_FILES`): its skeleton
``report.html``, style sheet ``report.css`` and script ``report.js``, read by
:func:`read_page_files`. Pinned like the libraries, so an edit reaches the page only together
with its new hash, in the same commit.

:func:`inline_script` puts code into a ``<script>`` element so the HTML parser cannot end it
early.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rag_ablation.core.errors import InvalidData, MissingInput

ASSETS = Path(__file__).resolve().parent / "assets"
"""The folder holding the vendored files and the report page's own front-end files."""


@dataclass(frozen=True)
class Package:
    """An npm package spec (``name@version``), the browser build inside its tarball (``member``),
    the vendored file's name in :data:`ASSETS` and that file's SHA-256 (hex)."""

    spec: str
    member: str
    file: str
    sha256: str


PACKAGES = (
    Package("vega@5.33.1", "package/build/vega.min.js", "vega.min.js",
            "463f3db6a40b20e9747b4ed38f37ed0add508838f9141b1cf8366784b07b30c8"),
    Package("vega-lite@5.23.0", "package/build/vega-lite.min.js", "vega-lite.min.js",
            "58c27358e26f2d319cf62f45bc17a4c8362f08645001df2ec8d341eee4097c7f"),
    Package("vega-embed@6.29.0", "package/build/vega-embed.min.js", "vega-embed.min.js",
            "12d02acfbe3ec59ef9a37dd4822a2e04e2961b5bbb671bbe661d2221715b99da"),
)
"""In load order: vega-lite needs vega, vega-embed needs both (browser globals)."""


def _read_pinned(path: Path, sha256: str, *, missing: str, wrong: str) -> str:
    """The UTF-8 text of ``path`` when its SHA-256 is ``sha256`` (hex). A missing file raises
    MissingInput(``missing``); another digest raises InvalidData(``wrong``), where ``{found}``
    is replaced by the digests' short forms ("has SHA-256 ..., not the pinned ...")."""
    if not path.is_file():
        raise MissingInput(missing)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise InvalidData(wrong.replace("{found}", f"has SHA-256 {digest[:12]}..., not the pinned {sha256[:12]}..."))
    return data.decode("utf-8")


def read_asset(package: Package, folder: Path = ASSETS) -> str:
    """The vendored build of ``package`` as text. A missing file, or one whose SHA-256 is not
    the pinned one (edited, truncated, another version), raises one UserError."""
    path = folder / package.file
    return _read_pinned(path, package.sha256,
                        missing=f"no vendored chart library {path}: restore it from git (`git checkout -- {path}`)",
                        wrong=f"vendored {path.name} {{found}} of {package.spec}: restore it from git, or update "
                              "PACKAGES after vendoring a new version")


def read_assets(packages: tuple[Package, ...] = PACKAGES, folder: Path = ASSETS) -> dict[str, str]:
    """Package spec -> its vendored code, in load order."""
    return {p.spec: read_asset(p, folder) for p in packages}


@dataclass(frozen=True)
class PageFile:
    """One of the report page's own front-end files: its name in :data:`ASSETS` and its SHA-256
    (hex)."""

    file: str
    sha256: str


PAGE_FILES = {
    "skeleton": PageFile("report.html", "8f23eb31db3e2112788fd15fd52d059de268ee1b011283ef7019fbb57a16b015"),
    "style": PageFile("report.css", "fa3f57bff23a75e21699f9fec07cc60d14746083b17cb32a129e18b305ba6db5"),
    "app": PageFile("report.js", "1a00926af73b980ac08a435aeaafc808f3366675ba11504613c3a044bb285c30"),
}
"""Part of ``metrics/report.html`` -> its file. ``skeleton``: the page's HTML, with the
placeholders ``{style}``, ``{libraries}``, ``{data}`` and ``{app}`` that
``html.page`` fills; ``style``: the style sheet; ``app``: the script that draws every section
from the page's JSON blob. After editing one on purpose, put its new ``sha256sum`` here."""


def read_page_file(part: PageFile, folder: Path = ASSETS) -> str:
    """The text of ``part``. A missing file, or one whose SHA-256 is not the pinned one, raises
    one UserError saying how to restore it or pin the edit."""
    path = folder / part.file
    restore = f"restore it from git (`git checkout -- {path}`)"
    return _read_pinned(path, part.sha256, missing=f"no report page file {path}: {restore}",
                        wrong=f"report page file {path.name} {{found}}: {restore}, or, if it was edited on purpose, "
                              f"pin its new SHA-256 (`sha256sum {path}`) in PAGE_FILES of "
                              "rag_ablation/evaluation/report/html_assets.py")


def read_page_files(files: Mapping[str, PageFile] = PAGE_FILES, folder: Path = ASSETS) -> dict[str, str]:
    """Part -> the text of its file (:func:`read_page_file`)."""
    return {name: read_page_file(f, folder) for name, f in files.items()}


def script_safe(code: str) -> str:
    """``code`` with ``</script`` and ``<!--`` written ``<\\/script`` and ``<\\!--``: the same
    JavaScript, and the HTML parser can no longer end the element early."""
    return code.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def inline_script(name: str, code: str, indent: str = "    ") -> str:
    """``code`` in a ``<script>`` element headed by a ``/* name */`` comment (:func:`script_safe`)."""
    return f"{indent}<script>/* {name} */\n{script_safe(code)}\n{indent}</script>"
