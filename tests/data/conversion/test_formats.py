from __future__ import annotations

import pytest

from rag_ablation.data.conversion import formats
from rag_ablation.data.conversion.converted import ConversionFailed
from rag_ablation.data.conversion.formats import CONVERTERS, convert, converter_name

SUFFIXES = [".docx", ".htm", ".html", ".md", ".pdf", ".pptx", ".rst", ".txt"]


def test_the_suffixes():
    assert sorted(CONVERTERS) == SUFFIXES


@pytest.mark.parametrize(("suffix", "name"), [
    (".pdf", "pdfminer.six 20260107"), (".docx", "pandoc 3.9"), (".pptx", "python-pptx 1.0.2"),
    (".html", "pandoc 3.9"), (".htm", "pandoc 3.9"), (".rst", "pandoc 3.9"), (".md", "text"), (".txt", "text"),
    (".PDF", "pdfminer.six 20260107")])
def test_converter_name(suffix, name):
    assert converter_name(suffix) == name


def test_convert_dispatches_on_the_suffix_in_any_case(pdf_maker, pandoc_maker):
    made = {".pdf": pdf_maker([["Hello"]]), ".docx": pandoc_maker("Hello", "docx"), ".html": pandoc_maker("Hello", "html"),
            ".htm": b"<p>Hello</p>", ".rst": b"Hello", ".md": b"Hello", ".txt": b"Hello"}
    for suffix, data in made.items():
        for s in (suffix, suffix.upper()):
            c = convert(data, s)
            assert c.text == ("Hello" if suffix in (".md", ".txt") else "Hello\n"), "text files are kept as they are"
            assert c.converter == converter_name(suffix)


def test_real_files_name_their_converter(documents):
    for path in sorted(documents.glob("*/*")):
        if path.suffix not in CONVERTERS or path.name.startswith(("encrypted", "no_text")) or path.name == "README.md":
            continue
        if path.stat().st_size > 500_000:  # the long manuals have tests of their own (test_pdf.py)
            continue
        c = convert(path.read_bytes(), path.suffix)
        assert c.converter == converter_name(path.suffix), path.name
        assert c.text.endswith("\n") and not c.text.endswith("\n\n") and c.text.strip(), path.name
        assert all(line == line.rstrip() for line in c.text.split("\n")), path.name
        assert (len(c.pages) > 0) == (path.suffix in (".pdf", ".pptx")), path.name


@pytest.mark.bad_input
@pytest.mark.parametrize(("suffix", "shown"), [(".doc", "'.doc'"), ("", "no suffix"), (".tar.gz", "'.tar.gz'")])
def test_unknown_suffix_is_unsupported(suffix, shown):
    for call in (lambda: convert(b"x", suffix), lambda: converter_name(suffix)):
        with pytest.raises(ConversionFailed) as e:
            call()
        assert e.value.kind == "unsupported"
        assert e.value.detail == (f"unsupported file type {shown}; convert it to one of "
                                  ".docx, .htm, .html, .md, .pdf, .pptx, .rst, .txt or leave it out")


def test_every_converter_has_a_name():
    assert sorted(formats._NAMES) == SUFFIXES
