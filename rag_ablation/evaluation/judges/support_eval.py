"""Groundedness calibrated on hand support grades (issue 48, item 7): is an answer supported by
the passages its prompt showed?

Labels. A hand support grade (``grades.support_of``: ``supported``, ``partly`` or ``not``) is
*positive* when it is ``supported`` (``POSITIVE``): every claim of the answer is stated in the
passages shown. ``partly`` and ``not`` are negatives: an answer with one invented claim is not
grounded. An answer without a support grade (a grader may leave it out, e.g. for an answer that
asserts nothing) has no label.

Scorers (``SCORERS``, higher means more likely supported): ``lexical_support`` (the share of the
answer's content words found in the passages shown, ``evaluation.scoring.grounding``, a column of
``answers.csv``) and ``llm_support`` (the answer model's P(SUPPORTED) from the first reply token,
``support@CONFIG``). Each is calibrated as the correctness judges are (``calibrate_scorer``), on
the answers with both a label and a score:

* ``auc``: ``thresholds.auc_interval`` (AUC with its percentile bootstrap interval);
* ``kappa``: the cross-fitted Cohen's kappa (a threshold chosen on the other folds' grades judges
  each answer, ``thresholds.crossfit_verdicts``) as the median over fold seeds with an interval
  that re-fits the thresholds on every resample (``refit.repeated_crossfit``);
* ``threshold``: the threshold of highest kappa on every label (``thresholds.best_threshold``),
  the one that judges answers without a label and the canaries;
* ``unscored``: labelled answers without a score (refusals have no lexical support; a backend
  without probabilities gives no P(SUPPORTED)).

Fewer than ``MIN_LABELS`` scored labels, or only one class among them: ``status: unavailable``
with the reason, and the scorer judges nothing.

Canaries (``canary_acceptance``): ``support@CONFIG`` builds, for some answers, a canary copied
from a passage of another document that the prompt did not show (``unrelated_copy``: must be
rejected) and one copied from a passage it did show (``shown_copy``: must be accepted). Each
calibrated scorer judges them at its all-grades threshold; ``canaries.canary_rates`` gives the
share accepted per kind with its Wilson interval, and ``flags`` names every (scorer, kind) that
went against its expectation at least once.

Verdicts (``support_verdicts``): per answer, the hand label where there is one, else the primary
scorer's score against its all-grades threshold, else None (unknown). The primary scorer is the
calibrated one with the highest median cross-fitted kappa (``primary_scorer``).

Per config: the supported share among the answers with a hand label and among every answer with
a known verdict, each with its Wilson interval (``config_support``), and the retrieved-by-correct
table with "correct" split into supported and unsupported (``config_split``,
``split_two_by_two``), for each source of correctness verdicts the failure tables use: answers the
lesson's table counts as correct but that the passages do not support were answered from the
model's memory (or made up and lucky).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag_ablation.evaluation.judges.canaries import canary_rates
from rag_ablation.evaluation.judges.failures import checked_rows, row_flag, row_verdict
from rag_ablation.evaluation.judges.refit import judge_fitter, repeated_crossfit
from rag_ablation.evaluation.judges.thresholds import auc_interval, best_threshold
from rag_ablation.evaluation.statistics.inference import interval_dict, wilson_interval

Key = tuple[str, str]
POSITIVE = "supported"
LEXICAL = "lexical_support"
LLM = "llm_support"
SCORERS = (LEXICAL, LLM)
MIN_LABELS = 10
"""The fewest scored support labels (of both kinds) a scorer is calibrated on."""
CANARY_EXPECT = {"unrelated_copy": False, "shown_copy": True}
"""The support canaries' kinds and whether a sound scorer accepts them (module docstring)."""
SPLIT_CELLS = ("correct_supported", "correct_unsupported", "correct_support_unknown", "wrong")


def labels_of(levels: Mapping[Key, str]) -> dict[Key, bool]:
    """Each graded answer's label: True for ``supported``, False for ``partly`` and ``not``."""
    return {k: v == POSITIVE for k, v in levels.items()}


def level_counts(levels: Mapping[Key, str]) -> dict[str, int]:
    """How many answers carry each support level (``supported``, ``partly``, ``not``)."""
    return {lv: sum(v == lv for v in levels.values()) for lv in ("supported", "partly", "not")}


