"""A sharded ``ivf`` build (``faiss.shards > 1``): one trained quantizer, inverted lists filled
shard by shard in processes of their own, merged into one on-disk index that search memory-maps.

The result searches exactly like the in-RAM ``IndexIVFFlat`` of the same trained quantizer over
the same vectors: equal ids and scores, in the same order, for every ``nprobe``. It is not the
index ``build_ivf`` builds with ``shards: 1``, whose k-means trains on every vector (FAISS
subsampling them); here the training sample is drawn by this module (``training_sample``), so
that no process has to hold all vectors.

Steps (``build_sharded``), each in a process of its own except the first:

1. **Train** (the calling process): k-means with ``cfg.seed`` (spherical, inner product, as
   ``build_ivf``) on ``training_sample``: ``min(n, 256 x nlist)`` rows chosen without
   replacement by ``numpy.random.default_rng(seed)``, taken in row order and read from the
   ``.npy`` file a block at a time (so this process holds the sample, not all vectors; at 1M x
   384 and nlist 1024 the sample is 262,144 rows, 384 MB). 256 per list is FAISS's
   own ``max_points_per_centroid``, so FAISS subsamples no further. ``nlist`` is clamped to the
   number of vectors as in ``build_ivf`` (``effective_nlist``). The trained, empty index is
   written to the work folder (``trained.faiss``).
2. **Fill** (one spawned process per shard, ``threads`` at a time, FAISS on one thread in
   each): shard ``i`` is the ``i``-th of ``shards`` contiguous row ranges of near-equal size
   (``shard_ranges``). Its process reads ``trained.faiss``, reads its rows from the ``.npy``
   file memory-mapped (``BLOCK`` rows at a time, each block's mapping closed after it is added,
   so neither this process nor any other holds all vectors) and adds them with
   ``add_with_ids`` under their global row numbers, then writes its inverted lists as raw
   files (``shard_files``: sizes, codes and ids of every list, list 0 first).
3. **Merge** (one spawned process, ``merge_shards``): FAISS's ``OnDiskInvertedLists`` lays out
   and sizes ``index.ivfdata`` and the shards' lists are copied into it in shard order with
   sequential file reads and writes; the files are byte for byte those of FAISS's own
   ``merge_from_multiple`` (``faiss.contrib.ondisk.merge_ondisk``), which would instead keep every
   shard and the output mapped and resident in one process. The index written beside it as
   ``index.faiss`` names the lists file by its bare name. Within each list the rows stay in row
   order, as an in-RAM ``add`` leaves them.

``load_sharded`` reads ``index.faiss`` with ``IO_FLAG_ONDISK_SAME_DIR | IO_FLAG_READ_ONLY``: the
lists are memory-mapped read-only from the ``index.ivfdata`` beside it wherever the folder now
is (DVC caches outputs and checks them out elsewhere, possibly as read-only links).
``IO_FLAG_MMAP`` must not be added: FAISS 1.15 then skips the on-disk lists and crashes on search.

The files are deterministic: the same vectors and settings give byte-identical ``index.faiss``
and ``index.ivfdata``. Bad input raises ``ShardedIndexError`` (a ``UserError``) before anything
is written: more shards than vectors, or a merged index whose vector count is not the number
of rows (a shard lost rows). The caller builds into a temporary folder and renames it at the
end (``rag_ablation.retrieval.indexes.save_dense_index``).
"""
from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rag_ablation.core.config import FaissConfig
from rag_ablation.core.errors import UserError
from rag_ablation.core.pipeline_files import stage_target

INDEX_FILE = "index.faiss"
IVFDATA_FILE = "index.ivfdata"
"""The on-disk inverted lists beside ``index.faiss``; its presence marks a sharded folder."""
SAMPLE_PER_LIST = 256
"""Training rows per IVF list (FAISS's ``max_points_per_centroid``)."""
BLOCK = 65_536
"""Rows a shard process maps and adds at a time."""


