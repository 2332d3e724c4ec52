"""PPI++ gain of the combined judge with its penalty fixed (C = 1, as before) against chosen by
nested cross-validation (issue 48, item 3), under the report's own split-half check.

Reads an experiment's committed judge outputs as ``benchmarks/judge_refit.py`` does
(``verdicts.csv``'s scores and hand grades; the answer features from ``answers/`` and
``--questions``) and runs ``ppi_check.split_half_scores``, the function ``judge_eval`` runs, in
two designs:

* ``report``: the report's check itself, per config: half of the config's graded answers
  labelled, the other half held back (``judge_eval``'s ``score_accuracy``);
* ``pooled``: every graded answer of the experiment pooled, ``--labelled`` of them labelled and
  the rest held back (``benchmarks/ppi_labelled_share.py``'s design: more unlabelled answers
  than graded ones, as in use).

Per design, ``--splits`` seeded splits from ``--seed``. One definition of the gain throughout:
``(mean width of the labelled grades' own interval / mean width of PPI++'s)^2`` over the
splits: how many times as many hand grades the interval is worth, averaged over splits (not
the first split's ``ppi.gain`` that the report's PPI++ table shows). Predictions: each judge's
raw score (``llm``, ``token_f1``, ``contains``); the combined judge on the three scores
(``combined (scores)``, as ``ppi_labelled_share.py``), on the scores and the answer features
with the veto (``combined (features)``, as ``judge_eval`` now), and on token F1 alone
(``token_f1 via model``), each fit with the penalty ``C = 1`` and with the nested choice
(``--fixed`` adds other fixed values). Coverage is of the accuracy of the graded answers.

Usage:  .venv/bin/python benchmarks/nested_penalty.py [--folder results/qwen2.5-coder-1.5b]
            [--questions data/build/dataset/questions.jsonl] [--labelled 40] [--splits 200]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from judge_refit import read  # noqa: E402

from rag_ablation.evaluation.judges import combined  # noqa: E402
from rag_ablation.evaluation.judges.answer_features import ANSWER_FEATURES  # noqa: E402
from rag_ablation.evaluation.judges.ppi_check import split_half_scores  # noqa: E402

RAW = ("llm", "token_f1", "contains")
NESTED = combined.choose_penalty
"""The library's nested choice of C, kept before ``run`` swaps in a fixed one."""


def gain(check: Mapping[str, Any]) -> float:
    """The gain of one check over its splits (module docstring)."""
    return float((check["mean_classical_width"] / check["mean_width"]) ** 2)


def with_penalty(c: float | None) -> Callable[..., float]:
    """A stand-in for ``combined.choose_penalty``: the nested choice (``c`` None) or a fixed ``c``."""
    return NESTED if c is None else (lambda *a, **k: c)


def run(hand: Mapping[str, bool], predictions: Mapping[str, dict[str, Any]], *, splits: int, seed: int,
        labelled: int | None) -> list[tuple[str, dict[str, Any]]]:
    """``split_half_scores`` for each prediction (name -> its keyword arguments and ``penalty``)."""
    out = []
    for name, spec in predictions.items():
        given = {k: v for k, v in spec.items() if k != "penalty"}
        combined.choose_penalty = with_penalty(spec.get("penalty"))  # type: ignore[assignment]
        try:
            check, reason = split_half_scores(hand, splits=splits, seed=seed, labelled=labelled, **given)
        finally:
            combined.choose_penalty = with_penalty(None)  # type: ignore[assignment]
        assert check is not None, reason
        out.append((name, check))
    return out


def predictions(keys: Sequence[str], scores: Mapping[str, Mapping[str, float]],
                feats: Mapping[str, Mapping[str, float]], fixed: Sequence[float]) -> dict[str, dict[str, Any]]:
    """Every prediction of the module docstring on the answers ``keys``."""
    out: dict[str, dict[str, Any]] = {j: {"score": {k: scores[j][k] for k in keys}} for j in RAW}
    inputs = {
        "combined (scores)": ({k: [scores[j][k] for j in RAW] for k in keys}, None),
        "combined (features)": ({k: [*(scores[j][k] for j in RAW), *(feats[k][f] for f in ANSWER_FEATURES)]
                                 for k in keys}, len(RAW) + ANSWER_FEATURES.index("question_overlap")),
        "token_f1 via model": ({k: [scores["token_f1"][k]] for k in keys}, None),
    }
    for name, (x, veto) in inputs.items():
        for c in (1.0, *fixed, None):
            label = f"{name}, C = {c:g}" if c is not None else f"{name}, nested"
            out[label] = {"features": x, "veto": veto, "penalty": c}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folder", type=Path, default=REPO / "results/qwen2.5-coder-1.5b")
    ap.add_argument("--questions", type=Path, default=REPO / "data/build/dataset/questions.jsonl")
    ap.add_argument("--labelled", type=int, default=40, help="graded answers kept in the pooled design")
    ap.add_argument("--splits", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fixed", type=float, nargs="*", default=[100.0], help="other fixed C values to show")
    ap.add_argument("--design", choices=("report", "pooled", "both"), default="both")
    args = ap.parse_args()
    scores_t, hand_t, _, feats_t = read(args.folder, args.questions)
    assert feats_t is not None
    key = "/".join
    hand = {key(k): v for k, v in hand_t.items()}
    scores = {j: {key(k): v for k, v in s.items()} for j, s in scores_t.items()}
    feats = {key(k): v for k, v in feats_t.items()}
    configs = sorted({k.split("/", 1)[0] for k in hand})
    designs: list[tuple[str, list[str], int | None]] = []
    if args.design in ("report", "both"):
        designs += [(f"report: `{c}`", sorted(k for k in hand if k.startswith(c + "/")), None) for c in configs]
    if args.design in ("pooled", "both"):
        designs.append((f"pooled: {args.labelled} of {len(hand)}", sorted(hand), args.labelled))
    print(f"{args.folder.name}: {len(hand)} graded answers; {args.splits} splits from seed {args.seed}\n")
    print("| design | n + N | prediction | coverage PPI++ / labelled alone | mean width PPI++ / labelled alone | gain |")
    print("|---|---|---|---|---|---|")
    for design, keys, labelled in designs:
        sub = {k: hand[k] for k in keys}
        t = time.perf_counter()
        for name, check in run(sub, predictions(keys, scores, feats, args.fixed), splits=args.splits,
                               seed=args.seed, labelled=labelled):
            print(f"| {design} | {check['n_labeled']} + {check['n_heldout']} | {name} | {check['coverage']:.1%} / "
                  f"{check['classical_coverage']:.1%} | {check['mean_width']:.3f} / "
                  f"{check['mean_classical_width']:.3f} | {gain(check):.2f}x |", flush=True)
        print(f"<!-- {design}: {time.perf_counter() - t:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
