"""The sweep summary's statistics: shared bootstrap draws, rank intervals (against a brute-force
loop), the tie set (by simulation with a known truth), the lettered pairwise table (against
``comparison.compare``), win rates, the Pareto front, and choosing on dev then confirming on test."""
from __future__ import annotations

import math
import numpy as np
import pytest
from score_rows import config_rows, hits_to_ranks

from rag_ablation.core.config import StatsConfig
from rag_ablation.core.errors import UserError
from rag_ablation.evaluation.statistics import inference
from rag_ablation.evaluation.statistics.comparison import compare, with_holm
from rag_ablation.evaluation.statistics.sweep import (
    COST_FLOOR_MS, COST_TOLERANCE, beats, bootstrap_means, candidate_matrix, letters, pairwise_wins, pareto_front,
    rank_interval, ranks, sign_test_matrix, summarise, tie_set, win_rate)

SETTINGS = StatsConfig(resamples=2000, seed=0)


def rows_of(name, hits, **kw):
    return config_rows(name, hits_to_ranks(hits), **kw)


# ------------------------------------------------------------------------------ draws


def test_plain_draws_are_the_means_of_resampled_questions_shared_by_every_candidate():
    rng = np.random.default_rng(1)
    values = rng.random((30, 3))
    draws = bootstrap_means(values, resamples=50, seed=7)
    idx = np.random.default_rng(7).integers(0, 30, size=(50, 30))
    np.testing.assert_allclose(draws, values[idx].mean(axis=1), rtol=0, atol=1e-12)


@pytest.mark.parametrize("clustered", [False, True])
def test_each_candidates_interval_is_the_projects_bootstrap_interval(clustered):
    rng = np.random.default_rng(2)
    values = (rng.random((40, 2)) < 0.6).astype(float)
    docs = [f"d{i % 7}" for i in range(40)] if clustered else None
    draws = bootstrap_means(values, resamples=3000, seed=4, clusters=docs)
    for k in range(2):
        ref = inference.bootstrap_mean_ci(values[:, k], clusters=docs, method="percentile", n_resamples=3000, seed=4)
        low, high = np.percentile(draws[:, k], [2.5, 97.5])
        assert (low, high) == pytest.approx((ref.low, ref.high), abs=1e-12)


# ------------------------------------------------------------------------------ ranks


def test_ranks_are_competition_ranks():
    assert ranks(np.array([0.5, 0.7, 0.5, 0.9])).tolist() == [3, 2, 3, 1]


def test_rank_intervals_match_a_brute_force_loop():
    rng = np.random.default_rng(3)
    draws = np.round(rng.random((201, 4)), 1)  # rounded: ties between candidates happen
    low, high = rank_interval(draws, 0.9)
    b = draws.shape[0]
    for k in range(4):
        mine = sorted(1 + sum(1 for j in range(4) if draws[d, j] > draws[d, k]) for d in range(b))
        assert low[k] == mine[math.floor((b - 1) * 0.05)]
        assert high[k] == mine[math.ceil((b - 1) * 0.95)]


# ------------------------------------------------------------------------------ tie set


def _simulate(reps: int, k: int, q: int, truth: np.ndarray, seed: int) -> list[tuple[int, ...]]:
    """The tie set of ``summarise`` on ``reps`` seeded question sets whose candidate k gets each
    question right with probability ``truth[k]``."""
    rng = np.random.default_rng(seed)
    out = []
    for r in range(reps):
        hits = (rng.random((q, k)) < truth).astype(int)
        rows = {f"c{j}@x": rows_of(f"c{j}", hits[:, j].tolist()) for j in range(k)}
        s = summarise(rows, measure="hit_at_5", baseline="c0@x", settings=StatsConfig(resamples=50, seed=r))
        out.append(s.tie_set)
    return out


def test_simulation_equal_candidates_are_wrongly_separated_at_most_5_percent_of_the_time():
    """K=8 candidates with the same true recall 0.7 on 154 questions: every one is truly the best,
    so a tie set that leaves any out names a winner the data do not support. That happens at most
    5% of the time (plus three Monte Carlo errors)."""
    reps, k = 400, 8
    sets = _simulate(reps, k, 154, np.full(k, 0.7), seed=11)
    error = sum(len(t) < k for t in sets) / reps
    assert error <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)


def test_simulation_a_clearly_better_candidate_is_found_alone_almost_always():
    """One candidate at 0.9 and five at 0.6: it is always in the set, and alone in it almost always."""
    truth = np.full(6, 0.6)
    truth[2] = 0.9
    sets = _simulate(100, 6, 154, truth, seed=12)
    assert all(2 in t for t in sets)
    assert sum(t == (2,) for t in sets) >= 95


def test_the_tie_set_is_every_candidate_nobody_beats():
    assert tie_set([[1, 2], [2], [], []]) == (0, 3)


