"""The prompt cache every LLM call goes through: an answer is computed once per
(model identity, messages, options) and read back from SQLite after that.

The cache is a single SQLite file in WAL mode. Each ``put`` is its own committed transaction,
so a run killed at any point (even ``kill -9``) keeps every answer whose ``put`` had returned,
and a rerun only pays for the calls that had not finished. (``synchronous=NORMAL``: durable
against the process dying; the last commits may be lost if the machine itself loses power.)

Each prompt is answered once, across processes too: a miss claims its key (``claims.py``, an OS
lock the owner's death releases) before asking the backend, so a second process missing the
same prompt at the same time waits for the first one's answer instead of asking again.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from rag_ablation.core.io import default_cache_dir
from rag_ablation.support.sqlite_cache import guarded, open_cache
from rag_ablation.llm.client.base import Backend, Generation
from rag_ablation.llm.client.claims import Claims

def default_cache_path() -> Path:
    """``default_cache_dir() / "prompts.sqlite"``."""
    return default_cache_dir() / "prompts.sqlite"


def cache_key(identity: dict[str, Any], messages: list[dict[str, Any]], options: dict[str, Any]) -> str:
    """Hex sha256 of the canonical JSON of ``{"identity", "messages", "options"}``.

    Canonical: keys sorted at every depth, no whitespace, UTF-8 without escaping. So dict key
    order never changes the key; list order (the order of messages) does; and JSON types
    count, so ``0`` and ``0.0`` give different keys. Raises ``TypeError`` for values that are
    not JSON-serialisable.
    """
    payload = {"identity": identity, "messages": messages, "options": options}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PromptCache:
    """A ``key -> Generation`` store in one SQLite file (WAL mode), durable per ``put``.

    The parent folder is created if missing. Several processes may share one file (SQLite
    locks it; a writer waits up to 30 s for another). One instance is for one thread.
    ``claims`` are the cross-process claims on its keys, in ``<path>.claims`` beside it.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        # isolation_level=None: autocommit, so every INSERT is committed when execute returns.
        # A damaged file is refused with one message saying how to recover (sqlite_cache).
        self._conn = open_cache(self.path, what="prompt", timeout=30.0, isolation_level=None)
        with guarded(self.path, "prompt"):
            self._create_or_upgrade()
        self.claims = Claims(f"{self.path}.claims")

    def _create_or_upgrade(self) -> None:
        """Create the table, or add ``top_logprobs`` to one written before answers kept
        probabilities, in one ``BEGIN IMMEDIATE`` transaction.

        The write lock is taken before the columns are read, so processes opening the same
        file at once (``dvc queue start -j 2``) do this one after another: the first creates or
        upgrades, the rest find the column there. (Checking first and altering after lets two
        processes both see the column missing, and the second ``ALTER`` fails with "duplicate
        column name".)
        """
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS generations ("
                " key TEXT PRIMARY KEY,"
                " text TEXT NOT NULL,"
                " prompt_tokens INTEGER NOT NULL,"
                " completion_tokens INTEGER NOT NULL,"
                " seconds REAL NOT NULL,"
                " top_logprobs TEXT)"
            )
            columns = {row[1] for row in conn.execute("PRAGMA table_info(generations)")}
            if "top_logprobs" not in columns:
                conn.execute("ALTER TABLE generations ADD COLUMN top_logprobs TEXT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already (a full disk, say)
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def get(self, key: str) -> Generation | None:
        """The generation stored under ``key``, or ``None`` if there is none."""
        with guarded(self.path, "prompt"):
            row = self._conn.execute(
                "SELECT text, prompt_tokens, completion_tokens, seconds, top_logprobs FROM generations WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        alternatives = None if row[4] is None else tuple((str(t), float(lp)) for t, lp in json.loads(row[4]))
        return Generation(text=row[0], prompt_tokens=row[1], completion_tokens=row[2], seconds=row[3],
                          top_logprobs=alternatives)

    def put(self, key: str, gen: Generation) -> None:
        """Store ``gen`` under ``key`` (replacing any earlier entry), committed before returning."""
        with guarded(self.path, "prompt"):
            self._conn.execute(
                "INSERT OR REPLACE INTO generations (key, text, prompt_tokens, completion_tokens, seconds,"
                " top_logprobs) VALUES (?, ?, ?, ?, ?, ?)",
                (key, gen.text, gen.prompt_tokens, gen.completion_tokens, gen.seconds,
                 None if gen.top_logprobs is None else json.dumps([list(t) for t in gen.top_logprobs])),
            )

    def __len__(self) -> int:
        """Number of stored generations."""
        return int(self._conn.execute("SELECT COUNT(*) FROM generations").fetchone()[0])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def journal_mode(self) -> str:
        """SQLite's journal mode for this file (``"wal"`` once opened here)."""
        return str(self._conn.execute("PRAGMA journal_mode").fetchone()[0])

    def close(self) -> None:
        """Close the connection (entries are already committed) and release any claim."""
        self.claims.close()
        self._conn.close()

    def __enter__(self) -> PromptCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_RESERVED_OPTIONS = frozenset({"num_predict", "stop", "top_logprobs"})


def request_options(*, num_predict: int, stop: Sequence[str] = (), top_logprobs: int = 0) -> dict[str, Any]:
    """The keyword arguments of one call (``CachedLLM.chat`` and ``key``, ``Backend.chat``):
    ``num_predict`` and ``stop`` always, ``top_logprobs`` only when above 0, so a call that asks
    for no probabilities is the call it always was (same cache key, same backend request)."""
    if isinstance(top_logprobs, bool) or not isinstance(top_logprobs, int) or top_logprobs < 0:
        raise ValueError(f"top_logprobs must be an int >= 0, got {top_logprobs!r}")
    return {"num_predict": num_predict, "stop": stop, **({"top_logprobs": top_logprobs} if top_logprobs else {})}


NO_CALLS: dict[str, int] = {"calls": 0, "hits": 0, "misses": 0}
""":meth:`CachedLLM.stats` when no LLM was asked anything: an LLM stage's latency record when
its config cannot run or needs no model (write a copy, never change it)."""


class CachedLLM:
    """A backend whose answers go through a ``PromptCache``.

    The key of a call is ``cache_key(backend.identity(), messages, options)`` with options =
    ``backend.settings()`` (temperature, seed, context size) merged with the caller's
    ``options`` (e.g. a prompt version) and ``num_predict``. So changing the model file, a
    decoding setting, the token budget or any caller option is a cache miss, and nothing else is.

    ``options`` may not set ``num_predict`` or any key of ``backend.settings()``: those are set on
    the backend and on each call (``ValueError`` otherwise).

    A miss claims its key across processes first (``PromptCache.claims``): if another process is
    asking the backend the same thing, this one waits for it and takes its answer from the cache
    (a hit); if that process died, this one gets the claim and asks the backend itself.

    Counters: ``calls`` (calls that returned), ``hits`` (answered from the cache), ``misses``
    (answered by the backend, then stored); ``calls == hits + misses``.
    """

    def __init__(self, backend: Backend, cache: PromptCache, options: dict[str, Any] | None = None) -> None:
        options = dict(options or {})
        clash = sorted(set(options) & (_RESERVED_OPTIONS | set(backend.settings())))
        if clash:
            raise ValueError(
                f"CachedLLM options may not set {clash}: set them on the backend "
                f"(settings {backend.settings()}) or pass num_predict to chat()"
            )
        self.backend = backend
        self.cache = cache
        self.options = options
        self.calls = 0
        self.hits = 0
        self.misses = 0

    def key(self, messages: list[dict[str, Any]], *, num_predict: int, stop: Sequence[str] = (),
            top_logprobs: int = 0) -> str:
        """The cache key of this call (see the class docstring). Stop strings and
        ``top_logprobs`` count only when given, so calls without them keep the keys they always had."""
        options = {**self.backend.settings(), **self.options, "num_predict": num_predict,
                   **({"stop": list(stop)} if stop else {}),
                   **({"top_logprobs": top_logprobs} if top_logprobs else {})}
        return cache_key(self.backend.identity(), messages, options)

    def chat(self, messages: list[dict[str, Any]], *, num_predict: int,
             stop: Sequence[str] = (), top_logprobs: int = 0) -> tuple[Generation, bool]:
        """The answer to ``messages`` and whether it was served from the cache.

        ``top_logprobs`` > 0 asks the backend for the first reply token's alternatives too
        (``Backend.chat``), and is then part of the key. A miss calls the backend and stores
        the answer before returning it; a backend error passes through, stores nothing and
        counts nothing."""
        request = request_options(num_predict=num_predict, stop=stop, top_logprobs=top_logprobs)
        key = self.key(messages, **request)
        gen = self.cache.get(key)
        if gen is not None:
            self.hits += 1
            self.calls += 1
            return gen, True
        with self.cache.claims.claimed(key):  # waits while another process answers this key
            gen = self.cache.get(key)
            if gen is not None:  # answered by that process meanwhile
                self.hits += 1
                self.calls += 1
                return gen, True
            gen = self.backend.chat(messages, **request)
            self.cache.put(key, gen)
        self.misses += 1
        self.calls += 1
        return gen, False

    def stats(self) -> dict[str, int]:
        """``{"calls", "hits", "misses"}`` since this object was made."""
        return {"calls": self.calls, "hits": self.hits, "misses": self.misses}
