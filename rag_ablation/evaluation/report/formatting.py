"""Table cells and Markdown tables, shared by every report and command output.

One place for how a number is written, so the report (``rag_ablation.evaluation.report.markdown``,
``judge_report``), the revision diff (``rag_ablation.evaluation.report.diff_text``), the sweep
summary (``rag_ablation.evaluation.report.sweep``) and the retrieval gate
(``rag_ablation.evaluation.gate.formats``) print the same value the same way.

Two spellings of some values on purpose (each keeps the output it always had): the retrieval
numbers of ``stats.json`` never miss (:func:`num`, :func:`share`, :func:`interval` of a
``ci_low`` / ``ci_high`` entry), while the graded-answer numbers of ``judge_detail.json`` may
be None, written ``n/a`` (:func:`num_or_na`, :func:`percent` with one decimal, and
:func:`with_interval` of an estimate and its bounds).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rag_ablation.evaluation.statistics.comparison import counts_in


def num(x: float) -> str:
    """A value in [0, 1] with three decimals: ``0.766``."""
    return f"{x:.3f}"


def signed(x: float) -> str:
    """A change with its sign: ``+0.045``, ``-0.013``, ``+0.000``."""
    return f"{x:+.3f}"


def interval(d: Mapping[str, float], fmt=num) -> str:
    """``ci_low`` to ``ci_high`` of a metrics entry: ``0.695 to 0.831``."""
    return f"{fmt(d['ci_low'])} to {fmt(d['ci_high'])}"


def p_value(p: float) -> str:
    """``<0.001`` below one in a thousand, else three decimals."""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def points(mde: float) -> str:
    """A minimum detectable effect in percentage points: ``0.0712`` -> ``7.1 points``."""
    return f"{100 * mde:.1f} points"


def detectable(change: object) -> str:
    """The "could detect" cell of a 0/1 change: its MDE in points, or a note when the two
    sides never disagree (the MDE from an observed disagreement of 0 would read 0 points).
    ``change`` is a ``MeasureChange`` or a metrics entry with its counts (``fixed`` / ``broken``,
    or ``better`` / ``worse`` for a continuous measure: ``comparison.counts_in``) and ``mde``."""
    if isinstance(change, Mapping):
        (fixed, broken), mde = counts_in(change), change["mde"]
    else:
        fixed, broken, mde = change.counts.fixed, change.counts.broken, change.mde  # type: ignore[attr-defined]
    return "n/a: no question differs" if fixed + broken == 0 else points(mde)


def share(x: float) -> str:
    """A share as a whole percentage: ``0.437`` -> ``44%``."""
    return f"{100 * x:.0f}%"


def num_or_na(x: float | None) -> str:
    """:func:`num` (three decimals), or ``n/a`` for None: ``0.113``."""
    return "n/a" if x is None else num(x)


def percent(x: float | None) -> str:
    """A share as a percentage with one decimal, or ``n/a``: ``0.4375`` -> ``43.8%``
    (:func:`share` is the whole-percent form)."""
    return "n/a" if x is None else f"{100 * x:.1f}%"


def with_interval(estimate: float | None, low: float | None, high: float | None,
                  fmt: Callable[[float], str] = num_or_na) -> str:
    """``0.113 (0.060 to 0.200)``: the estimate and its bounds, each written by ``fmt``; the
    estimate alone when a bound is None; ``n/a`` when there is no estimate."""
    if estimate is None:
        return "n/a"
    if low is None or high is None:
        return fmt(estimate)
    return f"{fmt(estimate)} ({fmt(low)} to {fmt(high)})"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; ``|`` inside a cell is escaped."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return "\n".join([line(header), line(["---"] * len(header)), *(line(r) for r in rows)])
