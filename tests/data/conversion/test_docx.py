from __future__ import annotations

import pytest

from rag_ablation.data.conversion.converted import ConversionFailed
from rag_ablation.data.conversion.docx import convert_docx, converter_name

MARKDOWN = """# Title

A paragraph with a [link](https://example.invalid/) and a footnote.[^1]

| Name | Value |
|------|-------|
| a_b  | 1.5   |

[^1]: The note text.
"""


def test_converter_name_is_pandoc():
    assert converter_name() == "pandoc 3.9"


def test_generated_docx(pandoc_maker):
    c = convert_docx(pandoc_maker(MARKDOWN, "docx"))
    assert c.pages == ()
    assert c.converter == "pandoc 3.9"
    assert c.text == ("# Title\n\nA paragraph with a [link](https://example.invalid/) and a footnote.[^1]\n\n"
                      "| Name | Value |\n|------|-------|\n| a_b  | 1.5   |\n\n[^1]: The note text.\n")


@pytest.mark.bad_input
def test_truncated_docx_is_damaged(pandoc_maker):
    data = pandoc_maker(MARKDOWN, "docx")
    with pytest.raises(ConversionFailed) as e:
        convert_docx(data[: len(data) // 2])
    assert e.value.kind == "damaged"
    assert e.value.detail.startswith("damaged DOCX: pandoc cannot read it (")


@pytest.mark.bad_input
def test_not_a_zip_is_damaged():
    with pytest.raises(ConversionFailed) as e:
        convert_docx(b"just text")
    assert (e.value.kind, e.value.detail) == (
        "damaged", "not a DOCX: it is not a zip archive (it starts with b'just'); open it in an editor and save it again as DOCX")


@pytest.mark.bad_input
def test_a_docx_without_text_is_empty(pandoc_maker):
    with pytest.raises(ConversionFailed) as e:
        convert_docx(pandoc_maker("![](missing.png)\n", "docx"))
    assert (e.value.kind, e.value.detail) == ("empty", "empty DOCX: it converts to no text; add the text or leave the file out")


def test_real_table_is_a_pipe_table(documents):
    c = convert_docx((documents / "docx/mammoth_tables.docx").read_bytes())
    assert c.text == ("Above\n\n| Top left    | Top right    |\n|-------------|--------------|\n"
                      "| Bottom left | Bottom right |\n\nBelow\n")


def test_real_merged_cells_stay_pipe_tables(documents):
    c = convert_docx((documents / "docx/python-docx_merged_cell_tables.docx").read_bytes())
    assert "<table" not in c.text and "<td" not in c.text
    assert c.text.count("|-----|-----|-----|") == 4
    assert "| 4   |     | 6   |\n|     |     | 9   |" in c.text  # merged cells: the text once, empty beside it


def test_real_footnotes_are_kept(documents):
    c = convert_docx((documents / "docx/mammoth_footnotes.docx").read_bytes())
    assert c.text == "Ouch[^1].[^2]\n\n[^1]: A tachyon walks into a bar.\n\n[^2]: Fin.\n"


def test_real_hyperlinks_without_escapes(documents):
    c = convert_docx((documents / "docx/python-docx_hyperlinks.docx").read_bytes())
    assert "One [awesome hyperlink](http://yahoo.com/)." in c.text
    assert "\\" not in c.text


def test_real_heading_styles(documents):
    c = convert_docx((documents / "docx/python-docx_heading_styles.docx").read_bytes())
    assert c.text == "no specified style\n\nmissing style\n\n# Heading 1\n\nBody Text\n"
