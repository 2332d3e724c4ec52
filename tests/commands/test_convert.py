"""`rag-ablation convert` (rag_ablation.commands.convert): the text a file becomes, as the
pipeline reads it; a file that cannot be converted is named and the command exits 2."""
from __future__ import annotations

import subprocess
import sys

import pytest
from document_files import make_pdf, pandoc_file

from rag_ablation.commands.convert import with_pages
from rag_ablation.data.conversion.converted import Converted, Page


def convert(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag_ablation.commands.main", "convert", *args],
                          capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})


def test_a_pdf_is_printed_with_its_pages_marked(tmp_path):
    (tmp_path / "ops.pdf").write_bytes(make_pdf([["First page text here."], ["Second page: speci-", "fied here."]]))
    res = convert(tmp_path, "ops.pdf", "--pages")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "<!-- page 1 -->\nFirst page text here.\n\n<!-- page 2 -->\nSecond page: specified here.\n"
    assert res.stderr.startswith("ops.pdf: pdfminer.six ") and res.stderr.endswith(", 2 page(s)\n")


def test_out_writes_one_markdown_file_per_input(tmp_path):
    (tmp_path / "faq.docx").write_bytes(pandoc_file("# FAQ\n\nResets expire after 15 minutes.\n", "docx"))
    res = convert(tmp_path, "faq.docx", "--out", "converted")
    assert res.returncode == 0 and res.stdout == ""
    assert (tmp_path / "converted/faq.docx.md").read_text() == "# FAQ\n\nResets expire after 15 minutes.\n"


@pytest.mark.bad_input
def test_files_that_cannot_be_converted_are_named_after_the_others(tmp_path):
    (tmp_path / "ok.md").write_text("Fine text.\n")
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4\ngarbage")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG")
    res = convert(tmp_path, "bad.pdf", "ok.md", "logo.png", "missing.txt")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stdout == "Fine text.\n", "the files that convert are still printed"
    assert "3 file(s) not converted:\n  bad.pdf: " in res.stderr
    assert "\n  logo.png: unsupported file type '.png'" in res.stderr and "\n  missing.txt: no such file" in res.stderr


def test_with_pages_leaves_a_text_without_pages_alone():
    assert with_pages(Converted("abc\n", (), "text"), "page") == "abc\n"
    result = Converted("intro\nslide one\nslide two\n", (Page(6, "1"), Page(16, "2")), "python-pptx 1.0.2")
    assert with_pages(result, "slide") == "intro\n<!-- slide 1 -->\nslide one\n<!-- slide 2 -->\nslide two\n"
