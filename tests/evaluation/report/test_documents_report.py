"""The report's Documents section: only when something was converted, excluded or skipped."""
from __future__ import annotations

from rag_ablation.evaluation.report.documents_report import render_documents

TEXT_ONLY = {"documents": 45, "by_format": {"md": 45}, "pages": 0, "converters": {"md": "text"},
             "excluded": {"count": 0, "files": []}, "skipped": {"count": 0, "files": []}}


def test_a_markdown_corpus_with_nothing_left_out_gets_no_section():
    assert render_documents(TEXT_ONLY) == ""
    assert render_documents({"documents": 3}) == "", "covidqa's summary (no formats) shows nothing"


def test_converted_formats_and_every_file_left_out_are_listed():
    corpus = {"documents": 4, "by_format": {"md": 2, "pdf": 2}, "pages": 12,
              "converters": {"md": "text", "pdf": "pdfminer.six 20260107"},
              "excluded": {"count": 1, "files": ["img/logo.png"]},
              "skipped": {"count": 1, "files": [{"file": "scans/old.pdf", "kind": "no_text_layer",
                                                  "detail": "no text layer (a scanned PDF, 2 page(s))"}]}}
    text = render_documents(corpus)
    assert text.startswith("## Documents\n\n4 documents; 12 PDF pages and PowerPoint slides kept")
    assert "| pdf | 2 | pdfminer.six 20260107 |" in text and "| md | 2 | text |" in text
    assert "**1 file(s) skipped** (`documents.on_problem: skip`)" in text
    assert "- `scans/old.pdf` (no_text_layer): no text layer (a scanned PDF, 2 page(s))" in text
    assert "1 file(s) left out by `documents.exclude`:\n\n- `img/logo.png`" in text


def test_an_exclusion_alone_is_reported():
    corpus = {**TEXT_ONLY, "excluded": {"count": 2, "files": ["a.png", "b.py"]}}
    assert render_documents(corpus).endswith("2 file(s) left out by `documents.exclude`:\n\n- `a.png`\n- `b.py`\n")
