"""rag_ablation.datasets.sources: a corpus folder as it is, converted once per file content."""
from __future__ import annotations

import json

import pypandoc
import pytest

from rag_ablation.data.conversion.converted import Page
from rag_ablation.data.corpus import ROOT_TRACK, CorpusError, load_corpus
from rag_ablation.data.provenance import Provenance, page_of, read_provenance, where_in
from rag_ablation.datasets.sources import ConversionCache, cache_key, excluded_by, left_out_lines, read_sources


def docx_bytes(tmp_path, markdown: str, name: str = "x.docx") -> bytes:
    out = tmp_path / name
    pypandoc.convert_text(markdown, "docx", format="gfm", outputfile=str(out))
    return out.read_bytes()


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "corpus"
    (root / "guides").mkdir(parents=True)
    (root / "guides/setup.md").write_text("# Setup\n\nRun the installer twice.  \n")
    (root / "policies").mkdir()
    (root / "policies/retention.docx").write_bytes(docx_bytes(tmp_path, "# Retention\n\nLogs are kept for 90 days."))
    (root / "README.txt").write_text("Top-level page.\n")
    (root / ".gitignore").write_text("/build\n")
    return root


def test_every_format_is_read_and_keeps_its_source_name(folder, tmp_path):
    corpus = read_sources(folder, cache=tmp_path / "c.sqlite")
    assert [(d.doc, d.track) for d in corpus.documents] == [
        ("README.txt", ROOT_TRACK), ("guides/setup.md", "guides"), ("policies/retention.docx", "policies")]
    texts = {d.doc: d.text for d in corpus.documents}
    assert texts["guides/setup.md"] == "# Setup\n\nRun the installer twice.  \n", "Markdown is read as it is"
    assert "Logs are kept for 90 days." in texts["policies/retention.docx"]
    prov = {p.doc: p for p in corpus.provenance}
    assert prov["policies/retention.docx"].format == "docx"
    assert prov["policies/retention.docx"].converter.startswith("pandoc ")
    assert prov["guides/setup.md"].converter == "text" and prov["guides/setup.md"].pages == ()
    assert corpus.summary()["by_format"] == {"docx": 1, "md": 1, "txt": 1}


def test_a_second_read_converts_nothing_and_a_changed_file_only_itself(folder, tmp_path):
    cache = tmp_path / "c.sqlite"
    (folder / "policies/other.docx").write_bytes(docx_bytes(tmp_path, "Other text here.", "o.docx"))
    assert read_sources(folder, cache=cache).converted == 2
    again = read_sources(folder, cache=cache)
    assert again.converted == 0 and again.conversion_line() == "converted 0 file(s), 2 from the conversion cache"
    (folder / "policies/other.docx").write_bytes(docx_bytes(tmp_path, "Other text changed.", "o2.docx"))
    changed = read_sources(folder, cache=cache, workers=2)
    assert changed.converted == 1
    assert "Other text changed." in {d.doc: d.text for d in changed.documents}["policies/other.docx"]


def test_the_cache_key_holds_content_suffix_and_converter(folder, tmp_path):
    cache = ConversionCache(tmp_path / "c.sqlite")
    key = cache_key("ab" * 32, ".docx")
    assert key.startswith("ab" * 32 + "|.docx|pandoc ")
    assert cache.get(key) is None
    cache.close()


def test_excluded_files_are_counted_and_listed(folder, tmp_path):
    (folder / "guides/diagram.png").write_bytes(b"\x89PNG\r\n")
    (folder / "build").mkdir()
    (folder / "build/tool.py").write_text("print(1)\n")
    corpus = read_sources(folder, exclude=("*.png", "build/*"), cache=None)
    assert corpus.excluded == ["build/tool.py", "guides/diagram.png"]
    assert corpus.summary()["excluded"] == {"count": 2, "files": ["build/tool.py", "guides/diagram.png"]}


def test_excluded_by_matches_paths_and_names():
    assert excluded_by("a/b/c.png", ["*.png"]) and excluded_by("a/b/c.png", ["a/*"])
    assert not excluded_by("a/b/c.png", ["b/*"]) and not excluded_by("a/b/c.md", ["*.png"])


