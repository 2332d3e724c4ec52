"""Uncertainty for per-question retrieval results: intervals, paired tests, power, subsampling.

The unit of analysis is the question. Every function takes 1-D arrays of per-question
values -- hit@k as 0/1 floats, or reciprocal rank in [0, 1] -- and, where it makes sense,
a parallel array of cluster labels (the source document of each question), because
questions written from the same document are not independent.

Conventions shared by every function here:

* Randomness comes only from ``numpy.random.default_rng(seed)``: the same inputs and
  seed give identical outputs. Resamples are drawn in blocks of at most ``BLOCK`` rows
  (fewer when a row is very wide, so a block's index matrix stays under ``MAX_CELLS``
  entries); the generator's stream is continuous across blocks, so the block size never
  changes a result.
* Results are plain Python ``float``/``int`` (never numpy scalars), so they serialize to
  JSON as they are.
* Bad input raises ``ValueError`` naming what was found and what was expected: an empty
  or non-1-D array, non-finite values, arrays of unequal length, an unknown method, a
  confidence or probability outside (0, 1).

Only the standard library, numpy and scipy are used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from scipy import stats as sps
from scipy.special import ndtr, ndtri

__all__ = [
    "CHANGE_INTERVAL",
    "METRICS_INTERVAL",
    "BLOCK",
    "MAX_CELLS",
    "TOLERANCE",
    "Interval",
    "PairedCounts",
    "SubsampleRow",
    "INTERVAL_FIELDS",
    "interval_dict",
    "check_count",
    "check_open_unit",
    "resample_blocks",
    "SUBSAMPLE_PERCENTILES",
    "INTERVAL_METHODS",
    "bootstrap_mean_ci",
    "design_effect",
    "wilson_interval",
    "paired_counts",
    "margin_counts",
    "sign_test_p",
    "paired_bootstrap_ci",
    "sign_flip_p",
    "sign_flip_ps",
    "holm",
    "min_detectable_effect",
    "min_detectable_effect_sd",
    "subsample",
]

BLOCK = 2_000
"""Most resamples (rows) drawn at once."""

MAX_CELLS = 4_000_000
"""Most entries in one block's index matrix (rows x questions); bounds memory for wide inputs."""

TOLERANCE = 1e-12
"""Absolute slack for float comparisons of means: ties in the sign-flip test, "no gain" in
:func:`subsample`, and "all resamples equal" (a degenerate bootstrap distribution)."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided interval ``[low, high]`` (both bounds included).

    ``n`` is the number of questions (for :func:`wilson_interval`, the number of trials);
    ``method`` names how the bounds were found: ``"percentile"``, ``"bca"``,
    ``"cluster-percentile"``, ``"cluster-bca"`` or ``"wilson"``.
    """

    estimate: float
    low: float
    high: float
    n: int
    method: str


INTERVAL_FIELDS = ("estimate", "low", "high", "n", "method")
"""The fields of :class:`Interval`, in order: the keys :func:`interval_dict` gives by default."""

_BOUNDS = ("estimate", "low", "high")  # the float fields, those `number` applies to

METRICS_INTERVAL = {"estimate": "value", "low": "ci_low", "high": "ci_high"}
"""How ``metrics/stats.json`` and the plot data spell an interval (rounded, :func:`interval_dict`
with ``number=rounded``): ``value``, ``ci_low``, ``ci_high``. A paired change names its
estimate ``delta`` instead (:data:`CHANGE_INTERVAL`)."""

CHANGE_INTERVAL = {**METRICS_INTERVAL, "estimate": "delta"}
"""A paired change's interval in ``metrics/stats.json``: ``delta``, ``ci_low``, ``ci_high``."""


