"""Which converter per document format (``rag_ablation/data/conversion/``): the candidates run
side by side on the real documents of ``$RAG_ABLATION_DATASETS/documents`` (default
``../shared/datasets/documents``), so the choice can be checked again after an upgrade.

Per file and candidate it prints the characters out, the seconds, and:
- ``order`` / ``found``: of the words of a reference plain text (``\\w+`` tokens), the fraction
  found in the same order (difflib matching blocks over the token lists) and found at all
  (multiset intersection). References, independent of every candidate: HTML, BeautifulSoup's
  ``get_text`` of the page without ``<head>``, ``<script>``, ``<style>``; DOCX, the ``<w:t>``
  runs of ``word/document.xml``, footnotes and endnotes; PPTX, the ``<a:t>`` runs of the
  slides and notes pages (charts not included); RST, the source itself;
- ``esc``: backslash escapes of ASCII punctuation the output has beyond the reference (``\\_``,
  ``\\.``, ``\\#``): each one breaks the exact match of a span that contains it;
- ``tbl``: pipe-table rows (lines starting with ``|``); ``img``: image Markdown lines;
  ``html``: raw ``<div``/``<table``/``<!--`` left in the text; ``pages``: page/slide count
  known to the candidate (PDF: markitdown keeps none); ``lig``: ligature characters (U+FB00 to
  U+FB06) left in the text.

Candidates: PDF pdfminer.six (chosen) vs markitdown PdfConverter; DOCX pandoc (chosen) vs
mammoth's Markdown vs markitdown DocxConverter; PPTX python-pptx (chosen) vs markitdown
PptxConverter; HTML pandoc (chosen) vs markitdown HtmlConverter (markdownify); RST pandoc with
the Sphinx-domain rename (chosen) vs plain pandoc ``rst`` -> ``gfm``. No network, no model.

    .venv/bin/python benchmarks/conversion_choice.py [--formats pdf,docx,...] [--skip-big-pdf]
"""
from __future__ import annotations

import argparse
import difflib
import io
import re
import subprocess
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pypandoc

from rag_ablation.core.io import datasets_dir
from rag_ablation.data.conversion.converted import ConversionFailed
from rag_ablation.data.conversion.formats import convert

WORD = re.compile(r"\w+")
LIGATURE = re.compile("[\ufb00-\ufb06]")
ESCAPE = re.compile(r"\\[!-/:-@\[-`{-~]")
XML_TEXT = {"docx": re.compile(r"<w:t(?:\s[^>]*)?>([^<]*)</w:t>"), "pptx": re.compile(r"<a:t>([^<]*)</a:t>")}
BIG_PDF_BYTES = 500_000


def _markitdown(kind: str, suffix: str) -> Callable[[bytes], str]:
    def run(data: bytes) -> str:
        from markitdown import StreamInfo, converters
        conv = getattr(converters, kind)()
        return conv.convert(io.BytesIO(data), StreamInfo(extension=suffix, charset="utf-8")).markdown
    return run


def _ours(suffix: str) -> Callable[[bytes], str]:
    return lambda data: convert(data, suffix).text


def _mammoth(data: bytes) -> str:
    import mammoth
    return mammoth.convert_to_markdown(io.BytesIO(data)).value


def _plain_pandoc_rst(data: bytes) -> str:
    return subprocess.run([pypandoc.get_pandoc_path(), "--sandbox", "-f", "rst", "-t", "gfm", "--wrap=none"],
                          input=data, capture_output=True, check=True).stdout.decode()


CANDIDATES: dict[str, dict[str, Callable[[bytes], str]]] = {
    "pdf": {"pdfminer.six": _ours(".pdf"), "markitdown": _markitdown("PdfConverter", ".pdf")},
    "docx": {"pandoc": _ours(".docx"), "mammoth": _mammoth, "markitdown": _markitdown("DocxConverter", ".docx")},
    "pptx": {"python-pptx": _ours(".pptx"), "markitdown": _markitdown("PptxConverter", ".pptx")},
    "html": {"pandoc": _ours(".html"), "markitdown": _markitdown("HtmlConverter", ".html")},
    "rst": {"pandoc+rename": _ours(".rst"), "pandoc plain": _plain_pandoc_rst},
}


def reference(fmt: str, data: bytes) -> str | None:
    """The candidate-independent plain text of a file (see the module docstring), or None (PDF)."""
    if fmt == "html":
        from bs4 import BeautifulSoup
        soup = BeautifulSoup(data, "html.parser")
        for tag in soup(["head", "script", "style"]):
            tag.decompose()
        return soup.get_text(" ")
    if fmt in XML_TEXT:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = [n for n in z.namelist() if re.fullmatch(
                r"word/(document|footnotes|endnotes)\.xml|ppt/(slides/slide|notesSlides/notesSlide)\d+\.xml", n)]
            xml = " ".join(z.read(n).decode("utf-8") for n in sorted(names))
        return " ".join(XML_TEXT[fmt].findall(xml)).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    if fmt == "rst":
        return data.decode("utf-8")
    return None


def coverage(ref: str, out: str) -> tuple[float, float]:
    """(fraction of the reference's words found in order, fraction found at all)."""
    a, b = WORD.findall(ref), WORD.findall(out)
    if not a:
        return 1.0, 1.0
    in_order = sum(m.size for m in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    at_all = sum((Counter(a) & Counter(b)).values())
    return in_order / len(a), at_all / len(a)


def measure(fmt: str, path: Path) -> None:
    data = path.read_bytes()
    ref = reference(fmt, data)
    for name, run in CANDIDATES[fmt].items():
        t = time.perf_counter()
        try:
            out = run(data)
        except ConversionFailed as e:
            print(f"{fmt:4} {path.name[:38]:38} {name:13} failed: {e.kind}")
            continue
        except Exception as e:  # a candidate's own failure is a result
            print(f"{fmt:4} {path.name[:38]:38} {name:13} FAILED: {type(e).__name__}: {str(e)[:60]}")
            continue
        secs = time.perf_counter() - t
        lines = out.splitlines()
        cols = [f"chars {len(out):>7}", f"s {secs:6.2f}",
                f"tbl {sum(ln.lstrip().startswith('|') for ln in lines):>4}",
                f"img {sum('![' in ln for ln in lines):>2}",
                f"html {len(re.findall(r'<div|<table|<!--', out)):>3}"]
        if ref is not None:
            order, found = coverage(ref, out)
            esc = max(0, len(ESCAPE.findall(out)) - len(ESCAPE.findall(ref)))
            cols += [f"order {order:.3f}", f"found {found:.3f}", f"esc {esc:>4}"]
        if fmt == "pdf":
            cols.append(f"lig {len(LIGATURE.findall(out)):>3}")
            pages = len(convert(data, ".pdf").pages) if name == "pdfminer.six" else 0
            cols.append(f"pages {pages}")
        print(f"{fmt:4} {path.name[:38]:38} {name:13} " + "  ".join(cols), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--formats", default="pdf,docx,pptx,html,rst")
    ap.add_argument("--skip-big-pdf", action="store_true", help=f"leave out PDFs over {BIG_PDF_BYTES:,} bytes")
    args = ap.parse_args()
    root = datasets_dir() / "documents"
    if not root.is_dir():
        raise SystemExit(f"no documents folder at {root}; set RAG_ABLATION_DATASETS")
    for fmt in args.formats.split(","):
        for path in sorted((root / fmt).glob(f"*.{fmt}")):
            if args.skip_big_pdf and fmt == "pdf" and path.stat().st_size > BIG_PDF_BYTES:
                continue
            measure(fmt, path)


if __name__ == "__main__":
    main()
