"""Typed views of the metrics files the reports read, so each raw key is walked in one place.

The readers are the Markdown report (:mod:`rag_ablation.evaluation.report.markdown`,
:mod:`rag_ablation.evaluation.report.judge_report`), the HTML page's data
(:mod:`rag_ablation.evaluation.report.html_data`) and ``rag-ablation sweep-report``. The files:

- ``metrics/stats.json`` (the ``stats`` stage, ``statistics.stats.to_metrics``): config ->
  ``available``, ``n``, the measures, ``by_slice``, ``answers`` and, for a config other than the
  baseline, ``vs_baseline`` (the paired changes, rounded);
- ``metrics/judge_detail.json`` (``judge_eval``): ``configs`` (per answered config ``status``
  ``ok`` or a ``reason``), ``calibration``, ``canaries``, ``bias``, ``comparison`` (by hand
  grades), ``measure_comparison`` (on every answer, by token F1 and the primary judge's score)
  and ``grades``; ``metrics/judge.json`` is the same numbers without question ids and statuses, for
  ``dvc metrics``, and no report reads it;
- ``metrics/sweep.json`` (``rag-ablation sweep-report``, :mod:`rag_ablation.evaluation.report.sweep`);
- the latency files ``metrics/latency/NAME.json`` (``STEP.PERCENTILE`` in milliseconds; a retrieval
  file's ``total`` counts only when its ``timing`` is ``support.latency_rule.WARM``).

``core.io.read_output`` reads any of them (and the other JSON files a stage wrote that the HTML
page reads: runs, labels, answers) with one message naming the stage to rerun when it is
missing, not JSON or not an object. Every accessor reads a missing block as absent (``{}`` or None), never a KeyError, and returns
the file's own values, neither rounded again nor formatted. The one thing decided here is the
verdict of a change of ``stats.json`` (:func:`change_verdict`: ``comparison.verdict`` on the
file's rounded numbers), and which column ``stats.measure: auto`` stood for when the file was
written (:func:`stats_settings`).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rag_ablation.core.config import StatsConfig
from rag_ablation.evaluation.statistics.comparison import GRADED_MEASURES, P_KEYS, counts_in, resolve_measure, verdict
from rag_ablation.evaluation.statistics.stats import ANSWER_PROXY, LEXICAL_SUPPORT
from rag_ablation.support.latency_rule import warm_total_ms

Json = Mapping[str, Any]


# --------------------------------------------------------------------------- stats.json


def config_metrics(stats: Json, name: str) -> Json:
    """The config's entry of ``stats.json``; ``{}`` when the file has none."""
    return stats.get(name, {})


def available(stats: Json, name: str) -> bool:
    """The config has numbers: its entry's ``available`` is set (absent: not available)."""
    return bool(config_metrics(stats, name).get("available"))


def stats_settings(settings: StatsConfig, stats: Json, configs: Sequence[str]) -> StatsConfig:
    """``settings`` with ``measure`` the column the ``stats`` stage used: itself, or for ``auto``
    ``comparison.resolve_measure`` of the graded columns every available config of ``configs``
    reports (the stage's rule on the rows, read back from the file: nDCG@10 on graded qrels)."""
    shown = [config_metrics(stats, c) for c in configs if available(stats, c)]
    held = [column for name, column in GRADED_MEASURES.items() if shown and all(name in m for m in shown)]
    return replace(settings, measure=resolve_measure(settings.measure, held))


def baseline_comparisons(stats: Json, configs: Sequence[str], baseline: str) -> list[tuple[str, Json]]:
    """``(config, its vs_baseline block)`` for every available config of ``configs`` other than
    ``baseline`` that has one, in the order of ``configs``."""
    return [(name, stats[name]["vs_baseline"]) for name in configs
            if name != baseline and available(stats, name) and "vs_baseline" in stats[name]]


def vs_baseline(stats: Json, name: str) -> Json | None:
    """The config's ``vs_baseline`` block (None for the baseline or a config without one)."""
    return config_metrics(stats, name).get("vs_baseline")


def change_of(vs: Json | None, measure: str) -> Json | None:
    """The paired change of ``measure`` (a 0/1 column such as ``hit_at_5``, or ``rr_at_10``) in
    a ``vs_baseline`` block: ``delta``, ``ci_low``, ``ci_high``, ``p_holm``, ``family``, ``mde``
    and, for ``stats.measure``'s column, ``n``, its counts (``fixed`` / ``broken`` for a 0/1
    measure, ``better`` / ``worse`` for a continuous one: read them with ``comparison.counts_in``,
    which also reads a file written when both were ``fixed`` / ``broken``) and ``p_sign``
    (continuous: ``p_sign_flip``); None when the block or the measure is missing."""
    return (vs or {}).get(measure)


