"""Hand grades of generated answers: the ground truth every judge is calibrated against.

``data/labels/grades.jsonl`` holds one JSON object per grade of an answer by a grader::

    {"answer_sha256": "<sha256 of the answer text>", "config": "dense", "grader": "ana",
     "id": "main-runbooks-03", "note": "gives the flag name but not its default",
     "verdict": "incorrect"}

``verdict`` is ``correct`` or ``incorrect``. The rule (the chapter's): an answer is correct when
it gives the essential information of the reference answer; an answer with the key fact and some
noise around it is correct; a refusal ("the passages don't say") to an answerable question is
incorrect. For an unanswerable question the correct answer is to decline; anything that asserts
an answer is incorrect.

A grade applies only to the exact answer text it was given for: ``answer_sha256`` is the sha256
of the answer's UTF-8 text, and a grade whose hash differs from the current answer's is *stale*
(counted, never used). One question of a config may hold grades for several answer texts
(another answer model's, an earlier prompt's), and each is used again whenever its text is the
current answer, so switching ``llm.model`` back and forth keeps every model's grades.

Several graders may grade the same answer text (a second grader's blind pass,
``rag_ablation.authoring.grader``): one line per ``(config, id, answer_sha256, grader)``, and a
grader's second line for the same text is refused (``load_grades`` names both lines). A line may
carry ``"role": "adjudicated"`` (``ROLES``; a line without ``role`` is an ordinary grade, as in
every file written before it existed): the verdict settled after two graders disagreed, with the
adjudicator's name in ``grader`` (who may be one of the two). At most one adjudicated line per
answer text. *The* grade of an answer text, the one every judge is calibrated against and every
hand-grade count uses (``chosen``, ``match_hashes``), is its adjudicated line where there is one,
else the first grader's: the earliest ordinary line for that text in the file. ``write_grades``
keeps the lines of one text in the order given, so a rewrite keeps the first grader first.

A grade given in active order (``rag-ablation grade --order active``, the workbench's grade
mode) also carries ``sampling``, an object of numbers (``SAMPLING_FIELDS``) from which its term
of the weighted accuracy estimate is computed (``rag_ablation.evaluation.judges.active``)::

    "sampling": {"draw": 3, "known_correct": 41, "known_graded": 60, "population": 160,
                 "probability": 0.0093, "rest": 100, "rest_score": 31.2, "score": 0.42, "seed": 0}

``draw`` is its 1-based place in the seeded order (``seed``), ``probability`` the chance it was
drawn with, ``score`` its judge score, ``rest`` and ``rest_score`` how many answers of the
``population`` were still ungraded before the draw and the sum of their scores, and
``known_graded`` and ``known_correct`` how many of the others had a grade, and a correct one,
when it was saved. A line without ``sampling`` (every grade given in another order, and every
file written before it existed) reads as before, and is written back without it.

Support (groundedness: is the answer supported by the passages the model was shown?) is an
optional field of any line, ``"support"``, one of ``SUPPORT_LEVELS``:

- ``supported``: every claim of the answer is stated in the passages shown;
- ``partly``: some of its claims are, others are not;
- ``not``: none is, or the answer contradicts the passages.

It grades the answer against the passages only, whatever the reference says (a correct answer
from the model's own knowledge is ``not`` supported). A grader may leave it out on any line (a
refusal asserts nothing, so there is nothing to support); a line without it, and every file
written before it existed, reads as before and is written back byte for byte. It is given with a
verdict, or added later to a grader's own line by a support pass (``rag-ablation grade
--support``), which keeps that line's verdict, note, sampling and role. *The* support of an
answer text (``support_of``) is its adjudicated line's when that line has one, else the support
of the earliest line for that text that has one (whoever gave it); an answer text without any
has none.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from rag_ablation.core.errors import InvalidData
from rag_ablation.core.io import numbered_json_lines, string_record_problems, write_jsonl

FIELDS = ("answer_sha256", "config", "grader", "id", "note", "verdict")
VERDICTS = ("correct", "incorrect")
SAMPLING = "sampling"
"""The optional field of a grade given in active order (module docstring)."""
ROLE = "role"
"""The optional field of an adjudicated grade (module docstring)."""
ADJUDICATED = "adjudicated"
ROLES = (ADJUDICATED,)
"""Every value ``role`` may take; a line without ``role`` is an ordinary grade."""
SUPPORT = "support"
"""The optional field of a grade of the answer's support by the passages shown (module docstring)."""
SUPPORT_LEVELS = ("supported", "partly", "not")
"""Every value ``support`` may take: every claim of the answer is stated in the passages shown,
some are, none is (or it contradicts them); a line without ``support`` has no support grade."""
OPTIONAL = (SAMPLING, ROLE, SUPPORT)
SAMPLING_FIELDS = ("draw", "known_correct", "known_graded", "population", "probability", "rest", "rest_score",
                   "score", "seed")
