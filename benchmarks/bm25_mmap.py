"""The BM25 index folder stored both ways, side by side: bm25s rebuilt from ``tokens.jsonl`` when
retrieval opens it (``bm25.mmap: false``) against bm25s' score matrix memory-mapped from
``bm25s/`` (``bm25.mmap: true``), both written and opened by the pipeline's own ``save_bm25`` and
``open_bm25`` (``rag_ablation.retrieval.bm25``), impl bm25s, epsilon 0, k1 1.5, b 0.75.

Goal (issue "Speed"): bm25s with memory-mapped loading for large corpora: opening the index takes
less time and memory than rebuilding it, and the rankings do not change.

Corpus (seeded, ``--seed``): ``--n`` synthetic chunks (default 500,000) of ``--length`` tokens
on average (60; uniform between half and 1.5 times that), drawn from a Zipf-Mandelbrot
distribution over ``--vocab`` words (200,000): p(rank r) proportional to 1 / (r + 2.7)^``--zipf``
(1.0), so a few words are in most chunks and most words in few, as in text. ``--queries``
queries (1,000) of 3 to 8 tokens, each drawn half the time from the same distribution
(stopword-like words included) and otherwise uniformly among ranks 100 to 20,000 (content
words). The queries are token lists already: the tokenizer, the same for both, is not timed.

What is measured, each step in a fresh process (``ru_maxrss``, so that each peak is its own):
- the bm25 stage's cost: ``save_bm25`` of each folder (seconds, peak RSS, the RSS before it with
  the corpus tokens already in memory) and the folder's size on disk;
- per variant: ``open_bm25`` seconds, peak RSS after opening, queries/second for scoring +
  ``top_k(scores, --depth)`` keeping positive scores, one query at a time as the retrieve stage
  does (``retrieve_one``), over ``--rounds`` passes (first and best reported), and peak RSS at
  the end, with the file-backed part of the resident memory (mapped index pages, which the OS can
  drop) shown apart;
- whether the two variants return identical rankings (chunk ids and scores) for every query.
Ratios printed: mmap / rebuilt.

The warm passes open files that were just written, so they are in the OS page cache. Then a
cold start per variant (unless ``--skip-cold``): the folder's files are dropped from the page
cache with ``posix_fadvise(POSIX_FADV_DONTNEED)`` (no root needed; ``fincore`` confirms how many
bytes stayed resident), and a fresh process opens the folder and runs one pass, so the tokens
(rebuilt) or the touched index pages (mmap) come from disk. On a VM the host may still cache the
disk: "cold" is the guest's view.

Cost on the 2-core VM (500,000 chunks, 30M tokens): about 3 minutes, 0.5 GB of temporary files;
memory peaks at about 3.6 GB in the rebuilt variant's open (1 GB in writing ``tokens.jsonl``). Both
grow linearly with ``--n``: 1,000,000 chunks would need about 7 GB, hence the default. Run it
alone.

Commands:

    # the full run (500,000 chunks)
    .venv/bin/python benchmarks/bm25_mmap.py | tee /tmp/bm25_mmap.txt
    # a small check (seconds)
    .venv/bin/python benchmarks/bm25_mmap.py --n 20000 --queries 200

Usage:  .venv/bin/python benchmarks/bm25_mmap.py [--n 500000] [--length 60] [--vocab 200000]
            [--zipf 1.0] [--queries 1000] [--depth 100] [--rounds 2] [--seed 0] [--skip-cold]
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from rag_ablation.core.config import Bm25Config  # noqa: E402
from rag_ablation.retrieval.bm25 import open_bm25, save_bm25, top_k  # noqa: E402

TOKENIZER = "regex"  # recorded in chunk_ids.json only: the synthetic tokens are not re-tokenized
BLOCK = 50_000  # chunks generated at a time (keeps the float64 draws small)
VARIANTS = {
    "rebuilt": Bm25Config(tokenizer=TOKENIZER, impl="bm25s", k1=1.5, b=0.75, epsilon=0.0, mmap=False),
    "mmap": Bm25Config(tokenizer=TOKENIZER, impl="bm25s", k1=1.5, b=0.75, epsilon=0.0, mmap=True),
}
LABELS = {"rebuilt": "bm25s rebuilt from tokens.jsonl (mmap false)", "mmap": "bm25s memory-mapped (mmap true)"}
MB = 2**20


# --- the synthetic corpus and queries (same in every process: seeded) --------------------------

def zipf_cdf(vocab: int, s: float) -> np.ndarray:
    """Cumulative Zipf-Mandelbrot probabilities over ranks 0..vocab-1: p(r) ~ 1 / (r + 1 + 2.7)^s."""
    w = 1.0 / (np.arange(1, vocab + 1, dtype=np.float64) + 2.7) ** s
    cdf = np.cumsum(w)
    return cdf / cdf[-1]


def words(vocab: int) -> np.ndarray:
    return np.array([f"w{r}" for r in range(vocab)], dtype=object)


def draw(cdf: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
    return np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), len(cdf) - 1)


def make_corpus(args) -> tuple[list[str], list[list[str]]]:
    """(chunk ids, tokens) of ``args.n`` chunks; the token strings are shared word objects."""
    rng = np.random.default_rng([args.seed, 1])
    cdf, vocab = zipf_cdf(args.vocab, args.zipf), words(args.vocab)
    low, high = max(1, args.length // 2), args.length + args.length // 2
    tokens: list[list[str]] = []
    for start in range(0, args.n, BLOCK):
        lengths = rng.integers(low, high + 1, size=min(BLOCK, args.n - start))
        ranks = vocab[draw(cdf, rng, int(lengths.sum()))]
        ends = np.cumsum(lengths)
        tokens.extend(ranks[e - n: e].tolist() for n, e in zip(lengths, ends))
    return [f"c{i:07d}" for i in range(args.n)], tokens


def make_queries(args) -> list[list[str]]:
    """``args.queries`` token lists of 3 to 8 tokens: each token half the time from the corpus
    distribution, otherwise uniform among ranks 100 to 20,000 (capped by the vocabulary)."""
    rng = np.random.default_rng([args.seed, 2])
    cdf, vocab = zipf_cdf(args.vocab, args.zipf), words(args.vocab)
    lo, hi = min(100, args.vocab - 1), min(20_000, args.vocab)
    out = []
    for _ in range(args.queries):
        k = int(rng.integers(3, 9))
        ranks = np.where(rng.random(k) < 0.5, draw(cdf, rng, k), rng.integers(lo, hi, size=k))
        out.append(vocab[ranks].tolist())
    return out


# --- memory ---------------------------------------------------------------------------------------

def peak_mb() -> float:
    """Peak resident set size of this process so far (Linux: ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def status_mb() -> dict[str, float]:
    """Current resident memory from /proc/self/status: total, anonymous and file-backed."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) / 1024
    return out


# --- the child processes ----------------------------------------------------------------------

def child_save(args) -> dict:
    chunk_ids, tokens = make_corpus(args)
    before = status_mb()["VmRSS"]
    t0 = time.perf_counter()
    save_bm25(args.folder, chunk_ids=chunk_ids, tokens=tokens, tokenizer=TOKENIZER, bm25=VARIANTS[args.child_variant])
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "rss_before_mb": before, "peak_mb": peak_mb(),
            "tokens": sum(len(t) for t in tokens)}


def child_query(args) -> dict:
    import bm25s  # noqa: F401  (imported before the clock starts: open_bm25 times the index, not the import)

    queries = make_queries(args)
    load0 = os.getloadavg()[0]
    base = peak_mb()
    t0 = time.perf_counter()
    scorer, ids = open_bm25(args.folder, VARIANTS[args.child_variant])
    open_s = time.perf_counter() - t0
    after_open = {"peak_mb": peak_mb(), **status_mb()}
    passes, rankings = [], []
    for _ in range(args.rounds):
        rankings = []
        t0 = time.perf_counter()
        for q in queries:  # as runner.retrieve_one: scores, top depth, positive scores only
            scores = scorer.scores(q)
            rankings.append([(i, s) for i, s in top_k(scores, args.depth) if s > 0])
        passes.append(time.perf_counter() - t0)
    Path(args.rankings).write_text(json.dumps([[[ids[i], s] for i, s in r] for r in rankings]), encoding="utf-8")
    return {"open_s": open_s, "base_peak_mb": base, "after_open": after_open, "passes_s": passes,
            "end": {"peak_mb": peak_mb(), **status_mb()}, "load": [load0, os.getloadavg()[0]]}


def run_child(mode: str, variant: str, folder: Path, args, rankings: Path | None = None) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode, "--child-variant", variant,
           "--folder", str(folder), "--n", str(args.n), "--length", str(args.length), "--vocab", str(args.vocab),
           "--zipf", str(args.zipf), "--queries", str(args.queries), "--depth", str(args.depth),
           "--rounds", str(args.rounds), "--seed", str(args.seed)]
    if rankings is not None:
        cmd += ["--rankings", str(rankings)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["wall_s"] = time.perf_counter() - t0
    return out


# --- cold starts: the folder's pages out of the page cache ------------------------------------

def evict(folder: Path) -> int:
    """Drop ``folder``'s files from the OS page cache (``posix_fadvise(DONTNEED)``: no root
    needed, clean pages only, which these are once flushed) and return how many of their bytes
    are still resident, as ``fincore`` (util-linux) counts them; -1 if fincore is missing."""
    files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    try:
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", *map(str, files)],
                             capture_output=True, text=True, check=True).stdout
    except (FileNotFoundError, subprocess.CalledProcessError):
        return -1
    return sum(int(x) for x in out.split())


# --- the parent -----------------------------------------------------------------------------------

def folder_files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


def ratio(a: float, b: float) -> str:
    """a / b with two decimals, or three significant digits below 0.1 (an open time of 0.003x)."""
    if not b:
        return "n/a"
    r = a / b
    return f"{r:.2f}x" if r >= 0.1 else f"{r:.2g}x"


def parent(args) -> int:
    sys.stdout.reconfigure(line_buffering=True)  # keep the tables and the stderr progress in order
    t_start = time.perf_counter()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start; numpy {np.__version__}, "
          f"bm25s {__import__('bm25s').__version__}, BLAS/numba threads {os.environ['OMP_NUM_THREADS']}")
    print(f"corpus: {args.n:,} synthetic chunks of {max(1, args.length // 2)} to {args.length + args.length // 2} "
          f"tokens (mean {args.length}), Zipf-Mandelbrot s={args.zipf} over {args.vocab:,} words, seed {args.seed}; "
          f"{args.queries:,} queries of 3 to 8 tokens; top {args.depth}, one query at a time, {args.rounds} passes")
    with tempfile.TemporaryDirectory(prefix="bm25_mmap.") as tmp:
        tmp = Path(tmp)
        saved, opened, sizes = {}, {}, {}
        for v in VARIANTS:
            saved[v] = run_child("save", v, tmp / v, args)
            sizes[v] = folder_files(tmp / v)
            print(f"  saved {v}: {saved[v]['seconds']:.1f} s, peak {saved[v]['peak_mb']:,.0f} MB, "
                  f"{sum(sizes[v].values()) / MB:,.0f} MB on disk ({saved[v]['tokens']:,} tokens)", file=sys.stderr)
        for v in VARIANTS:
            opened[v] = run_child("query", v, tmp / v, args, rankings=tmp / f"{v}.rankings.json")
            o = opened[v]
            print(f"  queried {v}: open {o['open_s']:.1f} s, passes "
                  f"{', '.join(f'{s:.1f}' for s in o['passes_s'])} s, peak {o['end']['peak_mb']:,.0f} MB", file=sys.stderr)
        ranks = {v: json.loads((tmp / f"{v}.rankings.json").read_text(encoding="utf-8")) for v in VARIANTS}
        cold, resident = {}, {}
        if not args.skip_cold:
            one_pass = argparse.Namespace(**{**vars(args), "rounds": 1})
            for v in VARIANTS:
                resident[v] = evict(tmp / v)
                cold[v] = run_child("query", v, tmp / v, one_pass, rankings=tmp / f"{v}.cold.json")
                same = json.loads((tmp / f"{v}.cold.json").read_text(encoding="utf-8")) == ranks[v]
                cold[v]["same_rankings"] = same
                print(f"  cold {v}: {resident[v]:,} bytes resident after eviction, open {cold[v]['open_s']:.1f} s, "
                      f"pass {cold[v]['passes_s'][0]:.1f} s, same rankings {same}", file=sys.stderr)

    same_ids = sum(1 for a, b in zip(ranks["rebuilt"], ranks["mmap"]) if [x[0] for x in a] == [x[0] for x in b])
    same_all = sum(1 for a, b in zip(ranks["rebuilt"], ranks["mmap"]) if a == b)
    hits = np.mean([len(r) for r in ranks["mmap"]])

    print("\n## bm25 stage: save_bm25 (each in a fresh process)\n")
    print("| folder | save s | RSS before save MB | peak RSS MB | on disk MB | files |")
    print("|---|---|---|---|---|---|")
    for v in VARIANTS:
        s = saved[v]
        files = ", ".join(f"{name} {size / MB:,.1f}" for name, size in sizes[v].items())
        print(f"| {LABELS[v]} | {s['seconds']:.1f} | {s['rss_before_mb']:,.0f} | {s['peak_mb']:,.0f} | "
              f"{sum(sizes[v].values()) / MB:,.0f} | {files} |")

    print(f"\n## retrieval: open_bm25 + {args.queries:,} queries (each variant in a fresh process)\n")
    print("| variant | open s | peak RSS after open MB | RSS after open MB | q/s pass 1 | q/s best | "
          "peak RSS at end MB | RSS at end: anon / file MB |")
    print("|---|---|---|---|---|---|---|---|")
    for v in VARIANTS:
        o = opened[v]
        print(f"| {LABELS[v]} | {o['open_s']:.2f} | {o['after_open']['peak_mb']:,.0f} | "
              f"{o['after_open']['VmRSS']:,.0f} | {args.queries / o['passes_s'][0]:,.1f} | "
              f"{args.queries / min(o['passes_s']):,.1f} | {o['end']['peak_mb']:,.0f} | "
              f"{o['end']['RssAnon']:,.0f} / {o['end']['RssFile']:,.0f} |")
    r, m = opened["rebuilt"], opened["mmap"]
    print(f"\n(a fresh process with numpy, bm25s and the queries loaded peaks at {m['base_peak_mb']:,.0f} MB "
          f"before opening)")
    print("\nratios mmap / rebuilt:")
    print(f"  save_bm25 seconds:     {ratio(saved['mmap']['seconds'], saved['rebuilt']['seconds'])}")
    print(f"  save peak RSS:         {ratio(saved['mmap']['peak_mb'], saved['rebuilt']['peak_mb'])}")
    print(f"  size on disk:          {ratio(sum(sizes['mmap'].values()), sum(sizes['rebuilt'].values()))}")
    print(f"  open seconds:          {ratio(m['open_s'], r['open_s'])}")
    print(f"  peak RSS after open:   {ratio(m['after_open']['peak_mb'], r['after_open']['peak_mb'])}")
    print(f"  peak RSS at end:       {ratio(m['end']['peak_mb'], r['end']['peak_mb'])}")
    print(f"  queries/s, pass 1:     {ratio(r['passes_s'][0], m['passes_s'][0])}")
    print(f"  queries/s, best pass:  {ratio(min(r['passes_s']), min(m['passes_s']))}")
    if cold:
        print("\n## cold start: the folder's files dropped from the page cache, then open + one pass\n")
        print("| variant | bytes resident after eviction | open s | q/s | peak RSS at end MB | same rankings as warm |")
        print("|---|---|---|---|---|---|")
        for v in VARIANTS:
            c = cold[v]
            print(f"| {LABELS[v]} | {resident[v]:,} | {c['open_s']:.2f} | {args.queries / c['passes_s'][0]:,.1f} | "
                  f"{c['end']['peak_mb']:,.0f} | {c['same_rankings']} |")
        rc, mc = cold["rebuilt"], cold["mmap"]
        print("\ncold ratios mmap / rebuilt:")
        print(f"  open seconds:          {ratio(mc['open_s'], rc['open_s'])}")
        print(f"  open + one pass:       {ratio(mc['open_s'] + mc['passes_s'][0], rc['open_s'] + rc['passes_s'][0])}")
        print(f"  queries/s:             {ratio(rc['passes_s'][0], mc['passes_s'][0])}")
        print(f"  mmap cold / mmap warm queries/s: {ratio(m['passes_s'][0], mc['passes_s'][0])}")
    print(f"\nidentical rankings (chunk ids and scores, top {args.depth} with score > 0): "
          f"{same_all:,}/{args.queries:,} queries (chunk ids alone: {same_ids:,}/{args.queries:,}); "
          f"{hits:.1f} hits per query on average")
    print("note: the warm table opens files just written (in the OS page cache); the cold table first drops "
          "them from this machine's page cache (a VM's host may still cache them: cold here is the guest's view)")
    print(f"\nload average during the queries: rebuilt {r['load'][0]:.2f} -> {r['load'][1]:.2f}, "
          f"mmap {m['load'][0]:.2f} -> {m['load'][1]:.2f}; at end {os.getloadavg()[0]:.2f}; "
          f"total {time.perf_counter() - t_start:.0f} s")
    return 0 if same_all == args.queries and all(c["same_rankings"] for c in cold.values()) else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=500_000, help="synthetic chunks (default 500,000)")
    ap.add_argument("--length", type=int, default=60, help="mean tokens per chunk")
    ap.add_argument("--vocab", type=int, default=200_000, help="distinct words")
    ap.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent s")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--depth", type=int, default=100, help="top_k depth, as retrieval's depth")
    ap.add_argument("--rounds", type=int, default=2, help="query passes per variant")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-cold", action="store_true", help="no cold-start pass (page cache dropped first)")
    # internal: one measured step in a fresh process
    ap.add_argument("--child", choices=("save", "query"), help=argparse.SUPPRESS)
    ap.add_argument("--child-variant", choices=tuple(VARIANTS), help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--rankings", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    for flag in ("n", "length", "vocab", "queries", "depth", "rounds"):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    if args.zipf <= 0:
        ap.error(f"--zipf must be positive, got {args.zipf}")
    if args.child == "save":
        print(json.dumps(child_save(args)))
        return 0
    if args.child == "query":
        print(json.dumps(child_query(args)))
        return 0
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
