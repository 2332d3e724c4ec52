from __future__ import annotations

import pytest

from rag_ablation.core.errors import UnknownName

from rag_ablation.retrieval.chunking import (
    Chunk,
    char_regions,
    chunk_document,
    fixed_regions,
    get_chunker,
    heading_line,
    sections,
    table_header_prefix,
)

DOC = """# Title

## Part one

First paragraph is here. It has two sentences.

Second paragraph follows with more words in it.

## Part two

### Deeper

Text under the deeper heading.
"""

TABLE = """# T

## Limits

| key | value |
|---|---|
| alpha | 1 |
| beta | 2 |
| gamma | 3 |
| delta | 4 |
"""


def test_sections_join_a_bare_title_to_the_first_section_and_track_paths():
    secs = sections(DOC)
    assert [s.path for s in secs] == [("Title", "Part one"), ("Title", "Part two", "Deeper")]
    assert secs[0].start == 0 and DOC[secs[1].start :].startswith("## Part two")


def test_char_regions_cover_the_text_within_budget():
    text = "word " * 100
    regions = char_regions(text, 0, len(text), size=60, overlap=0)
    assert all(e - s <= 60 for s, e in regions)
    covered = "".join(text[s:e] + " " for s, e in regions)
    assert covered.split() == text.split()


def test_char_regions_prefer_paragraph_boundaries():
    text = "a" * 30 + "\n\n" + "b" * 30
    assert [text[s:e] for s, e in char_regions(text, 0, len(text), size=40, overlap=0)] == ["a" * 30, "b" * 30]


def test_overlap_repeats_the_tail_of_the_previous_chunk():
    text = " ".join(f"w{i:02d}" for i in range(40))  # 4-char words, 159 chars
    regions = char_regions(text, 0, len(text), size=40, overlap=12)
    for (_, e1), (s2, _) in zip(regions, regions[1:]):
        assert s2 < e1, "consecutive chunks should overlap"
        assert e1 - s2 <= 12


def test_hard_cut_without_any_separator():
    text = "x" * 25
    assert [(s, e) for s, e in char_regions(text, 0, 25, size=10, overlap=0)] == [(0, 10), (10, 20), (20, 25)]


@pytest.mark.bad_input
def test_bad_sizes_are_rejected():
    with pytest.raises(ValueError, match="overlap must be in"):
        char_regions("abc", 0, 3, size=10, overlap=10)
    with pytest.raises(ValueError, match="chunk size must be positive"):
        char_regions("abc", 0, 3, size=0, overlap=0)


def test_chunks_record_source_offsets_and_heading_path():
    chunks = chunk_document(DOC, doc="t/doc.md", track="t", method="chars", size=60, overlap=0)
    for c in chunks:
        assert c.body == DOC[c.start : c.end]
        assert c.doc == "t/doc.md" and c.track == "t"
        assert c.id.startswith("t/doc.md#")
    assert chunks[-1].heading_path == ("Title", "Part two", "Deeper")
    assert len({c.id for c in chunks}) == len(chunks)


def test_heading_line_is_prefixed_but_kept_apart_from_the_body():
    chunks = chunk_document(DOC, doc="d.md", track="t", method="chars", size=800, overlap=0, heading_line_on=True)
    last = chunks[-1]
    assert last.heading == "Title > Part two > Deeper"
    assert last.text == "Title > Part two > Deeper\n" + last.body
    assert last.body == DOC[last.start : last.end]


def test_heading_line_joins_nonempty_parts():
    assert heading_line(("A", "B")) == "A > B"
    assert heading_line(()) == ""


def test_split_table_repeats_its_header_in_later_pieces():
    chunks = chunk_document(TABLE, doc="d.md", track="t", method="chars", size=40, overlap=0, table_headers=True)
    table_pieces = [c for c in chunks if "| alpha" in c.body or "| gamma" in c.body or "| delta" in c.body]
    assert len(table_pieces) >= 2
    for c in table_pieces[1:]:
        assert c.body.startswith("| key | value |\n|---|---|\n")
        assert c.body.endswith(TABLE[c.start : c.end])
    plain = chunk_document(TABLE, doc="d.md", track="t", method="chars", size=40, overlap=0)
    assert all(c.body == TABLE[c.start : c.end] for c in plain)


def test_table_header_prefix_is_empty_outside_tables_and_on_the_header():
    assert table_header_prefix(TABLE, TABLE.index("## Limits")) == ""
    assert table_header_prefix(TABLE, TABLE.index("| key")) == ""
    assert table_header_prefix(TABLE, TABLE.index("| beta")) == "| key | value |\n|---|---|\n"


def test_sentence_chunker_keeps_sentences_whole():
    text = "## S\n\nDr. Smith arrived at 3 p.m. today. The meeting ran long. Everyone left at five."
    chunks = chunk_document(text, doc="d.md", track="t", method="sentences", size=60)
    bodies = [c.body for c in chunks]
    assert "Dr. Smith arrived at 3 p.m. today." in " ".join(bodies)
    assert all(len(b) <= 60 for b in bodies)
    assert all(b == text[c.start : c.end] for b, c in zip(bodies, chunks))


def test_sentence_overlap_repeats_sentences():
    text = "## S\n\n" + " ".join(f"Sentence number {i} is here." for i in range(6))
    chunks = chunk_document(text, doc="d.md", track="t", method="sentences", size=60, overlap_sentences=1)
    assert len(chunks) >= 3
    for a, b in zip(chunks, chunks[1:]):
        assert b.start < a.end


