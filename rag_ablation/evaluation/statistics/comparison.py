"""Paired comparisons of per-question rows: two sets of rows of the same config or of two configs.

Everything here is a pure function of per-question rows as ``rag_ablation.evaluation.scoring.scores``
reads them (dicts with ``config``, ``id``, ``slice``, ``doc``, ``answerable`` and the measure
columns) and of the ``stats`` block of params (:class:`rag_ablation.core.config.StatsConfig`). The
question is the unit; only answerable questions are measured.

Paired (:func:`compare`):
    questions are paired by ``id`` among those answerable on both sides; a question on one
    side only is counted and named, never paired. For the measure ``stats.measure``
    (:func:`measure_change`): the change ``mean(new) - mean(base)`` with a paired bootstrap
    interval, the counts and a paired test chosen by the kind of measure (:data:`TESTS`):

    - a 0/1 column (``hit_at_k``): fixed / broken / both-right / both-wrong counts, the exact
      two-sided sign test on fixed versus broken, and the minimum detectable effect at 80%
      power and alpha 0.05 from the observed disagreement rate;
    - a continuous column (``rr_at_10``, ``ndcg_at_10``, ``recall_at_100``): the questions
      *better* / *worse* by more than ``stats.margin`` (``inference.margin_counts``, whose
      ``fixed`` / ``broken`` fields hold them; the metrics files write them as ``better`` /
      ``worse``, :data:`COUNT_KEYS`), the test is the paired sign-flip permutation test,
      ``p = (k + 1) / (B + 1)`` with ``B = stats.resamples`` seeded from ``stats.seed``
      (``inference.sign_flip_p``), and the MDE comes from the standard deviation of the
      differences.

    RR@10 is always compared too, the continuous way.
    :func:`with_holm` adjusts each family of p-values with Holm's method and stores the family
    size (the number of comparisons that had at least one paired question); :func:`is_real`
    says whether a change counts and :func:`verdict` words it (real gain, real loss, within
    the noise, no change).

Also here, because every reader of per-question rows shares them: the measure names
(:data:`MEASURES`, :data:`RECALL_OF`, :data:`RR_COLUMN`), which measure ``auto`` means for a set
of rows (:func:`resolve_measure`, :func:`measure_of_rows`), reading rows (:func:`rows_by_config`,
:func:`answerable`, :func:`column_values`, :func:`cluster_labels`), the bootstrap settings
(:func:`bootstrap_options`) and the rounding of the metrics files (:func:`rounded`,
:func:`rounded_p`; a comparison flattened to those numbers: :func:`comparison_dict`, its
counts named *fixed* / *broken* for a 0/1 measure and *better* / *worse* for a continuous one,
:data:`COUNT_KEYS`, read back by :func:`counts_in`, which also reads files written before). The
``stats`` stage's analysis (intervals per config, subsampling, answer proxies,
``metrics/stats.json``) is :mod:`rag_ablation.evaluation.statistics.stats`.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rag_ablation.core.config import (
    ANSWER_COLUMNS,
    AUTO_MEASURE,
    BINARY_MEASURES,
    CONTINUOUS_MEASURES,
    P_VALUE_DIGITS,
    PAIRED_MEASURES,
    STAT_DECIMALS,
    StatsConfig,
)
from rag_ablation.core.errors import InvalidData, UserError
from rag_ablation.core.io import round_decimals, round_significant
from rag_ablation.evaluation.scoring.graded import DEEP_RECALL_K, GRADED_COLUMNS, graded_columns
from rag_ablation.evaluation.statistics import inference as stats
from rag_ablation.evaluation.statistics.inference import CHANGE_INTERVAL, Interval, PairedCounts, interval_dict

MEASURES: dict[str, str] = {
    "recall_at_1": "hit_at_1",
    "recall_at_5": "hit_at_5",
    "recall_at_10": "hit_at_10",
    "mrr_at_10": "rr_at_10",
}
"""Reported measure -> per-question column it is the mean of."""

GRADED_MEASURES: dict[str, str] = {"ndcg_at_10": "ndcg_at_10", "recall_at_100": "recall_at_100"}
"""The measures of a data set with graded qrels (``rag_ablation.evaluation.scoring.graded``), each
the mean of its own column, reported only where every answerable row has a value."""


def measures_of(rows: Sequence[Row]) -> dict[str, str]:
    """:data:`MEASURES`, then each of :data:`GRADED_MEASURES` whose column every answerable row
    of ``rows`` holds (none for span-labelled data; no recall@100 for a config that keeps fewer
    than 100 chunks, whose cells are empty)."""
    held = graded_columns(rows)
    return {**MEASURES, **{m: c for m, c in GRADED_MEASURES.items() if c in held}}

RR_COLUMN = "rr_at_10"
"""The continuous per-question measure compared with a sign-flip test."""

JUDGE_SCORES: dict[str, str] = {"llm_score": "llm_score", "combined_score": "combined_score"}
"""The per-answer judge scores (``metrics/scores/verdicts.csv``, written by ``judge_eval``), each in
[0, 1] and continuous: the LLM judge's probability of CORRECT and the combined judge's (its
logistic model over the judges' scores). A cell is empty where the judge gave no score (a
backend that returns no probabilities; no hand grades to fit the combined judge on). The other
judges' scores are answer measures already (``token_f1``; ``contains`` is ``contains_reference``)."""

