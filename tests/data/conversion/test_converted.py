from __future__ import annotations

import dataclasses

import pytest

from rag_ablation.data.conversion.converted import KINDS, ConversionFailed, Converted, Page


def test_kinds_are_the_five_reasons():
    assert KINDS == ("encrypted", "damaged", "no_text_layer", "empty", "unsupported")


def test_records_are_frozen():
    c = Converted("a\n", (Page(0, "1"),), "text")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.text = "b\n"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.pages[0].start = 3  # type: ignore[misc]


def test_failure_carries_kind_and_detail():
    e = ConversionFailed("empty", "empty DOCX: it converts to no text")
    assert (e.kind, e.detail) == ("empty", "empty DOCX: it converts to no text")
    assert str(e) == "empty: empty DOCX: it converts to no text"


@pytest.mark.bad_input
def test_failure_of_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown conversion failure kind 'broken'; expected one of: encrypted, damaged"):
        ConversionFailed("broken", "x")
