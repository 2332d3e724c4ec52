"""Prompt templates: plain-text files under ``prompts/`` with ``{question}`` and, for answer
prompts, ``{passages}`` placeholders.

Placeholders are replaced literally and in one pass (no ``str.format``), so braces or a
``{question}`` inside passages or questions are never interpreted. A template missing a
placeholder it needs is rejected when loaded.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

from rag_ablation.core.errors import UserError


class TemplateError(UserError, ValueError):
    """A prompt template that is missing or lacks a placeholder."""


def load_template(folder: Path, name: str, *, needs: Sequence[str]) -> str:
    """The text of ``folder/name.txt``; it must contain ``{p}`` for every ``p`` in ``needs``."""
    path = Path(folder) / f"{name}.txt"
    if not path.is_file():
        found = sorted(p.stem for p in Path(folder).glob("*.txt")) if Path(folder).is_dir() else []
        raise TemplateError(f"prompt template {path} not found; templates in {folder}: {', '.join(found) or 'none'}")
    text = path.read_text(encoding="utf-8")
    missing = [p for p in needs if "{" + p + "}" not in text]
    if missing:
        raise TemplateError(
            f"prompt template {path} lacks the placeholder(s) {', '.join('{' + p + '}' for p in missing)}; add them"
        )
    return text


def fill(template: str, **values: str) -> str:
    """Replace each ``{name}`` of the template with its value, literally, in one pass: text that
    comes in a value (a passage or a question holding ``{question}``, braces, ``%s``) is never
    read as a placeholder. Placeholders not named in ``values`` stay as they are."""
    if not values:
        return template
    pattern = re.compile("|".join(re.escape("{" + name + "}") for name in values))
    return pattern.sub(lambda m: values[m.group(0)[1:-1]], template)


def format_passages(texts: Sequence[str]) -> str:
    """Number the passages ``[1]``, ``[2]``, ... one block each, separated by blank lines."""
    return "\n\n".join(f"[{i}] {t.strip()}" for i, t in enumerate(texts, start=1))


def user_messages(prompt: str) -> list[dict[str, str]]:
    """One user turn: the chat template of the model supplies any system text."""
    return [{"role": "user", "content": prompt}]


def messages_hash(messages: list[dict[str, str]]) -> str:
    """sha256 of the canonical JSON of the messages: identifies the exact prompt sent."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
