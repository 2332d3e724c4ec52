"""docs/workbench.md's table of the API's requests is the server's own field table (FIELDS)."""
from __future__ import annotations

import re

from conftest import ROOT

from rag_ablation.authoring.workbench.app import FIELDS, OPTIONAL

ROW = re.compile(r"^\| `/api/([a-z/]+)` \| (.*) \|$")
FIELD = re.compile(r"`([a-z0-9_]+)` \(([a-z]+)(, optional)?\)")


def documented() -> dict[str, dict[str, tuple[str, bool]]]:
    section = (ROOT / "docs/workbench.md").read_text().split("\n## The API's requests\n", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): {f: (kind, bool(opt)) for f, kind, opt in FIELD.findall(m.group(2))}
            for line in section.splitlines() if (m := ROW.match(line))}


def test_every_endpoint_and_field_is_documented_as_the_server_checks_it():
    doc = documented()
    assert list(doc) == list(FIELDS)
    for endpoint, fields in FIELDS.items():
        assert doc[endpoint] == {f: (kind, f in OPTIONAL) for f, kind in fields.items()}, endpoint
