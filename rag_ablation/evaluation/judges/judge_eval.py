"""Everything about graded answers in one place: judge calibration, accuracy three ways,
canaries, bias tests, failure tables, the two-by-two and unanswerable questions.

Inputs are files other stages wrote (this module never calls an LLM): the per-question answer
rows (``metrics/scores/answers.csv``), the per-question retrieval rows (for the top score), the
judges' verdicts per config (``judge@CONFIG``), the canaries and pairwise verdicts
(``judge_checks``) and the hand grades (``data/labels/grades.jsonl``).

A hand grade counts only for the exact answer text it was given for (``grades.match_hashes``);
of several graders' grades of one text, the adjudicated one, else the first grader's.

* Graders (``graders``, ``rag_ablation.evaluation.judges.grader_agreement``): where a second
  grader graded blind, the two graders' Cohen's kappa (interval by the judges' bootstrap), the
  2x2 table and the number of answers both graded, overall and per config, and the disagreements
  for adjudication; without a second grader, ``status: none`` and how to add one.

* Calibration (per judge, answers of every config pooled, and per config): confusion matrix,
  accuracy, TPR, TNR, Cohen's kappa with bootstrap intervals, the ids of every disagreement.
* Accuracy per config and judge: hand grades only (Wilson), the judge only (naive, Wilson) and
  PPI++ (the judge on every answer, debiased by the graded ones), with the effective sample
  size of the hand grades, and whether the judge can help at all (``usefulness``,
  ``accuracy.ppi_usefulness``: its correlation with the grades against 1/sqrt(n - 2), n the
  grades PPI++ uses; Mani et al.). With every answer graded there is nothing to add, and PPI is
  recorded as not applicable with that reason. Either way PPI++ is also checked against grades
  it did not see (``ppi_check``: half the grades labelled, the other half held back;
  ``rag_ablation.evaluation.judges.ppi_check``).
* Answer configs compared (``comparison``): every answered config against the baseline
  (``stats.baseline`` when it is answered, else the first answered config) on the questions hand-graded
  in both, by the hand grades: each side's accuracy, the paired difference (new - baseline) with
  its bootstrap interval over questions (``stats.method``, ``resamples``, ``seed``,
  ``confidence``; with ``stats.cluster``, over whole source documents, as the retrieval
  comparisons, when the compared questions come from at least two), the fixed and broken
  questions and the exact McNemar p-value on them (``sign_test_p``). Fewer than 2 questions
  graded in both: ``unavailable`` with the reason.
* The same configs compared on every answer (``measure_comparison``,
  ``rag_ablation.evaluation.statistics.answer_verdicts``): token F1, lexical support (when some
  answer has one; on the questions where both answers have one) and the primary judge's score
  (the scored judge with the best cross-fitted kappa, else the best by fixed-threshold kappa),
  paired over every answerable question both answered, with the stats stage's interval, margin
  counts, sign-flip test and Holm adjustment.
* Failure tables and the two-by-two per config, from hand grades on the graded answers
  (``source: hand grades``) and from the primary judge (``primary_judge``: the one that agrees
  best with the hand grades, by Cohen's kappa) on every answer.
* Unanswerable questions per config: decline rate (Wilson), the +1/0/-1 score (hand grades where
  present), and a sweep of the top retrieval score under which to decline, over every question.
* Scores (``scored``): every judge's score against the hand grades (AUC with its interval, the
  ROC curve), its verdicts at a threshold chosen by cross-fitting (kappa, TPR, TNR), its
  cross-fitted kappa as the median over ``crossfit_seeds`` fold seeds with an interval that
  re-fits (``refit_resamples`` draws, ``rag_ablation.evaluation.judges.refit``), the combined
  judge, and the primary judge: the one with the best median cross-fitted kappa. Its verdicts
  (cross-fitted on graded answers, from the all-grades threshold elsewhere) make the judge's
  failure tables; without any scored judge the primary is the best by fixed-threshold kappa.
  PPI++ per config also runs on each judge's score, and cross-PPI on the combined judge's.
* Support (``support``, ``rag_ablation.evaluation.judges.support_eval``): the hand support grades
  (``supported`` positive; ``partly`` and ``not`` negative), lexical support and the answer
  model's P(SUPPORTED) (``support@CONFIG``, only for the answer text it scored) each calibrated
  on them (AUC, cross-fitted kappa over fold seeds with its refit interval, the all-grades
  threshold), the support canaries at that threshold, and per config the supported share (hand
  grades; hand grades else the primary scorer) and the retrieved-by-correct table with "correct"
  split into supported and unsupported, for each source of the failure tables.
* Canaries: per judge and kind, the share accepted, for every judge of ``judge.judges`` and the
  combined judge (``combined_canaries``: its all-grades model on each canary, as on any answer
  without a grade); ``canary_flags`` names every one of them that accepts a canary that must be
  rejected. Bias: for the length pairs, the
  position-consistency rate, the first-slot win rate (Wilson) and wins of the long and short
  answers (a win counts only when both orders agree); self-preference when two answer models
  were configured, else "not measured".

``evaluate`` returns ``metrics`` (numbers only, for ``dvc metrics``), ``detail`` (ids, tables,
reasons, for the report) and the rows of the per-question verdict file and the plot.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag_ablation.core.config import JudgeConfig, StatsConfig
from rag_ablation.evaluation.judges.accuracy import (crossppi_accuracy, hand_only, judge_only, ppi_accuracy,
                                                     ppi_accuracy_scores, ppi_usefulness)
from rag_ablation.evaluation.judges.agreement import agreement, disagreements
from rag_ablation.evaluation.judges.canaries import canary_rates
from rag_ablation.evaluation.judges.failures import HAND_GRADES, JUDGE_PREFIX, failure_table, two_by_two
from rag_ablation.evaluation.judges.grader_agreement import grader_detail
from rag_ablation.evaluation.judges.grades import Grade, match_hashes, support_of
from rag_ablation.evaluation.judges.answer_features import ANSWER_FEATURES
from rag_ablation.evaluation.judges.ppi_check import split_half_check, split_half_scores
from rag_ablation.evaluation.judges.scored import COMBINED, ScoredJudges, roc_rows, score_judges
from rag_ablation.evaluation.judges.support_eval import LEXICAL, LLM, config_split, config_support, evaluate_support
from rag_ablation.evaluation.statistics.inference import (interval_dict, paired_bootstrap_ci, paired_counts,
                                                          sign_test_p, wilson_interval)
from rag_ablation.evaluation.judges.unanswerable import crag_score, decline_rate, threshold_sweep
from rag_ablation.evaluation.scoring.judge_scores import with_judge_score
from rag_ablation.evaluation.statistics.answer_verdicts import baseline_of, measure_comparison, verdict_measures
from rag_ablation.evaluation.statistics.comparison import JUDGE_SCORES, LEXICAL_SUPPORT, cluster_labels

VERDICTS = {"correct": True, "incorrect": False, "invalid": None}


def _numbers(obj: Any) -> Any:
    """Only the numeric leaves (bools as 0/1) of a nested dict; lists and strings dropped."""
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            v = _numbers(v)
            if v is not None and v != {}:
                out[k] = v
        return out
    if isinstance(obj, bool):
        return int(obj)
    if isinstance(obj, (int, float)):
        return obj
    return None


def verdicts_of(judgment: Mapping[str, Any], judge: str) -> dict[str, bool | None]:
    """Question id -> the judge's verdict in one ``judge@CONFIG`` file."""
    return {r["id"]: VERDICTS[r[judge]["verdict"]] for r in judgment["verdicts"] if judge in r}


