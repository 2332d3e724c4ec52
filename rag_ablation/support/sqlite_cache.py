"""Opening the SQLite caches (prompts, embeddings) so that a damaged file is never used.

A cache file can be left damaged by a full disk, a copy cut short or a foreign file put in its
place. ``open_cache`` opens it in WAL mode and runs SQLite's ``PRAGMA quick_check`` (a full pass
over the file's structure, milliseconds for caches of this size); any damage, then or on a
later read or write inside ``guarded``, raises ``CacheDamaged`` naming the file and the way out:
move it aside and rerun, and the pipeline rebuilds the cache (recomputing what it held). A
locked or busy database (another process writing) is not damage and passes through unchanged.
A full disk or a file that cannot be written is not damage either: it raises ``CacheUnwritable``
saying so, since moving the file aside would throw away answers that are intact.
"""
from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rag_ablation.core.errors import UserError


class CacheDamaged(UserError):
    """A cache file SQLite cannot read as a database."""


class CacheUnwritable(UserError):
    """A cache file SQLite can read but cannot write: its disk is full, or it is read-only."""


def _is_contention(e: sqlite3.DatabaseError) -> bool:
    text = str(e).lower()
    return isinstance(e, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def damaged(path: Path, what: str, e: Exception) -> CacheDamaged:
    return CacheDamaged(
        f"the {what} cache {path} is damaged ({e}); move it aside (`mv {path} {path}.damaged`) and rerun: "
        f"the pipeline builds a new one and recomputes what the old one held"
    )


def unwritable(path: Path, what: str, e: sqlite3.DatabaseError) -> CacheUnwritable | None:
    """``CacheUnwritable`` for SQLite's SQLITE_FULL and SQLITE_READONLY (primary codes, so the
    extended ones too), else ``None``. The failed write is rolled back; what the file held stays."""
    code = getattr(e, "sqlite_errorcode", 0) & 0xFF
    fix = f"or set RAG_ABLATION_CACHE to a folder elsewhere) and rerun: the {what} cache keeps every entry it held"
    if code == sqlite3.SQLITE_FULL:
        return CacheUnwritable(f"the {what} cache {path} cannot grow: the disk holding it is full ({e}); "
                               f"free space on that disk ({fix}")
    if code == sqlite3.SQLITE_READONLY:
        return CacheUnwritable(f"the {what} cache {path} cannot be written ({e}); make the file and its folder "
                               f"writable ({fix}")
    return None


@contextmanager
def guarded(path: Path, what: str) -> Iterator[None]:
    """Turn SQLite's errors inside the block into one message: ``CacheUnwritable`` for a full
    disk or a read-only file, ``CacheDamaged`` for the rest; contention passes through."""
    try:
        yield
    except sqlite3.DatabaseError as e:
        if _is_contention(e):
            raise
        raise (unwritable(path, what, e) or damaged(path, what, e)) from None


def _switch_to_wal(conn: sqlite3.Connection, deadline: float) -> None:
    """``PRAGMA journal_mode=WAL``, retried while another process holds the file.

    Two processes switching a new file at the same moment can each hold a shared lock and want
    the exclusive one; SQLite then answers "database is locked" at once, without waiting for
    the connection's timeout (its busy handler is skipped where waiting could deadlock). The
    switch is retried every 10-100 ms until ``deadline`` (``time.monotonic()``); after that the
    contention error passes through unchanged.
    """
    pause = 0.01
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if not _is_contention(e) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def open_cache(path: Path, *, what: str, timeout: float, isolation_level: str | None = "") -> sqlite3.Connection:
    """A connection to the cache at ``path`` (WAL mode, ``synchronous=NORMAL``), checked with
    ``PRAGMA quick_check``; the parent folder is created. Another process opening or writing
    the same file is waited for up to ``timeout`` seconds. Raises ``CacheDamaged``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # "" (deferred transactions, sqlite3's own default) is valid at run time; typeshed omits it
    deadline = time.monotonic() + timeout
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=isolation_level)  # type: ignore[arg-type]
    try:
        with guarded(path, what):
            _switch_to_wal(conn, deadline)
            conn.execute("PRAGMA synchronous=NORMAL")
            result = conn.execute("PRAGMA quick_check").fetchone()[0]
            if result != "ok":
                raise sqlite3.DatabaseError(f"quick_check: {result}")
    except BaseException:
        conn.close()
        raise
    return conn
