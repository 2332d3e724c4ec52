"""The corpus: a folder of markdown or plain-text documents, one track per top-level folder.

``data/corpus/runbooks/settlement-failure.md`` is document ``runbooks/settlement-failure.md``
of track ``runbooks``. Files directly under the root (no track) and files with other suffixes
are rejected, not skipped, so a misplaced file never silently drops out of an evaluation.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rag_ablation.core.errors import UserError

SUFFIXES = (".md", ".txt")


class CorpusError(UserError, ValueError):
    """A corpus that cannot be read as documented; the message lists every problem."""


@dataclass(frozen=True)
class Document:
    doc: str  # path relative to the corpus root, forward slashes
    track: str
    text: str


def load_corpus(root: Path) -> list[Document]:
    """Every document under ``root`` (symlinks followed while they stay inside it), sorted by
    path. Hidden files (``.gitignore`` and the like) are ignored; any other problem (a link
    that leads outside the corpus, a file outside a track folder, another suffix, a file that
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
        if "/" not in rel:
            problems.append(f"{rel}: file outside a track folder (move it into e.g. {root}/<track>/)")
            continue
        if path.suffix not in SUFFIXES:
            problems.append(f"{rel}: suffix {path.suffix or '(none)'} is not one of {', '.join(SUFFIXES)}")
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            problems.append(f"{rel}: not UTF-8 ({e.reason} at byte {e.start}); re-save it as UTF-8")
            continue
        if not text.strip():
            problems.append(f"{rel}: empty document; remove it or add text")
            continue
        docs.append(Document(rel, rel.split("/", 1)[0], text))
    if problems:
        raise CorpusError(f"corpus {root} has {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    if not docs:
        raise CorpusError(f"corpus {root} holds no {'/'.join(SUFFIXES)} documents in track folders")
    return docs
