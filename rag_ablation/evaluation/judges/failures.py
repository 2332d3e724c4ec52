"""Where answers fail: the failure table and the retrieved-by-correct 2x2 table of one config.

Both tables take the answer rows of one config: one mapping per answered question, with

- ``id``: the question id (a string; each id at most once, so rows of one config only);
- ``answerable``: the question has an answer in the corpus (bool, or 0/1 as in
  ``metrics/scores/answers.csv``);
- ``refusal``: the answer declines (bool or 0/1; read by :func:`failure_table` only);
- ``relevant_in_prompt``: a labelled-relevant passage was among the passages in the prompt
  (bool or 0/1); read on answerable rows only, so on unanswerable rows it may be anything
  (``scoring`` leaves it empty, i.e. None);
- ``correct``: the correctness verdict of the answer (bool or 0/1), from hand grades or a
  judge; None when it is unknown (ungraded, stale grade, invalid judge output). The key must be
  present on answerable rows even when its value is None, so that forgetting to join the
  verdicts raises instead of silently reporting every answer as unknown.

Other keys (``config``, ``slice``, ``token_f1``, ...) are ignored. Both tables count answerable
questions only; unanswerable rows are skipped and their number reported
(``rag_ablation.evaluation.judges.unanswerable`` measures them).

Conventions follow :mod:`rag_ablation.evaluation.statistics.inference`: counts are ``int`` and shares plain
``float``; a share whose group is empty is None, never 0; id lists are sorted; ``as_dict()``
gives JSON-ready values (lists, not tuples). Bad input raises ``ValueError`` naming the row,
what was found and what was expected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_ablation.evaluation.statistics.inference import Interval, interval_dict, wilson_interval

__all__ = [
    "FAILURE_CATEGORIES",
    "HAND_GRADES",
    "JUDGE_PREFIX",
    "FailureCell",
    "FailureTable",
    "TwoByTwo",
    "checked_rows",
    "failure_table",
    "row_flag",
    "row_verdict",
    "share",
    "two_by_two",
]

FAILURE_CATEGORIES = (
    "refused_with_relevant",
    "refused_without_relevant",
    "wrong_with_relevant",
    "wrong_without_relevant",
    "correct_with_relevant",
    "correct_without_relevant",
    "unknown",
)
"""The cells of :class:`FailureTable`, in report order; every answerable answer is in exactly one."""

HAND_GRADES = "hand grades"
"""The ``source`` of :func:`two_by_two` when the verdicts are hand grades."""

JUDGE_PREFIX = "judge: "
"""The ``source`` of :func:`two_by_two` for a judge's verdicts is this prefix and the judge's name."""


# ------------------------------------------------------------------------- row reading
# Shared with rag_ablation.evaluation.judges.unanswerable, which reads the same answer rows.


def checked_rows(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``rows`` as a list of mappings, each with a non-empty string ``id`` seen only once (the
    answer rows of one config, module docstring), else ValueError naming the row."""
    try:
        out = list(rows)
    except TypeError:
        raise ValueError(
            f"rows must be an iterable of mappings (one per answer); got {type(rows).__name__}"
        ) from None
    seen: dict[str, int] = {}
    for i, row in enumerate(out):
        if not isinstance(row, Mapping):
            raise ValueError(  # noqa: TRY004 - bad input is a ValueError throughout (stats.py)
                f"row {i} is a {type(row).__name__}; expected a mapping of column name to value"
            )
        if "id" not in row:
            raise ValueError(f"row {i} has no 'id' key; expected the question id in every row")
        qid = row["id"]
        if not isinstance(qid, str) or not qid:
            raise ValueError(f"row {i} has id {qid!r}; expected a non-empty string")
        if qid in seen:
            raise ValueError(
                f"question {qid!r} appears in rows {seen[qid]} and {i}; expected each question at most "
                "once (the rows of one config)"
            )
        seen[qid] = i
    return out


def row_flag(row: Mapping[str, Any], key: str, i: int) -> bool:
    """``row[key]`` of row number ``i`` as a bool: True/False (also numpy's) or the integers 0/1;
    a missing key or any other value (None, 2, "1") raises ValueError naming the row."""
    if key not in row:
        raise ValueError(f"row {i} (id {row['id']!r}) has no {key!r} key; expected a bool or 0/1")
    value = row[key]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise ValueError(f"row {i} (id {row['id']!r}) has {key}={value!r}; expected a bool or 0/1")


def row_verdict(row: Mapping[str, Any], i: int) -> bool | None:
    """``row["correct"]`` of row number ``i`` as True/False (a bool or 0/1), or None for an
    unknown verdict. The key must be present (None is a value, a missing key an error), so that
    forgetting to join the verdicts raises ValueError instead of making every answer unknown."""
    if "correct" not in row:
        raise ValueError(
            f"row {i} (id {row['id']!r}) has no 'correct' key; expected the correctness verdict "
            "(bool or 0/1, None when unknown) joined onto every answerable row"
        )
    if row["correct"] is None:
        return None
    try:
        return row_flag(row, "correct", i)
    except ValueError:
        raise ValueError(
            f"row {i} (id {row['id']!r}) has correct={row['correct']!r}; expected a bool, 0/1 or None"
        ) from None


