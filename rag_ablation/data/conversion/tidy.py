"""The last step of every converter: the text made uniform (:func:`tidy`), pages joined with
their offsets (:func:`join_pages`), and an empty result refused (:func:`finish`)."""
from __future__ import annotations

from collections.abc import Sequence

from rag_ablation.data.conversion.converted import Converted, ConversionFailed, Page
from rag_ablation.data.conversion.glyphs import clean

PAGE_SEPARATOR = "\n\n"


def tidy(text: str) -> str:
    """``clean`` (ligatures spelled out, invisible characters removed, a word hyphenated at a
    line end joined), then trailing whitespace removed from every line (``\\r`` of CRLF line
    ends included, so lines end in ``\\n`` only), then leading and trailing blank lines
    removed. Leading spaces of the first line stay (an indented code line). No final newline:
    :func:`finish` adds it. Idempotent."""
    lines = [line.rstrip() for line in clean(text).split("\n")]
    return "\n".join(lines).strip("\n")


def join_pages(texts: Sequence[str]) -> tuple[str, tuple[Page, ...]]:
    """Each page's text run through :func:`tidy`, joined with a blank line
    (:data:`PAGE_SEPARATOR`), and one :class:`Page` per text labelled ``"1"``, ``"2"``, ...
    Offsets are those of the tidied text. A page whose text is empty adds no separator and
    starts where the next page with text starts (``len`` of the joined text + 1, the final
    newline's end, when none follows). Returns the text without the final newline."""
    out = ""
    starts: list[int] = []
    for page in texts:
        body = tidy(page)
        if body:
            if out:
                out += PAGE_SEPARATOR
            starts.append(len(out))
            out += body
        else:
            starts.append(-1)  # filled below: the next page with text
    nxt = len(out) + 1
    for i in range(len(starts) - 1, -1, -1):
        if starts[i] < 0:
            starts[i] = nxt
        else:
            nxt = starts[i]
    return out, tuple(Page(start, str(i + 1)) for i, start in enumerate(starts))


def finish(text: str, converter: str, what: str, pages: tuple[Page, ...] = ()) -> Converted:
    """A :class:`Converted` of ``text`` (already :func:`tidy`, or tidied here) ending in one
    ``"\\n"``. ``what`` names the format in the message (``"DOCX"``) when the text is empty or
    whitespace only: :class:`ConversionFailed` kind ``"empty"``."""
    body = tidy(text)
    if not body.strip():
        raise ConversionFailed("empty", f"empty {what}: it converts to no text; add the text or leave the file out")
    return Converted(body + "\n", pages, converter)