def change_verdict(change: Json) -> str:
    """``comparison.verdict`` of a change of ``stats.json``, on its rounded ``delta``,
    ``ci_low``, ``ci_high`` and ``p_holm``: real gain, real loss, within the noise, no change."""
    return verdict(change["delta"], change["ci_low"], change["ci_high"], change["p_holm"])


def answer_proxy(stats: Json, name: str) -> Json | None:
    """The judge-free answer proxy of a config (``value``, ``ci_low``, ``ci_high``, ``n``); None
    when its ``answers`` block is missing, not available or has no proxy."""
    answers = config_metrics(stats, name).get("answers", {})
    proxy = answers.get(ANSWER_PROXY)
    return proxy if answers.get("available") and proxy is not None else None


def lexical_support(stats: Json, name: str) -> Json | None:
    """A config's mean lexical support (``value``, ``ci_low``, ``ci_high``, ``n``,
    ``n_undefined``); None when its ``answers`` block is missing, not available or has none."""
    answers = config_metrics(stats, name).get("answers", {})
    support = answers.get(LEXICAL_SUPPORT)
    return support if answers.get("available") and support is not None else None


# --------------------------------------------------------------------------- judge_detail.json


def judged_entry(detail: Json, name: str) -> Json:
    """An answered config's entry of ``judge_detail.json``'s ``configs``; ``{}`` when absent."""
    return detail.get("configs", {}).get(name, {})


def is_judged(detail: Json, name: str) -> bool:
    """The config's answers were judged: its entry's ``status`` is ``ok``."""
    return judged_entry(detail, name).get("status") == "ok"


def not_judged_reason(detail: Json, name: str) -> Any:
    """The ``reason`` judge_eval recorded for a config it did not judge (None: none recorded)."""
    return judged_entry(detail, name).get("reason")


def hand_accuracy(detail: Json, name: str) -> Json | None:
    """The config's accuracy by hand grades (``estimate``, ``low``, ``high``, ``n``); None
    without grades."""
    return judged_entry(detail, name).get("accuracy", {}).get("hand")


def failure_table(detail: Json, name: str, source: str) -> Json:
    """Where the config's answers fail, by ``source`` (``hand`` or ``judge``): category ->
    ``count``, ``share`` and ``ids``, plus ``n``; ``{}`` when absent."""
    return judged_entry(detail, name).get("failures", {}).get(source, {})


def calibration(detail: Json, judge: str) -> Json:
    """A judge's calibration against the hand grades; ``{}`` when absent."""
    return detail.get("calibration", {}).get(judge, {})


def is_calibrated(entry: Json) -> bool:
    """A calibration entry has numbers (a ``confusion`` matrix), not only a ``reason``."""
    return "confusion" in entry


def canary_results(detail: Json, judge: str) -> Json | None:
    """A judge's canaries, kind -> result (``accepted``, ``low``, ``high``, ``n``, ``invalid``,
    ``expected_accept``); None when they were not run (no entry, or one with a ``status``)."""
    entry = detail.get("canaries", {}).get(judge)
    return None if not entry or "status" in entry else entry


def canaries_not_run_reason(detail: Json, judge: str) -> str:
    """Why a judge has no canaries: the recorded ``reason``, else ``not run``."""
    return (detail.get("canaries", {}).get(judge) or {}).get("reason") or "not run"


def length_bias(detail: Json) -> Json:
    """The position and length test (``pairs``, ``consistent``, ``first_slot``, ... when run,
    else ``status`` and ``reason``); ``{}`` when absent."""
    return detail.get("bias", {}).get("length", {})


def length_bias_ran(length: Json) -> bool:
    """The position and length test has numbers (``pairs``)."""
    return "pairs" in length


@dataclass(frozen=True)
class AnswerDifference:
    """A config compared with the baseline on the questions hand-graded in both: ``n`` of them,
    the two accuracies, the difference ``delta`` with its paired bootstrap interval
    (``method``: ``cluster-...`` when it resampled source documents), the counts and ids of the
    questions it ``fixed`` (wrong in the baseline, right here) and ``broke``, the exact McNemar p."""

    n: int
    baseline_accuracy: float
    accuracy: float
    delta: float
    ci_low: float
    ci_high: float
    method: str | None
    fixed: int
    broken: int
    fixed_ids: tuple[str, ...]
    broken_ids: tuple[str, ...]
    p_mcnemar: float

    @property
    def clustered(self) -> bool:
        """The interval resampled whole source documents (``stats.cluster``)."""
        return str(self.method or "").startswith("cluster")