def share(count: int, n: int) -> float | None:
    """``count / n``, or None when ``n`` is 0: the share of an empty group is undefined, never 0."""
    return count / n if n else None


# ---------------------------------------------------------------------- failure table


@dataclass(frozen=True)
class FailureCell:
    """One cell of the failure table: ``count`` answers, the sorted ``ids`` of their questions,
    and ``share = count / n`` of all answerable answers (None when there are none)."""

    count: int
    share: float | None
    ids: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "share": self.share, "ids": list(self.ids)}


@dataclass(frozen=True)
class FailureTable:
    """Answers to answerable questions, split by what went wrong.

    With ``R`` = ``relevant_in_prompt`` (a labelled-relevant passage was in the prompt):

    - ``refused_with_relevant``: declined although R -- the generator failed to use it;
    - ``refused_without_relevant``: declined, not R -- a justified decline, given what it saw;
    - ``wrong_with_relevant``: answered, verdict incorrect, R -- a generation failure;
    - ``wrong_without_relevant``: answered, verdict incorrect, not R -- a retrieval failure;
    - ``correct_with_relevant`` / ``correct_without_relevant``: answered, verdict correct;
    - ``unknown``: answered, verdict None (not split by R).

    A declined answer is counted as refused whatever its verdict (the grading rule makes a
    decline to an answerable question incorrect anyway). ``n`` is the number of answerable
    answers, including unknown ones; it is the denominator of every share, so the shares sum to
    1 when ``n > 0`` and are all None when ``n == 0``. ``unanswerable_skipped`` counts the rows
    of unanswerable questions that were left out.
    """

    n: int
    unanswerable_skipped: int
    refused_with_relevant: FailureCell
    refused_without_relevant: FailureCell
    wrong_with_relevant: FailureCell
    wrong_without_relevant: FailureCell
    correct_with_relevant: FailureCell
    correct_without_relevant: FailureCell
    unknown: FailureCell

    def cells(self) -> dict[str, FailureCell]:
        """The cells by name, in :data:`FAILURE_CATEGORIES` order."""
        return {name: getattr(self, name) for name in FAILURE_CATEGORIES}

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "unanswerable_skipped": self.unanswerable_skipped,
            **{name: cell.as_dict() for name, cell in self.cells().items()},
        }


def failure_table(rows: Iterable[Mapping[str, Any]]) -> FailureTable:
    """The :class:`FailureTable` of one config's answer rows (keys: module docstring).

    Each answerable row goes to one cell: ``refusal`` first (refused_with/without_relevant by
    ``relevant_in_prompt``), else by the verdict ``correct``: False -> wrong_*, True -> correct_*,
    None -> unknown. Rows without any answerable question give ``n == 0``, zero counts and None
    shares. Raises ValueError on a non-mapping row, a missing or repeated id, or a missing or
    malformed ``answerable``/``refusal``/``relevant_in_prompt``/``correct`` on an answerable row.
    """
    groups: dict[str, list[str]] = {name: [] for name in FAILURE_CATEGORIES}
    n = skipped = 0
    for i, row in enumerate(checked_rows(rows)):
        if not row_flag(row, "answerable", i):
            skipped += 1
            continue
        n += 1
        refused = row_flag(row, "refusal", i)
        side = "with_relevant" if row_flag(row, "relevant_in_prompt", i) else "without_relevant"
        verdict = row_verdict(row, i)
        if refused:
            name = f"refused_{side}"
        elif verdict is None:
            name = "unknown"
        else:
            name = f"{'correct' if verdict else 'wrong'}_{side}"
        groups[name].append(row["id"])
    cells = {
        name: FailureCell(len(ids), share(len(ids), n), tuple(sorted(ids))) for name, ids in groups.items()
    }
    return FailureTable(n=n, unanswerable_skipped=skipped, **cells)


# -------------------------------------------------------------------------- 2x2 table


def _interval_json(interval: Interval | None) -> dict[str, float] | None:
    """A row share's interval as ``{estimate, low, high}``, None for an empty row."""
    return None if interval is None else interval_dict(interval, ("estimate", "low", "high"))