ANSWER_MEASURES: dict[str, str] = {name: name for name in ANSWER_COLUMNS}
"""The per-question answer measures (one row per answered question and config), each the mean of
its own column: ``contains_reference`` 0/1 and ``token_f1`` continuous (``metrics/scores/answers.csv``),
and the :data:`JUDGE_SCORES` (names from ``core.config.ANSWER_COLUMNS``). ``rag-ablation diff
--measure``, ``sweep-report --measure`` and ``check --measure`` compare them, and judge_eval
compares the answered configs on them (``statistics.answer_verdicts``); ``stats.measure`` and
``gate.measure`` do not (the stats stage and the gate stage compare retrieval configs, most of
which answer nothing)."""

LEXICAL_SUPPORT = "lexical_support"
"""The per-answer lexical support column of ``metrics/scores/answers.csv``
(``rag_ablation.evaluation.scoring.grounding``): continuous, empty where undefined (refusals,
answers without content words, unknown passages). Judge_eval compares the answered configs on it
(``statistics.answer_verdicts``) on the questions where both answers have one; it is not an
``ANSWER_MEASURES`` measure (no gate, diff or sweep measure: a lexical proxy, calibrated against
hand grades of support only in judge_eval's support block)."""

RECALL_OF = {column: name for name, column in {**MEASURES, **GRADED_MEASURES, **ANSWER_MEASURES,
                                                LEXICAL_SUPPORT: LEXICAL_SUPPORT}.items()}
"""Per-question column -> the measure it averages to (``hit_at_5`` -> ``recall_at_5``,
``rr_at_10`` -> ``mrr_at_10``, ``ndcg_at_10`` -> ``ndcg_at_10``)."""

LABELS = {"recall_at_1": "recall@1", "recall_at_5": "recall@5", "recall_at_10": "recall@10", "mrr_at_10": "MRR@10",
          "ndcg_at_10": "nDCG@10", "recall_at_100": "recall@100", "contains_reference": "contains the reference",
          "token_f1": "token F1", "llm_score": "LLM judge P(correct)", "combined_score": "combined judge score",
          LEXICAL_SUPPORT: "lexical support"}
"""How a measure is named on a chart, in the report and by the gate."""


def measure_label(measure: str) -> str:
    """How a per-question column is named through the mean it averages to:
    ``hit_at_5`` -> ``recall@5``, ``rr_at_10`` -> ``MRR@10``, ``ndcg_at_10`` -> ``nDCG@10``."""
    return LABELS[RECALL_OF[measure]]


