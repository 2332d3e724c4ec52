"""Hand-grading generated answers in the terminal, one answer at a time: the screen, the keys and
the session behind ``rag-grade`` and ``rag-ablation grade`` (``rag_ablation.commands.grade``).

Each screen shows one answer: a header (n of N, config, question id, slice, how many of the list
are graded), the question, its reference answer, the generated answer, and the passages the model
saw (chunk id and text, cut to fit the terminal). Keys:

    c  correct                w  wrong (incorrect)        s  skip (no grade; shown again next time)
    b  back to the previous answer, to change its grade
    n  type a note (one line) to store with this answer's grade, then c or w
    p  passages whole / cut to fit              ?  help              q  quit (prints a summary)

    1 2 3  support: every claim of the answer is stated in the passages shown (1 supported), some
           are (2 partly), none is or it contradicts them (3 not); optional, kept for this
           answer's grade: press it before c or w (the support pass, below, saves it at once)

Any other key prints a one-line hint and changes nothing. Keys are single key presses when
standard input is a terminal (cbreak mode), otherwise one key per input line.

Grades file: the format is documented in ``rag_ablation.evaluation.judges.grades`` (one JSON object per
line: ``answer_sha256``, ``config``, ``grader``, ``id``, ``note``, ``verdict``). Every ``c`` or ``w``
rewrites the whole file at once and atomically (``write_grades``: temp file and rename), so a
crash or Ctrl-C loses no grade already given. The file is read again before each write, so grades
of other configs, and grades another session wrote in the meantime, are kept.

Resume rule: an answer is shown only when its ``(config, id)`` has no grade whose ``answer_sha256``
is the sha256 of the current answer text. A grade given for another text (the answer was
generated again since, or by another answer model) is *stale*: the answer is shown again, with
the old verdict marked stale, and grading it adds a grade for the current text. The old grade is
kept: it applies again when its text comes back (``llm.model`` switched back). Grading an answer
that has a current grade (``b``, ``--regrade``) replaces that grade. ``--regrade`` shows answers
that have a current grade too.

Which answers: every ``status: ok`` file in ``--answers`` (``unavailable`` ones are skipped, and
named), restricted to ``--config`` names if given (shown in ``--order``, below).
``--sample N --seed S`` takes a seeded sample of N answers instead: equal shares per config (as far
as each config has answers; a remainder goes to the first configs by name), and within a config
``rag_ablation.support.sampling.stratified_sample`` (stratified by slice, seeded by S), so configs that
answered the same questions get the same questions and their grades pair. The sample is drawn
from all answers, graded or not, so the same N and S give the same sample on every run, and a
rerun resumes it.

In which order (``--order``, ``rag_ablation.authoring.grade_order``): ``listed`` (config then
id), ``random`` (a seeded permutation: the default, ``DEFAULT_GRADE_ORDER``) or ``active``
(drawn by the judge score of ``--score-judge``, read from ``--score-dir``; each grade records
its ``sampling``, and the summary gives the weighted accuracy estimate), seeded by ``--seed``. A
session in active order resumes the sequence of draws on file (``grade_order.last_draw``): after
``q``, Ctrl-C or a kill, the next session's first draw is numbered one after the last one saved,
and the estimate goes on from where it stood.

Second pass (``--second-pass``, the workbench's "Second grader" button): a second grader,
``--grader NAME``, grades blind the answers someone else has graded (a current grade by another
grader) and NAME has not (``second_pass_items``). Nothing of the other grades is shown or sent:
the session sees only NAME's own grades (``Session(blind=True)``: the previous grade, the
progress, the end of the list and the summary count NAME's grades alone), and each grade is a
line of its own beside the first grader's (``rag_ablation.evaluation.judges.grades``). It is
drawn in ``listed`` or ``random`` order (``active`` order's draws belong to the first pass, and
the second pass uses ``random`` instead); grades are saved as in the first pass. In the first
pass, a grade by a grader without a line for the answer text replaces the first grader's line
(a correction, as before: one first-pass grade per text); in either pass a grader's own line is
replaced by their new grade. How far the two agree: ``judge_eval`` (docs/judging.md).

Adjudication (``--adjudicate --grader NAME``): the answers whose first and second graders
disagree (``adjudication_items``: ``grader_agreement.grader_pairs`` on the current texts) and
that have no adjudicated grade yet (``--regrade``: those too). The screen shows both graders'
verdicts and notes; ``c`` or ``w`` saves NAME's verdict as the text's adjudicated line
(``"role": "adjudicated"``, replacing the one there), which calibration then uses.

Support pass (``--support``, the workbench's "Support pass" button): adds a support grade
(``rag_ablation.evaluation.judges.grades``: ``supported``, ``partly``, ``not``) to the answers
``--grader`` has already graded, without grading the verdict again. It lists the answers in
scope whose current text has an ordinary line by ``--grader`` without ``support``
(``support_pass_items``; ``--regrade``: with one too): the rule is this grader's own support,
not anyone's, so a second grader can give theirs beside the first's, as with verdicts. An answer
this grader has not graded is not listed: grade it in the first pass, where ``1``, ``2`` or
``3`` before ``c`` or ``w`` give its support with the verdict. The screen shows the question, the
reference, the answer, this grader's verdict and the passages the model saw; keys ``1``
supported, ``2`` partly, ``3`` not, ``s`` skip, ``b`` back, ``p``, ``?``, ``q``. Each key saves at
once: that grader's line is rewritten with ``support`` added, its verdict, note, sampling and
role kept (``Session.save_support``; the file is read again first and rewritten atomically, as
for every grade). In ``listed`` or ``random`` order (active order's draws belong to the first
pass). Progress and the end of the list count this grader's support grades.

Progress: the header's ``[n/N]`` is the position in this session's list (the answers without a
grade when it started); ``graded G/T in scope`` counts the grades on file for the current
text of every answer in scope (``Session.in_scope``: the answers read, or the ``--sample``),
whoever gave them and whenever. At the end of the list the screen says how many of them are
graded and by whom (``end_of_list``), also when every one was graded before the session began.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from rag_ablation.authoring.grade_order import (ACTIVE, LISTED, Plan, describe, estimate, last_draw, make_plan,
                                                read_scores)
from rag_ablation.core.config import DEFAULT_GRADE_ORDER, DEFAULT_GRADE_SCORE_JUDGE
from rag_ablation.core.errors import InvalidData, MissingInput, UnknownName, UserError
from rag_ablation.core.io import read_json
from rag_ablation.core.pipeline_files import stage_target
from rag_ablation.evaluation.judges.grader_agreement import GraderPair, grader_pairs
from rag_ablation.evaluation.judges.grades import (ADJUDICATED, SUPPORT_LEVELS, Grade, answer_sha256, chosen,
                                                   load_grades, match_grades, support_of, write_grades)
from rag_ablation.data.questions import Question, load_questions
from rag_ablation.support.sampling import stratified_sample

KEYS_LINE = "c correct  w wrong  s skip  b back  n note  p passages  ? help  q quit"
HELP = ("c: the answer gives the reference's essential information (or declines an unanswerable question); "
        "w: it does not; 1/2/3 then c or w: its support by the passages (supported, partly, not); s: no grade now; "
        "b: previous answer; n: note; p: passages; q: quit")
SUPPORT_KEYS = dict(zip(("1", "2", "3"), SUPPORT_LEVELS))
"""The key of each support level: 1 supported, 2 partly, 3 not (``grades.SUPPORT_LEVELS``)."""
SUPPORT_KEYS_LINE = "1 supported  2 partly  3 not  s skip  b back  p passages  ? help  q quit"
"""The keys of the support pass (module docstring)."""
SUPPORT_QUESTION = "is every claim of the answer stated in the passages below?"
SUPPORT_HELP = ("1 supported: every claim of the answer is stated in the passages the model saw; 2 partly: some "
                "are; 3 not: none is, or it contradicts them (a refusal asserts nothing: s skips it); the verdict "
                "stays as graded; s: no support grade now; b: previous answer; p: passages; q: quit")
MAX_PROBLEMS = 5


@dataclass(frozen=True)
class Item:
    """One generated answer to grade."""

    config: str
    id: str
    slice: str
    answerable: bool
    answer: str
    passages: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str]:
        return (self.config, self.id)

    @property
    def sha256(self) -> str:
        return answer_sha256(self.answer)


@dataclass
class Answers:
    """The answers of every ``ok`` answers file, and the configs whose file is not ``ok``."""

    items: list[Item]
    unavailable: dict[str, str] = field(default_factory=dict)  # config -> one line saying why


# ---------------------------------------------------------------------------------------------
# reading the inputs


def _one_line(e: UserError) -> UserError:
    """The same error with its message on one line (loaders list bad lines one per line)."""
    head, *rest = [line.strip() for line in str(e).splitlines() if line.strip()] or [""]
    return type(e)(" ".join([head, "; ".join(rest)]).strip())


def _record_problems(rec: object) -> list[str]:
    if not isinstance(rec, dict):
        return [f"expected a JSON object, found {type(rec).__name__}"]
    out = []
    types = {"id": str, "slice": str, "answerable": bool, "answer": str, "passages": list}
    missing = [f for f in types if f not in rec]
    if missing:
        out.append(f"missing field(s) {', '.join(missing)}")
    for f, t in types.items():
        if f in rec and not isinstance(rec[f], t):
            out.append(f"field {f!r} must be a {t.__name__}, found {rec[f]!r:.40}")
    if isinstance(rec.get("passages"), list) and not all(isinstance(p, str) for p in rec["passages"]):
        out.append("field 'passages' must list chunk ids (strings)")
    return out


def _too_many(problems: list[str]) -> str:
    shown = "; ".join(problems[:MAX_PROBLEMS])
    return shown + (f"; and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS else "")


def load_answers(folder: Path) -> Answers:
    """Every answer of every ``<config>.json`` in ``folder`` whose status is ``ok``, sorted by
    config then id. Raises ``MissingInput`` for a missing or empty folder and one ``InvalidData``
    naming the bad files and records."""
    folder = Path(folder)
    how = f"run `dvc repro {stage_target('generate')}` (or `dvc pull`), or pass --answers DIR"
    if not folder.is_dir():
        raise MissingInput(f"no answers folder {folder}: expected one <config>.json per answered config; {how}")
    files = sorted(folder.glob("*.json"))
    if not files:
        raise MissingInput(f"answers folder {folder} holds no .json file: expected one <config>.json per answered "
                           f"config; {how}")
    out = Answers(items=[])
    problems: list[str] = []
    seen: dict[str, Path] = {}
    for path in files:
        try:
            data = read_json(path)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            problems.append(f"{path}: not valid JSON ({e})")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("config"), str) or not data["config"]:
            problems.append(f"{path}: expected a JSON object with a 'config' name, 'status' and 'answers'")
            continue
        config = data["config"]
        if config in seen:
            problems.append(f"{path}: config {config!r} is also answered in {seen[config]}")
            continue
        seen[config] = path
        status = data.get("status")
        if status != "ok":
            reason = data.get("reason") or "no reason given"
            out.unavailable[config] = f"{path.name}: config {config!r} is {status}: {reason}"
            continue
        records = data.get("answers")
        if not isinstance(records, list):
            problems.append(f"{path}: 'answers' must be a list of answer records")
            continue
        ids: set[str] = set()
        for n, rec in enumerate(records, start=1):
            bad = _record_problems(rec)
            if not bad and rec["id"] in ids:
                bad = [f"question {rec['id']!r} is answered twice"]
            if bad:
                problems.extend(f"{path}: answer {n}: {b}" for b in bad)
                continue
            ids.add(rec["id"])
            out.items.append(Item(config=config, id=rec["id"], slice=rec["slice"], answerable=rec["answerable"],
                                  answer=rec["answer"], passages=tuple(rec["passages"])))
    if problems:
        raise InvalidData(f"{len(problems)} problem(s) in the answers: {_too_many(problems)}; expected the files "
                          f"`generate` writes: rerun `dvc repro {stage_target('generate@<config>')}` or remove the file")
    out.items.sort(key=lambda it: it.key)
    return out


def restrict(answers: Answers, configs: Sequence[str]) -> Answers:
    """Only the answers of ``configs`` (all when empty); an unknown name raises ``UnknownName``."""
    if not configs:
        return answers
    known = sorted({it.config for it in answers.items} | set(answers.unavailable))
    unknown = [c for c in configs if c not in known]
    if unknown:
        raise UnknownName(f"no answers for config(s) {', '.join(map(repr, unknown))}; answered configs are: "
                          f"{', '.join(known)} (drop --config or name one of these)")
    return Answers(items=[it for it in answers.items if it.config in configs],
                   unavailable={c: why for c, why in answers.unavailable.items() if c in configs})


def read_questions(path: Path, items: Sequence[Item]) -> dict[str, Question]:
    """The questions of ``path`` by id; every answered id must be there."""
    path = Path(path)
    if not path.is_file():
        raise MissingInput(f"no question file {path}: run `dvc repro questions` (or `dvc pull`), "
                           "or pass --questions FILE")
    try:
        by_id = {q.id: q for q in load_questions(path)}
    except UserError as e:
        raise _one_line(e) from None
    missing = sorted({it.id for it in items if it.id not in by_id})
    if missing:
        raise InvalidData(f"{len(missing)} answered question id(s) are not in {path}: {_too_many(missing)}; "
                          "the answers were made from another question set: pass that file with --questions, "
                          f"or rerun `dvc repro {stage_target('generate')}`")
    return by_id


def read_passages(folder: Path, items: Sequence[Item]) -> dict[str, dict[str, str]]:
    """For each config of ``items``, the text of every chunk its answers were shown, read from
    ``folder/<config>.json`` (the retrieve stage's run file)."""
    out: dict[str, dict[str, str]] = {}
    for config in sorted({it.config for it in items}):
        path = Path(folder) / f"{config}.json"
        if not path.is_file():
            raise MissingInput(f"no run file {path} for config {config!r}, whose passages the answers name: "
                               f"run `dvc repro retrieve@{config}` (or `dvc pull`), or pass --runs DIR")
        try:
            run = read_json(path)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InvalidData(f"{path}: not valid JSON ({e}); rerun `dvc repro retrieve@{config}`") from None
        passages = run.get("passages") if isinstance(run, dict) else None
        if not isinstance(passages, dict):
            raise InvalidData(f"{path}: expected a JSON object with 'passages' (chunk id -> text); "
                              f"rerun `dvc repro retrieve@{config}`")
        wanted = {c for it in items if it.config == config for c in it.passages}
        out[config] = {c: t for c, t in passages.items() if c in wanted and isinstance(t, str)}
    return out


def read_grades(path: Path) -> list[Grade]:
    try:
        return load_grades(path)
    except UserError as e:
        raise _one_line(e) from None


# ---------------------------------------------------------------------------------------------
# what to grade


def equal_shares(counts: Mapping[str, int], size: int) -> dict[str, int]:
    """``size`` split equally over the configs of ``counts`` (config -> answers it has), none
    getting more than it has; what one cannot take goes to the others, a remainder to the first
    configs by name."""
    share = {c: 0 for c in counts}
    left = min(size, sum(counts.values()))
    while left:
        for c in sorted(counts):
            if left and share[c] < counts[c]:
                share[c] += 1
                left -= 1
    return share


def sample_items(items: Sequence[Item], size: int, *, seed: int) -> list[Item]:
    """A seeded sample of ``size`` answers, equal shares per config, stratified by slice within a
    config (module docstring); sorted by config then id."""
    by_config: dict[str, list[Item]] = {}
    for it in sorted(items, key=lambda it: it.key):
        by_config.setdefault(it.config, []).append(it)
    share = equal_shares({c: len(v) for c, v in by_config.items()}, size)
    chosen = [it for c, its in by_config.items() for it in stratified_sample(its, share[c], seed=seed)]
    return sorted(chosen, key=lambda it: it.key)


def plan_grading(items: Sequence[Item], grades: Sequence[Grade], *, sample: int | None = None, seed: int = 0,
                 regrade: bool = False, order: str = LISTED,
                 scores: Mapping[tuple[str, str], float] | None = None) -> tuple[list[Item], Plan]:
    """The answers to show and the plan behind them: ``items`` (or their seeded sample) are the
    population; those whose ``(config, id)`` has a grade for the current answer text are left
    out unless ``regrade``; the rest come in ``order`` (``grade_order``, seeded by ``seed``;
    ``scores`` by key for active order). Active order continues the draws on file for this
    population and seed (``grade_order.last_draw``)."""
    pool = sample_items(items, sample, seed=seed) if sample is not None else sorted(items, key=lambda it: it.key)
    done = set() if regrade else set(match_grades(grades, {it.key: it.answer for it in items}).verdicts)
    population = {it.key: it.sha256 for it in pool}
    after = last_draw(grades, population, seed=seed) if order == ACTIVE else 0
    plan = make_plan(population, done, order=order, seed=seed, scores=scores, after=after)
    by_key = {it.key: it for it in pool}
    return [by_key[k] for k in plan.keys], plan


def second_pass_items(items: Sequence[Item], grades: Sequence[Grade], grader: str) -> list[Item]:
    """The answers of ``items`` (order kept) whose current text has an ordinary grade by another
    grader than ``grader``: the second pass's population (module docstring)."""
    by_others = {g.slot for g in grades if g.grader != grader and not g.adjudicated}
    return [it for it in items if (*it.key, it.sha256) in by_others]


def support_pass_items(items: Sequence[Item], grades: Sequence[Grade], grader: str) -> list[Item]:
    """The answers of ``items`` (order kept) whose current text has an ordinary line by
    ``grader``: the support pass's population (module docstring)."""
    own = {g.slot for g in own_grades(grades, grader)}
    return [it for it in items if (*it.key, it.sha256) in own]


def own_supports(grades: Sequence[Grade], grader: str) -> list[Grade]:
    """``grader``'s ordinary lines that carry ``support``: what a support pass counts as done."""
    return [g for g in own_grades(grades, grader) if g.support is not None]


def adjudication_items(items: Sequence[Item], grades: Sequence[Grade]) -> list[Item]:
    """The answers of ``items`` (order kept) whose current text's first and second graders
    disagree (``grader_pairs``): the adjudication's population (module docstring)."""
    pairs = grader_pairs(grades, {it.key: it.sha256 for it in items})
    disputed = {p.key for p in pairs if not p.agree}
    return [it for it in items if it.key in disputed]


def adjudicated_grades(grades: Sequence[Grade]) -> list[Grade]:
    """The adjudicated lines of ``grades``: all an adjudication session counts as done."""
    return [g for g in grades if g.adjudicated]


def own_grades(grades: Sequence[Grade], grader: str) -> list[Grade]:
    """``grader``'s ordinary grades of ``grades``: all a blind session sees (module docstring)."""
    return [g for g in grades if g.grader == grader and not g.adjudicated]


def to_grade(items: Sequence[Item], grades: Sequence[Grade], *, sample: int | None = None, seed: int = 0,
             regrade: bool = False, order: str = LISTED) -> list[Item]:
    """The answers to show (``plan_grading``), in ``order`` (config then id by default)."""
    return plan_grading(items, grades, sample=sample, seed=seed, regrade=regrade, order=order)[0]


# ---------------------------------------------------------------------------------------------
# a grading session: position in the list, grades given, the file


def with_sampling(grade: Grade, on_file: Mapping[tuple[str, str, str], Grade], plan: Plan | None,
                  replaced: Grade | None = None) -> Grade:
    """``grade`` with its ``sampling`` record: the one of the line it replaces (``replaced``, else
    ``on_file``'s grade of its slot; a regrade keeps how the answer was drawn), else, in active
    order, ``plan.sampling`` against ``on_file`` (the grade of each answer text, by slot)."""
    old = replaced if replaced is not None else on_file.get(grade.slot)
    if old is not None and old.sampling is not None:
        return replace(grade, sampling=old.sampling)
    others = {slot: g for slot, g in on_file.items() if slot != grade.slot}
    return replace(grade, sampling=plan.sampling(grade.key, others) if plan is not None else None)


def replaced_line(on_file: Sequence[Grade], grade: Grade, *, blind: bool) -> int | None:
    """The index in ``on_file`` of the line ``grade`` replaces (module docstring): for an
    adjudicated grade, the text's adjudicated line; else its grader's ordinary line for the same
    text, else, outside a blind pass, the first ordinary line of the text; None: a new line."""
    if grade.adjudicated:
        return next((i for i, g in enumerate(on_file) if g.slot == grade.slot and g.adjudicated), None)
    same_text = [i for i, g in enumerate(on_file) if g.slot == grade.slot and not g.adjudicated]
    own = [i for i in same_text if on_file[i].grader == grade.grader]
    if own:
        return own[0]
    return same_text[0] if same_text and not blind else None


class Session:
    """The list being graded, where we are in it, and the grades file (rewritten on every grade)."""

    def __init__(self, items: Sequence[Item], grades_path: Path, grader: str, grades: Sequence[Grade],
                 plan: Plan | None = None, *, blind: bool = False, adjudicate: bool = False,
                 support_pass: bool = False):
        assert blind + adjudicate + support_pass <= 1, \
            "a session is a first pass, a blind second pass, an adjudication or a support pass"
        self.items = list(items)
        self.adjudicate = adjudicate  # grades are adjudicated lines; the two graders' are shown
        self.plan = plan  # active order: each grade records its sampling (grade_order.Plan.sampling)
        self.path = Path(grades_path)
        self.grader = grader
        self.blind = blind  # the second pass: only this grader's own grades are seen (module docstring)
        self.support_pass = support_pass  # keys give support to this grader's own lines (module docstring)
        self.pos = 0
        self.pairs: dict[tuple[str, str], GraderPair] = {}
        self.own: dict[tuple[str, str, str], Grade] = {}  # the support pass: this grader's lines, by slot
        self.grades: dict[tuple[str, str, str], Grade] = self._seen(grades)
        self.graded: dict[tuple[str, str], str] = {}  # this session's verdicts
        self.skipped: set[tuple[str, str]] = set()
        self.notes: dict[tuple[str, str], str] = {}  # typed with n, stored with the next grade
        self.supports: dict[tuple[str, str], str] = {}  # given with 1/2/3, stored with the next grade

    def _seen(self, grades: Sequence[Grade]) -> dict[tuple[str, str, str], Grade]:
        """The grades this session sees, by slot: the grade of each answer text (``chosen``), in a
        blind pass this grader's own, in an adjudication the adjudicated lines (and, in
        ``pairs``, both graders' lines of each answer listed), in a support pass this grader's own
        lines with support (and, in ``own``, all of this grader's lines)."""
        if self.support_pass:
            self.own = {g.slot: g for g in own_grades(grades, self.grader)}
            return {g.slot: g for g in own_supports(grades, self.grader)}
        if self.adjudicate:
            self.pairs = {p.key: p for p in grader_pairs(grades, {it.key: it.sha256 for it in self.items})}
            return {g.slot: g for g in adjudicated_grades(grades)}
        return {g.slot: g for g in own_grades(grades, self.grader)} if self.blind else chosen(grades)

    @property
    def current(self) -> Item | None:
        return self.items[self.pos] if self.pos < len(self.items) else None

    def previous_grade(self, item: Item) -> tuple[Grade | None, bool]:
        """The grade on file for ``item``'s current text, else one for another text of it (stale;
        the first by hash), else None; and whether it is stale."""
        g = self.grades.get((*item.key, item.sha256))
        if g is not None:
            return g, False
        other = sorted((g for g in self.grades.values() if g.key == item.key), key=lambda g: g.slot)
        return (other[0], True) if other else (None, False)

    def done(self) -> int:
        """How many answers of the list have a grade for their current text."""
        return sum(1 for it in self.items if (*it.key, it.sha256) in self.grades)

    def in_scope(self) -> dict[tuple[str, str], str]:
        """Every answer in scope (the plan's population: the answers read, or the sample), key ->
        sha256 of its current text; without a plan, the answers of the list."""
        if self.plan is not None:
            return self.plan.population
        return {it.key: it.sha256 for it in self.items}

    def graded_in_scope(self) -> list[Grade]:
        """The grades on file (as last read or written) for the current text of the answers in
        scope, whoever gave them: the progress count, graded before this session or in it."""
        return [g for k, h in self.in_scope().items() if (g := self.grades.get((*k, h))) is not None]

    def note(self, text: str) -> None:
        item = self.current
        if item is not None:
            self.notes[item.key] = " ".join(text.split())

    def hold_support(self, level: str) -> None:
        """Keep support ``level`` (``SUPPORT_LEVELS``) for the current answer's next grade (not in
        a support pass, where ``save_support`` saves it at once)."""
        item = self.current
        if item is not None:
            self.supports[item.key] = level

    def grade(self, verdict: str) -> Grade:
        """Grade the current answer (with the support held for it, else the support of the grade
        it replaces), write the file, and move to the next answer."""
        item = self.current
        if item is None:
            raise IndexError("no answer to grade: the list is at its end")
        assert not self.support_pass, "the support pass keeps verdicts: save_support"
        old, stale = self.previous_grade(item)
        keep = old if old is not None and not stale else None
        g = Grade(answer_sha256=item.sha256, config=item.config, grader=self.grader, id=item.id,
                  note=self.notes.pop(item.key, keep.note if keep else ""), verdict=verdict,
                  role=ADJUDICATED if self.adjudicate else None,
                  support=self.supports.pop(item.key, keep.support if keep else None))
        self._save(g)
        self.graded[item.key] = verdict
        self.skipped.discard(item.key)
        self.pos += 1
        return g

    def save_support(self, level: str) -> Grade:
        """The support pass: rewrite this grader's line for the current answer's text with
        ``support`` ``level`` (verdict, note, sampling and role kept), write the file (read again
        first), and move to the next answer. Raises ``UserError`` when the line is gone from the
        file (edited meanwhile)."""
        item = self.current
        if item is None:
            raise IndexError("no answer to grade: the list is at its end")
        assert self.support_pass, "support is saved at once only in the support pass: hold_support"
        lines = read_grades(self.path)
        slot = (*item.key, item.sha256)
        at = next((i for i, g in enumerate(lines) if g.slot == slot and g.grader == self.grader
                   and not g.adjudicated), None)
        if at is None:
            raise UserError(f"{self.path} has no grade by {self.grader!r} for config {item.config} question {item.id} "
                            f"any more (the file changed meanwhile): grade it in the first pass, or press s")
        lines[at] = replace(lines[at], support=level)
        write_grades(self.path, lines)
        self.grades = self._seen(lines)
        self.graded[item.key] = level
        self.skipped.discard(item.key)
        self.pos += 1
        return lines[at]

    def _save(self, grade: Grade) -> None:
        # read the file again so grades another session wrote meanwhile are kept
        lines = read_grades(self.path)
        at = replaced_line(lines, grade, blind=self.blind)
        if not (self.blind or self.adjudicate):  # neither is drawn: their grades have no sampling
            grade = with_sampling(grade, chosen(lines), self.plan, lines[at] if at is not None else None)
        if at is None:
            lines.append(grade)
        else:
            lines[at] = grade
        write_grades(self.path, lines)
        self.grades = self._seen(lines)

    def skip(self) -> None:
        item = self.current
        if item is not None:
            if item.key not in self.graded:
                self.skipped.add(item.key)
            self.pos += 1

    def back(self) -> bool:
        if self.pos == 0:
            return False
        self.pos -= 1
        return True


# ---------------------------------------------------------------------------------------------
# the screen


def _wrap(text: str, width: int, indent: str = "  ") -> list[str]:
    """``text`` wrapped to ``width`` with ``indent``, its line breaks kept (runs of blank lines as one)."""
    out: list[str] = []
    for para in text.strip().splitlines():
        if not para.strip():
            if out and out[-1] != "":
                out.append("")
            continue
        out += textwrap.wrap(para, width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False) or [indent]
    return out or [indent + "(empty)"]


def _cut(lines: list[str], n: int, width: int) -> list[str]:
    """The first ``n`` of ``lines``, the last one ending in `` ...`` when some were cut."""
    if len(lines) <= n:
        return lines
    return lines[: n - 1] + [lines[n - 1][: width - 4].rstrip() + " ..."] if n > 0 else []


def graded_by(grades: Sequence[Grade]) -> str:
    """``'78 by maintainer-1, 2 by tess'``: how many of ``grades`` each grader gave, most first."""
    counts = Counter(g.grader for g in grades)
    return ", ".join(f"{n} by {who}" for who, n in sorted(counts.items(), key=lambda c: (-c[1], c[0])))


def progress(session: Session) -> str:
    """``graded G/T in scope``: the grades on file for the current text of the ``T`` answers in
    scope (short, to stay on the header line of an 80-column terminal); in a support pass,
    ``support G/T in scope``, this grader's support grades."""
    what = "support" if session.support_pass else "graded"
    return f"{what} {len(session.graded_in_scope())}/{len(session.in_scope())} in scope"


def graded_word(session: Session) -> str:
    """What the session's grades are called: ``graded``, or ``support-graded`` in a support pass."""
    return "support-graded" if session.support_pass else "graded"


def end_of_list(session: Session) -> str:
    """What the end of the list says (the terminal and the page): how many answers in scope are
    graded and by whom, and what this session's list held."""
    graded, total = session.graded_in_scope(), len(session.in_scope())
    by = f" ({graded_by(graded)})" if graded else ""
    word = graded_word(session)
    if not session.items:
        if total and len(graded) == total:
            return f"All {total} answers in scope are {word}{by}: nothing is left to grade."
        return f"Nothing to grade: {len(graded)} of the {total} answers in scope are {word}{by}."
    skipped = len(session.skipped)
    left = total - len(graded)
    head = (f"End of the list: all {total} answers in scope are {word}{by}." if left == 0 else
            f"End of the list: {len(graded)} of the {total} answers in scope are {word}{by}, {left} not yet.")
    return (f"{head} This session's list held {len(session.items)}: {len(session.graded)} {word}, "
            f"{skipped} skipped (shown again next time).")


SECOND_PASS_HOW = "rag-ablation grade --second-pass --grader NAME"
SECOND_PASS_ORDER = "random"
"""The order of a second pass started where the first was in active order (the workbench)."""


def second_pass_offer(session: Session, how: str = SECOND_PASS_HOW) -> str | None:
    """At the end of a first pass with every answer in scope graded: the line offering a second
    grader the blind pass (``how`` starts it); else None."""
    total = len(session.in_scope())
    if (session.blind or session.support_pass or session.current is not None or not total
            or len(session.graded_in_scope()) < total):
        return None
    return (f"Every answer in scope is graded once. A second grader can now grade them blind (the first grades "
            f"hidden), to measure how far two graders agree, the ceiling of every judge: {how}.")


def _grade_lines(session: Session, item: Item, width: int) -> list[str]:
    """The lines under the header about the answer's grade: in a support pass this grader's
    verdict (kept) and support; else the grade on file (or stale), the note and the support held."""
    if session.support_pass:
        own = session.own.get((*item.key, item.sha256))
        if own is None:
            return []
        note = f" (note: {own.note})" if own.note else ""
        this = " this session" if item.key in session.graded else ""
        support = (f"support{this}: {own.support}; 1, 2 or 3 changes it" if own.support is not None
                   else "support: not graded yet")
        return [f"your grade: {own.verdict}{note}, kept"[:width], support[:width]]
    out = []
    old, stale = session.previous_grade(item)
    if old is not None:
        by = (f"{old.verdict} by {old.grader}" + (f" (note: {old.note})" if old.note else "")
              + (f", support {old.support}" if old.support is not None else ""))
        if stale:
            out.append(f"STALE grade: {by}, given for an older answer text; grade it again"[:width])
        else:
            this = " this session" if item.key in session.graded else ""
            out.append(f"graded{this}: {by}; c or w changes it"[:width])
    if item.key in session.notes:
        out.append(f"note for this grade: {session.notes[item.key]}"[:width])
    if item.key in session.supports:
        out.append(f"support for this grade: {session.supports[item.key]} (press c or w)"[:width])
    return out


def render(session: Session, question: Question | None, passages: Mapping[str, str], *, width: int,
           height: int, full: bool = False, message: str = "") -> list[str]:
    """The screen for the session's current answer (or the end of the list), as lines."""
    width = max(40, width - 1)
    rule = "-" * width
    item = session.current
    n = len(session.items)
    foot = [rule, (SUPPORT_KEYS_LINE if session.support_pass else KEYS_LINE)[:width], message[:width]]
    if item is None:
        offer = second_pass_offer(session)
        return [*textwrap.wrap(end_of_list(session), width), "b: back to the last answer, q: quit." if n else "q: quit.",
                *(textwrap.wrap(offer, width) if offer else []), *foot]
    head = (f"[{session.pos + 1}/{n}]  {item.config}  {item.id}  slice {item.slice}"
            f"{'' if item.answerable else ' (unanswerable)'}  {progress(session)}"
            f"{'  support pass' if session.support_pass else ''}")
    lines = [head[:width]]
    pair = session.pairs.get(item.key) if session.adjudicate else None
    if pair is not None:
        lines += [(f"{which} grader: {g.verdict} by {g.grader}" + (f" (note: {g.note})" if g.note else ""))[:width]
                  for which, g in (("first", pair.first), ("second", pair.second))]
    lines += _grade_lines(session, item, width)
    lines.append(rule)
    ref = question.answer if question else "(not in the question file)"
    if question is not None and not question.answerable:
        ref += "  [unanswerable: the correct answer declines]"
    lines += ["QUESTION", *_wrap(question.question if question else "(not in the question file)", width)]
    lines += ["REFERENCE", *_wrap(ref, width)]
    lines += ["ANSWER", *_wrap(item.answer, width)]
    lines.append((f"SUPPORT: {SUPPORT_QUESTION} 1 supported, 2 partly, 3 not" if session.support_pass else
                  f"SUPPORT (optional, then c or w): 1 supported, 2 partly, 3 not: {SUPPORT_QUESTION}")[:width])
    lines.append(rule)
    k = len(item.passages)
    lines.append(f"PASSAGES the model saw ({k}; p: {'cut to fit' if full else 'show whole'})")
    budget = height - 1 - len(lines) - len(foot)
    per = max(1, (budget - k) // k) if k else 0
    for i, cid in enumerate(item.passages, start=1):
        text = passages.get(cid)
        if not full and budget < 2 * k:  # a small terminal: one line per passage
            line = f"[{i}] {cid}: " + (" ".join(text.split()) if text is not None else "(text not in the run file)")
            lines.append(line if len(line) <= width else line[: width - 4] + " ...")
            continue
        lines.append(f"[{i}] {cid}"[:width])
        if text is None:
            lines.append("    (text not in the run file)")
        elif full:
            lines += _wrap(text, width, indent="    ")
        else:
            lines += _cut(_wrap(" ".join(text.split()), width, indent="    "), per, width)
    return lines + foot


# ---------------------------------------------------------------------------------------------
# keys


class LineKeys:
    """Keys from a stream that is not a terminal: one key per line."""

    def __init__(self, stream: TextIO, out: TextIO):
        self.stream, self.out = stream, out

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        yield

    def key(self) -> str | None:
        line = self.stream.readline()
        return None if line == "" else line.strip()

    def line(self, prompt: str) -> str | None:
        self.out.write(prompt)
        self.out.flush()
        got = self.stream.readline()
        return None if got == "" else got.rstrip("\n")


class TerminalKeys:
    """Single key presses from a terminal, in cbreak mode (no echo, no Enter; Ctrl-C still
    interrupts); the terminal's mode is restored on the way out, however that happens."""

    def __init__(self, stream: TextIO, out: TextIO):
        self.stream, self.fd, self.out = stream, stream.fileno(), out
        self.pending: list[str] = []
        self.saved: list | None = None

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        import termios
        import tty

        self.saved = termios.tcgetattr(self.fd)
        try:
            tty.setcbreak(self.fd, termios.TCSADRAIN)
            yield
        finally:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)

    def key(self) -> str | None:
        if not self.pending:
            data = os.read(self.fd, 64).decode("utf-8", errors="replace")
            if data == "" or data == "\x04":  # end of input, Ctrl-D
                return None
            # an escape sequence (arrow keys, ...) is one unknown key; typed-ahead letters are one key each
            self.pending = [data] if data.startswith("\x1b") else list(data)
        return self.pending.pop(0)

    def line(self, prompt: str) -> str | None:
        import termios

        cbreak = termios.tcgetattr(self.fd)
        assert self.saved is not None, "line() is called inside `with TerminalKeys(...)`, which saves the mode"
        termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
        try:
            self.out.write(prompt)
            self.out.flush()
            got = self.stream.readline()
            return None if got == "" else got.rstrip("\n")
        finally:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, cbreak)


