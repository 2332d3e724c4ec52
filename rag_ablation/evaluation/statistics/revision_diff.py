"""Each config in the workspace against itself at a git revision (``rag-ablation diff REV``).

The library of ``rag_ablation.commands.diff``. The committed per-question scores at ``REV``
(:func:`read_scores_at`, through ``rag_ablation.support.git``) are paired by question id with the
workspace's, and each config present on both sides is compared with itself (:func:`diff_rows`,
``comparison.compare``): fixed and broken counts of a 0/1 measure, the change with a paired
bootstrap interval, the exact sign test, RR@10's change with its sign-flip test, Holm's
adjustment over the configs compared and the smallest detectable change. Configs found on one
side only and questions answerable on one side only are named, never paired (:class:`RevisionDiff`).
:func:`format_text` renders a terminal table, :func:`format_markdown` Markdown for a pull request.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_ablation.core.config import StatsConfig
from rag_ablation.core.errors import UserError
from rag_ablation.evaluation.statistics.comparison import RECALL_OF, Comparison, compare, is_real, rows_by_config, with_holm
from rag_ablation.evaluation.report.plot_data import LABELS
from rag_ablation.evaluation.report.formatting import detectable, interval, p_value, signed, table
from rag_ablation.evaluation.statistics.inference import CHANGE_INTERVAL, interval_dict
from rag_ablation.evaluation.scoring.scores import parse_scores, read_scores
from rag_ablation.support.git import read_at
from rag_ablation.support.sides import WORKSPACE, Side

SCORES = Path("metrics/scores/retrieval.csv")
"""Where the per-question retrieval scores live, in the workspace and in every commit."""

NO_EXPERIMENT_SCORES_HINT = ("the experiment did not commit per-question scores: run it through the `score` stage "
                             "(`dvc exp run` reproduces the whole pipeline by default)")

NO_SCORES_HINT = ("that commit has no per-question scores; compare with a revision made after the `score` stage "
                  "was added, or commit the scores there (`dvc repro score` then `git commit`)")


# ------------------------------------------------------------------ scores at a revision


def read_scores_at(rev: str, cwd: Path | None = None) -> tuple[str, str]:
    """``(commit, text)`` of the per-question scores (:data:`SCORES`, relative to ``cwd``) as
    committed at ``rev``; a revision without them is a UserError saying how to get them."""
    return read_at(rev, SCORES, cwd, hint=NO_SCORES_HINT)


def scores_of(side: Side, cwd: Path | None = None) -> list[dict]:
    """The per-question scores of one side: the workspace's file, or the file committed at a
    revision or in a DVC experiment (a side without them is a UserError saying how to get them)."""
    if side.commit is None:
        return read_scores((cwd or Path(".")) / SCORES)
    if side.kind == "experiment":
        _, text = read_at(side.commit, SCORES, cwd, hint=NO_EXPERIMENT_SCORES_HINT, what=f"experiment {side.name!r}")
    else:
        _, text = read_scores_at(side.name, cwd)
    return parse_scores(text, where=f"{SCORES.as_posix()} at {side.label}")


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
    """Compare every config with rows on both sides (or only the ``selected`` ones).

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
    comparisons = with_holm([compare(old[n], new[n], base=f"{n}@{rev}", new=n, measure=measure, settings=settings)
                             for n in both])
    return RevisionDiff(
        rev=rev, commit=commit, measure=measure, settings=settings, comparisons=tuple(comparisons),
        only_rev=tuple(n for n in names if n in old and n not in new),
        only_workspace=tuple(n for n in names if n in new and n not in old),
        unavailable=tuple(n for n in names if n not in old and n not in new),
        new=new_side, new_commit=new_commit,
    )


# ------------------------------------------------------------------------- rendering


def _label(measure: str) -> str:
    return LABELS[RECALL_OF[measure]]


def _verdict(c: Comparison) -> str:
    if c.binary is None:
        return "no shared questions"
    if c.binary.delta.low == c.binary.delta.high == 0:
        return "no change"
    if not is_real(c.binary):
        return "within the noise"
    return "real gain" if c.binary.delta.estimate > 0 else "real loss"


def summary_rows(d: RevisionDiff) -> tuple[list[str], list[list[str]]]:
    """The header and one row per compared config (shared by the text and Markdown forms)."""
    family = max((c.binary.family for c in d.comparisons if c.binary), default=0)
    conf = f"{d.settings.confidence:.0%}"
    header = ["config", "n", "fixed", "broken", f"Δ {_label(d.measure)}", f"{conf} interval", "p (sign)",
              f"Holm p (of {family})", "Δ MRR@10", f"{conf} interval", "p (sign-flip)",
              f"Holm p (of {family})", "could detect", "verdict"]
    rows = []
    for c in d.comparisons:
        b, r = c.binary, c.rr
        if b is None or r is None:
            rows.append([c.new, "0", *[""] * (len(header) - 3), _verdict(c)])
            continue
        rows.append([c.new, str(c.n), str(b.counts.fixed), str(b.counts.broken), signed(b.delta.estimate),
                     interval(interval_dict(b.delta, CHANGE_INTERVAL), signed), p_value(b.p_sign),
                     p_value(b.p_holm), signed(r.delta.estimate),
                     interval(interval_dict(r.delta, CHANGE_INTERVAL), signed), p_value(r.p_sign_flip),
                     p_value(r.p_holm), detectable(b), _verdict(c)])
    return header, rows


