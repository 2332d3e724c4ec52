"""FAISS index types for dense retrieval: exact ``flat`` and approximate ``ivf`` and ``hnsw``.

Every type scores by inner product over L2-normalized vectors (inner product = cosine), so a
hit's score means the same thing whatever the index; the approximate types may only miss some of
the exact top k, never reorder or rescale what they find.

Types (``BUILDERS``, names checked in ``rag_ablation.core.config.FAISS_INDEXES``):

- ``flat``: ``IndexFlatIP``, exact; the default, and what the pipeline has always built.
- ``ivf``: ``IndexIVFFlat`` with an ``IndexFlatIP`` quantizer. Its ``nlist`` lists are k-means
  centroids trained with a fixed ``seed`` (FAISS samples at most 256 training points per list
  with that seed too), spherical (centroids normalized). **Fewer vectors than nlist: nlist is
  clamped to the number of vectors** (``effective_nlist``), so one params file serves small and
  large chunkings; the number actually used is reported by ``describe``. Searching ``nprobe =
  nlist`` lists is exact.
- ``hnsw``: ``IndexHNSWFlat`` with the inner-product metric, ``hnsw_m`` links per node and
  ``ef_construction`` candidates while building. Built on **one thread** whatever ``threads``
  says: FAISS's multi-threaded HNSW insertion is lock-based and its graph depends on thread
  timing; on one thread it is deterministic (level draws use FAISS's fixed seed).

Builds are deterministic: the same vectors and settings give a byte-identical ``index.faiss``.

``shards`` above 1 (``ivf`` only, checked by ``FaissConfig``) is not built here but by
``rag_ablation.retrieval.sharded_ivf`` straight into the output folder (an on-disk index that
retrieval memory-maps): ``rag_ablation.retrieval.indexes.save_dense_index`` chooses. With
``shards: 1`` every builder here is unchanged.

Search-time settings (``nprobe``, ``efSearch``) are part of FAISS's file format, but the dense
stage leaves FAISS's defaults there and ``set_search_params`` sets them from params after
loading, so changing them reruns the retrieve stage only, never an index build.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rag_ablation.core.config import FaissConfig
from rag_ablation.core.errors import lookup


def _as_matrix(vectors: np.ndarray) -> np.ndarray:
    if vectors.ndim != 2 or vectors.shape[0] == 0:
        raise ValueError(f"expected a non-empty 2-D array of vectors, found shape {vectors.shape}")
    return np.ascontiguousarray(vectors, dtype=np.float32)


def build_flat_ip(vectors: np.ndarray, *, threads: int = 1):
    """An exact ``IndexFlatIP`` over ``vectors`` (rows already L2-normalized)."""
    import faiss

    faiss.omp_set_num_threads(max(1, threads))
    x = _as_matrix(vectors)
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    return index


def build_flat(vectors: np.ndarray, cfg: FaissConfig, *, threads: int = 1):
    """``flat``: ``build_flat_ip``; the other ``cfg`` keys do not apply."""
    return build_flat_ip(vectors, threads=threads)


def effective_nlist(n_vectors: int, nlist: int) -> int:
    """The number of IVF lists actually built: ``nlist``, or ``n_vectors`` when there are fewer
    vectors than lists (k-means cannot make more centroids than points)."""
    return max(1, min(nlist, n_vectors))


def build_ivf(vectors: np.ndarray, cfg: FaissConfig, *, threads: int = 1):
    """``ivf``: an ``IndexIVFFlat`` (inner product) with ``effective_nlist`` lists, k-means
    trained with ``cfg.seed`` on every vector (FAISS subsamples 256 per list with the same
    seed). ``nprobe`` stays at FAISS's default: ``set_search_params`` sets it at load time."""
    import faiss

    faiss.omp_set_num_threads(max(1, threads))
    x = _as_matrix(vectors)
    d = x.shape[1]
    quantizer = faiss.IndexFlatIP(d)
    index = faiss.IndexIVFFlat(quantizer, d, effective_nlist(x.shape[0], cfg.nlist), faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = cfg.seed
    index.cp.spherical = True
    index.train(x)
    index.add(x)
    return index


def build_hnsw(vectors: np.ndarray, cfg: FaissConfig, *, threads: int = 1):
    """``hnsw``: an ``IndexHNSWFlat`` (inner product), ``cfg.hnsw_m`` links per node,
    ``cfg.ef_construction``; built on one thread (deterministic), ``threads`` is restored after.
    ``efSearch`` stays at FAISS's default: ``set_search_params`` sets it at load time."""
    import faiss

    x = _as_matrix(vectors)
    index = faiss.IndexHNSWFlat(x.shape[1], cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = cfg.ef_construction
    faiss.omp_set_num_threads(1)
    try:
        index.add(x)
    finally:
        faiss.omp_set_num_threads(max(1, threads))
    return index


Builder = Callable[..., object]
BUILDERS: dict[str, Builder] = {"flat": build_flat, "hnsw": build_hnsw, "ivf": build_ivf}


def build_index(vectors: np.ndarray, cfg: FaissConfig, *, threads: int = 1):
    """The index of type ``cfg.index`` over ``vectors`` (L2-normalized rows, row i = chunk i).
    An unknown type lists the valid ones; an empty or non-2-D array raises ``ValueError``.
    ``cfg.shards`` is not read: this is always the in-RAM index (the sharded one is built on
    disk, ``rag_ablation.retrieval.indexes.save_dense_index``)."""
    return lookup(BUILDERS, cfg.index, "FAISS index type")(vectors, cfg, threads=threads)


def index_kind(index) -> str:
    """``flat``, ``ivf`` or ``hnsw`` for an index this module builds (or ``faiss.read_index``
    returns for one); ``ValueError`` for any other FAISS index."""
    import faiss

    for kind, cls in (("flat", faiss.IndexFlat), ("ivf", faiss.IndexIVFFlat), ("hnsw", faiss.IndexHNSW)):
        if isinstance(index, cls):
            return kind
    raise ValueError(f"unsupported FAISS index {type(index).__name__}; expected one of: {', '.join(sorted(BUILDERS))}")


def set_search_params(index, cfg: FaissConfig) -> None:
    """Set the search-time settings of ``cfg`` on a loaded index: ``nprobe`` (clamped to the
    index's own nlist, which may have been clamped at build) on ``ivf``, ``efSearch`` on
    ``hnsw``; ``flat`` has none. Whatever the file held is overwritten."""
    kind = index_kind(index)
    if kind == "ivf":
        index.nprobe = min(cfg.nprobe, index.nlist)
    elif kind == "hnsw":
        index.hnsw.efSearch = cfg.ef_search


def describe(index, *, shards: int = 1) -> dict:
    """The build settings an index actually has, for the dense stage's metrics file, with sorted
    keys: ``{"index": "flat"}``, ``{"index": "ivf", "nlist": N}`` or ``{"index": "hnsw",
    "hnsw_m": M, "ef_construction": E}``. A sharded ivf build (``shards`` above 1, which FAISS's
    file does not record: the caller passes it) adds ``"shards": S``; with 1 the dict is as it
    always was."""
    kind = index_kind(index)
    if kind == "ivf":
        return {"index": kind, "nlist": int(index.nlist), **({"shards": shards} if shards > 1 else {})}
    if kind == "hnsw":
        m = int(index.hnsw.nb_neighbors(1))  # level 0 has 2 * M links, the upper levels M
        return {"ef_construction": int(index.hnsw.efConstruction), "hnsw_m": m, "index": kind}
    return {"index": kind}