def interval_dict(
    interval: Interval | None,
    keys: Mapping[str, str] | Sequence[str] = INTERVAL_FIELDS,
    *,
    number: Callable[[float], float] | None = None,
) -> dict[str, Any]:
    """``interval`` as a JSON-ready dict: the one way an :class:`Interval` is written out.

    ``keys`` names the fields to write (of :data:`INTERVAL_FIELDS`), in output order: a
    sequence writes each under its own name (``("estimate", "low", "high")``), a mapping
    renames them (``{"estimate": "value", "low": "ci_low", "high": "ci_high"}``, the spelling of
    ``metrics/stats.json``). ``number``, when given, is applied to the float fields
    (``estimate``, ``low``, ``high``), e.g. to round them; ``n`` and ``method`` are written as
    they are. A missing interval (None) gives every key the value None (a caller that writes
    None instead of the dict says so itself). Raises ValueError on a key that is not a field.
    """
    names = dict(keys) if isinstance(keys, Mapping) else {field: field for field in keys}
    unknown = [field for field in names if field not in INTERVAL_FIELDS]
    if unknown:
        raise ValueError(f"unknown interval field(s) {unknown}; expected some of {list(INTERVAL_FIELDS)}")
    if interval is None:
        return dict.fromkeys(names.values())
    out: dict[str, Any] = {}
    for field, key in names.items():
        value = getattr(interval, field)
        out[key] = number(value) if number is not None and field in _BOUNDS else value
    return out


@dataclass(frozen=True)
class PairedCounts:
    """The 2x2 table of two configs' 0/1 outcomes on the same questions.

    ``fixed``: base missed, new hit. ``broken``: base hit, new missed. Only ``fixed`` and
    ``broken`` (the discordant pairs) carry information about which config is better.
    """

    fixed: int
    broken: int
    both_right: int
    both_wrong: int

    @property
    def n(self) -> int:
        """Number of questions."""
        return self.fixed + self.broken + self.both_right + self.both_wrong

    @property
    def disagreement(self) -> float:
        """Share of questions on which the configs disagree, ``(fixed + broken) / n``."""
        return (self.fixed + self.broken) / self.n if self.n else 0.0


@dataclass(frozen=True)
class SubsampleRow:
    """What evaluating on only ``n`` questions would have shown, over ``draws`` random subsets.

    ``baseline_low``/``baseline_high``: 5th and 95th percentile of the baseline's mean over
    the subsets (the range that holds 90% of them). ``lost_share[name]``: share of subsets
    where config ``name``'s mean gain over the baseline is <= 0 (the gain disappears or
    reverses); ``reversed_share[name]``: share where it is < 0.
    """

    n: int
    draws: int
    baseline_low: float
    baseline_high: float
    lost_share: dict[str, float]
    reversed_share: dict[str, float]


# ------------------------------------------------------------------------ validation


def _values(values: npt.ArrayLike, name: str = "values") -> np.ndarray:
    """``values`` as a non-empty 1-D float array of finite numbers, else ValueError."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must hold numbers; could not read them as floats ({error})") from None
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array of per-question values; got an array of shape {array.shape}"
        )
    if array.size == 0:
        raise ValueError(f"{name} is empty; expected at least one per-question value")
    finite = np.isfinite(array)
    if not finite.all():
        first = int(np.flatnonzero(~finite)[0])
        raise ValueError(
            f"{name} has {int((~finite).sum())} non-finite value(s) (first {array[first]} at index "
            f"{first}); expected finite numbers"
        )
    return array


def _binary(values: npt.ArrayLike, name: str) -> np.ndarray:
    """``values`` as a 1-D array of 0.0/1.0 (hit or miss), else ValueError."""
    array = _values(values, name)
    bad = ~np.isin(array, (0.0, 1.0))
    if bad.any():
        found = sorted({float(v) for v in array[bad][:5]})
        raise ValueError(f"{name} must hold only 0/1 (miss/hit) values; found {found}")
    return array


def _same_length(first: np.ndarray, second: np.ndarray, names: tuple[str, str]) -> None:
    if first.size != second.size:
        raise ValueError(
            f"{names[0]} has {first.size} values but {names[1]} has {second.size}; "
            "expected one value per question in both"
        )


def check_count(value: object, name: str, *, minimum: int = 0) -> int:
    """``value`` as a Python int >= ``minimum``, else ValueError naming ``name``.

    Python and numpy integers are counts; bools and floats (even ``3.0``) are refused. Every
    count argument here (resamples, trials, draws, sizes) and in
    :mod:`rag_ablation.evaluation.judges.agreement` is read through it.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer; got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {value}")
    return int(value)


