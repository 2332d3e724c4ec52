"""What every importer shares (rag_ablation.datasets.imports): portable file names that never
collide. The all-or-nothing writes are tested through each importer (test_squad, test_beir)."""
from __future__ import annotations

import pytest

from rag_ablation.core.errors import InvalidData
from rag_ablation.datasets import imports
from rag_ablation.datasets.imports import safe_file_name, safe_file_names


def test_safe_file_names():
    assert safe_file_name("Super_Bowl_50") == "Super_Bowl_50"
    assert safe_file_name("Beyoncé").startswith("Beyonce-")
    assert safe_file_name("a b") != safe_file_name("a_b") == "a_b"
    assert not safe_file_name(".hidden").startswith(".")
    assert "/" not in safe_file_name("AC/DC")
    assert len(safe_file_name("x" * 500)) <= imports.MAX_NAME + 9


@pytest.mark.bad_input
def test_case_insensitive_collision_is_refused():
    with pytest.raises(InvalidData, match="same file name"):
        safe_file_names(["Apple", "apple"])
