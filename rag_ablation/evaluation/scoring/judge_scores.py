"""A judge's per-answer score read from ``metrics/scores/verdicts.csv`` and joined onto answer rows.

``judge_eval`` writes one verdicts row per answer (``config``, ``id``, each judge's verdict and
``<judge>_score``, the combined judge's ``combined_score``), each score as text with six decimals
or empty where the judge gave none. Its readers (``rag-ablation diff --measure``, the active
grading order, ``judge_eval``'s own comparison of answered configs) parse a cell with
:func:`judge_score` and join a column onto the answer rows of ``metrics/scores/answers.csv``
with :func:`with_judge_score`, so every reader sees the same numbers.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from rag_ablation.core.errors import InvalidData, UserError


def judge_score(text: str, where: str) -> float | None:
    """A ``<judge>_score`` cell of ``verdicts.csv``: a number from 0 to 1, or None for an empty cell
    (the judge gave no score). Anything else is InvalidData naming ``where`` (file, line, column)."""
    if text.strip() == "":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:
        raise InvalidData(f"{where}: score {text!r} is not a number from 0 to 1; rerun `dvc repro judge_eval`")
    return value


def with_judge_score(answers: Iterable[Mapping], verdicts: Iterable[Mapping], column: str, *,
                     where: str) -> list[dict]:
    """``answers`` (answer score rows), each with ``column`` of the ``verdicts`` row of the same
    ``config`` and ``id`` as a float; None where that cell is empty or the answer has no verdict
    row (``comparison.measure_of_rows`` then says the measure is empty there). Verdict rows
    without the column are a UserError naming it; a bad cell, :func:`judge_score`'s InvalidData.
    ``where`` names the verdicts in messages (a bad cell adds its line, counting the header as
    line 1, and column)."""
    verdicts = list(verdicts)
    if verdicts and column not in verdicts[0]:
        have = sorted(k for k in verdicts[0] if k.endswith("_score"))
        raise UserError(f"{where} has no column {column!r} (judge scores there: {', '.join(have) or 'none'}); "
                        "regenerate it with `dvc repro judge_eval`")
    score = {(str(row["config"]), str(row["id"])): judge_score(str(row.get(column) or ""), f"{where} line {n}, column {column}")
             for n, row in enumerate(verdicts, start=2)}
    return [{**r, column: score.get((str(r["config"]), str(r["id"])))} for r in answers]
