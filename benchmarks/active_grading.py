"""Active against random grading order, simulated on the committed hand grades (issue 34, item 5;
measured honestly for issue 48, item 5).

Data: each committed experiment's ``verdicts.csv`` (the example in `metrics/scores/`, the 1.5B in
`results/qwen2.5-coder-1.5b/`): every hand-graded answer, its hand grade and each judge's score
(``llm_score``, the LLM judge's P(CORRECT); ``token_f1_score``; ``contains_score``).

**Protocol ``held-out`` (the default): the score that orders the answers was never fit on the
grades being estimated.** Each of ``--splits`` seeded splits (``--seed``, ``--seed + 1``, ...)
divides the graded answers by question (``held_out.split_by_question``: ``--fit-share`` of the
questions, both configs' answers to a question on one side). The *estimate* part is the
population: its hand accuracy is the truth, and each active or random order runs over its
answers alone. Its answers are ordered by

* ``combined``: the combined judge fit on the *fit* part's answers and grades alone
  (``held_out.held_out_scores``: ``combined.fit``, its penalty chosen by nested cross-validation
  inside that fit), on the three judges' scores, plus the answer features with the
  ``question_overlap`` veto when the experiment's folder has ``answers/`` and ``--questions``
  exists (not with ``--no-features``); that is what a grading session has for answers not yet graded: a model of earlier
  grades. ``--fit-questions K ...`` also fits it on a seeded ``K`` of the fit part's questions
  only (``split_by_question`` again, within the fit part), to see how many other grades it needs;
* ``llm`` (P(CORRECT)) and ``token_f1``: raw scores, fit on nothing (the fit part is unused).

Per split, ``--orders`` seeded orders per score (random order reads no score: one row) give the
95% interval after each of ``--grades`` grades (those below the part's size): the finite-
population Wilson interval for random order, the sequential inverse-probability-weighted one
for active order (``rag_ablation.evaluation.judges.active``, uniform share ``--uniform``).
Printed per experiment, score, order and grade count: the coverage over all splits x orders
(the share of intervals holding the part's truth; a 95% interval must keep at least 93%), the
mean width, the width as a share of random order's, and the mean absolute error.

**Protocol ``in-sample``** (the measurement before issue 48, kept to compare): the population
is every graded answer and the score is the ``<judge>_score`` column of ``verdicts.csv``
(``--score-judge``), which for ``combined`` is cross-fitted: each answer's score comes from a
model fit on the other folds' grades, 128 of the same 160 the interval estimates, so its width
gain is not one a grading session can have.

Usage:  .venv/bin/python benchmarks/active_grading.py [--splits 100] [--orders 20] [--fit-share 0.5]
            [--fit-questions 10 20 40] [--grades 10 20 40] [--uniform 0.5] [--questions data/build/dataset/questions.jsonl]
        .venv/bin/python benchmarks/active_grading.py --protocol in-sample [--repetitions 500]
            [--score-judge combined]
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rag_ablation.authoring.grade_order import read_scores  # noqa: E402
from rag_ablation.evaluation.judges.active import active_order, random_order, sequence_estimate  # noqa: E402
from rag_ablation.evaluation.judges.answer_features import ANSWER_FEATURES, answer_features  # noqa: E402
from rag_ablation.evaluation.judges.held_out import held_out_scores, split_by_question  # noqa: E402

EXPERIMENTS = {"example": REPO / "metrics/scores", "qwen2.5-coder-1.5b": REPO / "results/qwen2.5-coder-1.5b"}
JUDGES = ("llm", "token_f1", "contains")
"""The judges whose scores the combined judge reads, in ``scored.score_judges``' order."""
RAW = ("llm", "token_f1")
"""The raw scores that order answers as they are (fit on nothing)."""
Key = tuple[str, str]
Row = tuple[bool, float, float]
"""One interval: (holds the truth, width, absolute error)."""


@dataclass(frozen=True)
class Experiment:
    """Every hand-graded answer of one experiment: ``keys``, ``hand`` grades, the raw scores by
    judge, the combined judge's ``inputs`` (answers x columns, named by ``columns``) and its
    ``veto`` column (None without answer features)."""

    keys: list[Key]
    hand: np.ndarray
    raw: dict[str, np.ndarray]
    inputs: np.ndarray
    columns: tuple[str, ...]
    veto: int | None


