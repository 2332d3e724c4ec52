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
- ``draw_sample``: the seeded sample of questions an import writes with ``sample=N`` (``--sample``),
  stratified by the article or document each question comes from (``allocate``: the rule), and
  recorded in the report (``ImportSample``). It is drawn after every drop, so the dropped counts
  are the whole file's, and it leaves the documents alone: every importer writes its whole corpus
  whether sampled or not (the other documents are the distractors retrieval is measured against).
- ``write_import``: the track folder and the question (and other) files, staged beside their
  targets and renamed into place last, so an error leaves the previous outputs untouched;
  ``questions_text``: the question file's text.
- ``ANSWERABLE_SLICE``: the slice of every answerable question an importer writes.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_ablation.core.errors import InvalidData, UserError
from rag_ablation.data.questions import Question

ANSWERABLE_SLICE = "main"
"""The slice of every answerable question an importer writes (unanswerable ones: ``UNANSWERABLE``)."""

EXAMPLES = 5
"""Example ids an ``ImportReport`` keeps per reason."""


SAMPLE_SEED = 0
"""The seed of an import's sample when none is given (``--seed``)."""


class DatasetImportError(UserError, ValueError):
    """Outputs of an import that cannot be written as asked (an existing track, a bad track name)."""


class NothingImported(DatasetImportError):
    """Every question was dropped; the message carries the report saying why."""


@dataclass(frozen=True)
class ImportSample:
    """The sample an import drew (``draw_sample``): ``requested`` questions asked for, out of the
    ``available`` ones left after every drop, ``written`` of them kept (``min(requested,
    available)``), seeded by ``seed`` and stratified by ``by`` (``article`` or ``document``)."""

    requested: int
    available: int
    written: int
    seed: int
    by: str

    def to_json(self) -> dict[str, Any]:
        return {"requested": self.requested, "available": self.available, "written": self.written,
                "seed": self.seed, "stratified_by": self.by}

    def summary(self) -> str:
        """One line: how many were sampled out of how many, or that the request took them all."""
        if self.requested >= self.available:
            return (f"sample: asked for {self.requested:,} question(s), {self.available:,} left after dropping: "
                    f"all {self.available:,} written (no sampling)")
        return (f"sample: {self.written:,} of the {self.available:,} question(s) left after dropping "
                f"(seed {self.seed}, stratified by {self.by}); every document written")


@dataclass
class ImportReport:
    """What an import read, wrote and left out, with counts per reason and example ids.

    ``dropped``: records left out (reason -> count); ``adjusted``: records kept but changed;
    ``notes``: other counts worth knowing (not records lost). ``examples`` holds the first
    ``EXAMPLES`` ids per reason of any of the three. ``reasons`` maps every reason that occurred
    to its one-line description. ``drop_kinds`` maps every drop reason to the kind of record it
    drops, a key of ``read`` (``documents``, ``queries``, ``qrels rows``, ``questions``...), so
    each kind's drops are counted apart (``dropped_by_kind``, ``dropped_of``): a dropped qrels
    row is never added to a dropped query. ``reading``: how the input was read, one sentence
    each (e.g. whether a file had a header line). ``sample``: the sample drawn
    (``draw_sample``), None when every question left was written; ``questions`` counts what was
    written, so without a sample ``questions + dropped_of(kind)`` is ``read[kind]`` for the kind
    the questions are made of (SQuAD's ``questions``, BEIR's ``queries``), and with one
    ``sample.available + dropped_of(kind)``."""

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
    drop_kinds: dict[str, str] = field(default_factory=dict)  # drop reason -> kind of record
    reading: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # role -> path written
    sample: ImportSample | None = None

    def _count(self, table: dict[str, int], reason: str, example: str, description: str) -> None:
        table[reason] = table.get(reason, 0) + 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < EXAMPLES:
            ex.append(example)
        self.reasons.setdefault(reason, description)

    def drop(self, reason: str, example: str, description: str, kind: str | None = None) -> None:
        """Count one record left out for ``reason``: a ``kind`` record (a key of ``read``), by
        default the kind ``drop_kinds`` gives the reason (an importer may fill it in when it
        makes the report), else ``questions`` (what SQuAD drops). A reason always drops the same
        kind of record."""
        known = self.drop_kinds.setdefault(reason, kind or "questions")
        if kind is not None and kind != known:
            raise ValueError(f"drop reason {reason!r} counts {known}, not {kind}")
        self._count(self.dropped, reason, example, description)

    def adjust(self, reason: str, example: str, description: str) -> None:
        self._count(self.adjusted, reason, example, description)

    def note(self, reason: str, example: str, description: str) -> None:
        self._count(self.notes, reason, example, description)

    @property
    def n_dropped(self) -> int:
        """Records dropped, every kind together (``dropped_of`` counts one kind)."""
        return sum(self.dropped.values())

    def dropped_by_kind(self) -> dict[str, dict[str, int]]:
        """Kind of record -> drop reason -> count, the kinds in ``read`` order (any other after,
        sorted), the reasons sorted; only kinds with a drop."""
        out: dict[str, dict[str, int]] = {}
        order = {kind: i for i, kind in enumerate(self.read)}
        for reason, n in sorted(self.dropped.items()):
            out.setdefault(self.drop_kinds.get(reason, "questions"), {})[reason] = n
        return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

    def dropped_of(self, kind: str) -> int:
        """Records of ``kind`` dropped (0 when none was)."""
        return sum(self.dropped_by_kind().get(kind, {}).values())

    def to_json(self) -> dict[str, Any]:
        by_kind = self.dropped_by_kind()
        return {
            "source": self.source, "documents": self.documents, "questions": self.questions,
            "unanswerable": self.unanswerable, "read": dict(self.read), "reading": list(self.reading),
            "dropped": dict(sorted(self.dropped.items())),
            "dropped_by_kind": by_kind, "dropped_totals": {kind: sum(t.values()) for kind, t in by_kind.items()},
            "adjusted": dict(sorted(self.adjusted.items())), "notes": dict(sorted(self.notes.items())),
            "examples": {k: list(v) for k, v in sorted(self.examples.items())},
            "reasons": dict(sorted(self.reasons.items())), "outputs": dict(self.outputs),
            "sample": self.sample.to_json() if self.sample is not None else None,
        }

    def _reason_line(self, reason: str, n: int) -> str:
        return f"  {n:,} {reason}: {self.reasons[reason]} (e.g. {', '.join(self.examples[reason])})"

    def summary(self) -> str:
        """Several lines: what was read and written, how the input was read (``reading``), the
        sample if one was drawn, then per kind of record dropped ``dropped KIND: N of READ`` and
        one line per reason with its count and examples, then the adjusted and noted reasons."""
        read = ", ".join(f"{n:,} {kind}" for kind, n in self.read.items())
        lines = [(f"{self.source}: read {read}; wrote {self.documents:,} document(s) and {self.questions:,} "
                  f"question(s) ({self.unanswerable:,} unanswerable)")]
        lines.extend(self.reading)
        if self.sample is not None:
            lines.append(self.sample.summary())
        for kind, table in self.dropped_by_kind().items():
            of = f" of {self.read[kind]:,}" if kind in self.read else ""
            lines.append(f"dropped {kind}: {sum(table.values()):,}{of}")
            lines.extend(self._reason_line(reason, n) for reason, n in table.items())
        for title, table in (("kept but adjusted", self.adjusted), ("noted", self.notes)):
            if table:
                lines.append(f"{title}: {sum(table.values()):,}")
                lines.extend(self._reason_line(reason, n) for reason, n in sorted(table.items()))
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


