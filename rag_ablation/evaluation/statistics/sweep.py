"""Naming a sweep's winner honestly: many candidates, one question set, the selection accounted for.

A *candidate* is one retrieval config as scored on one *side* (a git revision, a DVC experiment
or the workspace), named ``CONFIG@SIDE``. Every candidate's per-question scores (the committed
``metrics/scores/retrieval.csv``) are read as they are: nothing is searched again.

Questions. Only questions answerable in every candidate are used (:func:`candidate_matrix`); a
question answerable in some candidates and not others is named and never used. With a dev/test
split, the winner is chosen on the dev questions only and confirmed on the test questions.

Everything comes from one bootstrap (:func:`bootstrap_means`): ``B`` draws of the questions with
replacement (or of whole source documents, with ``stats.cluster``), the *same* draw for every
candidate, so candidates stay paired inside each draw. From the ``B x K`` matrix of resampled
means:

- each candidate's mean with its percentile interval;
- its *rank* (1 = best; tied means share the best rank, "competition" ranking) and the rank
  interval: the ``alpha/2`` quantile (numpy ``lower``) and the ``1 - alpha/2`` quantile
  (``higher``) of its rank across the draws (:func:`rank_interval`), so the bounds are ranks;


Copies (:func:`distinct`): candidates whose per-question values are identical on every paired
question (e.g. ``bm25`` on two sides that differ only in a param bm25 never reads) are one
candidate, named by the first of them, with the others listed as its aliases, so the family of
pairs is not inflated by copies.

Pairwise and the tie set (:func:`pairwise_wins`, :func:`pairwise_p`, :func:`beats`,
:func:`tie_set`): the measure's paired test for each pair (``comparison.TESTS``), Holm's
adjustment over all ``K (K - 1) / 2`` pairs. For a 0/1 measure: the questions one candidate gets
right and the other wrong, the exact two-sided sign test on those counts (as
``inference.sign_test_p``); for a continuous one (RR@10, nDCG@10, recall@100): the questions one
is better on by more than ``stats.margin``, and the paired sign-flip test of the differences
(``inference.sign_flip_ps``, every pair from the same seeded flips, ``p = (k + 1) / (B + 1)``).
``i`` beats ``j`` when its mean is higher and the adjusted p is below ``alpha`` (for a 0/1
measure: it wins more of their disagreeing questions). The *tie set* is every candidate no
candidate beats. It accounts for the choice of
the best: every candidate is tested against every other at once, never against the observed
best alone, and the true best leaves the set only if some pair is wrongly declared different,
which Holm's familywise guarantee (with exact tests) keeps at or below ``alpha`` whatever the
true scores. The Model Confidence Set (Hansen, Lunde and Nason 2011) was tried first: its
bootstrap ``T_R`` rule, matching ``arch.bootstrap.MCS`` to the digit on continuous scores, dropped
a truly-best candidate in 7% of null simulations with 5 candidates and 12% with 20 (0/1 scores,
150 to 200 questions, level 5%), so it is not used.

The *win rate* against the baseline is ``wins / (wins + losses)`` over the disagreeing questions
(better / worse by more than the margin for a continuous measure; None when there are none).

Quality against cost (:func:`pareto_front`): a candidate is on the front when no other is at
least as good on the measure and at least as fast (P95 retrieval latency per query, latencies
within :data:`COST_TOLERANCE` or :data:`COST_FLOOR_MS` of each other counting as equal), and
strictly better on one. A
candidate without a latency (none timed by the shared rule, ``support.latency_rule.WARM``) is neither
on the front nor dominates any other.

Dev and test (:func:`summarise`): the winner is the dev-best candidate (the first of exact
ties, in candidate order); its test mean and interval, its paired change against the baseline on
test, and the *winner's curse*: its dev mean minus its test mean. The dev and test questions
are disjoint, so the curse's interval comes from independent draws of each (test seeded with
``seed + 1``). With no split, everything is measured on all questions and the curse cannot be
measured.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from rag_ablation.core.config import StatsConfig
from rag_ablation.core.errors import UserError
from rag_ablation.evaluation.statistics.comparison import SIGN, TESTS, answerable, column_values, measure_of_rows
from rag_ablation.evaluation.statistics.inference import (
    Interval,
    cluster_codes,
    holm,
    resample_blocks,
    sign_flip_ps,
)

Row = Mapping[str, Any]

PROCEDURES = {
    "sign": ("every candidate against every other at once: exact sign tests on the questions each pair disagrees "
             "on, Holm-adjusted over all pairs; the tie set is every candidate no other beats"),
    "sign-flip": ("every candidate against every other at once: paired sign-flip tests of the per-question "
                  "differences, Holm-adjusted over all pairs; the tie set is every candidate no other beats"),
}
"""How the tie set is found, as the report names it, per test of ``comparison.TESTS``."""


def procedure(measure: str) -> str:
    """:data:`PROCEDURES` of the measure's test."""
    return PROCEDURES[TESTS[measure]]