# ---------------------------------------------------------------------------------------------
# the loop


def handle(session: Session, key: str, keys: LineKeys | TerminalKeys, state: dict) -> str:
    """Act on one key; returns the message line to show."""
    item = session.current
    if key in SUPPORT_KEYS:
        return _support_key(session, SUPPORT_KEYS[key])
    if session.support_pass and key in ("c", "w", "n"):
        return "support pass: verdict and note stay; 1 supported, 2 partly, 3 not, s skip"
    if key in ("c", "w"):
        if item is None:
            return "nothing to grade here: b goes back to the last answer, q quits"
        g = session.grade("correct" if key == "c" else "incorrect")
        return f"{g.config} {g.id}: {g.verdict}" + (f" (note: {g.note})" if g.note else "") + ", saved"
    if key == "s":
        if item is None:
            return "at the end of the list: b goes back, q quits"
        session.skip()
        return f"{item.config} {item.id}: skipped (no grade)"
    if key == "b":
        return "" if session.back() else "this is the first answer: nothing to go back to"
    if key == "n":
        if item is None:
            return "no answer here to note"
        text = keys.line(f"note for {item.config} {item.id} (Enter for none): ")
        if text is None:
            return "no note (end of input)"
        session.note(text)
        return "note kept for this answer's grade: press c or w" if text.strip() else "note cleared"
    if key == "p":
        state["full"] = not state["full"]
        return "passages shown whole" if state["full"] else "passages cut to fit"
    if key in ("?", "h"):
        return SUPPORT_HELP if session.support_pass else HELP
    shown = key if key.isprintable() and len(key) == 1 else repr(key)
    if session.support_pass:
        return f"unknown key {shown}: 1 supported, 2 partly, 3 not, s skip, b back, p passages, q quit"
    return f"unknown key {shown}: c correct, w wrong, 1/2/3 support, s skip, b back, n note, p passages, q quit"


