"""The retrieval gate's results rendered: the terminal text, Markdown for a pull request, JUnit
XML for CI and the numbers of ``metrics/gate.json``.

:func:`format_text` is the chapter's form, two lines per config and slice::

    hybrid_heading identifier: recall@5 = 0.850 (34/40), newly failing [], newly passing []
      PASS (baseline 0.850 (34/40), change +0.000, 95% interval +0.000 to +0.000)

then the overall verdict. No form holds a time, so the same result gives the same bytes.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from rag_ablation.core.config import GateConfig
from rag_ablation.evaluation.gate.rules import ALL, GateResult, SliceResult
from rag_ablation.evaluation.report.formatting import num, signed, table
from rag_ablation.evaluation.statistics.comparison import ANSWER_MEASURES, is_binary, measure_label, rounded
from rag_ablation.evaluation.statistics.inference import CHANGE_INTERVAL, interval_dict


def gate_title(r: GateResult) -> str:
    """``Answer gate`` when the gated column is an answer measure (``rag-ablation check --measure
    token_f1``), else ``Retrieval gate``."""
    return "Answer gate" if r.measure in ANSWER_MEASURES else "Retrieval gate"


def _floors(rules: GateConfig) -> str:
    if rules.floor is None:
        return "no floor"
    if isinstance(rules.floor, float):
        return f"floor {num(rules.floor)}"
    return "floor " + ", ".join(f"{s} {num(f)}" for s, f in rules.floor.items())


def rules_text(r: GateResult) -> str:
    """One sentence: what is checked, against what, with which rules."""
    rules = r.rules
    margin = (f"change interval ({r.settings.confidence:.0%}, {r.settings.resamples:,} resamples, seed "
              f"{r.settings.seed}) not entirely below -{rules.non_inferiority_margin:g}"
              if rules.non_inferiority_margin is not None else "non-inferiority margin off")
    failing = ("newly failing" if is_binary(r.measure) else
               f"newly failing (dropped by more than {r.settings.margin:g}, stats.margin)")
    return (f"{measure_label(r.measure)} of {', '.join(r.configs)} against {r.against}, per slice of answerable "
            f"questions and all: {_floors(rules)}; at most {rules.max_newly_failing} {failing}; {margin}; "
            f"slices under {rules.min_questions} questions are not gated.")


def _count(hits: float, s: SliceResult) -> str:
    """`` (34/40)`` after a hit rate; nothing after a continuous measure's mean."""
    return f" ({hits}/{s.n})" if is_binary(s.measure) else ""


def summary_line(s: SliceResult) -> str:
    """The chapter's line: ``NAME SLICE: recall@5 = 0.850 (34/40), newly failing [...], newly passing [...]``."""
    return (f"{s.config} {s.slice}: {measure_label(s.measure)} = {s.recall:.3f}{_count(s.hits, s)}, "
            f"newly failing {list(s.newly_failing)}, newly passing {list(s.newly_passing)}")


def _baseline_text(s: SliceResult, confidence: float) -> str:
    return (f"baseline {s.baseline_recall:.3f}{_count(s.baseline_hits, s)}, change {signed(s.change.estimate)}, "
            f"{confidence:.0%} interval {signed(s.change.low)} to {signed(s.change.high)}")


def verdict_line(s: SliceResult, r: GateResult) -> str:
    """``PASS``, ``FAIL: reasons`` or ``TOO SMALL: ...``, then the baseline and the change."""
    if s.too_small:
        head = f"TOO SMALL: {s.n} questions, fewer than {r.rules.min_questions} (gate.min_questions): not gated"
    elif s.failures:
        head = "FAIL: " + "; ".join(s.failures)
    else:
        head = "PASS"
    return f"{head} ({_baseline_text(s, r.settings.confidence)})"


def format_text(r: GateResult) -> str:
    """The terminal form: the rules, two lines per config and slice, then the overall verdict."""
    lines = [f"{gate_title(r)}: {rules_text(r)}", ""]
    for s in r.slices:
        lines += [summary_line(s), f"  {verdict_line(s, r)}"]
    lines += ["", f"{'PASS' if r.passed else 'FAIL'}: {r.reason}"]
    return "\n".join(lines) + "\n"


def _code_ids(ids: Sequence[str]) -> str:
    return ", ".join(f"`{i}`" for i in ids)