# ------------------------------------------------------------------------------ questions


@dataclass(frozen=True)
class CandidateMatrix:
    """Per-question values of K candidates on the same Q questions.

    ``values[q, k]`` is candidate ``names[k]``'s value on question ``ids[q]``; ``docs`` and
    ``slices`` are read from the first candidate. ``unpaired`` lists the ids answerable in some
    candidates but not all (sorted); they are not in ``ids``.
    """

    names: tuple[str, ...]
    ids: tuple[str, ...]
    docs: tuple[str, ...]
    slices: tuple[str, ...]
    values: np.ndarray
    unpaired: tuple[str, ...]

    def restrict(self, keep: Sequence[str]) -> CandidateMatrix:
        """The same candidates on the questions of ``keep`` (an id set), in this matrix's order."""
        wanted = set(keep)
        rows = [q for q, i in enumerate(self.ids) if i in wanted]
        return CandidateMatrix(self.names, tuple(self.ids[q] for q in rows), tuple(self.docs[q] for q in rows),
                               tuple(self.slices[q] for q in rows), self.values[rows], self.unpaired)


def candidate_matrix(candidates: Mapping[str, Sequence[Row]], column: str) -> CandidateMatrix:
    """The ``column`` of every candidate (name -> its per-question rows) on the questions
    answerable in all of them, in the first candidate's row order."""
    if not candidates:
        raise UserError("no candidates: a sweep summary needs at least two")
    by_name = {name: {r["id"]: r for r in answerable(rows)} for name, rows in candidates.items()}
    first = next(iter(by_name.values()))
    shared = [i for i in first if all(i in rows for rows in by_name.values())]
    seen = set().union(*(set(rows) for rows in by_name.values()))
    if not shared:
        raise UserError(f"the {len(candidates)} candidates share no answerable question; compare sides scored on "
                        "the same question set")
    values = np.column_stack([column_values([rows[i] for i in shared], column) for rows in by_name.values()])
    return CandidateMatrix(tuple(candidates), tuple(shared), tuple(str(first[i]["doc"]) for i in shared),
                           tuple(str(first[i]["slice"]) for i in shared), values, tuple(sorted(seen - set(shared))))


# ------------------------------------------------------------------------------ bootstrap


def bootstrap_means(values: np.ndarray, *, resamples: int, seed: int,
                    clusters: Sequence[str] | None = None) -> np.ndarray:
    """``resamples x K`` means of ``values`` (``Q x K``) over resampled questions, one draw shared
    by all K columns.

    Without ``clusters``: each draw takes Q questions with replacement (as counts, so a draw is
    one matrix product). With ``clusters`` (one label per question, at least two distinct): each
    draw takes as many whole clusters as there are, with replacement, and a column's mean is
    the total over the drawn clusters' questions divided by their number (as
    ``inference.bootstrap_mean_ci`` with ``clusters``). Draws come in blocks from one
    ``numpy.random.default_rng(seed)``, so the result does not depend on the block size.
    """
    q, k = values.shape
    rng = np.random.default_rng(seed)
    out = np.empty((resamples, k))
    if clusters is None:
        for start, rows in resample_blocks(resamples, q):
            drawn = rng.integers(0, q, size=(rows, q))
            weights = np.bincount((drawn + q * np.arange(rows)[:, None]).ravel(), minlength=rows * q)
            out[start:start + rows] = weights.reshape(rows, q) @ values / q
        return out
    codes, g = cluster_codes(clusters, q)
    for start, rows in resample_blocks(resamples, g):
        drawn = rng.integers(0, g, size=(rows, g))
        counts = np.bincount((drawn + g * np.arange(rows)[:, None]).ravel(), minlength=rows * g).reshape(rows, g)
        weights = counts[:, codes]
        out[start:start + rows] = (weights @ values) / weights.sum(axis=1, keepdims=True)
    return out


