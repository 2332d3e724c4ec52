"""Opening the SQLite caches (prompts, embeddings) so that a damaged file is never used.

A cache file can be left damaged by a full disk, a copy cut short or a foreign file put in its
place. ``open_cache`` opens it in WAL mode and runs SQLite's ``PRAGMA quick_check`` (a full pass
over the file's structure, milliseconds for caches of this size); any damage, then or on a
later read or write inside ``guarded``, raises ``CacheDamaged`` naming the file and the way out:
move it aside and rerun, and the pipeline rebuilds the cache (recomputing what it held). A
locked or busy database (another process writing) is not damage and passes through unchanged.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rag_ablation.core.errors import UserError


class CacheDamaged(UserError):
    """A cache file SQLite cannot read as a database."""


def _is_contention(e: sqlite3.DatabaseError) -> bool:
    text = str(e).lower()
    return isinstance(e, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def damaged(path: Path, what: str, e: Exception) -> CacheDamaged:
    return CacheDamaged(
        f"the {what} cache {path} is damaged ({e}); move it aside (`mv {path} {path}.damaged`) and rerun: "
        f"the pipeline builds a new one and recomputes what the old one held"
    )


@contextmanager
def guarded(path: Path, what: str) -> Iterator[None]:
    """Turn SQLite's corruption errors inside the block into ``CacheDamaged``."""
    try:
        yield
    except sqlite3.DatabaseError as e:
        if _is_contention(e):
            raise
        raise damaged(path, what, e) from None


def open_cache(path: Path, *, what: str, timeout: float, isolation_level: str | None = "") -> sqlite3.Connection:
    """A connection to the cache at ``path`` (WAL mode, ``synchronous=NORMAL``), checked with
    ``PRAGMA quick_check``; the parent folder is created. Raises ``CacheDamaged``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # "" (deferred transactions, sqlite3's own default) is valid at run time; typeshed omits it
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=isolation_level)  # type: ignore[arg-type]
    try:
        with guarded(path, what):
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            result = conn.execute("PRAGMA quick_check").fetchone()[0]
            if result != "ok":
                raise sqlite3.DatabaseError(f"quick_check: {result}")
    except BaseException:
        conn.close()
        raise
    return conn
