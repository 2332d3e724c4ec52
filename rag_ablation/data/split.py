"""The dev/test split of the question set: seeded, stratified by slice, never splitting a
document, and stable when questions are appended.

A sweep picks its winner on the *dev* questions and confirms it on the *test* questions, so the
winner's score on test is not inflated by the choice. The split is a committed file
(``data/split/<dataset>.jsonl``, written by the ``split`` stage): JSON Lines, one object per
question, ``{"group", "id", "side", "slice"}``, sorted by id. ``side`` is one of ``SIDES``
(``dev``, ``test``), or ``NO_SIDE`` (``all``) for every question when the split is off
(``split: none`` in params.yaml).

The rules (:func:`assign_split`):

- **Groups.** A question's group is its source document ``doc``; a question without one (an
  unanswerable question: ``doc`` null, empty or absent) is a group of its own, named by its
  ``id``. Every question of a group is on one side, so a document never straddles the split
  (passages written from one document are not independent). An id that equals some
  document's path would join that document's group: harmless, it only keeps them together.
- **Stable.** The file is extended, never reshuffled: a question the previous file assigns to
  ``dev`` or ``test`` keeps its side; a new question whose group already has assigned
  questions takes that group's side; ids of the previous file that are no longer in the
  question set are dropped. A previous file that puts two questions of one group on different
  sides (a question's ``doc`` was changed, or the file was edited) is bad input.
- **Stratified.** New groups are assigned per *stratum*, a group's most common slice (ties:
  the smallest slice name). Within a stratum they are taken in the order of
  ``sha256(f"{seed}\\0{group}")`` (so the result does not depend on the order of the input),
  and each goes to the side that brings the stratum's test share, in questions of its groups
  (the old groups' included), closest to ``test_fraction``; an exact tie goes to dev.
- **Both sides.** A slice with no question on one side cannot have a sweep confirmed on it: the
  split is still written (a first small question set is not blocked) and :func:`one_sided`'s
  warning names each such slice with the fix.
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from rag_ablation.core.config import NO_SPLIT
from rag_ablation.core.errors import InvalidData, MissingInput, UserError
from rag_ablation.core.io import SHOWN_PROBLEMS, numbered_json_lines

SIDES = ("dev", "test")
"""The two sides of an enabled split: ``dev`` (choose on it) and ``test`` (confirm on it)."""
NO_SIDE = "all"
"""The side of every question when the split is off (``split: none``)."""
KNOWN_SIDES = (*SIDES, NO_SIDE)
"""Every side a split file may hold."""

Row = dict[str, str]


class SplitError(UserError, ValueError):
    """An assignment that breaks the split's rules: a previous file that puts one document on
    both sides, or a slice left with no question on one side."""


def group_of(question: Mapping[str, Any]) -> str:
    """A question's group: its ``doc`` when that is a non-empty string, else its ``id``."""
    doc = question.get("doc")
    return doc if isinstance(doc, str) and doc else str(question["id"])


def _records(questions: Iterable[Mapping[str, Any]]) -> list[Row]:
    """``{"id", "group", "slice"}`` per question; a repeated id is a ValueError (the questions
    stage has already refused one, so it is a caller's bug)."""
    out: list[Row] = []
    seen: set[str] = set()
    for q in questions:
        qid = str(q["id"])
        if qid in seen:
            raise ValueError(f"question id {qid!r} given twice")
        seen.add(qid)
        out.append({"id": qid, "group": group_of(q), "slice": str(q["slice"])})
    return out


def stratum_of(slices: Iterable[str]) -> str:
    """The most common of ``slices`` (a group's questions' slices); ties: the smallest name."""
    counts = Counter(slices)
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def group_order(seed: int, group: str) -> str:
    """The key new groups of a stratum are sorted by: the hex sha256 of ``f"{seed}\\0{group}"``."""
    return hashlib.sha256(f"{seed}\0{group}".encode()).hexdigest()


