"""HTML to Markdown with pandoc: headings, lists, pipe tables, ``<pre>`` blocks as fenced code
kept verbatim, links; scripts, styles and the ``<head>`` give no text, and nothing a page
links to (CSS, images) is fetched.

Chosen over markitdown's HtmlConverter (markdownify) by measurement
(``benchmarks/conversion_choice.py``): markdownify escapes underscores (``PCRE2\\_EXTENDED``),
which breaks exact-span matching."""
from __future__ import annotations

import codecs
import re

from rag_ablation.data.conversion import pandoc
from rag_ablation.data.conversion.converted import Converted
from rag_ablation.data.conversion.tidy import finish

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
SNIFF_BYTES = 4096
FALLBACK = "windows-1252"


def decode_html(data: bytes) -> str:
    """The page as text: a byte-order mark decides, else UTF-8 if the bytes are valid UTF-8,
    else the ``<meta charset>`` / ``content="...; charset=..."`` of the first 4 KB if Python
    knows it, else windows-1252 (undecodable bytes replaced). Never fails."""
    for bom, enc in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            return data.decode(enc, "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    m = _META_CHARSET.search(data[:SNIFF_BYTES])
    enc = FALLBACK
    if m:
        try:
            enc = codecs.lookup(m.group(1).decode("ascii")).name
        except LookupError:
            pass
    return data.decode(enc, "replace")


def converter_name() -> str:
    return pandoc.version()


def convert_html(data: bytes) -> Converted:
    """One HTML page as Markdown (no pages); whatever its encoding (:func:`decode_html`).
    A page without visible text: ``empty``."""
    text = decode_html(data)
    return finish(pandoc.to_markdown(text.encode("utf-8"), "html", "HTML"), converter_name(), "HTML")