class ShardedIndexError(UserError, ValueError):
    """A sharded build that cannot be made as asked; the message says why and how to fix it."""


@dataclass
class BuildReport:
    """What ``build_sharded`` did: the build settings as built (``describe``'s keys) and the peak
    memory of each process (``process_memory``'s dicts, bytes): ``train`` is the calling process
    at the end of training, ``shards`` one per shard, ``merge`` the merging process; and the
    wall seconds of each step (``seconds``: ``train``, ``fill``, ``merge``)."""

    built: dict
    ntotal: int
    train: dict = field(default_factory=dict)
    shards: list[dict] = field(default_factory=list)
    merge: dict = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def process_memory() -> dict[str, int]:
    """This process's memory from ``/proc/self/status``, in bytes: ``peak_rss`` (VmHWM: the most
    resident memory so far, memory-mapped file pages included), and now ``rss_anon`` (private
    memory) and ``rss_file`` (file pages mapped and resident: page cache, reclaimable); and its
    ``pid`` (so that an outside sampler can tell the processes apart). Where ``/proc`` is
    missing, ``peak_rss`` comes from ``getrusage`` and the others are 0."""
    out = {"peak_rss": 0, "rss_anon": 0, "rss_file": 0, "pid": os.getpid()}
    keys = {"VmHWM": "peak_rss", "RssAnon": "rss_anon", "RssFile": "rss_file"}
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name in keys:
                    out[keys[name]] = int(value.split()[0]) * 1024
    except OSError:
        import resource

        out["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return out


def shard_ranges(n: int, shards: int) -> list[tuple[int, int]]:
    """``shards`` contiguous ``(start, stop)`` row ranges covering ``0..n`` in order; the first
    ``n % shards`` ranges get one row more (``numpy.array_split``'s rule), so sizes differ by at
    most one. More shards than rows (or fewer than 1) raises ``ShardedIndexError``."""
    if shards < 1 or shards > n:
        raise ShardedIndexError(f"faiss.shards: {shards} shards for {n} chunks; each shard needs at least one "
                                f"chunk: set faiss.shards to at most {n} (or 1 for an in-RAM index)")
    size, extra = divmod(n, shards)
    bounds = [0]
    for i in range(shards):
        bounds.append(bounds[-1] + size + (1 if i < extra else 0))
    return list(zip(bounds[:-1], bounds[1:]))


def _shape(vectors: np.ndarray | Path) -> tuple[int, int]:
    """The (rows, dimensions) of an array or ``.npy`` file; ``ValueError`` unless 2-D, non-empty."""
    shape = np.load(vectors, mmap_mode="r").shape if isinstance(vectors, Path) else vectors.shape
    if len(shape) != 2 or shape[0] == 0:
        raise ValueError(f"expected a non-empty 2-D array of vectors, found shape {shape}")
    return int(shape[0]), int(shape[1])


def sample_rows(n: int, nlist: int, seed: int) -> np.ndarray:
    """The row numbers k-means trains on, increasing: all ``n`` when ``n <= 256 x nlist``, else
    ``256 x nlist`` rows chosen without replacement by ``numpy.random.default_rng(seed)``."""
    size = min(n, SAMPLE_PER_LIST * nlist)
    if size == n:
        return np.arange(n, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))


def training_sample(vectors: np.ndarray | Path, nlist: int, seed: int) -> np.ndarray:
    """A float32 copy of the ``sample_rows(n, nlist, seed)`` rows of ``vectors``, an array or a
    ``.npy`` file. A file is read memory-mapped ``BLOCK`` rows at a time, each mapping closed
    after its rows are copied, so the process holds the sample and one block's pages at most.
    ``nlist`` is the effective one (already clamped to ``n``)."""
    n, d = _shape(vectors)
    rows = sample_rows(n, nlist, seed)
    if not isinstance(vectors, Path):
        return np.ascontiguousarray(vectors if len(rows) == n else vectors[rows], dtype=np.float32)
    out = np.empty((len(rows), d), dtype=np.float32)
    for a in range(0, n, BLOCK):
        lo, hi = np.searchsorted(rows, [a, a + BLOCK])
        if hi > lo:
            mapped = np.load(vectors, mmap_mode="r")
            out[lo:hi] = mapped[rows[lo:hi]]
            del mapped  # closes the mapping
    return out


