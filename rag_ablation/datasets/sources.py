"""A corpus folder as a team has it: every file turned into the text the pipeline uses.

``read_sources(root, ...)`` walks ``root`` (symlinks followed while they stay inside it; hidden
files and folders such as ``.gitignore`` ignored) and converts each file by its suffix
(``rag_ablation.data.conversion.formats.convert``: ``.md`` and ``.txt`` as they are; ``.pdf``,
``.docx``, ``.pptx``, ``.html``/``.htm``, ``.rst`` to Markdown). A document keeps its file's path
as its id (``policies/retention.pdf``), so questions, run files and ``export-trec`` name the
source file; its track is its first folder, or :data:`ROOT_TRACK` for a file directly under the
root.

Converted once per content: each result is stored in ``$RAG_ABLATION_CACHE/conversions.sqlite``
under the SHA-256 of the file's bytes, its suffix and the converter's name and version, so a
changed file (or a new converter version) is converted again and nothing else is. Cache misses
are converted in ``workers`` processes, with a progress line; each result is stored as it
arrives, so an interrupted run keeps every finished file.

Nothing is dropped silently. ``exclude`` (globs on the path under the root, ``fnmatch`` rules:
``*`` crosses folders) leaves files out; each is counted and listed (``SourceCorpus.excluded``).
A file that cannot be used (an unsupported suffix, an encrypted or damaged file, a PDF with no
text layer, an empty result, a link leading outside the root) is a problem: with
``on_problem="stop"`` (the default) one ``CorpusError`` lists every problem; with ``"skip"`` the
files are left out and listed with their reason (``SourceCorpus.skipped``) for the stage and
the report to show.
"""
from __future__ import annotations

import concurrent.futures as cf
import fnmatch
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_ablation.core.config import ON_PROBLEM
from rag_ablation.data.conversion.converted import ConversionFailed, Converted, Page
from rag_ablation.data.conversion.formats import CONVERTERS, convert, converter_name
from rag_ablation.data.corpus import CorpusError, Document, track_of
from rag_ablation.data.provenance import Provenance
from rag_ablation.support.sqlite_cache import guarded, open_cache

CACHE_FILE = "conversions.sqlite"
TEXT_SUFFIXES = (".md", ".txt")  # read as they are (conversion.plain): never cached, never sent to a worker


@dataclass(frozen=True)
class Skipped:
    """A file left out of the corpus: ``kind`` one of the conversion failures
    (``rag_ablation.data.conversion.converted.KINDS``) or ``outside`` (a link out of the root)."""

    file: str
    kind: str
    detail: str

    def line(self) -> str:
        return f"{self.file}: {self.detail}"


@dataclass(frozen=True)
class SourceCorpus:
    """The documents (sorted by path), their provenance in the same order, the files left out
    by ``exclude`` and (with ``on_problem="skip"``) the files skipped, each with its reason."""

    documents: list[Document]
    provenance: list[Provenance]
    excluded: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    converted: int = 0  # files converted in this call (cache misses)
    cached: int = 0  # files whose text came from the conversion cache

    def conversion_line(self) -> str | None:
        """``converted N file(s), M from the conversion cache`` (None when every file is
        Markdown or text: nothing to convert)."""
        if not self.converted and not self.cached:
            return None
        return f"converted {self.converted} file(s), {self.cached} from the conversion cache"

    def summary(self) -> dict[str, Any]:
        """The counts the stage's metrics file holds: documents per format, pages, the excluded
        and skipped files (each listed), and each format's converter."""
        by_format: dict[str, int] = {}
        converters: dict[str, str] = {}
        for p in self.provenance:
            by_format[p.format] = by_format.get(p.format, 0) + 1
            converters[p.format] = p.converter
        return {"documents": len(self.documents), "by_format": dict(sorted(by_format.items())),
                "pages": sum(len(p.pages) for p in self.provenance), "converters": dict(sorted(converters.items())),
                "excluded": {"count": len(self.excluded), "files": list(self.excluded)},
                "skipped": {"count": len(self.skipped),
                            "files": [{"file": s.file, "kind": s.kind, "detail": s.detail} for s in self.skipped]}}


