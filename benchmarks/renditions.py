"""Render the handbook (or any corpus of Markdown documents in track folders) into HTML, PDF or DOCX.

Every document ``<corpus>/<track>/<name>.md`` becomes ``<out>/<track>/<name>.<fmt>``:

- ``html``: pandoc, GitHub-flavoured Markdown to a standalone HTML5 page (``pagetitle`` only, so no
  title is added to the body), with a plain CSS embedded in the page (:data:`CSS`: code blocks wrap
  instead of running off the page, tables have ruled cells) and no syntax highlighting; nothing is
  fetched (no ``--css`` link, no math or font URLs).
- ``pdf``: the HTML page above (written beside the PDF as ``.pdf.html`` in a temporary folder,
  never in ``out``), printed by headless Chromium (``--print-to-pdf``, no header or footer, Letter
  paper, the CSS's margins), with the network off (a proxy at 127.0.0.1:9, where nothing listens)
  and a fresh profile per document. Debian's ``/usr/bin/chromium``; nothing is downloaded.
- ``docx``: pandoc, GitHub-flavoured Markdown to DOCX (the default reference document).

pandoc is the one ``pypandoc-binary`` ships (``pypandoc.get_pandoc_path()``), else ``pandoc`` on
PATH. ``SOURCE_DATE_EPOCH=0`` is set for pandoc, so a DOCX's timestamps do not change between runs.

Usage:  .venv/bin/python benchmarks/renditions.py FORMAT OUT [--corpus data/corpus] [--workers 2]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FORMATS = ("html", "pdf", "docx")
CHROMIUM = "/usr/bin/chromium"
TIMEOUT_S = 180

CSS = """\
@page { size: Letter; margin: 18mm 16mm; }
html { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; font-size: 10.5pt; line-height: 1.4; }
body { max-width: 48em; margin: 0 auto; padding: 0 1em; color: #111; background: #fff; }
h1, h2, h3, h4 { line-height: 1.2; margin: 1.1em 0 0.4em; page-break-after: avoid; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; } h3 { font-size: 1.1em; }
code, pre { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 0.9em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f4f4f4; border: 1px solid #ddd;
      padding: 0.5em 0.7em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #999; padding: 0.2em 0.45em; vertical-align: top; text-align: left; }
th { background: #eee; }
blockquote { margin: 0.6em 0; padding-left: 0.8em; border-left: 3px solid #ccc; color: #333; }
a { color: #114; }
"""


def pandoc_path() -> str:
    """pypandoc-binary's pandoc, else ``pandoc`` on PATH."""
    try:
        import pypandoc

        return pypandoc.get_pandoc_path()
    except (ImportError, OSError):
        found = shutil.which("pandoc")
        if not found:
            raise RuntimeError("pandoc not found: pip install pypandoc-binary") from None
        return found


def _pandoc(args: list[str], source: Path) -> None:
    env = {**os.environ, "SOURCE_DATE_EPOCH": "0"}
    done = subprocess.run([pandoc_path(), "-f", "gfm", *args, str(source)], env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"pandoc failed on {source}: {done.stderr.strip()}")


def to_html(source: Path, out: Path) -> Path:
    """``source`` (Markdown) as a standalone HTML5 page with :data:`CSS` embedded."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rendition-") as tmp:
        header = Path(tmp) / "style.html"
        header.write_text(f"<style>\n{CSS}</style>\n", encoding="utf-8")
        _pandoc(["-t", "html5", "--standalone", "--syntax-highlighting=none", "-M", "document-css=false",
                 "--metadata", f"pagetitle={source.stem}", "-H", str(header), "-o", str(out)], source)
    return out


def to_docx(source: Path, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    _pandoc(["-t", "docx", "-o", str(out)], source)
    return out


def print_pdf(html: Path, out: Path, *, chromium: str = CHROMIUM) -> Path:
    """Headless Chromium's print of ``html`` to ``out`` (module docstring)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rendition-chromium-") as profile:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-default-apps", "--mute-audio", f"--user-data-dir={profile}",
               "--proxy-server=127.0.0.1:9", "--no-pdf-header-footer", f"--print-to-pdf={out}",
               html.resolve().as_uri()]
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0 or not out.is_file() or out.stat().st_size == 0:
        raise RuntimeError(f"chromium could not print {html} (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    return out


def to_pdf(source: Path, out: Path, *, chromium: str = CHROMIUM) -> Path:
    with tempfile.TemporaryDirectory(prefix="rendition-html-") as tmp:
        html = to_html(source, Path(tmp) / f"{source.stem}.html")
        return print_pdf(html, out, chromium=chromium)


RENDERERS = {"html": to_html, "pdf": to_pdf, "docx": to_docx}


def documents(corpus: Path) -> list[Path]:
    """The Markdown documents of ``corpus`` (``<track>/<name>.md``), sorted by path."""
    return sorted(p for p in Path(corpus).glob("*/*.md") if not any(part.startswith(".") for part in p.parts))


def rendition_path(corpus: Path, source: Path, out: Path, fmt: str) -> Path:
    """Where ``source`` of ``corpus`` goes in ``out``: the same track folder and name, suffix ``.fmt``."""
    return Path(out) / source.relative_to(corpus).with_suffix(f".{fmt}")


def render(corpus: Path, out: Path, fmt: str, *, workers: int = 2, docs: list[str] | None = None) -> list[Path]:
    """Render every document of ``corpus`` (or only ``docs``, paths relative to it such as
    ``guides/fare-capping.md``) to ``fmt`` under ``out``; the written paths, in document order.
    ``workers`` documents at a time (each a pandoc, or a pandoc then a Chromium process)."""
    if fmt not in RENDERERS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if fmt == "pdf" and not Path(CHROMIUM).is_file():
        raise RuntimeError(f"{CHROMIUM} is missing: PDF renditions need Debian's chromium")
    corpus = Path(corpus)
    sources = documents(corpus) if docs is None else [corpus / d for d in docs]
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        raise FileNotFoundError(f"no such document(s): {', '.join(missing)}")
    targets = [rendition_path(corpus, s, out, fmt) for s in sources]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(RENDERERS[fmt], sources, targets))


def count_pdf_pages(path: Path) -> int:
    """Pages of a PDF, by pdfminer.six's page tree walk."""
    from pdfminer.pdfpage import PDFPage

    with open(path, "rb") as f:
        return sum(1 for _ in PDFPage.get_pages(f))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("format", choices=FORMATS)
    ap.add_argument("out", type=Path)
    ap.add_argument("--corpus", type=Path, default=REPO / "data" / "corpus")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    paths = render(args.corpus, args.out, args.format, workers=args.workers)
    seconds = time.perf_counter() - t0
    extra = f", {sum(count_pdf_pages(p) for p in paths)} pages" if args.format == "pdf" else ""
    print(f"{len(paths)} {args.format} renditions in {args.out} ({seconds:.1f} s{extra})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
