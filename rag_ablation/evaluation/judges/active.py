"""Which answer to grade next, and the accuracy of all answers from the grades given so far.

The population is the ``N`` answers in scope; answer ``i`` has a judge score ``s_i`` in [0, 1]
(token F1, the LLM judge's P(CORRECT), ...) and, once graded, a hand verdict ``Y_i`` (1 correct,
0 incorrect). The target is the accuracy ``theta = (1/N) sum_i Y_i``: the share of correct
answers among all ``N``, graded or not. Two orders (``ORDERS``):

**random**: a seeded uniform permutation (``random_order``). After ``n`` grades the estimate is
their mean ``p``, with the Wilson interval at the finite-population effective size
``n_eff = n (N - 1) / (N - n)`` (``random_estimate``; ``n = N`` gives ``p`` exactly, width 0).

**active** (active statistical inference, Zrnic and Candes 2024, in its sequential form, drawn
without replacement): draw ``t`` picks answer ``i`` among the set ``R_t`` of answers not yet
graded, with the known probability (``draw_probabilities``)::

    q_t(i) = (1 - lam) u_i / sum_{j in R_t} u_j + lam / |R_t|,    u_i = sqrt(s_i (1 - s_i))

``lam`` (``uniform``, in (0, 1]) is the share mixed in from the uniform draw, so every answer
keeps a chance; when every ``u_j`` of ``R_t`` is 0 the draw is uniform. ``u_i`` is largest at
``s = 1/2``: the answers whose score says least are graded first (the variance-optimal rule
``q ∝ sqrt(E[(Y - s)^2 | s])`` when the score is calibrated). Draw ``t``'s term
(``draw_term``) is::

    Z_t = K_t + sum_{j in R_t} s_j + (Y_{i_t} - s_{i_t}) / q_t(i_t)

with ``K_t`` the number of correct verdicts among the answers outside ``R_t`` (graded before
the draw, in this session or before it). Given everything before draw ``t``,
``E[Z_t] = K_t + sum_{R_t} s + sum_{R_t} (Y - s) = sum_i Y_i = N theta`` for any scores, so
the estimate after ``n`` draws (``active_estimate``)::

    theta_hat = (1 / (n N)) sum_{t <= n} Z_t

is unbiased, and the ``Z_t - N theta`` are martingale differences. Its interval is
``theta_hat -+ t sd(Z) / (N sqrt(n))`` (``sd`` with ddof 1, ``t`` the ``(1 + confidence)/2``
quantile of Student's t with ``n - 1`` degrees of freedom, a little wider than the normal's at
small ``n``), clipped to [0, 1]; a single draw gives [0, 1]. Because the scores only enter as a prediction
(``s`` beside ``Y``) and through ``q``, a poor score costs width, never validity.

The order of the draws depends on the scores and the seed only (never on a verdict), so it is
drawn whole before grading starts (``active_order``). ``benchmarks/active_grading.py``
measures coverage and width on the committed grades (docs/judging.md, "Active grading").
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rag_ablation.core.config import ACTIVE_UNIFORM_SHARE
from rag_ablation.core.errors import lookup

if TYPE_CHECKING:  # the estimates import scipy.stats when called: a second that `rag-grade` starts without
    from rag_ablation.evaluation.statistics.inference import Interval


@dataclass(frozen=True)
class Draw:
    """One draw of an order: the answer's position in the population, the probability it was
    drawn with (1 in random order, which needs none), and ``rest_score``, the sum of the scores
    of the answers still ungraded before the draw (``R_t``, this answer included)."""

    index: int
    probability: float
    rest_score: float


def _scores(scores: Sequence[float]) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1 or not np.all(np.isfinite(s)) or np.any((s < 0) | (s > 1)):
        raise ValueError("scores must be a list of numbers from 0 to 1")
    return s


def _uniform(uniform: float) -> float:
    if not 0 < uniform <= 1:
        raise ValueError(f"uniform must be in (0, 1], found {uniform}: the uniform share keeps every answer's "
                         "probability above 0, which unbiasedness needs")
    return float(uniform)


def draw_probabilities(scores: Sequence[float], *, uniform: float = ACTIVE_UNIFORM_SHARE) -> np.ndarray:
    """``q(i) = (1 - uniform) u_i / sum(u) + uniform / n`` over the ``n`` answers given, with
    ``u_i = sqrt(s_i (1 - s_i))``; uniform ``1/n`` when every ``u_i`` is 0 (module docstring).
    The probabilities sum to 1 and each is at least ``uniform / n``."""
    s = _scores(scores)
    lam = _uniform(uniform)
    if s.size == 0:
        raise ValueError("no answers to draw from")
    u = np.sqrt(s * (1 - s))
    total = float(u.sum())
    flat = np.full(s.size, 1 / s.size)
    return flat if total == 0 else (1 - lam) * u / total + lam * flat


def active_order(scores: Sequence[float], *, seed: int, graded: Sequence[bool] | None = None,
                 uniform: float = ACTIVE_UNIFORM_SHARE) -> list[Draw]:
    """Every answer not ``graded`` yet, in the order drawn one at a time without replacement
    with ``draw_probabilities`` over those still left (seeded by ``seed``); each with its
    probability and the ``rest_score`` before its draw."""
    s = _scores(scores)
    done = np.zeros(s.size, dtype=bool) if graded is None else np.asarray(graded, dtype=bool)
    if done.shape != s.shape:
        raise ValueError(f"graded has {done.size} flags for {s.size} scores")
    rng = np.random.default_rng(seed)
    left = [i for i in range(s.size) if not done[i]]
    out = []
    while left:
        q = draw_probabilities(s[left].tolist(), uniform=uniform)
        k = int(rng.choice(len(left), p=q))
        out.append(Draw(index=left[k], probability=float(q[k]), rest_score=float(s[left].sum())))
        del left[k]
    return out


def random_order(scores: Sequence[float], *, seed: int, graded: Sequence[bool] | None = None,
                 uniform: float = ACTIVE_UNIFORM_SHARE) -> list[Draw]:
    """Every answer not ``graded`` yet in a seeded uniform random order (``probability`` 1 and
    ``rest_score`` 0: the mean of the grades needs neither). ``uniform`` is not used."""
    s = _scores(scores)
    done = np.zeros(s.size, dtype=bool) if graded is None else np.asarray(graded, dtype=bool)
    left = np.array([i for i in range(s.size) if not done[i]], dtype=int)
    order = np.random.default_rng(seed).permutation(left)
    return [Draw(index=int(i), probability=1.0, rest_score=0.0) for i in order]


ORDERS: dict[str, Callable[..., list[Draw]]] = {"active": active_order, "random": random_order}
"""The grading orders by name (``rag-ablation grade --order``, the workbench's grade mode)."""


def order_by_name(name: str) -> Callable[..., list[Draw]]:
    """``ORDERS[name]``; an unknown name raises ``UnknownName`` listing the valid ones."""
    return lookup(ORDERS, name, "grading order")


def draw_term(verdict: bool, *, score: float, probability: float, rest_score: float, known_correct: int) -> float:
    """``Z_t = K_t + rest_score + (Y - s) / q`` (module docstring): ``known_correct`` is ``K_t``,
    the correct verdicts among the answers graded before the draw."""
    if not 0 < probability <= 1:
        raise ValueError(f"probability must be in (0, 1], found {probability}")
    return known_correct + rest_score + (float(verdict) - score) / probability


def active_estimate(terms: Sequence[float], population: int, *, confidence: float = 0.95) -> Interval:
    """``theta_hat = mean(Z) / N`` with ``-+ t sd(Z) / (N sqrt(n))`` clipped to [0, 1]; one term
    gives [0, 1] (module docstring). ``n`` of the result is the number of draws."""
    z_terms = np.asarray(terms, dtype=float)
    if z_terms.size == 0 or population < 1:
        raise ValueError("an estimate needs at least one draw and a population of at least one answer")
    value = float(z_terms.mean()) / population
    from scipy.stats import t as student_t

    from rag_ablation.evaluation.statistics.inference import Interval, check_open_unit

    if z_terms.size == 1:
        return Interval(value, 0.0, 1.0, 1, "active")
    quantile = float(student_t.ppf(0.5 + check_open_unit(confidence, "confidence") / 2, z_terms.size - 1))
    half = quantile * float(z_terms.std(ddof=1)) / (population * math.sqrt(z_terms.size))
    return Interval(value, max(0.0, value - half), min(1.0, value + half), int(z_terms.size), "active")


def random_estimate(verdicts: Sequence[bool], population: int, *, confidence: float = 0.95) -> Interval:
    """The mean ``p`` of ``n`` verdicts drawn uniformly without replacement from ``population``
    answers, with the Wilson interval at ``n_eff = n (N - 1) / (N - n)`` (at ``n = N`` the
    interval is ``[p, p]``). ``n`` of the result is the number of verdicts."""
    from rag_ablation.evaluation.statistics.inference import Interval, wilson_bounds

    n = len(verdicts)
    if n == 0 or n > population:
        raise ValueError(f"expected from 1 to {population} verdicts, found {n}")
    p = sum(map(bool, verdicts)) / n
    if n == population:
        return Interval(p, p, p, n, "wilson-fpc")
    low, high = wilson_bounds(p, n * (population - 1) / (population - n), confidence=confidence)
    return Interval(p, low, high, n, "wilson-fpc")


def sequence_estimate(order: Sequence[Draw], scores: Sequence[float], verdicts: Sequence[bool], n: int, *,
                      name: str, confidence: float = 0.95) -> Interval:
    """The estimate after the first ``n`` draws of ``order`` over a population whose every
    answer was ungraded at the start: ``random_estimate`` for ``random``, ``active_estimate``
    of the ``draw_term`` s for ``active`` (``verdicts`` holds every answer's, by position)."""
    lookup(ORDERS, name, "grading order")
    first = order[:n]
    if name == "random":
        return random_estimate([verdicts[d.index] for d in first], len(scores), confidence=confidence)
    terms, known = [], 0
    for d in first:
        terms.append(draw_term(verdicts[d.index], score=scores[d.index], probability=d.probability,
                               rest_score=d.rest_score, known_correct=known))
        known += int(verdicts[d.index])
    return active_estimate(terms, len(scores), confidence=confidence)


__all__ = ["ORDERS", "Draw", "active_estimate", "active_order", "draw_probabilities", "draw_term", "order_by_name",
           "random_estimate", "random_order", "sequence_estimate"]
