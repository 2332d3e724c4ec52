"""Text helpers shared by every layer: whitespace normalization and the BM25 tokenizers.

Tokenizers (``TOKENIZERS``):

- ``regex`` (default): lowercase, then ``[a-z0-9_]+``. Identifiers such as ``pfcount``,
  ``task_destroy`` and ``RefCell`` stay whole (as ``pfcount``, ``task_destroy``, ``refcell``)
  while backticks, question marks and other punctuation fall away, so ```pfcount``` in a
  passage matches "pfcount?" in a question. Hyphens and dots separate tokens
  (``farebox-api`` -> ``farebox``, ``api``).
- ``whitespace``: ``str.split()``, kept only to demonstrate the regression the chapter found
  (``pfcount?`` no longer matches ```pfcount```).
"""
from __future__ import annotations

import re
from collections.abc import Callable

from rag_ablation.core.errors import lookup
from rag_ablation.data.conversion.glyphs import clean

_WS = re.compile(r"\s+")
_TOKEN = re.compile(r"[a-z0-9_]+")

def normalize(text: str) -> str:
    """Collapse whitespace runs (Unicode whitespace, the non-breaking space included) to one
    space and strip the ends."""
    return _WS.sub(" ", text).strip()


_INLINE_MARKUP = re.compile(r"`+|\*\*|__|\|")
_WORD_HYPHEN = re.compile(r"(?<=[^\W\d_])-(?=[^\W\d_])")


def match_text(text: str) -> str:
    """The form in which span labels compare a span with a chunk or document: ``clean``
    (ligatures spelled out, soft hyphens and zero-widths removed, a word hyphenated at a line
    end joined), then the inline markup a rendered page does not show removed (backticks,
    ``**``, ``__`` and table pipes ``|``), then every hyphen between two letters removed
    (``farebox-api`` -> ``fareboxapi``, so a compound a PDF broke and ``clean`` joined still
    matches the span that has it whole), then ``normalize``. Applied alike to both sides, so a
    span copied from the Markdown source, from a rendered page or from a PDF viewer matches the
    same text. Idempotent."""
    return normalize(_WORD_HYPHEN.sub("", _INLINE_MARKUP.sub("", clean(text))))


def regex_tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def whitespace_tokens(text: str) -> list[str]:
    return text.split()


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "regex": regex_tokens,
    "whitespace": whitespace_tokens,
}


def get_tokenizer(name: str) -> Callable[[str], list[str]]:
    """The tokenizer registered as ``name``; an unknown name lists the valid ones."""
    return lookup(TOKENIZERS, name, "BM25 tokenizer")