SIGN = "sign"
SIGN_FLIP = "sign-flip"
TESTS = {**dict.fromkeys(BINARY_MEASURES, SIGN), **dict.fromkeys(CONTINUOUS_MEASURES, SIGN_FLIP),
         "contains_reference": SIGN, "token_f1": SIGN_FLIP, **dict.fromkeys(JUDGE_SCORES, SIGN_FLIP),
         LEXICAL_SUPPORT: SIGN_FLIP}
"""Per-question column -> its paired test: the exact sign test for a 0/1 column, the paired
sign-flip permutation test for a continuous one."""

P_KEYS = {SIGN: "p_sign", SIGN_FLIP: "p_sign_flip"}
"""The key of a test's unadjusted p-value in ``metrics/stats.json``."""

DEFAULT_MEASURE = "hit_at_5"
GRADED_MEASURE = GRADED_COLUMNS[0]
"""What ``auto`` means: nDCG@10 where the rows carry it (graded qrels), else hit@5."""


def is_binary(measure: str) -> bool:
    """True for a 0/1 column (``hit_at_k``), False for a continuous one."""
    return TESTS[measure] == SIGN


def resolve_measure(measure: str, columns: Iterable[str], *, default: str = DEFAULT_MEASURE) -> str:
    """``measure`` itself, or for ``auto`` :data:`GRADED_MEASURE` when ``columns`` (the graded
    columns the rows hold, ``graded.graded_columns``) include it, else ``default``."""
    if measure != AUTO_MEASURE:
        return measure
    return GRADED_MEASURE if GRADED_MEASURE in set(columns) else default


def measure_of_rows(measure: str, rows: Sequence[Row], *, default: str = DEFAULT_MEASURE) -> str:
    """:func:`resolve_measure` on ``rows`` (``auto`` is nDCG@10 when every answerable row holds
    it), checked: a column the answerable rows do not all hold is a UserError saying why (no
    graded qrels; a config keeping fewer than 100 chunks for recall@100) and what to choose."""
    column = resolve_measure(measure, graded_columns(rows), default=default)
    if column not in PAIRED_MEASURES and column not in ANSWER_MEASURES:
        raise UserError(f"unknown measure {column!r}; expected one of "
                        f"{', '.join((AUTO_MEASURE, *PAIRED_MEASURES, *ANSWER_MEASURES))}")
    missing = sorted({str(r["config"]) for r in answerable(rows) if r.get(column) is None})
    if missing:
        raise UserError(f"measure {column!r} is empty for config(s) {', '.join(missing)}: {_why_empty(column)}; "
                        f"choose another measure (--measure or stats.measure): {_instead(column)}")
    return column


def _why_empty(column: str) -> str:
    """Why a measure's column can be empty, and what fills it."""
    if column == GRADED_COLUMNS[1]:
        return f"set `retrieval.NAME.k` to at least {DEEP_RECALL_K} for it (e.g. `-S 'retrieval.NAME.k={DEEP_RECALL_K}'`)"
    if column in JUDGE_SCORES:
        return ("the judge gave no score there: a backend that returns no probabilities, or no hand grades to fit "
                "the combined judge on (docs/judging.md); run `dvc repro judge_eval` after grading")
    return "only a data set with graded qrels (an imported BEIR set) has it"


def _instead(column: str) -> str:
    """The measures to suggest in place of an empty one of the same kind of rows."""
    if column in ANSWER_MEASURES:
        return ", ".join(m for m in ANSWER_MEASURES if m != column)
    return f"{', '.join(BINARY_MEASURES)} or rr_at_10"

