"""The workbench's page: three files of the package in ``static/`` beside this module
(``index.html``, its script ``app.js`` and its style ``app.css``), read once when the app is made
and served by the app itself (no CDN, nothing fetched from elsewhere). The page takes no data
from the server but through the JSON API; nothing is substituted into its files.

The script inserts every text from the corpus, the questions and the server with
``textContent`` (never ``innerHTML``), so a passage holding ``<script>`` is shown as text; a
span kept marked in its passage is a ``<mark>`` element holding text, between text nodes. The
label-queries view names no retrieval config anywhere (its pool is config-blind). The drafts
view shows the model's draft beside its passage and saves a verdict per draft. The grade view
has a script of its own, ``grade.js``, loaded after ``app.js`` and using its helpers.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
"""The folder of the page's files (a built wheel carries it: pyproject's package-data)."""

FILES: dict[str, tuple[str, str]] = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
    "/grade.js": ("grade.js", "text/javascript; charset=utf-8"),
}
"""Each URL path of the page: (its file in ``STATIC``, the media type it is served with)."""


@dataclass(frozen=True)
class Asset:
    """One file of the page as served: its bytes, exactly as in the file, and its media type."""

    body: bytes
    media_type: str


def read_assets(folder: Path = STATIC) -> dict[str, Asset]:
    """The page's files (``FILES``) read from ``folder``, by URL path; a missing file raises
    ``FileNotFoundError`` (a broken install) when the app is made, not on the first request."""
    return {path: Asset((folder / name).read_bytes(), media_type) for path, (name, media_type) in FILES.items()}
