"""Running headers and footers of a paged document: lines repeated at the top or bottom of
many pages (a title, a chapter name, ``Page 3 of 10``, a page number alone), which would
otherwise land in the middle of every chunk that spans a page break."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

EDGE_LINES = 2
"""How many non-empty lines at the top and at the bottom of a page are candidates."""
MIN_PAGES = 3
"""Documents with fewer pages keep every line: two pages cannot tell a header from a repeat."""

_DIGITS = re.compile(r"\d+")
_ROMAN = re.compile(r"[ivxlcdm]+", re.IGNORECASE)


def line_key(line: str) -> str:
    """The form in which lines are compared: whitespace runs collapsed to one space, ends
    stripped, every run of digits replaced by ``0`` (``Page 3 of 10`` and ``Page 12 of 10``
    compare equal), and a line that is only a roman numeral (``iv``) becomes ``0`` too."""
    key = " ".join(line.split())
    if _ROMAN.fullmatch(key):
        return "0"
    return _DIGITS.sub("0", key)


def _edges(lines: Sequence[str]) -> list[int]:
    """Indices of the first and last :data:`EDGE_LINES` non-empty lines (each index once)."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:EDGE_LINES] + filled[-EDGE_LINES:]))


def running_keys(pages: Sequence[str]) -> set[str]:
    """The :func:`line_key` of every line that is among the first or last
    :data:`EDGE_LINES` non-empty lines of at least half of the pages (each page counted once
    per key); empty when there are fewer than :data:`MIN_PAGES` pages."""
    if len(pages) < MIN_PAGES:
        return set()
    seen: Counter[str] = Counter()
    for page in pages:
        lines = page.split("\n")
        seen.update({line_key(lines[i]) for i in _edges(lines)})
    return {key for key, n in seen.items() if 2 * n >= len(pages)}


def drop_running_lines(pages: Sequence[str]) -> list[str]:
    """``pages`` with their running headers and footers removed: a line whose key is in
    :func:`running_keys` is dropped from every page where it is among that page's first or
    last :data:`EDGE_LINES` non-empty lines (the same line elsewhere on a page stays). Pages
    are returned in order, one string per page; other lines are unchanged."""
    keys = running_keys(pages)
    if not keys:
        return list(pages)
    out = []
    for page in pages:
        lines = page.split("\n")
        drop = {i for i in _edges(lines) if line_key(lines[i]) in keys}
        out.append("\n".join(line for i, line in enumerate(lines) if i not in drop))
    return out
