"""PDF to text with pdfminer.six, page by page (``Converted.pages`` holds each page's start).

Not markitdown: its PdfConverter (0.1.9) runs pdfplumber's table detection, which turned the
prose of a 244-page manual into Markdown tables, and it loses page boundaries
(``benchmarks/conversion_choice.py``)."""
from __future__ import annotations

import io
from importlib.metadata import version

from pdfminer.converter import TextConverter
from pdfminer.layout import LAParams
from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
from pdfminer.pdfpage import PDFPage

from rag_ablation.data.conversion.converted import ConversionFailed, Converted
from rag_ablation.data.conversion.running_lines import drop_running_lines
from rag_ablation.data.conversion.tidy import finish, join_pages

PDF_MAGIC = b"%PDF-"
MAGIC_WINDOW = 1024
"""PDF readers accept up to 1 KB of junk before ``%PDF-``; beyond that it is not a PDF."""


def converter_name() -> str:
    """``"pdfminer.six <version>"``, read from the installed package."""
    return f"pdfminer.six {version('pdfminer.six')}"


def page_texts(data: bytes) -> list[str]:
    """The text of each page in order, as pdfminer's ``extract_text`` gives it (default
    ``LAParams``: text boxes in reading order, each followed by a blank line, text outside
    boxes included), without the form feed that ends a page. Raises ConversionFailed:
    ``encrypted`` when the PDF does not open without a password (an owner password alone
    does not stop it), ``damaged`` when it is not a PDF, is truncated or pdfminer fails on it,
    or has no pages."""
    if PDF_MAGIC not in data[:MAGIC_WINDOW]:
        head = data[:8].decode("latin-1").encode("unicode_escape").decode()
        raise ConversionFailed("damaged", f"not a PDF: it does not start with %PDF- (it starts with {head!r}); "
                                          "check that the file is the PDF itself or give it its real suffix")
    rsrc = PDFResourceManager()
    out = io.StringIO()
    device = TextConverter(rsrc, out, laparams=LAParams())
    interpreter = PDFPageInterpreter(rsrc, device)
    texts: list[str] = []
    try:
        for page in PDFPage.get_pages(io.BytesIO(data)):
            interpreter.process_page(page)
            texts.append(out.getvalue().replace("\f", ""))
            out.seek(0)
            out.truncate()
    except (PDFPasswordIncorrect, PDFEncryptionError) as e:
        raise ConversionFailed("encrypted", "encrypted PDF: it does not open without a password "
                                            f"({type(e).__name__}); save an unencrypted copy") from e
    except Exception as e:  # a parser of untrusted bytes: whatever it raises means the file is broken
        raise ConversionFailed("damaged", f"damaged PDF: pdfminer cannot read it after {len(texts)} page(s) "
                                          f"({type(e).__name__}: {e}); open it in a PDF viewer and save or "
                                          "print it to a new PDF") from e
    finally:
        device.close()
    if not texts:
        raise ConversionFailed("damaged", "damaged PDF: it has no pages pdfminer can find; "
                                          "open it in a PDF viewer and save or print it to a new PDF")
    return texts


def convert_pdf(data: bytes) -> Converted:
    """One PDF as text with one :class:`Page` per physical page (labels ``"1"``, ``"2"``...).

    Each page's text (:func:`page_texts`) loses its running headers and footers
    (:func:`drop_running_lines`, documents of 3 pages or more), goes through ``clean`` and
    loses trailing whitespace before offsets are taken; pages are joined with a blank line.
    A PDF with pages but no text at all is ``no_text_layer`` (no OCR is done)."""
    texts = page_texts(data)
    if not any(t.strip() for t in texts):
        raise ConversionFailed("no_text_layer", f"no text layer (a scanned or image-only PDF, {len(texts)} page(s)): "
                                                "there is no text to index; OCR is not done; run OCR first "
                                                "(e.g. ocrmypdf) or leave the file out")
    text, pages = join_pages(drop_running_lines(texts))
    return finish(text, converter_name(), "PDF", pages)
