"""The one error type for what a user can fix, and the registry lookup every dispatch uses.

``UserError`` is the base of every error caused by the user's data, params, models or
servers (bad input, an unknown name, a missing model, a server that is down). Stage scripts
turn exactly these into one line, ``error: <message>``, and exit status 2 (``rag_ablation.core.runner``);
any other exception is a bug and keeps its traceback. Each message says what was found, what
was expected and how to fix it.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

T = TypeVar("T")


class UserError(Exception):
    """Something the user can fix; the message says what, and how."""


class UnknownName(UserError, ValueError):
    """A name from params that no registry holds; the message lists the valid names."""


class InvalidData(UserError, ValueError):
    """A data file that cannot be read as documented; the message names the file and line."""


class MissingInput(UserError, FileNotFoundError):
    """An input file another stage should have written is missing; the message names the stage."""


def lookup(registry: Mapping[str, T], name: object, what: str) -> T:
    """``registry[name]``; an unknown name raises ``UnknownName`` listing the valid names
    (sorted), e.g. ``unknown BM25 tokenizer 'words'; expected one of: regex, whitespace``."""
    try:
        return registry[name]  # type: ignore[index]
    except (KeyError, TypeError):
        raise UnknownName(f"unknown {what} {name!r}; expected one of: {', '.join(sorted(registry))}") from None
