"""The corpus as the stages read it: a folder of UTF-8 texts, one track per top-level folder.

``data/corpus/runbooks/settlement-failure.md`` is document ``runbooks/settlement-failure.md``
of track ``runbooks``; a file directly under the root is of track :data:`ROOT_TRACK`.

``load_corpus`` reads a folder of texts: the one the ``dataset`` stage writes (``data/build/
dataset/corpus``, where a converted document keeps its source's name, ``guides/setup.pdf``
holding the Markdown the PDF became), or a folder of ``.md`` / ``.txt`` files. A folder as a team
has it (PDF, Word, PowerPoint, HTML, reStructuredText) is read by
``rag_ablation.datasets.sources.read_sources``, which converts it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rag_ablation.core.errors import UserError

ROOT_TRACK = "_root"
"""The track of a file directly under the corpus root (a docs tree's top-level pages)."""


class CorpusError(UserError, ValueError):
    """A corpus that cannot be read as documented; the message lists every problem."""


@dataclass(frozen=True)
class Document:
    doc: str  # path relative to the corpus root, forward slashes
    track: str
    text: str


def track_of(doc: str) -> str:
    """The track of document ``doc`` (a path under the root, forward slashes): its first
    folder, or :data:`ROOT_TRACK` for a file directly under the root."""
    return doc.split("/", 1)[0] if "/" in doc else ROOT_TRACK


def load_corpus(root: Path) -> list[Document]:
    """Every file under ``root`` as a text document (symlinks followed while they stay inside
    it), sorted by path, whatever its suffix (module docstring). Hidden files (``.gitignore`` and
    the like) are ignored; any other problem (a link that leads outside the corpus, a file that
    is not UTF-8, an empty file, no documents at all) raises ``CorpusError``."""
    root = Path(root)
    if not root.is_dir():
        raise CorpusError(f"corpus folder {root} does not exist: expected a folder with one sub-folder per track")
    docs: list[Document] = []
    problems: list[str] = []
    files = [Path(d) / f for d, _, names in os.walk(root, followlinks=True) for f in names]
    real_root = root.resolve()
    for path in sorted(files):
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        target = path.resolve()
        if not target.is_relative_to(real_root):
            problems.append(f"{rel}: a link to {target}, outside the corpus; copy the file into the corpus instead")
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            problems.append(f"{rel}: not UTF-8 ({e.reason} at byte {e.start}); re-save it as UTF-8")
            continue
        if not text.strip():
            problems.append(f"{rel}: empty document; remove it or add text")
            continue
        docs.append(Document(rel, track_of(rel), text))
    if problems:
        raise CorpusError(f"corpus {root} has {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    if not docs:
        raise CorpusError(f"corpus {root} holds no documents")
    return docs
