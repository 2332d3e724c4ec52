"""What every data set importer shares: the import report, safe file names and all-or-nothing writes.

``rag_ablation.datasets.squad`` and ``rag_ablation.datasets.beir`` read their format into documents
(file name -> text) and questions (``rag_ablation.data.questions`` format), count what they drop,
adjust or note in an ``ImportReport``, and hand the lot to ``write_import``:

- ``ImportReport``: what an import read, wrote and left out, per reason with example ids
  (``EXAMPLES`` per reason); ``summary()`` is what the user sees, ``to_json()`` the report file.
- ``NothingImported`` (an import left with no question) and ``DatasetImportError`` (outputs that
  cannot be written as asked): user errors.
- ``check_track``: a usable track folder name; ``safe_file_name`` / ``safe_file_names``: portable
  document file names for ids and titles, never two alike (ignoring case).
- ``write_import``: the track folder and the question (and other) files, staged beside their
  targets and renamed into place last, so an error leaves the previous outputs untouched;
  ``questions_text``: the question file's text.
- ``ANSWERABLE_SLICE``: the slice of every answerable question an importer writes.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_ablation.core.errors import InvalidData, UserError
from rag_ablation.data.questions import Question

ANSWERABLE_SLICE = "main"
"""The slice of every answerable question an importer writes (unanswerable ones: ``UNANSWERABLE``)."""

EXAMPLES = 5
"""Example ids an ``ImportReport`` keeps per reason."""


class DatasetImportError(UserError, ValueError):
    """Outputs of an import that cannot be written as asked (an existing track, a bad track name)."""


class NothingImported(DatasetImportError):
    """Every question was dropped; the message carries the report saying why."""


@dataclass
class ImportReport:
    """What an import read, wrote and left out, with counts per reason and example ids.

    ``dropped``: records left out (reason -> count); ``adjusted``: records kept but changed;
    ``notes``: other counts worth knowing (not records lost). ``examples`` holds the first
    ``EXAMPLES`` ids per reason of any of the three. ``reasons`` maps every reason that occurred
    to its one-line description."""

    source: str
    documents: int = 0
    questions: int = 0  # written, unanswerable included
    unanswerable: int = 0
    read: dict[str, int] = field(default_factory=dict)  # records read per kind
    dropped: dict[str, int] = field(default_factory=dict)
    adjusted: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)  # role -> path written

    def _count(self, table: dict[str, int], reason: str, example: str, description: str) -> None:
        table[reason] = table.get(reason, 0) + 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < EXAMPLES:
            ex.append(example)
        self.reasons.setdefault(reason, description)

    def drop(self, reason: str, example: str, description: str) -> None:
        self._count(self.dropped, reason, example, description)

    def adjust(self, reason: str, example: str, description: str) -> None:
        self._count(self.adjusted, reason, example, description)

    def note(self, reason: str, example: str, description: str) -> None:
        self._count(self.notes, reason, example, description)

    @property
    def n_dropped(self) -> int:
        return sum(self.dropped.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source, "documents": self.documents, "questions": self.questions,
            "unanswerable": self.unanswerable, "read": dict(self.read), "dropped": dict(sorted(self.dropped.items())),
            "adjusted": dict(sorted(self.adjusted.items())), "notes": dict(sorted(self.notes.items())),
            "examples": {k: list(v) for k, v in sorted(self.examples.items())},
            "reasons": dict(sorted(self.reasons.items())), "outputs": dict(self.outputs),
        }

    def summary(self) -> str:
        """Several lines: what was written, then one line per reason with its count and examples."""
        read = ", ".join(f"{n:,} {kind}" for kind, n in self.read.items())
        lines = [(f"{self.source}: read {read}; wrote {self.documents:,} document(s) and {self.questions:,} "
                  f"question(s) ({self.unanswerable:,} unanswerable)")]
        for title, table in (("dropped", self.dropped), ("kept but adjusted", self.adjusted), ("noted", self.notes)):
            if table:
                lines.append(f"{title}: {sum(table.values()):,}")
                for reason, n in sorted(table.items()):
                    lines.append(f"  {n:,} {reason}: {self.reasons[reason]} (e.g. {', '.join(self.examples[reason])})")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# shared helpers

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_TRACK = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MAX_NAME = 100


def check_track(track: str) -> str:
    """``track`` if it is a usable track folder name (letters, digits, ``_.-``, not starting
    with a dot or dash), else ``DatasetImportError``."""
    if not isinstance(track, str) or not _TRACK.fullmatch(track):
        raise DatasetImportError(f"track name {track!r} cannot be a corpus folder: use letters, digits, '_', '.' "
                           f"or '-', starting with a letter or digit (e.g. 'squad')")
    return track


def safe_file_name(name: str) -> str:
    """A portable file name (no suffix) for an id or title: accents removed (``é`` -> ``e``),
    every run of characters other than ``A-Za-z0-9._-`` replaced by ``_``, leading dots and
    dashes removed, at most ``MAX_NAME`` characters. When that changed anything, ``-`` and 8 hex
    digits of the original's SHA-1 are appended, so two different ids never share a name
    (``a b`` -> ``a_b-<hash>`` while ``a_b`` stays ``a_b``)."""
    ascii_ = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    base = _UNSAFE.sub("_", ascii_).lstrip(".-")[:MAX_NAME]
    if base == name:
        return base
    return f"{base or 'doc'}-{hashlib.sha1(name.encode('utf-8')).hexdigest()[:8]}"


def safe_file_names(ids: Iterable[str]) -> dict[str, str]:
    """``safe_file_name`` of each id; raises ``InvalidData`` if two ids still share a name
    ignoring case (case-insensitive file systems), which takes ids built to collide."""
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for i in ids:
        name = safe_file_name(i)
        other = seen.setdefault(name.lower(), i)
        if other != i:
            raise InvalidData(f"ids {other!r} and {i!r} map to the same file name {name!r} (ignoring case); "
                              f"rename one of them in the source data")
        out[i] = name
    return out


def _staged_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_import(out_corpus_dir: Path | str, track: str, documents: Mapping[str, str],
                 files: Mapping[Path, str], *, overwrite: bool = False) -> None:
    """Write ``documents`` (file name -> text) as the folder ``<out_corpus_dir>/<track>/`` and
    each of ``files`` (path -> text), all or nothing.

    Without ``overwrite`` an existing track folder or output file raises ``DatasetImportError`` before
    anything is written; with it the track folder is replaced whole (files of an earlier import
    that this one does not write disappear). The track is staged in a hidden folder beside it
    (which ``load_corpus`` ignores should a crash leave it behind) and each file in a hidden
    temporary file beside its target; the renames into place come last, and an error among them
    puts the previous track and files back (a killed process can still stop between two
    renames: each output is then whole, but they may come from different imports)."""
    root = Path(out_corpus_dir)
    check_track(track)
    target = root / track
    if not overwrite:
        existing = [str(p) for p in (target, *map(Path, files)) if p.exists()]
        if existing:
            raise DatasetImportError(f"{', '.join(existing)} already exist(s): the import would replace them. "
                               f"Remove them or pass overwrite=True")
    for p in files:
        if Path(p).resolve().is_relative_to(target.resolve()):
            raise DatasetImportError(f"output {p} lies inside the track folder {target}, which the import replaces "
                               f"whole; write it elsewhere")
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root, prefix=f".{track}.import-"))
    staged_files: list[tuple[Path, Path]] = []
    backups: list[tuple[Path, Path]] = []  # (copy of a replaced file, the file)
    old: Path | None = None
    swapped = False
    try:
        for name, text in documents.items():
            (staging / name).write_text(text, encoding="utf-8")
        for p, text in files.items():
            staged_files.append((_staged_file(Path(p), text), Path(p)))
        if target.exists():
            old = Path(tempfile.mkdtemp(dir=root, prefix=f".{track}.old-"))
            old.rmdir()
            os.rename(target, old)
        os.rename(staging, target)
        swapped = True
        for tmp, p in staged_files:
            if p.exists():
                bak = Path(tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.old-")[1])
                bak.unlink()
                try:
                    os.link(p, bak)
                except OSError:
                    shutil.copy2(p, bak)
                backups.append((bak, p))
            os.replace(tmp, p)
    except BaseException:
        # undo in reverse: files already replaced, then the track folder
        for bak, p in backups:
            if p.exists() and os.path.samefile(bak, p):  # not replaced yet (rename would do nothing)
                bak.unlink()
            else:
                os.rename(bak, p)
        for tmp, _ in staged_files:
            tmp.unlink(missing_ok=True)
        shutil.rmtree(target if swapped else staging, ignore_errors=True)
        if old is not None:
            os.rename(old, target)
        raise
    for bak, _ in backups:
        bak.unlink(missing_ok=True)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def questions_text(questions: Iterable[Question]) -> str:
    """The question file's text: one JSON object per line, keys sorted (as ``write_jsonl``)."""
    return "".join(json.dumps(q.to_json(), sort_keys=True, ensure_ascii=False) + "\n" for q in questions)

