from __future__ import annotations

import pytest

from rag_ablation.data.conversion.converted import ConversionFailed, Page
from rag_ablation.data.conversion.pdf import convert_pdf, converter_name, page_texts


def failure(data: bytes) -> ConversionFailed:
    with pytest.raises(ConversionFailed) as e:
        convert_pdf(data)
    return e.value


def test_converter_name_is_pdfminer_with_its_version():
    assert converter_name() == "pdfminer.six 20260107"


def test_pages_get_their_start_offsets(pdf_maker):
    c = convert_pdf(pdf_maker([["First page text."], ["Second page text."]]))
    assert c.text == "First page text.\n\nSecond page text.\n"
    assert c.pages == (Page(0, "1"), Page(18, "2"))
    assert c.converter == "pdfminer.six 20260107"


def test_page_texts_one_string_per_page_without_form_feed(pdf_maker):
    assert page_texts(pdf_maker([["a"], [], ["b"]])) == ["a\n\n", "", "b\n\n"]


def test_ligature_and_line_end_hyphen_are_cleaned_before_offsets(pdf_maker):
    c = convert_pdf(pdf_maker([["The \ufb01le was speci-", "fied here."], ["Next."]]))
    assert c.text == "The file was specified here.\n\nNext.\n"
    assert "\ufb01" not in c.text
    assert c.text[c.pages[1].start:] == "Next.\n"


def test_running_header_and_footer_are_removed_from_four_pages(pdf_maker):
    pages = [["ACME Handbook", f"Body of page {i}: word{'s' * i}.", f"Page {i} of 4"] for i in range(1, 5)]
    c = convert_pdf(pdf_maker(pages))
    assert "ACME Handbook" not in c.text
    assert "of 4" not in c.text
    bodies = [f"Body of page {i}: word{'s' * i}." for i in range(1, 5)]
    assert c.text == "\n\n".join(bodies) + "\n"
    assert [c.text[p.start:p.start + len(b)] for p, b in zip(c.pages, bodies)] == bodies


def test_two_pages_keep_their_repeated_lines(pdf_maker):
    c = convert_pdf(pdf_maker([["Title", "a"], ["Title", "b"]]))
    assert c.text.count("Title") == 2


def test_a_page_without_text_starts_with_the_next_page(pdf_maker):
    c = convert_pdf(pdf_maker([["one"], [], ["three"]]))
    assert c.pages == (Page(0, "1"), Page(5, "2"), Page(5, "3"))


@pytest.mark.bad_input
def test_truncated_pdf_is_damaged(pdf_maker):
    data = pdf_maker([["some text"]] * 3)
    e = failure(data[: len(data) // 2])
    assert e.kind == "damaged"
    assert e.detail.startswith("damaged PDF: pdfminer cannot read it after 0 page(s) (")
    assert e.detail.endswith("); open it in a PDF viewer and save or print it to a new PDF")


@pytest.mark.bad_input
def test_not_a_pdf_is_damaged():
    e = failure(b"PK\x03\x04 a zip archive")
    assert e.kind == "damaged"
    assert e.detail == ("not a PDF: it does not start with %PDF- (it starts with 'PK\\\\x03\\\\x04 a z'); "
                        "check that the file is the PDF itself or give it its real suffix")


@pytest.mark.bad_input
def test_pages_without_any_text_have_no_text_layer(pdf_maker):
    e = failure(pdf_maker([[], []]))
    assert e.kind == "no_text_layer"
    assert e.detail == ("no text layer (a scanned or image-only PDF, 2 page(s)): there is no text to index; "
                        "OCR is not done; run OCR first (e.g. ocrmypdf) or leave the file out")


@pytest.mark.bad_input
@pytest.mark.parametrize("name", ["encrypted_aes128.pdf", "encrypted_rc4_40.pdf"])
def test_real_encrypted_pdfs(documents, name):
    e = failure((documents / "pdf" / name).read_bytes())
    assert e.kind == "encrypted"
    assert e.detail == ("encrypted PDF: it does not open without a password (PDFPasswordIncorrect); "
                        "save an unencrypted copy")
    assert name not in str(e)


def test_real_unencrypted_original_of_the_encrypted_pdfs(documents):
    c = convert_pdf((documents / "pdf/encryption_base_unencrypted.pdf").read_bytes())
    assert c.text == "Secret!\n"
    assert c.pages == (Page(0, "1"),)


@pytest.mark.bad_input
def test_real_jbig2_image_pdf_has_no_text_layer(documents):
    e = failure((documents / "pdf/no_text_layer_jbig2_image.pdf").read_bytes())
    assert e.kind == "no_text_layer"
    assert "1 page(s)" in e.detail


def test_real_nasa_manual_ligatures_spelled_out(documents):
    c = convert_pdf((documents / "pdf/nasa_cfe_app_developer_guide_50p.pdf").read_bytes())
    assert len(c.pages) == 50
    assert not any(ch in c.text for ch in "\ufb00\ufb01\ufb02\ufb03\ufb04")
    assert "specified" in c.text and "Overflows" in c.text
    assert "fixed sizes at specified physical addresses" in c.text
    # the page number that ends every page is gone: no page ends with a line holding only digits
    for p, nxt in zip(c.pages, c.pages[1:] + (Page(len(c.text), ""),)):
        assert not c.text[p.start:nxt.start].rstrip().rsplit("\n", 1)[-1].strip().isdigit()


def test_real_244_page_manual(documents):
    c = convert_pdf((documents / "pdf/nodejs_v0.12.5_manual_244p.pdf").read_bytes())
    assert [p.label for p in c.pages] == [str(i) for i in range(1, 245)]
    starts = [p.start for p in c.pages]
    assert starts == sorted(starts) and len(set(starts)) == 244 and starts[0] == 0
    assert c.text.startswith("Node.js v0.12.5 Manual & Documentation\n")
    assert "fs.unlink(path, callback)" in c.text
    assert c.text.endswith("\n") and not c.text.endswith("\n\n")
    assert not c.text.lstrip().startswith("|")  # prose, not tables


def test_real_federal_register_running_header_once(documents):
    c = convert_pdf((documents / "pdf/federal_register_three_column.pdf").read_bytes())
    assert c.pages == (Page(0, "1"),)
    assert c.text.count("Federal Register") == 1
    assert c.text.count("Thursday,  August  6,  2020") == 1  # pdfminer keeps the wide spacing
    assert "Airworthiness Directives; The Boeing" in c.text
