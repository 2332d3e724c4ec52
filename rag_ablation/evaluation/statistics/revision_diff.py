"""Each config in the workspace against itself at a git revision (``rag-ablation diff REV``).

The library of ``rag_ablation.commands.diff``. The committed per-question scores at ``REV``
(:func:`read_scores_at`, through ``rag_ablation.support.git``) are paired by question id with the
workspace's, and each config present on both sides is compared with itself (:func:`diff_rows`,
``comparison.compare``): fixed and broken counts of a 0/1 measure with the exact sign test (for a
continuous one, as nDCG@10: better / worse by more than ``stats.margin`` with the paired sign-flip
test), the change with a paired bootstrap interval, RR@10's change with its sign-flip test, Holm's
adjustment over the configs compared and the smallest detectable change. Configs found on one
side only and questions answerable on one side only are named, never paired (:class:`RevisionDiff`).
Only numbers here: :mod:`rag_ablation.evaluation.report.diff_text` renders a :class:`RevisionDiff`
as a terminal table or as Markdown for a pull request.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_ablation.core.config import StatsConfig
from rag_ablation.core.errors import UserError
from rag_ablation.evaluation.scoring.judge_scores import with_judge_score
from rag_ablation.evaluation.scoring.scores import parse_scores, read_scores
from rag_ablation.evaluation.statistics.comparison import (
    ANSWER_MEASURES,
    JUDGE_SCORES,
    Comparison,
    compare,
    measure_of_rows,
    rows_by_config,
    with_holm,
)
from rag_ablation.support.git import read_at
from rag_ablation.support.sides import WORKSPACE, Side

SCORES = Path("metrics/scores/retrieval.csv")
"""Where the per-question retrieval scores live, in the workspace and in every commit."""
ANSWER_SCORES = Path("metrics/scores/answers.csv")
"""Where the per-question answer scores live (``comparison.ANSWER_MEASURES``)."""
VERDICTS = Path("metrics/scores/verdicts.csv")
"""Where the per-answer judge scores live (``comparison.JUDGE_SCORES``), one row per answer of
``ANSWER_SCORES``, by ``config`` and ``id``."""


def scores_file(measure: str) -> Path:
    """The scores file a measure is a column of: :data:`ANSWER_SCORES` for an answer measure,
    else :data:`SCORES`."""
    return ANSWER_SCORES if measure in ANSWER_MEASURES else SCORES

NO_EXPERIMENT_SCORES_HINT = ("the experiment did not commit per-question scores: run it through the `score` stage "
                             "(`dvc exp run` reproduces the whole pipeline by default)")

NO_SCORES_HINT = ("that commit has no per-question scores; compare with a revision made after the `score` stage "
                  "was added, or commit the scores there (`dvc repro score` then `git commit`)")


# ------------------------------------------------------------------ scores at a revision


def read_scores_at(rev: str, cwd: Path | None = None, path: Path = SCORES) -> tuple[str, str]:
    """``(commit, text)`` of the per-question scores (``path``, :data:`SCORES` by default,
    relative to ``cwd``) as committed at ``rev``; a revision without them is a UserError saying
    how to get them."""
    return read_at(rev, path, cwd, hint=NO_SCORES_HINT)


def scores_of(side: Side, cwd: Path | None = None, path: Path = SCORES) -> list[dict]:
    """The per-question scores of one side (``path``: :data:`SCORES`, or :data:`ANSWER_SCORES`):
    the workspace's file, or the file committed at a revision or in a DVC experiment (a side
    without them is a UserError saying how to get them)."""
    if side.commit is None:
        return read_scores((cwd or Path(".")) / path)
    if side.kind == "experiment":
        _, text = read_at(side.commit, path, cwd, hint=NO_EXPERIMENT_SCORES_HINT, what=f"experiment {side.name!r}")
    else:
        _, text = read_scores_at(side.name, cwd, path)
    return parse_scores(text, where=f"{path.as_posix()} at {side.label}")


def measure_rows(side: Side, measure: str, cwd: Path | None = None) -> list[dict]:
    """The per-question rows of one side that hold ``measure``: the retrieval scores, the answer
    scores, or for a judge score (``comparison.JUDGE_SCORES``) the answer scores with that
    column of :data:`VERDICTS` joined in (``scoring.judge_scores.with_judge_score``)."""
    if measure not in JUDGE_SCORES:
        return scores_of(side, cwd, scores_file(measure))
    return with_judge_score(scores_of(side, cwd, ANSWER_SCORES), scores_of(side, cwd, VERDICTS), measure,
                            where=f"{VERDICTS.as_posix()} at {side.label}")


# --------------------------------------------------------------------------- the diff


@dataclass(frozen=True)
class RevisionDiff:
    """Each config on the new side (``new``: the workspace, or a revision or experiment at
    ``new_commit``) against itself at ``rev`` (``commit``), Holm over them all.

    ``comparisons`` follow ``order``; ``only_rev`` / ``only_workspace`` name configs with rows on
    one side only (``only_workspace``: on the new side); ``unavailable`` names requested configs
    with rows on neither side.
    """

    rev: str
    commit: str
    measure: str
    settings: StatsConfig
    comparisons: tuple[Comparison, ...]
    only_rev: tuple[str, ...]
    only_workspace: tuple[str, ...]
    unavailable: tuple[str, ...]
    new: str = WORKSPACE
    new_commit: str | None = None


def config_order(known: Iterable[str], params_order: Sequence[str]) -> list[str]:
    """``known`` names in ``params_order`` first, then the rest by name."""
    known = set(known)
    return [n for n in params_order if n in known] + sorted(known - set(params_order))


def diff_rows(old_rows: Iterable[Mapping], new_rows: Iterable[Mapping], *, rev: str, commit: str, measure: str,
              settings: StatsConfig, params_order: Sequence[str] = (), selected: Sequence[str] = (),
              new_side: str = WORKSPACE, new_commit: str | None = None) -> RevisionDiff:
    """Compare every config with rows on both sides (or only the ``selected`` ones) on
    ``measure`` (a column of ``PAIRED_MEASURES`` or, on answer rows, of ``ANSWER_MEASURES``; or
    ``auto``: nDCG@10 when every compared row holds it, else hit@5;
    ``comparison.measure_of_rows``, whose UserError names a column the rows lack). The diff's ``measure`` is the column used.

    A selected name with rows on neither side and not in ``params_order`` is a UserError listing
    the names there are; one in ``params_order`` is reported as unavailable.
    """
    old = rows_by_config(old_rows, where=f"scores at {rev}")
    new = rows_by_config(new_rows, where="workspace scores" if new_side == WORKSPACE else f"scores at {new_side}")
    names = config_order(set(old) | set(new) | set(selected), params_order)
    unknown = [n for n in selected if n not in old and n not in new and n not in params_order]
    if unknown:
        raise UserError(f"unknown config(s) {', '.join(map(repr, unknown))}; scored configs are: "
                        f"{', '.join(config_order(set(old) | set(new), params_order)) or 'none'}")
    if selected:
        names = [n for n in names if n in selected]
    both = [n for n in names if n in old and n in new]
    measure = measure_of_rows(measure, [r for n in both for rows in (old[n], new[n]) for r in rows])
    comparisons = with_holm([compare(old[n], new[n], base=f"{n}@{rev}", new=n, measure=measure, settings=settings)
                             for n in both])
    return RevisionDiff(
        rev=rev, commit=commit, measure=measure, settings=settings, comparisons=tuple(comparisons),
        only_rev=tuple(n for n in names if n in old and n not in new),
        only_workspace=tuple(n for n in names if n in new and n not in old),
        unavailable=tuple(n for n in names if n not in old and n not in new),
        new=new_side, new_commit=new_commit,
    )
