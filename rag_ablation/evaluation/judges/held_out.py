"""Scores that order a grading session without having been fit on the grades it estimates.

Active grading (``rag_ablation.evaluation.judges.active``) draws answers by a judge score and
estimates the accuracy of the answers in scope. In use, the answers in scope are ungraded when
the session starts, so a fitted score (the combined judge's) can only come from a model fit on
*other* grades. A simulation on answers that are all graded must do the same, or the score
carries the grades it is meant to help estimate (the combined judge's cross-fitted score of a
graded answer was fit on the grades of the other folds, 128 of the same 160 answers: issue 48,
item 5). This module makes the honest split:

* ``split_by_question``: the answers' questions, sorted, in a permutation seeded by ``seed``;
  the first ``round(fit_share * questions)`` questions (at least 1, at most all but 1) are the
  *fit* part, the rest the *estimate* part, and every answer goes where its question went (two
  configs' answers to one question share most of their information, so they never straddle the
  split);
* ``held_out_scores``: the combined judge (``combined.fit``: its penalty chosen by nested
  cross-validation on the fit part alone) fit on the fit part's inputs and grades, and its
  probability on each answer of the estimate part: what ``judge_eval`` gives an ungraded answer
  (the all-grades model). The estimate part's grades are never read, so flipping them cannot
  change a score.

``benchmarks/active_grading.py`` runs active against random order on the estimate part, with
that part's hand accuracy as the truth.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_ablation.evaluation.judges.combined import fit

Key = tuple[str, str]
"""An answer: (config, question id)."""


def split_by_question(keys: Sequence[Key], *, fit_share: float, seed: int) -> tuple[list[int], list[int]]:
    """(fit rows, estimate rows): the positions in ``keys`` of the answers whose question is in
    the fit part and of the others, each ascending (module docstring). Depends on the set of
    question ids and ``seed`` only, not on the order of ``keys``. Raises ValueError when
    ``fit_share`` is not in (0, 1) or there are fewer than 2 questions."""
    if not 0 < fit_share < 1:
        raise ValueError(f"fit_share must be between 0 and 1 (exclusive), found {fit_share}")
    questions = sorted({q for _, q in keys})
    if len(questions) < 2:
        raise ValueError(f"splitting by question needs at least 2 questions, found {len(questions)}")
    cut = min(max(round(fit_share * len(questions)), 1), len(questions) - 1)
    perm = np.random.default_rng(seed).permutation(len(questions))
    fit_questions = {questions[i] for i in perm[:cut]}
    fit_rows = [i for i, (_, q) in enumerate(keys) if q in fit_questions]
    return fit_rows, [i for i, (_, q) in enumerate(keys) if q not in fit_questions]


def held_out_scores(inputs: Sequence[Sequence[float]] | np.ndarray, labels: Sequence[bool] | np.ndarray, *,
                    fit_rows: Sequence[int], score_rows: Sequence[int], veto: int | None = None) -> np.ndarray:
    """The combined judge's probability for each answer of ``score_rows`` (in that order), from
    one model fit on the rows ``fit_rows`` of ``inputs`` (answers x judge scores and features)
    and their ``labels`` (``combined.fit``, ``veto`` as there). ``labels`` holds every answer's
    grade by row; those of ``score_rows`` are not read. Raises ValueError when the two sets of
    rows overlap or ``fit_rows`` is empty."""
    fit_at, score_at = np.asarray(fit_rows, dtype=int), np.asarray(score_rows, dtype=int)
    if fit_at.size == 0:
        raise ValueError("no answers to fit on")
    if np.intersect1d(fit_at, score_at).size:
        raise ValueError("an answer is both fit on and scored: its score would carry its own grade")
    x = np.asarray(inputs, dtype=float)
    y = np.asarray(labels, dtype=int)
    model = fit(x[fit_at], y[fit_at], veto)
    return np.asarray(model.predict(x[score_at]), dtype=float)


__all__ = ["held_out_scores", "split_by_question"]
