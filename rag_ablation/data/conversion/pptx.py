"""PPTX to Markdown with python-pptx, one :class:`Page` per slide (label = slide number).

A slide gives, in the order of its shapes: the title as a ``#`` heading, the text of text boxes
and placeholders (one line per paragraph), tables as pipe tables, charts as their title and a
pipe table of their data, shapes inside groups likewise; then its speaker notes under
``### Notes``. Pictures and other graphics give no text (no image Markdown).

Chosen over markitdown's PptxConverter by measurement (``benchmarks/conversion_choice.py``):
it writes ``<!-- Slide number: N -->`` comments and ``![...](Picture.jpg)`` lines that would
have to be removed again, and its tables go through HTML and markdownify, which escapes
punctuation."""
from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from importlib.metadata import version
from typing import Any

from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

from rag_ablation.data.conversion.converted import ConversionFailed, Converted
from rag_ablation.data.conversion.ooxml import check_container
from rag_ablation.data.conversion.tidy import finish, join_pages

TITLE_TYPES = (PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE)


def converter_name() -> str:
    """``"python-pptx <version>"``, read from the installed package."""
    return f"python-pptx {version('python-pptx')}"


def _one_line(text: str) -> str:
    """A cell or title on one line: line breaks (``\\n``, PowerPoint's ``\\v``) become spaces."""
    return " ".join(text.replace("\v", "\n").split())


def pipe_table(rows: list[list[str]]) -> str:
    """Rows of cell texts as a GitHub pipe table, the first row as its header; ``|`` in a cell
    is escaped as ``\\|`` (the only escape), line breaks become spaces. Rows shorter than the
    widest are padded with empty cells. ``""`` for no rows."""
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    lines = []
    for i, row in enumerate(rows):
        cells = [_one_line(c).replace("|", "\\|") for c in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if i == 0:
            lines.append("|" + "---|" * width)
    return "\n".join(lines)


def _table(shape: Any) -> str:
    rows = [[("" if cell.is_spanned else cell.text) for cell in row.cells] for row in shape.table.rows]
    return pipe_table(rows)


def _chart(shape: Any) -> str:
    """A chart's title, then its categories and series values as a pipe table."""
    chart = shape.chart
    parts = []
    if chart.has_title and chart.chart_title.has_text_frame and chart.chart_title.text_frame.text.strip():
        parts.append(_one_line(chart.chart_title.text_frame.text))
    for plot in chart.plots:
        categories = [str(c) for c in plot.categories]
        series = list(plot.series)
        if not series:
            continue
        rows = [[""] + [s.name or "" for s in series]]
        for j, cat in enumerate(categories or [str(k + 1) for k in range(len(series[0].values))]):
            rows.append([cat] + ["" if j >= len(s.values) or s.values[j] is None else f"{s.values[j]:g}" for s in series])
        parts.append(pipe_table(rows))
    return "\n\n".join(parts)


def _shapes(shapes: Iterable[Any]) -> Iterator[Any]:
    """Shapes in document order, the members of group shapes in place of the group."""
    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _is_title(shape: Any) -> bool:
    return bool(shape.is_placeholder and shape.placeholder_format.type in TITLE_TYPES)


def shape_text(shape: Any) -> str:
    """One shape's Markdown: a title as ``# title``, a text frame's paragraphs one per line,
    a table or chart as pipe tables; ``""`` for pictures and anything without text."""
    if getattr(shape, "has_table", False) and shape.has_table:
        return _table(shape)
    if getattr(shape, "has_chart", False) and shape.has_chart:
        return _chart(shape)
    if shape.has_text_frame and shape.text_frame.text.strip():
        if _is_title(shape):
            return "# " + _one_line(shape.text_frame.text)
        return "\n".join(p.text.replace("\v", "\n") for p in shape.text_frame.paragraphs)
    return ""


def slide_text(slide: Any) -> str:
    """A slide's Markdown: its shapes' texts (:func:`shape_text`) separated by blank lines,
    then ``### Notes`` and the speaker notes when the slide has notes with text."""
    parts = [t for t in (shape_text(s).strip("\n") for s in _shapes(slide.shapes)) if t.strip()]
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        if frame is not None and frame.text.strip():
            parts.append("### Notes\n\n" + frame.text.replace("\v", "\n"))
    return "\n\n".join(parts)


def convert_pptx(data: bytes) -> Converted:
    """One PPTX as Markdown with one :class:`Page` per slide, in slide order, labelled with the
    slide number (a slide without text starts where the next slide with text starts). Not a
    zip archive or unreadable: ``damaged``; password-protected: ``encrypted``; no text on any
    slide nor in any notes: ``empty``."""
    check_container(data, "PPTX")
    try:
        slides = list(Presentation(io.BytesIO(data)).slides)
        texts = [slide_text(s) for s in slides]
    except Exception as e:  # python-pptx on untrusted bytes: a missing part, bad XML, a bad zip
        raise ConversionFailed("damaged", f"damaged PPTX: python-pptx cannot read it ({type(e).__name__}: {e}); "
                                          "open it in PowerPoint or LibreOffice and save it again as PPTX") from e
    text, pages = join_pages(texts)
    return finish(text, converter_name(), "PPTX", pages)