@dataclass(frozen=True)
class AnswerComparisonRow:
    """One answered config of the comparison: its ``difference``, or None when judge_eval could
    not compare it (then ``status`` and ``reason`` as recorded, either may be None)."""

    config: str
    difference: AnswerDifference | None
    status: Any = None
    reason: Any = None


@dataclass(frozen=True)
class AnswerComparison:
    """judge_eval's ``comparison``: each answered config against ``baseline``, in file order."""

    baseline: str
    rows: tuple[AnswerComparisonRow, ...]

    @property
    def clustered(self) -> bool:
        """Some compared config's interval resampled source documents."""
        return any(r.difference is not None and r.difference.clustered for r in self.rows)


def answer_comparison(detail: Json) -> AnswerComparison | None:
    """The answer configs compared by hand grades (:class:`AnswerComparison`); None when the
    file has no comparison or it lists no config (fewer than two answered configs)."""
    comp = detail.get("comparison") or {}
    if not comp.get("configs"):
        return None
    rows = []
    for name, e in comp["configs"].items():
        if e.get("status") != "ok":
            rows.append(AnswerComparisonRow(name, None, e.get("status"), e.get("reason")))
            continue
        d = e["difference"]
        rows.append(AnswerComparisonRow(name, AnswerDifference(
            n=e["n"], baseline_accuracy=e["baseline_accuracy"], accuracy=e["accuracy"], delta=d["estimate"],
            ci_low=d["low"], ci_high=d["high"], method=d.get("method"), fixed=e["fixed"], broken=e["broken"],
            fixed_ids=tuple(e["fixed_ids"]), broken_ids=tuple(e["broken_ids"]), p_mcnemar=e["p_mcnemar"]),
            e.get("status"), e.get("reason")))
    return AnswerComparison(baseline=comp["baseline"], rows=tuple(rows))


@dataclass(frozen=True)
class MeasureRow:
    """One answered config against the baseline on a per-answer measure (judge_eval's
    ``measure_comparison``): the paired ``n``, both means, the change with its interval, the
    questions ``better`` / ``worse`` (by more than ``margin`` for a continuous measure), the
    test's unadjusted ``p`` and its Holm adjustment, the ``verdict`` (:func:`change_verdict`) and
    the ids of the questions better and worse (empty in a file from before they were kept); or
    only ``reason`` when it was not compared."""

    config: str
    n: int | None = None
    baseline_mean: float | None = None
    mean: float | None = None
    delta: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    better: int | None = None
    worse: int | None = None
    margin: float | None = None
    p: float | None = None
    p_holm: float | None = None
    verdict: str | None = None
    reason: str | None = None
    better_ids: tuple[str, ...] = ()
    worse_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class MeasureComparison:
    """The answered configs against ``baseline`` on one per-answer ``measure`` (its ``label`` and
    ``test``: ``sign`` or ``sign-flip``): ``rows`` in file order, or ``reason`` when the measure
    was not compared (some answer lacks it). ``undefined``: (config, answerable answers without a
    value) of a measure compared where both answers have one (lexical support), in file order."""

    measure: str
    label: str
    test: str | None
    baseline: str
    rows: tuple[MeasureRow, ...]
    reason: str | None = None
    undefined: tuple[tuple[str, int], ...] = ()


