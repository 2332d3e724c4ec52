"""The order hand grading shows answers in (``rag-ablation grade --order``, the workbench's
"Grade answers" mode), the judge score active order draws by, and the accuracy estimate from
the grades active order chose.

Orders (``ORDERS``; the default ``DEFAULT_GRADE_ORDER`` in ``rag_ablation.core.config``):

- ``listed``: config, then question id (for reading one config's answers through);
- ``random``: a uniform permutation seeded by ``--seed``: the first ``n`` grades are a simple
  random sample, and their mean estimates the accuracy of every answer in scope;
- ``active``: drawn one at a time with known probabilities that favour answers whose judge score
  is uncertain (``rag_ablation.evaluation.judges.active``, seeded by ``--seed``). Each grade
  carries its ``sampling`` record (``rag_ablation.evaluation.judges.grades``), from which
  ``estimate`` gives the unbiased weighted accuracy. A skipped answer leaves a gap: the estimate
  stops before it, and, graded later (``b``, in the same session), at it: a draw saved while it
  was ungraded recorded a ``known_graded`` short by one, so the draws after the gap are not used.

The population is every answer in scope (``--config``, ``--sample``); answers with a grade for
their current text are not drawn (unless ``--regrade``) and count as known.

Resuming (``last_draw``): a session in active order started again over the same population and
seed (after ``q``, a crash, a kill, a workbench restart) continues the sequence on file instead
of starting a new one: its first draw is numbered one after the highest draw number among the
current grades drawn with that seed (``active_records``), over the answers still ungraded, and
each grade records ``known_correct`` and ``known_graded`` from the grades on file, as every draw
does. So the draw numbers on file run 1, 2, ... without a repeat, the estimate right after a
restart is the one before it (the same records), and the draws after it extend it. The resumed
draws are seeded by ``resume_seed(seed, last)``, not by ``seed`` again: that would reuse the
random numbers that made draws 1, 2, ... The probabilities are those over the answers still
ungraded, which is all the sequential estimator needs (``rag_ablation.evaluation.judges.active``).
A gap left before the restart (a skipped draw) stays a gap: the estimate still stops there.

Scores (``read_scores``): the ``<judge>_score`` column of ``verdicts.csv`` (``judge_eval``'s
per-answer table, ``metrics/scores/``) when it has one for ``--score-judge``; else, for
``token_f1``, the ``token_f1`` column of ``answers.csv`` beside it. An answer with no score (an
unanswerable question has no token F1; an answer the table lacks) gets ``NO_SCORE``: any fixed
score keeps the estimate unbiased, a poor one only widens it.
"""
from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag_ablation.core.config import ACTIVE_UNIFORM_SHARE
from rag_ablation.core.errors import InvalidData, MissingInput, UserError, lookup
from rag_ablation.evaluation.judges.active import ORDERS as DRAWN, Draw, active_estimate, draw_term
from rag_ablation.evaluation.judges.grades import Grade, Sampling
from rag_ablation.evaluation.scoring.judge_scores import judge_score

if TYPE_CHECKING:  # scipy.stats (a second to import) only when an estimate is made
    from rag_ablation.evaluation.statistics.inference import Interval

Key = tuple[str, str]
LISTED = "listed"
ACTIVE = "active"
ORDERS = (ACTIVE, LISTED, *sorted(k for k in DRAWN if k != ACTIVE))
"""Every order's name: ``listed`` and those of ``rag_ablation.evaluation.judges.active.ORDERS``."""
NO_SCORE = 0.5
"""The score of an answer without one: nothing known about it."""
SCORE_SUFFIX = "_score"


def check_order(name: str) -> str:
    """``name`` if it is one of ``ORDERS``, else ``UnknownName`` listing them."""
    return lookup(dict.fromkeys(ORDERS, name), name, "grading order")


def _number(text: str, where: str) -> float:
    value = judge_score(text, where)
    return NO_SCORE if value is None else value


