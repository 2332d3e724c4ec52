"""Sharded IVF against the in-RAM IVF build: peak memory of every process, and search memory and
speed memory-mapped against in RAM (``rag_ablation.retrieval.sharded_ivf``, ``faiss.shards``).

Data: ``--n`` (default 1,000,000) L2-normalized 384-dimension float32 vectors of
``faiss_index_types.gaussian_mixture`` (seeded; the mixture that makes IVF miss some of the
exact top 10, as sentence embeddings do) are written block by block to a ``.npy`` file in
``--work`` (the benchmark's own process never holds them all), and ``--queries`` held-out
queries are drawn from the same mixture.

Builds, each in a spawned process of its own, one after the other, so that each peak is its own:

(a) **in RAM**: the whole ``.npy`` read into memory (as the dense stage holds its vectors after
    embedding), ``sharded_ivf.train_quantizer`` (k-means on the seeded sample of 256 rows per
    list), ``add`` of every vector, written as ``index.faiss``;
(b) **sharded**: ``sharded_ivf.build_sharded`` with ``--shards`` (default 4) from the ``.npy``
    on disk: its process trains the same quantizer (reading only the sample rows,
    memory-mapped), one process per shard fills it (``--threads`` at a time), one merges into
    ``index.ivfdata``.

Peak memory is each process's VmHWM (``/proc/self/status``, read by the process itself at its
end): the most resident memory it had, **file pages mapped into it included** (the block of
memory-mapped vectors a shard is adding; the ``index.ivfdata`` a memory-mapped search touched).
Those pages are page cache, which the kernel can drop under pressure; so each process's peak
private memory (RssAnon, sampled every 20 ms from outside by ``Sampler``) and its mapped file
pages at its end (RssFile) are printed too.
The goal: the sharded build's largest process at most 1/shards of the in-RAM build plus the
quantizer (nlist x 384 floats).

Search, again one spawned process per variant: the in-RAM index of (a) read whole with
``faiss.read_index``, and the merged index of (b) loaded as retrieval does
(``indexes.load_dense``: ``index.ivfdata`` memory-mapped read-only). For each ``--nprobe``:
``--queries`` searched one at a time at k = 10, ``--rounds`` passes (the first warms the page
cache and counts too; the best counts); queries/s and the process's memory after the passes.
The rankings of the two are compared: they must be identical (same trained quantizer: k-means
on the same sample with the same seed, on one thread). The page cache is warm (the files were
just written): a cold start from disk is not measured.

Cost at the default 1M: about 1.5 GB of vectors on disk plus twice that in indexes and shard
files in ``--work`` (deleted at the end unless ``--keep``); two k-means trainings (262,144 x
1024 x 384, 25 iterations) take under a minute each on one thread and the whole run about 4
minutes; ``--nprobe 1024`` (every list: a scan of all 1M vectors per query) adds about 10
minutes per index on a busy 2-core machine. Run it alone.

Commands:

    .venv/bin/python benchmarks/faiss_sharded.py | tee /tmp/faiss_sharded.txt
    .venv/bin/python benchmarks/faiss_sharded.py --n 50000 --nlist 64   # a check, seconds

Usage:  .venv/bin/python benchmarks/faiss_sharded.py [--n 1000000] [--nlist 1024] [--shards 4]
            [--queries 1000] [--nprobe 16,64] [--rounds 2] [--threads 1] [--seed 0]
            [--work DIR] [--keep]
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import multiprocessing  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from faiss_index_types import DIM, gaussian_mixture, int_list  # noqa: E402
from rag_ablation.core.config import FaissConfig  # noqa: E402
from rag_ablation.retrieval.sharded_ivf import build_sharded, process_memory, train_quantizer  # noqa: E402

BLOCK = 50_000
K = 10
MB = 2**20


def write_vectors(path: Path, n: int, args) -> np.ndarray:
    """``n`` mixture rows to the ``.npy`` ``path``, a block at a time; returns the queries."""
    rng = np.random.default_rng(args.seed)
    first, basis = gaussian_mixture(min(n, BLOCK), DIM, args.clusters, args.spread, args.intrinsic, rng)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, DIM))
    out[: len(first)] = first
    for start in range(len(first), n, BLOCK):
        stop = min(n, start + BLOCK)
        out[start:stop] = gaussian_mixture(stop - start, DIM, args.clusters, args.spread, args.intrinsic, rng, basis)[0]
    out.flush()
    del out
    return gaussian_mixture(args.queries, DIM, args.clusters, args.spread, args.intrinsic, rng, basis)[0]


def in_ram_build(vectors_path: str, cfg: FaissConfig, out: str, threads: int) -> dict:
    """Process (a): every vector in memory, train, add, write."""
    import faiss

    t0 = time.perf_counter()
    x = np.load(vectors_path)  # read whole, as the dense stage holds them
    index = train_quantizer(x, cfg, threads=threads)
    t1 = time.perf_counter()
    index.add(x)
    t2 = time.perf_counter()
    faiss.write_index(index, out)
    return {"train_s": t1 - t0, "add_s": t2 - t1, "total_s": time.perf_counter() - t0, **process_memory()}


def sharded_build(vectors_path: str, cfg: FaissConfig, out: str, threads: int) -> dict:
    """Process (b): ``build_sharded`` from the ``.npy`` on disk; its own memory is the training's."""
    from rag_ablation.core.io import write_json

    t0 = time.perf_counter()
    Path(out).mkdir()
    report = build_sharded(Path(vectors_path), cfg, Path(out), threads=threads)
    n = report.ntotal
    write_json(Path(out) / "chunk_ids.json", {"chunk_ids": [str(i) for i in range(n)], "dim": DIM})
    return {"total_s": time.perf_counter() - t0, "built": report.built, "train": report.train,
            "train_s": report.seconds["train"], "fill_s": report.seconds["fill"], "merge_s": report.seconds["merge"],
            "shards": report.shards, "merge": report.merge, "self": process_memory()}


