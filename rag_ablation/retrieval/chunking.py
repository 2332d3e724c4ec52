"""Chunkers: cut markdown or plain-text documents into retrieval chunks that remember where they
came from.

Every chunker works section by section: a document is cut at its markdown headings (``#`` lines
outside fenced code), and no chunk crosses a section boundary. A section's text includes its own
heading line. Each chunk records the source region it covers (``start``/``end`` offsets into the
document, end exclusive, with surrounding whitespace trimmed) and its heading path
(document title, then the ``##`` and ``###`` headings in force).

Two options change the indexed text without changing the source region:

- ``heading_line``: the chunk is prefixed with one line ``Title > Section > Subsection``. The line
  is stored apart (``Chunk.heading``) so span labels never count it. A plain-text document
  (``.txt``) has no markdown title, so it gets one (``plain_text_title``): its first line if that
  looks like a title (``TITLE_MAX_CHARS`` characters at most, not ending with a period), else
  its file name stem; the title heads the heading path of every chunk of the document (markdown
  ``#`` lines in it still cut sections, below the title).
- ``table_headers``: when a markdown table is split across chunks, every piece after the first
  starts with the table's header and separator rows again.

Chunkers are looked up by name in ``CHUNKERS``; ``chunk_document`` dispatches: ``chars``
(recursive splitting at paragraphs, lines, sentences, words), ``fixed`` (plain character windows,
``fixed_regions``) and ``sentences`` (pysbd sentences merged to the size).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from typing_extensions import Unpack

from rag_ablation.data.chunks import Chunk
from rag_ablation.core.config import ChunkingConfig
from rag_ablation.core.errors import lookup

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Section:
    start: int
    end: int
    path: tuple[str, ...]  # heading texts from level 1 down, title first


def sections(text: str) -> list[Section]:
    """Cut ``text`` at markdown heading lines outside fenced code. Text before the first heading
    is a section with an empty path. A heading with no text of its own before the next heading
    (a title straight above its first ``##``) joins the next section, which then starts at
    that heading and carries the deeper path. Whitespace-only sections are dropped."""
    marks: list[tuple[int, int, str]] = []  # (offset, level, title)
    pos = 0
    in_fence = False
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            m = _HEADING.match(line.rstrip("\n"))
            if m:
                marks.append((pos, len(m.group(1)), m.group(2)))
        pos += len(line)
    out: list[Section] = []
    stack: list[tuple[int, str]] = []
    bounds = [(0, 0, "")] + marks if not marks or marks[0][0] != 0 else marks
    pending: int | None = None  # start of heading-only sections waiting for a body
    for i, (off, level, title) in enumerate(bounds):
        if level:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
        end = bounds[i + 1][0] if i + 1 < len(bounds) else len(text)
        body = text[off:end].split("\n", 1)[1] if level and "\n" in text[off:end] else ("" if level else text[off:end])
        start = off if pending is None else pending
        if not body.strip() and i + 1 < len(bounds):
            pending = start
            continue
        pending = None
        if text[start:end].strip():
            out.append(Section(start, end, tuple(t for _, t in stack)))
    return out


# --- recursive character splitting -------------------------------------------------------

_SEPARATORS = [
    re.compile(r"\n[ \t]*\n"),  # paragraphs
    re.compile(r"\n"),  # lines
    re.compile(r"(?<=[.!?])[ \t]+"),  # sentences
    re.compile(r"[ \t]+"),  # words
]


def _split_on(text: str, start: int, end: int, sep: re.Pattern[str]) -> list[tuple[int, int]]:
    """Tile [start, end) into pieces, each ending just after one separator match."""
    pieces = []
    cur = start
    for m in sep.finditer(text, start, end):
        if m.end() > cur and m.start() > cur:
            pieces.append((cur, m.end()))
            cur = m.end()
    if cur < end:
        pieces.append((cur, end))
    return pieces


def _atoms(text: str, start: int, end: int, size: int, level: int = 0) -> list[tuple[int, int]]:
    """Pieces of [start, end) no longer than ``size``, cut at the coarsest separator that
    works; a run with no separator at all is cut every ``size`` characters."""
    if end - start <= size:
        return [(start, end)]
    if level == len(_SEPARATORS):
        return [(s, min(s + size, end)) for s in range(start, end, size)]
    pieces = _split_on(text, start, end, _SEPARATORS[level])
    if len(pieces) == 1:
        return _atoms(text, start, end, size, level + 1)
    out: list[tuple[int, int]] = []
    for s, e in pieces:
        out.extend([(s, e)] if e - s <= size else _atoms(text, s, e, size, level + 1))
    return out


def _merge(atoms: list[tuple[int, int]], size: int, overlap: int) -> list[tuple[int, int]]:
    """Greedily join consecutive atoms while a chunk spans at most ``size`` characters. A new
    chunk starts with the trailing atoms of the previous one that fit in ``overlap``
    characters (and leave room for at least one new atom)."""
    chunks: list[tuple[int, int]] = []
    i = 0
    while i < len(atoms):
        j = i
        while j + 1 < len(atoms) and atoms[j + 1][1] - atoms[i][0] <= size:
            j += 1
        chunks.append((atoms[i][0], atoms[j][1]))
        if j + 1 >= len(atoms):
            break
        nxt = j + 1
        back = nxt
        while (
            back - 1 > i
            and atoms[nxt - 1][1] - atoms[back - 1][0] <= overlap
            and atoms[nxt][1] - atoms[back - 1][0] <= size
        ):
            back -= 1
        i = back
    return chunks


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def char_regions(text: str, start: int, end: int, *, size: int, overlap: int) -> list[tuple[int, int]]:
    """Recursive character splitting of text[start:end]: paragraphs, then lines, then
    sentences, then words, then hard cuts, merged to at most ``size`` characters with
    ``overlap`` characters carried over. Regions are trimmed of surrounding whitespace and
    whitespace-only regions are dropped."""
    if size <= 0:
        raise ValueError(f"chunk size must be positive, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"overlap must be in [0, size), got overlap={overlap} with size={size}")
    regions = [_trim(text, s, e) for s, e in _merge(_atoms(text, start, end, size), size, overlap)]
    return [(s, e) for s, e in regions if e > s]


# --- fixed character windows ----------------------------------------------------------


def fixed_regions(text: str, start: int, end: int, *, size: int, overlap: int) -> list[tuple[int, int]]:
    """Plain character windows of text[start:end], blind to words and lines: window ``n`` is
    ``[start + n*step, min(start + n*step + size, end))`` with ``step = size - overlap``, for every
    ``n`` whose window start lies before ``end - overlap`` (at least one window). So the last
    window never lies wholly inside the previous one's overlap. Windows are not trimmed (a window
    may begin or end mid-word or on whitespace); a whitespace-only window is dropped.

    On a document without headings (one section) this is exactly the anchors' chunking of
    ``shared/notes/anchors-covidqa.md``: ``text[i:i + size] for i in range(0, max(len(text) -
    overlap, 1), size - overlap)`` (2,904 chunks at 1000/200 and 5,783 at 500/100 on COVID-QA).
    """
    if size <= 0:
        raise ValueError(f"chunk size must be positive, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"overlap must be in [0, size), got overlap={overlap} with size={size}")
    step = size - overlap
    regions = [(i, min(i + size, end)) for i in range(start, max(end - overlap, start + 1), step)]
    return [(s, e) for s, e in regions if text[s:e].strip()]


# --- sentence chunking --------------------------------------------------------------------

_SEGMENTER = None


def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence boundaries in text[start:end] from pysbd (rule based, offline), as absolute
    offsets. Blank lines always end a sentence, so markdown blocks do not run together."""
    global _SEGMENTER
    if _SEGMENTER is None:
        import pysbd

        _SEGMENTER = pysbd.Segmenter(language="en", clean=False, char_span=True)
    out: list[tuple[int, int]] = []
    for b_start, b_end in _split_on(text, start, end, _SEPARATORS[0]):
        block = text[b_start:b_end]
        if not block.strip():
            continue
        for span in _SEGMENTER.segment(block):
            s, e = _trim(text, b_start + span.start, b_start + span.end)
            if e > s:
                out.append((s, e))
    return out