def _read_column(path: Path, column: str) -> dict[Key, float]:
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {(r["config"], r["id"]): _number(r[column] or "", f"{path} line {n}, column {column}")
            for n, r in enumerate(rows, start=2)}


def _header(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as f:
        return next(csv.reader(f), [])


def read_scores(folder: Path, judge: str) -> dict[Key, float]:
    """Each answer's score by ``(config, id)`` (module docstring): ``folder/verdicts.csv``'s
    ``<judge>_score`` column, else for ``token_f1`` ``folder/answers.csv``'s ``token_f1``; an
    empty cell is ``NO_SCORE``. Raises ``MissingInput`` or ``UserError`` saying what to run or
    pass, and ``InvalidData`` naming a cell that is not a number from 0 to 1."""
    folder = Path(folder)
    verdicts, answers = folder / "verdicts.csv", folder / "answers.csv"
    how = "run `dvc repro judge_eval` (or `dvc pull`), or pass --score-dir DIR"
    header = _header(verdicts) if verdicts.is_file() else []
    if header and not {"config", "id"} <= set(header):
        raise InvalidData(f"{verdicts}: expected the columns config and id first; {how}")
    if judge + SCORE_SUFFIX in header:
        return _read_column(verdicts, judge + SCORE_SUFFIX)
    if judge == "token_f1":
        if not answers.is_file():
            raise MissingInput(f"no {answers} to read token F1 from, and {verdicts} has no token_f1_score column; "
                               f"{how}")
        if "token_f1" not in _header(answers):
            raise InvalidData(f"{answers} has no token_f1 column; {how}")
        return _read_column(answers, "token_f1")
    if not verdicts.is_file():
        raise MissingInput(f"no {verdicts} to read the {judge!r} judge's scores from; {how}")
    have = sorted(c[: -len(SCORE_SUFFIX)] for c in header if c.endswith(SCORE_SUFFIX))
    raise UserError(f"{verdicts} has no column {judge + SCORE_SUFFIX}: judges with scores there: "
                    f"{', '.join(have) or 'none'}; pass one of them (or token_f1) with --score-judge")


@dataclass(frozen=True)
class Plan:
    """The answers to show, in order, and what active order needs to record with each grade."""

    keys: list[Key]
    order: str
    seed: int
    population: dict[Key, str]  # every answer in scope -> sha256 of its current text
    scores: dict[Key, float] = field(default_factory=dict)
    draws: dict[Key, tuple[int, Draw]] = field(default_factory=dict)  # active: key -> (1-based draw, Draw)
    after: int = 0  # active: the last draw on file this plan continues (``last_draw``); 0 for a new sequence

    def sampling(self, key: Key, grades: Mapping[tuple[str, str, str], Grade]) -> Sampling | None:
        """The ``sampling`` record of a grade of ``key`` saved now (``grades`` by slot, this
        grade not yet among them); None when the answer was not drawn in active order."""
        if key not in self.draws:
            return None
        t, d = self.draws[key]
        rest = {k for k, (u, _) in self.draws.items() if u >= t}
        known = [g for k, h in self.population.items() if k not in rest and (g := grades.get((*k, h))) is not None]
        return Sampling(draw=t, known_correct=sum(g.correct for g in known), known_graded=len(known),
                        population=len(self.population), probability=d.probability, rest=len(rest),
                        rest_score=d.rest_score, score=self.scores[key], seed=self.seed)


def resume_seed(seed: int, after: int) -> int:
    """The seed of the draws of a session resuming after draw ``after`` (module docstring):
    ``seed`` itself for a new sequence (``after`` 0), else one derived from both."""
    return seed if after == 0 else int(np.random.SeedSequence([seed, after]).generate_state(1)[0])


def make_plan(population: Mapping[Key, str], graded: Iterable[Key], *, order: str, seed: int,
              scores: Mapping[Key, float] | None = None, uniform: float = ACTIVE_UNIFORM_SHARE,
              after: int = 0) -> Plan:
    """The order of the answers of ``population`` (key -> sha256 of the current text) not in
    ``graded``: sorted for ``listed``, else drawn by ``rag_ablation.evaluation.judges.active``
    over the population sorted by key (``scores`` by key, ``NO_SCORE`` where missing). In active
    order the draws are numbered from ``after + 1`` and, when ``after`` is not 0, seeded by
    ``resume_seed`` (a resumed session: module docstring)."""
    check_order(order)
    if after < 0:
        raise ValueError(f"after must be 0 or a draw number, found {after}")
    keys = sorted(population)
    done = set(graded)
    if order == LISTED:
        return Plan([k for k in keys if k not in done], order, seed, dict(population))
    s = {k: (scores or {}).get(k, NO_SCORE) for k in keys}
    active = order == ACTIVE
    drawn = DRAWN[order]([s[k] for k in keys], seed=resume_seed(seed, after) if active else seed,
                         graded=[k in done for k in keys], uniform=uniform)
    shown = [keys[d.index] for d in drawn]
    draws = {keys[d.index]: (t, d) for t, d in enumerate(drawn, start=after + 1)} if active else {}
    return Plan(shown, order, seed, dict(population), s, draws, after if active else 0)


def active_records(grades: Iterable[Grade], population: Mapping[Key, str], *,
                   seed: int) -> list[tuple[Sampling, bool]]:
    """The ``sampling`` record and the verdict (correct or not) of every grade of a current
    answer of ``population`` drawn in active order with ``seed`` over a population of this
    size, by draw number: the sequence ``estimate`` reads and a resumed session continues."""
    return sorted(((g.sampling, g.correct) for g in grades if g.sampling is not None
                   and population.get(g.key) == g.answer_sha256 and g.sampling.seed == seed
                   and g.sampling.population == len(population)), key=lambda r: r[0].draw)


def last_draw(grades: Iterable[Grade], population: Mapping[Key, str], *, seed: int) -> int:
    """The highest draw number of ``active_records`` (0 when there is none): the draw a session
    in active order over ``population`` with ``seed`` resumes after (module docstring)."""
    records = active_records(grades, population, seed=seed)
    return records[-1][0].draw if records else 0


def estimate(grades: Iterable[Grade], population: Mapping[Key, str], *, seed: int,
             confidence: float = 0.95) -> Interval | str:
    """The weighted accuracy of ``population`` from its current grades given in active order with
    ``seed``: ``active_estimate`` of each draw's ``draw_term``, over the draws from the first up
    to the first gap (a draw not graded, or one saved while an earlier answer was ungraded: its
    ``known_graded`` is not ``population - rest``). A string says why there is none, or, when
    every answer of ``population`` has a current grade however given, that the accuracy is
    known exactly."""
    grades = list(grades)
    current = [g for g in grades if population.get(g.key) == g.answer_sha256]
    if population and len({g.key for g in current}) == len(population):
        k = sum(g.correct for g in current)
        return (f"none needed: every one of the {len(population)} answers in scope is graded ({k} correct), so their "
                f"accuracy is {k / len(population):.3f} exactly")
    records = active_records(grades, population, seed=seed)
    terms = []
    for n, (s, correct) in enumerate(records, start=1):
        if s.draw != n or s.known_graded != s.population - s.rest:
            break
        terms.append(draw_term(correct, score=s.score, probability=s.probability, rest_score=s.rest_score,
                               known_correct=s.known_correct))
    if not terms:
        return f"no grade in active order (seed {seed}) over these {len(population)} answers yet"
    return active_estimate(terms, len(population), confidence=confidence)


def describe(result: Interval | str) -> str:
    """One line for ``estimate``'s result."""
    if isinstance(result, str):
        return f"active estimate: {result}"
    return (f"active estimate of the accuracy of all answers in scope: {result.estimate:.3f} "
            f"(95% interval {result.low:.3f} to {result.high:.3f}) from the first {result.n} draw(s)")
