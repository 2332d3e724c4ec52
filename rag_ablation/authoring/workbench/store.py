"""Append-only, atomic writes of JSON lines: the only way the workbench changes a file.

``append_record`` adds one JSON object as one line at the end of a JSON-lines file (and
``remove_last_record``, the workbench's undo, takes the last one away again). The file's
existing bytes are kept exactly: the new content (old bytes, a newline if the old bytes did not
end with one, the new line) is written to a temporary file beside the target, flushed and
fsynced, renamed over the target, and the folder is fsynced. A crash or a kill at any moment
leaves either the old file or the new one, never a half line, so a rerun resumes from whatever
was saved. One lock per process serializes writers (the workbench serves one user).

A save killed between creating its temporary file and the rename leaves that file behind:
``.<name>.<random>.tmp`` beside the target (``TEMP_GLOB``, the pattern of
``rag_ablation.core.io.write_text``). Its name starts with a dot and ends with ``.tmp``, so no
``*.jsonl`` reader takes it for data; ``remove_stale_temps`` deletes those of a file when the
workbench starts (``session.Workbench``), leaving one younger than ``STALE_SECONDS`` (the save
of another process still running).

The session log (``SessionLog``) is a JSON-lines file beside the question file that records what
the pipeline's files cannot hold: skipped passages, rejected audit passages, each label's pool
(depth and configs), the queries loaded. Its suffix is not ``.jsonl``, so nothing reading
``data/questions/*.jsonl`` mistakes it for a question file.
"""
from __future__ import annotations

import glob
import json
import os
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rag_ablation.core.io import numbered_json_lines, write_text

_LOCK = threading.Lock()

TEMP_GLOB = ".{name}.*.tmp"
"""The temporary files of an atomic write of file ``name``, beside it (``core.io.write_text``)."""
STALE_SECONDS = 60.0
"""A temporary file older than this is a killed save's leftover (a save takes milliseconds)."""

LOG_SUFFIX = ".workbench-log"
"""The session log of question file ``X.jsonl`` is ``X.workbench-log`` in the same folder."""


def json_line(record: Mapping[str, Any]) -> str:
    """``record`` as one line of JSON (keys in the order given, non-ASCII kept), with its newline:
    how the project's hand-written files are laid out."""
    return json.dumps(dict(record), ensure_ascii=False) + "\n"


def appended_text(old: str, line: str) -> str:
    """``old`` followed by ``line``, with a newline between them when ``old`` is non-empty and
    does not end with one (a file last saved by an editor without its final newline)."""
    sep = "\n" if old and not old.endswith("\n") else ""
    return old + sep + line


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append_record(path: Path, record: Mapping[str, Any]) -> None:
    """Append ``record`` as one JSON line to ``path`` atomically (module docstring), creating the
    file and its folder if needed."""
    path = Path(path)
    with _LOCK:
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        write_text(path, appended_text(old, json_line(record)))
        _fsync_dir(path.parent)


def last_record(text: str) -> tuple[int, Any]:
    """Where the last non-blank line of the JSON-lines ``text`` starts, and its JSON value
    (``None`` when the text holds no line or the last one is not JSON)."""
    body = text.rstrip()
    start = body.rfind("\n") + 1
    try:
        return start, json.loads(body[start:]) if body else None
    except ValueError:
        return start, None


def remove_last_record(path: Path, record_id: str) -> dict[str, Any]:
    """Remove the last line of the JSON-lines file ``path`` atomically (as ``append_record``
    writes), when it is a JSON object whose ``id`` is ``record_id``; returns that object. Every
    byte before that line is kept exactly (blank lines after it go with it). Raises
    ``ValueError`` when the file's last line is not that record: nothing is written then."""
    path = Path(path)
    with _LOCK:
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        start, obj = last_record(old)
        if not isinstance(obj, dict) or obj.get("id") != record_id:
            found = obj.get("id") if isinstance(obj, dict) else None
            raise ValueError(f"the last line of {path} is {'question ' + repr(found) if found else 'not a question'}, "
                             f"not {record_id!r}")
        write_text(path, old[:start])
        _fsync_dir(path.parent)
    return obj


def temp_files(path: Path) -> list[Path]:
    """The temporary files of atomic writes of ``path`` lying beside it (``TEMP_GLOB``)."""
    path = Path(path)
    if not path.parent.is_dir():
        return []
    pattern = TEMP_GLOB.format(name=glob.escape(path.name))
    return sorted(p for p in path.parent.glob(pattern) if p.is_file() and not p.is_symlink())


def remove_stale_temps(path: Path, *, older_than: float = STALE_SECONDS) -> list[Path]:
    """Delete the temporary files of ``path`` (``temp_files``) not modified for ``older_than``
    seconds: what a killed save left. Returns those deleted."""
    removed = []
    now = time.time()
    for tmp in temp_files(path):
        try:
            if now - tmp.stat().st_mtime >= older_than:
                tmp.unlink()
                removed.append(tmp)
        except FileNotFoundError:  # another process renamed or removed it meanwhile
            continue
    return removed


def log_path(questions: Path) -> Path:
    """The session log beside ``questions`` (``LOG_SUFFIX``)."""
    return Path(questions).with_suffix(LOG_SUFFIX)


class SessionLog:
    """The workbench's own JSON-lines log (module docstring): each event is an object with a
    ``kind`` (``question``, ``skip``, ``audit``, ``queries``) and the fields of that kind."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def events(self, kind: str | None = None) -> Iterator[dict[str, Any]]:
        """Every event in file order (only those of ``kind`` when given). A line that is not a
        JSON object is ignored: the log is advisory, the pipeline's files are the record."""
        if not self.path.is_file():
            return
        rows, _ = numbered_json_lines(self.path)
        for _, obj in rows:
            if isinstance(obj, dict) and (kind is None or obj.get("kind") == kind):
                yield obj

    def add(self, kind: str, **fields: Any) -> None:
        """Append one event of ``kind``."""
        append_record(self.path, {"kind": kind, **fields})
