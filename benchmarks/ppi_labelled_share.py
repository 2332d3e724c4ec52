"""PPI++ on judge scores with fewer grades: how many hand grades the scores are worth when most
answers are not graded (issue 34, item 4 and its "Done when").

The pipeline's own check (``judge_eval``, ``ppi_check.split_half_scores``) grades half of each
config's answers and holds back the other half: 40 labelled and 40 unlabelled. PPI++ can gain at
most ``1 + N / n`` there (N unlabelled, n labelled: 2x), and with a score whose squared
correlation with the grades is r2 about ``1 / (1 - r2 * N / (n + N))``. This measures the gain
where the unlabelled answers outnumber the graded ones, as in use: every hand-graded answer of an
experiment's ``verdicts.csv`` pooled over its configs, ``--labelled`` of them drawn as the graded
set (seeded, ``--draws`` times), the rest unlabelled. Per score: PPI++ (``ppi_accuracy_scores``
for a raw judge score; for the combined judge, its logistic model cross-fitted on the drawn grades
alone and applied to the rest through ``crossppi_accuracy``, never fit on a grade it is scored
with), its coverage of the accuracy of all graded answers, its mean width against the drawn
grades alone (normal interval), and the effective gain ``(classical width / PPI width)^2``.

Usage:  .venv/bin/python benchmarks/ppi_labelled_share.py [--folder results/qwen2.5-coder-1.5b]
            [--labelled 40 80] [--draws 200]
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from rag_ablation.evaluation.judges.accuracy import PPIAccuracy, crossppi_accuracy, ppi_accuracy_scores
from rag_ablation.evaluation.judges.combined import crossfit_combined, predict_unlabeled

REPO = Path(__file__).resolve().parent.parent
RAW = ("llm", "token_f1", "contains")
"""The judges whose own score is PPI++'s prediction; ``combined`` is fit on their three scores."""


def graded(folder: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The hand grades of every graded answer in ``folder/verdicts.csv`` and each judge's score."""
    with (folder / "verdicts.csv").open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["hand"] in ("0", "1")]
    return (np.array([r["hand"] == "1" for r in rows]),
            {j: np.array([float(r[f"{j}_score"]) for r in rows]) for j in RAW})


def one_draw(y: np.ndarray, scores: dict[str, np.ndarray], name: str, labelled: np.ndarray,
             rest: np.ndarray, seed: int) -> PPIAccuracy:
    """PPI++ of one judge (or ``combined``) on one draw of graded answers."""
    if name != "combined":
        s = scores[name]
        return ppi_accuracy_scores(y[labelled].tolist(), s[labelled].tolist(), s[rest].tolist())
    feats = np.column_stack([scores[j] for j in RAW])
    fitted = crossfit_combined(feats[labelled].tolist(), y[labelled].tolist(), k=5, seed=seed)
    return crossppi_accuracy(y[labelled].tolist(), fitted.scores, predict_unlabeled(fitted, feats[rest].tolist()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folder", type=Path, default=REPO / "results" / "qwen2.5-coder-1.5b")
    ap.add_argument("--labelled", type=int, nargs="+", default=[40, 80])
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    y, scores = graded(args.folder)
    truth = float(y.mean())
    print(f"{args.folder.name}: {y.size} graded answers, accuracy {truth:.3f}; {args.draws} draws each\n")
    print("| graded (n) | unlabelled (N) | score | PPI++ coverage | grades alone coverage | mean width PPI++ | "
          "grades alone | gain |")
    print("|---|---|---|---|---|---|---|---|")
    for n in args.labelled:
        for name in (*RAW, "combined"):
            covers, covers_c, widths, widths_c = [], [], [], []
            for d in range(args.draws):
                perm = np.random.default_rng(args.seed + d).permutation(y.size)
                p = one_draw(y, scores, name, perm[:n], perm[n:], args.seed + d)
                covers.append(p.interval.low <= truth <= p.interval.high)
                covers_c.append(p.classical.low <= truth <= p.classical.high)
                widths.append(p.interval.high - p.interval.low)
                widths_c.append(p.classical.high - p.classical.low)
            gain = (np.mean(widths_c) / np.mean(widths)) ** 2
            print(f"| {n} | {y.size - n} | `{name}` | {np.mean(covers):.1%} | {np.mean(covers_c):.1%} | "
                  f"{np.mean(widths):.3f} | {np.mean(widths_c):.3f} | {gain:.2f}x |")


if __name__ == "__main__":
    main()