def _support_key(session: Session, level: str) -> str:
    """Act on a support key (``SUPPORT_KEYS``): saved at once in a support pass, else held for
    the answer's next grade; returns the message line to show."""
    if session.current is None:
        return "nothing to grade here: b goes back to the last answer, q quits"
    if not session.support_pass:
        session.hold_support(level)
        return f"support {level} kept for this answer's grade: press c or w"
    try:
        g = session.save_support(level)
    except UserError as e:
        return str(e)
    return f"{g.config} {g.id}: support {level} (verdict {g.verdict} kept), saved"


def interact(session: Session, questions: Mapping[str, Question], passages: Mapping[str, Mapping[str, str]],
             keys: LineKeys | TerminalKeys, out: TextIO, *, clear: bool) -> None:
    """Show answers and act on keys until ``q`` or the end of input."""
    state = {"full": False}
    message = ""
    with keys.active():
        while True:
            item = session.current
            size = shutil.get_terminal_size((100, 40))
            lines = render(session, questions.get(item.id) if item else None,
                           passages.get(item.config, {}) if item else {}, width=size.columns,
                           height=size.lines, full=state["full"], message=message)
            out.write(("\x1b[H\x1b[2J" if clear else "\n") + "\n".join(lines) + "\n")
            out.flush()
            key = keys.key()
            if key is None or key == "q":
                return
            message = handle(session, key, keys, state)