MDE_ALPHA = 0.05
MDE_POWER = 0.8
SIGNIFICANCE = 0.05
"""A change counts as real when its interval excludes 0 and its Holm-adjusted p < this."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class MeasureChange:
    """The paired change of ``measure``. ``delta`` estimates ``mean(new) - mean(base)``;
    ``counts`` its paired table (fixed: better, broken: worse; by more than ``margin`` for a
    continuous measure, ``inference.margin_counts``); ``p`` the unadjusted two-sided p of
    ``test`` (:data:`TESTS`: the exact sign test of fixed against broken for a 0/1 measure, the
    sign-flip test of the differences for a continuous one); ``p_holm`` its Holm adjustment in
    a family of ``family`` comparisons; ``mde`` the smallest change detectable at 80% power
    (alpha 0.05), from the disagreement rate (0/1) or the differences' SD (continuous)."""

    measure: str
    test: str
    margin: float
    counts: PairedCounts
    delta: Interval
    p: float
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
    """The paired outcome of the measure within one slice: counts, the change of the mean, the
    measure's test (unadjusted; :data:`TESTS`), whether the slice is too small, and the ids
    fixed and broken (sorted; better / worse by more than the margin for a continuous measure)."""

    slice: str
    counts: PairedCounts
    delta: float
    p: float
    too_small: bool
    fixed_ids: tuple[str, ...]
    broken_ids: tuple[str, ...]


@dataclass(frozen=True)
class Comparison:
    """``new`` against ``base`` on their shared answerable questions.

    ``n`` is the number of paired questions; ``only_new`` / ``only_base`` name (sorted) the
    answerable questions found on one side only. ``binary`` (the change of the measure,
    0/1 or continuous) and ``rr`` are None when ``n`` is 0.
    """

    new: str
    base: str
    n: int
    only_new: tuple[str, ...]
    only_base: tuple[str, ...]
    binary: MeasureChange | None
    rr: RRChange | None
    by_slice: Mapping[str, SliceChange]

    @property
    def fixed_ids(self) -> tuple[str, ...]:
        return tuple(sorted(i for s in self.by_slice.values() for i in s.fixed_ids))

    @property
    def broken_ids(self) -> tuple[str, ...]:
        return tuple(sorted(i for s in self.by_slice.values() for i in s.broken_ids))


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


def column_values(rows: Sequence[Row], column: str) -> np.ndarray:
    """``column`` of answerable ``rows`` as a float array, in row order; an empty cell (None or
    missing) raises InvalidData naming the questions (at most 10) and how to regenerate them."""
    missing = [r["id"] for r in rows if r.get(column) is None]
    if missing:
        raise InvalidData(f"{column} is empty for answerable question(s) {', '.join(missing[:10])}; "
                          "regenerate the scores with `dvc repro score`")
    return np.asarray([r[column] for r in rows], dtype=float)


def cluster_labels(rows: Sequence[Row], settings: StatsConfig) -> list[str] | None:
    """The source document (``doc``) of each row as its bootstrap cluster label, when
    ``settings.cluster`` is set and at least two documents differ; else None (resample
    questions)."""
    if not settings.cluster:
        return None
    docs = [str(r["doc"]) for r in rows]
    return docs if len(set(docs)) >= 2 else None


def bootstrap_options(settings: StatsConfig) -> dict[str, Any]:
    """The keyword arguments every bootstrap over rows passes to
    :mod:`rag_ablation.evaluation.statistics.inference`: ``method``, ``n_resamples``, ``seed`` and
    ``confidence`` from the ``stats`` block of params."""
    return {"method": settings.method, "n_resamples": settings.resamples, "seed": settings.seed,
            "confidence": settings.confidence}


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


