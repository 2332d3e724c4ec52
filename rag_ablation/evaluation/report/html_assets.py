"""The chart libraries every offline page inlines: vega, vega-lite and vega-embed, vendored.

One copy in the project, in ``assets/`` beside this module (with their licenses and a README):
the browser build of each npm package at the version of :data:`PACKAGES`, checked against its
SHA-256 whenever it is read. ``metrics/report.html`` (:mod:`rag_ablation.evaluation.report.html`)
and the ``dvc plots`` page template (``rag_ablation.commands.plots_template``) both read them
here, so no page fetches anything and neither needs npm or a network to be built.
:func:`inline_script` puts code into a ``<script>`` element so the HTML parser cannot end it
early.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from rag_ablation.core.errors import InvalidData, MissingInput

ASSETS = Path(__file__).resolve().parent / "assets"
"""The folder holding the vendored files."""


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


def read_asset(package: Package, folder: Path = ASSETS) -> str:
    """The vendored build of ``package`` as text. A missing file, or one whose SHA-256 is not
    the pinned one (edited, truncated, another version), raises one UserError."""
    path = folder / package.file
    if not path.is_file():
        raise MissingInput(f"no vendored chart library {path}: restore it from git (`git checkout -- {path}`)")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != package.sha256:
        raise InvalidData(f"vendored {path.name} has SHA-256 {digest[:12]}..., not the pinned {package.sha256[:12]}... "
                          f"of {package.spec}: restore it from git, or update PACKAGES after vendoring a new version")
    return data.decode("utf-8")


def read_assets(packages: tuple[Package, ...] = PACKAGES, folder: Path = ASSETS) -> dict[str, str]:
    """Package spec -> its vendored code, in load order."""
    return {p.spec: read_asset(p, folder) for p in packages}


def script_safe(code: str) -> str:
    """``code`` with ``</script`` and ``<!--`` written ``<\\/script`` and ``<\\!--``: the same
    JavaScript, and the HTML parser can no longer end the element early."""
    return code.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def inline_script(name: str, code: str, indent: str = "    ") -> str:
    """``code`` in a ``<script>`` element headed by a ``/* name */`` comment (:func:`script_safe`)."""
    return f"{indent}<script>/* {name} */\n{script_safe(code)}\n{indent}</script>"
