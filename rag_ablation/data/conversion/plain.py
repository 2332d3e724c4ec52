"""Markdown and plain text: the file's UTF-8 text as it is (then the common tidying)."""
from __future__ import annotations

from rag_ablation.data.conversion.converted import ConversionFailed, Converted
from rag_ablation.data.conversion.tidy import finish

CONVERTER = "text"


def convert_text(data: bytes) -> Converted:
    """``data`` decoded as UTF-8 (a leading byte-order mark dropped by ``clean``), unchanged
    but for the tidying every converter does (``clean``, trailing whitespace and CR of CRLF
    line ends removed, one final newline). Not UTF-8: ``damaged`` naming the first bad byte's
    offset; whitespace only: ``empty``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConversionFailed("damaged", f"not UTF-8 ({e.reason} at byte {e.start}); re-save it as UTF-8") from e
    return finish(text, CONVERTER, "text file")
