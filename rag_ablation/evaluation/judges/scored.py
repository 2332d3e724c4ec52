"""Every judge by its score: how well it ranks the hand-graded answers, its verdicts at a threshold
chosen on the hand grades by cross-fitting, the combined judge, and which judge is primary.

Input: each judge's score per answer (``judge@CONFIG``'s ``score``; None where it gave none) and
the hand grades; answers of every config are pooled (a judge's threshold is one number for the
whole run). Per judge with a score on every graded answer (``judges``):

* ``auc``: AUC with its percentile bootstrap interval (``thresholds.auc_interval``);
* ``crossfit``: agreement (confusion, accuracy, TPR, TNR, Cohen's kappa with bootstrap intervals:
  ``agreement.agreement``) of the verdicts of ``thresholds.crossfit_verdicts`` (``folds`` folds
  seeded by ``seed``), with the folds' thresholds; the bootstrap resamples answers and keeps the
  chosen thresholds fixed;
* ``threshold``: the threshold chosen on every grade, which judges the answers without one;
* ``roc``: the ROC points (for ``metrics/plots/roc.json``).

A judge without a score on some graded answer (an LLM backend without token probabilities) is
``unscored`` with the reason; its fixed-threshold calibration still stands elsewhere.

``combined``: the logistic regression over the scored judges' scores (``combined``), when at least
two judges are scored on every answer, reported exactly like a judge (its out-of-fold scores give
its AUC and ROC).

``primary``: the judge, or ``combined``, with the highest cross-fitted kappa (ties: the order of
``judge.judges``, combined last). ``verdicts_for(name)`` gives its verdict and score on every
answer: a graded answer's from cross-fitting, an ungraded one's from the threshold (or model)
chosen on every grade. With no scored judge there is no primary here (the caller falls back to
the fixed verdicts).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_ablation.evaluation.judges.agreement import agreement
from rag_ablation.evaluation.judges.combined import crossfit_combined, fit_all, predict_unlabeled
from rag_ablation.evaluation.judges.thresholds import auc_interval, best_threshold, crossfit_verdicts, roc_points

Key = tuple[str, str]
COMBINED = "combined"
"""The combined judge's name in the outputs (never a name in ``judge.judges``)."""


@dataclass
class ScoredJudges:
    """The result (module docstring): ``detail`` for judge_detail.json, ``roc`` rows for the plot,
    ``chosen``: name -> answer key -> (score, verdict) on every answer, ``features``: answer key
    -> the scored judges' scores (the combined judge's inputs), ``primary``."""

    detail: dict[str, Any] = field(default_factory=dict)
    chosen: dict[str, dict[Key, tuple[float, bool]]] = field(default_factory=dict)
    features: dict[Key, tuple[float, ...]] = field(default_factory=dict)
    fold_scores: dict[Key, tuple[float, ...]] = field(default_factory=dict)
    primary: str | None = None


def _report(name: str, graded: Sequence[Key], scores: Sequence[float], verdicts: Sequence[bool],
            labels: Sequence[bool], thresholds: Sequence[float], *, resamples: int, seed: int,
            confidence: float) -> dict[str, Any]:
    a = agreement(list(verdicts), list(labels), n_resamples=resamples, seed=seed, confidence=confidence)
    return {"status": "ok", "n": len(graded),
            "auc": auc_interval(scores, labels, n_resamples=resamples, seed=seed, confidence=confidence).as_dict(),
            "crossfit": {**a.as_dict(), "fold_thresholds": list(thresholds)},
            "roc": roc_points(scores, labels)}


