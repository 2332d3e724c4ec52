"""The dense index folder is written all or nothing (``save_dense``)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from rag_ablation.retrieval.faiss_index import build_flat_ip
from rag_ablation.retrieval.indexes import load_dense, save_dense


def _index(rows):
    return build_flat_ip(np.eye(4, dtype=np.float32)[:rows])


def test_save_dense_replaces_an_older_folder_and_leaves_no_temporary(tmp_path):
    save_dense(tmp_path / "dense", _index(2), ["a", "b"], {"model": "m", "dim": 4})
    save_dense(tmp_path / "dense", _index(3), ["a", "b", "c"], {"model": "m", "dim": 4})
    index, ids, meta = load_dense(tmp_path / "dense")
    assert index.ntotal == 3 and ids == ["a", "b", "c"] and meta == {"model": "m", "dim": 4}
    assert [p.name for p in tmp_path.iterdir()] == ["dense"]


def test_a_failed_save_leaves_no_folder(tmp_path, monkeypatch):
    """A write that fails after the index file is written (a full disk, an interrupt) leaves
    neither the folder nor its temporary: nothing that looks like a finished index."""
    import rag_ablation.retrieval.indexes as indexes

    def interrupted(path, obj):
        raise KeyboardInterrupt

    monkeypatch.setattr(indexes, "write_json", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_dense(tmp_path / "dense", _index(2), ["a", "b"], {"model": "m", "dim": 4})
    assert list(tmp_path.iterdir()) == []


def test_a_failed_save_keeps_the_older_folder(tmp_path, monkeypatch):
    import rag_ablation.retrieval.indexes as indexes

    save_dense(tmp_path / "dense", _index(2), ["a", "b"], {"model": "m", "dim": 4})
    monkeypatch.setattr(indexes, "write_json", lambda path, obj: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        save_dense(tmp_path / "dense", _index(3), ["a", "b", "c"], {"model": "m", "dim": 4})
    assert json.loads((tmp_path / "dense/chunk_ids.json").read_text())["chunk_ids"] == ["a", "b"]
    assert [p.name for p in tmp_path.iterdir()] == ["dense"]