def train_quantizer(vectors: np.ndarray | Path, cfg: FaissConfig, *, threads: int = 1):
    """A trained, empty ``IndexIVFFlat`` (inner product, ``IndexFlatIP`` quantizer, spherical
    k-means seeded with ``cfg.seed``) with ``effective_nlist(n, cfg.nlist)`` lists, trained on
    ``training_sample(vectors, nlist, cfg.seed)``. ``vectors``: an array or a ``.npy`` file."""
    import faiss

    from rag_ablation.retrieval.faiss_index import effective_nlist

    n, d = _shape(vectors)
    faiss.omp_set_num_threads(max(1, threads))
    nlist = effective_nlist(n, cfg.nlist)
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = cfg.seed
    index.cp.spherical = True
    index.train(training_sample(vectors, nlist, cfg.seed))
    return index


def shard_files(prefix: str) -> tuple[str, str, str]:
    """The three files of the shard ``prefix``: ``<prefix>.sizes.npy`` (int64, the number of
    entries of each IVF list), ``<prefix>.codes`` (every list's codes, list 0 first) and
    ``<prefix>.ids`` (every list's int64 ids, in the same order)."""
    return f"{prefix}.sizes.npy", f"{prefix}.codes", f"{prefix}.ids"


def fill_shard(vectors_path: str, start: int, stop: int, trained_path: str, shard_prefix: str) -> dict:
    """Shard process: add rows ``start..stop`` of the ``.npy`` file ``vectors_path`` (read
    memory-mapped, ``BLOCK`` rows at a time) under their global row numbers to a copy of the
    trained index ``trained_path``, then write its inverted lists as ``shard_files(shard_prefix)``
    (plain sequential writes). Returns ``{"rows": stop - start, **process_memory()}`` (measured
    after writing). FAISS runs on one thread."""
    import faiss

    faiss.omp_set_num_threads(1)
    index = faiss.read_index(trained_path)
    for a in range(start, stop, BLOCK):
        b = min(stop, a + BLOCK)
        mapped = np.load(vectors_path, mmap_mode="r")
        block = np.ascontiguousarray(mapped[a:b], dtype=np.float32)
        index.add_with_ids(block, np.arange(a, b, dtype=np.int64))
        del block, mapped  # closes the mapping: its pages leave this process's memory
    ivf = faiss.extract_index_ivf(index)
    lists, code_size = ivf.invlists, ivf.code_size
    assert lists is not None
    sizes = np.array([lists.list_size(j) for j in range(ivf.nlist)], dtype=np.int64)
    sizes_path, codes_path, ids_path = shard_files(shard_prefix)
    with open(codes_path, "wb") as codes, open(ids_path, "wb") as ids:
        for j in np.flatnonzero(sizes):
            m = int(sizes[j])
            codes.write(faiss.rev_swig_ptr(lists.get_codes(int(j)), m * code_size).data)
            ids.write(faiss.rev_swig_ptr(lists.get_ids(int(j)), m).data)
    np.save(sizes_path, sizes)
    return {"rows": stop - start, **process_memory()}