def features_of(folder: Path, questions: Path | None) -> dict[Key, dict[str, float]]:
    """The answer features of every answer in ``folder/answers/*.json`` (config = file stem), or
    none without that folder or the questions file."""
    if questions is None or not questions.is_file() or not (folder / "answers").is_dir():
        return {}
    qs = {q["id"]: q for q in map(json.loads, questions.read_text(encoding="utf-8").splitlines()) if q}
    out = {}
    for path in sorted((folder / "answers").glob("*.json")):
        for a in json.loads(path.read_text(encoding="utf-8"))["answers"]:
            if a["id"] in qs:
                q = qs[a["id"]]
                out[(path.stem, a["id"])] = answer_features(q["question"], q.get("answer") or "", a["answer"])
    return out


def read_experiment(folder: Path, questions: Path | None) -> Experiment:
    """The graded answers of ``folder/verdicts.csv`` (module docstring), with the answer features
    as inputs only when every graded answer has them."""
    with (folder / "verdicts.csv").open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["hand"] in ("0", "1")]
    keys = [(r["config"], r["id"]) for r in rows]
    scores = {j: np.array([float(r[f"{j}_score"]) for r in rows]) for j in JUDGES}
    feats = features_of(folder, questions)
    extra = ANSWER_FEATURES if feats and all(k in feats for k in keys) else ()
    columns = (*JUDGES, *extra)
    inputs = np.column_stack([scores[j] for j in JUDGES] + [[feats[k][f] for k in keys] for f in extra])
    return Experiment(keys, np.array([r["hand"] == "1" for r in rows]), {j: scores[j] for j in RAW}, inputs,
                      columns, columns.index("question_overlap") if extra else None)


def intervals(scores: np.ndarray, verdicts: np.ndarray, *, name: str, uniform: float, seed: int,
              grades: Sequence[int]) -> dict[int, Row]:
    """One order (``name``, seeded by ``seed``) over the population ``scores``/``verdicts``: for
    each grade count below its size, whether the interval holds the population's accuracy, its
    width and the estimate's absolute error."""
    truth = float(np.mean(verdicts))
    s, v = scores.tolist(), verdicts.tolist()
    order = (active_order if name == "active" else random_order)(s, seed=seed, uniform=uniform)
    out = {}
    for n in grades:
        if n < len(s):
            est = sequence_estimate(order, s, v, n, name=name)
            out[n] = (est.low <= truth <= est.high, est.high - est.low, abs(est.estimate - truth))
    return out


def held_out(exp: Experiment, *, fit_share: float, splits: int, orders: int, seed: int, uniform: float,
             grades: Sequence[int], fit_questions: Sequence[int | None] = (None,)) -> dict[tuple[str, int], list[Row]]:
    """(order label, grades) -> every interval of the held-out protocol (module docstring); the
    labels are ``random``, ``active, <raw score>`` and ``active, combined (fit on K questions)``,
    one per ``fit_questions`` (None: the whole fit part; K: a seeded K of its questions)."""
    out: dict[tuple[str, int], list[Row]] = {}
    for split in range(splits):
        fit_rows, est_rows = split_by_question(exp.keys, fit_share=fit_share, seed=seed + split)
        verdicts = exp.hand[est_rows]
        by_score = {j: exp.raw[j][est_rows] for j in RAW}
        n_fit = len({exp.keys[i][1] for i in fit_rows})
        for k in fit_questions:
            used = fit_rows
            if k is not None and k < n_fit:
                sub, _ = split_by_question([exp.keys[i] for i in fit_rows], fit_share=k / n_fit, seed=seed + split)
                used = [fit_rows[i] for i in sub]
            by_score[f"combined (fit on {min(k or n_fit, n_fit)} questions)"] = held_out_scores(
                exp.inputs, exp.hand, fit_rows=used, score_rows=est_rows, veto=exp.veto)
        runs = [("random", "random", np.full(verdicts.size, 0.5))]  # random order reads no score
        runs += [(f"active, {j}", "active", s) for j, s in by_score.items()]
        for label, name, s in runs:
            for r in range(orders):
                for n, row in intervals(s, verdicts, name=name, uniform=uniform, seed=(seed + split) * orders + r,
                                        grades=grades).items():
                    out.setdefault((label, n), []).append(row)
    return out