# ------------------------------------------------------------------------------ pairwise


def test_pairwise_wins_count_questions_one_gets_right_and_the_other_wrong():
    values = np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 0]], dtype=float)
    assert pairwise_wins(values).tolist() == [[0, 2], [1, 0]]
    assert win_rate(pairwise_wins(values), 0, 1) == 2 / 3
    assert win_rate(pairwise_wins(np.ones((3, 2))), 0, 1) is None


def test_the_sign_test_matrix_is_the_projects_sign_test():
    wins = np.array([[0, 7, 0], [2, 0, 3], [0, 3, 0]])
    p = sign_test_matrix(wins)
    for i in range(3):
        for j in range(3):
            if i != j:
                assert p[i, j] == pytest.approx(inference.sign_test_p(int(wins[i, j]), int(wins[j, i])), abs=1e-12)


def test_letters_match_holm_adjusted_pairwise_comparisons():
    rng = np.random.default_rng(5)
    hits = {name: (rng.random(80) < p).astype(int).tolist()
            for name, p in (("a", 0.9), ("b", 0.85), ("c", 0.5), ("d", 0.3))}
    rows = {name: rows_of(name, h) for name, h in hits.items()}
    matrix = candidate_matrix(rows, "hit_at_5")
    wins = pairwise_wins(matrix.values)
    beaten, adjusted = beats(matrix.values.mean(axis=0), sign_test_matrix(wins), 0.05)
    names = list(rows)
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    compared = with_holm([compare(rows[names[j]], rows[names[i]], base=names[j], new=names[i], measure="hit_at_5",
                                  settings=StatsConfig(resamples=200)) for i, j in pairs])
    for (i, j), c in zip(pairs, compared):
        assert adjusted[i, j] == pytest.approx(c.binary.p_holm, abs=1e-12)
        fixed, broken = c.binary.counts.fixed, c.binary.counts.broken  # fixed: i right, j wrong
        assert (j in beaten[i]) == (c.binary.p_holm < 0.05 and fixed > broken)
        assert (i in beaten[j]) == (c.binary.p_holm < 0.05 and broken > fixed)
    assert any(beaten)  # the fixture separates some pairs


def test_letters_run_on_past_z():
    got = letters(30)
    assert got[:3] == ["a", "b", "c"] and got[25:] == ["z", "aa", "ab", "ac", "ad"]
    assert letters(26 + 26 * 26 + 1)[-1] == "aaa"


def test_the_pareto_front_keeps_what_nothing_beats_on_both():
    quality = [0.9, 0.8, 0.8, 0.7, 0.95]
    cost = [100.0, 50.0, 80.0, 50.0, None]
    assert pareto_front(quality, cost, tolerance=0, floor_ms=0) == [True, True, False, False, False]
    assert pareto_front(quality, cost) == [True, True, False, False, False]  # 80 > 50 * 1.5 and > 50 + 5: dearer
    # 70 ms is within 1.5x of 50: the same cost, so neither of two equal configs there dominates the other
    assert pareto_front([0.8, 0.8], [50.0, 70.0]) == [True, True]


def test_costs_within_the_tolerance_count_as_equal_so_noise_cannot_move_the_front():
    """Two configs 0.80 and 0.82 good at about 80 ms: whichever run timed them a little faster,
    the better one dominates the other; a textbook front (tolerance 0) flips with the timing."""
    quality = [0.80, 0.82, 0.70]
    for dense, other in ((80.0, 86.0), (86.0, 80.0), (80.0, 80.0 * (1 + COST_TOLERANCE))):
        assert pareto_front(quality, [dense, other, 30.0]) == [False, True, True]
    assert pareto_front(quality, [80.0, 86.0, 30.0], tolerance=0, floor_ms=0) == [True, True, True]
    assert pareto_front(quality, [86.0, 80.0, 30.0], tolerance=0, floor_ms=0) == [False, True, True]
    # beyond the tolerance the dearer one no longer dominates
    assert pareto_front(quality, [80.0, 80.0 * (1 + COST_TOLERANCE) + 0.01, 30.0]) == [True, True, True]
    # equal quality within the tolerance: neither dominates; cheaper beyond it: it dominates
    assert pareto_front([0.8, 0.8], [80.0, 90.0]) == [True, True]
    assert pareto_front([0.8, 0.8], [80.0, 80.0 * (1 + COST_TOLERANCE) + 0.01]) == [True, False]
    with pytest.raises(ValueError, match="tolerance"):
        pareto_front(quality, [1.0, 2.0, 3.0], tolerance=-0.1)
    with pytest.raises(ValueError, match="floor_ms"):
        pareto_front(quality, [1.0, 2.0, 3.0], floor_ms=-1)