def question_lines(d: RevisionDiff, *, code: str = "") -> list[str]:
    """Per config with any change: per slice, the ids broken and fixed. Then the questions
    answerable on one side only: once for all configs when every config has the same ones,
    else per config."""
    lines = []
    for c in d.comparisons:
        changed = [s for s in c.by_slice.values() if s.fixed_ids or s.broken_ids]
        if not changed:
            continue
        lines.append(f"{code}{c.new}{code}: fixed {len(c.fixed_ids)}, broken {len(c.broken_ids)}")
        for s in changed:
            small = " (too small to decide)" if s.too_small else ""
            parts = [f"broken {', '.join(s.broken_ids)}" if s.broken_ids else "",
                     f"fixed {', '.join(s.fixed_ids)}" if s.fixed_ids else ""]
            lines.append(f"  - {s.slice}{small}: " + "; ".join(p for p in parts if p))
    return lines


def one_side_lines(d: RevisionDiff, *, code: str = "") -> list[str]:
    """Questions answerable on one side only (never paired), named."""
    sides = {(c.only_base, c.only_new) for c in d.comparisons}
    def describe(only_base: tuple[str, ...], only_new: tuple[str, ...]) -> list[str]:
        out = []
        if only_base:
            out.append(f"only at {d.rev} ({len(only_base)}): {', '.join(only_base)}")
        if only_new:
            out.append(f"only {_on_new_side(d)} ({len(only_new)}): {', '.join(only_new)}")
        return out
    if len(sides) == 1:
        only_base, only_new = next(iter(sides))
        return [f"Questions {text}; not paired." for text in describe(only_base, only_new)]
    return [f"{code}{c.new}{code}: questions {text}; not paired." for c in d.comparisons
            for text in describe(c.only_base, c.only_new)]


def side_lines(d: RevisionDiff) -> list[str]:
    out = []
    if d.only_rev:
        out.append(f"Configs only at {d.rev}: {', '.join(d.only_rev)}.")
    if d.only_workspace:
        out.append(f"Configs only {_on_new_side(d)}: {', '.join(d.only_workspace)}.")
    if d.unavailable:
        out.append(f"No scored rows on either side: {', '.join(d.unavailable)}.")
    return out


def _on_new_side(d: RevisionDiff) -> str:
    return "in the workspace" if d.new_commit is None else f"at {d.new}"


def title(d: RevisionDiff) -> str:
    s = d.settings
    unit = "source documents" if s.cluster else "questions"
    new = "Workspace" if d.new_commit is None else f"{d.new} ({d.new_commit[:10]})"
    return (f"{new} against {d.rev} ({d.commit[:10]}), paired by question id: {_label(d.measure)} "
            f"({d.measure}) and MRR@10; {s.method} bootstrap over {unit}, {s.resamples:,} resamples, seed {s.seed}. "
            "Real = interval excludes 0 and Holm p < 0.05.")


def format_text(d: RevisionDiff) -> str:
    """The terminal form: aligned columns, then the question ids."""
    header, rows = summary_rows(d)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    parts = [title(d), ""]
    parts += [line(header), *(line(r) for r in rows)] if rows else ["No config has scores on both sides."]
    questions = question_lines(d)
    if questions:
        parts += ["", "Questions fixed and broken:", *questions]
    sides = one_side_lines(d) + side_lines(d)
    if sides:
        parts += ["", *sides]
    return "\n".join(parts) + "\n"


def format_markdown(d: RevisionDiff) -> str:
    """The pull-request form: a Markdown table, then the question ids as a list."""
    header, rows = summary_rows(d)
    against = f"`{d.rev}`" if d.new_commit is None else f"`{d.rev}`, {d.new} against it"
    parts = [f"### Retrieval against {against}", "", title(d), ""]
    parts.append(table(header, [[f"`{r[0]}`", *r[1:]] for r in rows]) if rows else
                 "No config has scores on both sides.")
    questions = question_lines(d, code="`")
    if questions:
        parts += ["", "**Questions fixed and broken**", "", *(q if q.startswith("  ") else f"- {q}" for q in questions)]
    sides = one_side_lines(d, code="`") + side_lines(d)
    if sides:
        parts += ["", *(f"- {line}" for line in sides)]
    return "\n".join(parts) + "\n"