def left_out_lines(summary: dict[str, Any]) -> list[str]:
    """What the ``dataset`` stage prints about the files left out, from :meth:`SourceCorpus.summary`:
    one block for the excluded files (``documents.exclude``) and one for the skipped ones
    (``documents.on_problem: skip``, each with its reason); none for a block with no file."""
    out = []
    for key, setting in (("excluded", "documents.exclude"), ("skipped", "documents.on_problem")):
        block = summary.get(key) or {}
        if block.get("count"):
            files = [f if isinstance(f, str) else f"{f['file']}: {f['detail']}" for f in block["files"]]
            out.append(f"{key} {block['count']} file(s) ({setting}):\n  " + "\n  ".join(files))
    return out


def excluded_by(rel: str, patterns: Sequence[str]) -> bool:
    """Whether the path ``rel`` (under the root, forward slashes) matches any glob of
    ``patterns`` (``fnmatch``: ``*`` also crosses ``/``; a pattern without ``/`` is also tried
    on the file name alone, so ``*.png`` leaves out images in every folder)."""
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(rel, p) or ("/" not in p and fnmatch.fnmatchcase(name, p)) for p in patterns)


def walk(root: Path) -> Iterator[tuple[str, Path]]:
    """Every visible file under ``root`` as (path under the root, path), sorted; symlinks are
    followed. Hidden files and folders (a part starting with ``.``) are left out."""
    files = [Path(d) / f for d, _, names in os.walk(root, followlinks=True) for f in names]
    for path in sorted(files):
        rel = path.relative_to(root).as_posix()
        if not any(part.startswith(".") for part in rel.split("/")):
            yield rel, path


def cache_key(digest: str, suffix: str) -> str:
    """The conversion cache's key: content hash, suffix and the converter's name and version."""
    return f"{digest}|{suffix}|{converter_name(suffix)}"


class ConversionCache:
    """Converted texts by :func:`cache_key` in one SQLite file (``sqlite_cache.open_cache``);
    ``None`` as the path keeps nothing."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.conn = None if path is None else open_cache(path, what="conversion", timeout=60, isolation_level=None)
        if self.conn is not None and path is not None:
            with guarded(path, "conversion"):
                self.conn.execute("CREATE TABLE IF NOT EXISTS converted (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def get(self, key: str) -> Converted | None:
        if self.conn is None or self.path is None:
            return None
        with guarded(self.path, "conversion"):
            row = self.conn.execute("SELECT value FROM converted WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        obj = json.loads(row[0])
        return Converted(obj["text"], tuple(Page(int(s), str(label)) for s, label in obj["pages"]), obj["converter"])

    def put(self, key: str, result: Converted) -> None:
        if self.conn is None or self.path is None:
            return
        value = json.dumps({"text": result.text, "pages": [[p.start, p.label] for p in result.pages],
                            "converter": result.converter}, sort_keys=True, ensure_ascii=False)
        with guarded(self.path, "conversion"):
            self.conn.execute("INSERT OR REPLACE INTO converted (key, value) VALUES (?, ?)", (key, value))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


def _convert_file(path: str, suffix: str) -> Converted | tuple[str, str]:
    """A worker's job: the converted file, or (kind, detail) of its failure (picklable)."""
    try:
        return convert(Path(path).read_bytes(), suffix)
    except ConversionFailed as e:
        return (e.kind, e.detail)


