"""The ``stats`` stage's analysis: intervals per config, comparisons with the baseline, subsampling
and answer proxies over per-question rows, flattened into ``metrics/stats.json``.

Rows and settings are those of :mod:`rag_ablation.evaluation.statistics.comparison` (per-question
rows as ``rag_ablation.evaluation.scoring.scores`` reads them, the ``stats`` block of params); the
paired comparisons themselves are computed there.

Per config, overall and per slice (:func:`summarize_config`):
    recall@1/5/10 (the means of ``hit_at_1/5/10``) and MRR@10 (the mean of ``rr_at_10``), each
    with a bootstrap interval (``stats.method``, ``stats.resamples`` draws seeded with
    ``stats.seed``, at ``stats.confidence``). With ``stats.cluster`` the bootstrap resamples
    whole source documents (``doc``) and the design effect (variance ratio cluster / plain)
    is kept beside each interval; a group with fewer than two documents falls back to
    resampling questions and has no design effect. A slice with ``n < stats.min_slice``
    questions is flagged ``too_small`` (its interval is still given).

Subsampling (:func:`subsample_gains`): on the questions shared by the baseline and every
compared config, how the baseline's measure spreads and how often each config's change against
the baseline vanishes or turns around when only n questions are drawn
(``rag_ablation.evaluation.statistics.inference.subsample``): a gain lost or reversed, a loss
gone or turned into a gain (:func:`change_direction`, :func:`vanished_share`).

Answers (:func:`answer_accuracy`): the share of answers containing the reference answer, with a
Wilson interval and its n. It is a judge-free proxy for accuracy, not a judged accuracy. Beside
it, the mean lexical support (``rag_ablation.evaluation.scoring.grounding``: the share of an
answer's content words found in the passages its prompt showed) over the answerable questions
whose answer has one, with a bootstrap interval as the retrieval measures' (``stats.cluster``
included), and how many answered answerable questions have none (``n_undefined``: refusals,
answers without content words, unknown passages). It measures wording taken from the passages,
not support: no threshold, no verdict.

:func:`analyze` runs all of it for the configs named in params (in params order; a config
without rows is unavailable and carries no numbers), comparing each with the baseline
(:func:`rag_ablation.evaluation.statistics.comparison.compare`, Holm-adjusted), and
:func:`to_metrics` flattens the result into the nested numbers-only dict of
``metrics/stats.json``; :func:`audit_entry` adds a config's measures under the audited labels.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rag_ablation.core.config import AUTO_MEASURE, StatsConfig
from rag_ablation.evaluation.statistics import inference as stats
from rag_ablation.evaluation.statistics.comparison import (
    DEFAULT_MEASURE,
    Comparison,
    Row,
    answerable,
    bootstrap_options,
    cluster_labels,
    column_values,
    compare,
    comparison_dict,
    measure_of_rows,
    measures_of,
    rounded,
    rows_by_config,
    with_holm,
)
from rag_ablation.evaluation.statistics.inference import (
    METRICS_INTERVAL,
    Interval,
    SubsampleRow,
    interval_dict,
)

ANSWER_PROXY = "contains_reference"
"""The judge-free answer measure reported with a Wilson interval."""

LEXICAL_SUPPORT = "lexical_support"
"""The per-answer lexical support column, reported as a mean with a bootstrap interval."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Group:
    """One config's measures on one set of questions (all of them, or one slice).

    ``measures`` maps each name of :data:`MEASURES` to its interval; it is empty when ``n`` is
    0. ``design_effects`` holds the same names only when the cluster bootstrap was used.
    ``too_small`` is ``n < min_slice`` (always False for the overall group).
    """

    n: int
    too_small: bool
    measures: Mapping[str, Interval]
    design_effects: Mapping[str, float]


@dataclass(frozen=True)
class ConfigResult:
    """A config's intervals, overall and per slice (slices sorted by name). ``available`` is
    False when the config has no scored rows; then ``overall`` is None and ``by_slice`` empty."""

    name: str
    available: bool
    n_unanswerable_excluded: int
    overall: Group | None
    by_slice: Mapping[str, Group]


@dataclass(frozen=True)
class SubsampleResult:
    """Subsampling of ``measure`` on ``total`` questions shared by ``baseline`` and every config
    in the rows' shares (rows sorted by n; the last has ``n == total``)."""

    measure: str
    baseline: str
    total: int
    rows: tuple[SubsampleRow, ...]


