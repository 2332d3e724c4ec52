"""PPI++ checked against hand grades it did not see (split-half validation).

PPI++ (:func:`~rag_ablation.evaluation.judges.accuracy.ppi_accuracy`) needs answers without a
hand grade; where a config's answers are all graded (the example's default) it has nothing to
add. This check still shows it working, on the graded answers alone: a seeded permutation of
the config's graded answers (sorted by id first, so the split depends only on the ids and the
seed) keeps the grades of the first ``floor(n / 2)`` (the labelled half) and gives PPI++ only
the judge's verdicts on the other ``ceil(n / 2)`` (the held-back half). On that split:

* ``ppi``: PPI++ accuracy with its interval, ``lam``, ``n_eff`` and ``gain`` (as
  :class:`~rag_ablation.evaluation.judges.accuracy.PPIAccuracy`), over labelled + held-back
  answers;
* ``classical``: the CLT interval of the labelled half's grades alone (the baseline of the gain);
* ``truth``: the hand accuracy of *all* ``n`` graded answers, the quantity PPI++ estimates here
  (the population is the graded answers), and ``heldout``: the hand accuracy of the held-back
  half, the grades PPI++ never saw;
* ``covers``: whether the PPI++ interval contains ``truth``; ``covers_heldout`` whether it
  contains ``heldout``; ``classical_covers`` whether the labelled half's interval contains ``truth``.

``splits`` repeats the split for seeds ``seed, seed + 1, ..., seed + splits - 1`` and reports
the share of splits whose interval contains ``truth`` (``coverage`` for PPI++,
``classical_coverage`` for the labelled half alone) and the mean widths. Both intervals aim at
``confidence``; the truth is fixed and only the split varies, so the shares are close to, not
exactly, the nominal level (a finite population of n, half of it sampled: the intervals ignore
the finite-population correction and are conservative). A valid PPI++ covers about as often as
the classical interval while being no wider; a useful judge makes it narrower (``gain`` > 1).

Needs at least 4 graded answers (2 per half); with fewer the check is None and the reason says so.
``labelled`` cuts the same permutation after that many grades instead of half (each side keeps
at least 2): ``benchmarks/ppi_labelled_share.py`` measures PPI++ with fewer grades that way.

The same check runs PPI++ with a judge's *score* as the prediction (``split_half_scores``), and
with the combined judge (``combine``: a model fit on grades), which is then cross-fitted on the
labelled half only and applied to the held-back half as cross-prediction-powered inference
(``accuracy.crossppi_accuracy``): the grades PPI++ corrects with never trained the model it
corrects, and the held-back grades train nothing, nor choose any fold model's penalty
(``combined.choose_penalty`` runs on that fold's labelled training grades).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from rag_ablation.evaluation.judges.accuracy import PPIAccuracy, crossppi_accuracy, ppi_accuracy, ppi_accuracy_scores
from rag_ablation.evaluation.judges.combined import crossfit_combined, predict_unlabeled
from rag_ablation.evaluation.judges.verdicts import Verdict

MIN_GRADED = 4


def split_halves(ids: list[str], seed: int, labelled: int | None = None) -> tuple[list[str], list[str]]:
    """(labelled, held-back): a seeded permutation of the sorted ``ids``, cut at ``labelled``
    (default ``len // 2``; ``benchmarks/ppi_labelled_share.py`` labels fewer)."""
    order = sorted(ids)
    perm = np.random.default_rng(seed).permutation(len(order))
    cut = len(order) // 2 if labelled is None else labelled
    return [order[i] for i in perm[:cut]], [order[i] for i in perm[cut:]]


Estimator = Callable[[list[str], list[str]], PPIAccuracy]
"""PPI++ on one split: (labelled ids, held-back ids) -> the estimate from the labelled half's
grades and the predictions on both halves."""


def _one_split(hand: Mapping[str, bool], estimate: Estimator, seed: int, labelled: int | None) -> dict[str, Any]:
    labelled_ids, held = split_halves(list(hand), seed, labelled)
    p = estimate(labelled_ids, held)
    truth = sum(hand.values()) / len(hand)
    return {
        "ppi": p.as_dict(),
        "truth": truth,
        "heldout": sum(hand[i] for i in held) / len(held),
        "covers": bool(p.interval.low <= truth <= p.interval.high),
        "covers_heldout": bool(p.interval.low <= sum(hand[i] for i in held) / len(held) <= p.interval.high),
        "classical_covers": bool(p.classical.low <= truth <= p.classical.high),
        "width": p.interval.high - p.interval.low,
        "classical_width": p.classical.high - p.classical.low,
    }


def split_half_check(hand: Mapping[str, bool], judge: Mapping[str, Verdict], *, seed: int = 0,
                     splits: int = 200, confidence: float = 0.95) -> tuple[dict[str, Any] | None, str | None]:
    """The check above for one config and one judge: ``hand`` maps answer id -> grade, ``judge``
    the judge's verdict on (at least) those ids (None: an invalid verdict, counted incorrect as
    in :func:`ppi_accuracy`). Returns (result, None), or (None, reason) with fewer than
    :data:`MIN_GRADED` grades. Raises ValueError for ``splits`` < 1 or a graded id the judge has
    no verdict for."""
    missing = sorted(set(hand) - set(judge))
    if missing:
        raise ValueError(f"the judge has no verdict for {len(missing)} graded answers, e.g. {missing[0]!r}")

    def estimate(labelled: list[str], held: list[str]) -> PPIAccuracy:
        return ppi_accuracy([hand[i] for i in labelled], [judge[i] for i in labelled], [judge[i] for i in held],
                            confidence=confidence)

    return _check(hand, estimate, seed=seed, splits=splits)


def split_half_scores(hand: Mapping[str, bool], score: Mapping[str, float] | None = None, *,
                      features: Mapping[str, Sequence[float]] | None = None, folds: int = 5, seed: int = 0,
                      splits: int = 200, confidence: float = 0.95, labelled: int | None = None,
                      veto: int | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """The check with a score as PPI++'s prediction: ``score`` (answer id -> a judge's score in
    [0, 1], fit on no grade) through ``accuracy.ppi_accuracy_scores``; or ``features`` (answer id
    -> every judge's score) for the combined judge, cross-fitted in ``folds`` folds (seeded by
    the split's seed) on the labelled half alone and applied to the held-back half through
    ``accuracy.crossppi_accuracy`` (module docstring). Exactly one of the two is given.
    ``labelled``: how many grades each split keeps (default half; at least 2, leaving at least 2).
    ``veto``: the combined judge's veto column among ``features`` (``combined.fit``)."""
    if (score is None) == (features is None):
        raise ValueError("give either score or features")
    known = score if score is not None else features
    assert known is not None
    missing = sorted(set(hand) - set(known))
    if missing:
        raise ValueError(f"no score for {len(missing)} graded answers, e.g. {missing[0]!r}")

    def raw(labelled: list[str], held: list[str]) -> PPIAccuracy:
        assert score is not None
        return ppi_accuracy_scores([hand[i] for i in labelled], [score[i] for i in labelled],
                                   [score[i] for i in held], confidence=confidence)

    def combined(labelled: list[str], held: list[str]) -> PPIAccuracy:
        assert features is not None
        fitted = crossfit_combined([features[i] for i in labelled], [hand[i] for i in labelled], k=folds,
                                   seed=seed, veto=veto)
        return crossppi_accuracy([hand[i] for i in labelled], fitted.scores,
                                 predict_unlabeled(fitted, [features[i] for i in held]), confidence=confidence)

    return _check(hand, raw if score is not None else combined, seed=seed, splits=splits, labelled=labelled)


def _check(hand: Mapping[str, bool], estimate: Estimator, *, seed: int, splits: int,
           labelled: int | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """``splits`` seeded splits through ``estimate``, summarised (module docstring)."""
    if splits < 1:
        raise ValueError(f"splits must be at least 1, got {splits}")
    if len(hand) < MIN_GRADED:
        return None, f"{len(hand)} hand grades: the split-half check needs at least {MIN_GRADED}"
    if labelled is not None and not 2 <= labelled <= len(hand) - 2:
        raise ValueError(f"labelled must leave at least 2 grades on each side of {len(hand)}, got {labelled}")
    first = _one_split(hand, estimate, seed, labelled)
    runs = [first] + [_one_split(hand, estimate, seed + r, labelled) for r in range(1, splits)]
    n_labeled = len(hand) // 2 if labelled is None else labelled
    out = {
        "seed": seed, "n_labeled": n_labeled, "n_heldout": len(hand) - n_labeled,
        **{k: first[k] for k in ("ppi", "truth", "heldout", "covers", "covers_heldout", "classical_covers")},
        "splits": splits,
        "coverage": sum(r["covers"] for r in runs) / splits,
        "classical_coverage": sum(r["classical_covers"] for r in runs) / splits,
        "mean_width": float(np.mean([r["width"] for r in runs])),
        "mean_classical_width": float(np.mean([r["classical_width"] for r in runs])),
    }
    return out, None
