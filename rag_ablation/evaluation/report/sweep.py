"""The sweep summary written out: ``metrics/sweep.json``, ``metrics/sweep.md`` and the cost plot.

The numbers are :class:`rag_ablation.evaluation.statistics.sweep.SweepSummary`'s; this module only
orders, rounds and words them. The JSON is a DVC metrics file (``dvc exp show`` and ``dvc metrics
diff`` read it): per-candidate entries are keyed by candidate name (dicts, which DVC flattens into
columns; lists it does not), keys sorted, values rounded to four decimals, no timestamps.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_ablation.evaluation.report.formatting import interval, num, p_value, share, signed, table
from rag_ablation.evaluation.report.plot_data import measure_label, test_name
from rag_ablation.evaluation.statistics.comparison import is_binary, rounded, rounded_p
from rag_ablation.evaluation.statistics.inference import CHANGE_INTERVAL, METRICS_INTERVAL, Interval, interval_dict
from rag_ablation.evaluation.statistics.sweep import COST_FLOOR_MS, COST_TOLERANCE, SweepSummary, letters, procedure
from rag_ablation.support.latency_rule import WARM_RULE


def order(s: SweepSummary) -> list[int]:
    """Candidates best first: by mean, then by name."""
    return sorted(range(len(s.names)), key=lambda k: (-s.means[k].estimate, s.names[k]))


def letter_of(s: SweepSummary) -> dict[int, str]:
    """Each candidate's letter, given in the order of :func:`order` (a = the best)."""
    return dict(zip(order(s), letters(len(s.names))))


def _iv(x: Interval, keys: Mapping[str, str] = METRICS_INTERVAL) -> dict[str, Any]:
    return interval_dict(x, keys, number=rounded)


def _optional(x: float | None) -> float | None:
    return None if x is None else rounded(x)


def summary_json(s: SweepSummary, sides: Mapping[str, Mapping[str, Any]] | None = None, *,
                 dataset: str | None = None) -> dict[str, Any]:
    """The metrics file's content (module docstring). ``sides`` maps a side label to the params
    that set it apart from the other sides; ``dataset`` names the data set the sides ran on (the
    report page shows the sweep only on that data set; None: not known)."""
    mark = letter_of(s)
    ranking = {}
    for k, name in enumerate(s.names):
        ranking[name] = {
            **_iv(s.means[k]), "letter": mark[k], "rank": s.rank[k], "rank_low": s.rank_low[k],
            "rank_high": s.rank_high[k], "in_tie_set": k in s.tie_set, "beats": _letters(mark, s.beats[k]),
            "beaten_by": _letters(mark, beaten_by(s, k)),
            "change": _iv(s.change[k], CHANGE_INTERVAL), _p_key(s): rounded_p(s.p[k]), "aliases": list(s.aliases[k]),
            "win_rate": _optional(s.win_rate[k]), "p95_ms": s.p95_ms[k], "pareto": s.pareto[k],
            "answer_s": s.answer_s[k],
        }
    w = s.winner
    winner: dict[str, Any] = {"name": s.names[w], **_iv(s.means[w]),
                              "exact_ties": [s.names[k] for k in s.exact_ties]}
    c = s.confirmation
    if c is not None:
        winner["test"] = _iv(c.test)
        winner["baseline_test"] = _iv(c.baseline_test)
        winner["test_change"] = {**_iv(c.change, CHANGE_INTERVAL), _p_key(s): rounded_p(c.p),
                                 "win_rate": _optional(c.win_rate)}
        winner["winners_curse"] = _iv(c.curse)
    unit = "source documents" if s.settings.cluster else "questions"
    return {
        "dataset": dataset, "measure": s.measure, "chosen_on": s.chosen_on, "questions": s.n,
        "test_questions": None if c is None else c.n, "candidates": len(s.names), "baseline": s.names[s.baseline],
        "procedure": procedure(s.measure), "margin": None if is_binary(s.measure) else rounded(s.settings.margin),
        "level": rounded(s.alpha), "resamples": s.settings.resamples,
        "seed": s.settings.seed, "resampled": unit, "winner": winner,
        "tie_set": [s.names[k] for k in order(s) if k in s.tie_set], "tie_set_size": len(s.tie_set),
        "ranking": ranking, "unpaired_questions": list(s.unpaired), "unassigned_questions": list(s.unassigned),
        "sides": {label: dict(params) for label, params in sorted((sides or {}).items())},
    }


def _p_key(s: SweepSummary) -> str:
    """``p_sign`` (0/1 measure) or ``p_sign_flip`` (continuous), as ``metrics/stats.json`` spells them."""
    return "p_sign" if is_binary(s.measure) else "p_sign_flip"