@dataclass(frozen=True)
class AnswerResult:
    """A config's judge-free answer proxy: the share of answerable questions whose answer
    contains the reference, with a Wilson interval (``interval.n`` is the number answered).
    ``interval`` is None when the config has no answer rows for answerable questions.
    ``support``: the mean lexical support with its bootstrap interval over the answerable rows
    that have one (None when none has), and ``support_undefined`` the answerable rows without."""

    config: str
    interval: Interval | None
    support: Interval | None = None
    support_undefined: int = 0


@dataclass(frozen=True)
class StatsResult:
    """Everything :func:`analyze` computes; ``configs`` and ``comparisons`` follow params order."""

    settings: StatsConfig
    baseline: str
    configs: tuple[ConfigResult, ...]
    comparisons: tuple[Comparison, ...]
    subsample: SubsampleResult | None
    answers: tuple[AnswerResult, ...]

    def config(self, name: str) -> ConfigResult | None:
        return next((c for c in self.configs if c.name == name), None)

    def comparison(self, name: str) -> Comparison | None:
        return next((c for c in self.comparisons if c.new == name), None)


# ----------------------------------------------------------------------- intervals


def summarize_group(rows: Sequence[Row], settings: StatsConfig, *, min_n: int = 0) -> Group:
    """Intervals of every measure of :data:`MEASURES` over answerable ``rows`` (module
    docstring), and of the graded measures where the rows carry them (``measures_of``);
    ``too_small`` is ``len(rows) < min_n``."""
    n = len(rows)
    if n == 0:
        return Group(0, min_n > 0, {}, {})
    clusters = cluster_labels(rows, settings)
    measures: dict[str, Interval] = {}
    effects: dict[str, float] = {}
    for name, column in measures_of(rows).items():
        values = column_values(rows, column)
        measures[name] = stats.bootstrap_mean_ci(values, clusters=clusters, **bootstrap_options(settings))
        if clusters is not None:
            effects[name] = stats.design_effect(values, clusters, n_resamples=max(2, settings.resamples),
                                                seed=settings.seed)
    return Group(n, n < min_n, measures, effects)


