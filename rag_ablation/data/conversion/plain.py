"""Markdown and plain text: the file's UTF-8 text exactly as it is.

No tidying, unlike every other converter: a span copied from the file matches the text the
pipeline reads, and the offsets of the example data's chunks never move. (Span labels still
compare in the match form, ``rag_ablation.data.text.match_text``, which cleans both sides.)"""
from __future__ import annotations

from rag_ablation.data.conversion.converted import ConversionFailed, Converted

CONVERTER = "text"


def convert_text(data: bytes) -> Converted:
    """``data`` decoded as UTF-8, unchanged. Not UTF-8: ``damaged`` naming the first bad byte's
    offset; whitespace only: ``empty``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConversionFailed("damaged", f"not UTF-8 ({e.reason} at byte {e.start}); re-save it as UTF-8") from e
    if not text.strip():
        raise ConversionFailed("empty", "empty document; remove it or add text")
    return Converted(text, (), CONVERTER)
