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
    """``clean``, then every whitespace run (Unicode whitespace, the non-breaking space
    included) collapsed to one space, ends stripped: the form span labels match in."""
    return _WS.sub(" ", clean(text)).strip()


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