def merge_shards(trained_path: str, shard_prefixes: list[str], out_dir: str, expected: int) -> dict:
    """Merge process: the shards' inverted lists (``shard_files``), in the order given, into
    ``out_dir``'s ``index.ivfdata``, and the trained index over them into ``out_dir``'s
    ``index.faiss``, which names the lists file by its bare name (the process works in
    ``out_dir``).

    The files are byte for byte what FAISS's own ``OnDiskInvertedLists.merge_from_multiple``
    (``faiss.contrib.ondisk.merge_ondisk``) writes from the same shards: FAISS lays the lists out
    (``set_all_lists_sizes``: list j's codes, then its ids, capacity = size, lists in order) and
    sizes the file (``update_totsize``); this function then fills it with plain sequential writes,
    reading each shard's files sequentially. FAISS's merge instead maps every shard and the output
    into the process, which then holds them all resident (about twice the index) until it ends;
    here the process holds one list of one shard at a time.

    A total other than ``expected`` raises ``ShardedIndexError`` before anything is written.
    Returns ``{"ntotal": N, **process_memory()}``. Changes this process's working directory: run
    it in a process of its own."""
    import faiss

    files = [shard_files(os.path.abspath(p)) for p in shard_prefixes]
    index = faiss.read_index(os.path.abspath(trained_path))
    ivf = faiss.extract_index_ivf(index)
    nlist, code_size = ivf.nlist, ivf.code_size
    sizes = np.stack([np.load(f[0]) for f in files]) if files else np.zeros((0, nlist), dtype=np.int64)
    ntotal = int(sizes.sum())
    if ntotal != expected:
        raise ShardedIndexError(f"merged sharded index has {ntotal} vectors, expected {expected} (one per chunk): "
                                f"a shard lost rows; rebuild the index (dvc repro -f {stage_target('dense@<chunking>')})")
    totals = np.ascontiguousarray(sizes.sum(axis=0), dtype=np.uint64)
    os.chdir(out_dir)
    merged = faiss.OnDiskInvertedLists(nlist, code_size, IVFDATA_FILE)
    merged.set_all_lists_sizes(faiss.swig_ptr(totals))
    merged.update_totsize(ntotal * (code_size + 8))  # creates the file at its final size (mapped, not touched here)
    streams = [(open(f[1], "rb"), open(f[2], "rb")) for f in files]
    try:
        with open(IVFDATA_FILE, "r+b") as out:
            for j in np.flatnonzero(totals):
                for (codes, _), m in zip(streams, sizes[:, j]):
                    out.write(codes.read(int(m) * code_size))
                for (_, ids), m in zip(streams, sizes[:, j]):
                    out.write(ids.read(int(m) * 8))
    finally:
        for codes, ids in streams:
            codes.close()
            ids.close()
    index.ntotal = ivf.ntotal = ntotal
    ivf.replace_invlists(merged, True)
    merged.this.disown()  # type: ignore[attr-defined]  # the index owns the lists now
    faiss.write_index(index, INDEX_FILE)
    return {"ntotal": ntotal, **process_memory()}


def _pool(workers: int) -> ProcessPoolExecutor:
    """Spawned processes (no fork of a process that may hold threads and all vectors), one task
    each, so every shard's memory is its own process's."""
    return ProcessPoolExecutor(max_workers=max(1, workers), mp_context=multiprocessing.get_context("spawn"),
                               max_tasks_per_child=1)