def measure_comparisons(detail: Json) -> tuple[MeasureComparison, ...]:
    """judge_eval's ``measure_comparison`` (``statistics.answer_verdicts``), one
    :class:`MeasureComparison` per measure in the block's ``order`` (then any other, in file
    order); empty without the block (one answered config, or a file from before it)."""
    block = detail.get("measure_comparison") or {}
    measures = block.get("measures") or {}
    out = []
    order = [m for m in block.get("order", ()) if m in measures]
    for measure in order + [m for m in measures if m not in order]:
        e = measures[measure]
        if e.get("status") != "ok":
            out.append(MeasureComparison(measure, e.get("label") or measure, e.get("test"), block["baseline"], (),
                                         e.get("reason") or e.get("status") or "not compared"))
            continue
        rows = []
        for name, c in e["configs"].items():
            change = c.get(measure)
            if c.get("status") != "ok" or not change:
                rows.append(MeasureRow(name, reason=c.get("reason") or c.get("status") or "not compared"))
                continue
            p = change[P_KEYS[e["test"]]]
            rows.append(MeasureRow(name, n=c["n"], baseline_mean=c.get("baseline_mean"), mean=c.get("mean"),
                                   delta=change["delta"], ci_low=change["ci_low"], ci_high=change["ci_high"],
                                   better=counts_in(change)[0], worse=counts_in(change)[1], margin=change.get("margin"),
                                   p=p, p_holm=change["p_holm"], verdict=change_verdict(change),
                                   better_ids=tuple(c.get("better_ids", ())), worse_ids=tuple(c.get("worse_ids", ()))))
        out.append(MeasureComparison(measure, e.get("label") or measure, e.get("test"), block["baseline"], tuple(rows),
                                     undefined=tuple((c, int(n)) for c, n in (e.get("undefined") or {}).items())))
    return tuple(out)


# --------------------------------------------------------------------------- sweep.json


SWEEP_RANKING_FIELDS = ("letter", "value", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "beats",
                        "in_tie_set", "p95_ms", "pareto")
"""The fields of a candidate's ``ranking`` entry that a reader of the summary shows."""


@dataclass(frozen=True)
class SweepView:
    """The sweep summary's headline and its ranking: ``rows`` are ``{"candidate": name, FIELD:
    value}`` for :data:`SWEEP_RANKING_FIELDS` (None where missing), best rank first, then by
    name (a candidate without an integer rank last)."""

    rows: tuple[dict[str, Any], ...]
    measure: Any
    baseline: Any
    chosen_on: Any
    questions: Any
    winner: Any
    tie_set_size: Any


def sweep_view(sweep: Json | None) -> SweepView | None:
    """:class:`SweepView` of ``sweep.json``'s content; None without a summary or a ``ranking``."""
    if not sweep or not isinstance(sweep.get("ranking"), Mapping):
        return None
    rows = [{"candidate": name, **{k: r.get(k) for k in SWEEP_RANKING_FIELDS}} for name, r in sweep["ranking"].items()]
    rows.sort(key=lambda r: (r["rank"] if isinstance(r["rank"], int) else 10**9, r["candidate"]))
    return SweepView(rows=tuple(rows), measure=sweep.get("measure"), baseline=sweep.get("baseline"),
                     chosen_on=sweep.get("chosen_on"), questions=sweep.get("questions"),
                     winner=(sweep.get("winner") or {}).get("name"), tie_set_size=sweep.get("tie_set_size"))


# --------------------------------------------------------------------------- latency files


def _latency_json(text: str) -> Json:
    """A latency file's content; ``{}`` when the text is not a JSON object."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, Mapping) else {}


def latency_in(text: str, step: str, percentile: str) -> float | None:
    """``STEP.PERCENTILE`` (milliseconds) of a latency file's text; None when the value is missing
    or the text unreadable: latency files are leaf records of timing, never inputs (also
    ``rag-ablation sweep-report``'s reader, on any side's copy of the file)."""
    block = _latency_json(text).get(step)
    value = block.get(percentile) if isinstance(block, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def retrieval_p95_in(text: str) -> float | None:
    """The P95 retrieval latency per query (ms) of a retrieval latency file's text, only when it
    was timed by the rule every config shares (``support.latency_rule.warm_total_ms``); None otherwise
    (timed by an older rule, missing, unreadable). The report page and ``sweep-report`` both read
    retrieval latency here, so their Pareto fronts use one rule."""
    return warm_total_ms(_latency_json(text))


def _file_text(folder: Path, name: str) -> str | None:
    path = folder / f"{name}.json"
    try:
        return path.read_text(encoding="utf-8") if path.is_file() else None
    except UnicodeDecodeError:
        return None


def latency_value(folder: Path, name: str, step: str, percentile: str) -> float | None:
    """``latency_in`` of ``folder/NAME.json``; None when the file is missing or not UTF-8."""
    text = _file_text(folder, name)
    return None if text is None else latency_in(text, step, percentile)


def retrieval_p95(folder: Path, name: str) -> float | None:
    """``retrieval_p95_in`` of ``folder/NAME.json``; None when the file is missing or not UTF-8."""
    text = _file_text(folder, name)
    return None if text is None else retrieval_p95_in(text)