def check_sample(size: int | None) -> int | None:
    """``size`` if it is None (no sample: every question) or a whole number of at least 1,
    else ``DatasetImportError``. Importers call it before reading anything."""
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise DatasetImportError(f"sample size {size!r} is not a positive whole number: --sample N writes a sample of "
                                 f"N questions, N at least 1; pass --sample 1 or more, or leave --sample out to "
                                 f"write every question")
    return size


def allocate(counts: Mapping[str, int], size: int, *, seed: int) -> dict[str, int]:
    """Questions per stratum (article or document) for a sample of ``size`` out of
    ``n = sum(counts.values())``: proportional allocation rounded by the largest remainder.

    Stratum ``s`` holding ``c`` questions gets ``size * c // n`` (its exact share ``size * c / n``
    rounded down); the ``size`` minus the sum of those go, one each, to the strata with the
    largest remainders ``size * c % n`` (exact integers: no float ties). Equal remainders are
    ordered by a seeded shuffle of the sorted stratum names (``random.Random(str(seed))``), not by
    name, so which of them get one more changes with the seed (in BEIR nearly every stratum holds
    one question, and they all tie). Every stratum thus gets its exact share rounded down or up,
    never further off, the total is exactly ``size``, and a stratum gets none only when its exact
    share is below 1. ``size`` of at least ``n``: every question (a copy of ``counts``)."""
    total = sum(counts.values())
    if size >= total:
        return dict(counts)
    out = {s: size * c // total for s, c in counts.items()}
    order = sorted(counts)
    random.Random(str(seed)).shuffle(order)
    order.sort(key=lambda s: -(size * counts[s] % total))  # stable: the seeded order among equal remainders
    for s in order[: size - sum(out.values())]:
        out[s] += 1
    return out


def sample_positions(strata: Sequence[str], size: int, *, seed: int) -> list[int]:
    """Positions (ascending) of a seeded sample of ``size`` items, item ``i`` belonging to stratum
    ``strata[i]``: ``allocate`` gives each stratum its count, and a stratum's items are a seeded
    shuffle of its positions (``random.Random(f"{seed}:{stratum}")``) whose first ones are taken.
    The same strata, size and seed always give the same positions, and the result keeps the input
    order (within a stratum too). ``size`` of at least ``len(strata)``: every position."""
    if size >= len(strata):
        return list(range(len(strata)))
    by: dict[str, list[int]] = {}
    for i, s in enumerate(strata):
        by.setdefault(s, []).append(i)
    take = allocate({s: len(v) for s, v in by.items()}, size, seed=seed)
    chosen: list[int] = []
    for s, positions in by.items():
        order = list(positions)
        random.Random(f"{seed}:{s}").shuffle(order)
        chosen.extend(order[: take[s]])
    return sorted(chosen)


def draw_sample(strata: Sequence[str], size: int | None, *, seed: int, by: str, report: ImportReport) -> list[int]:
    """Positions of the questions an import writes, ``strata[i]`` being question ``i``'s article
    or document (``by`` names which, for the report): every position when ``size`` is None, else
    ``sample_positions`` (every position when ``size`` is at least the questions left), recorded
    as ``report.sample`` (unless no question is left: there is nothing to sample, and the import
    fails with ``NothingImported``). Call it after every drop, on the questions that are left."""
    if size is None or not strata:
        return list(range(len(strata)))
    check_sample(size)
    kept = sample_positions(strata, size, seed=seed)
    report.sample = ImportSample(requested=size, available=len(strata), written=len(kept), seed=seed, by=by)
    return kept


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