def check_open_unit(value: float, name: str) -> float:
    """``value`` as a float strictly between 0 and 1 (a confidence, alpha or power), else
    ValueError naming ``name``. Non-numbers are refused; 0 and 1 themselves too."""
    if not isinstance(value, (int, float, np.floating, np.integer)) or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1; got {value!r}")
    return float(value)


def _labels(clusters: Sequence[Hashable] | npt.ArrayLike | None) -> Iterable[Hashable] | None:
    """The public functions' ``clusters`` (a sequence or an array of labels, or None) as the
    kernels take it: the same object, typed as an iterable of labels (no copy, no check here)."""
    return cast("Iterable[Hashable] | None", clusters)


def cluster_codes(clusters: Iterable[Hashable], n: int) -> tuple[np.ndarray, int]:
    """Integer codes 0..G-1 (in order of first appearance) for one label per question."""
    labels = list(clusters)
    if len(labels) != n:
        raise ValueError(
            f"clusters has {len(labels)} labels but there are {n} questions; "
            "expected one cluster label per question"
        )
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(label, len(index)) for label in labels), dtype=np.intp, count=n)
    if len(index) < 2:
        raise ValueError(
            f"clusters has {len(index)} distinct label; the cluster bootstrap needs at least 2 clusters"
        )
    return codes, len(index)


# ------------------------------------------------------------------------- bootstrap