COUNT_FIELDS = ("draw", "known_correct", "known_graded", "population", "rest", "seed")
"""The fields of ``sampling`` that are whole numbers (the others are real numbers)."""


@dataclass(frozen=True)
class Sampling:
    """How an answer graded in active order was drawn (module docstring)."""

    draw: int
    known_correct: int
    known_graded: int
    population: int
    probability: float
    rest: int
    rest_score: float
    score: float
    seed: int


def answer_sha256(text: str) -> str:
    """sha256 (hex) of the answer's UTF-8 text, exactly as stored in the answers file."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Grade:
    answer_sha256: str
    config: str
    grader: str
    id: str
    note: str
    verdict: str
    sampling: Sampling | None = None
    role: str | None = None
    support: str | None = None  # one of SUPPORT_LEVELS, or None: not graded (module docstring)

    @property
    def key(self) -> tuple[str, str]:
        return (self.config, self.id)

    @property
    def adjudicated(self) -> bool:
        """Whether this line is the adjudicated verdict of its answer text (module docstring)."""
        return self.role == ADJUDICATED

    @property
    def line_key(self) -> tuple[str, str, str, str, str]:
        """``(config, id, answer_sha256, grader, role or "")``: unique in a grades file."""
        return (*self.slot, self.grader, self.role or "")

    @property
    def slot(self) -> tuple[str, str, str]:
        """``(config, id, answer_sha256)``: unique in a grades file."""
        return (self.config, self.id, self.answer_sha256)

    @property
    def correct(self) -> bool:
        return self.verdict == "correct"


def sampling_problems(value: Any) -> list[str]:
    """Why ``value`` is not a ``sampling`` object: exactly ``SAMPLING_FIELDS``, each a number
    (a whole one for ``COUNT_FIELDS``), ``probability`` in (0, 1], ``score`` in [0, 1]."""
    if not isinstance(value, dict):
        return [f"field 'sampling' must be an object with {', '.join(SAMPLING_FIELDS)}"]
    out = [f"field 'sampling' lacks {f!r}" for f in SAMPLING_FIELDS if f not in value]
    out += [f"field 'sampling' has unknown field {f!r}" for f in sorted(set(value) - set(SAMPLING_FIELDS))]
    for f in (f for f in SAMPLING_FIELDS if f in value):
        v = value[f]
        if isinstance(v, bool) or not isinstance(v, int if f in COUNT_FIELDS else (int, float)):
            out.append(f"sampling.{f} must be a {'whole number' if f in COUNT_FIELDS else 'number'}, found {v!r}")
    if not out and not 0 < value["probability"] <= 1:
        out.append(f"sampling.probability must be in (0, 1], found {value['probability']!r}")
    if not out and not 0 <= value["score"] <= 1:
        out.append(f"sampling.score must be from 0 to 1, found {value['score']!r}")
    return out


def _problems(obj: Any) -> list[str]:
    plain = {k: v for k, v in obj.items() if k not in OPTIONAL} if isinstance(obj, dict) else obj
    out = string_record_problems(plain, FIELDS)
    if out:
        return out
    if SAMPLING in obj:
        out += sampling_problems(obj[SAMPLING])
    if ROLE in obj and obj[ROLE] not in ROLES:
        out.append(f"role {obj[ROLE]!r} is not one of {', '.join(ROLES)} (leave 'role' out for an ordinary grade)")
    if SUPPORT in obj and obj[SUPPORT] not in SUPPORT_LEVELS:
        out.append(f"support {obj[SUPPORT]!r} is not one of {', '.join(SUPPORT_LEVELS)} (supported: every claim of "
                   f"the answer is in the passages shown; partly: some are; not: none is; leave 'support' out when "
                   f"it is not graded)")
    if obj.get(ROLE) == ADJUDICATED and SAMPLING in obj:
        out.append("an adjudicated grade has no 'sampling' (it was not drawn: leave it out)")
    for f in ("answer_sha256", "config", "grader", "id"):
        if not obj[f].strip():
            out.append(f"field {f!r} is empty")
    if obj["verdict"] not in VERDICTS:
        out.append(f"verdict {obj['verdict']!r} is not one of {', '.join(VERDICTS)}")
    h = obj["answer_sha256"]
    if len(h) != 64 or any(c not in "0123456789abcdef" for c in h):
        out.append(f"answer_sha256 {h!r} is not 64 lowercase hex digits")
    return out


def load_grades(path: Path) -> list[Grade]:
    """Every grade in ``path`` (module docstring), in file order; an absent file has none.

    Raises ``InvalidData`` naming every bad line (bad JSON, missing or unknown fields, a verdict
    outside ``VERDICTS``, a ``role`` outside ``ROLES``, a ``support`` outside ``SUPPORT_LEVELS``,
    a malformed hash, a grader grading the same answer text again, a second adjudicated line for
    one answer text).
    """
    path = Path(path)
    if not path.is_file():
        return []
    lines, errors = numbered_json_lines(path)
    grades: list[Grade] = []
    seen: dict[tuple[str, str, str, str, str], tuple[int, str]] = {}
    adjudicated: dict[tuple[str, str, str], int] = {}
    for number, line in lines:
        problems = _problems(line)
        obj = cast(dict[str, Any], line)  # a dict whenever there are no problems
        if not problems:
            sampling = Sampling(**obj[SAMPLING]) if SAMPLING in obj else None
            grade = Grade(**{f: obj[f] for f in FIELDS}, sampling=sampling, role=obj.get(ROLE),
                          support=obj.get(SUPPORT))
            problems = _repeat_problems(grade, number, seen, adjudicated)
        if problems:
            errors.extend(f"line {number}: {p}" for p in problems)
        else:
            grades.append(grade)
    if errors:
        raise InvalidData(
            f"{path}: {len(errors)} bad grade line(s):\n  " + "\n  ".join(errors)
            + "\nfix or delete these lines (rag-grade rewrites the file whole)"
        )
    return grades


def _repeat_problems(grade: Grade, number: int, seen: dict[tuple[str, str, str, str, str], tuple[int, str]],
                     adjudicated: dict[tuple[str, str, str], int]) -> list[str]:
    """Why line ``number`` repeats an earlier one (``seen``: line key -> line and verdict;
    ``adjudicated``: answer text -> line of its adjudicated grade), recording it when it does not."""
    config, qid, _ = grade.slot
    first = seen.get(grade.line_key)
    if first is not None:
        line, verdict = first
        other = (f", with another verdict ({verdict}, then {grade.verdict}): keep the one meant"
                 if verdict != grade.verdict else "")
        return [f"config {config!r} question {qid!r} is graded again for the same answer text (first on line {line}) "
                f"by the same grader {grade.grader!r}{' as adjudicator' if grade.adjudicated else ''}{other}"]
    if grade.adjudicated and grade.slot in adjudicated:
        return [f"config {config!r} question {qid!r} has a second adjudicated grade for the same answer text (first on "
                f"line {adjudicated[grade.slot]}): an answer text has at most one"]
    seen[grade.line_key] = (number, grade.verdict)
    if grade.adjudicated:
        adjudicated[grade.slot] = number
    return []


def _line(grade: Grade) -> dict[str, Any]:
    """The JSON object of ``grade``: ``sampling``, ``role`` and ``support`` only when set."""
    return {k: v for k, v in asdict(grade).items() if k not in OPTIONAL or v is not None}


def write_grades(path: Path, grades: Iterable[Grade]) -> None:
    """Write ``grades`` atomically, one sorted-key JSON object per line, sorted by config, id, hash;
    the lines of one answer text in the order given (the first grader's first, module docstring);
    ``sampling``, ``role`` and ``support`` only on the grades that have one."""
    rows = sorted(grades, key=lambda g: g.slot)  # stable: one text's lines keep their order
    write_jsonl(path, (_line(g) for g in rows))


def chosen(grades: Iterable[Grade]) -> dict[tuple[str, str, str], Grade]:
    """*The* grade of every answer text of ``grades`` (in file order), by slot: its adjudicated
    line, else its first ordinary line (module docstring)."""
    out: dict[tuple[str, str, str], Grade] = {}
    for g in grades:
        if g.adjudicated or g.slot not in out:
            out[g.slot] = g
    return out


@dataclass(frozen=True)
class Matched:
    """Grades that apply to the current answers, and how many did not."""

    verdicts: dict[tuple[str, str], bool]  # (config, id) -> hand verdict is correct
    stale: int  # graded another text of a current answer (an earlier generation, another model)
    unknown: int  # graded a (config, id) that has no current answer


def match_grades(grades: Sequence[Grade], answers: Mapping[tuple[str, str], str]) -> Matched:
    """Keep the grades whose ``answer_sha256`` equals the sha256 of the current answer text.

    ``answers`` maps ``(config, id)`` to the current answer text.
    """
    return match_hashes(grades, {key: answer_sha256(text) for key, text in answers.items()})


def match_hashes(grades: Sequence[Grade], hashes: Mapping[tuple[str, str], str]) -> Matched:
    """``match_grades`` given the sha256 of each current answer instead of its text. Each answer
    text's grade (``chosen``: adjudicated, else the first grader's) counts once: used (its hash
    is the current answer's), ``stale`` (its ``(config, id)`` has a current answer with another
    text) or ``unknown`` (no current answer)."""
    verdicts: dict[tuple[str, str], bool] = {}
    stale = unknown = 0
    for g in chosen(grades).values():
        h = hashes.get(g.key)
        if h is None:
            unknown += 1
        elif h != g.answer_sha256:
            stale += 1
        else:
            verdicts[g.key] = g.correct
    return Matched(verdicts=verdicts, stale=stale, unknown=unknown)


def support_of(grades: Sequence[Grade], hashes: Mapping[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    """The support level of each current answer (``hashes``: ``(config, id)`` -> sha256 of its
    current text) that has one, by ``(config, id)``: its text's adjudicated line's support when
    that line has one, else the support of the earliest line (in ``grades``' order, the file's)
    for that text that has one (module docstring). Grades of other texts (stale) and answers
    without a support grade are left out."""
    out: dict[tuple[str, str], str] = {}
    settled: set[tuple[str, str]] = set()  # answers whose support is their adjudicated line's
    for g in grades:
        if g.support is None or hashes.get(g.key) != g.answer_sha256 or g.key in settled:
            continue
        if g.adjudicated:
            out[g.key] = g.support
            settled.add(g.key)
        elif g.key not in out:
            out[g.key] = g.support
    return out