def scores_of(judgment: Mapping[str, Any], judge: str) -> dict[str, float | None]:
    """Question id -> the judge's score in one ``judge@CONFIG`` file (None where it gave none,
    and in files written before judges kept scores)."""
    return {r["id"]: r[judge].get("score") for r in judgment["verdicts"] if judge in r}


def no_ppi_reason(graded: int, unlabeled: int) -> str | None:
    """Why PPI++ does not run on a config with ``graded`` hand-graded answers and ``unlabeled``
    answers without a grade (it needs at least 2 of each); None when it runs."""
    if unlabeled == 0:
        return "every answer is hand-graded: the judge has nothing to add"
    if unlabeled < 2:
        return f"{unlabeled} answer without a hand grade: PPI++ needs at least 2"
    if graded < 2:
        return "fewer than 2 hand grades"
    return None


def score_accuracy(config: str, ids: Sequence[str], hand: Mapping[str, bool], scored: ScoredJudges, name: str,
                   scores: Mapping[tuple[str, str], float | None], settings: StatsConfig,
                   folds: int) -> dict[str, Any] | None:
    """PPI++ of one config with the judge ``name``'s score as the prediction (cross-PPI for the
    combined judge, whose model is fit on grades), and its split-half check; None when some of
    the config's answers have no score."""
    unlabeled = [i for i in ids if i not in hand]
    graded = sorted(hand)
    with_ppi = no_ppi_reason(len(graded), len(unlabeled)) is None
    out: dict[str, Any] = {"ppi": None}
    if name == COMBINED:
        feats = {i: scored.features[(config, i)] for i in ids if (config, i) in scored.features}
        if len(feats) < len(ids):
            return None
        if with_ppi:
            chosen = scored.chosen[COMBINED]
            out["ppi"] = crossppi_accuracy([hand[i] for i in graded], [chosen[(config, i)][0] for i in graded],
                                           np.asarray([scored.fold_scores[(config, i)] for i in unlabeled]),
                                           confidence=settings.confidence).as_dict()
        check, reason = split_half_scores(hand, features=feats, folds=folds, seed=settings.seed,
                                          splits=settings.ppi_splits, confidence=settings.confidence,
                                          veto=scored.veto)
    else:
        raw = {i: scores.get((config, i)) for i in ids}
        values = {i: float(v) for i, v in raw.items() if v is not None}
        if len(values) < len(raw):
            return None
        if with_ppi:
            out["ppi"] = ppi_accuracy_scores([hand[i] for i in graded], [values[i] for i in graded],
                                             [values[i] for i in unlabeled], confidence=settings.confidence).as_dict()
        check, reason = split_half_scores(hand, values, seed=settings.seed, splits=settings.ppi_splits,
                                          confidence=settings.confidence)
    if out["ppi"] is None:
        out["ppi_reason"] = no_ppi_reason(len(graded), len(unlabeled))
    out["ppi_check"] = check
    if reason:
        out["ppi_check_reason"] = reason
    prediction = ([scored.chosen[COMBINED][(config, i)][0] for i in graded] if name == COMBINED
                  else [values[i] for i in graded])
    _add_usefulness(out, [hand[i] for i in graded], prediction)
    return out


