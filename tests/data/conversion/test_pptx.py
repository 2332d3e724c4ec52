from __future__ import annotations

import io
import re
import struct
import zlib

import pytest
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Inches

from rag_ablation.data.conversion.converted import ConversionFailed, Page
from rag_ablation.data.conversion.pptx import convert_pptx, converter_name, pipe_table


def png_1x1() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0\xff\0\0")) + chunk(b"IEND", b""))


def deck() -> bytes:
    """Two slides: a title + body with a line break + picture + table + notes; then a chart,
    a text box inside no placeholder, and notes."""
    prs = Presentation()
    s1 = prs.slides.add_slide(prs.slide_layouts[1])  # title and content
    s1.shapes.title.text = "Quarterly\vresults"
    s1.placeholders[1].text_frame.text = "Revenue grew"
    s1.placeholders[1].text_frame.add_paragraph().text = "Costs fell\vsharply"
    s1.shapes.add_picture(io.BytesIO(png_1x1()), Inches(1), Inches(1))
    table = s1.shapes.add_table(2, 2, Inches(1), Inches(4), Inches(4), Inches(1)).table
    for (r, c), text in {(0, 0): "Region", (0, 1): "a|b", (1, 0): "North", (1, 1): "12"}.items():
        table.cell(r, c).text = text
    s1.notes_slide.notes_text_frame.text = "Say the numbers slowly."
    s2 = prs.slides.add_slide(prs.slide_layouts[6])  # blank
    box = s2.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1))
    box.text_frame.text = "A free text box"
    data = CategoryChartData()
    data.categories = ["Q1", "Q2"]
    data.add_series("Sales", (1.5, 2))
    s2.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(2), Inches(4), Inches(3), data)
    s2.notes_slide.notes_text_frame.text = "Second notes."
    prs.slides.add_slide(prs.slide_layouts[6])  # a third slide without text
    out = io.BytesIO()
    prs.save(out)
    return out.getvalue()


def test_converter_name_is_python_pptx():
    assert converter_name() == "python-pptx 1.0.2"


def test_pipe_table_escapes_bars_and_pads_rows():
    assert pipe_table([["a|b", "c\nd"], ["e"]]) == "| a\\|b | c d |\n|---|---|\n| e |  |"
    assert pipe_table([]) == ""


def test_generated_deck():
    c = convert_pptx(deck())
    slide1 = ("# Quarterly results\n\nRevenue grew\nCosts fell\nsharply\n\n| Region | a\\|b |\n|---|---|\n| North | 12 |\n\n"
              "### Notes\n\nSay the numbers slowly.")
    slide2 = "A free text box\n\n|  | Sales |\n|---|---|\n| Q1 | 1.5 |\n| Q2 | 2 |\n\n### Notes\n\nSecond notes."
    assert c.text == slide1 + "\n\n" + slide2 + "\n"
    assert c.pages == (Page(0, "1"), Page(len(slide1) + 2, "2"), Page(len(c.text), "3"))
    assert c.converter == "python-pptx 1.0.2"
    assert "![" not in c.text


@pytest.mark.bad_input
def test_truncated_pptx_is_damaged():
    data = deck()
    with pytest.raises(ConversionFailed) as e:
        convert_pptx(data[: len(data) // 2])
    assert e.value.kind == "damaged"
    assert e.value.detail.startswith("damaged PPTX: python-pptx cannot read it (")
    assert e.value.detail.endswith("); open it in PowerPoint or LibreOffice and save it again as PPTX")


@pytest.mark.bad_input
def test_a_deck_without_text_is_empty():
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[6])
    out = io.BytesIO()
    prs.save(out)
    with pytest.raises(ConversionFailed) as e:
        convert_pptx(out.getvalue())
    assert (e.value.kind, e.value.detail) == ("empty", "empty PPTX: it converts to no text; add the text or leave the file out")


def test_real_speaker_notes(documents):
    c = convert_pptx((documents / "pptx/speaker_notes.pptx").read_bytes())
    assert c.text == ("# Title Text\n\nBody Text\n\n### Notes\n\nNotes in inherited position and size.\n\n"
                      "### Notes\n\nNotes in modified position and size.\n")
    assert c.pages == (Page(0, "1"), Page(75, "2"))
    assert c.text[75:].startswith("### Notes\n\nNotes in modified")


def test_real_placeholders_table_chart(documents):
    c = convert_pptx((documents / "pptx/populated_placeholders_table_chart.pptx").read_bytes())
    assert [p.label for p in c.pages] == [str(i) for i in range(1, 10)]
    assert "| 1st Qtr | 8.2 |" in c.text
    assert "# Title Text" in c.text
    assert "![" not in c.text and "<!--" not in c.text


def test_real_five_slides_of_text(documents):
    c = convert_pptx((documents / "pptx/text_font_props_5_slides.pptx").read_bytes())
    assert [p.label for p in c.pages] == ["1", "2", "3", "4", "5"]
    assert [c.text[p.start:].split("\n", 1)[0] for p in c.pages] == [
        "Italic = True Italic = False Italic = None", "A default textbox", "Bold on", "Underline on",
        "Shape 0 \u2013 no explicit language id"]
    assert not re.search(r"[\v\x0b]", c.text)
