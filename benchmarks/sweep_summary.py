"""The sweep summary at size: 50 candidates x 1,000 questions x 10,000 resamples, against a naive loop.

Synthetic per-question rows (0/1 hit@5 drawn with true recall spread from 0.55 to 0.75, seeded)
go through ``rag_ablation.evaluation.statistics.sweep.summarise`` with a dev/test split (half the
questions each) and, side by side in the same run, through a naive loop that computes the same
numbers one draw and one pair at a time: for each resample, the gathered questions' means and the
ranks; for each pair, ``scipy.stats.binomtest``; then the same Holm step. Both give the same
rank intervals and tie set (checked here), so only the time differs. Reported: seconds of each,
the ratio, and the goal (under 30 s on 2 cores).

Usage:  .venv/bin/python benchmarks/sweep_summary.py [--candidates 50] [--questions 1000]
        [--resamples 10000] [--threads 2]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", type=int, default=50)
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=2, help="BLAS threads (set before numpy loads)")
    args = ap.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)

    import numpy as np
    from scipy import stats as sps
    from score_rows import config_rows, hits_to_ranks

    from rag_ablation.core.config import StatsConfig
    from rag_ablation.evaluation.statistics.inference import holm
    from rag_ablation.evaluation.statistics.sweep import summarise

    k, q, b = args.candidates, args.questions, args.resamples
    rng = np.random.default_rng(0)
    truth = np.linspace(0.55, 0.75, k)
    hits = (rng.random((q, k)) < truth).astype(int)
    ids = [f"q{i}" for i in range(q)]
    docs = [f"d{i // 4}" for i in range(q)]
    rows = {f"c{j}@x": config_rows(f"c{j}", hits_to_ranks(hits[:, j].tolist()), ids=ids, docs=docs)
            for j in range(k)}
    split = {i: ("dev" if n % 2 == 0 else "test") for n, i in enumerate(ids)}
    settings = StatsConfig(resamples=b, seed=0)

    t0 = time.perf_counter()
    s = summarise(rows, measure="hit_at_5", baseline="c0@x", settings=settings, split=split)
    fast = time.perf_counter() - t0

    # the naive loop, on the same dev questions and the same draws
    t0 = time.perf_counter()
    dev = hits[0::2].astype(float)
    n = dev.shape[0]
    draw_rng = np.random.default_rng(settings.seed)
    rank_rows = []
    for start in range(0, b, 2000):  # the same stream as the blocked draws
        block = draw_rng.integers(0, n, size=(min(2000, b - start), n))
        for idx in block:
            means = dev[idx].mean(axis=0)
            rank_rows.append([1 + int((means > m).sum()) for m in means])
    ranks = np.asarray(rank_rows)
    low = np.quantile(ranks, 0.025, axis=0, method="lower")
    high = np.quantile(ranks, 0.975, axis=0, method="higher")
    pairs, raw = [], []
    for i in range(k):
        for j in range(i + 1, k):
            wi = int(((dev[:, i] == 1) & (dev[:, j] == 0)).sum())
            wj = int(((dev[:, j] == 1) & (dev[:, i] == 0)).sum())
            pairs.append((i, j, wi, wj))
            raw.append(sps.binomtest(wi, wi + wj, 0.5).pvalue if wi + wj else 1.0)
    adjusted = holm(raw)
    lost = {(j if wi > wj else i) for (i, j, wi, wj), p in zip(pairs, adjusted) if p < 0.05 and wi != wj}
    naive_ties = tuple(x for x in range(k) if x not in lost)
    naive = time.perf_counter() - t0

    assert tuple(low) == s.rank_low and tuple(high) == s.rank_high, "rank intervals differ"
    assert naive_ties == s.tie_set, "tie sets differ"
    print(f"{k} candidates x {q} questions ({n} dev) x {b:,} resamples, {args.threads} threads")
    print(f"summarise (whole summary, dev and test):  {fast:6.2f} s   goal < 30 s: {'met' if fast < 30 else 'MISSED'}")
    print(f"naive loop (dev ranks and tie set only):   {naive:6.2f} s")
    print(f"ratio naive / summarise:                   {naive / fast:6.1f}x")
    print(f"tie set {len(s.tie_set)} of {k}; winner {s.names[s.winner]}; "
          f"rank interval of the winner {s.rank_low[s.winner]}-{s.rank_high[s.winner]}")


if __name__ == "__main__":
    main()
