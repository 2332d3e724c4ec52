"""DOCX to Markdown with pandoc: paragraphs, headings, pipe tables (merged cells as the text
once and empty cells beside it), links, and footnotes (``[^1]`` with the note text at the end).

Chosen by measurement (``benchmarks/conversion_choice.py``): markitdown 0.1.9 failed on every
real DOCX ("Could not find the body element"), mammoth's Markdown escapes punctuation
(``yahoo\\.com``) and turns tables into paragraphs."""
from __future__ import annotations

from rag_ablation.data.conversion import pandoc
from rag_ablation.data.conversion.converted import Converted
from rag_ablation.data.conversion.ooxml import check_container
from rag_ablation.data.conversion.tidy import finish


def converter_name() -> str:
    return pandoc.version()


def convert_docx(data: bytes) -> Converted:
    """One DOCX as Markdown (no pages). Pictures give no text. Not a zip archive or
    unreadable: ``damaged``; password-protected: ``encrypted``; no text: ``empty``."""
    check_container(data, "DOCX")
    return finish(pandoc.to_markdown(data, "docx", "DOCX"), converter_name(), "DOCX")