def search_run(kind: str, path: str, queries: np.ndarray, nprobes: list[int], rounds: int) -> dict:
    """Process: load one index (``inram``: read whole; ``mmap``: ``load_dense``), search every
    query one at a time for each nprobe; best-round queries/s, rows, memory after."""
    import faiss

    from rag_ablation.retrieval.indexes import load_dense

    faiss.omp_set_num_threads(1)
    t0 = time.perf_counter()
    index = faiss.read_index(path) if kind == "inram" else load_dense(Path(path))[0]
    load_s = time.perf_counter() - t0
    loaded = process_memory()
    out: dict = {"load_s": load_s, "loaded": loaded, "qps": {}, "rows": {}}
    for nprobe in nprobes:
        index.nprobe = min(nprobe, index.nlist)
        best = None
        rows = np.empty((len(queries), K), dtype=np.int64)
        for _ in range(rounds):
            t = time.perf_counter()
            for i in range(len(queries)):
                rows[i] = index.search(queries[i: i + 1], K)[1][0]
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        out["qps"][nprobe] = len(queries) / best
        out["rows"][nprobe] = rows.copy()
    out["after"] = process_memory()
    return out


class Sampler(threading.Thread):
    """Polls every descendant of this process every ``PERIOD`` seconds (psutil) and keeps, per
    pid, the largest private memory (RSS less shared: RssAnon) and mapped file pages (RssFile)
    seen: VmHWM tells the peak of their sum only. Spikes shorter than a period can be missed."""

    PERIOD = 0.02

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.anon: dict[int, int] = {}
        self.file: dict[int, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self.done.wait(self.PERIOD):
            for p in me.children(recursive=True):
                try:
                    mi = p.memory_info()
                except psutil.Error:
                    continue
                self.anon[p.pid] = max(self.anon.get(p.pid, 0), mi.rss - mi.shared)
                self.file[p.pid] = max(self.file.get(p.pid, 0), mi.shared)


SAMPLER = Sampler()


def in_child(fn, *args):
    """``fn(*args)`` in a fresh spawned process (its own peak memory)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def anon_peak(mem: dict) -> str:
    """The sampled peak private memory of the process ``mem`` (``process_memory``) describes."""
    return mb(max(SAMPLER.anon.get(mem["pid"], 0), mem["rss_anon"]))


def mb(x: int) -> str:
    return f"{x / MB:,.0f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--nlist", type=int, default=1024)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--nprobe", default="16,64", help="nprobe values searched")
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument("--spread", type=float, default=0.7)
    ap.add_argument("--intrinsic", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="FAISS threads; shard processes run this many at a time")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=Path, default=None, help="folder for the vectors and indexes (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep --work's files")
    args = ap.parse_args(argv)
    for flag in ("n", "nlist", "shards", "queries", "rounds", "threads", "clusters", "intrinsic"):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    nprobes = int_list(args.nprobe, "--nprobe", ap)

    import faiss

    work = Path(tempfile.mkdtemp(prefix="faiss_sharded.")) if args.work is None else args.work
    work.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start; faiss {faiss.__version__}, "
          f"numpy {np.__version__}; {args.threads} thread(s); work folder {work}")
    SAMPLER.start()
    try:
        vec = work / "vectors.npy"
        t0 = time.perf_counter()
        queries = write_vectors(vec, args.n, args)
        print(f"wrote {args.n:,} x {DIM} vectors ({vec.stat().st_size / MB:,.0f} MB) in {time.perf_counter() - t0:.0f} s",
              file=sys.stderr)
        base = FaissConfig(index="ivf", nlist=args.nlist, nprobe=1, seed=args.seed)
        cfg = FaissConfig(index="ivf", nlist=args.nlist, nprobe=1, seed=args.seed, shards=args.shards)
        a = in_child(in_ram_build, str(vec), base, str(work / "inram.faiss"), args.threads)
        print(f"in-RAM build: {a['total_s']:.0f} s, peak {mb(a['peak_rss'])} MB", file=sys.stderr)
        b = in_child(sharded_build, str(vec), cfg, str(work / "sharded"), args.threads)
        print(f"sharded build: {b['total_s']:.0f} s", file=sys.stderr)
        s_ram = in_child(search_run, "inram", str(work / "inram.faiss"), queries, nprobes, args.rounds)
        s_map = in_child(search_run, "mmap", str(work / "sharded"), queries, nprobes, args.rounds)
        sizes = {"vectors": vec.stat().st_size, "inram.faiss": (work / "inram.faiss").stat().st_size,
                 "index.ivfdata": (work / "sharded" / "index.ivfdata").stat().st_size,
                 "sharded index.faiss": (work / "sharded" / "index.faiss").stat().st_size}
    finally:
        SAMPLER.done.set()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    nlist = b["built"]["nlist"]
    quantizer = nlist * DIM * 4
    print(f"\n## Sharded IVF build: {args.n:,} x {DIM} float32 vectors, nlist {nlist}, {args.shards} shards, "
          f"{args.threads} thread(s)")
    print(f"\nfiles: vectors {mb(sizes['vectors'])} MB; in-RAM index.faiss {mb(sizes['inram.faiss'])} MB; "
          f"sharded index.faiss {sizes['sharded index.faiss'] / 1024:,.0f} KB + index.ivfdata "
          f"{mb(sizes['index.ivfdata'])} MB; quantizer {quantizer / MB:.1f} MB\n")
    print("| process | seconds | peak RSS MB (VmHWM) | peak / in-RAM peak | peak RssAnon MB (sampled) | "
          "RssFile at end MB |")
    print("|---|---|---|---|---|---|")
    ref = a["peak_rss"]
    print(f"| (a) in-RAM build (train {a['train_s']:.0f} s + add {a['add_s']:.0f} s) | {a['total_s']:.0f} | "
          f"{mb(a['peak_rss'])} | 1.00 | {anon_peak(a)} | {mb(a['rss_file'])} |")
    me = b["self"]
    print(f"| (b) sharded, main process: train ({b['train_s']:.0f} s; fill {b['fill_s']:.0f} s, "
          f"merge {b['merge_s']:.0f} s, whole build) | {b['total_s']:.0f} | {mb(me['peak_rss'])} | "
          f"{me['peak_rss'] / ref:.2f} | {anon_peak(me)} | {mb(me['rss_file'])} |")
    for i, s in enumerate(b["shards"]):
        print(f"| (b) shard {i} process ({s['rows']:,} rows) | | {mb(s['peak_rss'])} | {s['peak_rss'] / ref:.2f} | "
              f"{anon_peak(s)} | {mb(s['rss_file'])} |")
    m = b["merge"]
    print(f"| (b) merge process | | {mb(m['peak_rss'])} | {m['peak_rss'] / ref:.2f} | {anon_peak(m)} | "
          f"{mb(m['rss_file'])} |")
    worst = max([me["peak_rss"], m["peak_rss"], *(s["peak_rss"] for s in b["shards"])])
    goal = ref / args.shards + quantizer
    print(f"\nlargest sharded-build process: {mb(worst)} MB = {worst / ref:.2f} of the in-RAM peak; goal "
          f"(in-RAM peak / {args.shards} + quantizer) {mb(int(goal))} MB: {'met' if worst <= goal else 'NOT met'}")
    worst_anon = max(max(SAMPLER.anon.get(x["pid"], 0), x["rss_anon"]) for x in [me, m, *b["shards"]])
    print(f"largest private memory (sampled RssAnon) of a sharded-build process: {mb(worst_anon)} MB = "
          f"{worst_anon / ref:.2f} of the in-RAM peak; in-RAM build's own: {anon_peak(a)} MB")

    print(f"\n## Search: {args.queries} queries one at a time, k = {K}, best of {args.rounds} warm passes\n")
    print("| index | load s | nprobe | q/s | q/s / in RAM | peak RSS MB | peak RssAnon MB | RssFile at end MB | "
          "rankings = in RAM |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, s in (("in RAM (read_index)", s_ram), ("on disk, memory-mapped (load_dense)", s_map)):
        for p in nprobes:
            same = int(sum((x == y).all() for x, y in zip(s["rows"][p], s_ram["rows"][p])))
            print(f"| {label} | {s['load_s']:.2f} | {min(p, nlist)} | {s['qps'][p]:,.0f} | "
                  f"{s['qps'][p] / s_ram['qps'][p]:.2f} | {mb(s['after']['peak_rss'])} | {anon_peak(s['after'])} | "
                  f"{mb(s['after']['rss_file'])} | {same}/{args.queries} |")
    print(f"\nmemory right after loading: in RAM {mb(s_ram['loaded']['peak_rss'])} MB, memory-mapped "
          f"{mb(s_map['loaded']['peak_rss'])} MB (peak so far)")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
