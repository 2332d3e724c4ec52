from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from rag_ablation.io import datasets_dir

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
# external data sets are found through one setting: $RAG_ABLATION_DATASETS, default ../shared/datasets
COVIDQA = datasets_dir() / "covidqa"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own embedding/prompt cache folder, so no test sees another's."""
    monkeypatch.setenv("RAG_ABLATION_CACHE", str(tmp_path_factory.mktemp("cache")))


@dataclass
class Q:
    """A question with only what retrieval and generation read (tests' hand-built fixtures)."""

    id: str
    question: str
    slice: str = "main"
    answerable: bool = True
