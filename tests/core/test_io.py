"""Folders replaced whole (rag_ablation.core.io.replaced_folder)."""
from __future__ import annotations

import pytest

from rag_ablation.core.io import replaced_folder


def test_a_finished_block_replaces_the_folder_and_leaves_nothing_beside_it(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "stale.txt").write_text("old")
    with replaced_folder(tmp_path / "out") as tmp:
        (tmp / "new.txt").write_text("new")
        assert not (tmp_path / "out" / "new.txt").exists(), "nothing is visible before the end"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_failed_block_leaves_the_old_folder_and_no_staging(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "kept.txt").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with replaced_folder(tmp_path / "out") as tmp:
            (tmp / "half.txt").write_text("half")
            raise KeyboardInterrupt
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["kept.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