def by_slice(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """Rows grouped by ``slice``, slices sorted by name, rows in input order."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(str(row["slice"]), []).append(row)
    return dict(sorted(groups.items()))


def summarize_config(name: str, rows: Sequence[Row] | None, settings: StatsConfig) -> ConfigResult:
    """A config's :class:`ConfigResult` from all its rows (unanswerable ones are counted and
    excluded). ``rows`` None or empty means the config is unavailable."""
    if not rows:
        return ConfigResult(name, False, 0, None, {})
    scored = answerable(rows)
    slices = {s: summarize_group(group, settings, min_n=settings.min_slice) for s, group in by_slice(scored).items()}
    return ConfigResult(name, True, len(rows) - len(scored), summarize_group(scored, settings), slices)


# ---------------------------------------------------------------------- subsampling


def subsample_gains(baseline_rows: Sequence[Row], others: Mapping[str, Sequence[Row]], *,
                    baseline: str, settings: StatsConfig) -> SubsampleResult | None:
    """Subsampling of ``settings.measure`` on the questions answerable for the baseline and
    every config in ``others`` (in the baseline's order). Sizes None mean all questions; sizes
    above the total are clipped to it. None when no question is shared."""
    base = {r["id"]: r for r in answerable(baseline_rows)}
    present = [{r["id"] for r in answerable(rows)} for rows in others.values()]
    shared = [i for i in base if all(i in ids for ids in present)]
    if not shared:
        return None
    column = settings.measure
    base_values = column_values([base[i] for i in shared], column)
    other_values = {}
    for name, rows in others.items():
        index = {r["id"]: r for r in rows}
        other_values[name] = column_values([index[i] for i in shared], column)
    sizes = [len(shared) if s is None else s for s in settings.subsample_sizes]
    drawn = stats.subsample(base_values, other_values, sizes=sizes, draws=settings.subsample_draws,
                            seed=settings.seed)
    return SubsampleResult(column, baseline, len(shared), tuple(drawn))


# --------------------------------------------------------------------------- answers


def answer_accuracy(config: str, rows: Sequence[Row] | None, *, settings: StatsConfig) -> AnswerResult:
    """Share of answerable questions whose answer contains the reference (a judge-free proxy),
    with its Wilson interval; ``interval`` None when there is no such row. With it, the mean
    lexical support (:func:`lexical_support_interval`)."""
    scored = answerable(rows or [])
    values = [r[ANSWER_PROXY] for r in scored if r.get(ANSWER_PROXY) is not None]
    if not values:
        return AnswerResult(config, None)
    support, undefined = lexical_support_interval(scored, settings)
    return AnswerResult(config, stats.wilson_interval(int(sum(values)), len(values), confidence=settings.confidence),
                        support, undefined)


def lexical_support_interval(rows: Sequence[Row], settings: StatsConfig) -> tuple[Interval | None, int]:
    """(the mean lexical support over ``rows`` that have one, with its bootstrap interval, None
    when none has; how many ``rows`` have none)."""
    defined = [r for r in rows if r.get(LEXICAL_SUPPORT) is not None]
    if not defined:
        return None, len(rows)
    values = column_values(defined, LEXICAL_SUPPORT)
    interval = stats.bootstrap_mean_ci(values, clusters=cluster_labels(defined, settings), **bootstrap_options(settings))
    return interval, len(rows) - len(defined)


# -------------------------------------------------------------------------- the whole


def analyze(retrieval_rows: Iterable[Row], answer_rows: Iterable[Row], *, configs: Sequence[str],
            answered: Sequence[str], settings: StatsConfig) -> StatsResult:
    """Intervals, comparisons with ``settings.baseline``, subsampling and answer proxies for the
    ``configs`` named (params order; rows of other configs are ignored) and the ``answered``
    configs (``generation.configs``). A config without rows is unavailable; when the baseline
    is unavailable there are no comparisons and no subsampling. ``settings.measure`` ``auto``
    is resolved on the baseline's rows (``comparison.measure_of_rows``: nDCG@10 for graded
    qrels, else hit@5); the result's ``settings`` hold the column used."""
    retrieval = rows_by_config(retrieval_rows, where="retrieval scores")
    answers = rows_by_config(answer_rows, where="answer scores")
    results = tuple(summarize_config(name, retrieval.get(name), settings) for name in configs)
    baseline = settings.baseline
    base_rows = retrieval.get(baseline) if baseline in configs else None
    if base_rows:
        compared_rows = [r for c in configs for r in retrieval.get(c, ())]
        settings = replace(settings, measure=measure_of_rows(settings.measure, compared_rows))
    elif settings.measure == AUTO_MEASURE:
        settings = replace(settings, measure=DEFAULT_MEASURE)
    comparisons: list[Comparison] = []
    subsampled = None
    if base_rows:
        others = [c.name for c in results if c.available and c.name != baseline]
        comparisons = with_holm([compare(base_rows, retrieval[name], base=baseline, new=name,
                                         measure=settings.measure, settings=settings) for name in others])
        compared = {c.new: retrieval[c.new] for c in comparisons if c.n}
        subsampled = subsample_gains(base_rows, compared, baseline=baseline, settings=settings)
    proxies = tuple(answer_accuracy(name, answers.get(name), settings=settings) for name in answered)
    return StatsResult(settings, baseline, results, tuple(comparisons), subsampled, proxies)


# ----------------------------------------------------------------------- flattening



def _group_dict(group: Group, *, with_flag: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"n": group.n}
    if with_flag:
        out["too_small"] = int(group.too_small)
    for name, interval in group.measures.items():
        out[name] = interval_dict(interval, METRICS_INTERVAL, number=rounded)
        if name in group.design_effects:
            out[name]["design_effect"] = rounded(group.design_effects[name])
    return out


def audit_entry(original: Sequence[Row], audited: Sequence[Row], settings: StatsConfig) -> dict[str, Any]:
    """One config's measures under the audited labels (``rag_ablation.evaluation.scoring.audit``), with
    their intervals, beside how many answerable questions the audit changed: ``changed`` (first
    relevant rank moved), ``newly_found`` (missed at the paired measure under the original
    labels, found under the audited ones: 0 before and above 0 after; ``settings.measure`` is a
    column, as :func:`analyze` resolves it). An audit only adds relevant passages, so nothing is
    ever lost."""
    before = {r["id"]: r for r in answerable(original)}
    after = answerable(audited)
    measure = settings.measure
    changed = sum(1 for r in after if r["id"] in before and r["first_relevant_rank"] != before[r["id"]]["first_relevant_rank"])
    found = sum(1 for r in after if r["id"] in before and r[measure] > 0 and before[r["id"]][measure] == 0)
    return {**_group_dict(summarize_group(after, settings), with_flag=False), "changed": changed, "newly_found": found}


