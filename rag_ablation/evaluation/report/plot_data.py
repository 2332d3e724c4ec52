"""Rows for DVC plots (``metrics/plots/*.json``), built from a :class:`StatsResult`.

Each function returns a flat list of dicts, one per bar, whisker or point, in params order, for
the templates in ``.dvc/plots/``. Every bar row has a ``panel`` (the facet it is drawn in: a
measure, a slice or a comparison) so one template serves every file, and ``order`` /
``panel_order`` (0-based positions of the config in params and of the panel) because a chart's
axes otherwise sort names alphabetically:

- :func:`config_bars`: per config and measure, ``value``, ``ci_low``, ``ci_high`` and ``n``;
- :func:`slice_bars`: per config and slice, the recall of ``stats.measure`` with its interval,
  ``n`` and ``too_small`` (0/1);
- :func:`change_bars`: per compared config, the paired change of ``stats.measure`` and of
  RR@10 against the baseline with its interval, the Holm p and ``real`` (0/1);
- :func:`subsample_points`: per config and number of questions, the share of draws in which
  its change against the baseline on all questions disappears or turns around (``value``, 0 to
  1: a gain lost or reversed, a loss gone or turned into a gain; ``change`` says which).

An unavailable config keeps one row per panel with ``available: 0`` and no numbers, so it is
named on the axis without a bar. Floats are rounded like the metrics file.
"""
from __future__ import annotations

from typing import Any

from rag_ablation.evaluation.statistics.comparison import (  # LABELS, measure_label: read from here too
    LABELS,
    MEASURES,
    RECALL_OF,
    RR_COLUMN,
    SIGN,
    SIGN_FLIP,
    TESTS,
    is_binary,
    is_real,
    measure_label,
    rounded,
    rounded_p,
)
from rag_ablation.evaluation.statistics.inference import Interval, interval_dict
from rag_ablation.evaluation.statistics.stats import (METRICS_INTERVAL, StatsResult, change_direction, turned_share,
                                                     vanished_share)



def count_words(measure: str, margin: float) -> tuple[str, str]:
    """What the fixed and broken counts of ``measure`` are called: ``fixed`` / ``broken`` for a
    0/1 column, ``better by >M`` / ``worse by >M`` (M the margin) for a continuous one."""
    if is_binary(measure):
        return "fixed", "broken"
    return f"better by >{margin:g}", f"worse by >{margin:g}"


def test_name(measure: str) -> str:
    """The paired test of ``measure`` as a column header names it: ``sign`` or ``sign-flip``."""
    return TESTS[measure]


TEST_TEXTS = {SIGN: "exact sign test (0/1 measure: the questions fixed against those broken)",
              SIGN_FLIP: "paired sign-flip permutation test (continuous measure: the per-question differences)"}
"""How the reports name a paired test in prose, where a verdict is explained: report.md's paired
changes and report.html's notes (passed in the page data) read it here."""


def test_text(measure: str) -> str:
    """The paired test of ``measure`` in prose (:data:`TEST_TEXTS`)."""
    return TEST_TEXTS[TESTS[measure]]

FILES = ("configs.json", "slices.json", "changes.json", "subsample.json")
"""The plot files the statistics stage writes, in this order of :func:`all_plots`."""


def _bar(config: str, panel: str, interval: Interval, **extra: Any) -> dict[str, Any]:
    """One bar: ``interval`` spelled as in the metrics file (``value``, ``ci_low``, ``ci_high``, rounded)."""
    return {"config": config, "panel": panel, "available": 1,
            **interval_dict(interval, METRICS_INTERVAL, number=rounded), **extra}


def _ordered(rows: list[dict[str, Any]], configs: list[str]) -> list[dict[str, Any]]:
    """``rows`` with ``order`` (the config's position in ``configs``) and ``panel_order`` (the
    position of the row's panel in order of first appearance)."""
    panels: dict[str, int] = {}
    for row in rows:
        panels.setdefault(row["panel"], len(panels))
    return [{**row, "order": configs.index(row["config"]), "panel_order": panels[row["panel"]]} for row in rows]


