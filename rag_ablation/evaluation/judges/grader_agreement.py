"""How far two hand graders agree: the ceiling of every judge's agreement with the grades.

A second grader grades blind the answers a first grader graded (``rag-ablation grade
--second-pass``; the grades file: ``rag_ablation.evaluation.judges.grades``). A judge that agrees
with the grades as well as a second person does cannot be told from one; a judge kappa near the
graders' kappa is as good as the grades allow, and a low graders' kappa says the grading rule,
not the judge, is the limit.

* :func:`grader_pairs`: for every current answer text graded by two graders, the first grader's
  line (the earliest ordinary line) and the second's (the earliest ordinary line of another
  grader), and the adjudicated verdict where there is one;
* :func:`grader_agreement`: Cohen's kappa of the pairs (``sklearn.metrics.cohen_kappa_score``)
  with the judges' bootstrap percentile interval (``agreement.agreement``: the same resamples of
  answers, ``resamples``, ``seed``, ``confidence``), the 2x2 table, and the number of pairs;
* :func:`grader_detail`: both, overall and per config, with the list of disagreements for
  adjudication (id, config, both verdicts and notes, the adjudicated verdict if any): the
  ``graders`` entry of ``judge_eval``'s detail. Without any pair it is ``status: "none"`` with
  how to add a second grader.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_ablation.evaluation.judges.agreement import agreement
from rag_ablation.evaluation.judges.grades import Grade

Key = tuple[str, str]
HOW_TO_ADD = ("no answer is graded by a second grader: a second person grades blind with "
              "`rag-ablation grade --second-pass --grader NAME` (or the workbench's Second grader form), "
              "and the report then shows how far two graders agree, the ceiling of every judge's kappa")


@dataclass(frozen=True)
class GraderPair:
    """One current answer text graded by two graders: ``first`` (the earliest ordinary line),
    ``second`` (the earliest ordinary line of another grader) and ``adjudicated`` (the verdict of
    its adjudicated line, or None)."""

    first: Grade
    second: Grade
    adjudicated: str | None

    @property
    def key(self) -> Key:
        return self.first.key

    @property
    def agree(self) -> bool:
        return self.first.verdict == self.second.verdict


def grader_pairs(grades: Sequence[Grade], hashes: Mapping[Key, str]) -> list[GraderPair]:
    """The :class:`GraderPair` of every current answer (``hashes``: ``(config, id)`` -> sha256 of
    its current text) graded by two graders or more, sorted by ``(config, id)``; a third
    grader's line is not used. Lines for other texts (stale) and other answers are left out."""
    ordinary: dict[Key, list[Grade]] = {}
    adjudicated: dict[Key, str] = {}
    for g in grades:
        if hashes.get(g.key) != g.answer_sha256:
            continue
        if g.adjudicated:
            adjudicated[g.key] = g.verdict
        else:
            ordinary.setdefault(g.key, []).append(g)
    out = []
    for key in sorted(ordinary):
        lines = ordinary[key]
        other = next((g for g in lines if g.grader != lines[0].grader), None)
        if other is not None:
            out.append(GraderPair(lines[0], other, adjudicated.get(key)))
    return out


def kappa_of(first: Sequence[bool], second: Sequence[bool]) -> float | None:
    """Cohen's kappa of two graders' verdicts (``sklearn.metrics.cohen_kappa_score``); None when
    it is 0/0 (both gave every answer the same verdict)."""
    from sklearn.metrics import cohen_kappa_score

    if len(set(first) | set(second)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = float(cohen_kappa_score(list(first), list(second)))
    return None if value != value else value


def grader_agreement(pairs: Sequence[GraderPair], *, resamples: int, seed: int, confidence: float) -> dict[str, Any]:
    """Agreement of the first and second graders on ``pairs`` (at least one): ``n``, ``kappa``
    (estimate from ``kappa_of``; ``low``, ``high`` the percentile interval of
    ``agreement.agreement`` over ``resamples`` bootstrap resamples of the pairs, seeded ``seed``;
    ``reason`` when undefined), ``accuracy`` (the share of pairs that agree, with its interval)
    and ``table``: ``both_correct``, ``first_only`` (first correct, second incorrect),
    ``second_only`` and ``both_incorrect``."""
    first = [p.first.correct for p in pairs]
    second = [p.second.correct for p in pairs]
    a = agreement(second, first, n_resamples=resamples, seed=seed, confidence=confidence)
    boot = a.kappa.as_dict()
    kappa = {**boot, "estimate": kappa_of(first, second)}
    if kappa["estimate"] is None:
        kappa.update(low=None, high=None)
    c = a.confusion
    return {"n": len(pairs), "confidence": confidence, "seed": seed, "kappa": kappa,
            "accuracy": a.accuracy.as_dict(),
            "table": {"both_correct": c.tp, "first_only": c.fn, "second_only": c.fp, "both_incorrect": c.tn}}


def disagreement_rows(pairs: Sequence[GraderPair]) -> list[dict[str, Any]]:
    """One row per pair whose graders differ, for adjudication: config, id, answer_sha256, each
    grader's name, verdict and note, and ``adjudicated`` (the settled verdict, or None)."""
    return [{"config": p.first.config, "id": p.first.id, "answer_sha256": p.first.answer_sha256,
             "first": {"grader": p.first.grader, "verdict": p.first.verdict, "note": p.first.note},
             "second": {"grader": p.second.grader, "verdict": p.second.verdict, "note": p.second.note},
             "adjudicated": p.adjudicated} for p in pairs if not p.agree]


def grader_detail(grades: Sequence[Grade], hashes: Mapping[Key, str], configs: Sequence[str], *, resamples: int,
                  seed: int, confidence: float) -> dict[str, Any]:
    """The ``graders`` entry of ``judge_eval``'s detail (module docstring): ``status`` ``ok`` with
    ``graders`` (every name in a pair), ``overall`` and ``configs`` (``grader_agreement``; a config
    of ``configs`` without a pair is left out), ``disagreements`` and ``adjudicated`` (how many of
    them are settled); or ``status`` ``none`` with ``reason`` (``HOW_TO_ADD``)."""
    pairs = grader_pairs(grades, hashes)
    if not pairs:
        return {"status": "none", "reason": HOW_TO_ADD}
    def measure(some: Sequence[GraderPair]) -> dict[str, Any]:
        return grader_agreement(some, resamples=resamples, seed=seed, confidence=confidence)

    rows = disagreement_rows(pairs)
    return {"status": "ok",
            "graders": sorted({p.first.grader for p in pairs} | {p.second.grader for p in pairs}),
            "overall": measure(pairs),
            "configs": {c: measure(mine) for c in configs
                        if (mine := [p for p in pairs if p.first.config == c])},
            "disagreements": rows, "adjudicated": sum(r["adjudicated"] is not None for r in rows)}