GAIN, LOSS, NONE = "gain", "loss", "no change"
"""The direction of a config's change against the baseline on all the subsampled questions
(:func:`change_direction`), which decides what the subsampling table counts for it."""


def change_direction(lost_all: float | None = None, reversed_all: float | None = None, *,
                     delta: float | None = None) -> str:
    """:data:`GAIN`, :data:`LOSS` or :data:`NONE`: from a config's subsample shares at the full
    size (``lost_share``, ``reversed_share`` of the row with every question, each 0 or 1: lost 0
    is a gain, reversed 1 a loss), or, without that row (``stats.subsample_sizes`` without
    ``all``), from the sign of ``delta``, its paired change against the baseline."""
    if lost_all is not None and reversed_all is not None:
        return GAIN if lost_all < 0.5 else LOSS if reversed_all >= 0.5 else NONE
    if delta is None:
        raise ValueError("change_direction needs the full-size shares or the change")
    return GAIN if delta > 0 else LOSS if delta < 0 else NONE


def vanished_share(lost: float, reversed_: float, direction: str) -> float:
    """The share of draws of n questions that would not have shown the change seen on all of
    them, from the draws' ``lost_share`` (change <= 0) and ``reversed_share`` (change < 0): for a
    :data:`GAIN`, draws with no gain or a loss (``lost``); for a :data:`LOSS`, draws with no loss
    or a gain (``1 - reversed_``); for :data:`NONE`, draws that showed a gain or a loss
    (``1 - lost + reversed_``). With every question drawn it is 0 whatever the direction."""
    if direction == GAIN:
        return lost
    if direction == LOSS:
        return 1.0 - reversed_
    return 1.0 - lost + reversed_


def turned_share(lost: float, reversed_: float, direction: str) -> float:
    """Of :func:`vanished_share`, the draws that showed the opposite change: a loss for a
    :data:`GAIN` (``reversed_``), a gain for a :data:`LOSS` (``1 - lost``); 0 for :data:`NONE`."""
    if direction == GAIN:
        return reversed_
    if direction == LOSS:
        return 1.0 - lost
    return 0.0


def subsample_key(row: SubsampleRow, total: int) -> str:
    """``all`` for the full set, else ``n_<size>``."""
    return "all" if row.n == total else f"n_{row.n}"


def to_metrics(result: StatsResult) -> dict[str, Any]:
    """The nested numbers-only dict of ``metrics/stats.json`` (module docstring of
    ``stages/stats.py`` lists the keys). An unavailable config is ``{"available": 0}``."""
    out: dict[str, Any] = {}
    for config in result.configs:
        if not config.available or config.overall is None:
            out[config.name] = {"available": 0}
            continue
        entry: dict[str, Any] = {"available": 1, "is_baseline": int(config.name == result.baseline),
                                 "n_unanswerable_excluded": config.n_unanswerable_excluded,
                                 **_group_dict(config.overall, with_flag=False),
                                 "by_slice": {s: _group_dict(g, with_flag=True) for s, g in config.by_slice.items()}}
        comparison = result.comparison(config.name)
        if comparison is not None:
            entry["vs_baseline"] = comparison_dict(comparison)
        out[config.name] = entry
    _add_subsample(out, result.subsample)
    for answer in result.answers:
        entry = out.setdefault(answer.config, {"available": 0})
        iv = answer.interval
        entry["answers"] = {"available": 0} if iv is None else {
            "available": 1, ANSWER_PROXY: {**interval_dict(iv, METRICS_INTERVAL, number=rounded), "n": iv.n}}
        if iv is not None and answer.support is not None:
            entry["answers"][LEXICAL_SUPPORT] = {**interval_dict(answer.support, METRICS_INTERVAL, number=rounded),
                                                 "n": answer.support.n, "n_undefined": answer.support_undefined}
    return out


def _add_subsample(out: dict[str, Any], sub: SubsampleResult | None) -> None:
    if sub is None:
        return
    for row in sub.rows:
        key = subsample_key(row, sub.total)
        base = out[sub.baseline].setdefault("subsample", {})
        base[key] = {"n": row.n, "low": rounded(row.baseline_low), "high": rounded(row.baseline_high)}
        for name in row.lost_share:
            out[name].setdefault("subsample", {})[key] = {
                "n": row.n, "lost_share": rounded(row.lost_share[name]),
                "reversed_share": rounded(row.reversed_share[name])}