def resample_blocks(total: int, width: int) -> Iterator[tuple[int, int]]:
    """``(start, rows)`` pairs covering ``total`` resample rows of ``width`` columns, in order.

    Each block has at most ``BLOCK`` rows and, for wide rows, at most ``MAX_CELLS // width``
    (never fewer than 1). Drawing every block from one generator in this order gives the same
    stream whatever the block size, so results never depend on it (module docstring).
    """
    step = max(1, min(BLOCK, MAX_CELLS // max(width, 1)))
    for start in range(0, total, step):
        yield start, min(step, total - start)


def _plain_means(values: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` resamples of ``values`` drawn with replacement (same size)."""
    n = values.size
    means = np.empty(n_resamples)
    for start, rows in resample_blocks(n_resamples, n):
        means[start : start + rows] = values[rng.integers(0, n, size=(rows, n))].mean(axis=1)
    return means


def _cluster_means(
    sums: np.ndarray, counts: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Means over all questions of ``n_resamples`` resamples of whole clusters (with replacement).

    Each resample draws as many clusters as there are; its mean is the total of the values
    in the drawn clusters over the total number of questions in them.
    """
    g = sums.size
    means = np.empty(n_resamples)
    for start, rows in resample_blocks(n_resamples, g):
        drawn = rng.integers(0, g, size=(rows, g))
        means[start : start + rows] = sums[drawn].sum(axis=1) / counts[drawn].sum(axis=1)
    return means


@dataclass(frozen=True)
class _Resampled:
    """A bootstrap distribution of the mean and what the interval methods need besides."""

    estimate: float
    means: np.ndarray
    jackknife: Callable[[], np.ndarray]  # leave-one-unit-out means (questions or clusters)
    clustered: bool


def _resample_mean(
    values: np.ndarray, clusters: Iterable[Hashable] | None, n_resamples: int, seed: int
) -> _Resampled:
    rng = np.random.default_rng(seed)
    estimate = float(values.mean())
    if clusters is None:
        total, n = values.sum(), values.size
        return _Resampled(
            estimate,
            _plain_means(values, n_resamples, rng),
            lambda: (total - values) / (n - 1),
            clustered=False,
        )
    codes, g = cluster_codes(clusters, values.size)
    sums = np.bincount(codes, weights=values, minlength=g)
    counts = np.bincount(codes, minlength=g).astype(float)
    return _Resampled(
        estimate,
        _cluster_means(sums, counts, n_resamples, rng),
        lambda: (sums.sum() - sums) / (counts.sum() - counts),
        clustered=True,
    )


def _percentile_bounds(resampled: _Resampled, alpha: float) -> tuple[float, float]:
    """Percentile interval: the ``alpha`` and ``1 - alpha`` quantiles of the bootstrap means
    (``numpy.percentile``, linear interpolation, as ``scipy.stats.bootstrap`` uses)."""
    low, high = np.percentile(resampled.means, [100 * alpha, 100 * (1 - alpha)])
    return float(low), float(high)


def _bca_bounds(resampled: _Resampled, alpha: float) -> tuple[float, float]:
    """Bias-corrected and accelerated interval, as ``scipy.stats.bootstrap(method="BCa")``.

    Bias ``z0 = Phi^-1(share)``, where share counts bootstrap means below the estimate plus
    half of those equal to it, over B (clipped to [1/2B, 1 - 1/2B] so ``z0`` stays finite;
    scipy returns NaN there). Acceleration ``a = sum(u^3) / (6 * sum(u^2)^1.5)`` with
    ``u = mean(jackknife) - jackknife``, the jackknife leaving out one question, or one
    cluster in the cluster bootstrap; ``a = 0`` when all jackknife means are equal. The
    bounds are the quantiles ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` for ``z = -+
    Phi^-1(1 - alpha)`` of the bootstrap means.
    """
    means = resampled.means
    b = means.size
    share = (np.count_nonzero(means < resampled.estimate) + np.count_nonzero(means <= resampled.estimate)) / (
        2 * b
    )
    z0 = float(ndtri(min(max(share, 0.5 / b), 1 - 0.5 / b)))
    jackknife = resampled.jackknife()
    u = jackknife.mean() - jackknife
    spread = float(np.sum(u**2))
    accel = float(np.sum(u**3)) / (6 * spread**1.5) if spread > 0 else 0.0
    z = float(ndtri(alpha))
    quantiles = [ndtr(z0 + (z0 + zz) / (1 - accel * (z0 + zz))) for zz in (z, -z)]
    low, high = np.percentile(means, [100 * q for q in quantiles])
    return float(low), float(high)


INTERVAL_METHODS: dict[str, Callable[[_Resampled, float], tuple[float, float]]] = {
    "percentile": _percentile_bounds,
    "bca": _bca_bounds,
}
"""Bootstrap interval methods by name; each maps (bootstrap distribution, alpha) to (low, high)."""


def _interval_method(method: str) -> Callable[[_Resampled, float], tuple[float, float]]:
    try:
        return INTERVAL_METHODS[method]
    except (KeyError, TypeError):
        raise ValueError(f"unknown interval method {method!r}; expected one of {sorted(INTERVAL_METHODS)}") from None


def _bootstrap_interval(
    values: np.ndarray,
    *,
    method: str,
    n_resamples: int,
    seed: int,
    confidence: float,
    clusters: Iterable[Hashable] | None,
) -> Interval:
    bounds = _interval_method(method)
    confidence = check_open_unit(confidence, "confidence")
    n_resamples = check_count(n_resamples, "n_resamples", minimum=1)
    resampled = _resample_mean(values, clusters, n_resamples, seed)
    label = f"cluster-{method}" if resampled.clustered else method
    estimate = resampled.estimate
    if np.ptp(resampled.means) <= TOLERANCE * max(1.0, abs(estimate)):
        # Every resample has the same mean (a constant sample, or equal cluster means):
        # the interval is the point itself. BCa would divide 0 by 0 here.
        return Interval(estimate, estimate, estimate, int(values.size), label)
    low, high = bounds(resampled, (1 - confidence) / 2)
    return Interval(estimate, low, high, int(values.size), label)


def bootstrap_mean_ci(
    values: npt.ArrayLike,
    *,
    method: str = "percentile",
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    clusters: Sequence[Hashable] | npt.ArrayLike | None = None,
) -> Interval:
    """Bootstrap confidence interval for the mean of per-question ``values``.

    ``method`` is a key of :data:`INTERVAL_METHODS`: ``"percentile"`` (the ``(1-c)/2`` and
    ``(1+c)/2`` quantiles of the resampled means) or ``"bca"`` (bias-corrected and
    accelerated, as ``scipy.stats.bootstrap`` defines it). Without ``clusters`` each
    resample draws ``len(values)`` questions with replacement. With ``clusters`` (one
    hashable label per question, at least 2 distinct) each resample draws as many whole
    clusters as there are, with replacement, and its mean is the total of their values over
    their total number of questions (cluster bootstrap); BCa's jackknife then leaves out one
    cluster at a time, and the method is reported as ``"cluster-<method>"``.

    ``estimate`` is the plain mean and ``n`` the number of questions. If every resample has
    the same mean (e.g. a constant sample, or a single question) the result is
    ``low == high == estimate``. Raises ValueError on empty, non-1-D or non-finite
    ``values``, an unknown ``method``, ``confidence`` outside (0, 1), ``n_resamples`` < 1,
    or ``clusters`` of the wrong length or with fewer than 2 labels.
    """
    return _bootstrap_interval(
        _values(values),
        method=method,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        clusters=_labels(clusters),
    )


def design_effect(
    values: npt.ArrayLike,
    clusters: Sequence[Hashable] | npt.ArrayLike,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> float:
    """Variance of the cluster-bootstrap mean over the variance of the plain-bootstrap mean.

    Both variances use ``ddof=1`` over ``n_resamples`` resamples drawn from one generator
    seeded with ``seed`` (plain first, then cluster). 1.0 means clustering changes nothing;
    above 1, questions from one document move together and the plain interval is too
    narrow (its width should grow by about the square root of this). Returns 1.0 when the
    plain bootstrap has no spread (a constant sample). Raises ValueError as
    :func:`bootstrap_mean_ci` does, and when ``n_resamples`` < 2.
    """
    array = _values(values)
    n_resamples = check_count(n_resamples, "n_resamples", minimum=2)
    codes, g = cluster_codes(cast(Iterable[Hashable], clusters), array.size)
    rng = np.random.default_rng(seed)
    plain = _plain_means(array, n_resamples, rng)
    if np.ptp(plain) <= TOLERANCE * max(1.0, abs(float(array.mean()))):
        return 1.0
    sums = np.bincount(codes, weights=array, minlength=g)
    counts = np.bincount(codes, minlength=g).astype(float)
    clustered = _cluster_means(sums, counts, n_resamples, rng)
    return float(clustered.var(ddof=1) / plain.var(ddof=1))


def paired_bootstrap_ci(
    base: npt.ArrayLike,
    new: npt.ArrayLike,
    *,
    method: str = "percentile",
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    clusters: Sequence[Hashable] | npt.ArrayLike | None = None,
) -> Interval:
    """Bootstrap interval for ``mean(new - base)``, resampling questions (or clusters) jointly.

    ``base`` and ``new`` are the two configs' values on the same questions, in the same
    order; the interval is :func:`bootstrap_mean_ci` of the per-question differences, with
    the same ``method``, ``clusters`` and errors, plus ValueError on unequal lengths.
    """
    before = _values(base, "base")
    after = _values(new, "new")
    _same_length(before, after, ("base", "new"))
    return _bootstrap_interval(
        after - before,
        method=method,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        clusters=_labels(clusters),
    )


# ------------------------------------------------------------------ binary outcomes


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a proportion ``successes / n`` (no continuity correction).

    With ``z = Phi^-1((1 + confidence) / 2)`` and ``p = successes / n``, the bounds are
    ``(2np + z^2 -+ z sqrt(z^2 + 4np(1-p))) / (2(n + z^2))``, clipped to [0, 1]; this is
    ``scipy.stats.binomtest(successes, n).proportion_ci(method="wilson")``. Raises
    ValueError when ``n`` is 0, counts are negative or not integers, ``successes > n``, or
    ``confidence`` is outside (0, 1).
    """
    successes = check_count(successes, "successes")
    n = check_count(n, "n")
    if n == 0:
        raise ValueError("n is 0; a Wilson interval needs at least one trial")
    if successes > n:
        raise ValueError(f"successes ({successes}) exceeds n ({n}); expected 0 <= successes <= n")
    confidence = check_open_unit(confidence, "confidence")
    p = successes / n
    low, high = wilson_bounds(p, n, confidence=confidence)
    return Interval(p, low, high, n, "wilson")


def wilson_bounds(p: float, n: float, *, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson bounds of ``wilson_interval`` for a proportion ``p`` at a sample size ``n``
    that may be fractional (an effective size), clipped to [0, 1]; ``n`` must be positive."""
    z = float(ndtri(0.5 + check_open_unit(confidence, "confidence") / 2))
    denominator = 2 * (n + z * z)
    center = (2 * n * p + z * z) / denominator
    half = z * math.sqrt(z * z + 4 * n * p * (1 - p)) / denominator
    return max(0.0, center - half), min(1.0, center + half)


def paired_counts(base: npt.ArrayLike, new: npt.ArrayLike) -> PairedCounts:
    """Count fixed (0 -> 1), broken (1 -> 0), both-right and both-wrong questions.

    ``base`` and ``new`` are 0/1 (or boolean) outcomes of two configs on the same questions
    in the same order. Raises ValueError when either is empty or holds anything but 0/1, or
    when their lengths differ.
    """
    before = _binary(base, "base").astype(bool)
    after = _binary(new, "new").astype(bool)
    _same_length(before, after, ("base", "new"))
    return PairedCounts(
        fixed=int(np.count_nonzero(~before & after)),
        broken=int(np.count_nonzero(before & ~after)),
        both_right=int(np.count_nonzero(before & after)),
        both_wrong=int(np.count_nonzero(~before & ~after)),
    )


def margin_counts(base: npt.ArrayLike, new: npt.ArrayLike, *, margin: float) -> PairedCounts:
    """The paired table of a continuous per-question measure (RR@10, nDCG@10, recall@100).

    ``fixed``: ``new - base > margin`` (better by more than the margin); ``broken``:
    ``base - new > margin``; of the rest (within the margin), ``both_wrong`` where both values
    are 0 and ``both_right`` otherwise. For 0/1 values and ``0 <= margin < 1`` this is exactly
    :func:`paired_counts`. Raises ValueError on empty, non-finite or unequal-length input, or a
    negative margin.
    """
    before = _values(base, "base")
    after = _values(new, "new")
    _same_length(before, after, ("base", "new"))
    if not isinstance(margin, (int, float, np.floating, np.integer)) or not 0.0 <= margin < math.inf:
        raise ValueError(f"margin must be a finite number >= 0; got {margin!r}")
    change = after - before
    better, worse = change > margin, -change > margin
    within = ~better & ~worse
    zero = within & (before == 0) & (after == 0)
    return PairedCounts(fixed=int(np.count_nonzero(better)), broken=int(np.count_nonzero(worse)),
                        both_right=int(np.count_nonzero(within & ~zero)), both_wrong=int(np.count_nonzero(zero)))


def sign_test_p(fixed: int, broken: int) -> float:
    """Exact two-sided McNemar test: binomial test of ``fixed`` out of ``fixed + broken`` at 0.5.

    Uses ``scipy.stats.binomtest(fixed, fixed + broken, 0.5).pvalue``. Returns 1.0 when there
    are no discordant questions (``fixed + broken == 0``). Raises ValueError on negative or
    non-integer counts.
    """
    fixed = check_count(fixed, "fixed")
    broken = check_count(broken, "broken")
    if fixed + broken == 0:
        return 1.0
    return float(sps.binomtest(fixed, fixed + broken, 0.5, alternative="two-sided").pvalue)


# ----------------------------------------------------------------- continuous paired


def sign_flip_p(differences: npt.ArrayLike, *, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided paired permutation (sign-flip) test that the mean difference is 0.

    Each of ``n_resamples`` resamples flips the sign of every difference independently with
    probability 1/2; ``k`` counts resamples whose ``|mean| >= |observed mean| - TOLERANCE``.
    Returns ``(k + 1) / (n_resamples + 1)``, so never 0 (the smallest value is
    ``1 / (n_resamples + 1)``). Returns 1.0 when every difference is exactly 0. Raises
    ValueError on empty, non-1-D or non-finite input, or ``n_resamples`` < 1.
    """
    d = _values(differences, "differences")
    return sign_flip_ps(d[:, None], n_resamples=n_resamples, seed=seed)[0]


def sign_flip_ps(differences: npt.ArrayLike, *, n_resamples: int = 10_000, seed: int = 0) -> list[float]:
    """:func:`sign_flip_p` of every column of ``differences`` (questions x comparisons), from
    the same flips: each resample flips question q's sign in every column at once, so column j's
    p-value is exactly ``sign_flip_p(differences[:, j], n_resamples=..., seed=...)`` (one draw
    matrix, one matrix product for all columns). Raises ValueError on an empty, non-2-D or
    non-finite matrix, or ``n_resamples`` < 1."""
    d = np.asarray(differences, dtype=float)
    if d.ndim != 2 or d.shape[0] == 0:
        raise ValueError(f"differences must be a non-empty questions x comparisons matrix; got shape {d.shape}")
    _values(d.ravel(), "differences")
    n_resamples = check_count(n_resamples, "n_resamples", minimum=1)
    n = d.shape[0]
    totals = d.sum(axis=0)
    threshold = np.abs(totals / n) - TOLERANCE
    rng = np.random.default_rng(seed)
    extreme = np.zeros(d.shape[1], dtype=np.int64)
    for _, rows in resample_blocks(n_resamples, n):
        flipped = rng.random((rows, n)) < 0.5
        means = (totals - 2.0 * (flipped @ d)) / n
        extreme += np.count_nonzero(np.abs(means) >= threshold, axis=0)
    zero = np.asarray(~d.any(axis=0))
    return [1.0 if zero[j] else (int(extreme[j]) + 1) / (n_resamples + 1) for j in range(d.shape[1])]


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order.

    Sorting ascending, the i-th smallest (i = 0..m-1) becomes ``(m - i) * p``, then a running
    maximum makes them monotone, and each is capped at 1. Reject at level alpha exactly the
    hypotheses whose adjusted p-value is <= alpha. An empty input gives ``[]``. Raises
    ValueError on a p-value outside [0, 1] or not a number.
    """
    p = np.asarray(list(pvalues), dtype=float)
    if p.size == 0:
        return []
    if p.ndim != 1:
        raise ValueError(f"pvalues must be a flat sequence of numbers; got shape {p.shape}")
    bad = ~((p >= 0) & (p <= 1))  # also catches NaN
    if bad.any():
        raise ValueError(f"p-values must lie in [0, 1]; found {sorted({float(v) for v in p[bad]})}")
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return [float(v) for v in adjusted]


# ----------------------------------------------------------------------------- power


def _z_sum(alpha: float, power: float) -> float:
    """``Phi^-1(1 - alpha/2) + Phi^-1(power)``: the two-sided test's z plus power's z."""
    alpha = check_open_unit(alpha, "alpha")
    power = check_open_unit(power, "power")
    return float(ndtri(1 - alpha / 2) + ndtri(power))


def min_detectable_effect(n: int, disagreement: float, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest difference in hit rate that a paired test on ``n`` questions detects reliably.

    ``(z_{1-alpha/2} + z_{power}) * sqrt(disagreement / n)``, where ``disagreement`` is the
    share of questions on which the two configs disagree, ``(fixed + broken) / n`` (the
    variance of the paired difference under no effect is ``disagreement / n``). For example
    n=100 and disagreement 0.2 give 0.1253. Returns ``math.inf`` for ``n == 0``. Raises
    ValueError when ``disagreement`` is outside [0, 1] or ``alpha``/``power`` outside (0, 1).
    """
    n = check_count(n, "n")
    if not isinstance(disagreement, (int, float, np.floating, np.integer)) or not 0.0 <= disagreement <= 1.0:
        raise ValueError(f"disagreement must be a share in [0, 1]; got {disagreement!r}")
    z = _z_sum(alpha, power)
    if n == 0:
        return math.inf
    return z * math.sqrt(float(disagreement) / n)


def min_detectable_effect_sd(n: int, sd: float, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest mean difference a paired test on ``n`` questions detects reliably, for
    continuous per-question differences (e.g. reciprocal rank) with standard deviation ``sd``.

    ``(z_{1-alpha/2} + z_{power}) * sd / sqrt(n)``. Returns ``math.inf`` for ``n == 0``.
    Raises ValueError when ``sd`` is negative or not finite, or ``alpha``/``power`` are
    outside (0, 1).
    """
    n = check_count(n, "n")
    if not isinstance(sd, (int, float, np.floating, np.integer)) or not (0.0 <= sd < math.inf):
        raise ValueError(f"sd must be a finite standard deviation >= 0; got {sd!r}")
    z = _z_sum(alpha, power)
    if n == 0:
        return math.inf
    return z * float(sd) / math.sqrt(n)


# ------------------------------------------------------------------------ subsampling

SUBSAMPLE_PERCENTILES = (5.0, 95.0)
"""Percentiles of the baseline's subset means reported by :func:`subsample` (a 90% range)."""


def subsample(
    baseline: npt.ArrayLike,
    others: Mapping[str, npt.ArrayLike],
    *,
    sizes: Sequence[int],
    draws: int = 1000,
    seed: int = 0,
) -> list[SubsampleRow]:
    """How often would an evaluation on only ``n`` questions have hidden a real gain?

    For each size ``n`` (sizes above the number of questions are clipped to it, duplicates
    dropped, rows sorted by ``n``), draw ``draws`` subsets of ``n`` distinct questions
    (without replacement), the same subsets for the baseline and every config in
    ``others`` (paired). Each row gives the 5th and 95th percentile of the baseline's mean
    over the subsets, and per config the share of subsets where its mean gain over the
    baseline (the mean of per-question differences) is <= TOLERANCE ("lost") or
    < -TOLERANCE ("reversed"). At the full size every subset is the whole set, so the
    baseline range is the full mean and each share is 0 or 1.

    Raises ValueError on an empty or non-finite baseline, a config whose length differs
    from the baseline's, an empty ``sizes``, a size < 1, or ``draws`` < 1.
    """
    base = _values(baseline, "baseline")
    total = base.size
    gains = {}
    for name, values in others.items():
        config = _values(values, f"others[{name!r}]")
        _same_length(base, config, ("baseline", f"others[{name!r}]"))
        gains[str(name)] = config - base
    draws = check_count(draws, "draws", minimum=1)
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sizes is empty; expected at least one number of questions")
    ns = sorted({min(check_count(size, "each size", minimum=1), total) for size in sizes})

    rng = np.random.default_rng(seed)
    rows = []
    for n in ns:
        if n == total:
            full = float(base.mean())
            low = high = full
            lost = {name: float(gain.mean() <= TOLERANCE) for name, gain in gains.items()}
            reversed_ = {name: float(gain.mean() < -TOLERANCE) for name, gain in gains.items()}
        else:
            base_means = np.empty(draws)
            gain_means = {name: np.empty(draws) for name in gains}
            for start, count in resample_blocks(draws, total):
                keys = rng.random((count, total))
                chosen = np.argpartition(keys, n - 1, axis=1)[:, :n]  # n smallest keys: a uniform subset
                base_means[start : start + count] = base[chosen].mean(axis=1)
                for name, gain in gains.items():
                    gain_means[name][start : start + count] = gain[chosen].mean(axis=1)
            low, high = (float(v) for v in np.percentile(base_means, SUBSAMPLE_PERCENTILES))
            lost = {name: float(np.mean(m <= TOLERANCE)) for name, m in gain_means.items()}
            reversed_ = {name: float(np.mean(m < -TOLERANCE)) for name, m in gain_means.items()}
        rows.append(SubsampleRow(n, draws, low, high, lost, reversed_))
    return rows