def sentence_regions(
    text: str, start: int, end: int, *, size: int, overlap_sentences: int
) -> list[tuple[int, int]]:
    """Sentences merged greedily while a chunk spans at most ``size`` characters; a sentence
    longer than ``size`` is cut by ``char_regions``. Each new chunk repeats the last
    ``overlap_sentences`` sentences of the previous one when they leave room for a new one."""
    if overlap_sentences < 0:
        raise ValueError(f"overlap_sentences must be >= 0, got {overlap_sentences}")
    units: list[tuple[int, int]] = []
    for s, e in sentence_spans(text, start, end):
        units.extend([(s, e)] if e - s <= size else char_regions(text, s, e, size=size, overlap=0))
    chunks: list[tuple[int, int]] = []
    i = 0
    while i < len(units):
        j = i
        while j + 1 < len(units) and units[j + 1][1] - units[i][0] <= size:
            j += 1
        chunks.append((units[i][0], units[j][1]))
        if j + 1 >= len(units):
            break
        back = max(i + 1, j + 1 - overlap_sentences)
        while back <= j and units[j + 1][1] - units[back][0] > size:
            back += 1
        i = back
    return chunks


# --- options: heading line and table headers ----------------------------------------------


TITLE_MAX_CHARS = 80


def plain_text_title(text: str, doc: str) -> str:
    """The title of a plain-text document: its first non-blank line (stripped) when that looks
    like a title, i.e. has at most ``TITLE_MAX_CHARS`` characters and does not end with a
    period; otherwise the file name without folder and suffix (``runbooks/disk-full.txt`` ->
    ``disk-full``)."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first and len(first) <= TITLE_MAX_CHARS and not first.endswith("."):
        return first
    name = doc.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def heading_line(title_path: tuple[str, ...]) -> str:
    """``"Title > Section > Subsection"``; empty when there is no heading at all."""
    return " > ".join(p for p in title_path if p)


def table_header_prefix(text: str, start: int) -> str:
    """If ``start`` falls on a data row of a markdown table (a run of ``|`` lines whose second
    line is a ``|---|`` separator), return that table's header and separator rows followed by
    a newline; otherwise "". Called for every chunk but the table's first piece."""
    line_start = text.rfind("\n", 0, start) + 1
    if not text[line_start:].lstrip().startswith("|"):
        return ""
    # walk up to the first line of this run of table lines
    first = line_start
    while first > 0:
        prev = text.rfind("\n", 0, first - 1) + 1
        if not text[prev:first].lstrip().startswith("|"):
            break
        first = prev
    lines = text[first:].split("\n", 2)
    if len(lines) < 3 or not re.match(r"^\s*\|?\s*:?-{3,}", lines[1]):
        return ""
    header_end = first + len(lines[0]) + 1 + len(lines[1])
    if start <= header_end:
        return ""
    return lines[0] + "\n" + lines[1] + "\n"


