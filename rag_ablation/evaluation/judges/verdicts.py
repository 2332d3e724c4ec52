"""Verdicts of a correctness judge and of the hand grades, read and checked in one place.

A *judge* (an LLM judge, or a judge-free rule such as token F1 >= threshold or "contains the
reference") gives every answer a verdict: ``True`` (correct), ``False`` (incorrect) or ``None``
(invalid: e.g. an LLM reply that could not be parsed). The hand grades
(:mod:`rag_ablation.evaluation.judges.grades`) are the ground truth: ``True``/``False``, never
invalid. A judge is compared to the hand grades on the answers that have both, passed as
parallel sequences (same answer at the same position).

This module turns such sequences into int8 code arrays (:func:`verdict_codes`: 1 correct,
0 incorrect, :data:`INVALID` invalid) for the statistics of the judges:
:mod:`~rag_ablation.evaluation.judges.agreement` (judge against human),
:mod:`~rag_ablation.evaluation.judges.accuracy` (accuracy three ways, PPI++) and
:mod:`~rag_ablation.evaluation.judges.canaries` (canary answers).

Conventions of those three modules (those of :mod:`rag_ablation.evaluation.statistics.inference`,
whose :class:`Interval`, :func:`wilson_interval` and resampling scheme they reuse):

* Counts are ``int``, estimates plain ``float``. A rate whose denominator is 0 is ``None``,
  never 0 (and never NaN); a ``reason`` says why where a result can be undefined.
* Invalid judge verdicts are never silently dropped: they are excluded from agreement
  statistics and from judge-only accuracy but *counted* (``invalid``); PPI needs a number for
  every answer and counts an invalid verdict as *incorrect* (see
  :func:`rag_ablation.evaluation.judges.accuracy.ppi_accuracy`).
* Randomness comes only from ``numpy.random.default_rng(seed)``, drawn exactly as
  :func:`rag_ablation.evaluation.statistics.inference.bootstrap_mean_ci` draws (blocks of index
  rows), so the same inputs and seed give identical outputs.
* Every result dataclass has ``as_dict()`` giving JSON-ready values: ``int``, ``float``,
  ``bool``, ``str``, ``None``, dicts and sorted lists.
* Bad input raises ``ValueError`` naming what was found and what was expected: an empty
  sequence, sequences of unequal length, a verdict that is not ``True``/``False`` (or ``None``
  for a judge), a confidence outside (0, 1), ``n_resamples`` < 1.

Every interval treats answers as independent draws (no clustering by source document).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["INVALID", "Verdict", "check_same_length", "verdict_codes"]

Verdict = bool | None
"""A judge's verdict on one answer: True correct, False incorrect, None invalid."""

INVALID = -1
"""Code of an invalid (None) judge verdict in the int8 arrays of :func:`verdict_codes`."""


def verdict_codes(values: Sequence[Verdict], name: str, *, allow_invalid: bool) -> np.ndarray:
    """Verdicts as an int8 array: 1 correct, 0 incorrect, -1 invalid; else ValueError.

    Only ``True``/``False`` (Python or numpy bools) and, when ``allow_invalid``, ``None`` are
    verdicts: 0/1, strings such as "correct" and NaN are refused, as are a string, bytes, a
    mapping or anything without a length in place of the sequence, and an empty sequence.
    ``name`` names the argument in the error message.
    """
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__len__"):
        raise ValueError(
            f"{name} must be a sequence of verdicts; got {type(values).__name__}"
        )
    out = np.empty(len(values), dtype=np.int8)
    if out.size == 0:
        raise ValueError(f"{name} is empty; expected at least one verdict")
    expected = "True, False or None (invalid)" if allow_invalid else "True or False (a hand grade is never invalid)"
    for i, value in enumerate(values):
        if value is None and allow_invalid:
            out[i] = INVALID
        elif isinstance(value, (bool, np.bool_)):
            out[i] = 1 if value else 0
        else:
            raise ValueError(f"{name}[{i}] is {value!r} ({type(value).__name__}); expected {expected}")
    return out


def check_same_length(first: np.ndarray, second: np.ndarray, names: tuple[str, str]) -> None:
    """ValueError unless the code arrays ``first`` and ``second`` (named ``names``) are as long."""
    if first.size != second.size:
        raise ValueError(
            f"{names[0]} has {first.size} verdicts but {names[1]} has {second.size}; "
            "expected one verdict per answer in both, in the same order"
        )
