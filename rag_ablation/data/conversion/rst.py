"""reStructuredText to Markdown with pandoc's ``rst`` reader, without Sphinx.

Directives pandoc does not know (``.. tabs::``, ``.. autoclass:: Flask``) keep their argument
and content as text without the ``<div>`` wrapper; a directive of a Sphinx domain
(``.. py:data:: DEBUG``), whose argument pandoc would drop, is renamed first
(:func:`undomain`). Sphinx roles show their title (``:attr:`~flask.Flask.debug``` ->
```debug```)."""
from __future__ import annotations

import re

from rag_ablation.data.conversion import pandoc
from rag_ablation.data.conversion.converted import ConversionFailed, Converted
from rag_ablation.data.conversion.tidy import finish

_DOMAIN_DIRECTIVE = re.compile(r"^([ \t]*\.\.[ \t]+)([A-Za-z][\w-]*):([A-Za-z][\w-]*::)", re.MULTILINE)


def undomain(source: str) -> str:
    """``.. py:data:: DEBUG`` -> ``.. py-data:: DEBUG``: pandoc reads a domain directive
    (``domain:name::``) as a block quote and loses its argument (the config key, the function
    signature), while an unknown plain directive keeps it as a paragraph. Only directive lines
    change; roles such as ``:py:func:`` are left alone."""
    return _DOMAIN_DIRECTIVE.sub(r"\1\2-\3", source)


def converter_name() -> str:
    return pandoc.version()


def convert_rst(data: bytes) -> Converted:
    """One RST file (UTF-8) as Markdown (no pages). Not UTF-8: ``damaged``; pandoc fails:
    ``damaged``; no text: ``empty``."""
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConversionFailed("damaged", f"not UTF-8 ({e.reason} at byte {e.start}); re-save it as UTF-8") from e
    return finish(pandoc.to_markdown(undomain(source).encode("utf-8"), "rst", "RST"), converter_name(), "RST")
