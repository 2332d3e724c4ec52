"""The workbench's "Grade answers" mode: hand-grading generated answers in the browser, exactly as
``rag-ablation grade`` does in the terminal (``rag_ablation.authoring.grader``), whose session
this mode drives:

- the same answers (every ``ok`` answers file, minus those with a grade for their current text)
  in the same order (``rag_ablation.authoring.grade_order``: ``--order``, ``--seed``; active
  order records each grade's ``sampling``);
- the same keys on the page: ``c`` correct, ``w`` wrong, ``s`` skip, ``b`` back, ``n`` note
  (then ``c`` or ``w``), ``p`` passages whole or cut, ``?`` help;
- the same screen: the question, its reference, the answer, and the passages the model saw;
- the same grades file, rewritten whole and atomically on every grade (``grader.Session``:
  ``write_grades``, temp file and rename), read again before each write. A server killed
  mid-save leaves the old file or the new one, never a part; the temporary file it left is
  removed when the mode next starts (``store.remove_stale_temps``: one not modified for
  ``store.STALE_SECONDS``, 60 s, or longer), and each one removed is printed (``say``, in the
  terminal where ``rag-ablation label`` runs);
- the same resume: active order continues the draws on file (``grade_order.last_draw``), so a
  restarted server numbers its next draw one after the last one saved;
- the same progress: ``graded`` counts the grades on file for the current text of every answer
  in scope (``in_scope`` of them), not only of this session's list; at the end of the list,
  ``end`` says how many are graded and by whom (``grader.end_of_list``);
- the same second pass (``rag-ablation grade --second-pass``): ``/api/grade/second`` with a
  ``grader`` name starts a blind pass over the answers another grader graded and that one has
  not (``grader.second_pass_items``), and ``/api/grade/first`` returns to the first pass of
  ``--grader``. In the second pass no response holds another grader's verdict, note or name:
  the session sees only the second grader's own grades (``Session(blind=True)``), so
  ``previous``, ``graded``, ``end`` and the summary are theirs alone, and there is no estimate
  (the pass is in listed or random order: ``active`` becomes ``random``). At the end of a first
  pass with every answer in scope graded, ``second_offer`` says so and offers the second pass
  (``grader.second_pass_offer``);
- the same support grades (``rag_ablation.evaluation.judges.grades``: ``supported``, ``partly``,
  ``not``: is the answer supported by the passages the model was shown, which the page shows
  under the answer): ``/api/grade/save`` takes an optional ``support`` stored with the verdict
  (the keys ``1``, ``2``, ``3`` before ``c`` or ``w``), and ``/api/grade/supportpass`` with a
  ``grader`` name (empty: ``--grader``) starts the support pass (``rag-ablation grade
  --support``): the answers whose current text has an ordinary grade by that grader without
  ``support``, each shown with that grader's verdict (``own``), and ``/api/grade/support``
  saves the level for the answer shown on that grader's line, its verdict and note kept
  (``grader.Session.save_support``). ``/api/grade/first`` returns to the first pass.

A grade or skip names the answer it is for (``config``, ``id``, ``answer_sha256``); one that is
not the answer shown now (a second tab, a page left open across a restart) is refused with 422,
so a grade never lands on another answer. The inputs are read on the mode's first request, so
the other modes work without answers; a missing input is a 422 saying what to run.

It lives beside the terminal grader rather than in ``workbench/`` (a lower layer, which may not
import the grader): ``rag-ablation label`` makes it and hands it to
``rag_ablation.authoring.workbench.app.create_app`` (``grading``), which routes
``/api/grade/*`` to it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_ablation.authoring.grade_order import ACTIVE, describe, estimate, read_scores
from rag_ablation.authoring.grader import (SECOND_PASS_ORDER, SUPPORT_HELP, Answers, Session, end_of_list,
                                           load_answers, own_grades, own_supports, plan_grading, read_grades,
                                           read_passages, read_questions, second_pass_items, second_pass_offer,
                                           summary, support_pass_items)
from rag_ablation.authoring.workbench.session import Refused, text_field
from rag_ablation.authoring.workbench.store import remove_stale_temps
from rag_ablation.data.questions import Question
from rag_ablation.evaluation.judges.grades import SUPPORT_LEVELS, VERDICTS

CUT_CHARS = 400
"""How many characters of a passage the page shows while passages are cut (``p`` shows them whole)."""
SECOND_PASS_HOW = "the Second grader form below: your name, then Start the second pass"
"""How the page starts the second pass (``grader.second_pass_offer``)."""
HELP = ("c correct: the answer gives the reference's essential information (or declines an unanswerable "
        "question); w wrong; 1 supported, 2 partly, 3 not (then c or w): every claim of the answer is in the passages "
        "the model saw, some are, none is; s skip (shown again next time); b back; n note (then c or w); "
        "p passages whole/cut")


@dataclass(frozen=True)
class GradeSource:
    """What the mode reads and writes (``rag-ablation label``'s options)."""

    answers: Path
    questions: Path
    runs: Path
    grades: Path
    grader: str
    order: str
    seed: int
    score_dir: Path
    score_judge: str


class GradeMode:
    """One grading session of the workbench (module docstring)."""

    def __init__(self, source: GradeSource, say: Callable[[str], None] | None = None) -> None:
        self.source = source
        self.say = say or (lambda line: print(line, flush=True))  # one line for the terminal
        self._session: Session | None = None
        self.found = Answers(items=[])
        self.questions: dict[str, Question] = {}
        self.passages: dict[str, dict[str, str]] = {}
        self.removed_temps: list[Path] = []

    def session(self) -> Session:
        """The session, read on first use (module docstring): the first pass of ``--grader``."""
        if self._session is None:
            self._session = self._open(self.source.grader, blind=False)
        return self._session

    def _open(self, grader: str, *, blind: bool, support: bool = False) -> Session:
        """A session read from the files now: the first pass, ``grader``'s blind second pass, or
        ``grader``'s support pass (``support``)."""
        src = self.source
        self.removed_temps = remove_stale_temps(src.grades)
        for tmp in self.removed_temps:
            self.say(f"rag-ablation label: removed {tmp}, left by a grade save that was killed (the grades file is "
                     f"whole and keeps every grade that was acknowledged)")
        self.found = load_answers(src.answers)
        given = read_grades(src.grades)
        order = SECOND_PASS_ORDER if (blind or support) and src.order == ACTIVE else src.order
        scores = read_scores(src.score_dir, src.score_judge) if order == ACTIVE else None
        pool = (second_pass_items(self.found.items, given, grader) if blind else
                support_pass_items(self.found.items, given, grader) if support else self.found.items)
        seen = own_grades(given, grader) if blind else own_supports(given, grader) if support else given
        items, plan = plan_grading(pool, seen, seed=src.seed, order=order, scores=scores)
        self.questions = read_questions(src.questions, items) if items else {}
        self.passages = read_passages(src.runs, items) if items else {}
        return Session(items, src.grades, grader, given, plan, blind=blind, support_pass=support)

    def second(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Start the blind second pass of the grader named in ``payload`` (module docstring)."""
        grader = " ".join(text_field(payload, "grader").split())
        if not grader:
            raise Refused(["type your name for the second pass: it is stored with each of your grades"])
        self._session = self._open(grader, blind=True)
        return self.view()

    def support_pass(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Start the support pass of the grader named in ``payload`` (empty: ``--grader``)
        (module docstring)."""
        grader = " ".join(text_field(payload, "grader").split()) or self.source.grader
        self._session = self._open(grader, blind=False, support=True)
        return self.view()

    def first(self) -> dict[str, Any]:
        """Back to the first pass of ``--grader``, read from the files now."""
        self._session = self._open(self.source.grader, blind=False)
        return self.view()

    def view(self) -> dict[str, Any]:
        """What the page shows: the position in this session's list (``position`` of ``total``),
        the grades on file for the answers in scope (``graded`` of ``in_scope``), the current
        answer (None at the end of the list, where ``end`` says where the grading stands) and,
        in active order, the weighted estimate so far."""
        s = self.session()
        out: dict[str, Any] = {"position": s.pos + 1, "total": len(s.items), "graded": len(s.graded_in_scope()),
                               "in_scope": len(s.in_scope()),
                               "order": s.plan.order if s.plan is not None else self.source.order, "help": HELP,
                               "cut": CUT_CHARS, "answer": None, "end": None, "second_offer": None,
                               "pass": "second" if s.blind else "support" if s.support_pass else "first",
                               "grader": s.grader, "support_levels": list(SUPPORT_LEVELS),
                               "unavailable": sorted(self.found.unavailable.values())}
        if s.plan is not None and s.plan.order == ACTIVE:
            out["estimate"] = describe(estimate(s.grades.values(), s.plan.population, seed=s.plan.seed))
        item = s.current
        if item is None:
            out["end"] = end_of_list(s)
            out["second_offer"] = second_pass_offer(s, SECOND_PASS_HOW)
            return out
        q = self.questions.get(item.id)
        old, stale = s.previous_grade(item)
        texts = self.passages.get(item.config, {})
        out["answer"] = {
            "config": item.config, "id": item.id, "slice": item.slice, "answerable": item.answerable,
            "answer": item.answer, "answer_sha256": item.sha256,
            "question": q.question if q else None, "reference": q.answer if q else None,
            "passages": [{"id": c, "text": texts.get(c)} for c in item.passages],
            "previous": None if old is None or s.support_pass else {
                "verdict": old.verdict, "grader": old.grader, "note": old.note, "support": old.support, "stale": stale,
                "this_session": item.key in s.graded},
            "own": None,
        }
        if s.support_pass:
            out["help"] = SUPPORT_HELP
            own = s.own.get((*item.key, item.sha256))
            if own is not None:
                out["answer"]["own"] = {"verdict": own.verdict, "note": own.note, "support": own.support,
                                        "this_session": item.key in s.graded}
        return out

    def _target(self, payload: Mapping[str, Any]) -> None:
        """Refuses a request naming another answer than the one shown now."""
        item = self.session().current
        named = (text_field(payload, "config"), text_field(payload, "id"), text_field(payload, "answer_sha256"))
        if item is None or named != (item.config, item.id, item.sha256):
            now = "the end of the list" if item is None else f"config {item.config} question {item.id}"
            raise Refused([f"this page names config {named[0]} question {named[1]}, but the answer to grade now is "
                           f"{now} (another tab or a restart moved on): reload the page"])

    def next(self) -> dict[str, Any]:
        return self.view()

    def save(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Grade the answer shown (``verdict`` correct or incorrect, ``note`` kept with it) and
        write the grades file; the view of the next answer, and what was saved."""
        verdict = text_field(payload, "verdict")
        if verdict not in VERDICTS:
            raise Refused([f"verdict {verdict!r} is not one of {', '.join(VERDICTS)}"])
        support = text_field(payload, "support")
        if support and support not in SUPPORT_LEVELS:
            raise Refused([_bad_support(support)])
        s = self.session()
        if s.support_pass:
            raise Refused(["the support pass keeps the verdicts: choose supported, partly or not (1, 2, 3), or go "
                           "back to the First pass to grade the verdict"])
        self._target(payload)
        note = text_field(payload, "note")
        if note:
            s.note(note)
        if support:
            s.hold_support(support)
        g = s.grade(verdict)
        return {**self.view(), "saved": {"config": g.config, "id": g.id, "verdict": g.verdict, "note": g.note,
                                         "support": g.support}}

    def support(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The support pass: save ``support`` (``SUPPORT_LEVELS``) for the answer shown on its
        grader's line, the verdict and note kept; the view of the next answer, and what was saved."""
        support = text_field(payload, "support")
        if support not in SUPPORT_LEVELS:
            raise Refused([_bad_support(support)])
        s = self.session()
        if not s.support_pass:
            raise Refused(["support alone is saved in the support pass (Start the support pass); here choose it "
                           "with the verdict (1, 2 or 3, then c or w)"])
        self._target(payload)
        g = s.save_support(support)
        return {**self.view(), "saved": {"config": g.config, "id": g.id, "verdict": g.verdict, "note": g.note,
                                         "support": g.support}}

    def skip(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        self._target(payload)
        self.session().skip()
        return self.view()

    def back(self) -> dict[str, Any]:
        s = self.session()
        if not s.back():
            raise Refused(["this is the first answer: nothing to go back to"])
        return self.view()

    def summary(self) -> dict[str, Any]:
        """The terminal grader's summary lines (graded this session, grades matching, stale)."""
        s = self.session()
        return {"lines": summary(s, self.found, self.source.grades, s.plan)}


def _bad_support(value: str) -> str:
    """The message refusing support ``value``: the levels, and what each means."""
    return (f"support {value!r} is not one of {', '.join(SUPPORT_LEVELS)} (supported: every claim of the answer is "
            f"in the passages shown; partly: some are; not: none is)")
