"""`rag-ablation convert`: the text a document becomes, as the pipeline reads it.

For each FILE (PDF, DOCX, PPTX, HTML, reStructuredText, Markdown, text) it prints, or writes to
``--out`` as ``<name>.md``, the Markdown the ``dataset`` stage makes of it
(``rag_ablation.data.conversion.formats.convert``), so a span can be copied from the text labels
match in, and a conversion checked by eye. A line on stderr names the converter and, for a PDF or
a PPTX, where each page or slide begins (``--pages`` prints a ``<!-- page N -->`` line before
each one instead). Goes through no cache and writes nothing else. A file that cannot be
converted is named with the reason and the command exits 2 after the others.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_ablation.core.errors import UserError
from rag_ablation.core.io import write_text
from rag_ablation.data.conversion.converted import ConversionFailed, Converted
from rag_ablation.data.conversion.formats import convert


def build_parser(prog: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="Print the Markdown text each FILE becomes in the pipeline "
                                 "(the dataset stage's conversion), to check it or copy a span from it.")
    ap.add_argument("files", nargs="+", type=Path, metavar="FILE")
    ap.add_argument("--out", type=Path, default=None, help="write FOLDER/<name>.md for each file instead of printing")
    ap.add_argument("--pages", action="store_true", help="mark where each PDF page or PPTX slide begins")
    return ap


def with_pages(result: Converted, word: str) -> str:
    """The text with a ``<!-- WORD N -->`` line before each page (no change without pages)."""
    if not result.pages:
        return result.text
    text, out = result.text, []
    starts = [p.start for p in result.pages] + [len(text)]
    out.append(text[: starts[0]])
    for page, end in zip(result.pages, starts[1:]):
        out.append(f"<!-- {word} {page.label} -->\n" + text[page.start : end])
    return "".join(out)


def run(args: argparse.Namespace) -> None:
    failed: list[str] = []
    for path in args.files:
        if not path.is_file():
            failed.append(f"{path}: no such file")
            continue
        try:
            result = convert(path.read_bytes(), path.suffix.lower())
        except ConversionFailed as e:
            failed.append(f"{path}: {e.detail}")
            continue
        word = "slide" if path.suffix.lower() == ".pptx" else "page"
        text = with_pages(result, word) if args.pages else result.text
        pages = f", {len(result.pages)} {word}(s)" if result.pages else ""
        print(f"{path}: {result.converter}, {len(result.text)} characters{pages}", file=sys.stderr)
        if args.out is not None:
            write_text(args.out / f"{path.name}.md", text)
        else:
            sys.stdout.write(text)
    if failed:
        raise UserError(f"{len(failed)} file(s) not converted:\n  " + "\n  ".join(failed))
