"""Claims on prompt-cache keys across processes: each prompt is sent to the LLM once, even when
two processes (two experiments of ``dvc queue start -j 2``) miss the same prompt at once.

A claim on a key is an exclusive POSIX record lock (``fcntl.lockf``) on one byte of a claims file
beside the cache (``prompts.sqlite.claims``), at an offset taken from the key (its first 15 hex
digits: 60 bits, so two keys share a byte with negligible odds, and then only wait for each
other). The file stays empty: the locks are the whole state. The process that holds the claim asks
the LLM and stores the answer; another process that misses the same key waits for the claim, then
reads the answer from the cache instead of asking again.

A dead owner can never block anyone: the operating system drops a process's locks when it exits,
however it exits (``kill -9`` included), so the waiter gets the claim, finds no answer, and asks
the LLM itself. There is no timeout, heartbeat or stale-claim rule to tune.

No deadlock: a process waits (blocks) for a claim only while it holds none. ``try_claim`` never
waits; the concurrent path (``rag_ablation.llm.client.concurrent``) takes its claims with it and waits
for the keys others hold only after releasing its own.

POSIX record locks belong to the process, not to the thread or the file descriptor: within one
process a claim never excludes another claim (one thread uses a cache, so there is nothing to
exclude), and closing any descriptor of the claims file releases every claim the process holds
on it, which is why one ``Claims`` object holds one descriptor for its lifetime.
"""
from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def offset(key: str) -> int:
    """The byte of the claims file that stands for ``key`` (a hex cache key)."""
    return int(key[:15], 16)


class Claims:
    """Exclusive cross-process claims on hex keys, through lock bytes of one file (created empty)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        self.held: set[str] = set()

    def try_claim(self, key: str) -> bool:
        """Claim ``key`` if no other process holds it; never waits."""
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset(key), os.SEEK_SET)
        except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: held by another process
            return False
        self.held.add(key)
        return True

    def wait_claim(self, key: str) -> None:
        """Claim ``key``, waiting for as long as another process holds it. Call it holding no
        other claim (see the module docstring)."""
        fcntl.lockf(self._fd, fcntl.LOCK_EX, 1, offset(key), os.SEEK_SET)
        self.held.add(key)

    def release(self, key: str) -> None:
        """Release a claim this object holds (a no-op for a key it does not hold)."""
        if key in self.held:
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, offset(key), os.SEEK_SET)
            self.held.discard(key)

    def release_all(self) -> None:
        for key in list(self.held):
            self.release(key)

    @contextmanager
    def claimed(self, key: str) -> Iterator[None]:
        """``wait_claim(key)`` for the block, released however the block ends."""
        self.wait_claim(key)
        try:
            yield
        finally:
            self.release(key)

    def close(self) -> None:
        """Release every claim and close the file."""
        if self._fd >= 0:
            os.close(self._fd)  # drops this process's locks on the file
            self._fd = -1
            self.held.clear()
