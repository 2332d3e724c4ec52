"""The cache of a team's app's replies: each question is asked once per (app, question).

One SQLite file (``$RAG_ABLATION_CACHE/apps.sqlite``, default ``.cache/``) beside the prompt and
embedding caches, outside DVC's outputs. A reply is stored the moment it arrives, in its own
committed transaction, so a run killed at any point, or a service that dies half-way, keeps
every finished call and a rerun asks only for the rest.

The key (:func:`call_key`) is the sha256 of the canonical JSON of the app's identity (method,
target or URL, call, args, body, ``k``, the content hash of its ``deps`` and the version it
reports) and the question (id and text): a change to any of them asks again, nothing else does.
A reply holds the passages (text, doc, id, score), the answer (``call: ask``), the version the
app reported and the call's wall time in seconds, so a rerun from the cache reports the latency
the call had.

A second table keeps, per app identity, the fingerprint of the last complete run (the sha256 of
its rankings): a run with the same identity that gets other rankings (``fresh: true`` against a
live service) is told so (:meth:`CallCache.swap_fingerprint`).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from rag_ablation.core.io import default_cache_dir
from rag_ablation.support.sqlite_cache import guarded, open_cache

WHAT = "app call"


def default_path() -> Path:
    """``default_cache_dir() / "apps.sqlite"``."""
    return default_cache_dir() / "apps.sqlite"


def canonical(obj: Any) -> str:
    """JSON with keys sorted at every depth, no whitespace, UTF-8 kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def call_key(identity: dict[str, Any], *, qid: str, question: str) -> str:
    """Hex sha256 of ``{"identity", "qid", "question"}`` in canonical JSON."""
    return hashlib.sha256(canonical({"identity": identity, "qid": qid, "question": question}).encode()).hexdigest()


class CallCache:
    """The replies of apps, by :func:`call_key`. Used from the thread that opened it (the calls
    run on worker threads; their replies are stored by the one thread that collects them)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self._conn = open_cache(self.path, what=WHAT, timeout=30.0, isolation_level=None)
        with guarded(self.path, WHAT):
            self._conn.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT NOT NULL)")
            self._conn.execute("CREATE TABLE IF NOT EXISTS runs (identity TEXT PRIMARY KEY, fingerprint TEXT NOT NULL)")

    def get(self, key: str) -> dict[str, Any] | None:
        with guarded(self.path, WHAT):
            row = self._conn.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, reply: dict[str, Any]) -> None:
        with guarded(self.path, WHAT):
            self._conn.execute("INSERT OR REPLACE INTO replies (key, reply) VALUES (?, ?)", (key, canonical(reply)))

    def swap_fingerprint(self, identity: dict[str, Any], fingerprint: str) -> str | None:
        """Record ``fingerprint`` as the last complete run of ``identity``; return the one it
        replaces (None the first time)."""
        ident = hashlib.sha256(canonical(identity).encode()).hexdigest()
        with guarded(self.path, WHAT):
            row = self._conn.execute("SELECT fingerprint FROM runs WHERE identity = ?", (ident,)).fetchone()
            self._conn.execute("INSERT OR REPLACE INTO runs (identity, fingerprint) VALUES (?, ?)", (ident, fingerprint))
        return None if row is None else str(row[0])

    def __len__(self) -> int:
        with guarded(self.path, WHAT):
            return int(self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