def score_judges(*, judges: Sequence[str], scores: Mapping[str, Mapping[Key, float | None]],
                 hand: Mapping[Key, bool], answers: Sequence[Key], folds: int, seed: int, resamples: int,
                 confidence: float) -> ScoredJudges:
    """Everything of the module docstring. ``scores``: judge -> answer key -> score (a judge
    absent, or an answer missing, means no score); ``answers``: every answer key of the run."""
    out = ScoredJudges(detail={"judges": {}, COMBINED: None, "primary": None, "folds": folds, "seed": seed})
    graded = sorted(k for k in hand if k in set(answers))
    labels = [hand[k] for k in graded]
    kappas: dict[str, float] = {}
    scored: list[str] = []
    if len(graded) < 2 or len(set(labels)) < 2:
        reason = f"{len(graded)} hand-graded answers of {'one grade' if graded else 'none'}: nothing to rank"
        out.detail["judges"] = {j: {"status": "unavailable", "reason": reason} for j in judges}
        out.detail[COMBINED] = {"status": "unavailable", "reason": reason}
        return out
    for j in judges:
        js = scores.get(j, {})
        missing = [k for k in graded if js.get(k) is None]
        if missing:
            out.detail["judges"][j] = {"status": "unscored", "reason": (
                f"no score on {len(missing)} of {len(graded)} graded answers (e.g. {missing[0][0]}/{missing[0][1]}): "
                "its backend gave no token probabilities, or the judge did not run")}
            continue
        s = [float(js[k]) for k in graded]  # type: ignore[arg-type]
        fitted = crossfit_verdicts(s, labels, k=folds, seed=seed)
        entry = _report(j, graded, s, fitted.verdicts, labels, fitted.thresholds, resamples=resamples, seed=seed,
                             confidence=confidence)
        t_all = best_threshold(s, labels)
        entry["threshold"] = t_all
        out.detail["judges"][j] = entry
        kappas[j] = entry["crossfit"]["kappa"]["estimate"]
        crossfit = dict(zip(graded, fitted.verdicts))
        out.chosen[j] = {k: (float(v), crossfit[k] if k in crossfit else bool(v >= t_all))
                         for k, v in js.items() if v is not None}
        if all(js.get(k) is not None for k in answers):
            scored.append(j)
    if len(scored) >= 2:
        out.features = {k: tuple(float(scores[j][k]) for j in scored) for k in answers}  # type: ignore[arg-type]
        x = [out.features[k] for k in graded]
        fitted_c = crossfit_combined(x, labels, k=folds, seed=seed)
        entry = _report(COMBINED, graded, fitted_c.scores, fitted_c.verdicts, labels, fitted_c.thresholds,
                             resamples=resamples, seed=seed, confidence=confidence)
        model, t_all = fit_all(x, labels)
        ungraded = [k for k in answers if k not in hand]
        p_all = model.predict(np.asarray([out.features[k] for k in ungraded], dtype=float)) if ungraded else []  # type: ignore[attr-defined]
        folds_u = predict_unlabeled(fitted_c, [out.features[k] for k in ungraded]) if ungraded else np.empty((0, 0))
        out.fold_scores = {k: tuple(float(v) for v in row) for k, row in zip(ungraded, folds_u)}
        entry.update(threshold=t_all, inputs=scored, coefficients=_coefficients(model, scored))
        out.detail[COMBINED] = entry
        kappas[COMBINED] = entry["crossfit"]["kappa"]["estimate"]
        out.chosen[COMBINED] = {**{k: (s_, v) for k, s_, v in zip(graded, fitted_c.scores, fitted_c.verdicts)},
                                **{k: (float(p), bool(p >= t_all)) for k, p in zip(ungraded, p_all)}}
    else:
        out.detail[COMBINED] = {"status": "unavailable", "reason": (
            f"{len(scored)} judge(s) scored on every answer ({', '.join(scored) or 'none'}): combining needs two")}
    order = [*judges, COMBINED]
    ranked = [n for n in order if kappas.get(n) is not None]
    if ranked:
        out.primary = max(ranked, key=lambda n: (kappas[n], -order.index(n)))
    out.detail["primary"] = out.primary
    out.detail["ranking"] = sorted(ranked, key=lambda n: (-kappas[n], order.index(n)))
    return out


def roc_rows(detail: dict[str, Any]) -> list[dict[str, Any]]:
    """The ROC points of every scored judge and the combined judge in ``detail`` (``score_judges``'s
    ``detail``) as ``{"judge", "fpr", "tpr"}`` rows, in ``judges`` order then ``combined``: the
    plot file ``metrics/plots/roc.json``."""
    entries = [*detail["judges"].items(), (COMBINED, detail.get(COMBINED) or {})]
    return [{"judge": name, **p} for name, e in entries if e.get("status") == "ok" for p in e["roc"]]


def _coefficients(model: object, names: Sequence[str]) -> dict[str, float] | None:
    """The fitted intercept and weights of the all-grades model (None for a constant model)."""
    inner = getattr(model, "model", None)
    if inner is None:
        return None
    return {"intercept": float(inner.intercept_[0]), **{n: float(w) for n, w in zip(names, inner.coef_[0])}}
