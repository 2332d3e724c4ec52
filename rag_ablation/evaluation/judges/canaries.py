"""Canary answers: how often a judge accepts answers built to be accepted or rejected.

A sound judge rejects a dummy "yes", the question repeated back and an empty answer, and
accepts the reference padded with filler or paraphrased (:data:`CANARY_EXPECT_ACCEPT`).
:func:`canary_rates` gives, per canary kind, the share of the judge's valid verdicts that
accept, with a Wilson interval (:class:`CanaryRate`). Verdicts are read by
:func:`rag_ablation.evaluation.judges.verdicts.verdict_codes`; the conventions are those listed
in :mod:`rag_ablation.evaluation.judges.verdicts`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_ablation.evaluation.judges.accuracy import wilson_accuracy
from rag_ablation.evaluation.judges.verdicts import Verdict, verdict_codes
from rag_ablation.evaluation.statistics.inference import Interval, check_open_unit, interval_dict

__all__ = ["CANARY_EXPECT_ACCEPT", "CanaryRate", "canary_rates"]

CANARY_EXPECT_ACCEPT: dict[str, bool] = {
    "dummy_yes": False,
    "dummy_sure": False,
    "question_repeated": False,
    "empty": False,
    "padded_reference": True,
    "paraphrased_reference": True,
}
"""Canary kinds and whether a sound judge should accept them (say "correct"): dummy answers
("yes", "sure"), the question repeated back and an empty answer should be rejected; the
reference padded with filler and the reference paraphrased should be accepted."""


@dataclass(frozen=True)
class CanaryRate:
    """How the judge treated the canary answers of one kind.

    ``accepted``: share of valid verdicts that say correct (``accepted_count / n``), with
    its Wilson ``interval``; None (and ``interval`` None) when ``n == 0``. ``invalid``:
    verdicts None, left out. ``expected_accept``: whether a sound judge accepts this kind.
    ``wrong``: share of valid verdicts against the expectation (``accepted`` for a kind to
    reject, ``1 - accepted`` for a kind to accept); its interval is ``interval`` mirrored,
    ``[1 - high, 1 - low]``, when ``expected_accept``.
    """

    kind: str
    expected_accept: bool
    accepted: float | None
    interval: Interval | None
    accepted_count: int
    n: int
    invalid: int

    @property
    def wrong(self) -> float | None:
        if self.accepted is None:
            return None
        return 1.0 - self.accepted if self.expected_accept else self.accepted

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "expected_accept": self.expected_accept,
            "accepted": self.accepted,
            **interval_dict(self.interval, ("low", "high")),
            "accepted_count": self.accepted_count,
            "n": self.n,
            "invalid": self.invalid,
            "wrong": self.wrong,
        }


def canary_rates(
    verdicts: Mapping[str, Sequence[Verdict]],
    *,
    confidence: float = 0.95,
    expect_accept: Mapping[str, bool] | None = None,
) -> dict[str, CanaryRate]:
    """Per canary kind, the share of answers the judge accepted, and whether it should have.

    ``verdicts`` maps a kind to the judge's verdicts (True/False/None) on that kind's canary
    answers. Expectations come from :data:`CANARY_EXPECT_ACCEPT`, updated by
    ``expect_accept`` (a kind -> should-be-accepted mapping, for other kinds). The result
    holds a :class:`CanaryRate` per kind, in the order of ``verdicts``; a report reads e.g.
    "accepts dummies X%" from ``accepted`` of a kind with ``expected_accept`` False and
    "rejects paraphrases Y%" from ``wrong`` of a kind with ``expected_accept`` True.

    Raises ValueError on an empty mapping, a kind with no expectation, a kind with no
    verdicts, a verdict that is not a bool or None, or ``confidence`` outside (0, 1).
    """
    if not isinstance(verdicts, Mapping):
        raise ValueError(f"verdicts must map a canary kind to its verdicts; got {type(verdicts).__name__}")
    if not verdicts:
        raise ValueError("verdicts is empty; expected at least one canary kind")
    expected = dict(CANARY_EXPECT_ACCEPT)
    for kind, flag in (expect_accept or {}).items():
        if not isinstance(flag, (bool, np.bool_)):
            raise ValueError(f"expect_accept[{kind!r}] is {flag!r}; expected True or False")
        expected[kind] = bool(flag)
    confidence = check_open_unit(confidence, "confidence")
    out: dict[str, CanaryRate] = {}
    for kind, values in verdicts.items():
        if kind not in expected:
            raise ValueError(
                f"canary kind {kind!r} has no expectation; known kinds are {sorted(expected)} "
                "(pass expect_accept for others)"
            )
        codes = verdict_codes(values, f"verdicts[{kind!r}]", allow_invalid=True)
        accuracy = wilson_accuracy("judge", codes, confidence)
        out[kind] = CanaryRate(
            kind=kind,
            expected_accept=expected[kind],
            accepted=accuracy.estimate,
            interval=accuracy.interval,
            accepted_count=int(np.count_nonzero(codes == 1)),
            n=accuracy.n,
            invalid=accuracy.invalid,
        )
    return out
