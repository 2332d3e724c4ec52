"""Which converter handles which file suffix (:data:`CONVERTERS`), and :func:`convert`.

Each converter takes the file's bytes and returns a :class:`Converted` or raises
:class:`ConversionFailed`; none reads the network, a model or any file but its input."""
from __future__ import annotations

from collections.abc import Callable

from rag_ablation.data.conversion import docx, html, pdf, plain, pptx, rst
from rag_ablation.data.conversion.converted import ConversionFailed, Converted

CONVERTERS: dict[str, Callable[[bytes], Converted]] = {
    ".pdf": pdf.convert_pdf,
    ".docx": docx.convert_docx,
    ".pptx": pptx.convert_pptx,
    ".html": html.convert_html,
    ".htm": html.convert_html,
    ".rst": rst.convert_rst,
    ".md": plain.convert_text,
    ".txt": plain.convert_text,
}
"""Converters keyed by lower-case suffix with its dot."""

_NAMES: dict[str, Callable[[], str]] = {
    ".pdf": pdf.converter_name,
    ".docx": docx.converter_name,
    ".pptx": pptx.converter_name,
    ".html": html.converter_name,
    ".htm": html.converter_name,
    ".rst": rst.converter_name,
    ".md": lambda: plain.CONVERTER,
    ".txt": lambda: plain.CONVERTER,
}


def _key(suffix: str) -> str:
    """``suffix`` lower-cased (``.PDF`` -> ``.pdf``); an unknown one raises ``unsupported``
    listing the known suffixes."""
    key = suffix.lower()
    if key not in CONVERTERS:
        shown = repr(suffix) if suffix else "no suffix"
        raise ConversionFailed("unsupported", f"unsupported file type {shown}; convert it to one of "
                                              f"{', '.join(sorted(CONVERTERS))} or leave it out")
    return key


def convert(data: bytes, suffix: str) -> Converted:
    """The file's bytes ``data`` converted by the converter for ``suffix`` (such as ``".pdf"``,
    any case, with its dot). Raises :class:`ConversionFailed`."""
    return CONVERTERS[_key(suffix)](data)


def converter_name(suffix: str) -> str:
    """What :func:`convert` would write into ``Converted.converter`` for ``suffix`` (e.g.
    ``"pandoc 3.9"`` for ``".docx"``), without converting anything: a cache key for the
    caller. An unknown suffix raises ``unsupported`` as :func:`convert` does."""
    return _NAMES[_key(suffix)]()