def build_sharded(vectors_path: Path, cfg: FaissConfig, out_dir: Path, *, threads: int = 1,
                  work_dir: Path | None = None) -> BuildReport:
    """Build the sharded index of the ``.npy`` file ``vectors_path`` (float32, L2-normalized
    rows, row i = chunk i) into the existing, empty folder ``out_dir``: ``index.faiss`` and
    ``index.ivfdata`` (module docstring). ``cfg.shards`` shards are filled ``threads`` at a time
    (memory grows with ``threads`` x the shard size); a process that dies (killed, out of
    memory) raises ``ShardedIndexError``;
    temporary files (trained index, shard files) go to ``work_dir`` (default: a fresh folder
    beside ``out_dir``) and are deleted whatever happens. ``out_dir`` is left as found on
    error only if the caller discards it (``save_dense_index`` does)."""
    import faiss

    from rag_ablation.retrieval.faiss_index import describe

    vectors_path = Path(vectors_path)
    n = _shape(vectors_path)[0]
    ranges = shard_ranges(n, cfg.shards)
    own_work = work_dir is None
    work = Path(work_dir) if work_dir is not None else \
        Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".shards"))
    try:
        t0 = time.perf_counter()
        trained = train_quantizer(vectors_path, cfg, threads=threads)
        trained_path = str(work / "trained.faiss")
        faiss.write_index(trained, trained_path)
        report = BuildReport(built=describe(trained, shards=cfg.shards), ntotal=0, train=process_memory())
        del trained
        report.seconds["train"] = (t1 := time.perf_counter()) - t0
        shard_paths = [str(work / f"shard-{i}") for i in range(len(ranges))]
        try:
            with _pool(min(threads, len(ranges))) as pool:
                futures = [pool.submit(fill_shard, str(vectors_path), a, b, trained_path, p)
                           for (a, b), p in zip(ranges, shard_paths)]
                report.shards = [f.result() for f in futures]
            report.seconds["fill"] = (t2 := time.perf_counter()) - t1
            with _pool(1) as pool:
                report.merge = pool.submit(merge_shards, trained_path, shard_paths, str(out_dir), n).result()
        except BrokenProcessPool as e:
            raise ShardedIndexError(f"a sharded-index process died before it finished ({e}); if the machine ran "
                                    f"out of memory, fill fewer shards at once (embedding.threads, now {threads}) "
                                    f"or make them smaller (faiss.shards, now {cfg.shards})") from None
        report.ntotal = int(report.merge["ntotal"])
        report.seconds["merge"] = time.perf_counter() - t2
        return report
    finally:
        if own_work:
            _remove_tree(work)
        else:
            for p in work.glob("shard-*"):
                p.unlink(missing_ok=True)
            (work / "trained.faiss").unlink(missing_ok=True)


def build_sharded_from_array(vectors: np.ndarray, cfg: FaissConfig, out_dir: Path, *, threads: int = 1) -> BuildReport:
    """``build_sharded`` for vectors already in memory (the dense stage's, after embedding):
    they are written to a temporary ``vectors.npy`` in a fresh work folder beside ``out_dir``
    (deleted with the shard files at the end, whatever happens). Bad shard counts are refused
    before anything is written."""
    if vectors.ndim != 2 or vectors.shape[0] == 0:
        raise ValueError(f"expected a non-empty 2-D array of vectors, found shape {vectors.shape}")
    shard_ranges(int(vectors.shape[0]), cfg.shards)
    work = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".shards"))
    try:
        path = work / "vectors.npy"
        np.save(path, np.ascontiguousarray(vectors, dtype=np.float32))
        return build_sharded(path, cfg, out_dir, threads=threads, work_dir=work)
    finally:
        _remove_tree(work)


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def is_sharded(folder: Path) -> bool:
    """Whether ``folder`` holds a sharded (on-disk) index: ``index.ivfdata`` beside ``index.faiss``."""
    return (Path(folder) / IVFDATA_FILE).is_file()


def load_sharded(folder: Path):
    """The merged index in ``folder``, its lists memory-mapped read-only from the folder's own
    ``index.ivfdata`` (``IO_FLAG_ONDISK_SAME_DIR | IO_FLAG_READ_ONLY``), so it loads wherever the
    folder has moved. ``nprobe`` is FAISS's default: ``set_search_params`` sets it. The folder is
    resolved, its files are not: in a DVC checkout by symlink, ``index.faiss`` links into the
    cache under a hash name, and the lists file must be looked up beside the link (FAISS prints
    one line on stdout saying where it found it)."""
    import faiss

    path = str(Path(folder).resolve() / INDEX_FILE)
    return faiss.read_index(path, faiss.IO_FLAG_ONDISK_SAME_DIR | faiss.IO_FLAG_READ_ONLY)