def assign_split(questions: Iterable[Mapping[str, Any]], previous: Mapping[str, str], *,
                 test_fraction: float, seed: int) -> list[Row]:
    """Assign every question to ``dev`` or ``test`` by the module's rules.

    ``questions``: the question records (mappings with ``id``, ``slice`` and ``doc``; other keys
    are ignored). ``previous``: id -> side of the existing split file (``read_split``; may be
    empty); a side ``all`` (a file written with the split off) assigns nothing, any other side
    than dev, test or all is a ValueError. ``test_fraction`` must lie strictly between 0 and 1
    (ValueError otherwise; params.yaml's ``split.test_fraction`` is checked when read).

    Returns one row ``{"id", "side", "group", "slice"}`` per question, sorted by id. Raises
    ``SplitError`` naming every group the previous file puts on both sides, or every slice that
    ends with no question on one side (with its counts)."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be strictly between 0 and 1, got {test_fraction!r}")
    records = _records(questions)
    members: dict[str, list[Row]] = defaultdict(list)
    for r in records:
        members[r["group"]].append(r)

    old: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))  # group -> side -> ids
    for r in records:
        side = previous.get(r["id"])
        if side in SIDES:
            old[r["group"]][side].append(r["id"])
        elif side is not None and side != NO_SIDE:
            raise ValueError(f"previous side of {r['id']!r} is {side!r}, expected one of {', '.join(KNOWN_SIDES)}")
    straddling = sorted(g for g, sides in old.items() if len(sides) > 1)
    if straddling:
        parts = [f"{g} (" + "; ".join(f"{s}: {', '.join(sorted(old[g][s]))}" for s in SIDES) + ")"
                 for g in straddling]
        raise SplitError(
            f"the previous split puts the questions of {len(straddling)} document(s) on both sides: {', '.join(parts)}; "
            "a document's questions must share one side (was a question's doc changed?): edit the split file so "
            "that each listed document's questions have the same side, then rerun")
    side_of: dict[str, str] = {g: next(iter(sides)) for g, sides in old.items()}

    strata: dict[str, list[str]] = defaultdict(list)  # stratum -> its groups
    for g, rows in members.items():
        strata[stratum_of(r["slice"] for r in rows)].append(g)
    fraction = Fraction(test_fraction)
    for groups in strata.values():
        total = sum(len(members[g]) for g in groups if g in side_of)
        test = sum(len(members[g]) for g in groups if side_of.get(g) == "test")
        for g in sorted((g for g in groups if g not in side_of), key=lambda g: (group_order(seed, g), g)):
            n = len(members[g])
            total += n
            target = fraction * total  # compare counts, not shares: exact, so a tie is a tie
            goes_test = abs(test + n - target) < abs(test - target)
            side_of[g] = "test" if goes_test else "dev"
            test += n if goes_test else 0

    out = sorted(({"id": r["id"], "side": side_of[r["group"]], "group": r["group"], "slice": r["slice"]}
                  for r in records), key=lambda r: r["id"])
    return out


def one_sided(rows: list[Row], test_fraction: float) -> str | None:
    """The warning for the slices of ``rows`` with no question on one side (a sweep cannot be
    confirmed on them), naming each with its counts and the fix; None when every slice has
    both sides."""
    by_slice = slice_counts(rows)
    empty = {s: c for s, c in by_slice.items() if any(c.get(side, 0) == 0 for side in SIDES)}
    if not empty:
        return None
    parts = [f"{s} (dev {c.get('dev', 0)}, test {c.get('test', 0)})" for s, c in empty.items()]
    return (f"warning: the split leaves {len(empty)} slice(s) with no question on one side: {', '.join(parts)}; a "
            f"sweep cannot be confirmed on such a slice until it has questions on both sides: add questions of "
            f"that slice about other documents, try another split.test_fraction (now {test_fraction}), or set "
            f"split: none")


def no_split(questions: Iterable[Mapping[str, Any]]) -> list[Row]:
    """The rows of a split that is off (``split: none``): side ``all`` for every question, with
    its group and slice as :func:`assign_split` gives them, sorted by id."""
    return sorted(({**r, "side": NO_SIDE} for r in _records(questions)), key=lambda r: r["id"])


def slice_counts(rows: Iterable[Mapping[str, str]]) -> dict[str, dict[str, int]]:
    """slice -> side -> questions (sides that occur only), slices and sides sorted."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        counts[r["slice"]][r["side"]] += 1
    return {s: dict(sorted(c.items())) for s, c in sorted(counts.items())}


def side_counts(rows: Iterable[Mapping[str, str]]) -> dict[str, int]:
    """side -> questions (sides that occur only), sorted."""
    return dict(sorted(Counter(r["side"] for r in rows).items()))


