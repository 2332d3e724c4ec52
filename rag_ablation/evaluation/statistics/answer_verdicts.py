"""Answered configs compared on every answer, by a per-answer measure (``judge_eval``'s
``measure_comparison`` in ``metrics/judge_detail.json`` and ``metrics/judge.json``).

The hand-graded comparison (``judges.judge_eval.answer_comparison``) pairs only the questions
graded for both configs. This one pairs every answerable question answered by both, on a
per-answer measure, with the same test as the ``stats`` stage and ``rag-ablation diff``
(``comparison.compare``): for a continuous measure the change of the mean with its paired
bootstrap interval, the questions better / worse by more than ``stats.margin`` and the paired
sign-flip test; for a 0/1 one the fixed / broken counts and the exact sign test. Holm adjusts
the p-values of one measure over the compared configs (``comparison.with_holm``).

Every answered config is compared with the baseline: ``stats.baseline`` when it is answered,
else the first answered config (as the hand-graded comparison). The measures
(:func:`verdict_measures`): ``token_f1``, which every answer has and no judge decides, then the
score of the primary judge (the one that agrees best with the hand grades; its column in
:data:`SCORE_COLUMNS`) when that is another column; with ``lexical_support`` (when some answer
has one) between them. A measure some compared answer lacks (a judge that gave no score there; no
hand grades to fit the combined judge on) is ``unavailable`` with the reason, never compared on
the answers that have it. Lexical support is the exception (:data:`DEFINED_ONLY`): it is
undefined by design for refusals and answers without content words, so it is compared on the
questions where both answers have one, and each config's answers without one are counted
(``undefined``); a question where only one side has one is on that side only, as a question one
side did not answer. It is a change in wording taken from the passages shown, not in support.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from rag_ablation.core.config import StatsConfig
from rag_ablation.evaluation.statistics.comparison import (
    LEXICAL_SUPPORT,
    TESTS,
    Row,
    answerable,
    column_values,
    compare,
    comparison_dict,
    measure_label,
    pair,
    rounded,
    rows_by_config,
    with_holm,
)

SCORE_COLUMNS: dict[str, str] = {"llm": "llm_score", "combined": "combined_score", "token_f1": "token_f1",
                                 "contains": "contains_reference"}
"""A judge -> the per-answer column holding its score: the judge score columns of
``metrics/scores/verdicts.csv`` (``comparison.JUDGE_SCORES``), and for the judge-free judges
their own answer measures (``token_f1``; ``contains`` is ``contains_reference``, 0/1)."""

JUDGE_FREE = "token_f1"
"""The measure every answer has, compared first whatever the judges say."""

DEFINED_ONLY = frozenset({LEXICAL_SUPPORT})
"""Measures compared on the questions where both answers have a value (module docstring)."""


def verdict_measures(primary: str | None, *, lexical_support: bool = False) -> tuple[str, ...]:
    """The measures compared: :data:`JUDGE_FREE`, then ``lexical_support`` when asked (some
    answer has one), then the primary judge's score column (:data:`SCORE_COLUMNS`) when there is
    a primary judge and its column is another. An unknown judge name raises KeyError listing the
    known ones."""
    free = (JUDGE_FREE, LEXICAL_SUPPORT) if lexical_support else (JUDGE_FREE,)
    if primary is None:
        return free
    if primary not in SCORE_COLUMNS:
        raise KeyError(f"no score column for judge {primary!r}; known judges: {', '.join(SCORE_COLUMNS)}")
    column = SCORE_COLUMNS[primary]
    return free if column == JUDGE_FREE else (*free, column)


def baseline_of(configs: Sequence[str], settings: StatsConfig) -> str:
    """``settings.baseline`` when it is among ``configs``, else the first of ``configs``."""
    return settings.baseline if settings.baseline in configs else configs[0]


def _empty_cells(rows: Sequence[Row], column: str) -> dict[str, int]:
    """Config -> how many of its answerable rows have no ``column`` value (configs with none left out)."""
    out: dict[str, int] = {}
    for r in answerable(rows):
        if r.get(column) is None:
            out[str(r["config"])] = out.get(str(r["config"]), 0) + 1
    return out


def _means(base_rows: Sequence[Row], new_rows: Sequence[Row], column: str) -> tuple[float, float]:
    """The means of ``column`` on the paired questions (``comparison.pair``): baseline, config."""
    p = pair(base_rows, new_rows)
    return float(np.mean(column_values(p.base, column))), float(np.mean(column_values(p.new, column)))


def measure_comparison(rows: Iterable[Row], configs: Sequence[str], *, measures: Sequence[str],
                       settings: StatsConfig) -> dict[str, Any]:
    """Every config of ``configs`` but the baseline (:func:`baseline_of`) against it on each of
    ``measures`` (module docstring). ``rows``: per-answer rows (``config``, ``id``, ``slice``,
    ``doc``, ``answerable`` and the measure columns; rows of other configs are ignored).

    Returns ``{}`` with fewer than two configs, else ``{"baseline", "order", "measures"}``:
    ``order`` lists ``measures`` as given (the file's keys are sorted), and ``measures`` maps each
    to ``{"status": "unavailable", "label", "reason"}`` when some answerable row of a compared
    config lacks it (not for :data:`DEFINED_ONLY` measures: those compare the rows that have a
    value and add ``undefined``, config -> its answerable rows without one, every config listed),
    else to ``{"status": "ok", "label", "test", "configs": {config: ...}}``:
    per config ``comparison.comparison_dict`` (paired ``n``; the measure's change, counts, p,
    Holm p, MDE and ``real``; per slice) with ``baseline_mean`` and ``mean`` on the paired
    questions and the ids (sorted) of the questions ``better_ids`` / ``worse_ids`` (by more than
    ``stats.margin`` for a continuous measure; fixed / broken for a 0/1 one), or
    ``{"status": "unavailable", "reason"}`` for a config that shares no answerable question with
    the baseline.
    """
    if len(configs) < 2:
        return {}
    by_config = rows_by_config((r for r in rows if r["config"] in configs), where="answer scores")
    base = baseline_of(configs, settings)
    others = [c for c in configs if c != base]
    out: dict[str, Any] = {"baseline": base, "order": list(measures), "measures": {}}
    compared = [r for c in configs for r in by_config.get(c, ())]
    for measure in measures:
        empty = _empty_cells(compared, measure)
        if measure in DEFINED_ONLY:
            defined = {c: [r for r in rs if r.get(measure) is not None] for c, rs in by_config.items()}
            out["measures"][measure] = _compared(measure, defined, base, others, settings,
                                                 none=f"no answerable question where both {base} and {{new}} "
                                                      f"have {measure_label(measure)}")
            out["measures"][measure]["undefined"] = {c: empty.get(c, 0) for c in configs}
            continue
        if empty:
            where = ", ".join(f"{n} answer(s) of {c}" for c, n in sorted(empty.items()))
            out["measures"][measure] = {"status": "unavailable", "label": measure_label(measure),
                                        "reason": f"{measure_label(measure)} is empty for {where}"}
            continue
        out["measures"][measure] = _compared(measure, by_config, base, others, settings,
                                             none=f"no answerable question answered by both {base} and {{new}}")
    return out


def _compared(measure: str, by_config: Mapping[str, Sequence[Row]], base: str, others: Sequence[str],
              settings: StatsConfig, *, none: str) -> dict[str, Any]:
    """One ``ok`` entry of :func:`measure_comparison`'s ``measures``: every config of ``others``
    against ``base`` on ``measure`` over ``by_config``'s rows; ``none`` (formatted with ``new``)
    is the reason for a config that shares no answerable question with the baseline."""
    comparisons = with_holm([compare(by_config.get(base, ()), by_config.get(c, ()), base=base, new=c,
                                     measure=measure, settings=settings) for c in others])
    entries: dict[str, Any] = {}
    for c in comparisons:
        if not c.n:
            entries[c.new] = {"status": "unavailable", "reason": none.format(new=c.new)}
            continue
        before, after = _means(by_config[base], by_config[c.new], measure)
        entries[c.new] = {"status": "ok", "baseline_mean": rounded(before), "mean": rounded(after),
                          "better_ids": list(c.fixed_ids), "worse_ids": list(c.broken_ids), **comparison_dict(c)}
    return {"status": "ok", "label": measure_label(measure), "test": TESTS[measure], "configs": entries}

