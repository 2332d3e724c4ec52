from __future__ import annotations

import pytest

from rag_ablation.data.conversion.converted import ConversionFailed, Page
from rag_ablation.data.conversion.tidy import finish, join_pages, tidy


def test_tidy_cleans_strips_line_ends_and_blank_edges():
    assert tidy("\n\n  code  \r\nthe \ufb01rst speci-\n  fied\u00ad word \t\n\n\n") == "  code\nthe first specified word"


def test_tidy_is_idempotent():
    once = tidy("a -\nb\n\ufb02ow  \n")
    assert tidy(once) == once


def test_join_pages_offsets_are_of_the_tidied_text():
    text, pages = join_pages(["  \ufb01rst  \n", "second-\nhalf\n"])
    assert text == "  first\n\nsecondhalf"
    assert pages == (Page(0, "1"), Page(9, "2"))
    assert text[pages[1].start:].startswith("secondhalf")


def test_an_empty_page_starts_where_the_next_page_with_text_starts():
    text, pages = join_pages(["", "one", "  \n", "two", ""])
    assert text == "one\n\ntwo"
    assert [p.start for p in pages] == [0, 0, 5, 5, 9]  # the last: after the final newline finish adds
    assert [p.label for p in pages] == ["1", "2", "3", "4", "5"]


def test_finish_ends_with_one_newline():
    c = finish("text\n\n\n", "text", "text file")
    assert (c.text, c.pages, c.converter) == ("text\n", (), "text")


@pytest.mark.bad_input
@pytest.mark.parametrize("text", ["", " \n\t\n", "\u200b\ufeff"])
def test_finish_refuses_empty_text(text):
    with pytest.raises(ConversionFailed) as e:
        finish(text, "pandoc 3.9", "DOCX")
    assert e.value.kind == "empty"
    assert e.value.detail == "empty DOCX: it converts to no text; add the text or leave the file out"
