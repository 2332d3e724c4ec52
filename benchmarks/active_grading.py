"""Active against random grading order, simulated on the committed hand grades (issue 34, item 5).

For each committed experiment (the example in `metrics/scores/`, the 1.5B in
`results/qwen2.5-coder-1.5b/`), the population is every hand-graded answer, its accuracy
(share graded correct) is the truth, and a judge's score is each answer's score:
`<judge>_score` of verdicts.csv when that column is there (`--score-judge`), else token F1 from
answers.csv; an answer without one (unanswerable: no token F1) scores 0.5. Each of
`--repetitions` seeded repetitions draws a whole grading order, random and active
(`rag_ablation.evaluation.judges.active`, uniform share `--uniform`), and computes the 95% accuracy
interval after 20, 40 and 80 grades. Printed per experiment, order and grade count:
the coverage (share of repetitions whose interval holds the truth; a 95% interval must keep at
least 93%), the mean width and the mean absolute error of the estimate.

Usage:  .venv/bin/python benchmarks/active_grading.py [--repetitions 500] [--uniform 0.5 0.2 1.0]
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rag_ablation.authoring.grade_order import read_scores  # noqa: E402
from rag_ablation.evaluation.judges.active import active_order, random_order, sequence_estimate  # noqa: E402

EXPERIMENTS = {"example": REPO / "metrics/scores", "qwen2.5-coder-1.5b": REPO / "results/qwen2.5-coder-1.5b"}
GRADES = (20, 40, 80)


def population(folder: Path, judge: str) -> tuple[list[float], list[bool], str]:
    """Each hand-graded answer's score (``grade_order.read_scores``) and verdict, and where the
    score came from."""
    scores = read_scores(folder, judge)
    with (folder / "verdicts.csv").open(newline="") as f:
        reader = csv.DictReader(f)
        verdicts = [r for r in reader if r["hand"] in ("0", "1")]
        column = f"{judge}_score"
        source = f"verdicts.csv {column}" if column in (reader.fieldnames or []) else "answers.csv token_f1"
    return [scores[(r["config"], r["id"])] for r in verdicts], [r["hand"] == "1" for r in verdicts], source


def simulate(scores: list[float], verdicts: list[bool], *, name: str, uniform: float, repetitions: int,
             seed: int) -> dict[int, tuple[float, float, float]]:
    """grades -> (coverage, mean width, mean absolute error) over ``repetitions`` orders."""
    truth = sum(verdicts) / len(verdicts)
    order_of = active_order if name == "active" else random_order
    hits = {n: [] for n in GRADES}
    for rep in range(repetitions):
        order = order_of(scores, seed=seed + rep, uniform=uniform)
        for n in GRADES:
            est = sequence_estimate(order, scores, verdicts, n, name=name)
            hits[n].append((est.low <= truth <= est.high, est.high - est.low, abs(est.estimate - truth)))
    return {n: tuple(float(np.mean(col)) for col in zip(*rows)) for n, rows in hits.items()}  # type: ignore[misc]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repetitions", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--uniform", type=float, nargs="+", default=[0.5], help="active order's uniform share(s)")
    ap.add_argument("--score-judge", default="token_f1", help="the judge whose <judge>_score column orders")
    args = ap.parse_args()
    t0 = time.perf_counter()
    print("| experiment (truth, N) | order | grades | coverage | mean width | mean abs. error |")
    print("|---|---|---|---|---|---|")
    for label, folder in EXPERIMENTS.items():
        scores, verdicts, source = population(folder, args.score_judge)
        head = f"{label} ({sum(verdicts) / len(verdicts):.3f}, {len(verdicts)}; score {source})"
        runs = [("random", 1.0)] + [("active", u) for u in args.uniform]
        for name, uniform in runs:
            result = simulate(scores, verdicts, name=name, uniform=uniform, repetitions=args.repetitions,
                              seed=args.seed)
            what = name if name == "random" else f"active (uniform {uniform:g})"
            for n, (cover, width, error) in result.items():
                print(f"| {head} | {what} | {n} | {cover:.1%} | {width:.3f} | {error:.3f} |")
    print(f"\n{args.repetitions} repetitions, {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