def calibrate_scorer(scores: Mapping[Key, float | None], labels: Mapping[Key, bool], *, folds: int, seed: int,
                     resamples: int, confidence: float, crossfit_seeds: int,
                     refit_resamples: int) -> dict[str, Any]:
    """One scorer against the support labels (module docstring): ``status``, ``n``, ``supported``
    (positives among them), ``unscored``, and with ``status: ok`` ``auc``, ``kappa``, ``threshold``."""
    keys = sorted(k for k in labels if scores.get(k) is not None)
    unscored = sum(1 for k in labels if scores.get(k) is None)
    y = np.asarray([labels[k] for k in keys], dtype=bool)
    out: dict[str, Any] = {"n": len(keys), "supported": int(y.sum()), "unscored": unscored}
    if len(keys) < MIN_LABELS or y.all() or not y.any():
        why = (f"{len(keys)} scored support grade(s), fewer than {MIN_LABELS}" if len(keys) < MIN_LABELS
               else "every scored support grade has the same level")
        return {"status": "unavailable", "reason": why, **out}
    s = np.asarray([float(scores[k]) for k in keys])  # type: ignore[arg-type]  # None filtered above
    repeated = repeated_crossfit(judge_fitter(s, y, k=folds), y, seeds=crossfit_seeds, first_seed=seed,
                                 resamples=refit_resamples, confidence=confidence)
    kappa = repeated["kappa"]
    assert kappa is not None
    return {"status": "ok", **out,
            "auc": auc_interval(s, y, n_resamples=resamples, seed=seed, confidence=confidence).as_dict(),
            "kappa": kappa.as_dict(), "threshold": best_threshold(s, y)}