def alias_lines(s: SweepSummary) -> list[str]:
    """One line per candidate that stands for copies: identical per-question values, counted once."""
    return [f"`{s.names[k]}` also stands for {', '.join(f'`{a}`' for a in s.aliases[k])} (identical per-question "
            f"{s.measure} on every paired question: one candidate, counted once in the family of pairs)."
            for k in range(len(s.names)) if s.aliases[k]]


def cost_rows(s: SweepSummary) -> list[dict[str, Any]]:
    """The quality-against-cost plot's rows: candidates with a latency, fastest first."""
    rows = [{"candidate": s.names[k], "value": rounded(s.means[k].estimate), "p95_ms": s.p95_ms[k],
             "front": "Pareto front" if s.pareto[k] else "dominated"}
            for k in range(len(s.names)) if s.p95_ms[k] is not None]
    return sorted(rows, key=lambda r: (r["p95_ms"], r["candidate"]))


def _letters(mark: Mapping[int, str], which: Sequence[int]) -> str:
    return "".join(sorted((mark[j] for j in which), key=lambda x: (len(x), x)))


def beaten_by(s: SweepSummary, k: int) -> list[int]:
    """The candidates that beat candidate ``k``."""
    return [j for j in range(len(s.names)) if k in s.beats[j]]


def _share(x: float | None) -> str:
    return "" if x is None else share(x)


def _disagree(s: SweepSummary) -> str:
    """How the win rate's questions are described: disagree on (0/1), or differ by more than the margin."""
    return "disagree on" if is_binary(s.measure) else f"differ on by more than {s.settings.margin:g}"


def _win_rate_words(s: SweepSummary) -> str:
    if is_binary(s.measure):
        return "Win rate: share of the questions where it and the baseline disagree that it gets right."
    return (f"Win rate: of the questions where it and the baseline differ by more than {s.settings.margin:g} "
            "(`stats.margin`), the share where it is the better one.")


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.1f}"


def headline(s: SweepSummary) -> list[str]:
    """The sentences a reader needs: the winner, its tie set, and (with a split) its test score."""
    label = measure_label(s.measure)
    conf = f"{s.settings.confidence:.0%}"
    w = s.winner
    where = f"the {s.n} dev questions" if s.chosen_on == "dev" else f"all {s.n} questions"
    lines = [f"**Winner** (chosen on {where}): `{s.names[w]}`, {label} {num(s.means[w].estimate)} "
             f"({interval(interval_dict(s.means[w], METRICS_INTERVAL))})."]
    if s.exact_ties:
        lines.append(f"Exactly tied with it on these questions: {', '.join(f'`{s.names[k]}`' for k in s.exact_ties)}.")
    tied = [k for k in order(s) if k in s.tie_set]
    pairs = len(s.names) * (len(s.names) - 1) // 2
    lines.append(f"**Tied with the best** (no candidate beats them; family of {len(s.names)} candidates, "
                 f"{pairs} pairs, Holm, {conf}): {len(tied)} candidate(s): "
                 f"{', '.join(f'`{s.names[k]}`' for k in tied)}.")
    c = s.confirmation
    if c is None:
        lines.append("No held-out questions: the winner was chosen on the questions it is reported on, so its score "
                     "is biased upward by the choice. Set `split` in params.yaml (`dvc repro split`) to confirm it.")
        return lines
    change = interval_dict(c.change, CHANGE_INTERVAL)
    lines.append(f"**On the {c.n} held-out test questions**: {label} {num(c.test.estimate)} "
                 f"({interval(interval_dict(c.test, METRICS_INTERVAL))}); against the baseline `{s.names[s.baseline]}` "
                 f"({num(c.baseline_test.estimate)} there): {signed(c.change.estimate)} ({interval(change, signed)}), "
                 f"{test_name(s.measure)} test p {p_value(c.p)}, wins {_share(c.win_rate) or 'n/a'} of the questions "
                 f"they {_disagree(s)}.")
    lines.append(f"**Winner's curse** (dev minus test): {signed(c.curse.estimate)} "
                 f"({interval(interval_dict(c.curse, METRICS_INTERVAL), signed)}): how much its dev score overstates "
                 "it on questions that did not choose it.")
    return lines


