"""What converting one file gives (:class:`Converted`, :class:`Page`) and how it fails
(:class:`ConversionFailed` with one of :data:`KINDS`)."""
from __future__ import annotations

from dataclasses import dataclass

KINDS = ("encrypted", "damaged", "no_text_layer", "empty", "unsupported")
"""Why a file gives no text: ``encrypted`` (does not open without a password), ``damaged``
(not the format its suffix says, truncated, or not UTF-8 where UTF-8 is required),
``no_text_layer`` (a PDF with pages but no text: scanned or image-only), ``empty`` (the file
converts to nothing but whitespace), ``unsupported`` (a suffix no converter handles)."""


@dataclass(frozen=True)
class Page:
    """Where one PDF page or PPTX slide begins in :attr:`Converted.text`.

    ``start`` is a character offset into the text; the page runs to the next page's start (the
    last one to the end of the text). A page without text starts where the next page with text
    starts (at ``len(text)`` when no page with text follows), so starts never decrease.
    ``label`` is the 1-based physical page number or slide number as a string: ``"1"``,
    ``"2"``, ... (not the PDF's printed page label such as ``"iii"``)."""

    start: int
    label: str


@dataclass(frozen=True)
class Converted:
    """One file as the Markdown text the pipeline chunks, labels and shows.

    ``text`` is never empty nor whitespace only. But for Markdown and plain text, kept exactly as
    they are (``plain``), it has no trailing whitespace on any line and ends with exactly one
    ``"\\n"``. ``pages`` holds one :class:`Page` per PDF page or PPTX
    slide in order, and is empty for formats without pages (DOCX, HTML, RST, Markdown, plain
    text). ``converter`` names what converted it with its version, e.g.
    ``"pdfminer.six 20260107"``, ``"pandoc 3.9"``, ``"python-pptx 1.0.2"``, or ``"text"``."""

    text: str
    pages: tuple[Page, ...]
    converter: str


class ConversionFailed(Exception):
    """A file that gives no text. ``kind`` is one of :data:`KINDS`; ``detail`` says what was
    found and what to do, without the file's path (the caller adds it)."""

    def __init__(self, kind: str, detail: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown conversion failure kind {kind!r}; expected one of: {', '.join(KINDS)}")
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
