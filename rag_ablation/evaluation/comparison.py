"""How sure can we be? Intervals per config, paired comparisons, subsampling, over per-question rows.

Everything here is a pure function of per-question rows as ``rag_ablation.evaluation.scoring``
reads them (dicts with ``config``, ``id``, ``slice``, ``doc``, ``answerable`` and the measure
columns) and of the ``stats`` block of params (:class:`rag_ablation.config.StatsConfig`). The
question is the unit; only answerable questions are measured.

Per config, overall and per slice (:func:`summarize_config`):
    recall@1/5/10 (the means of ``hit_at_1/5/10``) and MRR@10 (the mean of ``rr_at_10``), each
    with a bootstrap interval (``stats.method``, ``stats.resamples`` draws seeded with
    ``stats.seed``, at ``stats.confidence``). With ``stats.cluster`` the bootstrap resamples
    whole source documents (``doc``) and the design effect (variance ratio cluster / plain)
    is kept beside each interval; a group with fewer than two documents falls back to
    resampling questions and has no design effect. A slice with ``n < stats.min_slice``
    questions is flagged ``too_small`` (its interval is still given).

Paired (:func:`compare`), two sets of rows of the same config or of two configs:
    questions are paired by ``id`` among those answerable on both sides; a question on one
    side only is counted and named, never paired. For the 0/1 measure ``stats.measure``: the
    fixed / broken / both-right / both-wrong counts, the change ``mean(new) - mean(base)`` with
    a paired bootstrap interval, the exact two-sided sign test on fixed versus broken, and the
    minimum detectable effect at 80% power and alpha 0.05 from the observed disagreement
    rate. For RR@10: the change, its paired interval, a sign-flip permutation p-value
    ``(k + 1) / (B + 1)`` and the MDE from the standard deviation of the differences.
    :func:`with_holm` adjusts each family of p-values with Holm's method and stores the family
    size (the number of comparisons that had at least one paired question).

Subsampling (:func:`subsample_gains`): on the questions shared by the baseline and every
compared config, how the baseline's measure spreads and how often each config's gain over the
baseline vanishes when only n questions are drawn (``rag_ablation.evaluation.stats.subsample``).

Answers (:func:`answer_accuracy`): the share of answers containing the reference answer, with a
Wilson interval and its n. It is a judge-free proxy for accuracy, not a judged accuracy.

:func:`analyze` runs all of it for the configs named in params (in params order; a config
without rows is unavailable and carries no numbers) and :func:`to_metrics` flattens the result
into the nested numbers-only dict of ``metrics/stats.json``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rag_ablation.config import StatsConfig
from rag_ablation.errors import InvalidData
from rag_ablation.evaluation import stats
from rag_ablation.evaluation.stats import Interval, PairedCounts, SubsampleRow

MEASURES: dict[str, str] = {
    "recall_at_1": "hit_at_1",
    "recall_at_5": "hit_at_5",
    "recall_at_10": "hit_at_10",
    "mrr_at_10": "rr_at_10",
}
"""Reported measure -> per-question column it is the mean of."""

RR_COLUMN = "rr_at_10"
"""The continuous per-question measure compared with a sign-flip test."""

RECALL_OF = {column: name for name, column in MEASURES.items()}
"""Per-question column -> the measure it averages to (``hit_at_5`` -> ``recall_at_5``)."""

MDE_ALPHA = 0.05
MDE_POWER = 0.8
SIGNIFICANCE = 0.05
"""A change counts as real when its interval excludes 0 and its Holm-adjusted p < this."""

ANSWER_PROXY = "contains_reference"
"""The judge-free answer measure reported with a Wilson interval."""


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
class BinaryChange:
    """The paired change of a 0/1 measure. ``delta`` estimates ``mean(new) - mean(base)``;
    ``p_sign`` is the exact two-sided sign test of ``counts.fixed`` against ``counts.broken``;
    ``p_holm`` its Holm adjustment in a family of ``family`` comparisons; ``mde`` the smallest
    change detectable at 80% power (alpha 0.05) given the observed disagreement rate."""

    measure: str
    counts: PairedCounts
    delta: Interval
    p_sign: float
    p_holm: float
    family: int
    mde: float


@dataclass(frozen=True)
class RRChange:
    """The paired change of RR@10: ``delta`` with its interval, the sign-flip permutation p,
    its Holm adjustment in a family of ``family``, and the MDE from the differences' SD."""

    delta: Interval
    p_sign_flip: float
    p_holm: float
    family: int
    mde: float


