"""Index files on disk, with no pickle anywhere.

- Dense: a FAISS index over L2-normalized vectors (inner product = cosine) of the type params
  name (``rag_ablation.retrieval.faiss_index``: flat ``IndexFlatIP`` by default, or IVF or
  HNSW), written with FAISS's own format as ``index.faiss``, beside ``chunk_ids.json`` (row i of
  the index is chunk ``chunk_ids[i]``). With ``faiss.shards`` above 1 (``ivf``) the folder also
  holds ``index.ivfdata``, the inverted lists on disk (``rag_ablation.retrieval.sharded_ivf``),
  and ``load_dense`` memory-maps them from the folder wherever it is.

The BM25 index folder is ``rag_ablation.retrieval.bm25``'s (``save_bm25``, ``open_bm25``), so the
dense stage does not depend on BM25 code.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from rag_ablation.core.config import FaissConfig
from rag_ablation.core.errors import UserError
from rag_ablation.core.io import read_json, replaced_folder, write_json
from rag_ablation.retrieval.faiss_index import build_index, describe


def save_dense(folder: Path, index, chunk_ids: list[str], meta: dict) -> None:
    """Write ``index.faiss`` and ``chunk_ids.json`` into ``folder``, all or nothing
    (``rag_ablation.core.io.replaced_folder``: a run killed midway never leaves a folder that looks
    complete; an older ``folder`` is replaced)."""
    import faiss

    with replaced_folder(folder) as tmp:
        faiss.write_index(index, str(tmp / "index.faiss"))
        write_json(tmp / "chunk_ids.json", {"chunk_ids": chunk_ids, **meta})


def save_dense_index(folder: Path, vectors: np.ndarray, cfg: FaissConfig, chunk_ids: list[str], meta: dict, *,
                     threads: int = 1) -> dict:
    """Build the dense index of ``cfg`` over ``vectors`` (row i = chunk ``chunk_ids[i]``) and
    write it into ``folder``, all or nothing; returns its build settings (``describe``).

    ``cfg.shards`` 1: ``build_index`` then ``save_dense``, exactly as before sharding existed.
    Above 1: ``sharded_ivf.build_sharded_from_array`` writes ``index.faiss`` and
    ``index.ivfdata`` straight into the staging folder (its temporary files, the vectors as
    ``.npy`` and the shard files, in another folder beside ``folder``, deleted at the end); a
    failure (a ``ShardedIndexError`` for a bad shard count) leaves ``folder`` as it was."""
    if cfg.shards == 1:
        index = build_index(vectors, cfg, threads=threads)
        save_dense(folder, index, chunk_ids, meta)
        return describe(index)
    from rag_ablation.retrieval.sharded_ivf import build_sharded_from_array, shard_ranges

    shard_ranges(len(chunk_ids), cfg.shards)  # refuse a bad count before any work
    folder = Path(folder)
    with replaced_folder(folder) as tmp:
        report = build_sharded_from_array(vectors, cfg, tmp, threads=threads)
        if report.ntotal != len(chunk_ids):
            raise UserError(f"{folder}: sharded index has {report.ntotal} vectors but {len(chunk_ids)} chunk ids; "
                            f"rebuild it")
        write_json(tmp / "chunk_ids.json", {"chunk_ids": chunk_ids, **meta})
    return report.built


def load_dense(folder: Path):
    """(faiss index, chunk ids, metadata) from ``save_dense``'s or ``save_dense_index``'s
    folder; a sharded index (``index.ivfdata`` present) is memory-mapped read-only from this
    folder (``sharded_ivf.load_sharded``), an unsharded one read into memory."""
    import faiss

    from rag_ablation.retrieval.sharded_ivf import is_sharded, load_sharded

    meta = read_json(folder / "chunk_ids.json")
    index = load_sharded(folder) if is_sharded(folder) else faiss.read_index(str(folder / "index.faiss"))
    ids = meta.pop("chunk_ids")
    if index.ntotal != len(ids):
        raise UserError(f"{folder}: index has {index.ntotal} vectors but {len(ids)} chunk ids; rebuild it")
    return index, ids, meta


def search_dense(index, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(row, cosine) of the ``k`` nearest rows, best first; fewer if the index is smaller, or if
    an approximate index (IVF with few lists probed, HNSW) reaches fewer rows."""
    scores, rows = index.search(np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), min(k, index.ntotal))
    return [(int(r), float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0]
