"""Where a document's text came from: its file's format, the converter, the content hash, and
where each page (PDF) or slide (PPTX) begins in the text.

The ``dataset`` stage writes one :class:`Provenance` per document to ``documents.jsonl``
(``rag_ablation.datasets.registry``); the report and the workbench read it to say where a passage
lies (:func:`where_in`: "page 12 of policies/retention.pdf").
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_ablation.data.conversion.converted import Page


@dataclass(frozen=True)
class Provenance:
    """Where a document's text came from: its file's format (suffix without the dot), the
    converter (name and version), the SHA-256 of the file's bytes, and where each page (PDF) or
    slide (PPTX) begins in the text (empty for formats without pages)."""

    doc: str
    format: str
    converter: str
    sha256: str
    pages: tuple[Page, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"doc": self.doc, "format": self.format, "converter": self.converter, "sha256": self.sha256,
                "pages": [[p.start, p.label] for p in self.pages]}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Provenance:
        return cls(obj["doc"], obj["format"], obj["converter"], obj["sha256"],
                   tuple(Page(int(s), str(label)) for s, label in obj.get("pages") or ()))


def page_of(pages: Sequence[Page], offset: int) -> str | None:
    """The label of the page (or slide) holding character ``offset``: the last page starting at
    or before it; None without pages."""
    label = None
    for p in pages:
        if p.start > offset:
            break
        label = p.label
    return label


PAGE_WORD = {"pdf": "page", "pptx": "slide"}


def where_in(doc: str, offset: int, provenance: Provenance | None, end: int | None = None) -> str:
    """Where the text from character ``offset`` (to ``end``, exclusive, when given) of ``doc``
    lies, in words: ``page 12 of policies/retention.pdf``, ``pages 12-13 of ...`` when it runs
    onto later pages, ``slide 3 of talks/intro.pptx`` for a PPTX; just ``doc`` for a document
    without pages."""
    if provenance is None or not provenance.pages:
        return doc
    first = page_of(provenance.pages, offset)
    if first is None:
        return doc
    last = page_of(provenance.pages, max(offset, end - 1)) if end is not None else first
    word = PAGE_WORD.get(provenance.format, "page")
    return f"{word} {first} of {doc}" if last == first else f"{word}s {first}-{last} of {doc}"


def read_provenance(path: Path) -> dict[str, Provenance]:
    """``documents.jsonl`` as the dataset stage writes it: doc -> provenance ({} when the file
    is absent or holds no record)."""
    if not Path(path).is_file():
        return {}
    with closing(open(path, encoding="utf-8")) as fh:
        return {p.doc: p for p in (Provenance.from_json(json.loads(line)) for line in fh if line.strip())}
