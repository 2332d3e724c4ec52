"""Tiny documents of each format made in the tests (shared by the conversion tests and the
end-to-end run of a mixed-format corpus): a PDF written by hand, DOCX/HTML/RST by pandoc."""
from __future__ import annotations

import subprocess
from collections.abc import Sequence

import pypandoc


def _pdf_string(text: str) -> bytes:
    """A PDF literal string: latin-1 bytes with ``\\``, ``(`` and ``)`` escaped; ``\\ufb01``
    becomes code 128, which the font's encoding maps to the glyph ``/fi``."""
    raw = text.replace("\ufb01", "\x80").encode("latin-1")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def make_pdf(pages: Sequence[Sequence[str]]) -> bytes:
    """A valid PDF (correct xref) of US-letter pages, each showing its lines top to bottom in
    12 pt Helvetica, 14 pt apart (so pdfminer groups a page's lines into one text box). An
    empty list of lines gives a page without text. ``\\ufb01`` in a line is drawn as the
    ``fi`` ligature glyph (pdfminer reads it back as U+FB01)."""
    n = len(pages)
    font_id, pages_id = 3, 2
    objs: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        font_id: (b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << /Type /Encoding "
                  b"/BaseEncoding /WinAnsiEncoding /Differences [128 /fi] >> >>"),
    }
    kids = []
    for i, lines in enumerate(pages):
        page_id, content_id = 4 + 2 * i, 5 + 2 * i
        kids.append(f"{page_id} 0 R".encode())
        ops = [b"BT /F1 12 Tf 14 TL 72 720 Td"]
        for line in lines:
            ops.append(_pdf_string(line) + b" Tj T*")
        ops.append(b"ET")
        stream = b"\n".join(ops) if lines else b""
        objs[page_id] = (f"<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 612 792] "
                         f"/Resources << /Font << /F1 {font_id} 0 R >> >> /Contents {content_id} 0 R >>").encode()
        objs[content_id] = f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream"
    objs[pages_id] = b"<< /Type /Pages /Kids [" + b" ".join(kids) + f"] /Count {n} >>".encode()
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for oid in sorted(objs):
        offsets[oid] = len(out)
        out += f"{oid} 0 obj\n".encode() + objs[oid] + b"\nendobj\n"
    xref = len(out)
    size = max(objs) + 1
    out += f"xref\n0 {size}\n0000000000 65535 f \n".encode()
    for oid in range(1, size):
        out += f"{offsets[oid]:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def pandoc_file(markdown: str, to: str) -> bytes:
    """``markdown`` written by pandoc as ``to`` (``"docx"``, ``"html"``, ``"rst"``); the bytes."""
    res = subprocess.run([pypandoc.get_pandoc_path(), "--sandbox", "-f", "markdown", "-t", to, "-o", "-"],
                         input=markdown.encode(), capture_output=True, check=True)
    return res.stdout