def ranking_table(s: SweepSummary) -> str:
    """The ranx-style table, best first: each value followed by the letters it beats."""
    label = measure_label(s.measure)
    conf = f"{s.settings.confidence:.0%}"
    mark = letter_of(s)
    header = ["", "candidate", f"{label} ({conf} interval) beats", f"rank ({conf})", "tie set", "beaten by",
              f"Δ vs `{s.names[s.baseline]}` ({conf})", "win rate", f"p ({test_name(s.measure)})", "P95 ms/query",
              "Pareto"]
    rows = []
    for k in order(s):
        beaten = _letters(mark, s.beats[k])
        value = f"{num(s.means[k].estimate)} ({interval(interval_dict(s.means[k], METRICS_INTERVAL))})"
        base = k == s.baseline
        rows.append([mark[k], f"`{s.names[k]}`", value + (f" **{beaten}**" if beaten else ""),
                     f"{s.rank[k]} ({s.rank_low[k]}–{s.rank_high[k]})", "yes" if k in s.tie_set else "",
                     _letters(mark, beaten_by(s, k)),
                     "baseline" if base else f"{signed(s.change[k].estimate)} "
                                             f"({interval(interval_dict(s.change[k], CHANGE_INTERVAL), signed)})",
                     "" if base else _share(s.win_rate[k]) or "n/a", "" if base else p_value(s.p[k]),
                     _ms(s.p95_ms[k]), "front" if s.pareto[k] else ""])
    if any(x is not None for x in s.answer_s):
        header.append("s/answer (P50)")
        for row, k in zip(rows, order(s)):
            row.append("" if s.answer_s[k] is None else f"{s.answer_s[k]:.2f}")
    return table(header, rows)


def format_markdown(s: SweepSummary, sides: Mapping[str, Mapping[str, Any]] | None = None,
                    commands: Sequence[str] = (), notes: Sequence[str] = ()) -> str:
    """The whole report: headline, ``notes`` (sentences on what was compared: the data set, the
    baseline's choice), ranking table with its legend, cost table, method."""
    label = measure_label(s.measure)
    unit = "source documents" if s.settings.cluster else "questions"
    parts = [f"# Sweep: {len(s.names)} candidates on {label} ({s.measure})", "", *headline(s), ""]
    if notes:
        parts += [" ".join(notes), ""]
    parts += ["## Candidates, best first", "", f"Measure: {label} (`{s.measure}`).", "", ranking_table(s), ""]
    test = ("more of their disagreeing questions right, exact sign test" if is_binary(s.measure) else
            "a higher mean, paired sign-flip test of the per-question differences")
    parts.append(f"A letter after a value names a candidate it beats: {test}, Holm-adjusted over all "
                 f"{len(s.names) * (len(s.names) - 1) // 2} pairs, p < "
                 f"{s.alpha:.2g}. Rank (interval): 1 is best, equal means share a rank; the interval holds the "
                 f"middle {s.settings.confidence:.0%} of each candidate's ranks over {s.settings.resamples:,} "
                 f"draws of the {unit}, the same draw for every candidate. {_win_rate_words(s)}")
    aliases = alias_lines(s)
    if aliases:
        parts += ["", *aliases]
    if sides:
        parts += ["", "Sides:", ""]
        parts += [f"- `{label_}`: " + (", ".join(f"`{k}={v}`" for k, v in sorted(params.items())) or "no param differs")
                  for label_, params in sorted(sides.items())]
    front = [k for k in range(len(s.names)) if s.pareto[k]]
    parts += ["", "## Quality against cost", ""]
    if any(x is not None for x in s.p95_ms):
        parts.append(f"{label} against the P95 retrieval latency per query (`metrics/latency/CONFIG.json`, "
                     f"`total.p95_ms`, measured on the machine and run that scored it: {WARM_RULE}). On the Pareto "
                     f"front (nothing is both as good and as fast; latencies within {COST_TOLERANCE:.0%} or "
                     f"{COST_FLOOR_MS:g} ms of each other count as the same cost): "
                     f"{', '.join(f'`{s.names[k]}`' for k in front) or 'none'}.")
    else:
        parts.append("No candidate has a latency timed with every config alike (`\"timing\": \"warm\"` in "
                     "`metrics/latency/CONFIG.json`; rerun the experiments): the cost side is not known.")
    if any(x is not None for x in s.answer_s):
        parts.append("Where a candidate generated answers (`generation.configs`), the table adds its median seconds "
                     "per answer (`metrics/latency/generate_CONFIG.json`, `answer.p50_ms`; a prompt-cache hit "
                     "keeps the time of the call that filled it).")
    parts += ["", "## Method", ""]
    parts.append(f"Tie set: {procedure(s.measure)}, level {s.alpha:.2g}. Intervals: percentile intervals from "
                 f"{s.settings.resamples:,} "
                 f"bootstrap draws of the {unit} (seed {s.settings.seed}). Only questions answerable in every "
                 "candidate are used.")
    if s.unpaired:
        parts.append(f"Questions answerable in some candidates only ({len(s.unpaired)}, not used): "
                     f"{', '.join(s.unpaired)}.")
    if s.unassigned:
        parts.append(f"Questions the split file does not assign ({len(s.unassigned)}, not used): "
                     f"{', '.join(s.unassigned)}.")
    if commands:
        parts += ["", "Made by:", "", "```", *commands, "```"]
    return "\n".join(parts) + "\n"