def test_chunk_json_round_trip():
    c = chunk_document(DOC, doc="d.md", track="t", method="chars", size=800, overlap=0, heading_line_on=True)[0]
    assert Chunk.from_json(c.to_json()) == c


@pytest.mark.bad_input
def test_unknown_method_lists_valid_names():
    with pytest.raises(UnknownName, match="expected one of: chars, fixed, sentences"):
        get_chunker("semantic")


def test_fixed_windows_are_plain_character_windows():
    text = "abcdefghij" * 2 + "abc"  # 23 characters, no separators respected
    size, overlap = 10, 3
    step = size - overlap
    # window n starts at n*step while the start is before len - overlap; the last is clipped
    starts = [n * step for n in range(len(text)) if n * step < len(text) - overlap]
    assert starts == [0, 7, 14]
    assert fixed_regions(text, 0, len(text), size=size, overlap=overlap) == [
        (i, min(i + size, len(text))) for i in starts]
    # exactly the anchors' formula: text[i:i + size] for i in range(0, max(len - overlap, 1), step)
    assert [text[s:e] for s, e in fixed_regions(text, 0, len(text), size=size, overlap=overlap)] == [
        text[i : i + size] for i in range(0, max(len(text) - overlap, 1), step)]


def test_fixed_windows_cut_mid_word_keep_offsets_and_stay_in_their_section():
    text = "one two three four five six"
    regions = fixed_regions(text, 4, len(text), size=8, overlap=2)  # from "two" on
    assert regions == [(4, 12), (10, 18), (16, 24), (22, 27)]
    assert text[10:18] == "ree four"  # no word boundaries
    short = fixed_regions("tiny", 0, 4, size=10, overlap=3)
    assert short == [(0, 4)]  # a text shorter than the overlap still gets its one window
    chunks = chunk_document(DOC, doc="d.md", track="t", method="fixed", size=40, overlap=10)
    for c in chunks:
        assert c.body == DOC[c.start : c.end] and c.end - c.start <= 40
    secs = sections(DOC)
    assert all(any(s.start <= c.start and c.end <= s.end for s in secs) for c in chunks)
    assert fixed_regions("a" + " " * 20 + "b", 0, 22, size=5, overlap=0) == [(0, 5), (20, 22)]  # blank windows dropped


@pytest.mark.bad_input
def test_fixed_windows_reject_bad_sizes():
    with pytest.raises(ValueError, match="overlap must be in"):
        fixed_regions("abc", 0, 3, size=10, overlap=10)


def test_plain_text_title_is_the_first_line_when_it_looks_like_one():
    from rag_ablation.retrieval.chunking import TITLE_MAX_CHARS, plain_text_title

    assert plain_text_title("\n  Disk full on the ledger host  \n\nThe disk fills up.", "runbooks/disk.txt") == \
        "Disk full on the ledger host"
    # a sentence (final period) or a long first line is not a title: the file name stem is
    assert plain_text_title("The disk fills up at night.\nMore.", "runbooks/disk-full.txt") == "disk-full"
    assert plain_text_title("x" * (TITLE_MAX_CHARS + 1), "t/long.name.txt") == "long.name"
    assert plain_text_title("y" * TITLE_MAX_CHARS, "t/a.txt") == "y" * TITLE_MAX_CHARS


def test_heading_line_works_on_plain_text():
    text = "Disk full on the ledger host\n\nThe disk fills up when logs rotate late. Free space first."
    chunks = chunk_document(text, doc="runbooks/disk.txt", track="runbooks", method="chars", size=40,
                            overlap=0, heading_line_on=True)
    assert len(chunks) > 1
    assert all(c.heading == "Disk full on the ledger host" and c.body == text[c.start : c.end] for c in chunks)
    assert all(c.heading_path == ("Disk full on the ledger host",) for c in chunks)
    untitled = chunk_document("The disk fills up.", doc="runbooks/disk-full.txt", track="runbooks",
                              method="chars", size=40, overlap=0, heading_line_on=True)
    assert untitled[0].text == "disk-full\nThe disk fills up."
    # markdown documents are unchanged: no heading, no title of their own
    assert chunk_document("plain words", doc="t/a.md", track="t", method="chars", size=40, overlap=0,
                          heading_line_on=True)[0].heading == ""


def test_chunk_corpus_passes_every_option_and_keeps_ids_unique_across_documents():
    from rag_ablation.core.config import ChunkingConfig
    from rag_ablation.retrieval.chunking import chunk_corpus, chunk_options
    cfg = ChunkingConfig(name="c", method="chars", size=40, overlap=0, heading_line=True, table_headers=True)
    options = chunk_options(cfg)
    assert options == {"method": "chars", "size": 40, "overlap": 0, "overlap_sentences": 0,
                       "heading_line_on": True, "table_headers": True}
    chunks = chunk_corpus([("t/a.md", "t", TABLE), ("t/b.md", "t", DOC)], **options)
    assert chunks == (chunk_document(TABLE, doc="t/a.md", track="t", **options)
                      + chunk_document(DOC, doc="t/b.md", track="t", **options))
    assert len({c.id for c in chunks}) == len(chunks)
    assert all(c.heading for c in chunks)
    assert chunk_corpus([("t/a.md", "t", TABLE)], method="chars", size=40) == chunk_document(
        TABLE, doc="t/a.md", track="t", method="chars", size=40)
