"""The report's section on the corpus files: what the ``dataset`` stage converted, left out
(``documents.exclude``) and skipped (``documents.on_problem: skip``), from ``metrics/corpus.json``.

Shown only when it has something to say: a corpus of Markdown and text files only, with nothing
excluded or skipped, gets no section. Otherwise: documents per format with the converter of each
and the pages or slides kept, then every file left out, each with its reason, so a file missing
from the evaluation is never silent.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TEXT_FORMATS = ("md", "txt")


def render_documents(corpus: Mapping[str, Any]) -> str:
    """The section as Markdown (module docstring); empty text when nothing applies."""
    by_format: Mapping[str, int] = corpus.get("by_format") or {}
    converters: Mapping[str, str] = corpus.get("converters") or {}
    excluded = corpus.get("excluded") or {}
    skipped = corpus.get("skipped") or {}
    converted = {f: n for f, n in by_format.items() if f not in TEXT_FORMATS}
    if not converted and not excluded.get("count") and not skipped.get("count"):
        return ""
    lines = ["## Documents", ""]
    if by_format:
        pages = int(corpus.get("pages") or 0)
        lines += [f"{int(corpus.get('documents') or 0)} documents"
                  + (f"; {pages} PDF pages and PowerPoint slides kept, so passages are placed by page" if pages else "")
                  + ". Converted once per file content (docs/datasets.md, \"Documents as they are\").", "",
                  "| format | documents | read by |", "|---|---|---|"]
        lines += [f"| {f} | {n} | {converters.get(f, '-')} |" for f, n in sorted(by_format.items())]
    if skipped.get("count"):
        lines += ["", f"**{skipped['count']} file(s) skipped** (`documents.on_problem: skip`): not in this "
                      "evaluation. Fix or remove each:", ""]
        lines += [f"- `{f['file']}` ({f['kind']}): {f['detail']}" for f in skipped.get("files", [])]
    if excluded.get("count"):
        lines += ["", f"{excluded['count']} file(s) left out by `documents.exclude`:", ""]
        lines += [f"- `{f}`" for f in excluded.get("files", [])]
    return "\n".join(lines) + "\n"
