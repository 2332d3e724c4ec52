"""Every judge by its score: how well it ranks the hand-graded answers, its verdicts at a threshold
chosen on the hand grades by cross-fitting, the combined judge, and which judge is primary.

Input: each judge's score per answer (``judge@CONFIG``'s ``score``; None where it gave none) and
the hand grades; answers of every config are pooled (a judge's threshold is one number for the
whole run). Per judge with a score on every graded answer (``judges``):

* ``auc``: AUC with its percentile bootstrap interval (``thresholds.auc_interval``; the score is
  the judge's own, nothing is fitted);
* ``kappa``, the headline: the cross-fitted kappa repeated over ``crossfit_seeds`` fold seeds from
  ``seed``, its median, with the interval of a bootstrap that re-runs the whole cross-fit on each
  of ``refit_resamples`` resamples (``refit.repeated_crossfit``: thresholds re-chosen on the drawn
  grades);
* ``crossfit``: one cross-fit, fold seed ``seed`` (``seed`` in it): agreement (confusion,
  accuracy, TPR, TNR, Cohen's kappa with bootstrap intervals: ``agreement.agreement``) of the
  verdicts of ``thresholds.crossfit_verdicts`` (``folds`` folds), with the folds' thresholds;
  that bootstrap resamples answers and keeps the chosen thresholds fixed. Its verdicts are the
  ones the failure tables and verdicts.csv use;
* ``threshold``: the threshold chosen on every grade, which judges the answers without one;
* ``roc``: the ROC points (for ``metrics/plots/roc.json``).

A judge without a score on some graded answer (an LLM backend without token probabilities) is
``unscored`` with the reason; its fixed-threshold calibration still stands elsewhere.

``combined``: the logistic regression over the scored judges' scores (``combined``), when at least
two judges are scored on every answer, reported exactly like a judge (its out-of-fold scores give
its AUC and ROC), except that its score is fitted: its headline ``auc`` is the median over fold
seeds of the out-of-fold AUC with the refit interval (the logistic model re-fit on every
resample), like ``kappa``, and ``crossfit.auc`` is seed ``seed``'s, with a bootstrap that holds
the fold models fixed. When every answer has its answer features (``features``: ``new_f1`` and
``question_overlap`` of ``answer_features.answer_features``, which the judge stage writes beside the
verdicts), they are inputs too, and ``question_overlap`` is the model's veto: an answer that adds
no word to the question gets probability 0 (``combined`` module docstring). Without them (judge
files written before features were kept) the inputs are the scores alone, and ``features_note``
says why. ``inputs`` lists the columns in order; ``C`` is the all-grades model's penalty, chosen
from ``C_grid`` by cross-validation on every grade, and ``crossfit.fold_C`` each fold model's at
seed ``seed``, chosen on that fold's training grades alone (``combined.choose_penalty``: nested
cross-validation); ``judge_items`` gives the all-grades model's
score and verdict on made-up answers (the canaries), as on any answer without a grade.

``primary``: the judge, or ``combined``, with the highest median cross-fitted kappa (``kappa``;
ties: the order of ``judge.judges``, combined last). ``verdicts_for(name)`` gives its verdict and score on every
answer: a graded answer's from cross-fitting, an ungraded one's from the threshold (or model)
chosen on every grade. With no scored judge there is no primary here (the caller falls back to
the fixed verdicts).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_ablation.core.config import JudgeConfig
from rag_ablation.evaluation.judges.agreement import agreement
from rag_ablation.evaluation.judges.combined import PENALTY_GRID, crossfit_combined, fit_all, predict_unlabeled
from rag_ablation.evaluation.judges.answer_features import ANSWER_FEATURES
from rag_ablation.evaluation.judges.refit import Fitter, combined_fitter, judge_fitter, repeated_crossfit
from rag_ablation.evaluation.judges.thresholds import auc_interval, best_threshold, crossfit_verdicts, roc_points

Key = tuple[str, str]
COMBINED = "combined"
"""The combined judge's name in the outputs (never a name in ``judge.judges``)."""
VETO_FEATURE = "question_overlap"
"""The answer feature whose value 1 makes the combined judge's probability 0 (``combined.fit``)."""


@dataclass
class ScoredJudges:
    """The result (module docstring): ``detail`` for judge_detail.json, ``roc`` rows for the plot,
    ``chosen``: name -> answer key -> (score, verdict) on every answer, ``features``: answer key
    -> the combined judge's inputs (``inputs``: the scored judges' scores, then the answer features
    when every answer has them), ``veto``: the column of ``VETO_FEATURE`` among them (None without
    features), ``model`` and ``threshold``: the all-grades model and its threshold, ``primary``."""

    detail: dict[str, Any] = field(default_factory=dict)
    chosen: dict[str, dict[Key, tuple[float, bool]]] = field(default_factory=dict)
    features: dict[Key, tuple[float, ...]] = field(default_factory=dict)
    fold_scores: dict[Key, tuple[float, ...]] = field(default_factory=dict)
    primary: str | None = None
    inputs: tuple[str, ...] = ()
    veto: int | None = None
    model: object | None = None
    threshold: float | None = None

    def judge_items(self, items: Sequence[Mapping[str, Any]]) -> list[tuple[float, bool] | None]:
        """The combined judge's ``(score, verdict)`` on answers without a grade given as rows with
        ``score_<judge>`` for each scored judge and the answer features by name (the canary rows of
        ``judge_checks``): the all-grades model and threshold, as for every ungraded answer; None
        for a row missing an input (a judge gave no score). Raises ValueError when there is no
        combined judge."""
        if self.model is None or self.threshold is None:
            raise ValueError("there is no combined judge (fewer than two judges scored on every answer)")
        out: list[tuple[float, bool] | None] = []
        for it in items:
            x = [it.get(name if name in ANSWER_FEATURES else f"score_{name}") for name in self.inputs]
            if any(v is None for v in x):
                out.append(None)
                continue
            p = float(self.model.predict(np.asarray([x], dtype=float))[0])  # type: ignore[attr-defined]
            out.append((p, p >= self.threshold))
        return out