def test_millisecond_costs_within_the_floor_count_as_equal():
    """The example's bm25 and bm25_fixed1000 (both recall@5 0.8182) timed 1.77 and 2.24 ms in one
    run, 2.56 and 1.48 in another (benchmarks/RESULTS.md, pareto_repeat.py): 27% and 73% apart,
    beyond the relative tolerance, so each run dropped the other from the front. Within
    COST_FLOOR_MS both stay on it, whatever the run; a better config 5 ms dearer still counts."""
    for costs in ((1.77, 2.24), (2.56, 1.48), (1.26, 1.05)):
        assert pareto_front([0.8182, 0.8182, 0.9], [*costs, 20.0]) == [True, True, True]
    for costs in ((1.77, 2.24), (2.56, 1.48)):  # the relative tolerance of then (25%) alone: the dearer one drops off
        assert pareto_front([0.8182, 0.8182], list(costs), tolerance=0.25, floor_ms=0) in ([True, False], [False, True])
    # more than the floor and the tolerance apart: the cheaper one of equal quality dominates
    assert pareto_front([0.8, 0.8], [1.0, 1.0 + COST_FLOOR_MS + 0.01]) == [True, False]
    # a better config no dearer than the floor dominates a worse one
    assert pareto_front([0.8, 0.9], [1.0, 1.0 + COST_FLOOR_MS]) == [False, True]


# ------------------------------------------------------------------------------ summary


def test_the_winner_is_chosen_on_dev_and_confirmed_on_test():
    """b wins on dev (q0-q9) and a on test (q10-q19): the winner is b, its test mean is b's
    mean on test, and the curse is its dev mean minus its test mean."""
    a = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0] + [1] * 9 + [0]
    b = [1] * 10 + [1, 0, 1, 0, 1, 0, 0, 0, 1, 1]
    base = [1, 0] * 10
    split = {f"q{i}": "dev" if i < 10 else "test" for i in range(20)}
    s = summarise({"base@x": rows_of("base", base), "a@x": rows_of("a", a), "b@x": rows_of("b", b)},
                  measure="hit_at_5", baseline="base@x", settings=SETTINGS, split=split)
    assert s.chosen_on == "dev" and s.n == 10 and s.names[s.winner] == "b@x"
    c = s.confirmation
    assert c is not None and c.n == 10
    assert c.test.estimate == pytest.approx(sum(b[10:]) / 10)
    assert c.baseline_test.estimate == pytest.approx(sum(base[10:]) / 10)
    assert c.change.estimate == pytest.approx((sum(b[10:]) - sum(base[10:])) / 10)
    assert c.curse.estimate == pytest.approx(sum(b[:10]) / 10 - sum(b[10:]) / 10)
    assert c.curse.low <= c.curse.estimate <= c.curse.high
    wins = sum(1 for x, y in zip(b[10:], base[10:]) if x > y)
    losses = sum(1 for x, y in zip(b[10:], base[10:]) if x < y)
    assert c.win_rate == pytest.approx(wins / (wins + losses))


def test_without_a_split_everything_is_on_all_questions_and_unpaired_questions_are_named():
    a = rows_of("a", [1, 1, 0, 1]) + rows_of("a", [1], ids=["extra"])
    b = rows_of("b", [1, 0, 0, 1])
    s = summarise({"a@x": a, "b@y": b}, measure="hit_at_5", baseline="b@y", settings=SETTINGS)
    assert s.chosen_on == "all" and s.n == 4 and s.confirmation is None
    assert s.unpaired == ("extra",)
    assert s.means[0].estimate == 0.75 and s.change[0].estimate == pytest.approx(0.25)
    assert s.win_rate[0] == 1.0 and s.win_rate[1] is None


@pytest.mark.bad_input
def test_fewer_than_two_candidates_is_one_message():
    with pytest.raises(UserError, match="at least two candidates; found 1"):
        summarise({"a@x": rows_of("a", [1, 0])}, measure="hit_at_5", baseline="a@x", settings=SETTINGS)


@pytest.mark.bad_input
def test_a_baseline_that_is_not_a_candidate_lists_the_candidates():
    with pytest.raises(UserError, match=r"baseline 'dense@x' is not a candidate; candidates are: a@x, b@x"):
        summarise({"a@x": rows_of("a", [1, 0]), "b@x": rows_of("b", [0, 1])}, measure="hit_at_5",
                  baseline="dense@x", settings=SETTINGS)


@pytest.mark.bad_input
def test_a_split_without_test_questions_is_one_message():
    rows = {"a@x": rows_of("a", [1, 0]), "b@x": rows_of("b", [0, 1])}
    with pytest.raises(UserError, match="2 of the 2 paired questions to dev and 0 to test"):
        summarise(rows, measure="hit_at_5", baseline="a@x", settings=SETTINGS, split={"q0": "dev", "q1": "dev"})
