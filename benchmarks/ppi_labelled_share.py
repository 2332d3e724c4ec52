"""PPI++ on judge scores with fewer grades: how many hand grades the scores are worth when most
answers are not graded (issue 34, item 4 and its "Done when").

The pipeline's own check (``judge_eval``, ``ppi_check.split_half_scores``) grades half of each
config's answers and holds back the other half: 40 labelled and 40 unlabelled. PPI++ can gain at
most ``1 + N / n`` there (N unlabelled, n labelled: 2x), and with a score whose squared
correlation with the grades is r2 about ``1 / (1 - r2 * N / (n + N))``. This runs the same check
(``split_half_scores`` with ``labelled=n``) where the unlabelled answers outnumber the graded
ones, as in use: every hand-graded answer of an experiment's ``verdicts.csv`` pooled over its
configs, ``--labelled`` of them kept as the graded set in each of ``--draws`` seeded splits, the
rest unlabelled. Per score (the combined judge cross-fitted on the kept grades alone, through
cross-PPI): PPI++'s coverage of the accuracy of all graded answers, its mean width against the
kept grades alone (normal interval), and the effective gain ``(classical width / PPI width)^2``.

Usage:  .venv/bin/python benchmarks/ppi_labelled_share.py [--folder results/qwen2.5-coder-1.5b]
            [--labelled 40 80] [--draws 200]
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

from rag_ablation.evaluation.judges.ppi_check import split_half_scores

REPO = Path(__file__).resolve().parent.parent
RAW = ("llm", "token_f1", "contains")
"""The judges whose own score is PPI++'s prediction; ``combined`` is fit on their three scores."""


def graded(folder: Path) -> tuple[dict[str, bool], dict[str, dict[str, float]]]:
    """Every graded answer of ``folder/verdicts.csv`` (``config/id``): its hand grade, and each
    judge's score."""
    with (folder / "verdicts.csv").open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["hand"] in ("0", "1")]
    keys = [f"{r['config']}/{r['id']}" for r in rows]
    return ({k: r["hand"] == "1" for k, r in zip(keys, rows)},
            {j: {k: float(r[f"{j}_score"]) for k, r in zip(keys, rows)} for j in RAW})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folder", type=Path, default=REPO / "results" / "qwen2.5-coder-1.5b")
    ap.add_argument("--labelled", type=int, nargs="+", default=[40, 80])
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    hand, scores = graded(args.folder)
    truth = sum(hand.values()) / len(hand)
    print(f"{args.folder.name}: {len(hand)} graded answers, accuracy {truth:.3f}; {args.draws} draws each\n")
    print("| graded (n) | unlabelled (N) | score | PPI++ coverage | grades alone coverage | mean width PPI++ | "
          "grades alone | gain |")
    print("|---|---|---|---|---|---|---|---|")
    features = {k: [scores[j][k] for j in RAW] for k in hand}
    for n in args.labelled:
        for name in (*RAW, "combined"):
            given = {"features": features} if name == "combined" else {"score": scores[name]}
            out, reason = split_half_scores(hand, seed=args.seed, splits=args.draws, labelled=n, **given)
            assert out is not None, reason
            gain = (out["mean_classical_width"] / out["mean_width"]) ** 2
            print(f"| {n} | {len(hand) - n} | `{name}` | {out['coverage']:.1%} | {out['classical_coverage']:.1%} | "
                  f"{out['mean_width']:.3f} | {out['mean_classical_width']:.3f} | {gain:.2f}x |")


if __name__ == "__main__":
    main()