def _report(name: str, graded: Sequence[Key], scores: Sequence[float], verdicts: Sequence[bool],
            labels: Sequence[bool], thresholds: Sequence[float], fitter: Fitter, *, resamples: int, seed: int,
            confidence: float, crossfit_seeds: int, refit_resamples: int) -> dict[str, Any]:
    a = agreement(list(verdicts), list(labels), n_resamples=resamples, seed=seed, confidence=confidence)
    one_seed = auc_interval(scores, labels, n_resamples=resamples, seed=seed, confidence=confidence).as_dict()
    repeated = repeated_crossfit(fitter, labels, seeds=crossfit_seeds, first_seed=seed, resamples=refit_resamples,
                                 confidence=confidence)
    entry: dict[str, Any] = {"status": "ok", "n": len(graded), "auc": one_seed,
                             "kappa": repeated["kappa"].as_dict(),  # type: ignore[union-attr]
                             "crossfit": {**a.as_dict(), "seed": seed, "fold_thresholds": list(thresholds)},
                             "roc": roc_points(scores, labels)}
    if repeated["auc"] is not None:  # a fitted score: the seed's AUC is one cross-fit's
        entry["auc"] = repeated["auc"].as_dict()
        entry["crossfit"]["auc"] = one_seed
    return entry


def score_judges(*, judges: Sequence[str], scores: Mapping[str, Mapping[Key, float | None]],
                 hand: Mapping[Key, bool], answers: Sequence[Key], folds: int, seed: int, resamples: int,
                 confidence: float, features: Mapping[Key, Mapping[str, float]] | None = None,
                 crossfit_seeds: int = JudgeConfig.crossfit_seeds,
                 refit_resamples: int = JudgeConfig.refit_resamples) -> ScoredJudges:
    """Everything of the module docstring. ``scores``: judge -> answer key -> score (a judge
    absent, or an answer missing, means no score); ``answers``: every answer key of the run;
    ``features``: answer key -> its answer features by name (``answer_features.ANSWER_FEATURES``);
    ``crossfit_seeds``, ``refit_resamples``: the repeated cross-fit's fold seeds and refit draws
    (``judge.crossfit_seeds``, ``judge.refit_resamples``)."""
    out = ScoredJudges(detail={"judges": {}, COMBINED: None, "primary": None, "folds": folds, "seed": seed,
                               "crossfit_seeds": crossfit_seeds, "refit_resamples": refit_resamples})
    repeat = {"crossfit_seeds": crossfit_seeds, "refit_resamples": refit_resamples}
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
        entry = _report(j, graded, s, fitted.verdicts, labels, fitted.thresholds, judge_fitter(s, labels, k=folds),
                        resamples=resamples, seed=seed, confidence=confidence, **repeat)
        t_all = best_threshold(s, labels)
        entry["threshold"] = t_all
        out.detail["judges"][j] = entry
        kappas[j] = entry["kappa"]["estimate"]
        crossfit = dict(zip(graded, fitted.verdicts))
        out.chosen[j] = {k: (float(v), crossfit[k] if k in crossfit else bool(v >= t_all))
                         for k, v in js.items() if v is not None}
        if all(js.get(k) is not None for k in answers):
            scored.append(j)
    if len(scored) >= 2:
        missing = [k for k in answers if any((features or {}).get(k, {}).get(f) is None for f in ANSWER_FEATURES)]
        extra = ANSWER_FEATURES if not missing else ()
        out.inputs = (*scored, *extra)
        out.veto = out.inputs.index(VETO_FEATURE) if extra else None
        out.features = {k: (*(float(scores[j][k]) for j in scored),  # type: ignore[arg-type]
                            *(float(features[k][f]) for f in extra))  # type: ignore[index]
                        for k in answers}
        x = [out.features[k] for k in graded]
        fitted_c = crossfit_combined(x, labels, k=folds, seed=seed, veto=out.veto)
        entry = _report(COMBINED, graded, fitted_c.scores, fitted_c.verdicts, labels, fitted_c.thresholds,
                        combined_fitter(x, labels, k=folds, veto=out.veto), resamples=resamples, seed=seed,
                        confidence=confidence, **repeat)
        model, t_all = fit_all(x, labels, veto=out.veto)
        out.model, out.threshold = model, t_all
        if missing:
            entry["features_note"] = (f"no answer features on {len(missing)} of {len(answers)} answers (e.g. "
                                      f"{missing[0][0]}/{missing[0][1]}): judge files from before they were kept; "
                                      "the judges' scores alone, with no veto (rerun the judge stages)")
        ungraded = [k for k in answers if k not in hand]
        p_all: np.ndarray | list[float] = (model.predict(np.asarray([out.features[k] for k in ungraded], dtype=float))
                                           if ungraded else [])
        folds_u = predict_unlabeled(fitted_c, [out.features[k] for k in ungraded]) if ungraded else np.empty((0, 0))
        out.fold_scores = {k: tuple(float(v) for v in row) for k, row in zip(ungraded, folds_u)}
        entry.update(threshold=t_all, inputs=list(out.inputs), veto=None if out.veto is None else VETO_FEATURE,
                     coefficients=_coefficients(model, out.inputs), C=model.C, C_grid=list(PENALTY_GRID))
        entry["crossfit"]["fold_C"] = list(fitted_c.penalties)
        out.detail[COMBINED] = entry
        kappas[COMBINED] = entry["kappa"]["estimate"]
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