def measure_change(before: np.ndarray, after: np.ndarray, *, measure: str, settings: StatsConfig,
                   clusters: list[str] | None = None, interval: bool = True) -> MeasureChange:
    """The paired change of ``measure`` from ``before`` to ``after`` (module docstring; the
    test by :data:`TESTS`). ``interval`` False skips the bootstrap (``delta`` is then the point
    change with ``low == high``), for per-slice counts. Unadjusted: ``p_holm == p``."""
    test = TESTS[measure]
    difference = after - before
    if test == SIGN:
        counts = stats.paired_counts(before, after)
        p = stats.sign_test_p(counts.fixed, counts.broken)
        mde = stats.min_detectable_effect(counts.n, counts.disagreement, alpha=MDE_ALPHA, power=MDE_POWER)
        margin = 0.0
    else:
        margin = settings.margin
        counts = stats.margin_counts(before, after, margin=margin)
        p = stats.sign_flip_p(difference, n_resamples=settings.resamples, seed=settings.seed)
        sd = float(difference.std(ddof=1)) if difference.size > 1 else 0.0
        mde = stats.min_detectable_effect_sd(difference.size, sd, alpha=MDE_ALPHA, power=MDE_POWER)
    if interval:
        delta = stats.paired_bootstrap_ci(before, after, clusters=clusters, **bootstrap_options(settings))
    else:
        mean = float(after.mean() - before.mean())
        delta = Interval(mean, mean, mean, int(difference.size), "none")
    return MeasureChange(measure, test, margin, counts, delta, p, p, 1, mde)


def changed_ids(ids: Sequence[str], before: np.ndarray, after: np.ndarray, margin: float) -> tuple[tuple[str, ...],
                                                                                                   tuple[str, ...]]:
    """The ids (sorted) whose value rose, and those whose value fell, by more than ``margin``
    (0 for a 0/1 measure: the fixed and broken questions)."""
    return (tuple(sorted(i for i, b, a in zip(ids, before, after) if a - b > margin)),
            tuple(sorted(i for i, b, a in zip(ids, before, after) if b - a > margin)))


def _slice_change(name: str, base: Sequence[Row], new: Sequence[Row], measure: str, settings: StatsConfig) -> SliceChange:
    before, after = column_values(base, measure), column_values(new, measure)
    change = measure_change(before, after, measure=measure, settings=settings, interval=False)
    ids = [r["id"] for r in new]
    fixed, broken = changed_ids(ids, before, after, change.margin)
    return SliceChange(slice=name, counts=change.counts, delta=change.delta.estimate, p=change.p,
                       too_small=len(ids) < settings.min_slice, fixed_ids=fixed, broken_ids=broken)


def _rr_change(p: Pairing, settings: StatsConfig, clusters: list[str] | None) -> RRChange | None:
    """RR@10's change, or None for rows without RR@10 (answer rows)."""
    if any(r.get(RR_COLUMN) is None for r in (*p.base, *p.new)):
        return None
    before, after = column_values(p.base, RR_COLUMN), column_values(p.new, RR_COLUMN)
    change = measure_change(before, after, measure=RR_COLUMN, settings=settings, clusters=clusters)
    return RRChange(change.delta, change.p, change.p, 1, change.mde)


def compare(base_rows: Iterable[Row], new_rows: Iterable[Row], *, base: str, new: str,
            measure: str, settings: StatsConfig) -> Comparison:
    """``new`` against ``base`` on their shared answerable questions (module docstring).

    ``measure`` is a column of ``PAIRED_MEASURES`` (``auto`` resolved by the caller,
    :func:`measure_of_rows`). p-values are unadjusted here (``p_holm == p``, ``family == 1``)
    until :func:`with_holm`. Per-slice changes group the paired questions by their slice on the
    ``new`` side.
    """
    p = pair(base_rows, new_rows)
    if not p.new:
        return Comparison(new, base, 0, p.only_new, p.only_base, None, None, {})
    clusters = cluster_labels(p.new, settings)
    slices: dict[str, tuple[list[Row], list[Row]]] = {}
    for b, a in zip(p.base, p.new):
        pair_lists = slices.setdefault(str(a["slice"]), ([], []))
        pair_lists[0].append(b)
        pair_lists[1].append(a)
    per_slice = {s: _slice_change(s, b, a, measure, settings) for s, (b, a) in sorted(slices.items())}
    change = measure_change(column_values(p.base, measure), column_values(p.new, measure), measure=measure,
                            settings=settings, clusters=clusters)
    return Comparison(new, base, len(p.new), p.only_new, p.only_base, change, _rr_change(p, settings, clusters),
                      per_slice)