@dataclass(frozen=True)
class SliceChange:
    """The paired 0/1 outcome within one slice: counts, the change of the mean, the exact sign
    test (unadjusted), whether the slice is too small, and the ids fixed and broken (sorted)."""

    slice: str
    counts: PairedCounts
    delta: float
    p_sign: float
    too_small: bool
    fixed_ids: tuple[str, ...]
    broken_ids: tuple[str, ...]


@dataclass(frozen=True)
class Comparison:
    """``new`` against ``base`` on their shared answerable questions.

    ``n`` is the number of paired questions; ``only_new`` / ``only_base`` name (sorted) the
    answerable questions found on one side only. ``binary`` and ``rr`` are None when ``n`` is 0.
    """

    new: str
    base: str
    n: int
    only_new: tuple[str, ...]
    only_base: tuple[str, ...]
    binary: BinaryChange | None
    rr: RRChange | None
    by_slice: Mapping[str, SliceChange]

    @property
    def fixed_ids(self) -> tuple[str, ...]:
        return tuple(sorted(i for s in self.by_slice.values() for i in s.fixed_ids))

    @property
    def broken_ids(self) -> tuple[str, ...]:
        return tuple(sorted(i for s in self.by_slice.values() for i in s.broken_ids))


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
    ``interval`` is None when the config has no answer rows for answerable questions."""

    config: str
    interval: Interval | None


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


# ---------------------------------------------------------------------------- rows


Row = Mapping[str, Any]


def rows_by_config(rows: Iterable[Row], *, where: str = "scores") -> dict[str, list[Row]]:
    """Rows grouped by ``config`` in input order. A repeated (config, id) raises InvalidData."""
    grouped: dict[str, list[Row]] = {}
    seen: set[tuple[str, str]] = set()
    for row in rows:
        key = (row["config"], row["id"])
        if key in seen:
            raise InvalidData(f"{where}: question {key[1]!r} appears twice for config {key[0]!r}; "
                              "regenerate the scores with `dvc repro score`")
        seen.add(key)
        grouped.setdefault(row["config"], []).append(row)
    return grouped


def answerable(rows: Iterable[Row]) -> list[Row]:
    """The rows of answerable questions (``answerable == 1``), in order."""
    return [r for r in rows if r["answerable"]]


def _column(rows: Sequence[Row], column: str) -> np.ndarray:
    """``column`` of answerable rows as floats; an empty cell raises InvalidData."""
    missing = [r["id"] for r in rows if r.get(column) is None]
    if missing:
        raise InvalidData(f"{column} is empty for answerable question(s) {', '.join(missing[:10])}; "
                          "regenerate the scores with `dvc repro score`")
    return np.asarray([r[column] for r in rows], dtype=float)


def _clusters(rows: Sequence[Row], settings: StatsConfig) -> list[str] | None:
    """Source documents as cluster labels when ``settings.cluster`` and at least two differ."""
    if not settings.cluster:
        return None
    docs = [str(r["doc"]) for r in rows]
    return docs if len(set(docs)) >= 2 else None


# ----------------------------------------------------------------------- intervals


def _bootstrap_kwargs(settings: StatsConfig) -> dict[str, Any]:
    return {"method": settings.method, "n_resamples": settings.resamples, "seed": settings.seed,
            "confidence": settings.confidence}


def summarize_group(rows: Sequence[Row], settings: StatsConfig, *, min_n: int = 0) -> Group:
    """Intervals of every measure of :data:`MEASURES` over answerable ``rows`` (module
    docstring); ``too_small`` is ``len(rows) < min_n``."""
    n = len(rows)
    if n == 0:
        return Group(0, min_n > 0, {}, {})
    clusters = _clusters(rows, settings)
    measures: dict[str, Interval] = {}
    effects: dict[str, float] = {}
    for name, column in MEASURES.items():
        values = _column(rows, column)
        measures[name] = stats.bootstrap_mean_ci(values, clusters=clusters, **_bootstrap_kwargs(settings))
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


# -------------------------------------------------------------------------- pairing


@dataclass(frozen=True)
class Pairing:
    """Rows of two sides aligned on shared answerable question ids (in ``new``'s order)."""

    base: tuple[Row, ...]
    new: tuple[Row, ...]
    only_base: tuple[str, ...]
    only_new: tuple[str, ...]


def pair(base_rows: Iterable[Row], new_rows: Iterable[Row]) -> Pairing:
    """Pair answerable rows by ``id``; ids answerable on one side only are listed (sorted).

    A question answerable on one side and unanswerable (or absent) on the other is on one side
    only. The slice of a paired question is read from ``new`` (see :func:`compare`).
    """
    base = {r["id"]: r for r in answerable(base_rows)}
    new = {r["id"]: r for r in answerable(new_rows)}
    shared = [i for i in new if i in base]
    return Pairing(
        base=tuple(base[i] for i in shared),
        new=tuple(new[i] for i in shared),
        only_base=tuple(sorted(set(base) - set(new))),
        only_new=tuple(sorted(set(new) - set(base))),
    )


def _slice_change(name: str, base: Sequence[Row], new: Sequence[Row], measure: str, min_n: int) -> SliceChange:
    before, after = _column(base, measure), _column(new, measure)
    counts = stats.paired_counts(before, after)
    ids = [r["id"] for r in new]
    return SliceChange(
        slice=name,
        counts=counts,
        delta=float(after.mean() - before.mean()),
        p_sign=stats.sign_test_p(counts.fixed, counts.broken),
        too_small=len(ids) < min_n,
        fixed_ids=tuple(sorted(i for i, b, a in zip(ids, before, after) if a > b)),
        broken_ids=tuple(sorted(i for i, b, a in zip(ids, before, after) if a < b)),
    )


def _binary_change(p: Pairing, measure: str, settings: StatsConfig, clusters: list[str] | None) -> BinaryChange:
    before, after = _column(p.base, measure), _column(p.new, measure)
    counts = stats.paired_counts(before, after)
    p_sign = stats.sign_test_p(counts.fixed, counts.broken)
    delta = stats.paired_bootstrap_ci(before, after, clusters=clusters, **_bootstrap_kwargs(settings))
    mde = stats.min_detectable_effect(counts.n, counts.disagreement, alpha=MDE_ALPHA, power=MDE_POWER)
    return BinaryChange(measure, counts, delta, p_sign, p_sign, 1, mde)


def _rr_change(p: Pairing, settings: StatsConfig, clusters: list[str] | None) -> RRChange:
    before, after = _column(p.base, RR_COLUMN), _column(p.new, RR_COLUMN)
    differences = after - before
    delta = stats.paired_bootstrap_ci(before, after, clusters=clusters, **_bootstrap_kwargs(settings))
    p_flip = stats.sign_flip_p(differences, n_resamples=settings.resamples, seed=settings.seed)
    sd = float(differences.std(ddof=1)) if differences.size > 1 else 0.0
    mde = stats.min_detectable_effect_sd(differences.size, sd, alpha=MDE_ALPHA, power=MDE_POWER)
    return RRChange(delta, p_flip, p_flip, 1, mde)


def compare(base_rows: Iterable[Row], new_rows: Iterable[Row], *, base: str, new: str,
            measure: str, settings: StatsConfig) -> Comparison:
    """``new`` against ``base`` on their shared answerable questions (module docstring).

    ``measure`` is a 0/1 column (``hit_at_1``, ``hit_at_5`` or ``hit_at_10``). p-values are
    unadjusted here (``p_holm == p``, ``family == 1``) until :func:`with_holm`. Per-slice
    changes group the paired questions by their slice on the ``new`` side.
    """
    p = pair(base_rows, new_rows)
    if not p.new:
        return Comparison(new, base, 0, p.only_new, p.only_base, None, None, {})
    clusters = _clusters(p.new, settings)
    slices: dict[str, tuple[list[Row], list[Row]]] = {}
    for b, a in zip(p.base, p.new):
        pair_lists = slices.setdefault(str(a["slice"]), ([], []))
        pair_lists[0].append(b)
        pair_lists[1].append(a)
    per_slice = {s: _slice_change(s, b, a, measure, settings.min_slice) for s, (b, a) in sorted(slices.items())}
    return Comparison(new, base, len(p.new), p.only_new, p.only_base,
                      _binary_change(p, measure, settings, clusters), _rr_change(p, settings, clusters), per_slice)


def with_holm(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """The comparisons with Holm-adjusted p-values, the 0/1 sign tests and the RR sign-flip
    tests each adjusted as one family: the comparisons with at least one paired question
    (``family`` is their number). Comparisons without pairs are returned unchanged."""
    tested = [i for i, c in enumerate(comparisons) if c.binary is not None and c.rr is not None]
    m = len(tested)
    sign = stats.holm([comparisons[i].binary.p_sign for i in tested])  # type: ignore[union-attr]
    flip = stats.holm([comparisons[i].rr.p_sign_flip for i in tested])  # type: ignore[union-attr]
    out = list(comparisons)
    for i, ps, pf in zip(tested, sign, flip):
        c = comparisons[i]
        out[i] = replace(c, binary=replace(c.binary, p_holm=ps, family=m),  # type: ignore[arg-type]
                         rr=replace(c.rr, p_holm=pf, family=m))  # type: ignore[arg-type]
    return out


def is_real(change: BinaryChange | RRChange) -> bool:
    """True when the interval excludes 0 (both bounds on one side, 0 itself excluded) and the
    Holm-adjusted p-value is below :data:`SIGNIFICANCE`."""
    excludes_zero = change.delta.low > 0 or change.delta.high < 0
    return excludes_zero and change.p_holm < SIGNIFICANCE


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
    base_values = _column([base[i] for i in shared], column)
    other_values = {}
    for name, rows in others.items():
        index = {r["id"]: r for r in rows}
        other_values[name] = _column([index[i] for i in shared], column)
    sizes = [len(shared) if s is None else s for s in settings.subsample_sizes]
    rows = stats.subsample(base_values, other_values, sizes=sizes, draws=settings.subsample_draws,
                           seed=settings.seed)
    return SubsampleResult(column, baseline, len(shared), tuple(rows))


# --------------------------------------------------------------------------- answers


def answer_accuracy(config: str, rows: Sequence[Row] | None, *, confidence: float) -> AnswerResult:
    """Share of answerable questions whose answer contains the reference (a judge-free proxy),
    with its Wilson interval; ``interval`` None when there is no such row."""
    values = [r[ANSWER_PROXY] for r in answerable(rows or []) if r.get(ANSWER_PROXY) is not None]
    if not values:
        return AnswerResult(config, None)
    return AnswerResult(config, stats.wilson_interval(int(sum(values)), len(values), confidence=confidence))


# -------------------------------------------------------------------------- the whole


def analyze(retrieval_rows: Iterable[Row], answer_rows: Iterable[Row], *, configs: Sequence[str],
            answered: Sequence[str], settings: StatsConfig) -> StatsResult:
    """Intervals, comparisons with ``settings.baseline``, subsampling and answer proxies for the
    ``configs`` named (params order; rows of other configs are ignored) and the ``answered``
    configs (``generation.configs``). A config without rows is unavailable; when the baseline
    is unavailable there are no comparisons and no subsampling."""
    retrieval = rows_by_config(retrieval_rows, where="retrieval scores")
    answers = rows_by_config(answer_rows, where="answer scores")
    results = tuple(summarize_config(name, retrieval.get(name), settings) for name in configs)
    baseline = settings.baseline
    base_rows = retrieval.get(baseline) if baseline in configs else None
    comparisons: list[Comparison] = []
    subsampled = None
    if base_rows:
        others = [c.name for c in results if c.available and c.name != baseline]
        comparisons = with_holm([compare(base_rows, retrieval[name], base=baseline, new=name,
                                         measure=settings.measure, settings=settings) for name in others])
        compared = {c.new: retrieval[c.new] for c in comparisons if c.n}
        subsampled = subsample_gains(base_rows, compared, baseline=baseline, settings=settings)
    proxies = tuple(answer_accuracy(name, answers.get(name), confidence=settings.confidence) for name in answered)
    return StatsResult(settings, baseline, results, tuple(comparisons), subsampled, proxies)


# ----------------------------------------------------------------------- flattening


DECIMALS = 4


def rounded(value: float) -> float:
    """A value rounded to :data:`DECIMALS` decimals (``-0.0`` becomes ``0.0``)."""
    return round(float(value), DECIMALS) + 0.0


def rounded_p(p: float) -> float:
    """A p-value to 4 significant digits, so a tiny p never rounds to 0."""
    return float(f"{float(p):.4g}")


def _interval_dict(interval: Interval, *, value_key: str = "value") -> dict[str, float]:
    return {value_key: rounded(interval.estimate), "ci_low": rounded(interval.low), "ci_high": rounded(interval.high)}


def _group_dict(group: Group, *, with_flag: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"n": group.n}
    if with_flag:
        out["too_small"] = int(group.too_small)
    for name, interval in group.measures.items():
        out[name] = _interval_dict(interval)
        if name in group.design_effects:
            out[name]["design_effect"] = rounded(group.design_effects[name])
    return out


def _binary_dict(change: BinaryChange) -> dict[str, Any]:
    c = change.counts
    return {**_interval_dict(change.delta, value_key="delta"), "n": c.n, "fixed": c.fixed, "broken": c.broken,
            "both_right": c.both_right, "both_wrong": c.both_wrong, "p_sign": rounded_p(change.p_sign),
            "p_holm": rounded_p(change.p_holm), "family": change.family, "mde": rounded(change.mde),
            "real": int(is_real(change))}


def _rr_dict(change: RRChange) -> dict[str, Any]:
    return {**_interval_dict(change.delta, value_key="delta"), "p_sign_flip": rounded_p(change.p_sign_flip),
            "p_holm": rounded_p(change.p_holm), "family": change.family, "mde": rounded(change.mde),
            "real": int(is_real(change))}


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """One comparison as numbers: paired n, the counts of questions only the compared config
    (``only_config``) or only the baseline (``only_baseline``) has, the 0/1 measure's and RR@10's
    changes, and per slice the counts, change, sign-test p and ``too_small`` (0/1)."""
    out: dict[str, Any] = {"n": c.n, "only_config": len(c.only_new), "only_baseline": len(c.only_base)}
    if c.binary is not None and c.rr is not None:
        out[c.binary.measure] = _binary_dict(c.binary)
        out[RR_COLUMN] = _rr_dict(c.rr)
    out["by_slice"] = {s.slice: {"n": s.counts.n, "fixed": s.counts.fixed, "broken": s.counts.broken,
                                 "delta": rounded(s.delta), "p_sign": rounded_p(s.p_sign),
                                 "too_small": int(s.too_small)} for s in c.by_slice.values()}
    return out


def audit_entry(original: Sequence[Row], audited: Sequence[Row], settings: StatsConfig) -> dict[str, Any]:
    """One config's measures under the audited labels (``rag_ablation.evaluation.audit``), with
    their intervals, beside how many answerable questions the audit changed: ``changed`` (first
    relevant rank moved), ``newly_found`` (missed at the paired measure under the original
    labels, found under the audited ones). An audit only adds relevant passages, so nothing is
    ever lost."""
    before = {r["id"]: r for r in answerable(original)}
    after = answerable(audited)
    measure = settings.measure
    changed = sum(1 for r in after if r["id"] in before and r["first_relevant_rank"] != before[r["id"]]["first_relevant_rank"])
    found = sum(1 for r in after if r["id"] in before and r[measure] == 1 and before[r["id"]][measure] == 0)
    return {**_group_dict(summarize_group(after, settings), with_flag=False), "changed": changed, "newly_found": found}


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
            "available": 1, ANSWER_PROXY: {**_interval_dict(iv), "n": iv.n}}
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