def config_bars(result: StatsResult) -> list[dict[str, Any]]:
    """One row per config and measure of :data:`MEASURES` (module docstring)."""
    rows = []
    for measure in MEASURES:
        for c in result.configs:
            if c.overall is None or measure not in c.overall.measures:
                rows.append({"config": c.name, "panel": LABELS[measure], "available": 0})
                continue
            iv = c.overall.measures[measure]
            rows.append(_bar(c.name, LABELS[measure], iv, n=iv.n))
    return _ordered(rows, [c.name for c in result.configs])


def slice_bars(result: StatsResult) -> list[dict[str, Any]]:
    """One row per slice and config for the recall of ``stats.measure`` (module docstring).
    The panel names the slice with its number of questions (from the first config that has the
    slice), and says when it is too small."""
    measure = RECALL_OF[result.settings.measure]
    panels: dict[str, str] = {}
    for c in result.configs:
        for s, group in sorted(c.by_slice.items()):
            flag = ", too small to decide" if group.too_small else ""
            panels.setdefault(s, f"{s}: {LABELS[measure]} (n={group.n}{flag})")
    rows = []
    for s, panel in sorted(panels.items()):
        for c in result.configs:
            in_slice = c.by_slice.get(s)
            if in_slice is None or measure not in in_slice.measures:
                rows.append({"config": c.name, "panel": panel, "available": 0})
                continue
            iv = in_slice.measures[measure]
            rows.append(_bar(c.name, panel, iv, n=in_slice.n, too_small=int(in_slice.too_small)))
    return _ordered(rows, [c.name for c in result.configs])


def change_bars(result: StatsResult) -> list[dict[str, Any]]:
    """One row per compared config for the measure's change and one for RR@10's (one panel
    when the measure is RR@10)."""
    measure = result.settings.measure
    rows = []
    for name, label in {measure: measure_label(measure), RR_COLUMN: LABELS["mrr_at_10"]}.items():
        panel = f"change in {label} vs {result.baseline}"
        for c in result.comparisons:
            change = c.binary if name == measure else c.rr
            if change is None:
                rows.append({"config": c.new, "panel": panel, "available": 0})
                continue
            iv = change.delta
            rows.append(_bar(c.new, panel, iv, n=c.n, p_holm=rounded_p(change.p_holm), real=int(is_real(change))))
    return _ordered(rows, [c.new for c in result.comparisons])


def subsample_direction(result: StatsResult, name: str) -> str:
    """The direction of config ``name``'s change on all the subsampled questions
    (``stats.change_direction``): from the subsample row with every question, else from its
    paired change against the baseline."""
    sub = result.subsample
    full = next((row for row in sub.rows if row.n == sub.total), None) if sub is not None else None
    if full is not None and name in full.lost_share:
        return change_direction(full.lost_share[name], full.reversed_share[name])
    comparison = result.comparison(name)
    delta = comparison.binary.delta.estimate if comparison is not None and comparison.binary is not None else 0.0
    return change_direction(delta=delta)


def subsample_points(result: StatsResult) -> list[dict[str, Any]]:
    """One point per config and subsample size: ``value``, the share of draws where its change
    on all questions vanishes or turns around (a gain lost or reversed, a loss gone or turned
    into a gain: ``stats.vanished_share``), ``reversed`` the share where it turns around, and
    ``change`` the direction (gain, loss, no change)."""
    sub = result.subsample
    if sub is None:
        return []
    order = [c.new for c in result.comparisons]
    out = []
    for name in order:
        direction = subsample_direction(result, name)
        for row in sub.rows:
            if name not in row.lost_share:
                continue
            lost, rev = row.lost_share[name], row.reversed_share[name]
            out.append({"config": name, "n": row.n, "value": rounded(vanished_share(lost, rev, direction)),
                        "reversed": rounded(turned_share(lost, rev, direction)), "change": direction})
    return out


def all_plots(result: StatsResult) -> dict[str, list[dict[str, Any]]]:
    """File name (:data:`FILES`) -> its rows."""
    builders = (config_bars, slice_bars, change_bars, subsample_points)
    return {name: build(result) for name, build in zip(FILES, builders)}
