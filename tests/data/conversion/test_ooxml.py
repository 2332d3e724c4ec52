from __future__ import annotations

import pytest

from rag_ablation.data.conversion.converted import ConversionFailed
from rag_ablation.data.conversion.ooxml import ENCRYPTED_PACKAGE, OLE_MAGIC, check_container


def test_a_zip_archive_passes():
    check_container(b"PK\x03\x04rest", "DOCX")


@pytest.mark.bad_input
@pytest.mark.parametrize(("data", "kind", "detail"), [
    (OLE_MAGIC + b"\0" * 8 + ENCRYPTED_PACKAGE, "encrypted",
     "encrypted PPTX: it does not open without a password; save an unencrypted copy"),
    (OLE_MAGIC + b"\0" * 8, "damaged",
     "not a PPTX: an OLE compound file (a legacy binary Office file such as .doc or .ppt); save it as PPTX"),
    (b"<html>", "damaged",
     "not a PPTX: it is not a zip archive (it starts with b'<htm'); open it in an editor and save it again as PPTX"),
])
def test_other_containers_are_refused(data, kind, detail):
    with pytest.raises(ConversionFailed) as e:
        check_container(data, "PPTX")
    assert (e.value.kind, e.value.detail) == (kind, detail)
