"""The text of ``rag-ablation diff``: a :class:`RevisionDiff` as a terminal table or as Markdown.

The numbers are :func:`rag_ablation.evaluation.statistics.revision_diff.diff_rows`'; this module
only words them. One row per compared config (:func:`summary_rows`): its paired questions, fixed
and broken counts of a 0/1 measure (better / worse by more than ``stats.margin`` for a continuous
one, as nDCG@10), the change with its interval, the measure's paired test (sign test, or sign-flip
test for a continuous measure) and its Holm p (family printed), RR@10's change with its sign-flip
test, the smallest detectable change and the verdict (``comparison.verdict``: real gain, real
loss, within the noise, no change; ``no shared questions`` without a pair). Below it, per config
and slice, the ids of the questions fixed and broken (:func:`question_lines`), then what is on
one side only. :func:`format_text`
aligns the columns for a terminal; :func:`format_markdown` writes a pull-request comment.
"""
from __future__ import annotations

from collections.abc import Sequence

from rag_ablation.evaluation.report.formatting import detectable, interval, p_value, signed, table
from rag_ablation.evaluation.report.plot_data import count_words, measure_label, test_name
from rag_ablation.evaluation.statistics.comparison import ANSWER_MEASURES, Comparison, verdict
from rag_ablation.evaluation.statistics.inference import CHANGE_INTERVAL, interval_dict
from rag_ablation.evaluation.statistics.revision_diff import RevisionDiff


def _verdict(c: Comparison) -> str:
    """``comparison.verdict`` of the measure's change (unrounded), or ``no shared questions``."""
    b = c.binary
    if b is None:
        return "no shared questions"
    return verdict(b.delta.estimate, b.delta.low, b.delta.high, b.p_holm)


def summary_rows(d: RevisionDiff) -> tuple[list[str], list[list[str]]]:
    """The header and one row per compared config (shared by the text and Markdown forms)."""
    family = max((c.binary.family for c in d.comparisons if c.binary), default=0)
    conf = f"{d.settings.confidence:.0%}"
    with_rr = any(c.rr is not None for c in d.comparisons)  # none for an answer measure
    rr_header = ["Δ MRR@10", f"{conf} interval", "p (sign-flip)", f"Holm p (of {family})"] if with_rr else []
    header = ["config", "n", *count_words(d.measure, d.settings.margin), f"Δ {measure_label(d.measure)}",
              f"{conf} interval", f"p ({test_name(d.measure)})",
              f"Holm p (of {family})", *rr_header, "could detect", "verdict"]
    rows = []
    for c in d.comparisons:
        b, r = c.binary, c.rr
        if b is None or (with_rr and r is None):
            rows.append([c.new, "0", *[""] * (len(header) - 3), _verdict(c)])
            continue
        rr_cells = [signed(r.delta.estimate), interval(interval_dict(r.delta, CHANGE_INTERVAL), signed),
                    p_value(r.p_sign_flip), p_value(r.p_holm)] if r is not None else []
        rows.append([c.new, str(c.n), str(b.counts.fixed), str(b.counts.broken), signed(b.delta.estimate),
                     interval(interval_dict(b.delta, CHANGE_INTERVAL), signed), p_value(b.p),
                     p_value(b.p_holm), *rr_cells, detectable(b), _verdict(c)])
    return header, rows


def question_lines(d: RevisionDiff, *, code: str = "") -> list[str]:
    """Per config with any change: per slice, the ids broken and fixed. Then the questions
    answerable on one side only: once for all configs when every config has the same ones,
    else per config."""
    lines = []
    fixed, broken = count_words(d.measure, d.settings.margin)
    for c in d.comparisons:
        changed = [s for s in c.by_slice.values() if s.fixed_ids or s.broken_ids]
        if not changed:
            continue
        lines.append(f"{code}{c.new}{code}: {fixed} {len(c.fixed_ids)}, {broken} {len(c.broken_ids)}")
        for s in changed:
            small = " (too small to decide)" if s.too_small else ""
            parts = [f"{broken} {', '.join(s.broken_ids)}" if s.broken_ids else "",
                     f"{fixed} {', '.join(s.fixed_ids)}" if s.fixed_ids else ""]
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
    also = "" if d.measure in ANSWER_MEASURES else " and MRR@10"
    return (f"{new} against {d.rev} ({d.commit[:10]}), paired by question id: {measure_label(d.measure)} "
            f"({d.measure}){also}; {s.method} bootstrap over {unit}, {s.resamples:,} resamples, seed {s.seed}. "
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
        parts += ["", f"Questions {' and '.join(count_words(d.measure, d.settings.margin))}:", *questions]
    sides = one_side_lines(d) + side_lines(d)
    if sides:
        parts += ["", *sides]
    return "\n".join(parts) + "\n"


def format_markdown(d: RevisionDiff) -> str:
    """The pull-request form: a Markdown table, then the question ids as a list."""
    header, rows = summary_rows(d)
    against = f"`{d.rev}`" if d.new_commit is None else f"`{d.rev}`, {d.new} against it"
    kind = "Answers" if d.measure in ANSWER_MEASURES else "Retrieval"
    parts = [f"### {kind} against {against}", "", title(d), ""]
    parts.append(table(header, [[f"`{r[0]}`", *r[1:]] for r in rows]) if rows else
                 "No config has scores on both sides.")
    questions = question_lines(d, code="`")
    if questions:
        words = " and ".join(count_words(d.measure, d.settings.margin))
        parts += ["", f"**Questions {words}**", "", *(q if q.startswith("  ") else f"- {q}" for q in questions)]
    sides = one_side_lines(d, code="`") + side_lines(d)
    if sides:
        parts += ["", *(f"- {line}" for line in sides)]
    return "\n".join(parts) + "\n"
