"""Cross-fitted agreement under re-fitting on a committed experiment (issue 48, item 2).

Reads an experiment's committed judge outputs: ``verdicts.csv`` (every judge's score and the hand
grade per answer), ``answers/<config>.json`` (the answer texts) and the questions
(``--questions``, default the workspace's ``data/build/dataset/questions.jsonl``, for the answer
features of the combined judge, ``answer_features.answer_features``), and runs
``scored.score_judges`` as judge_eval does (answers of every config pooled; ``--folds`` folds,
seed ``--seed``, ``--resamples`` bootstrap draws for the single-seed intervals), with
``--seeds`` fold seeds and ``--refit-resamples`` refit draws for the repeated cross-fit
(``rag_ablation.evaluation.judges.refit``). Printed per judge: AUC, the single seed's kappa with
its fixed-threshold interval, the median kappa over seeds with the refit interval, the seeds'
range and the share of seeds below 0.6; and the time the repeated cross-fits took.

Usage:  .venv/bin/python benchmarks/judge_refit.py [--folder results/qwen2.5-coder-1.5b] [--no-features]
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rag_ablation.evaluation.judges.answer_features import answer_features  # noqa: E402
from rag_ablation.evaluation.judges.scored import COMBINED, score_judges  # noqa: E402

JUDGES = ("llm", "token_f1", "contains")


def read(folder: Path, questions: Path | None) -> tuple[dict, dict, list, dict | None]:
    """Scores (judge -> key -> score), hand grades, every answer key, answer features (or None)."""
    with (folder / "verdicts.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    keys = [(r["config"], r["id"]) for r in rows]
    scores = {j: {(r["config"], r["id"]): float(r[f"{j}_score"]) for r in rows if r.get(f"{j}_score")}
              for j in JUDGES}
    hand = {(r["config"], r["id"]): r["hand"] == "1" for r in rows if r["hand"] in ("0", "1")}
    if questions is None:
        return scores, hand, keys, None
    qs = {q["id"]: q for q in map(json.loads, questions.read_text(encoding="utf-8").splitlines()) if q}
    feats = {}
    for path in sorted((folder / "answers").glob("*.json")):
        for a in json.loads(path.read_text(encoding="utf-8"))["answers"]:
            q = qs[a["id"]]
            feats[(path.stem, a["id"])] = answer_features(q["question"], q.get("answer") or "", a["answer"])
    return scores, hand, keys, feats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folder", type=Path, default=REPO / "results/qwen2.5-coder-1.5b")
    ap.add_argument("--questions", type=Path, default=REPO / "data/build/dataset/questions.jsonl")
    ap.add_argument("--no-features", action="store_true", help="the judges' scores alone (the run's own model)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--refit-resamples", type=int, default=200)
    args = ap.parse_args()
    scores, hand, keys, feats = read(args.folder, None if args.no_features else args.questions)
    common = dict(judges=JUDGES, scores=scores, hand=hand, answers=keys, folds=args.folds, seed=args.seed,
                  resamples=args.resamples, confidence=0.95, features=feats)
    t0 = time.perf_counter()
    score_judges(**common, crossfit_seeds=1, refit_resamples=1)
    t1 = time.perf_counter()
    scored = score_judges(**common, crossfit_seeds=args.seeds, refit_resamples=args.refit_resamples)
    t2 = time.perf_counter()
    d = scored.detail
    print(f"{args.folder.name}: {len(hand)} graded answers, {args.folds} folds, features: "
          f"{'no' if feats is None else 'yes'}; {args.seeds} fold seeds from {args.seed}, "
          f"{args.refit_resamples} refit resamples")
    print("| judge | AUC (median, refit interval) | kappa, seed "
          f"{args.seed} (thresholds fixed) | kappa: median (refit interval) | seeds: min to max | seeds below 0.6 |")
    print("|---|---|---|---|---|---|")
    for name, e in [*d["judges"].items(), (COMBINED, d[COMBINED])]:
        if e.get("status") != "ok":
            print(f"| `{name}` | {e.get('reason')} |")
            continue
        a, k1, km = e["auc"], e["crossfit"]["kappa"], e["kappa"]
        below = float(np.mean(np.asarray(km["by_seed"]) < 0.6))
        print(f"| `{name}` | {a['estimate']:.3f} ({a['low']:.3f} to {a['high']:.3f}) | {k1['estimate']:.3f} "
              f"({k1['low']:.3f} to {k1['high']:.3f}) | {km['estimate']:.3f} ({km['low']:.3f} to {km['high']:.3f}) | "
              f"{km['min']:.3f} to {km['max']:.3f} | {below:.0%} |")
    if d[COMBINED].get("status") == "ok":
        print(f"combined, seed {args.seed}: out-of-fold AUC {d[COMBINED]['crossfit']['auc']['estimate']:.3f}; "
              f"penalty C of its folds {d[COMBINED]['crossfit']['fold_C']}, of the all-grades model "
              f"{d[COMBINED]['C']} (nested cross-validation, combined.choose_penalty)")
    print(f"primary: {d['primary']}; repeated cross-fits took {t2 - t1 - (t1 - t0):.1f} s "
          f"(score_judges {t2 - t1:.1f} s against {t1 - t0:.1f} s with one seed and one resample)")


if __name__ == "__main__":
    main()