@dataclass(frozen=True)
class TwoByTwo:
    """The retrieved-by-correct table of answerable questions with a known verdict.

    Rows: a labelled-relevant passage was in the prompt (``retrieved``) or not (``missed``);
    columns: the verdict is correct or not (a decline to an answerable question is incorrect
    by the grading rule; the table takes the verdicts as the source gives them and does not
    read ``refusal``)::

                      correct            wrong
        retrieved     retrieved_correct  retrieved_wrong
        missed        missed_correct     missed_wrong

    Row shares: ``correct_given_retrieved = retrieved_correct / (retrieved_correct +
    retrieved_wrong)`` and ``correct_given_missed = missed_correct / (missed_correct +
    missed_wrong)``, each None when its row is empty; ``*_interval`` is the Wilson interval of
    that share (:func:`~rag_ablation.evaluation.statistics.inference.wilson_interval`, 95%), None for an empty
    row. ``unknown`` answers (verdict None) are in no cell; ``unknown_ids`` lists them sorted.
    ``n`` counts the four cells (known verdicts only). ``source`` says where the verdicts came
    from: ``"hand grades"`` or ``"judge: <name>"``.
    """

    source: str
    retrieved_correct: int
    retrieved_wrong: int
    missed_correct: int
    missed_wrong: int
    unknown: int
    unknown_ids: tuple[str, ...]
    unanswerable_skipped: int
    correct_given_retrieved: float | None
    correct_given_missed: float | None
    correct_given_retrieved_interval: Interval | None
    correct_given_missed_interval: Interval | None

    @property
    def n(self) -> int:
        """Answers with a known verdict: the sum of the four cells."""
        return self.retrieved_correct + self.retrieved_wrong + self.missed_correct + self.missed_wrong

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "n": self.n,
            "retrieved_correct": self.retrieved_correct,
            "retrieved_wrong": self.retrieved_wrong,
            "missed_correct": self.missed_correct,
            "missed_wrong": self.missed_wrong,
            "unknown": self.unknown,
            "unknown_ids": list(self.unknown_ids),
            "unanswerable_skipped": self.unanswerable_skipped,
            "correct_given_retrieved": self.correct_given_retrieved,
            "correct_given_missed": self.correct_given_missed,
            "correct_given_retrieved_interval": _interval_json(self.correct_given_retrieved_interval),
            "correct_given_missed_interval": _interval_json(self.correct_given_missed_interval),
        }

    def markdown(self) -> str:
        """A small Markdown table with the counts and each row's share correct (a whole
        percentage, ``n/a`` for an empty row), then a line naming the source and the excluded
        unknown verdicts."""

        def percent(x: float | None) -> str:
            return "n/a" if x is None else f"{100 * x:.0f}%"

        lines = [
            "| relevant passage in prompt | correct | wrong | share correct |",
            "| --- | --- | --- | --- |",
            f"| yes | {self.retrieved_correct} | {self.retrieved_wrong} | {percent(self.correct_given_retrieved)} |",
            f"| no | {self.missed_correct} | {self.missed_wrong} | {percent(self.correct_given_missed)} |",
            "",
            (f"Correctness from {self.source}; {self.n} answer(s) to answerable questions with a "
             f"known verdict; {self.unknown} with an unknown verdict left out."),
        ]
        return "\n".join(lines)


def _source(source: object) -> str:
    if isinstance(source, str) and (
        source == HAND_GRADES or (source.startswith(JUDGE_PREFIX) and source[len(JUDGE_PREFIX):].strip())
    ):
        return source
    raise ValueError(f"source is {source!r}; expected {HAND_GRADES!r} or {JUDGE_PREFIX + '<name>'!r}")


def two_by_two(rows: Iterable[Mapping[str, Any]], *, source: str) -> TwoByTwo:
    """The :class:`TwoByTwo` table of one config's answer rows (keys: module docstring;
    ``refusal`` is not read), with verdicts from ``source`` (``"hand grades"`` or
    ``"judge: <name>"``).

    Rows without any answerable question with a known verdict give zero counts and None
    shares. Raises ValueError on a ``source`` of another form, and on bad rows as
    :func:`failure_table` does.
    """
    source = _source(source)
    cells = {"retrieved_correct": 0, "retrieved_wrong": 0, "missed_correct": 0, "missed_wrong": 0}
    unknown: list[str] = []
    skipped = 0
    for i, row in enumerate(checked_rows(rows)):
        if not row_flag(row, "answerable", i):
            skipped += 1
            continue
        side = "retrieved" if row_flag(row, "relevant_in_prompt", i) else "missed"
        verdict = row_verdict(row, i)
        if verdict is None:
            unknown.append(row["id"])
        else:
            cells[f"{side}_{'correct' if verdict else 'wrong'}"] += 1

    def row_share(correct: int, wrong: int) -> tuple[float | None, Interval | None]:
        if correct + wrong == 0:
            return None, None
        return correct / (correct + wrong), wilson_interval(correct, correct + wrong)

    given_retrieved, retrieved_interval = row_share(cells["retrieved_correct"], cells["retrieved_wrong"])
    given_missed, missed_interval = row_share(cells["missed_correct"], cells["missed_wrong"])
    return TwoByTwo(
        source=source,
        **cells,
        unknown=len(unknown),
        unknown_ids=tuple(sorted(unknown)),
        unanswerable_skipped=skipped,
        correct_given_retrieved=given_retrieved,
        correct_given_missed=given_missed,
        correct_given_retrieved_interval=retrieved_interval,
        correct_given_missed_interval=missed_interval,
    )
