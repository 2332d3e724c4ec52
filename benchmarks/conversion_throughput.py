"""Conversion throughput: PDF pages per second through the dataset stage's reader, on 1 and 2
worker processes, side by side in one run.

The corpus is built in a temporary folder from real PDFs of ``$RAG_ABLATION_DATASETS/documents``
(the 244-page Node.js manual twice, as two files, so the run has more than 500 pages; the
50-page NASA guide; the 9-page NIST guide; the small pdfminer samples that convert) and, with
``--handbook``, the handbook printed to PDF by headless Chromium (``benchmarks/renditions.py``,
133 pages). ``read_sources`` runs with no conversion cache, so every file is converted, first
with ``workers=1``, then ``workers=2``, ``--repeat`` times each (the best time is kept: the
machine is shared). Pages are counted from the provenance the reader returns.

Usage:  .venv/bin/python benchmarks/conversion_throughput.py [--handbook] [--repeat 2]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from rag_ablation.core.io import datasets_dir  # noqa: E402
from rag_ablation.datasets.sources import read_sources  # noqa: E402

REAL = ["nodejs_v0.12.5_manual_244p.pdf", "nasa_cfe_app_developer_guide_50p.pdf", "nist_sp800-90b_user_guide_9p.pdf",
        "latex_toc_pagelabels.pdf", "font_sizes_styles.pdf", "federal_register_three_column.pdf",
        "japanese_vertical_cjk.pdf", "bank_statement_table.pdf", "excel_ruled_table.pdf"]


def build(folder: Path, *, handbook: bool) -> None:
    src = datasets_dir() / "documents" / "pdf"
    if not src.is_dir():
        raise SystemExit(f"real documents not found at {src} (set RAG_ABLATION_DATASETS)")
    (folder / "real").mkdir(parents=True)
    for name in REAL:
        shutil.copy(src / name, folder / "real" / name)
    shutil.copy(src / REAL[0], folder / "real" / ("copy_" + REAL[0]))  # a second file: no cache, so converted again
    if handbook:
        from renditions import render

        render(REPO / "data/corpus", folder / "handbook", "pdf", workers=2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--handbook", action="store_true", help="add the handbook printed to PDF (needs Chromium)")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        build(folder, handbook=args.handbook)
        rows = []
        for workers in (1, 2):
            best = None
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                corpus = read_sources(folder, workers=workers, cache=None)
                seconds = time.perf_counter() - t0
                best = seconds if best is None else min(best, seconds)
            pages = sum(len(p.pages) for p in corpus.provenance)
            rows.append((workers, len(corpus.documents), pages, best))
    print(f"| workers | files | pages | seconds (best of {args.repeat}) | pages per second |")
    print("|---|---|---|---|---|")
    for workers, files, pages, seconds in rows:
        print(f"| {workers} | {files} | {pages} | {seconds:.1f} | {pages / seconds:.1f} |")
    print(f"speed-up of 2 workers: {rows[0][3] / rows[1][3]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