def with_holm(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """The comparisons with Holm-adjusted p-values, the measure's tests and the RR sign-flip
    tests each adjusted as one family: the comparisons with at least one paired question
    (``family`` is their number). Comparisons without pairs are returned unchanged."""
    tested = [i for i, c in enumerate(comparisons) if c.binary is not None]
    with_rr = [i for i in tested if comparisons[i].rr is not None]  # all of them, except for answer rows
    m = len(tested)
    sign = stats.holm([comparisons[i].binary.p for i in tested])  # type: ignore[union-attr]
    flip = dict(zip(with_rr, stats.holm([comparisons[i].rr.p_sign_flip for i in with_rr])))  # type: ignore[union-attr]
    out = list(comparisons)
    for i, ps in zip(tested, sign):
        c = comparisons[i]
        assert c.binary is not None  # `tested` holds only compared configs
        rr = None if c.rr is None else replace(c.rr, p_holm=flip[i], family=len(with_rr))
        out[i] = replace(c, binary=replace(c.binary, p_holm=ps, family=m), rr=rr)
    return out


def is_real(change: MeasureChange | RRChange) -> bool:
    """True when the interval excludes 0 (both bounds on one side, 0 itself excluded) and the
    Holm-adjusted p-value is below :data:`SIGNIFICANCE` (:func:`real_change` of its numbers)."""
    return real_change(change.delta.low, change.delta.high, change.p_holm)


# ------------------------------------------------------------------------- verdicts


NO_CHANGE = "no change"
REAL_GAIN = "real gain"
REAL_LOSS = "real loss"
WITHIN_NOISE = "within the noise"
VERDICTS = (REAL_GAIN, REAL_LOSS, WITHIN_NOISE, NO_CHANGE)
"""Every word :func:`verdict` can give, as the reports print them."""


def real_change(low: float, high: float, p_holm: float) -> bool:
    """The rule for a real change: ``low > 0 or high < 0`` (the interval excludes 0; a bound
    at exactly 0 does not) and ``p_holm <`` :data:`SIGNIFICANCE` (strictly below)."""
    return (low > 0 or high < 0) and p_holm < SIGNIFICANCE


def verdict(delta: float, low: float, high: float, p_holm: float) -> str:
    """What a paired change with interval ``[low, high]`` and Holm-adjusted ``p_holm`` means:
    :data:`NO_CHANGE` when ``low == high == 0`` (a point interval at 0: no question differs),
    else :data:`WITHIN_NOISE` unless :func:`real_change`, else :data:`REAL_GAIN` for
    ``delta > 0`` and :data:`REAL_LOSS` otherwise. The same rule for the report (on the rounded
    numbers of ``metrics/stats.json``) and ``rag-ablation diff`` (on the unrounded ones)."""
    if low == high == 0:
        return NO_CHANGE
    if not real_change(low, high, p_holm):
        return WITHIN_NOISE
    return REAL_GAIN if delta > 0 else REAL_LOSS


# ------------------------------------------------------------------------- rounding


def rounded(value: float) -> float:
    """A value rounded to ``STAT_DECIMALS`` decimals (``rag_ablation.core.config``; ``-0.0``
    becomes ``0.0``)."""
    return round_decimals(value, STAT_DECIMALS)


def rounded_p(p: float) -> float:
    """A p-value to ``P_VALUE_DIGITS`` significant digits, so a tiny p never rounds to 0."""
    return round_significant(p, P_VALUE_DIGITS)


# ------------------------------------------------------------------------ flattening


COUNT_KEYS = {SIGN: ("fixed", "broken", "both_right", "both_wrong"),
              SIGN_FLIP: ("better", "worse", "within_margin", "both_zero")}
"""How the metrics files name a paired table's four counts (``PairedCounts``' ``fixed``,
``broken``, ``both_right``, ``both_wrong``), per test: a 0/1 measure's questions are *fixed*
and *broken*; a continuous measure's (nDCG@10, RR@10, token F1, a judge's score) are *better*
and *worse* by more than ``stats.margin``, the rest *within the margin*, of which *both zero*
where both values are 0 (the words the reports print, ``plot_data.count_words``)."""

OLD_COUNT_KEYS = COUNT_KEYS[SIGN][:2]
"""The keys a continuous measure's better / worse counts had in files written before
:data:`COUNT_KEYS` (``fixed``, ``broken``), which :func:`counts_in` still reads."""


def count_keys(measure: str) -> tuple[str, str, str, str]:
    """:data:`COUNT_KEYS` of the measure's test."""
    return COUNT_KEYS[TESTS[measure]]


def counts_in(entry: Mapping[str, Any]) -> tuple[int, int]:
    """The questions up and down of a change entry of a metrics file (``vs_baseline.MEASURE``,
    one of its slices, or a ``measure_comparison`` entry): ``better`` / ``worse`` of a
    continuous measure, ``fixed`` / ``broken`` of a 0/1 one (and of a continuous one in a file
    written before :data:`COUNT_KEYS`). A KeyError when the entry has neither pair."""
    up, down = COUNT_KEYS[SIGN_FLIP][:2]
    if up in entry:
        return int(entry[up]), int(entry[down])
    return int(entry[OLD_COUNT_KEYS[0]]), int(entry[OLD_COUNT_KEYS[1]])


def _binary_dict(change: MeasureChange) -> dict[str, Any]:
    c = change.counts
    margin = {} if change.test == SIGN else {"margin": rounded(change.margin)}
    up, down, same, zero = COUNT_KEYS[change.test]
    return {**interval_dict(change.delta, CHANGE_INTERVAL, number=rounded), "n": c.n, up: c.fixed,
            down: c.broken, same: c.both_right, zero: c.both_wrong, **margin,
            P_KEYS[change.test]: rounded_p(change.p), "p_holm": rounded_p(change.p_holm), "family": change.family,
            "mde": rounded(change.mde), "real": int(is_real(change))}


def _rr_dict(change: RRChange) -> dict[str, Any]:
    return {**interval_dict(change.delta, CHANGE_INTERVAL, number=rounded),
            "p_sign_flip": rounded_p(change.p_sign_flip), "p_holm": rounded_p(change.p_holm),
            "family": change.family, "mde": rounded(change.mde), "real": int(is_real(change))}


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """One comparison as numbers: paired n, the counts of questions only the compared config
    (``only_config``) or only the baseline (``only_baseline``) has, the measure's and RR@10's
    changes (one entry when the measure is ``rr_at_10``: the measure's, with its counts; no RR@10
    entry for answer rows), and per slice the counts, change, the measure's test p (``p_sign``
    or ``p_sign_flip``, unadjusted) and ``too_small`` (0/1). A continuous measure's entry adds
    its ``margin``. The counts are named by the measure's test (:data:`COUNT_KEYS`: ``fixed`` /
    ``broken`` for a 0/1 measure, ``better`` / ``worse`` for a continuous one). Floats are
    rounded as in the metrics files (:func:`rounded`, :func:`rounded_p`)."""
    out: dict[str, Any] = {"n": c.n, "only_config": len(c.only_new), "only_baseline": len(c.only_base)}
    if c.rr is not None:
        out[RR_COLUMN] = _rr_dict(c.rr)
    if c.binary is not None:
        out[c.binary.measure] = _binary_dict(c.binary)
    test = c.binary.test if c.binary is not None else SIGN
    up, down = COUNT_KEYS[test][:2]
    out["by_slice"] = {s.slice: {"n": s.counts.n, up: s.counts.fixed, down: s.counts.broken,
                                 "delta": rounded(s.delta), P_KEYS[test]: rounded_p(s.p),
                                 "too_small": int(s.too_small)} for s in c.by_slice.values()}
    return out
