from __future__ import annotations

import pytest

from rag_ablation.data.conversion.converted import ConversionFailed
from rag_ablation.data.conversion.plain import CONVERTER, convert_text


def test_text_exactly_as_it_is():
    raw = "# Notes  \r\n\r\n*not* \\escaped_ \ufb01ne\n\n\n"
    c = convert_text(raw.encode())
    assert (c.text, c.pages, c.converter) == (raw, (), "text")
    assert CONVERTER == "text"


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
    assert (e.value.kind, e.value.detail) == ("empty", "empty document; remove it or add text")
