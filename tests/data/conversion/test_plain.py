from __future__ import annotations

import pytest

from rag_ablation.data.conversion.converted import ConversionFailed
from rag_ablation.data.conversion.plain import CONVERTER, convert_text


def test_text_unchanged_but_for_tidying():
    c = convert_text("# Notes  \r\n\r\n*not* \\escaped_ \ufb01ne\n\n\n".encode())
    assert (c.text, c.pages, c.converter) == ("# Notes\n\n*not* \\escaped_ fine\n", (), "text")
    assert CONVERTER == "text"


def test_a_byte_order_mark_is_dropped():
    assert convert_text(b"\xef\xbb\xbfhello").text == "hello\n"


@pytest.mark.bad_input
def test_not_utf8_is_damaged_with_the_byte_offset():
    with pytest.raises(ConversionFailed) as e:
        convert_text(b"abc \xff def")
    assert (e.value.kind, e.value.detail) == ("damaged", "not UTF-8 (invalid start byte at byte 4); re-save it as UTF-8")


@pytest.mark.bad_input
@pytest.mark.parametrize("data", [b"", b"  \n\t\r\n"])
def test_whitespace_only_is_empty(data):
    with pytest.raises(ConversionFailed) as e:
        convert_text(data)
    assert (e.value.kind, e.value.detail) == (
        "empty", "empty text file: it converts to no text; add the text or leave the file out")
