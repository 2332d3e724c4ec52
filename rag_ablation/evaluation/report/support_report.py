"""The report's section on support (groundedness), from the ``support`` blocks of
``judge_detail.json`` (``rag_ablation.evaluation.judges.support_eval``): how the hand support
grades divide, each scorer calibrated on them, the support canaries, the supported share per
config and the retrieved-by-correct table with "correct" split into supported and unsupported.
Only formats numbers already computed; without any hand support grade it is one paragraph saying
how to add them."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rag_ablation.evaluation.report.formatting import num_or_na, percent, table, with_interval
from rag_ablation.evaluation.report.metrics_view import is_judged, judged_entry

Detail = Mapping[str, Any]

HOW_TO_GRADE = ("`rag-ablation grade --support` (or the workbench's Grade answers tab) asks, beside correct, "
                "whether the answer is supported by the passages its prompt showed: supported, partly or not")
SCORER_WORDS = {"lexical_support": "share of the answer's content words found in the passages shown",
                "llm_support": "the answer model's probability of SUPPORTED (support@CONFIG)"}


def _interval(d: Mapping[str, Any] | None, fmt: Callable[[float], str] = num_or_na) -> str:
    if not d or d.get("estimate") is None:
        return "n/a"
    return with_interval(d["estimate"], d.get("low"), d.get("high"), fmt)


def _share(d: Mapping[str, Any] | None) -> str:
    return "n/a" if not d else f"{_interval(d, percent)} ({d['supported']}/{d['n']})"


def calibration_rows(block: Mapping[str, Any]) -> list[list[str]]:
    """One row per scorer: the graded answers it scored (and how many it could not), AUC, the
    median cross-fitted kappa with its refit interval, the all-grades threshold; the reason for
    a scorer that is not calibrated."""
    rows = []
    for name, c in block["calibration"].items():
        scored = f"{c['n']}" + (f" ({c['unscored']} without a score)" if c.get("unscored") else "")
        if c["status"] != "ok" and c["n"] == 0:  # never scored (the model was not asked): the reason says why
            scored = "none"
        if c["status"] != "ok":
            rows.append([f"`{name}`", scored, "n/a", "n/a", "", c.get("reason", "")])
            continue
        k = c["kappa"]
        rows.append([f"`{name}`", scored, _interval(c["auc"]),
                     f"{_interval(k)}; seeds {k['min']:.3f} to {k['max']:.3f}", f"{c['threshold']:.3g}",
                     SCORER_WORDS.get(name, "")])
    return rows


def canary_lines(block: Mapping[str, Any]) -> list[str]:
    """The support canary table and a bold warning per (scorer, kind) judged against its
    expectation; one line with the reason when no canary was judged."""
    can = block.get("canaries") or {}
    if can.get("status") != "ok":
        return [f"Support canaries: not judged ({can.get('reason', 'none')})."]
    warn = [f"- **Warning:** `{f['scorer']}` {'rejects' if f['expected_accept'] else 'accepts'} {f['against']} of "
            f"{f['n']} `{f['kind']}` canaries: a sound scorer "
            f"{'accepts' if f['expected_accept'] else 'rejects'} every one." for f in can.get("flags", [])]
    rows = [[f"`{name}`", kind, "accept" if r["expected_accept"] else "reject",
             with_interval(r["accepted"], r.get("low"), r.get("high"), percent),
             f"{r['n']}" + (f" ({r['invalid']} without a score)" if r["invalid"] else "")]
            for name, kinds in can["scorers"].items() for kind, r in kinds.items()]
    return ["Support canaries, judged at each scorer's all-grades threshold: `unrelated_copy` copies a passage "
            "of another document that the prompt did not show (must be rejected); `shown_copy` copies a passage "
            "the prompt showed (must be accepted).", "", *warn, *([""] if warn else []),
            table(["scorer", "canary", "a sound scorer would", "accepted", "canaries"], rows)]


def split_lines(detail: Detail, configs: Sequence[str]) -> list[str]:
    """Each judged config's supported shares and its split retrieved-by-correct tables."""
    out = []
    for c in configs:
        if not is_judged(detail, c):
            continue
        s = judged_entry(detail, c).get("support") or {}
        if not s:
            continue
        out += [f"### `{c}`", "",
                f"Supported: {_share(s.get('hand'))} of the answers with a hand support grade; "
                f"{_share(s.get('judged'))} of every answer with a known support verdict "
                f"({detail['support']['source']}).", ""]
        for split in (s.get("split") or {}).values():
            out += [split["markdown"], ""]
    return out


def support_section(detail: Detail, configs: Sequence[str], confidence: float) -> str:
    """The section (module docstring); empty when the detail file has no ``support`` block (a
    file from before support was measured)."""
    block = detail.get("support")
    if not block:
        return ""
    head = ["## Support (groundedness)", ""]
    if block["status"] != "ok":
        return "\n".join([*head, "No hand support grades match the current answers, so neither lexical support "
                          "nor P(SUPPORTED) has a threshold and no answer is called supported. " + HOW_TO_GRADE +
                          "; with grades this section shows how well each score ranks them, the supported share "
                          "per config and the retrieved-by-correct table split by support."])
    lv = block["levels"]
    primary = block.get("primary")
    return "\n".join([
        *head,
        f"Is the answer supported by the passages its prompt showed? Hand support grades: {lv['supported']} "
        f"supported, {lv['partly']} partly, {lv['not']} not ({HOW_TO_GRADE}). Only `supported` counts as "
        "supported: an answer with one invented claim is not grounded. Each score is calibrated on them as the "
        f"correctness judges are: AUC with a {confidence:.0%} bootstrap interval, and the cross-fitted kappa "
        "(median over fold seeds, with an interval that re-fits the threshold on every bootstrap draw); the "
        "threshold chosen on every grade judges the answers without one and the canaries.", "",
        table(["scorer", "graded answers scored", "AUC", "kappa (median, refit interval)", "threshold", "what it is"],
              calibration_rows(block)), "",
        (f"Support verdicts: the hand grade where there is one, else **`{primary}`** (the best median kappa) "
         "at its threshold." if primary else "No scorer is calibrated: support verdicts come from hand grades "
                                            "only."), "",
        *canary_lines(block), "",
        "Retrieved by correct, with correct split by support: a correct answer the passages do not support was "
        "answered from the model's memory (or made up and lucky).", "",
        *split_lines(detail, configs)]).rstrip()
