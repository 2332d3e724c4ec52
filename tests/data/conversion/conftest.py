"""Fixtures of the conversion tests: the real documents (skipped when absent, never copied) and
builders of tiny files of each format made here (PDF by hand, DOCX/HTML/RST by pandoc)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from document_files import make_pdf, pandoc_file

from rag_ablation.core.io import datasets_dir


@pytest.fixture(scope="session")
def documents() -> Path:
    """``$RAG_ABLATION_DATASETS/documents`` (default ``../shared/datasets/documents``), read in place."""
    d = datasets_dir() / "documents"
    if not d.is_dir():
        pytest.skip(f"real documents not found at {d} (set RAG_ABLATION_DATASETS)")
    return d


@pytest.fixture(scope="session")
def pdf_maker() -> Callable[[Sequence[Sequence[str]]], bytes]:
    return make_pdf


@pytest.fixture(scope="session")
def pandoc_maker() -> Callable[[str, str], bytes]:
    return pandoc_file