def summary(session: Session | None, answers: Answers, grades_path: Path, plan: Plan | None = None) -> list[str]:
    """What the session did and where the grades stand, against every current answer."""
    lines_on_file = read_grades(grades_path)
    # one grade per text (a blind session's own); a support pass's session sees only this grader's supports
    grades = session.grades.values() if session and not session.support_pass else chosen(lines_on_file).values()
    current = {it.key: it.answer for it in answers.items}
    m = match_grades(list(grades), current)
    lines = []
    if session is not None and session.support_pass:
        given = list(session.graded.values())
        lines.append(f"support graded this session: {len(given)} ("
                     + ", ".join(f"{given.count(level)} {level}" for level in SUPPORT_LEVELS)
                     + f"), skipped {len(session.skipped)}")
    elif session is not None:
        verdicts = list(session.graded.values())
        lines.append(f"graded this session: {len(verdicts)} ({verdicts.count('correct')} correct, "
                     f"{verdicts.count('incorrect')} incorrect), skipped {len(session.skipped)}")
    per = {c: [0, 0] for c in sorted({it.config for it in answers.items})}
    for config, _ in current:
        per[config][1] += 1
    for config, _ in m.verdicts:
        per[config][0] += 1
    split = ", ".join(f"{c} {done} of {n}" for c, (done, n) in per.items())
    lines.append(f"grades matching the current answers: {len(m.verdicts)} of {len(current)} answers"
                 + (f" ({split})" if split else ""))
    lines.append(f"stale grades (for another text of a current answer: an earlier generation or another "
                 f"answer model; kept, and shown again for grading): {m.stale}")
    supports = {} if session and session.blind else support_of(lines_on_file, {it.key: it.sha256 for it in answers.items})
    if supports:  # (a blind pass shows no other grader's grade, support included)
        counts = Counter(supports.values())
        lines.append(f"answers with a support grade: {len(supports)} of {len(current)} ("
                     + ", ".join(f"{counts[level]} {level}" for level in SUPPORT_LEVELS) + ")")
    if plan is not None and plan.order == ACTIVE:
        lines.append(describe(estimate(grades, plan.population, seed=plan.seed)))
    lines.append(f"grades file: {grades_path}")
    return lines