def format_markdown(r: GateResult) -> str:
    """The pull-request form: verdict heading, a table per config and slice, then the ids."""
    conf = f"{r.settings.confidence:.0%}"
    header = ["config", "slice", "n", measure_label(r.measure), "baseline", f"change ({conf} interval)", "newly failing",
              "newly passing", "verdict"]
    rows = []
    for s in r.slices:
        verdict = ("too small, not gated" if s.too_small else
                   ("**FAIL**: " + "; ".join(s.failures)) if s.failures else "PASS")
        rows.append([f"`{s.config}`", s.slice, str(s.n), f"{s.recall:.3f}{_count(s.hits, s)}",
                     f"{s.baseline_recall:.3f}{_count(s.baseline_hits, s)}",
                     f"{signed(s.change.estimate)} ({signed(s.change.low)} to {signed(s.change.high)})",
                     str(len(s.newly_failing)), str(len(s.newly_passing)), verdict])
    parts = [f"### {gate_title(r)}: {'PASS' if r.passed else 'FAIL'}", "", rules_text(r), "", table(header, rows)]
    changed = [s for s in r.slices if s.slice != ALL and (s.newly_failing or s.newly_passing)]
    if changed:
        parts += ["", "**Questions that changed**", ""]
        for s in changed:
            bits = [f"newly failing {_code_ids(s.newly_failing)}" if s.newly_failing else "",
                    f"newly passing {_code_ids(s.newly_passing)}" if s.newly_passing else ""]
            parts.append(f"- `{s.config}` {s.slice}: " + "; ".join(b for b in bits if b))
    parts += ["", f"**{'PASS' if r.passed else 'FAIL'}**: {r.reason}"]
    return "\n".join(parts) + "\n"


def to_junit(r: GateResult) -> str:
    """JUnit XML: one testsuite, one testcase per config and slice (``classname`` gate.CONFIG,
    ``name`` the slice); a failed slice has a ``failure`` (message: the reasons; text: the
    chapter's line and the baseline), a too-small one ``skipped``, and the others carry that
    text as ``system-out``. The verdict and its reason are suite properties. No times, so the
    same inputs give the same bytes."""
    suite = ET.Element("testsuite", {
        "name": "rag-ablation retrieval gate", "tests": str(len(r.slices)), "failures": str(len(r.failed)),
        "errors": "0", "skipped": str(len(r.not_gated))})
    props = ET.SubElement(suite, "properties")
    for name, value in (("against", r.against), ("verdict", "PASS" if r.passed else "FAIL"), ("reason", r.reason)):
        ET.SubElement(props, "property", {"name": name, "value": value})
    for s in r.slices:
        case = ET.SubElement(suite, "testcase", {"classname": f"gate.{s.config}", "name": s.slice})
        detail = f"{summary_line(s)}\n{_baseline_text(s, r.settings.confidence)}"
        if s.too_small:
            ET.SubElement(case, "skipped", {"message": f"too small: {s.n} questions, fewer than "
                                                       f"{r.rules.min_questions} (gate.min_questions)"})
        elif s.failures:
            failure = ET.SubElement(case, "failure", {"message": "; ".join(s.failures), "type": "regression"})
            failure.text = detail
        if not s.failures:
            ET.SubElement(case, "system-out").text = detail
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def to_metrics(r: GateResult) -> dict[str, Any]:
    """The numbers of ``metrics/gate.json`` (sorted keys when written; no times, no ids):
    ``pass``, ``comparable`` (1), ``k``, counts ``gated``, ``failed``, ``too_small``, and per
    ``configs.<config>.<slice>``: ``n``, ``hits``, ``recall``, ``baseline_hits``,
    ``baseline_recall`` (for a continuous gated measure, e.g. nDCG@10: the sum and the mean of
    it, under the same keys), ``change``, ``ci_low``, ``ci_high``, ``newly_failing``, ``newly_passing``
    (counts), ``floor`` (when the slice has one), ``too_small`` and ``gated`` (0/1), and for a
    gated slice ``pass`` and one 0/1 flag per rule: ``below_floor``, ``too_many_newly_failing``,
    ``below_margin``."""
    configs: dict[str, dict[str, Any]] = {}
    for s in r.slices:
        entry: dict[str, Any] = {
            "n": s.n, "hits": s.hits if is_binary(s.measure) else rounded(s.hits), "recall": rounded(s.recall),
            "baseline_hits": s.baseline_hits if is_binary(s.measure) else rounded(s.baseline_hits),
            "baseline_recall": rounded(s.baseline_recall),
            **interval_dict(s.change, {**CHANGE_INTERVAL, "estimate": "change"}, number=rounded),
            "newly_failing": len(s.newly_failing), "newly_passing": len(s.newly_passing),
            "too_small": int(s.too_small), "gated": int(s.gated)}
        if s.floor is not None:
            entry["floor"] = s.floor
        if s.gated:
            entry.update({"pass": int(s.passed), "below_floor": int(s.below_floor),
                          "too_many_newly_failing": int(s.too_many_newly_failing),
                          "below_margin": int(s.below_margin)})
        configs.setdefault(s.config, {})[s.slice] = entry
    return {"pass": int(r.passed), "comparable": 1, "k": r.rules.k, "gated": len(r.gated), "failed": len(r.failed),
            "too_small": len(r.not_gated), "configs": configs}


INCOMPARABLE_METRICS = {"pass": 0, "comparable": 0}
"""``metrics/gate.json`` when the two sides cannot be compared (the reason goes to stderr)."""
