"""The report's sections on graded answers, from ``judge_eval``'s detail file.

Only formats numbers already computed (``rag_ablation.evaluation.judges.judge_eval``):
calibration of every judge with intervals and its disagreements, accuracy per config three ways
(hand grades, each judge alone, PPI++), the answered configs compared (by hand grades, and on
every answer by token F1 and the primary judge's score), canaries, bias, failure tables, the
two-by-two, support (``support_report``) and unanswerable questions. A value that could not be computed is shown as ``n/a``
with the reason where known; with no hand grade at all, the sections that need one are left out
and one paragraph says so (:func:`no_grades`, :func:`grades_text`, whose words report.html shows
too). The file is read through :mod:`rag_ablation.evaluation.report.metrics_view` (which configs
were judged and why not, the answer comparison, canaries, the length test) and its numbers
written with :mod:`rag_ablation.evaluation.report.formatting` (``num_or_na``, ``percent``,
``with_interval``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_ablation.core.config import SCORE_DIGITS
from rag_ablation.evaluation.judges.failures import FAILURE_CATEGORIES
from rag_ablation.evaluation.report.formatting import num_or_na, p_value, percent, signed, table, with_interval
from rag_ablation.evaluation.report.support_report import support_section
from rag_ablation.evaluation.report.metrics_view import (answer_comparison, calibration, canaries_not_run_reason,
                                                         canary_results, failure_table, hand_accuracy, is_calibrated,
                                                         is_judged, judged_entry, length_bias, length_bias_ran,
                                                         measure_comparisons, not_judged_reason)

Detail = Mapping[str, Any]


def _stat(d: Mapping[str, Any]) -> str:
    est = d.get("estimate")
    iv = d.get("interval") or {}
    return with_interval(est, iv.get("low", d.get("low")), iv.get("high", d.get("high")))


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(f"`{i}`" for i in ids) if ids else "none"


def grades_text(g: Mapping[str, Any]) -> str:
    """What the hand grades of ``judge_detail.json``'s ``grades`` block (``matching``, ``stale``,
    ``unknown``, ``answers``) are, in words, for both reports: how many match the current
    answers, and what *stale* and *unknown* grades are (neither is used); with no grade at all,
    that the data set has none and how to add some."""
    matching, stale, unknown = (int(g.get(k) or 0) for k in ("matching", "stale", "unknown"))
    if matching == stale == unknown == 0:
        return ("No hand grades: the data set's grades.jsonl (the handbook's is data/labels/grades.jsonl) grades "
                f"none of the {int(g.get('answers') or 0)} current answers, so no judge is compared with a person; "
                "`rag-ablation grade` adds grades (docs/judging.md).")
    return (f"{matching} hand grades (the data set's grades.jsonl; the handbook's is data/labels/grades.jsonl) "
            f"match the current text of {int(g.get('answers') or 0)} answers; {stale} graded another text of a "
            f"current answer (an earlier generation or another answer model: stale) and {unknown} an answer that "
            "no longer exists (unknown); neither is used.")


def no_grades(detail: Detail) -> bool:
    """No hand grade matches a current answer (``grades.matching`` 0): every section that needs
    one is left out, and :func:`calibration_section` says why in one paragraph."""
    return int((detail.get("grades") or {}).get("matching") or 0) == 0


def calibration_section(detail: Detail, judges: Sequence[str], confidence: float) -> str:
    g = detail["grades"]
    if no_grades(detail):
        return "\n".join(["## Judges against hand grades", "",
                          grades_text(g) + " Left out until some grades match: the judges against them, the judges "
                          "by their scores, PPI++ and the answer configs compared by hand grades."])
    rows, notes = [], []
    two, graders = grader_row(detail), graders_section(detail, confidence)
    for j in judges:
        c = calibration(detail, j)
        if not is_calibrated(c):
            rows.append([f"`{j}`", "n/a", "", "", "", "", c.get("reason", "unavailable")])
            continue
        cm = c["confusion"]
        rows.append([f"`{j}`", f"{c['n']} ({c['invalid']} invalid)", _stat(c["accuracy"]), _stat(c["tpr"]),
                     _stat(c["tnr"]), _stat(c["kappa"]), f"{cm['tp']} / {cm['fp']} / {cm['fn']} / {cm['tn']}"])
        d = c["disagreements"]
        notes.append(f"<details><summary><code>{j}</code>: {len(d['false_accepts'])} false accept(s), "
                     f"{len(d['false_rejects'])} false reject(s), {len(d['invalid'])} invalid</summary>\n\n"
                     f"- accepted, graded wrong: {_ids(d['false_accepts'])}\n"
                     f"- rejected, graded correct: {_ids(d['false_rejects'])}\n"
                     f"- invalid reply: {_ids(d['invalid'])}\n\n</details>")
    return "\n".join([
        "## Judges against hand grades", "",
        grades_text(g) + " Each judge is compared with them on every graded answer of every config. "
        f"Intervals: {confidence:.0%} bootstrap over answers. TPR: the judge accepts what the grader accepted; "
        "TNR: the judge rejects what the grader rejected; kappa: agreement beyond chance (0 = chance, 1 = perfect). "
        "An invalid reply (not exactly CORRECT or INCORRECT) is counted, never guessed.", "",
        table(["judge", "answers (invalid)", "accuracy", "TPR", "TNR", "Cohen's kappa", "TP / FP / FN / TN"],
              [*rows, *([two] if two else [])]),
        "", "Disagreements (config/question):", "", *notes,
        *(["", graders] if graders else [])])


def grader_row(detail: Detail) -> list[str] | None:
    """The judges' table's row of the second grader (against the first, as a judge against the
    grades: TP both correct, FP only the second, FN only the first, TN both incorrect), or None
    without a second grader (``judge_eval``'s ``graders``)."""
    g = detail.get("graders") or {}
    if g.get("status") != "ok":
        return None
    o = g["overall"]
    t = o["table"]
    return ["second grader (the ceiling)", f"{o['n']} graded by both", _stat(o["accuracy"]), "", "",
            _stat(o["kappa"]), f"{t['both_correct']} / {t['second_only']} / {t['first_only']} / {t['both_incorrect']}"]


def _graded(who: Mapping[str, Any]) -> str:
    return f"{who['verdict']} by {who['grader']}" + (f" ({who['note']})" if who.get("note") else "")


def graders_section(detail: Detail, confidence: float) -> str:
    """Two graders' agreement (``judge_eval``'s ``graders``): overall and per config, and the
    disagreements to adjudicate; without a second grader one line saying how to add one; nothing
    for a detail file from before it existed."""
    g = detail.get("graders")
    if not g:
        return ""
    if g.get("status") != "ok":
        return f"Second grader: {g.get('reason')}."
    o = g["overall"]
    rows = [[f"`{c}`", str(a["n"]), _stat(a["accuracy"]), _stat(a["kappa"]),
             " / ".join(str(a["table"][k]) for k in ("both_correct", "first_only", "second_only", "both_incorrect"))]
            for c, a in g["configs"].items()]
    out = ["### A second grader: the ceiling", "",
           f"{o['n']} answers are graded blind by two graders ({', '.join(g['graders'])}); they agree on "
           f"{percent(o['accuracy']['estimate'])}, Cohen's kappa {_stat(o['kappa'])} ({confidence:.0%} bootstrap over "
           "answers, as the judges'). No judge can be shown to agree with the grades better than a second person "
           "does: a judge's kappa near this one is as good as the grades allow. Calibration uses the adjudicated "
           "grade where there is one, else the first grader's.", "",
           table(["config", "graded by both", "agreement", "Cohen's kappa",
                  "both correct / first only / second only / both incorrect"], rows)]
    d = g["disagreements"]
    if d:
        out += ["", f"Disagreements to adjudicate ({g['adjudicated']} of {len(d)} settled; settle them with "
                "`rag-ablation grade --adjudicate --grader NAME`, docs/judging.md):", "",
                table(["config", "question", "first grader", "second grader", "adjudicated"],
                      [[f"`{r['config']}`", f"`{r['id']}`", _graded(r["first"]), _graded(r["second"]),
                        r["adjudicated"] or "not yet"] for r in d])]
    return "\n".join(out)


def accuracy_section(detail: Detail, configs: Sequence[str], judges: Sequence[str], confidence: float, *,
                     ppi: bool = True) -> str:
    """Accuracy per answered config by hand grades and by each judge alone, then PPI++ and its
    split-half check (left out with ``ppi`` False: no hand grade, :func:`no_grades`)."""
    rows: list[list[str]] = []
    ppi_rows: list[list[str]] = []
    check_rows: list[list[str]] = []
    splits = 0
    for c in configs:
        if not is_judged(detail, c):
            rows.append([f"`{c}`", f"unavailable: {not_judged_reason(detail, c)}", *[""] * len(judges)])
            continue
        e = judged_entry(detail, c)
        acc = e["accuracy"]
        hand = hand_accuracy(detail, c)
        hand_cell = f"{with_interval(hand['estimate'], hand['low'], hand['high'])}, n={hand['n']}" if hand else "no grades"
        cells = []
        for j in judges:
            a = acc.get(j)
            if a is None:
                cells.append("unavailable")
                continue
            n = a["judge"]
            cells.append(f"{with_interval(n['estimate'], n['low'], n['high'])}, n={n['n']}"
                         + (f", {n['invalid']} invalid" if n["invalid"] else ""))
            p, check = a.get("ppi"), a.get("ppi_check")
            helps = (a.get("usefulness") or {}).get("words", "")
            if p is not None:
                ppi_rows.append([f"`{c}`", f"`{j}`", *_ppi_cells(p, hand["estimate"] if hand else None),
                                 f"{p['n_labeled']} + {p['n_unlabeled']}", helps])
            elif check is not None:  # every answer graded: PPI++ on half the grades, the rest held back
                q = check["ppi"]
                ppi_rows.append([f"`{c}`", f"`{j}`", *_ppi_cells(q, q["classical"]["estimate"]),
                                 f"{q['n_labeled']} + {q['n_unlabeled']} (split-half: {q['n_unlabeled']} grades "
                                 f"held back; {a.get('ppi_reason', '')})", helps])
            else:
                ppi_rows.append([f"`{c}`", f"`{j}`", "n/a", "", "", a.get("ppi_reason", ""), helps])
            if check is not None:
                splits = check["splits"]
                check_rows.append([
                    f"`{c}`", f"`{j}`", num_or_na(check["truth"]), num_or_na(check["heldout"]),
                    with_interval(check["ppi"]["estimate"], check["ppi"]["low"], check["ppi"]["high"]),
                    ("yes" if check["covers"] else "**no**") + " / " + ("yes" if check["covers_heldout"] else "no"),
                    f"{check['coverage']:.0%} vs {check['classical_coverage']:.0%}",
                    f"{num_or_na(check['mean_width'])} vs {num_or_na(check['mean_classical_width'])}"])
        rows.append([f"`{c}`", f"{e['answers']} answers, {e['graded']} graded", hand_cell, *cells])
    head = [
        "## Answer accuracy three ways", "",
        f"Share of answers that are correct, with {confidence:.0%} Wilson intervals: by hand grades alone (graded "
        "answers only), by each judge alone on every answer (naive: it inherits the judge's errors above), and "
        "prediction-powered (PPI++, ppi-python): the judge on every answer, corrected by the graded ones. PPI++ "
        "is never much wider than the hand grades alone; the gain is the effective number of hand grades it is "
        "worth (1x = the judge adds nothing).", "",
        table(["config", "answers", "hand grades", *[f"judge `{j}` alone" for j in judges]], rows)]
    if not ppi:
        return "\n".join(head)
    return "\n".join([
        *head, "",
        "Can the judge help? PPI++ beats the hand grades alone only when the judge's verdict correlates with "
        "the grades by more than 1/sqrt(n - 2), n the hand grades it uses (Mani, Xu, Lipton and Oberst, \"No free "
        "lunch: non-asymptotic analysis of prediction-powered inference\", arXiv:2505.20178, PMLR v306, 2026: "
        "the level for Gaussian data, about the same for binary grades). The last column compares |r| over every "
        "graded answer of the config with that level; below it, PPI++ is expected to do worse than the hand grades "
        "alone, whatever gain this sample shows.", "",
        table(["config", "judge", "PPI++ accuracy", "hand grades alone (normal interval)", "effective sample-size gain",
               "graded + ungraded", "PPI++ expected to help? (|r| against 1/sqrt(n-2))"], ppi_rows), "",
        "PPI++ checked against grades it did not see: each config's hand grades split in two by a seeded "
        "permutation, PPI++ given the grades of one half and only the judge's verdicts on the other. The target "
        "is the hand accuracy of all graded answers; \"covers\" says whether the first split's PPI++ interval "
        "contains it (and the held-back half's own accuracy); coverage and mean width are over "
        f"{splits or 'the'} seeded splits, PPI++ against the labelled half alone. A valid PPI++ covers about as "
        "often as the labelled half alone and is no wider; a useful judge makes it narrower.", "",
        table(["config", "judge", "all grades", "held-back half", "PPI++ (first split)",
               "covers all / held-back", "coverage PPI++ vs half alone", "mean width PPI++ vs half alone"],
              check_rows) if check_rows else "No split-half check: fewer than 4 hand grades per config."])


def _ppi_cells(p: Mapping[str, Any], classical_estimate: float | None) -> list[str]:
    """PPI++ accuracy, the classical interval of its hand grades, and the gain, as table cells."""
    gain = "n/a" if p["gain"] is None else f"{p['gain']:.2f}x ({p['n_labeled']} grades count as {p['n_eff']:.0f})"
    classical = (with_interval(classical_estimate, *(p["classical"][k] for k in ("low", "high")))
                 if p.get("classical") else "n/a")
    return [with_interval(p["estimate"], p["low"], p["high"]), classical, gain]


def comparison_section(detail: Detail, confidence: float) -> str:
    """The answered configs against the baseline on the questions hand-graded in both (empty with
    one answered config)."""
    comp = answer_comparison(detail)
    if comp is None:
        return ""
    base = comp.baseline
    rows = []
    for r in comp.rows:
        d = r.difference
        if d is None:
            rows.append([f"`{r.config}`", f"unavailable: {r.reason}", "", "", "", "", ""])
            continue
        rows.append([f"`{r.config}`", str(d.n), percent(d.baseline_accuracy), percent(d.accuracy),
                     with_interval(d.delta, d.ci_low, d.ci_high, fmt=lambda x: f"{100 * x:+.1f} pts"),
                     f"{d.fixed} / {d.broken}", f"{d.p_mcnemar:.3g}"])
    ids = [f"- `{r.config}` fixed: {_ids(r.difference.fixed_ids)}; broken: {_ids(r.difference.broken_ids)}"
           for r in comp.rows if r.difference is not None]
    over = " (resampling whole source documents: `stats.cluster`)" if comp.clustered else ""
    return "\n".join([
        "## Answer configs compared, by hand grades", "",
        f"Each answered config against `{base}` on the questions hand-graded for both, paired by question: the "
        f"difference in accuracy with its {confidence:.0%} paired bootstrap interval{over}, the questions it fixed "
        "(wrong in the baseline, right here) and broke, and the exact McNemar p-value on those. An interval "
        "that includes 0 is no evidence either way.", "",
        table(["config", "questions graded in both", f"`{base}`", "config", "difference (interval)",
               "fixed / broken", "McNemar p"], rows), "", *ids])


def measure_section(detail: Detail, confidence: float) -> str:
    """The answered configs against the baseline on every answer they share, by token F1 and the
    primary judge's score (judge_eval's ``measure_comparison``; empty without it)."""
    comps = measure_comparisons(detail)
    if not comps:
        return ""
    base = comps[0].baseline
    rows = []
    for m in comps:
        if m.reason:
            rows.append([m.label, "", f"unavailable: {m.reason}", "", "", "", "", "", ""])
            continue
        for r in m.rows:
            if r.reason or r.p is None or r.p_holm is None or r.verdict is None:
                rows.append([m.label, f"`{r.config}`", f"unavailable: {r.reason or 'not compared'}", "", "", "", "",
                             "", ""])
                continue
            rows.append([m.label, f"`{r.config}`", str(r.n), f"{num_or_na(r.baseline_mean)} / {num_or_na(r.mean)}",
                         with_interval(r.delta, r.ci_low, r.ci_high, fmt=signed), f"{r.better} / {r.worse}",
                         p_value(r.p), p_value(r.p_holm), r.verdict])
    ids = [f"- {m.label}, `{r.config}` better: {_ids(r.better_ids)}; worse: {_ids(r.worse_ids)}"
           for m in comps for r in m.rows if r.verdict is not None and (r.better_ids or r.worse_ids)]
    margin = next((r.margin for m in comps for r in m.rows if r.margin is not None), None)
    by_more = f" by more than {margin:g}" if margin is not None else ""
    partial = [m for m in comps if m.undefined and not m.reason]
    where_defined = [
        f"{m.label} is compared on the questions where both answers have one ("
        + ", ".join(f"`{c}`: {n} answerable answer(s) without" for c, n in m.undefined)
        + ": refusals, answers with no content word, unknown passages); it counts the answer's words found in the "
        "passages shown, not whether they support it (how well it ranks hand grades of support: the Support "
        "section)." for m in partial]
    return "\n".join([
        "## Answer configs compared on every answer", "",
        f"Each answered config against `{base}` on every answerable question both answered (not only the graded "
        "ones), paired by question, on token F1 (no judge decides it) and on the primary judge's score: the change "
        f"of the mean with its {confidence:.0%} paired bootstrap interval, the questions better / worse{by_more} "
        "(`stats.margin`), the paired sign-flip test (the exact sign test for a 0/1 measure) and its Holm "
        "adjustment over the configs; the verdict is the "
        "retrieval comparisons' rule. A score is the judge's, not a person's: the hand-graded comparison above is "
        "the one to trust where they disagree." + "".join(" " + s for s in where_defined), "",
        table(["measure", "config", "questions", f"`{base}` / config", "change (interval)", "better / worse",
               "p", "Holm p", "verdict"], rows), *([""] + ids if ids else [])])


def _repeated(e: Mapping[str, Any], measure: str) -> Mapping[str, Any] | None:
    """The repeated cross-fit's ``measure`` (``kappa``, or ``auc`` of a fitted score) of a
    ``scores`` entry: the median over fold seeds with the refit interval; None in a detail file
    from before it was kept (``scored``'s module docstring)."""
    v = e.get(measure)
    return v if isinstance(v, Mapping) and "seeds" in v else None


def scores_section(detail: Detail, judges: Sequence[str], confidence: float) -> str:
    """Each judge by its score: AUC, and the cross-fitted kappa, the median over fold seeds with
    an interval that re-fits the thresholds (and the combined judge's model) on every bootstrap
    draw, beside one seed's kappa with its thresholds held fixed, TPR / TNR at that seed, and the
    fixed-threshold kappa; the combined judge; the primary judge named. A detail file from before
    the repeated cross-fit shows the one seed's figures alone. Empty when the detail has no
    ``scores`` (a file from before judges kept scores)."""
    sc = detail.get("scores")
    if not sc:
        return ""
    seed = sc.get("seed", 0)
    repeated = any(_repeated(e or {}, "kappa") for e in [*sc["judges"].values(), sc.get("combined")])
    rows = []
    for name in [*judges, "combined"]:
        e = sc["judges"].get(name) if name != "combined" else sc.get("combined")
        if not e:
            continue
        fixed = calibration(detail, name) if name != "combined" else None
        fixed_kappa = _stat(fixed["kappa"]) if fixed and is_calibrated(fixed) else "n/a"
        if e.get("status") != "ok":
            rows.append([f"`{name}`", "n/a", *(["n/a"] if repeated else []), "n/a", "", "", "", fixed_kappa,
                         e.get("reason", "")])
            continue
        x = e["crossfit"]
        med = _repeated(e, "kappa")
        spread = [f"{_stat(med)}; seeds {med['min']:.3f} to {med['max']:.3f}" if med else "n/a"] if repeated else []
        note = ["inputs: " + ", ".join(e["inputs"])] if name == "combined" else []
        if name == "combined" and _repeated(e, "auc") and x.get("auc"):
            note.append(f"AUC at seed {seed}: {_stat(x['auc'])}")
        rows.append([f"`{name}`", _stat(e["auc"]), *spread, _stat(x["kappa"]), _stat(x["tpr"]), _stat(x["tnr"]),
                     ", ".join(f"{t:.3g}" for t in x["fold_thresholds"]), fixed_kappa, "; ".join(note)])
    primary = sc.get("primary")
    how = (f"Cross-fitted: the graded answers in {sc['folds']} seeded folds; each fold's answers are judged by a "
           "threshold chosen (highest kappa) on the other folds' grades, so no answer's grade chooses its own "
           "threshold. `combined`: a logistic regression over the scored judges, fit the same way.")
    if repeated:
        n_seeds, draws = sc.get("crossfit_seeds"), sc.get("refit_resamples")
        how += (f" One cross-fit depends on its fold seed, so the cross-fit is repeated with {n_seeds} fold seeds "
                f"({seed} to {seed + n_seeds - 1}): **kappa (median)** is their median, with a {confidence:.0%} "
                f"interval from {draws} bootstrap draws of the graded answers, each cross-fitted from scratch "
                "(thresholds, and the combined judge's model, re-fit on the drawn grades), and the range over the "
                "seeds. `combined`'s AUC is also the median over seeds of its out-of-fold AUC with that interval "
                "(the other judges' scores are their own: nothing is fitted). "
                f"The seed-{seed} columns are one cross-fit, whose verdicts the failure tables use; its interval "
                "holds that seed's thresholds fixed, so it leaves their variation out.")
    kappa_cols = ([f"kappa (median of {sc.get('crossfit_seeds')} cross-fits, refit interval)",
                   f"kappa (seed {seed}, thresholds held)"] if repeated else ["kappa (cross-fitted)"])
    tpr_cols = [f"TPR (seed {seed})", f"TNR (seed {seed})"] if repeated else ["TPR", "TNR"]
    return "\n".join([
        "## Judges by their scores", "",
        "Every judge gives a score in [0, 1] beside its verdict (token F1; 1 or 0 for `contains`; for `llm` the "
        "probability of CORRECT from the first reply token's log probabilities). AUC: how well the score ranks "
        f"correct above incorrect answers (0.5 = chance), with a {confidence:.0%} bootstrap interval. " + how +
        " The fixed threshold's kappa (the table above) is beside, so the difference shows. ROC curves: "
        "metrics/plots/roc.json.", "",
        table(["judge", "AUC", *kappa_cols, *tpr_cols, "fold thresholds", "kappa (fixed)", "note"], rows),
        "", (f"Primary judge (failure tables, retrieved x correct from every answer): **`{primary}`**, the best "
             f"{'median ' if repeated else ''}cross-fitted kappa." if primary else
             "No judge is scored on every graded answer: the primary judge is the best by fixed-threshold kappa.")])


def canary_flag_lines(detail: Detail) -> list[str]:
    """One warning line per judge and canary kind it accepted though a sound judge rejects it."""
    return [f"- **Warning:** `{f['judge']}` accepts `{f['kind']}` canaries ({f['accepted_count']} of {f['n']}, "
            f"{percent(f['accepted'])}): a sound judge rejects every one; its verdicts can't be trusted for this kind "
            "of answer." for f in detail.get("canary_flags") or []]


def canary_judges(detail: Detail, judges: Sequence[str]) -> list[str]:
    """The judges of the canary table: ``judges`` (``judge.judges``), then every other judge
    judge_eval tested (the combined judge), in its order."""
    return [*judges, *(j for j in detail.get("canaries", {}) if j not in judges)]


def canary_section(detail: Detail, judges: Sequence[str]) -> str:
    """The canary table of every judge of ``canary_judges`` (the combined judge included), the
    bold warnings above it."""
    rows = []
    n = next((r["n"] for c in detail["canaries"].values() if c and "status" not in c for r in c.values()), None)
    for j in canary_judges(detail, judges):
        c = canary_results(detail, j)
        if c is None:
            rows.append([f"`{j}`", "n/a", "", "", canaries_not_run_reason(detail, j)])
            continue
        for kind, r in c.items():
            should = "accept" if r["expected_accept"] else "reject"
            rows.append([f"`{j}`", kind, should, with_interval(r["accepted"], r["low"], r["high"], percent),
                         f"{r['n']}" + (f" ({r['invalid']} invalid)" if r["invalid"] else "")])
    return "\n".join([
        "## Canaries", "",
        "Made-up answers for " + (f"{n} graded answerable questions (all of them, or a seeded sample of "
                                  "`judge.canary_sample`)" if n else "the graded answerable questions")
        + " (texts in metrics/scores/canaries.csv): four that "
        "must be rejected (\"Yes.\", \"Sure, here is the answer.\", the question repeated, an empty answer) and two "
        "that must be accepted (the reference padded to about three times its length with no new facts, and the "
        "reference reworded). The share the judge accepted, with a Wilson interval:", "",
        *([*canary_flag_lines(detail), ""] if detail.get("canary_flags") else []),
        table(["judge", "canary", "a sound judge would", "accepted", "answers"], rows)])


def bias_section(detail: Detail) -> str:
    b = detail.get("bias", {})
    length = length_bias(detail)
    out = ["## What the judge prefers", ""]
    if length_bias_ran(length):
        fs = length["first_slot"]
        out += [
            f"Each of {length['pairs']} references was compared with its padded version, in both orders "
            f"({length['verdicts']} verdicts, {length['valid_verdicts']} valid). A win counts only when both "
            "orders pick the same answer; otherwise it is a tie.", "",
            table(["position consistency", "first slot wins", "long wins", "short wins", "ties"],
                  [[f"{length['consistent']}/{length['pairs']} ({percent(length['consistency'])})",
                    f"{fs['wins']}/{fs['n']}, {with_interval(fs['rate'], fs['low'], fs['high'], percent)}",
                    str(length["long_wins"]), str(length["short_wins"]), str(length["ties"])]]), ""]
    else:
        out += [f"Position and length: {length.get('status', 'not run')}: {length.get('reason')}.", ""]
    sp = b.get("self_preference", {})
    if sp.get("status") == "ok":
        rows = [[f"`{j}`", str(r["pairs"]), str(r["own_wins"]), str(r["other_wins"]), str(r["ties"])]
                for j, r in sp["judges"].items()]
        models = ", ".join(f"{k}: {v.get('model')}" for k, v in sp["models"].items())
        out += [f"Self-preference ({models}): each model judged both models' answers in both orders.", "",
                table(["judging model", "pairs", "picked its own", "picked the other", "ties"], rows)]
    else:
        out += [f"Self-preference: {sp.get('status', 'not measured')}: {sp.get('reason', 'needs two answer models')}."]
    return "\n".join(out)


FAILURE_LABELS = {
    "refused_with_relevant": "refused, relevant passage in prompt",
    "refused_without_relevant": "refused, none in prompt",
    "wrong_with_relevant": "wrong, relevant passage in prompt",
    "wrong_without_relevant": "wrong, none in prompt (retrieval failure)",
    "correct_with_relevant": "correct, relevant passage in prompt",
    "correct_without_relevant": "correct, none in prompt",
    "unknown": "verdict unknown",
}


def failures_section(detail: Detail, configs: Sequence[str]) -> str:
    out = ["## Where answers fail", ""]
    for c in configs:
        if not is_judged(detail, c):
            continue
        e = judged_entry(detail, c)
        for key, label in (("hand", "hand grades"), ("judge", f"judge `{e.get('primary_judge')}`")):
            f = failure_table(detail, c, key)
            if not f:
                continue
            rows = [[FAILURE_LABELS.get(cat, cat), str(f[cat]["count"]), percent(f[cat]["share"])]
                    for cat in FAILURE_CATEGORIES if cat in f]
            out += [f"### `{c}`, correctness from {label} ({f['n']} answerable answers)", "",
                    table(["what happened", "answers", "share"], rows), "",
                    "Retrieved by correct (the lesson's two-by-two):", "",
                    e["two_by_two"][key]["markdown"], ""]
    return "\n".join(out).rstrip()


def unanswerable_section(detail: Detail, configs: Sequence[str]) -> str:
    rows, thr = [], []
    for c in configs:
        if not is_judged(detail, c):
            continue
        e = judged_entry(detail, c)
        d = e.get("decline")
        decline = f"{d['declines']}/{d['n']}, {with_interval(d['estimate'], d['low'], d['high'], percent)}" if d else "n/a"
        crag = e.get("crag", {})
        cells = [num_or_na(crag[k].get("score")) + f" (n={crag[k].get('scored', 0)})" if k in crag else "n/a"
                 for k in ("hand", "judge")]
        if "judge" in crag:
            cells[1] += f", `{e.get('primary_judge')}`"
        rows.append([f"`{c}`", decline, *cells])
        t = e.get("threshold")
        if t:
            best = t["best"]
            thr.append([f"`{c}`", num_or_na(t["answerable_median"]), num_or_na(t["unanswerable_median"]), num_or_na(t["auc"]),
                        f"{best['threshold']:.{SCORE_DIGITS}g}", percent(best["coverage"]), percent(best["false_decline_rate"]),
                        percent(best["false_answer_rate"])])
    return "\n".join([
        "## Unanswerable questions", "",
        "Decline rate on the unanswerable questions, with a Wilson interval, and the score +1 correct, 0 declined, "
        "-1 wrong over all answered questions (on unanswerable ones a decline is the correct answer).", "",
        table(["config", "declined (unanswerable)", "score, hand grades",
               "score, primary judge (best kappa against the hand grades)"], rows), "",
        "Could the system decline on its own? The top retrieval score of every question (reranker's where "
        "available, else fused, else the retriever's), answerable against unanswerable. Declining when the "
        "score is below a threshold: the best threshold by balanced accuracy, with its error rates (coverage "
        "against accuracy for every threshold in metrics/plots/coverage.json).", "",
        table(["config", "median top score, answerable", "median, unanswerable", "AUC", "best threshold",
               "coverage", "answerable declined", "unanswerable answered"], thr)])


def render_answers(detail: Detail, *, configs: Sequence[str], judges: Sequence[str], confidence: float) -> str:
    """Every section above, joined; empty when no config has judged answers. Without a hand grade
    that matches a current answer (:func:`no_grades`), the sections that need one are left out and
    the first section says so in one paragraph."""
    if not any(is_judged(detail, c) for c in configs):
        return ""
    graded = not no_grades(detail)
    return "\n\n".join([calibration_section(detail, judges, confidence),
                        *filter(None, [scores_section(detail, judges, confidence) if graded else ""]),
                        accuracy_section(detail, configs, judges, confidence, ppi=graded),
                        *filter(None, [comparison_section(detail, confidence) if graded else "",
                                       measure_section(detail, confidence)]),
                        canary_section(detail, judges),
                        bias_section(detail), failures_section(detail, configs),
                        *filter(None, [support_section(detail, configs, confidence)]),
                        unanswerable_section(detail, configs)])
