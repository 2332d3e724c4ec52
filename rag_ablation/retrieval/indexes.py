"""Index files on disk, with no pickle anywhere.

- Dense: a FAISS index over L2-normalized vectors (inner product = cosine) of the type params
  name (``rag_ablation.retrieval.faiss_index``: flat ``IndexFlatIP`` by default, or IVF or
  HNSW), written with FAISS's own format as ``index.faiss``, beside ``chunk_ids.json`` (row i of
  the index is chunk ``chunk_ids[i]``).

The BM25 index folder is ``rag_ablation.retrieval.bm25``'s (``save_bm25``, ``open_bm25``), so the
dense stage does not depend on BM25 code.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rag_ablation.core.errors import UserError
from rag_ablation.core.io import replaced_folder, write_json


def save_dense(folder: Path, index, chunk_ids: list[str], meta: dict) -> None:
    """Write ``index.faiss`` and ``chunk_ids.json`` into ``folder``, all or nothing
    (``rag_ablation.core.io.replaced_folder``: a run killed midway never leaves a folder that looks
    complete; an older ``folder`` is replaced)."""
    import faiss

    with replaced_folder(folder) as tmp:
        faiss.write_index(index, str(tmp / "index.faiss"))
        write_json(tmp / "chunk_ids.json", {"chunk_ids": chunk_ids, **meta})


def load_dense(folder: Path):
    """(faiss index, chunk ids, metadata) from ``save_dense``'s folder."""
    import faiss

    meta = json.loads((folder / "chunk_ids.json").read_text(encoding="utf-8"))
    index = faiss.read_index(str(folder / "index.faiss"))
    ids = meta.pop("chunk_ids")
    if index.ntotal != len(ids):
        raise UserError(f"{folder}: index has {index.ntotal} vectors but {len(ids)} chunk ids; rebuild it")
    return index, ids, meta


def search_dense(index, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(row, cosine) of the ``k`` nearest rows, best first; fewer if the index is smaller, or if
    an approximate index (IVF with few lists probed, HNSW) reaches fewer rows."""
    scores, rows = index.search(np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), min(k, index.ntotal))
    return [(int(r), float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0]