# --- the registry -------------------------------------------------------------------------

RegionFn = Callable[..., list[tuple[int, int]]]


def _chars(text: str, start: int, end: int, *, size: int, overlap: int, **_: object) -> list[tuple[int, int]]:
    return char_regions(text, start, end, size=size, overlap=overlap)


def _sentences(
    text: str, start: int, end: int, *, size: int, overlap_sentences: int = 0, **_: object
) -> list[tuple[int, int]]:
    return sentence_regions(text, start, end, size=size, overlap_sentences=overlap_sentences)


def _fixed(text: str, start: int, end: int, *, size: int, overlap: int, **_: object) -> list[tuple[int, int]]:
    return fixed_regions(text, start, end, size=size, overlap=overlap)


CHUNKERS: dict[str, RegionFn] = {"chars": _chars, "fixed": _fixed, "sentences": _sentences}


def get_chunker(name: str) -> RegionFn:
    """The region function registered as ``name``; an unknown name lists the valid ones."""
    return lookup(CHUNKERS, name, "chunking method")


def chunk_document(
    text: str,
    *,
    doc: str,
    track: str,
    method: str,
    size: int,
    overlap: int = 0,
    overlap_sentences: int = 0,
    heading_line_on: bool = False,
    table_headers: bool = False,
) -> list[Chunk]:
    """Chunk one document with the named method, section by section (module docstring). A
    ``.txt`` document's heading paths start with its ``plain_text_title``."""
    regions_of = get_chunker(method)
    title = (plain_text_title(text, doc),) if doc.endswith(".txt") else ()
    chunks: list[Chunk] = []
    for sec in sections(text):
        path = title + sec.path
        for s, e in regions_of(
            text, sec.start, sec.end, size=size, overlap=overlap, overlap_sentences=overlap_sentences
        ):
            body = text[s:e]
            if table_headers:
                body = table_header_prefix(text, s) + body
            chunks.append(
                Chunk(
                    id=f"{doc}#{len(chunks)}",
                    doc=doc,
                    track=track,
                    start=s,
                    end=e,
                    heading_path=path,
                    heading=heading_line(path) if heading_line_on else "",
                    body=body,
                )
            )
    return chunks


def chunk_corpus(documents: Iterable[tuple[str, str, str]], **options: Unpack[ChunkOptions]) -> list[Chunk]:
    """Chunk every (doc, track, text) with the same options (``chunk_document``'s keyword
    arguments, typed by :class:`ChunkOptions`); ids stay unique across docs."""
    out: list[Chunk] = []
    for doc, track, text in documents:
        out.extend(chunk_document(text, doc=doc, track=track, **options))
    return out


class _RequiredChunkOptions(TypedDict):
    method: str
    size: int


class ChunkOptions(_RequiredChunkOptions, total=False):
    """The keyword arguments of ``chunk_document`` and ``chunk_corpus`` for one chunking:
    ``method`` and ``size`` always, the others where they differ from ``chunk_document``'s
    defaults."""

    overlap: int
    overlap_sentences: int
    heading_line_on: bool
    table_headers: bool


def chunk_options(cfg: ChunkingConfig) -> ChunkOptions:
    """``chunk_document`` (and ``chunk_corpus``) keyword arguments for a checked
    ``chunkings.<name>`` entry: ``chunk_corpus(documents, **chunk_options(cfg))``."""
    return {"method": cfg.method, "size": cfg.size, "overlap": cfg.overlap,
            "overlap_sentences": cfg.overlap_sentences, "heading_line_on": cfg.heading_line,
            "table_headers": cfg.table_headers}
