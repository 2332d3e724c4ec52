"""What a DOCX or PPTX file is before it is parsed: Office Open XML files are zip archives;
an encrypted one is an OLE compound file holding an ``EncryptedPackage`` stream."""
from __future__ import annotations

from rag_ablation.data.conversion.converted import ConversionFailed

ZIP_MAGIC = b"PK\x03\x04"
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")


def check_container(data: bytes, what: str) -> None:
    """Raise ConversionFailed unless ``data`` starts like a zip archive: ``encrypted`` for an
    OLE compound file with an ``EncryptedPackage`` stream (a password-protected Office file),
    ``damaged`` for anything else (a legacy binary ``.doc``/``.ppt`` included). ``what`` is
    ``"DOCX"`` or ``"PPTX"``."""
    if data.startswith(ZIP_MAGIC):
        return
    if data.startswith(OLE_MAGIC) and ENCRYPTED_PACKAGE in data:
        raise ConversionFailed("encrypted", f"encrypted {what}: it does not open without a password; "
                                            "save an unencrypted copy")
    if data.startswith(OLE_MAGIC):
        raise ConversionFailed("damaged", f"not a {what}: an OLE compound file (a legacy binary Office file such "
                                          f"as .doc or .ppt); save it as {what}")
    raise ConversionFailed("damaged", f"not a {what}: it is not a zip archive (it starts with {data[:4]!r}); "
                                      f"open it in an editor and save it again as {what}")