@pytest.mark.bad_input
def test_problems_stop_the_run_listing_each_file(folder, tmp_path):
    (folder / "guides/diagram.png").write_bytes(b"\x89PNG\r\n")
    (folder / "guides/broken.pdf").write_bytes(b"%PDF-1.4\n garbage")
    (folder / "guides/empty.md").write_text("  \n")
    with pytest.raises(CorpusError) as e:
        read_sources(folder, cache=None)
    msg = str(e.value)
    assert msg.startswith(f"corpus {folder} has 3 problem(s):\n  guides/broken.pdf: ")
    assert "\n  guides/diagram.png: suffix .png is not a document format read here" in msg
    assert "documents.exclude (e.g. '*.png')" in msg and "\n  guides/empty.md: " in msg
    assert "documents.on_problem: skip" in msg


@pytest.mark.bad_input
def test_skip_runs_without_the_problem_files_and_lists_them(folder, tmp_path):
    (folder / "guides/diagram.png").write_bytes(b"\x89PNG\r\n")
    (folder / "guides/broken.pdf").write_bytes(b"%PDF-1.4\n garbage")
    corpus = read_sources(folder, on_problem="skip", cache=None)
    assert [d.doc for d in corpus.documents] == ["README.txt", "guides/setup.md", "policies/retention.docx"]
    skipped = corpus.summary()["skipped"]
    assert skipped["count"] == 2
    assert [(f["file"], f["kind"]) for f in skipped["files"]] == [("guides/broken.pdf", "damaged"),
                                                                  ("guides/diagram.png", "unsupported")]
    lines = left_out_lines(corpus.summary())
    assert len(lines) == 1 and lines[0].startswith("skipped 2 file(s) (documents.on_problem):\n  guides/broken.pdf: ")
    assert "\n  guides/diagram.png: suffix .png is not a document format" in lines[0]
    assert left_out_lines({"excluded": {"count": 1, "files": ["a.png"]}}) == [
        "excluded 1 file(s) (documents.exclude):\n  a.png"]


@pytest.mark.bad_input
def test_a_folder_with_nothing_readable_is_refused(tmp_path):
    (tmp_path / "c/t").mkdir(parents=True)
    (tmp_path / "c/t/a.png").write_bytes(b"x")
    with pytest.raises(CorpusError, match=r"holds no document that could be read \(1 skipped, 0 excluded\)"):
        read_sources(tmp_path / "c", on_problem="skip", cache=None)
    with pytest.raises(CorpusError, match="does not exist"):
        read_sources(tmp_path / "missing", cache=None)


def test_the_built_corpus_reads_back_whatever_the_suffix(folder, tmp_path):
    """load_corpus reads the dataset stage's output: converted texts under their source names."""
    corpus = read_sources(folder, cache=None)
    out = tmp_path / "built"
    for d in corpus.documents:
        (out / d.doc).parent.mkdir(parents=True, exist_ok=True)
        (out / d.doc).write_text(d.text, encoding="utf-8")
    assert [(d.doc, d.track, d.text) for d in load_corpus(out)] == [(d.doc, d.track, d.text) for d in corpus.documents]


def test_pages_place_an_offset_in_words(tmp_path):
    pages = (Page(0, "1"), Page(100, "2"), Page(250, "3"))
    assert [page_of(pages, o) for o in (0, 99, 100, 249, 250, 10_000)] == ["1", "1", "2", "2", "3", "3"]
    assert page_of((), 5) is None
    pdf = Provenance("policies/retention.pdf", "pdf", "pdfminer.six 20260107", "0" * 64, pages)
    assert where_in("policies/retention.pdf", 120, pdf) == "page 2 of policies/retention.pdf"
    deck = Provenance("talks/intro.pptx", "pptx", "python-pptx 1.0.2", "0" * 64, pages)
    assert where_in("talks/intro.pptx", 300, deck) == "slide 3 of talks/intro.pptx"
    assert where_in("guides/setup.md", 5, None) == "guides/setup.md"
    assert where_in("policies/retention.pdf", 90, pdf, end=260) == "pages 1-3 of policies/retention.pdf"
    assert where_in("policies/retention.pdf", 100, pdf, end=250) == "page 2 of policies/retention.pdf", "end exclusive"
    path = tmp_path / "documents.jsonl"
    path.write_text(json.dumps(pdf.to_json()) + "\n\n")
    assert read_provenance(path) == {pdf.doc: pdf}
    assert read_provenance(tmp_path / "absent.jsonl") == {}