def _add_usefulness(out: dict[str, Any], human: Sequence[bool], prediction: Sequence[float]) -> None:
    """``out["usefulness"]``: ``accuracy.ppi_usefulness`` of the prediction against every graded
    answer's grade, with ``n`` the hand grades the PPI++ row uses (all of them when PPI++ ran, the
    labelled half of the split-half check otherwise); nothing without either."""
    n = (out["ppi"] or {}).get("n_labeled") or ((out.get("ppi_check") or {}).get("ppi") or {}).get("n_labeled")
    if n and human:
        out["usefulness"] = ppi_usefulness(human, prediction, int(n)).as_dict()


def canary_flags(canaries: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every (judge, canary kind) where the judge accepted at least one canary that a sound judge
    rejects (``expected_accept`` False: "Yes.", the empty answer, ...): ``{"judge", "kind",
    "accepted", "accepted_count", "n"}``, in judge then kind order. ``canaries``: judge -> kind ->
    ``CanaryRate.as_dict()`` (a judge that did not run has a ``status`` instead and is skipped)."""
    flags = []
    for judge, kinds in canaries.items():
        if not isinstance(kinds, Mapping) or "status" in kinds:
            continue
        for kind, rate in kinds.items():
            if not rate["expected_accept"] and rate["accepted_count"] > 0:
                flags.append({"judge": judge, "kind": kind, "accepted": rate["accepted"],
                              "accepted_count": rate["accepted_count"], "n": rate["n"]})
    return flags


def combined_canaries(scored: ScoredJudges, checks: Mapping[str, Any], confidence: float) -> dict[str, Any]:
    """The combined judge's canary rates (kind -> ``CanaryRate.as_dict()``), each canary judged as
    an answer without a grade (``ScoredJudges.judge_items``: the all-grades model and threshold,
    the veto included); a canary missing an input (a judge gave it no score) counts as invalid.
    ``{"status": "unavailable", "reason"}`` when there is no combined judge or no canary."""
    if scored.model is None:
        reason = (scored.detail.get(COMBINED) or {}).get("reason") or "no combined judge"
        return {"status": "unavailable", "reason": reason}
    items = checks["canaries"]["items"]
    if not items:
        return {"status": "unavailable", "reason": "no graded question"}
    by_kind: dict[str, list[bool | None]] = {k: [] for k in checks["canaries"]["kinds"]}
    for it, judged in zip(items, scored.judge_items(items)):
        by_kind[it["kind"]].append(None if judged is None else judged[1])
    by_kind = {k: v for k, v in by_kind.items() if v}
    return {k: r.as_dict() for k, r in canary_rates(by_kind, confidence=confidence).items()}


def _available_judges(judgment: Mapping[str, Any]) -> list[str]:
    return [n for n, j in judgment.get("judges", {}).items() if j.get("status") == "ok"]


def calibrate(judge: str, keys: Sequence[tuple[str, str]], verdicts: Mapping[tuple[str, str], bool | None],
              hand: Mapping[tuple[str, str], bool], settings: StatsConfig) -> dict[str, Any]:
    """Agreement of one judge with the hand grades on ``keys`` (answers having both)."""
    j = [verdicts[k] for k in keys]
    h = [hand[k] for k in keys]
    a = agreement(j, h, n_resamples=settings.resamples, seed=settings.seed, confidence=settings.confidence)
    d = disagreements([f"{c}/{i}" for c, i in keys], j, h)
    return {**a.as_dict(), "disagreements": d.as_dict()}


def config_accuracy(judge_all: Mapping[str, bool | None], hand: Mapping[str, bool],
                    settings: StatsConfig) -> dict[str, Any]:
    """Judge-only (naive) and PPI++ accuracy of one config for one judge (hand-only is per config)."""
    graded = sorted(hand)
    out: dict[str, Any] = {"judge": judge_only(list(judge_all.values()), confidence=settings.confidence).as_dict()}
    unlabeled = [judge_all[i] for i in sorted(judge_all) if i not in hand]
    reason = no_ppi_reason(len(graded), len(unlabeled))
    if reason is not None:
        out["ppi"] = None
        out["ppi_reason"] = reason
    else:
        out["ppi"] = ppi_accuracy([hand[i] for i in graded], [judge_all[i] for i in graded], unlabeled,
                                  confidence=settings.confidence).as_dict()
    out["ppi_check"], reason = split_half_check(hand, judge_all, seed=settings.seed, splits=settings.ppi_splits,
                                                confidence=settings.confidence)
    if reason:
        out["ppi_check_reason"] = reason
    _add_usefulness(out, [hand[i] for i in graded], [1.0 if judge_all.get(i) is True else 0.0 for i in graded])
    return out


def answer_comparison(hand: Mapping[tuple[str, str], bool], configs: Sequence[str],
                      settings: StatsConfig, docs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Hand-graded accuracy of each of ``configs`` against the baseline's, paired by question
    (module docstring). ``hand``: ``(config, id)`` -> the hand verdict is correct; ``docs``:
    question id -> its source document, the cluster label when ``settings.cluster`` is set
    (``comparison.cluster_labels``, as the retrieval comparisons: the interval's ``method`` then
    reads ``cluster-...``; compared questions all from one document resample questions, and a
    question missing from ``docs`` is a cluster of its own). Empty with fewer than two configs."""
    if len(configs) < 2:
        return {}
    base = baseline_of(configs, settings)
    out: dict[str, Any] = {"baseline": base, "configs": {}}
    for c in configs:
        if c == base:
            continue
        ids = sorted(i for (cc, i) in hand if cc == c and (base, i) in hand)
        if len(ids) < 2:
            out["configs"][c] = {"status": "unavailable",
                                 "reason": f"{len(ids)} question(s) hand-graded for both {base} and {c}"}
            continue
        b = [float(hand[(base, i)]) for i in ids]
        n = [float(hand[(c, i)]) for i in ids]
        clusters = cluster_labels([{"doc": docs.get(i, i)} for i in ids], settings) if docs else None
        diff = paired_bootstrap_ci(b, n, method=settings.method, n_resamples=settings.resamples,
                                   seed=settings.seed, confidence=settings.confidence, clusters=clusters)
        counts = paired_counts(b, n)
        out["configs"][c] = {
            "status": "ok", "n": len(ids), "baseline_accuracy": sum(b) / len(b), "accuracy": sum(n) / len(n),
            "difference": interval_dict(diff, ("estimate", "low", "high", "method")),
            "fixed": counts.fixed, "broken": counts.broken, "both_right": counts.both_right,
            "both_wrong": counts.both_wrong, "p_mcnemar": sign_test_p(counts.fixed, counts.broken),
            "fixed_ids": [i for i, x, y in zip(ids, b, n) if y > x],
            "broken_ids": [i for i, x, y in zip(ids, b, n) if x > y]}
    return out


def measure_rows(answer_rows: Sequence[Mapping[str, Any]], verdict_rows: Sequence[Mapping[str, Any]],
                 measures: Sequence[str]) -> list[dict[str, Any]]:
    """The answer rows with each judge score of ``measures`` (``comparison.JUDGE_SCORES``) joined
    from the verdict rows, parsed from their text as every reader of ``verdicts.csv`` does
    (``scoring.judge_scores.with_judge_score``)."""
    rows = [dict(r) for r in answer_rows]
    for column in measures:
        if column in JUDGE_SCORES:
            rows = with_judge_score(rows, verdict_rows, column, where="judge_eval's verdict rows")
    return rows


def primary_judge(candidates: Sequence[str], calibration: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The judge the failure tables use besides the hand grades: the candidate with the highest
    Cohen's kappa against the hand grades (the one a reader can trust most); candidates without
    a kappa come after, and ties keep the order of ``judge.judges``. None without candidates."""
    def kappa(j: str) -> float:
        k = (calibration.get(j) or {}).get("kappa") or {}
        return k["estimate"] if k.get("estimate") is not None else float("-inf")
    return max(candidates, key=lambda j: (kappa(j), -candidates.index(j)), default=None)


def _rows_with(rows: Sequence[Mapping[str, Any]], correct: Mapping[str, bool | None]) -> list[dict[str, Any]]:
    return [{**r, "correct": correct.get(r["id"])} for r in rows]


def length_bias(pairs: Sequence[Mapping[str, Any]], confidence: float) -> dict[str, Any]:
    """Position and length figures from pairs judged in both orders (``judge_checks`` rows).

    ``consistency``: share of pairs whose two verdicts pick the same answer. ``first_slot``:
    share of valid verdicts (both orders of every pair) that picked slot A, with a Wilson
    interval; 0.5 is no position preference. ``long_wins``/``short_wins``/``ties``: wins count
    only when both orders agree."""
    picks_a = valid = 0
    for p in pairs:
        # x is in slot A in the first order, y in slot A in the second
        if p["x_first_pick"] is not None:
            valid += 1
            picks_a += p["x_first_pick"] == "short"
        if p["y_first_pick"] is not None:
            valid += 1
            picks_a += p["y_first_pick"] == "long"
    n = len(pairs)
    consistent = sum(p["winner"] != "tie" for p in pairs)
    ci = wilson_interval(picks_a, valid, confidence=confidence) if valid else None
    return {"pairs": n, "verdicts": 2 * n, "valid_verdicts": valid, "consistent": consistent,
            "consistency": consistent / n if n else None,
            "first_slot": {"wins": picks_a, "n": valid, "rate": picks_a / valid if valid else None,
                           **interval_dict(ci, ("low", "high"))},
            "long_wins": sum(p["winner"] == "long" for p in pairs),
            "short_wins": sum(p["winner"] == "short" for p in pairs),
            "ties": n - consistent}


def self_preference(sp: Mapping[str, Any] | None) -> dict[str, Any]:
    """Per judging model, how often it picked its own model's answer (wins in both orders)."""
    if not sp or sp.get("status") != "ok":
        return {"status": (sp or {}).get("status", "not measured"),
                "reason": (sp or {}).get("reason", "needs two answer models")}
    out: dict[str, Any] = {"status": "ok", "models": sp["models"], "judges": {}}
    for judge, pairs in sp["pairs"].items():
        n = len(pairs)
        own = sum(p["winner"] == judge for p in pairs)
        other = sum(p["winner"] not in (judge, "tie") for p in pairs)
        out["judges"][judge] = {"pairs": n, "own_wins": own, "other_wins": other, "ties": n - own - other,
                                "own_rate": own / n if n else None}
    return out


def evaluate(*, answer_rows: Sequence[Mapping[str, Any]], retrieval_rows: Sequence[Mapping[str, Any]],
             judgments: Mapping[str, Mapping[str, Any]], checks: Mapping[str, Any] | None,
             grades: Sequence[Grade], judges: Sequence[str], settings: StatsConfig, threshold_folds: int = 5,
             crossfit_seeds: int = JudgeConfig.crossfit_seeds, refit_resamples: int = JudgeConfig.refit_resamples,
             support: Mapping[str, Mapping[str, Any]] | None = None
             ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """``(metrics, detail, verdict_rows, plot_rows, roc_rows)`` (module docstring). ``support``:
    the ``support@CONFIG`` outputs by config (None or a missing config: no P(SUPPORTED))."""
    detail: dict[str, Any] = {"configs": {}, "calibration": {}, "canaries": {}, "bias": {}, "grades": {}}
    hashes: dict[tuple[str, str], str] = {}
    judge_verdicts: dict[str, dict[tuple[str, str], bool | None]] = {j: {} for j in judges}
    judge_scores: dict[str, dict[tuple[str, str], float | None]] = {j: {} for j in judges}
    answer_features: dict[tuple[str, str], dict[str, float]] = {}
    available: dict[str, set[str]] = {}
    for config, jd in judgments.items():
        if jd.get("status") != "ok":
            detail["configs"][config] = {"status": jd.get("status"), "reason": jd.get("reason")}
            continue
        available[config] = set(_available_judges(jd))
        for r in jd["verdicts"]:
            hashes[(config, r["id"])] = r["answer_sha256"]
            if r.get("features"):
                answer_features[(config, r["id"])] = r["features"]
        for j in judges:
            if j in available[config]:
                for i, v in verdicts_of(jd, j).items():
                    judge_verdicts[j][(config, i)] = v
                for i, sc in scores_of(jd, j).items():
                    judge_scores[j][(config, i)] = sc
    matched = match_hashes(grades, hashes)
    hand = matched.verdicts
    detail["grades"] = {"matching": len(hand), "stale": matched.stale, "unknown": matched.unknown,
                        "answers": len(hashes)}
    detail["graders"] = grader_detail(grades, hashes, list(judgments), resamples=settings.resamples,
                                      seed=settings.seed, confidence=settings.confidence)

    for j in judges:
        keys = sorted(k for k in hand if k in judge_verdicts[j])
        detail["calibration"][j] = (calibrate(j, keys, judge_verdicts[j], hand, settings) if keys
                                    else {"status": "unavailable", "reason": "no hand-graded answer has this judge's verdict"})

    scored = score_judges(judges=judges, scores=judge_scores, hand=hand, answers=sorted(hashes),
                          folds=threshold_folds, seed=settings.seed, resamples=settings.resamples,
                          confidence=settings.confidence, features=answer_features, crossfit_seeds=crossfit_seeds,
                          refit_resamples=refit_resamples)
    detail["scores"] = scored.detail

    by_config: dict[str, list[Mapping[str, Any]]] = {}
    for r in answer_rows:
        by_config.setdefault(r["config"], []).append(r)
    support_levels = support_of(grades, hashes)
    detail["support"], support_verdict = evaluate_support(
        levels=support_levels, scores=support_scores(answer_rows, support or {}, hashes),
        canaries=support_canaries(support or {}), not_asked=support_not_asked(support or {}),
        keys=sorted(k for k in hashes if k[0] in available),
        folds=threshold_folds, seed=settings.seed, resamples=settings.resamples, confidence=settings.confidence,
        crossfit_seeds=crossfit_seeds, refit_resamples=refit_resamples)
    top_score = {(r["config"], r["id"]): r["top_score"] for r in retrieval_rows}
    answerable_of = {(r["config"], r["id"]): bool(r["answerable"]) for r in retrieval_rows}
    verdict_rows: list[dict[str, Any]] = []
    plot_rows: list[dict[str, Any]] = []
    for config in judgments:
        if config not in available:
            continue
        rows = by_config.get(config, [])
        ids = [r["id"] for r in rows]
        hand_c = {i: hand[(config, i)] for i in ids if (config, i) in hand}
        primary = primary_judge([j for j in judges if j in available[config]], detail["calibration"])
        rule = "fixed"
        if scored.primary is not None and all((config, i) in scored.chosen[scored.primary] for i in ids):
            primary, rule = scored.primary, "cross-fitted threshold"
        entry: dict[str, Any] = {"status": "ok", "answers": len(rows), "graded": len(hand_c), "primary_judge": primary,
                                 "primary_rule": rule,
                                 "accuracy": {"hand": hand_only([hand_c[i] for i in sorted(hand_c)],
                                                                confidence=settings.confidence).as_dict()
                                              if hand_c else None}}
        for j in judges:
            if j in available[config]:
                all_j = {i: judge_verdicts[j].get((config, i)) for i in ids}
                entry["accuracy"][j] = config_accuracy(all_j, hand_c, settings)
                keys = sorted((config, i) for i in hand_c)
                entry.setdefault("calibration", {})[j] = (calibrate(j, keys, judge_verdicts[j], hand, settings)
                                                          if keys else None)
        for name in [*judges, COMBINED]:
            if name == COMBINED or name in available[config]:
                by_score = score_accuracy(config, ids, hand_c, scored, name, judge_scores.get(name, {}), settings,
                                          threshold_folds)
                if by_score is not None:
                    entry.setdefault("score_accuracy", {})[name] = by_score
        graded_rows = [r for r in rows if r["id"] in hand_c]
        sources = {"hand": (HAND_GRADES, _rows_with(graded_rows, hand_c))}
        if primary is not None and rule == "fixed":
            sources["judge"] = (f"{JUDGE_PREFIX}{primary}",
                                _rows_with(rows, {i: judge_verdicts[primary].get((config, i)) for i in ids}))
        elif primary is not None:
            sources["judge"] = (f"{JUDGE_PREFIX}{primary} (threshold chosen on the hand grades)",
                                _rows_with(rows, {i: scored.chosen[primary][(config, i)][1] for i in ids}))
        entry["support"] = config_support(config, ids, support_levels, support_verdict,
                                          confidence=settings.confidence)
        for key, (source, srows) in sources.items():
            if not srows:
                continue
            entry["support"].setdefault("split", {})[key] = config_split(
                config, srows, support_verdict, correct_source=source, support_source=detail["support"]["source"])
            entry.setdefault("failures", {})[key] = failure_table(srows).as_dict()
            tbt = two_by_two(srows, source=source)
            entry.setdefault("two_by_two", {})[key] = {**tbt.as_dict(), "markdown": tbt.markdown()}
            entry.setdefault("crag", {})[key] = crag_score(srows).as_dict()
        dr = decline_rate(rows, confidence=settings.confidence)
        entry["decline"] = dr.as_dict() if dr is not None else None
        q_ids = sorted(i for (c, i) in top_score if c == config and top_score[(c, i)] is not None)
        kinds = [answerable_of[(config, i)] for i in q_ids]
        if q_ids and any(kinds) and not all(kinds):
            sweep = threshold_sweep([top_score[(config, i)] for i in q_ids], kinds)
            entry["threshold"] = {k: v for k, v in sweep.as_dict().items() if k != "points"}
            plot_rows += [{"config": config, **p} for p in sweep.curve()]
        else:
            entry["threshold"] = None
        detail["configs"][config] = entry
        for r in rows:
            vr = {"config": config, "id": r["id"], "slice": r["slice"], "answer_sha256": hashes.get((config, r["id"])),
                  "hand": _flag(hand.get((config, r["id"])))}
            for j in judges:
                vr[j] = ({True: "1", False: "0", None: "invalid"}[judge_verdicts[j].get((config, r["id"]))]
                         if j in available[config] else "unavailable")
                vr[f"{j}_score"] = score_text(judge_scores[j].get((config, r["id"])) if j in available[config] else None)
            combined = scored.chosen.get(COMBINED, {}).get((config, r["id"]))
            vr[COMBINED] = "" if combined is None else str(int(combined[1]))
            vr[f"{COMBINED}_score"] = score_text(None if combined is None else combined[0])
            verdict_rows.append(vr)

    doc_of = {str(r["id"]): str(r["doc"]) for r in answer_rows if "doc" in r}
    answered = [c for c in judgments if c in available]
    detail["comparison"] = answer_comparison(hand, answered, settings, doc_of)
    overall = scored.primary or primary_judge([j for j in judges if any(j in available[c] for c in answered)],
                                              detail["calibration"])
    compared = verdict_measures(overall, lexical_support=any(
        r.get(LEXICAL_SUPPORT) is not None for r in answer_rows if r["config"] in answered))
    detail["measure_comparison"] = measure_comparison(
        measure_rows(answer_rows, verdict_rows, compared), answered, measures=compared, settings=settings)

    if checks:
        items = checks["canaries"]["items"]
        for j in judges:
            if checks["judges"].get(j, {}).get("status") != "ok":
                detail["canaries"][j] = {"status": "unavailable", "reason": checks["judges"].get(j, {}).get("reason")}
                continue
            by_kind: dict[str, list[bool | None]] = {k: [] for k in checks["canaries"]["kinds"]}
            for it in items:
                by_kind[it["kind"]].append(VERDICTS[it[f"verdict_{j}"]])
            by_kind = {k: v for k, v in by_kind.items() if v}
            detail["canaries"][j] = ({k: r.as_dict() for k, r in canary_rates(by_kind, confidence=settings.confidence).items()}
                                     if by_kind else {"status": "unavailable", "reason": "no graded question"})
        detail["canaries"][COMBINED] = combined_canaries(scored, checks, settings.confidence)
        length = checks.get("length") or {}
        detail["bias"]["length"] = (length_bias(length["pairs"], settings.confidence) if length.get("status") == "ok"
                                    else {"status": length.get("status"), "reason": length.get("reason")})
        detail["bias"]["self_preference"] = self_preference(checks.get("self_preference"))
        detail["canary_flags"] = canary_flags(detail["canaries"])
    return _numbers(detail), detail, verdict_rows, plot_rows, roc_rows(scored.detail)


def support_scores(answer_rows: Sequence[Mapping[str, Any]], support: Mapping[str, Mapping[str, Any]],
                   hashes: Mapping[tuple[str, str], str]) -> dict[str, dict[tuple[str, str], float | None]]:
    """Each support scorer's score per answer (``support_eval.SCORERS``): lexical support from the
    answer rows, P(SUPPORTED) from the ``support@CONFIG`` outputs whose status is ok, for the
    answer text it was given for (its ``answer_sha256`` is the current answer's)."""
    lexical = {(r["config"], r["id"]): r.get(LEXICAL) for r in answer_rows}
    llm: dict[tuple[str, str], float | None] = {}
    for config, out in support.items():
        if out.get("status") != "ok":
            continue
        for a in out["answers"]:
            if hashes.get((config, a["id"])) == a["answer_sha256"]:
                llm[(config, a["id"])] = a["p_supported"]
    return {LEXICAL: lexical, LLM: llm}


def support_canaries(support: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The support canaries of every ``support@CONFIG`` output, in config order: an output whose
    model was not asked (status unavailable) still has them, scored lexically only."""
    return [dict(c) for config in sorted(support) for c in support[config].get("canaries", [])]


def support_not_asked(support: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Why no answer has P(SUPPORTED): the reason of the first ``support@CONFIG`` output (config
    order) when none has status ok; None when one has (or there is none)."""
    if not support or any(out.get("status") == "ok" for out in support.values()):
        return None
    return str(support[sorted(support)[0]].get("reason") or "no support@CONFIG output is available")


def verdict_fields(judges: Sequence[str]) -> list[str]:
    """The columns of the per-question verdict file: the answer's keys and hand grade, each
    judge's verdict and score, and the combined judge's."""
    return ["config", "id", "slice", "answer_sha256", "hand", *(c for j in judges for c in (j, f"{j}_score")),
            COMBINED, f"{COMBINED}_score"]


def canary_file(checks: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The canary file's rows and columns from the ``judge_checks`` output: each canary's id,
    kind and text, each judge that ran its verdict and score (``score_text``), and the answer
    features the combined judge reads (``new_f1``, ``question_overlap``) when the file has them."""
    ran = [j for j in checks["judges"] if checks["judges"][j]["status"] == "ok"]
    items = checks["canaries"]["items"]
    feats = [f for f in ANSWER_FEATURES if items and all(f in it for it in items)]
    rows = [{**it, **{f"score_{j}": score_text(it.get(f"score_{j}")) for j in ran},
             **{f: score_text(it[f]) for f in feats}} for it in items]
    return rows, ["id", "kind", "text", *(c for j in ran for c in (f"verdict_{j}", f"score_{j}")), *feats]


def score_text(v: float | None) -> str:
    """A score as the verdict file writes it: 6 decimals, empty when there is none."""
    return "" if v is None else f"{v:.6f}"


def _flag(v: bool | None) -> str:
    return "" if v is None else str(int(v))