def primary_scorer(calibration: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The calibrated scorer with the highest median cross-fitted kappa (ties: ``SCORERS``
    order); None when none is calibrated."""
    ok = [n for n in SCORERS if (calibration.get(n) or {}).get("status") == "ok"]
    return max(ok, key=lambda n: (calibration[n]["kappa"]["estimate"], -SCORERS.index(n)), default=None)


def canary_acceptance(canaries: Sequence[Mapping[str, Any]], calibration: Mapping[str, Mapping[str, Any]], *,
                      confidence: float) -> dict[str, Any]:
    """Per calibrated scorer and canary kind, ``CanaryRate.as_dict()`` at the scorer's all-grades
    threshold (a canary without that score counts as invalid); ``flags``: every (scorer, kind)
    judged against its expectation at least once. ``{"status": "unavailable", "reason"}`` without
    canaries or a calibrated scorer."""
    ok = [n for n in SCORERS if (calibration.get(n) or {}).get("status") == "ok"]
    if not canaries or not ok:
        why = "no support canaries" if not canaries else "no scorer is calibrated on support grades"
        return {"status": "unavailable", "reason": why}
    out: dict[str, Any] = {"status": "ok", "scorers": {}, "flags": []}
    for name in ok:
        t = calibration[name]["threshold"]
        by_kind: dict[str, list[bool | None]] = {}
        for c in canaries:
            v = c.get("p_supported" if name == LLM else LEXICAL)
            by_kind.setdefault(c["kind"], []).append(None if v is None else bool(v >= t))
        rates = canary_rates(by_kind, confidence=confidence, expect_accept=CANARY_EXPECT)
        out["scorers"][name] = {k: r.as_dict() for k, r in rates.items()}
        for k, r in rates.items():
            against = r.n - r.accepted_count if r.expected_accept else r.accepted_count
            if against > 0:
                out["flags"].append({"scorer": name, "kind": k, "against": against, "n": r.n,
                                     "expected_accept": r.expected_accept})
    return out


def support_verdicts(keys: Sequence[Key], labels: Mapping[Key, bool], scores: Mapping[Key, float | None],
                     threshold: float | None) -> dict[Key, bool | None]:
    """Each answer's support verdict: its hand label, else ``score >= threshold`` (the primary
    scorer's all-grades threshold), else None."""
    out: dict[Key, bool | None] = {}
    for k in keys:
        score = scores.get(k)
        out[k] = labels[k] if k in labels else (None if threshold is None or score is None else score >= threshold)
    return out


def share(values: Sequence[bool], *, confidence: float) -> dict[str, Any] | None:
    """The share of True among ``values`` with its Wilson interval; None when empty."""
    if not values:
        return None
    ci = wilson_interval(sum(values), len(values), confidence=confidence)
    return {**interval_dict(ci, ("estimate", "low", "high")), "supported": int(sum(values)), "n": len(values)}


def split_two_by_two(rows: Sequence[Mapping[str, Any]], supported: Mapping[str, bool | None]) -> dict[str, Any]:
    """The retrieved-by-correct table of one config's answer rows (``failures`` row keys, with
    ``correct`` the correctness verdict) with the correct column split by ``supported`` (question
    id -> support verdict): rows ``retrieved`` / ``missed`` (a relevant passage in the prompt or
    not), cells ``SPLIT_CELLS``; answerable rows with an unknown correctness verdict are counted
    in ``unknown`` and left out, unanswerable rows in ``unanswerable_skipped``."""
    cells = {side: dict.fromkeys(SPLIT_CELLS, 0) for side in ("retrieved", "missed")}
    unknown = skipped = 0
    for i, row in enumerate(checked_rows(rows)):
        if not row_flag(row, "answerable", i):
            skipped += 1
            continue
        verdict = row_verdict(row, i)
        if verdict is None:
            unknown += 1
            continue
        side = "retrieved" if row_flag(row, "relevant_in_prompt", i) else "missed"
        s = supported.get(row["id"])
        cell = ("wrong" if not verdict else "correct_support_unknown" if s is None
                else "correct_supported" if s else "correct_unsupported")
        cells[side][cell] += 1
    return {**cells, "unknown": unknown, "unanswerable_skipped": skipped}


def split_markdown(split: Mapping[str, Any], *, source: str) -> str:
    """``split_two_by_two`` as a small Markdown table and a line naming where the verdicts came
    from (``source``: e.g. "hand grades; support from hand grades, else lexical_support")."""
    rows = [f"| {label} | " + " | ".join(str(split[side][c]) for c in SPLIT_CELLS) + " |"
            for side, label in (("retrieved", "yes"), ("missed", "no"))]
    return "\n".join([
        "| relevant passage in prompt | correct, supported | correct, unsupported | correct, support unknown | wrong |",
        "| --- | --- | --- | --- | --- |", *rows, "",
        f"Correctness from {source}; {split['unknown']} answer(s) with an unknown correctness verdict left out."])


def config_support(config: str, ids: Sequence[str], levels: Mapping[Key, str], verdicts: Mapping[Key, bool | None],
                   *, confidence: float) -> dict[str, Any]:
    """One config's supported shares (module docstring): ``hand``, among its answers with a hand
    support label, and ``judged``, among its answers with a known support verdict."""
    hand = [levels[(config, i)] == POSITIVE for i in ids if (config, i) in levels]
    judged = [v for v in (verdicts.get((config, i)) for i in ids) if v is not None]
    return {"hand": share(hand, confidence=confidence), "judged": share(judged, confidence=confidence)}


def config_split(config: str, rows: Sequence[Mapping[str, Any]], verdicts: Mapping[Key, bool | None], *,
                 correct_source: str, support_source: str) -> dict[str, Any]:
    """``split_two_by_two`` of one config's answer rows (each with its ``correct`` verdict) and
    its Markdown, naming both sources."""
    split = split_two_by_two(rows, {str(r["id"]): verdicts.get((config, str(r["id"]))) for r in rows})
    return {**split, "markdown": split_markdown(split, source=f"{correct_source}; support from {support_source}")}


def evaluate_support(*, levels: Mapping[Key, str], scores: Mapping[str, Mapping[Key, float | None]],
                     canaries: Sequence[Mapping[str, Any]], keys: Sequence[Key], folds: int, seed: int,
                     resamples: int, confidence: float, crossfit_seeds: int, refit_resamples: int,
                     not_asked: str | None = None) -> tuple[dict[str, Any], dict[Key, bool | None]]:
    """The ``support`` block of ``judge_detail.json`` (levels, calibration per scorer, the primary
    scorer and its source, canaries) and the support verdict of every answer of ``keys`` (module
    docstring). ``levels``: the current answers' support grades; ``scores``: scorer -> answer ->
    score. ``not_asked``: why the answer model gave no P(SUPPORTED) (``support.ask_llm`` false, no
    LLM): the llm scorer's reason, instead of a count of unscored grades."""
    labels = labels_of(levels)
    calibration = {n: calibrate_scorer(scores.get(n, {}), labels, folds=folds, seed=seed, resamples=resamples,
                                       confidence=confidence, crossfit_seeds=crossfit_seeds,
                                       refit_resamples=refit_resamples) for n in SCORERS}
    if not_asked is not None:
        calibration[LLM] = {**calibration[LLM], "status": "unavailable", "reason": not_asked}
    primary = primary_scorer(calibration)
    threshold = calibration[primary]["threshold"] if primary else None
    verdicts = support_verdicts(keys, labels, scores.get(primary, {}) if primary else {}, threshold)
    block = {"status": "ok" if levels else "no grades", "positive": POSITIVE, "levels": level_counts(levels),
             "calibration": calibration, "primary": primary,
             "source": f"hand grades, else {primary}" if primary else "hand grades",
             "canaries": canary_acceptance(canaries, calibration, confidence=confidence)}
    return block, verdicts