def update_split(questions: Sequence[Mapping[str, Any]], previous: Mapping[str, str], *, enabled: bool,
                 test_fraction: float, seed: int, where: str = "split") -> tuple[list[Row], str]:
    """What the ``split`` stage writes, and its one line of counts: :func:`assign_split` of
    ``questions`` over the ``previous`` file's sides, or :func:`no_split` when the split is off.
    Ids of ``previous`` no longer among the questions are dropped and counted. A
    :class:`SplitError` names ``where`` (the split file) first."""
    ids = {str(q["id"]) for q in questions}
    dropped = sum(1 for i in previous if i not in ids)
    if not enabled:
        rows = no_split(questions)
        return rows, (f"split: {NO_SPLIT}: all {len(rows)} questions on side {NO_SIDE} ({dropped} dropped from the "
                      "previous file)")
    try:
        rows = assign_split(questions, previous, test_fraction=test_fraction, seed=seed)
    except SplitError as e:
        raise SplitError(f"{where}: {e}") from None
    kept = sum(1 for r in rows if previous.get(r["id"]) in SIDES)
    sides = side_counts(rows)
    by_slice = ", ".join(f"{s} {c.get('dev', 0)}/{c.get('test', 0)}" for s, c in slice_counts(rows).items())
    warning = one_sided(rows, test_fraction)
    return rows, (f"split (test_fraction {test_fraction}, seed {seed}): dev {sides.get('dev', 0)}, "
                  f"test {sides.get('test', 0)}; by slice (dev/test): {by_slice}; {kept} kept, {len(rows) - kept} "
                  f"newly assigned, {dropped} dropped (no longer in the question set)"
                  + (f"\n{warning}" if warning else ""))


_LINE = re.compile(r"^line (\d+):")


def read_split(path: Path, where: str | None = None) -> dict[str, str]:
    """The split file at ``path`` as id -> side (``dev``, ``test`` or ``all``), read through
    ``rag_ablation.core.io`` (blank lines skipped). Each line must be a JSON object with a
    non-empty string ``id`` (not repeated) and a ``side`` of ``KNOWN_SIDES``; its other keys
    (``group``, ``slice``) are not read. Raises ``InvalidData`` naming the file (``where``, e.g.
    ``data/split/x.jsonl at experiment e1`` for a copy of a committed file; default ``path``) and
    every bad line (the first ``SHOWN_PROBLEMS``), ``MissingInput`` when there is no file."""
    path = Path(path)
    if not path.is_file():
        raise MissingInput(f"split file {where or path} does not exist: expected the JSON lines the split stage "
                           "writes; run the split stage (`dvc repro split`) to write it")
    rows, problems = numbered_json_lines(path)
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    for n, obj in rows:
        if not isinstance(obj, dict):
            problems.append(f"line {n}: expected a JSON object with an id and a side, found {type(obj).__name__}")
            continue
        qid, side = obj.get("id"), obj.get("side")
        if not isinstance(qid, str) or not qid:
            problems.append(f"line {n}: field 'id' must be a non-empty string, found {qid!r}")
            continue
        if side not in KNOWN_SIDES:
            problems.append(f"line {n}: unknown side {side!r} of question {qid!r}, expected one of "
                            f"{', '.join(KNOWN_SIDES)}")
            continue
        if qid in first:
            problems.append(f"line {n}: duplicate id {qid!r} (first on line {first[qid]})")
            continue
        first[qid] = n
        out[qid] = side
    if problems:
        problems.sort(key=lambda p: int(m.group(1)) if (m := _LINE.match(p)) else 0)
        shown = problems[:SHOWN_PROBLEMS] + (
            [f"... and {len(problems) - SHOWN_PROBLEMS} more"] if len(problems) > SHOWN_PROBLEMS else [])
        raise InvalidData(f"{where or path}: {len(problems)} bad line(s) in the split file, expected one JSON object per line "
                          "with an id and a side (dev, test or all); fix the line(s) or restore the committed file "
                          "(git checkout -- FILE), then rerun:\n  " + "\n  ".join(shown))
    return dict(sorted(out.items()))


def merge_splits(splits: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """One assignment from the split files of several sides of a comparison (side name -> that
    side's :func:`read_split`): the union of their ids, sorted. The split is extended, never
    reshuffled, so files of one data set agree on every id they share (a later file only adds
    ids); a question two files give different sides is bad input, and a :class:`SplitError`
    names each such question (the first ``SHOWN_PROBLEMS``) with its side in every file."""
    seen: dict[str, dict[str, str]] = defaultdict(dict)  # id -> file name -> side
    for name, split in splits.items():
        for qid, side in split.items():
            seen[qid][name] = side
    clashes = sorted(qid for qid, by in seen.items() if len(set(by.values())) > 1)
    if clashes:
        parts = [f"{qid} (" + ", ".join(f"{side} at {name}" for name, side in seen[qid].items()) + ")"
                 for qid in clashes[:SHOWN_PROBLEMS]]
        more = f" and {len(clashes) - SHOWN_PROBLEMS} more" if len(clashes) > SHOWN_PROBLEMS else ""
        raise SplitError(f"the split files of the sides disagree on {len(clashes)} question(s): {', '.join(parts)}"
                         f"{more}; a sweep chooses and confirms on one split: name sides whose split files agree "
                         "(one data set, one split.seed and split.test_fraction), or pass --no-split")
    return {qid: next(iter(by.values())) for qid, by in sorted(seen.items())}
