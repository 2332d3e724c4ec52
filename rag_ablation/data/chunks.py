"""The chunk record shared by every layer, and reading a chunk stage's output.

A chunk is one retrieval unit cut from a document (``rag_ablation.retrieval.chunking`` makes
them). ``text`` is what gets indexed (with the optional heading line); ``body`` is the source
text that span labels match, so the heading line never counts as evidence.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from rag_ablation.core.io import read_jsonl


@dataclass(frozen=True)
class Chunk:
    """One retrieval unit. ``text`` is what gets indexed; ``body`` is what span labels match."""

    id: str  # "<doc>#<n>", n counting from 0 within the document
    doc: str
    track: str
    start: int
    end: int  # exclusive
    heading_path: tuple[str, ...]
    heading: str  # the added heading line, "" when heading_line is off
    body: str  # source text of [start, end), plus repeated table header rows if any

    @property
    def text(self) -> str:
        return f"{self.heading}\n{self.body}" if self.heading else self.body

    def to_json(self) -> dict:
        d = asdict(self)
        d["heading_path"] = list(self.heading_path)
        return d

    @classmethod
    def from_json(cls, d: dict) -> Chunk:
        return cls(**{**d, "heading_path": tuple(d["heading_path"])})


def load_chunks(path: Path) -> list[Chunk]:
    """Chunks from a chunk stage's JSON-lines output."""
    return [Chunk.from_json(d) for d in read_jsonl(path)]