def percentile_interval(draws: np.ndarray, estimate: float, confidence: float) -> Interval:
    """The percentile interval of one column of draws (numpy's linear interpolation)."""
    alpha = (1 - confidence) / 2
    low, high = np.percentile(draws, [100 * alpha, 100 * (1 - alpha)])
    return Interval(float(estimate), float(low), float(high), 0, "percentile")


# ----------------------------------------------------------------------------------- ranks


def ranks(means: np.ndarray) -> np.ndarray:
    """Competition ranks along the last axis: 1 + the number of strictly larger means (1 = best;
    equal means share the better rank)."""
    means = np.asarray(means, dtype=float)
    return 1 + (means[..., None, :] > means[..., :, None]).sum(axis=-1)


def rank_interval(draws: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's rank interval over the draws (``B x K``): the ``alpha/2`` quantile of its
    ranks (numpy ``method="lower"``) and the ``1 - alpha/2`` quantile (``"higher"``), so both
    bounds are ranks some draw gave. Ranks are computed in blocks of draws."""
    alpha = (1 - confidence) / 2
    b, k = draws.shape
    r = np.empty((b, k), dtype=np.int64)
    for start, rows in resample_blocks(b, k * k):
        r[start:start + rows] = ranks(draws[start:start + rows])
    return (np.quantile(r, alpha, axis=0, method="lower").astype(int),
            np.quantile(r, 1 - alpha, axis=0, method="higher").astype(int))


# ------------------------------------------------------------------------------- pairwise


def pairwise_wins(values: np.ndarray, margin: float = 0.0) -> np.ndarray:
    """``W[i, j]``: the questions where candidate i's value exceeds j's by more than ``margin``
    (for 0/1 values and margin 0: i's is 1 and j's is 0)."""
    x = np.asarray(values, dtype=float)
    return ((x[:, :, None] - x[:, None, :]) > margin).sum(axis=0).astype(np.int64)


def pairwise_p(values: np.ndarray, *, measure: str, wins: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The unadjusted two-sided p-value of every pair (symmetric, diagonal 1) by the measure's
    test: :func:`sign_test_matrix` of ``wins`` for a 0/1 measure; for a continuous one the
    paired sign-flip test of ``values[:, i] - values[:, j]`` (``inference.sign_flip_ps``: each
    pair's p equals ``inference.sign_flip_p`` of its differences with ``resamples`` and ``seed``)."""
    if TESTS[measure] == SIGN:
        return sign_test_matrix(wins)
    k = values.shape[1]
    upper = np.triu_indices(k, 1)
    p = np.ones((k, k))
    if upper[0].size:
        p[upper] = sign_flip_ps(values[:, upper[0]] - values[:, upper[1]], n_resamples=resamples, seed=seed)
        p.T[upper] = p[upper]
    return p


def sign_test_matrix(wins: np.ndarray) -> np.ndarray:
    """The exact two-sided sign test of ``W[i, j]`` against ``W[j, i]`` for every pair:
    ``min(1, 2 * BinomCDF(min(a, b); a + b, 1/2))`` (``scipy.stats.binomtest``'s value at p=1/2),
    1.0 when the pair never disagrees."""
    a, b = wins, wins.T
    n = a + b
    p = np.minimum(1.0, 2.0 * sps.binom.cdf(np.minimum(a, b), n, 0.5))
    return np.where(n == 0, 1.0, p)


def beats(means: np.ndarray, raw: np.ndarray, alpha: float) -> tuple[list[list[int]], np.ndarray]:
    """For each candidate, the candidates it beats (sorted): a higher mean and a Holm-adjusted p
    below ``alpha``; and the Holm-adjusted p-value matrix (symmetric, diagonal 1): Holm over all
    ``K (K - 1) / 2`` pairs of ``raw`` (:func:`pairwise_p`)."""
    means = np.asarray(means, dtype=float)
    k = means.shape[0]
    upper = np.triu_indices(k, 1)
    adjusted = np.ones((k, k))
    if upper[0].size:
        adjusted[upper] = holm(raw[upper].tolist())
        adjusted.T[upper] = adjusted[upper]
    out = [[j for j in range(k) if j != i and adjusted[i, j] < alpha and means[i] > means[j]] for i in range(k)]
    return out, adjusted


def tie_set(beaten: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The candidates (sorted indices) that no candidate beats, from :func:`beats`' lists."""
    lost = {j for row in beaten for j in row}
    return tuple(k for k in range(len(beaten)) if k not in lost)


def letters(count: int) -> list[str]:
    """``count`` short labels in order: a..z, then aa, ab, ..., az, ba, ... (bijective base 26)."""
    out = []
    for n in range(1, count + 1):
        label = ""
        while n:
            n, r = divmod(n - 1, 26)
            label = chr(ord("a") + r) + label
        out.append(label)
    return out


def win_rate(wins: np.ndarray, i: int, j: int) -> float | None:
    """Share of the questions where i and j disagree that i gets right; None if none."""
    total = int(wins[i, j] + wins[j, i])
    return None if total == 0 else float(wins[i, j]) / total


# ------------------------------------------------------------------------------ the front


COST_TOLERANCE = 0.5
"""Two latencies within this share of each other (up to 1.5x) count as the same cost on the Pareto
front (:func:`pareto_front`): a smaller difference between two configs' P95 is not evidence that
one is faster. On the 2-core machine a config's P95 moved by up to 1.7x over seven committed runs
(the seven of ``tests/fixtures/latency_runs.json`` timed there; the pooled standard deviation of
its log is 0.13, so two configs of the same true cost come out within 1.5x of each other in about
97% of runs). At 25% (until issue 47) the front moved: one run timed ``hybrid`` at 18.9 ms and
``hybrid_fixed1000``, better, at 24.2 ms (1.28x), which put ``hybrid`` on the front in one of
nine committed runs and nowhere else."""

COST_FLOOR_MS = 5.0
"""Two latencies less than this many milliseconds apart also count as the same cost: a step of
1 to 3 ms (BM25 on the example) is timed to within the scheduler's jitter, and its P95 moved by
up to 2.3 ms from one run to the next on the 2-core machine (``benchmarks/pareto_repeat.py``),
which the relative tolerance alone turned into a different front. 5 ms per query is nothing
beside an answer's seconds."""


def pareto_front(quality: Sequence[float], cost: Sequence[float | None],
                 tolerance: float = COST_TOLERANCE, floor_ms: float = COST_FLOOR_MS) -> list[bool]:
    """True for each candidate no other dominates. ``j`` dominates ``i`` when it is at least as
    good (``q_j >= q_i``) and no costlier beyond the tolerance (``c_j <= c_i * (1 + tolerance)``
    or ``c_j <= c_i + floor_ms``), and strictly better on one: ``q_j > q_i``, or cheaper beyond
    the tolerance (``c_j * (1 + tolerance) < c_i`` and ``c_j + floor_ms < c_i``). So costs within
    the tolerance, or within ``floor_ms`` milliseconds, are compared on quality alone, and timing
    noise smaller than that cannot move a candidate on or off the front. ``tolerance`` and
    ``floor_ms`` 0 give the textbook front. A candidate with cost None is never on the front and
    dominates nothing."""
    if tolerance < 0 or floor_ms < 0:
        raise ValueError(f"tolerance and floor_ms must be 0 or more; got {tolerance} and {floor_ms}")
    slack = 1.0 + tolerance

    def no_dearer(cj: float, ci: float) -> bool:
        return cj <= ci * slack or cj <= ci + floor_ms

    def cheaper(cj: float, ci: float) -> bool:
        return cj * slack < ci and cj + floor_ms < ci

    out = []
    for i, (qi, ci) in enumerate(zip(quality, cost)):
        if ci is None:
            out.append(False)
            continue
        dominated = any(cj is not None and qj >= qi and no_dearer(cj, ci) and (qj > qi or cheaper(cj, ci))
                        for j, (qj, cj) in enumerate(zip(quality, cost)) if j != i)
        out.append(not dominated)
    return out


# ------------------------------------------------------------------------------ the summary


@dataclass(frozen=True)
class Confirmation:
    """The dev winner on the test questions: its mean (``test``), the baseline's, the paired
    change against the baseline with the measure's test (``p``: sign test, or sign-flip test for
    a continuous measure) and win rate, and the winner's curse (dev mean minus test mean) with
    its interval."""

    n: int
    test: Interval
    baseline_test: Interval
    change: Interval
    p: float
    win_rate: float | None
    curse: Interval


@dataclass(frozen=True)
class SweepSummary:
    """Everything the sweep report prints, per candidate in ``names`` order (module docstring).

    ``chosen_on`` is ``"dev"`` or ``"all"``; ``n`` the questions the ranking uses;
    ``unassigned`` the paired questions the split file does not assign (not used with a split);
    ``aliases[k]`` the candidates folded into ``names[k]`` as exact copies (:func:`distinct`);
    ``p[k]`` the unadjusted p of the measure's test against the baseline.
    """

    names: tuple[str, ...]
    aliases: tuple[tuple[str, ...], ...]
    labels: tuple[str, ...]
    measure: str
    chosen_on: str
    n: int
    settings: StatsConfig
    alpha: float
    means: tuple[Interval, ...]
    rank: tuple[int, ...]
    rank_low: tuple[int, ...]
    rank_high: tuple[int, ...]
    tie_set: tuple[int, ...]
    winner: int
    exact_ties: tuple[int, ...]
    beats: tuple[tuple[int, ...], ...]
    baseline: int
    change: tuple[Interval, ...]
    p: tuple[float, ...]
    win_rate: tuple[float | None, ...]
    p95_ms: tuple[float | None, ...]
    pareto: tuple[bool, ...]
    answer_s: tuple[float | None, ...]
    unpaired: tuple[str, ...]
    unassigned: tuple[str, ...]
    confirmation: Confirmation | None


def _split_ids(matrix: CandidateMatrix, split: Mapping[str, str]) -> tuple[list[str], list[str], list[str]]:
    dev = [i for i in matrix.ids if split.get(i) == "dev"]
    test = [i for i in matrix.ids if split.get(i) == "test"]
    unassigned = sorted(i for i in matrix.ids if split.get(i) not in ("dev", "test"))
    if not dev or not test:
        raise UserError(f"the split assigns {len(dev)} of the {len(matrix.ids)} paired questions to dev and "
                        f"{len(test)} to test; both need questions: rerun the `split` stage (`dvc repro split`) "
                        "or pass --no-split to choose on all questions")
    return dev, test, unassigned


def _clusters(matrix: CandidateMatrix, settings: StatsConfig) -> list[str] | None:
    return list(matrix.docs) if settings.cluster and len(set(matrix.docs)) >= 2 else None


def _paired_change(draws: np.ndarray, means: np.ndarray, i: int, j: int, confidence: float) -> Interval:
    return percentile_interval(draws[:, i] - draws[:, j], means[i] - means[j], confidence)


def distinct(matrix: CandidateMatrix) -> tuple[list[int], list[tuple[int, ...]]]:
    """The candidates to keep (indices, in order) and, for each kept one, the later candidates
    whose values equal its own on every question of ``matrix`` (its aliases): each group of
    identical columns is kept once, under its first name."""
    keep: list[int] = []
    aliases: list[list[int]] = []
    for k in range(matrix.values.shape[1]):
        same = next((n for n, j in enumerate(keep) if np.array_equal(matrix.values[:, j], matrix.values[:, k])), None)
        if same is None:
            keep.append(k)
            aliases.append([])
        else:
            aliases[same].append(k)
    return keep, [tuple(a) for a in aliases]


def summarise(candidates: Mapping[str, Sequence[Row]], *, measure: str, baseline: str, settings: StatsConfig,
              labels: Mapping[str, str] | None = None, split: Mapping[str, str] | None = None,
              p95_ms: Mapping[str, float | None] | None = None,
              answer_s: Mapping[str, float | None] | None = None) -> SweepSummary:
    """Rank ``candidates`` (name -> per-question rows, at least two) on ``measure`` (a column of
    ``PAIRED_MEASURES``, its test by ``comparison.TESTS``; or ``auto``, resolved on all the rows by
    ``comparison.measure_of_rows``: nDCG@10 on graded qrels, else hit@5).

    Candidates identical on every paired question are one (:func:`distinct`; ``baseline`` may
    name an alias: its candidate is the baseline); when all are copies of one, that one is the
    winner, alone in its tie set. ``split`` (id -> dev/test), when given, makes
    the ranking use dev questions and the confirmation test questions; ``p95_ms`` gives each
    candidate's P95 retrieval latency per query and ``answer_s`` its median seconds per
    generated answer, where it has answers (missing: unknown). The level is
    ``1 - settings.confidence``.
    """
    if len(candidates) < 2:
        raise UserError(f"a sweep summary needs at least two candidates; found {len(candidates)}: name more sides "
                        "(--exps, --all-exps, --revs) or more configs")
    if baseline not in candidates:
        raise UserError(f"baseline {baseline!r} is not a candidate; candidates are: {', '.join(candidates)}")
    measure = measure_of_rows(measure, [r for rows in candidates.values() for r in rows])
    every = candidate_matrix(candidates, measure)
    keep, folded = distinct(every)
    full = CandidateMatrix(tuple(every.names[k] for k in keep), every.ids, every.docs, every.slices,
                           every.values[:, keep], every.unpaired)
    names = full.names
    aliases = tuple(tuple(every.names[j] for j in group) for group in folded)
    baseline = next(n for n, a in zip(names, aliases) if baseline == n or baseline in a)
    margin = 0.0 if TESTS[measure] == SIGN else settings.margin
    alpha = 1 - settings.confidence
    unassigned: list[str] = []
    if split is not None:
        dev_ids, test_ids, unassigned = _split_ids(full, split)
        chosen, held = full.restrict(dev_ids), full.restrict(test_ids)
    else:
        chosen, held = full, None
    values = chosen.values
    means = values.mean(axis=0)
    draws = bootstrap_means(values, resamples=settings.resamples, seed=settings.seed,
                            clusters=_clusters(chosen, settings))
    low, high = rank_interval(draws, settings.confidence)
    winner = int(np.argmax(means))
    wins = pairwise_wins(values, margin)
    raw = pairwise_p(values, measure=measure, wins=wins, resamples=settings.resamples, seed=settings.seed)
    beaten, _ = beats(means, raw, alpha)
    b = names.index(baseline)
    intervals = tuple(percentile_interval(draws[:, k], means[k], settings.confidence) for k in range(len(names)))
    cost = tuple((p95_ms or {}).get(n) for n in names)
    confirmation = None
    if held is not None:
        t_values = held.values
        t_means = t_values.mean(axis=0)
        t_draws = bootstrap_means(t_values, resamples=settings.resamples, seed=settings.seed + 1,
                                  clusters=_clusters(held, settings))
        t_wins = pairwise_wins(t_values[:, [winner, b]], margin)
        t_p = pairwise_p(t_values[:, [winner, b]], measure=measure, wins=t_wins, resamples=settings.resamples,
                         seed=settings.seed + 1)
        confirmation = Confirmation(
            n=len(held.ids),
            test=percentile_interval(t_draws[:, winner], t_means[winner], settings.confidence),
            baseline_test=percentile_interval(t_draws[:, b], t_means[b], settings.confidence),
            change=_paired_change(t_draws, t_means, winner, b, settings.confidence),
            p=float(t_p[0, 1]),
            win_rate=win_rate(t_wins, 0, 1),
            curse=percentile_interval(draws[:, winner] - t_draws[:, winner], means[winner] - t_means[winner],
                                      settings.confidence),
        )
    return SweepSummary(
        names=names, aliases=aliases, labels=tuple((labels or {}).get(n, n) for n in names), measure=measure,
        chosen_on="all" if held is None else "dev", n=len(chosen.ids), settings=settings, alpha=alpha,
        means=intervals, rank=tuple(int(r) for r in ranks(means)), rank_low=tuple(int(x) for x in low),
        rank_high=tuple(int(x) for x in high), tie_set=tie_set(beaten), winner=winner,
        exact_ties=tuple(int(k) for k in np.flatnonzero(means == means[winner]) if k != winner),
        beats=tuple(tuple(x) for x in beaten), baseline=b,
        change=tuple(_paired_change(draws, means, k, b, settings.confidence) for k in range(len(names))),
        p=tuple(float(raw[k, b]) if k != b else 1.0 for k in range(len(names))),
        win_rate=tuple(win_rate(wins, k, b) if k != b else None for k in range(len(names))),
        p95_ms=cost, pareto=tuple(pareto_front(means.tolist(), cost)),
        answer_s=tuple((answer_s or {}).get(n) for n in names),
        unpaired=full.unpaired, unassigned=tuple(unassigned), confirmation=confirmation,
    )
