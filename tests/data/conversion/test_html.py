from __future__ import annotations

import pytest

from rag_ablation.data.conversion.converted import ConversionFailed
from rag_ablation.data.conversion.html import convert_html, converter_name, decode_html


def test_converter_name_is_pandoc():
    assert converter_name() == "pandoc 3.9"


def test_generated_html(pandoc_maker):
    md = "## Setup\n\nRun `make_all` now_please.\n\n```\nx = a_b * 2\n```\n\n| k | v |\n|---|---|\n| 1 | 2 |\n"
    c = convert_html(pandoc_maker(md, "html"))
    assert c.pages == ()
    assert c.text == ("## Setup\n\nRun `make_all` now_please.\n\n```\nx = a_b * 2\n```\n\n"
                      "| k   | v   |\n|-----|-----|\n| 1   | 2   |\n")


def test_head_scripts_and_styles_give_no_text():
    page = (b"<html><head><title>T</title><style>p{color:red}</style><link rel=stylesheet href='http://example.invalid/s.css'>"
            b"</head><body><script>var x = 1;</script><p>Visible.</p></body></html>")
    assert convert_html(page).text == "Visible.\n"


@pytest.mark.parametrize(("data", "text"), [
    ("caf\u00e9".encode(), "caf\u00e9"),
    (b"\xef\xbb\xbfcaf\xc3\xa9", "caf\u00e9"),
    (b"<meta charset='iso-8859-2'>\xb1", "<meta charset='iso-8859-2'>\u0105"),
    (b"<meta http-equiv=Content-Type content='text/html; charset=koi8-r'>\xc1",
     "<meta http-equiv=Content-Type content='text/html; charset=koi8-r'>\u0430"),
    (b"caf\xe9 \x93q\x94", "caf\u00e9 \u201cq\u201d"),
    (b"<meta charset=nonsense>\xe9", "<meta charset=nonsense>\u00e9"),
])
def test_decode_html(data, text):
    assert decode_html(data) == text


@pytest.mark.bad_input
def test_a_page_without_visible_text_is_empty():
    with pytest.raises(ConversionFailed) as e:
        convert_html(b"<html><head><title>Only a title</title></head><body><img src=x.png></body></html>")
    assert (e.value.kind, e.value.detail) == ("empty", "empty HTML: it converts to no text; add the text or leave the file out")


def test_real_pre_blocks_verbatim(documents):
    c = convert_html((documents / "html/pcre2syntax.html").read_bytes())
    assert ("  \\x         where x is non-alphanumeric is a literal x\n"
            "  \\Q...\\E    treat enclosed characters as literal\n") in c.text
    assert "  \\a         alarm, that is, the BEL character (hex 07)\n" in c.text
    assert "PCRE2_EXTENDED is set" in c.text  # no \_ escape


def test_real_index_tables(documents):
    c = convert_html((documents / "html/pcre2_index_tables.html").read_bytes())
    rows = [ln for ln in c.text.splitlines() if ln.startswith("|")]
    assert len(rows) == 103
    assert any("[pcre2syntax](pcre2syntax.html)" in r for r in rows)


def test_real_expat_reference(documents):
    c = convert_html((documents / "html/expat_reference.html").read_bytes())
    assert c.text.startswith("# The Expat XML Parser Release 2.8.3\n\n"
                             "Expat is a library, written in C, for parsing XML documents.")
    assert "XML_SetBillionLaughsAttackProtectionMaximumAmplification" in c.text
    assert "<div" not in c.text and "![" not in c.text