def run_session(*, answers: Path, questions: Path, runs: Path, grades: Path, grader: str,
                configs: Sequence[str] = (), sample: int | None = None, seed: int = 0, regrade: bool = False,
                order: str = DEFAULT_GRADE_ORDER, score_dir: Path = Path("metrics/scores"),
                score_judge: str = DEFAULT_GRADE_SCORE_JUDGE, second_pass: bool = False, adjudicate: bool = False,
                support: bool = False, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Read the inputs, grade in the terminal until ``q`` or the end of input, print the summary;
    returns the exit status (0, or 130 after Ctrl-C). ``answers``, ``runs``: folders; ``questions``,
    ``grades``: files (module docstring); ``grader``: the name stored with each grade; ``order``,
    ``score_dir``, ``score_judge``: ``rag_ablation.authoring.grade_order``; ``second_pass``: the
    blind pass of a second grader, ``adjudicate``: the adjudication of the two graders'
    disagreements, ``support``: the support pass of ``grader``'s own grades (module docstring; each
    with ``order`` listed or random)."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    grader = grader.strip()
    passes = [flag for flag, on in (("--second-pass", second_pass), ("--adjudicate", adjudicate),
                                    ("--support", support)) if on]
    if len(passes) > 1:
        raise UserError(f"{' and '.join(passes)} are {'two' if len(passes) == 2 else 'separate'} sessions: "
                        "pass one of them")
    for flag, on in (("--second-pass", second_pass), ("--adjudicate", adjudicate), ("--support", support)):
        if on and order == ACTIVE:
            raise UserError(f"{flag} takes --order listed or random: active order's draws belong to the first pass")
    found = restrict(load_answers(answers), configs)
    given = read_grades(grades)
    scores = read_scores(score_dir, score_judge) if order == ACTIVE else None
    pool = (second_pass_items(found.items, given, grader) if second_pass else
            adjudication_items(found.items, given) if adjudicate else
            support_pass_items(found.items, given, grader) if support else found.items)
    seen = (own_grades(given, grader) if second_pass else adjudicated_grades(given) if adjudicate else
            own_supports(given, grader) if support else given)
    items, plan = plan_grading(pool, seen, sample=sample, seed=seed, regrade=regrade, order=order, scores=scores)
    notes = [f"skipped {why}" for why in found.unavailable.values()]
    if not items:
        nothing = (_nothing_to_adjudicate(plan) if adjudicate else _nothing_to_support(plan, grader) if support else
                   _nothing_to_grade(plan, seen, sample, seed, grader if second_pass else None))
        print("\n".join([*notes, nothing, *summary(None, found, grades, plan)]), file=stdout)
        return 0
    by_id = read_questions(questions, items)
    passages = read_passages(runs, items)
    session = Session(items, grades, grader, given, plan, blind=second_pass, adjudicate=adjudicate,
                      support_pass=support)
    tty = stdin.isatty()
    keys = TerminalKeys(stdin, stdout) if tty else LineKeys(stdin, stdout)
    status = 0
    clear = tty and stdout.isatty()
    try:
        interact(session, by_id, passages, keys, stdout, clear=clear)
    except KeyboardInterrupt:
        status = 130
        notes.append("interrupted: every grade given is saved")
    stdout.write(("\x1b[H\x1b[2J" if clear else "\n") + "\n".join([*notes, *summary(session, found, grades, plan)])
                 + "\n")
    stdout.flush()
    return status