def in_sample(folder: Path, judge: str, *, repetitions: int, seed: int, uniform: float,
              grades: Sequence[int]) -> dict[tuple[str, int], list[Row]]:
    """The protocol before issue 48 (module docstring): every graded answer, ordered by
    ``verdicts.csv``'s ``<judge>_score`` (``grade_order.read_scores``)."""
    scores = read_scores(folder, judge)
    with (folder / "verdicts.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["hand"] in ("0", "1")]
    s = np.array([scores[(r["config"], r["id"])] for r in rows])
    v = np.array([r["hand"] == "1" for r in rows])
    out: dict[tuple[str, int], list[Row]] = {}
    for label, name in (("random", "random"), (f"active, {judge}", "active")):
        for rep in range(repetitions):
            for n, row in intervals(s, v, name=name, uniform=uniform, seed=seed + rep, grades=grades).items():
                out.setdefault((label, n), []).append(row)
    return out


def table(head: str, result: dict[tuple[str, int], list[Row]]) -> list[str]:
    """Markdown rows: coverage, mean width, width / random's at the same grades, mean abs. error."""
    lines = []
    for (label, n), rows in sorted(result.items(), key=lambda kv: (kv[0][0] != "random", kv[0][0], kv[0][1])):
        cover, width, error = (float(np.mean(c)) for c in zip(*rows))
        base = float(np.mean([r[1] for r in result[("random", n)]]))
        flag = "**" if cover < 0.93 else ""
        lines.append(f"| {head} | {label} | {n} | {flag}{cover:.1%}{flag} | {width:.3f} | {width / base:.2f} | "
                     f"{error:.3f} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--protocol", choices=("held-out", "in-sample"), default="held-out")
    ap.add_argument("--splits", type=int, default=100, help="held-out: seeded splits by question")
    ap.add_argument("--orders", type=int, default=20, help="held-out: seeded orders per split and score")
    ap.add_argument("--fit-share", type=float, nargs="+", default=[0.5], help="held-out: share of questions fit on")
    ap.add_argument("--fit-questions", type=int, nargs="+",
                    help="held-out: the combined judge fit on a seeded K of the fit part's questions (default all)")
    ap.add_argument("--questions", type=Path, default=REPO / "data/build/dataset/questions.jsonl",
                    help="held-out: for the answer features of an experiment with answers/")
    ap.add_argument("--no-features", action="store_true", help="held-out: the combined judge on the scores alone")
    ap.add_argument("--repetitions", type=int, default=500, help="in-sample: seeded orders")
    ap.add_argument("--score-judge", default="token_f1", help="in-sample: the <judge>_score column that orders")
    ap.add_argument("--grades", type=int, nargs="+", help="grade counts (default 10 20 40 held-out, 20 40 80 in-sample)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--uniform", type=float, default=0.5, help="active order's uniform share")
    args = ap.parse_args()
    grades = args.grades or ([10, 20, 40] if args.protocol == "held-out" else [20, 40, 80])
    t0 = time.perf_counter()
    print("| experiment | order, score | grades | coverage | mean width | width / random's | mean abs. error |")
    print("|---|---|---|---|---|---|---|")
    notes = []
    for label, folder in EXPERIMENTS.items():
        if args.protocol == "in-sample":
            result = in_sample(folder, args.score_judge, repetitions=args.repetitions, seed=args.seed,
                               uniform=args.uniform, grades=grades)
            print("\n".join(table(f"{label}, all graded", result)))
            continue
        exp = read_experiment(folder, None if args.no_features else args.questions)
        notes.append(f"{label}: {len(exp.keys)} graded answers, accuracy {exp.hand.mean():.3f}; combined inputs "
                     f"{', '.join(exp.columns)}{' (veto question_overlap)' if exp.veto is not None else ''}")
        for share in args.fit_share:
            result = held_out(exp, fit_share=share, splits=args.splits, orders=args.orders, seed=args.seed,
                              uniform=args.uniform, grades=grades, fit_questions=args.fit_questions or [None])
            n_questions = len({q for _, q in exp.keys})
            n_est = n_questions - min(max(round(share * n_questions), 1), n_questions - 1)
            print("\n".join(table(f"{label}, {n_est} questions' answers estimated", result)))
    runs = (f"{args.splits} splits x {args.orders} orders" if args.protocol == "held-out"
            else f"{args.repetitions} orders")
    print("\n" + "\n".join(notes))
    print(f"{args.protocol}: {runs}, uniform {args.uniform:g}, {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
