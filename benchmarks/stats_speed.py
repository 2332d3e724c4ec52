"""How long the statistics of every config take, against the 10-second goal and against
`scipy.stats.bootstrap` computing the same intervals, side by side in one run.

Reads the committed per-question scores (`metrics/scores/retrieval.csv`, written by `dvc repro`)
and the `stats` block of params.yaml, then times:

- `analyze`: everything the `stats` stage computes (intervals per config and slice, paired
  comparisons with the baseline, Holm, MDE, subsampling), percentile and BCa, with and without
  the cluster bootstrap;
- the same per-config, per-measure intervals (overall only) through `scipy.stats.bootstrap`,
  for the ratio (scipy's vectorized bootstrap, same resamples and method).

Usage:  .venv/bin/python benchmarks/stats_speed.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rag_ablation.core.config import load_config  # noqa: E402
from rag_ablation.evaluation.statistics.comparison import MEASURES, answerable, rows_by_config  # noqa: E402
from rag_ablation.evaluation.statistics.stats import analyze  # noqa: E402
from rag_ablation.evaluation.scoring.scores import read_scores  # noqa: E402

GOAL_SECONDS = 10.0


def best_of(rounds: int, fn) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def scipy_intervals(by_config, settings) -> None:
    for rows in by_config.values():
        scored = answerable(rows)
        for column in MEASURES.values():
            x = np.asarray([float(r[column]) for r in scored])
            if np.ptp(x) == 0:
                continue
            sps.bootstrap((x,), np.mean, n_resamples=settings.resamples, method=settings.method,
                          confidence_level=settings.confidence, random_state=settings.seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.chdir(REPO)
    params = load_config()
    rows = read_scores(REPO / "metrics" / "scores" / "retrieval.csv")
    by_config = rows_by_config(rows)
    configs = list(params.retrieval)
    n = len(answerable(next(iter(by_config.values()))))
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; {len(by_config)} available "
          f"configs of {len(configs)}, {n} answerable questions, {params.stats.resamples} resamples, "
          f"{params.stats.subsample_draws} subsample draws per size; best of {args.rounds}")
    print(f"{'what':<44} {'seconds':>8} {'x goal':>7}")
    ours_overall = None
    for method in ("percentile", "bca"):
        for cluster in (False, True):
            settings = dataclasses.replace(params.stats, method=method, cluster=cluster)
            t = best_of(args.rounds, lambda s=settings: analyze(rows, [], configs=configs, answered=[], settings=s))
            print(f"{'analyze, ' + method + (', cluster by doc' if cluster else ''):<44} {t:>8.2f} {t / GOAL_SECONDS:>7.2f}")
    for method in ("percentile", "bca"):
        settings = dataclasses.replace(params.stats, method=method, cluster=False)
        from rag_ablation.evaluation.statistics.stats import summarize_group

        ours = best_of(args.rounds, lambda s=settings: [summarize_group(answerable(r), s) for r in by_config.values()])
        theirs = best_of(args.rounds, lambda s=settings: scipy_intervals(by_config, s))
        print(f"{'per-config intervals only, ' + method + ' (ours)':<44} {ours:>8.2f}")
        print(f"{'per-config intervals only, ' + method + ' (scipy)':<44} {theirs:>8.2f}   ours is "
              f"{theirs / ours:.1f}x faster")
        ours_overall = ours
    assert ours_overall is not None


if __name__ == "__main__":
    main()