def _nothing_to_support(plan: Plan, grader: str) -> str:
    """The line of a support pass with an empty list: why (module docstring)."""
    if not plan.population:
        return (f"nothing to grade in the support pass: {grader!r} has graded no answer in scope (its current text); "
                f"grade them first (rag-ablation grade, where 1, 2 or 3 before c or w gives the support too)")
    return (f"nothing to grade in the support pass: {grader!r} has given support to all {len(plan.population)} "
            f"answers in scope that {grader!r} graded (--regrade shows them again)")


def _nothing_to_adjudicate(plan: Plan) -> str:
    """The line of an adjudication with an empty list."""
    if not plan.population:
        return "nothing to adjudicate: no two graders disagree on a current answer"
    return (f"nothing to adjudicate: all {len(plan.population)} disagreements have an adjudicated grade "
            f"(--regrade shows them again)")


def _nothing_to_grade(plan: Plan, seen: Sequence[Grade], sample: int | None, seed: int,
                      second: str | None) -> str:
    """The line of a session with an empty list: why (``second``: the second grader's name)."""
    if second is not None:
        if not plan.population:
            return (f"nothing to grade in the second pass: no answer in scope has a current grade by another grader "
                    f"than {second!r} yet (the first pass comes first)")
        return (f"nothing to grade in the second pass: {second!r} has graded all {len(plan.population)} answers "
                f"another grader graded (--regrade shows them again)")
    what = (f"{len(plan.population)} answers of a sample of {sample} (seed {seed})" if sample is not None
            else f"{len(plan.population)} answers in scope")
    current = [g for g in seen if plan.population.get(g.key) == g.answer_sha256]
    offer = ("; a second grader can grade them blind: " + SECOND_PASS_HOW) if plan.population else ""
    return (f"nothing to grade: all {what} have a grade for their current answer text "
            f"({graded_by(current)}; --regrade shows them again){offer}")