def read_sources(
    root: Path,
    *,
    exclude: Sequence[str] = (),
    on_problem: str = "stop",
    workers: int = 1,
    cache: Path | None = None,
    progress: Callable[[Iterable[Any]], Iterable[Any]] = lambda it: it,
) -> SourceCorpus:
    """The corpus under ``root`` (module docstring). ``cache`` is the SQLite file of converted
    texts (None: convert everything, keep nothing). Raises ``CorpusError`` for a missing
    folder, for any problem when ``on_problem == "stop"``, and when no document is left."""
    if on_problem not in ON_PROBLEM:
        raise ValueError(f"on_problem must be one of {', '.join(ON_PROBLEM)}, got {on_problem!r}")
    root = Path(root)
    if not root.is_dir():
        raise CorpusError(f"corpus folder {root} does not exist: expected a folder of documents (one sub-folder per "
                          f"track; files directly in it form the track {track_of('x')!r})")
    real_root = root.resolve()
    excluded: list[str] = []
    problems: list[Skipped] = []
    todo: list[tuple[str, Path, str]] = []  # rel, path, suffix
    digests: dict[str, str] = {}
    texts: dict[str, bytes] = {}
    for rel, path in walk(root):
        if exclude and excluded_by(rel, exclude):
            excluded.append(rel)
            continue
        target = path.resolve()
        if not target.is_relative_to(real_root):
            problems.append(Skipped(rel, "outside", f"a link to {target}, outside the corpus; copy the file into the "
                                                    f"corpus instead"))
            continue
        suffix = path.suffix.lower()
        if suffix not in CONVERTERS:
            problems.append(Skipped(rel, "unsupported", f"suffix {path.suffix or '(none)'} is not a document format "
                                                        f"read here ({', '.join(sorted(CONVERTERS))}); leave such "
                                                        f"files out with documents.exclude (e.g. '*{path.suffix}')"))
            continue
        todo.append((rel, path, suffix))
        data = path.read_bytes()
        digests[rel] = hashlib.sha256(data).hexdigest()
        if suffix in TEXT_SUFFIXES:  # read once: its text is these bytes
            texts[rel] = data
    results: dict[str, Converted] = {}
    # opened only when some file needs converting: a folder of Markdown and text never touches it
    store = ConversionCache(cache if any(suffix not in TEXT_SUFFIXES for _, _, suffix in todo) else None)
    misses: list[tuple[str, Path, str]] = []
    cached = 0
    try:
        for rel, path, suffix in todo:
            if suffix in TEXT_SUFFIXES:
                try:
                    results[rel] = convert(texts[rel], suffix)
                except ConversionFailed as e:
                    problems.append(Skipped(rel, e.kind, e.detail))
                continue
            hit = store.get(cache_key(digests[rel], suffix))
            if hit is not None:
                results[rel] = hit
                cached += 1
            else:
                misses.append((rel, path, suffix))
        suffix_of = {rel: suffix for rel, _, suffix in misses}
        for rel, outcome in _run(misses, workers=workers, progress=progress):
            suffix = suffix_of[rel]
            if isinstance(outcome, Converted):
                store.put(cache_key(digests[rel], suffix), outcome)
                results[rel] = outcome
            else:
                problems.append(Skipped(rel, *outcome))
    finally:
        store.close()
    problems.sort(key=lambda s: s.file)
    if problems and on_problem == "stop":
        raise CorpusError(f"corpus {root} has {len(problems)} problem(s):\n  " + "\n  ".join(s.line() for s in problems)
                          + "\nfix or remove each file, or set documents.on_problem: skip in params.yaml to run "
                            "without them (each is then listed in the stage's output and the report)")
    documents: list[Document] = []
    provenance: list[Provenance] = []
    for rel in sorted(results):
        r = results[rel]
        documents.append(Document(rel, track_of(rel), r.text))
        provenance.append(Provenance(rel, Path(rel).suffix.lower().lstrip("."), r.converter, digests[rel], r.pages))
    if not documents:
        raise CorpusError(f"corpus {root} holds no document that could be read ({len(problems)} skipped, "
                          f"{len(excluded)} excluded)")
    return SourceCorpus(documents, provenance, excluded, problems, converted=len(misses), cached=cached)


def _run(misses: list[tuple[str, Path, str]], *, workers: int,
         progress: Callable[[Iterable[Any]], Iterable[Any]]) -> Iterator[tuple[str, Converted | tuple[str, str]]]:
    """Convert ``misses`` in ``workers`` processes (in this process when 1 or only one file),
    yielding each result as it arrives."""
    if not misses:
        return
    if workers <= 1 or len(misses) == 1:
        for rel, path, suffix in progress(misses):
            yield rel, _convert_file(str(path), suffix)
        return
    with cf.ProcessPoolExecutor(max_workers=min(workers, len(misses))) as pool:
        futures = {pool.submit(_convert_file, str(path), suffix): rel for rel, path, suffix in misses}
        try:
            for fut in progress(cf.as_completed(futures)):
                yield futures[fut], fut.result()
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise
