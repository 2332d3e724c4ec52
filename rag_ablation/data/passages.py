"""Passages for writing questions: the chapter's sampling method, with the standard library only.

A *passage* here is a question-writing unit, not a retrieval chunk: a markdown document is cut
at its headings into sections, and each section's blank-line-separated blocks (a fenced code
block counts as one block) are merged greedily while the passage stays within ``budget``
characters (default ``PASSAGE_BUDGET``). A single block longer than the budget is a passage of
its own.

Sampling (``sample_passages``) shuffles each track's passages with a fixed seed and walks the
shuffled order, skipping a passage that is shorter than ``min_chars`` or mostly code, table or
markup, and taking the next one, until ``per_track`` are taken (``per_track`` and ``seed``
have no default here: the workbench passes ``workbench.per_track`` and ``workbench.seed``, whose
defaults are ``rag_ablation.core.config.WorkbenchConfig``'s).
"""
from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_ablation.data.corpus import Document, load_corpus

PASSAGE_BUDGET = 800
"""The most characters a question-writing passage holds (the chapter's budget), unless one
block alone is longer."""

_HEADING = re.compile(r"^#{1,6}\s")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Passage:
    """A span of a source document: ``text == source[start:end]``."""

    doc: str  # path relative to the corpus root, with forward slashes
    track: str  # the document's top-level folder
    start: int
    end: int
    text: str


def _blocks(text: str) -> list[tuple[int, int, bool]]:
    """Split ``text`` into (start, end, is_heading) blocks: blank-line paragraphs, fenced code
    blocks kept whole, heading lines on their own."""
    blocks: list[tuple[int, int, bool]] = []
    pos = 0
    cur_start: int | None = None
    cur_end = 0
    in_fence = False
    for line in text.splitlines(keepends=True):
        line_start, pos = pos, pos + len(line)
        stripped = line.strip()
        if _FENCE.match(line):
            in_fence = not in_fence
        if not in_fence and not _FENCE.match(line) and _HEADING.match(line):
            if cur_start is not None:
                blocks.append((cur_start, cur_end, False))
                cur_start = None
            blocks.append((line_start, line_start + len(line.rstrip("\n")), True))
            continue
        if not stripped and not in_fence:
            if cur_start is not None:
                blocks.append((cur_start, cur_end, False))
                cur_start = None
            continue
        if cur_start is None:
            cur_start = line_start
        cur_end = line_start + len(line.rstrip("\n"))
    if cur_start is not None:
        blocks.append((cur_start, cur_end, False))
    return blocks


def split_passages(text: str, doc: str, track: str, budget: int = PASSAGE_BUDGET) -> list[Passage]:
    """Cut one document into passages (see the module docstring). Headings end a passage and
    are not part of any passage."""
    out: list[Passage] = []
    start: int | None = None
    end = 0

    def flush() -> None:
        nonlocal start
        if start is not None:
            out.append(Passage(doc, track, start, end, text[start:end]))
            start = None

    for b_start, b_end, is_heading in _blocks(text):
        if is_heading:
            flush()
            continue
        if start is not None and b_end - start > budget:
            flush()
        if start is None:
            start = b_start
        end = b_end
    flush()
    return out


def markup_share(text: str) -> float:
    """Share of the passage's non-blank characters on lines that are code (inside or opening a
    fence), table rows (starting with ``|``), headings or HTML tags. 0.0 for an empty passage."""
    total = marked = 0
    in_fence = False
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        total += len(s)
        fence = bool(_FENCE.match(line))
        if fence:
            in_fence = not in_fence
        if fence or in_fence or s.startswith("|") or _HEADING.match(s) or s.startswith("<"):
            marked += len(s)
    return marked / total if total else 0.0


def sample_passages(
    corpus: Path | Sequence[Document],
    *,
    per_track: int,
    seed: int,
    budget: int = PASSAGE_BUDGET,
    min_chars: int = 400,
    max_markup: float = 0.5,
) -> tuple[list[Passage], dict[str, int]]:
    """Sample ``per_track`` passages per track; returns them and the number skipped per track.

    A passage is eligible when ``len(text) >= min_chars`` (inclusive) and
    ``markup_share(text) <= max_markup`` (inclusive). Raises ``ValueError`` if a track has fewer
    eligible passages than ``per_track``.
    """
    by_track: dict[str, list[Passage]] = {}
    for d in (load_corpus(corpus) if isinstance(corpus, Path) else corpus):
        by_track.setdefault(d.track, []).extend(split_passages(d.text, d.doc, d.track, budget))
    taken: list[Passage] = []
    skipped: dict[str, int] = {}
    for track in sorted(by_track):
        order = list(by_track[track])
        random.Random(f"{seed}:{track}").shuffle(order)
        chosen: list[Passage] = []
        skipped[track] = 0
        for p in order:
            if len(chosen) == per_track:
                break
            if len(p.text) < min_chars or markup_share(p.text) > max_markup:
                skipped[track] += 1
                continue
            chosen.append(p)
        if len(chosen) < per_track:
            raise ValueError(
                f"track {track!r} has only {len(chosen)} eligible passages, "
                f"expected {per_track}: add text to the track or lower per_track"
            )
        taken.extend(chosen)
    return taken, skipped
