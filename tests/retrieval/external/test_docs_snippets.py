"""Every `apps:` snippet of the docs is valid YAML and a valid app config (a target such as
``pkg.mod:function`` inside a YAML flow mapping must be quoted, or the file does not parse)."""
from __future__ import annotations

import re

import pytest
import yaml

from conftest import ROOT

from rag_ablation.core.config import AppConfig

PAGES = ("README.md", "docs/own-app.md")


def snippets() -> list[tuple[str, str, dict]]:
    out = []
    for page in PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
            data = yaml.safe_load(block)
            if isinstance(data, dict) and "apps" in data:
                out.extend((page, name, spec) for name, spec in data["apps"].items())
    comment = re.search(r"^#   apps:\n((?:#     .*\n)+)", (ROOT / "params.yaml").read_text(), re.M)
    assert comment, "params.yaml's apps comment lost its example"
    example = yaml.safe_load("\n".join(line[2:] for line in comment.group(1).splitlines()))
    out.extend(("params.yaml", name, spec) for name, spec in example.items())
    return out


@pytest.mark.parametrize("page, name, spec", snippets(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_apps_snippet_is_a_valid_app(page, name, spec):
    AppConfig.from_params(name, spec)


def test_the_snippets_are_found():
    assert len(snippets()) >= 6
