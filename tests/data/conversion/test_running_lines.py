from __future__ import annotations

from rag_ablation.data.conversion.running_lines import drop_running_lines, line_key, running_keys


def test_line_key_masks_digits_and_whitespace_and_roman_page_numbers():
    assert line_key("  Page  3 of 10 ") == line_key("Page 12 of 10") == "Page 0 of 0"
    assert line_key("iv") == line_key("XII") == line_key("7") == "0"
    assert line_key("Intro") == "Intro"


def page(*lines: str) -> str:
    return "\n\n".join(lines) + "\n\n"


def lines(text: str) -> list[str]:
    return [ln for ln in text.split("\n") if ln.strip()]


def test_header_and_page_number_on_half_the_pages_are_dropped():
    pages = [page("Manual v2", "Intro text.", "1"),
             page("Manual v2", "More text.", "Manual v2 is mentioned here.", "2"),
             page("Chapter start", "Body.", "3"),
             page("Manual v2", "Last.", "4")]
    assert running_keys(pages) == {"Manual v0", "0"}
    assert [lines(p) for p in drop_running_lines(pages)] == [
        ["Intro text."], ["More text.", "Manual v2 is mentioned here."], ["Chapter start", "Body."], ["Last."]]


def test_a_repeated_line_inside_the_page_stays():
    pages = [page("H", w + "a", w + "b", "H", w + "c", w + "d") for w in ("x", "y", "z")]
    out = drop_running_lines(pages)
    assert [lines(p) for p in out] == [[w + "a", w + "b", "H", w + "c", w + "d"] for w in ("x", "y", "z")]


def test_fewer_than_three_pages_keep_every_line():
    pages = [page("Header", "a", "1"), page("Header", "b", "2")]
    assert running_keys(pages) == set()
    assert drop_running_lines(pages) == pages


def test_a_line_on_fewer_than_half_the_pages_stays():
    pages = [page("Rare", "a"), page("b", "c"), page("d", "e"), page("f", "g"), page("Rare", "h")]
    assert "Rare" not in running_keys(pages)
    assert drop_running_lines(pages) == pages
