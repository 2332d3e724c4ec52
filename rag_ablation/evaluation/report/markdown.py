"""The Markdown report (``metrics/report.md``), rendered from the statistics metrics file.

The report reads the numbers the ``stats`` stage wrote (``metrics/stats.json``, the dict of
:func:`rag_ablation.evaluation.statistics.stats.to_metrics`), so it can never disagree with what
``dvc metrics diff`` shows, and it adds no randomness of its own. Configs appear in params order;
a config that is not in the metrics file, or is marked unavailable, is named as unavailable.

Sections: the configs with recall@1/5/10 and MRR@10 and their intervals; recall per slice
(slices under ``stats.min_slice`` questions are marked too small to decide on); paired changes
against the baseline (fixed and broken counts, the change with its interval, the sign test,
Holm's adjustment with the family size, the smallest detectable change) and the same for MRR@10;
fixed and broken counts per slice (better / worse for a continuous measure); the subsampling
table (each config's change on all questions, gain or loss, and how often fewer questions would
not have shown it); the label audit, only when it changed some question; the judge-free answer
proxy with its n, or one line when no answered config has answers. A change is called real only
when its interval excludes 0 and its Holm-adjusted p is below 0.05
(``rag_ablation.evaluation.statistics.comparison.verdict`` on the file's rounded numbers,
through :func:`rag_ablation.evaluation.report.metrics_view.change_verdict`). The file is read
through :mod:`rag_ablation.evaluation.report.metrics_view`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_ablation.core.config import StatsConfig
from rag_ablation.evaluation.statistics.comparison import (
    GRADED_MEASURES,
    MEASURES,
    P_KEYS,
    RECALL_OF,
    RR_COLUMN,
    SIGNIFICANCE,
    TESTS,
    counts_in,
    is_binary,
)
from rag_ablation.evaluation.report.formatting import (detectable, interval, num, p_value, points, share, signed,
                                                     table)
from rag_ablation.evaluation.report.metrics_view import (answer_proxy, available, baseline_comparisons, change_of,
                                                         change_verdict, config_metrics, lexical_support,
                                                         stats_settings)
from rag_ablation.evaluation.report.plot_data import LABELS, count_words, test_name, test_text
from rag_ablation.evaluation.statistics.stats import GAIN, LOSS, NONE, change_direction, vanished_share

Metrics = Mapping[str, Any]


# --------------------------------------------------------------------------- helpers


def config_label(name: str, baseline: str) -> str:
    return f"`{name}` (baseline)" if name == baseline else f"`{name}`"


def _measure_cell(entry: Mapping[str, Any], measure: str) -> str:
    d = entry.get(measure)
    return "" if d is None else f"{num(d['value'])} ({interval(d)})"


def _slices(metrics: Metrics, configs: Sequence[str]) -> dict[str, tuple[int, bool]]:
    """Slice -> (n, too_small), from the first available config that has the slice."""
    out: dict[str, tuple[int, bool]] = {}
    for name in configs:
        for s, g in config_metrics(metrics, name).get("by_slice", {}).items():
            out.setdefault(s, (int(g["n"]), bool(g.get("too_small"))))
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------- sections


def intro(metrics: Metrics, configs: Sequence[str], settings: StatsConfig, not_run: Sequence[str] = ()) -> str:
    """The title, the baseline and the bootstrap settings; ``not_run`` (configs of params.yaml
    left out by ``run_configs``) is one line naming them, never a row each."""
    base = config_metrics(metrics, settings.baseline)
    n = base.get("n") if available(metrics, settings.baseline) else None
    unit = "source documents (cluster bootstrap)" if settings.cluster else "questions"
    lines = [
        "# Retrieval ablation: what changed, and can you believe it",
        "",
        f"Baseline: `{settings.baseline}`" + (f", {n} answerable questions." if n is not None else
                                              ", unavailable (no scored rows): no paired comparisons."),
        f"Intervals: {settings.confidence:.0%} {settings.method} bootstrap over {unit}, "
        f"{settings.resamples:,} resamples, seed {settings.seed}. Configs in params.yaml order: "
        f"{len([c for c in configs if available(metrics, c)])} of {len(configs)} available.",
    ]
    if not_run:
        lines.append(f"Not run: {', '.join(f'`{c}`' for c in not_run)} (left out by `run_configs`; "
                     "`dvc exp run -S run_configs=all` runs every config).")
    return "\n".join(lines)


def how_to_read(settings: StatsConfig) -> str:
    measure = LABELS[RECALL_OF[settings.measure]]
    return "\n".join([
        "## How to read this",
        "",
        "- Each number is a mean over questions; the interval is the range that different questions of the "
        "same kind would plausibly give. With n questions, one question moves a recall by 1/n, so the "
        "third decimal means little.",
        "- Overlapping intervals of two configs do not mean they are equal: they were run on the same "
        "questions, so compare them pairwise (the paired table), which is far less noisy.",
        f"- A change is **real** when its interval excludes 0 **and** its Holm-adjusted p-value is below "
        f"{SIGNIFICANCE} (Holm corrects for testing every config against the baseline; the family size is "
        "printed). Everything else is within the noise of this question set: not proof of no effect.",
        f"- *Could detect* is the smallest change in {measure} that this set finds 80% of the time "
        "(alpha 0.05), given how often the two configs disagree. A smaller true change will usually be missed.",
        f"- A slice with fewer than {settings.min_slice} questions is marked too small to decide on.",
    ])


def _measures_shown(metrics: Metrics, configs: Sequence[str]) -> list[str]:
    """:data:`MEASURES`, then the graded measures (nDCG@10, recall@100) any config has."""
    graded = [m for m in GRADED_MEASURES if any(m in config_metrics(metrics, c) for c in configs)]
    return [*MEASURES, *graded]


def configs_section(metrics: Metrics, configs: Sequence[str], settings: StatsConfig) -> str:
    effect = RECALL_OF[settings.measure]
    shown = _measures_shown(metrics, configs)
    header = ["config", "n", *(LABELS[m] for m in shown)]
    if settings.cluster:
        header.append(f"design effect ({LABELS[effect]})")
    rows = []
    for name in configs:
        if not available(metrics, name):
            rows.append([config_label(name, settings.baseline), "unavailable", *[""] * (len(header) - 2)])
            continue
        entry = metrics[name]
        row = [config_label(name, settings.baseline), str(entry["n"]), *(_measure_cell(entry, m) for m in shown)]
        if settings.cluster:
            de = entry.get(effect, {}).get("design_effect")
            row.append("" if de is None else f"{de:.2f}")
        rows.append(row)
    note = ("Each cell: the value and its interval." if len(shown) == len(MEASURES) else
            "Each cell: the value and its interval. Graded qrels: recall and MRR count a chunk of any document "
            "graded above 0; nDCG@10 and recall@100 are over documents (BEIR's definitions; recall@100 is empty "
            "for a config that keeps fewer than 100 chunks).")
    return "\n".join(["## Configs", "", note, "", table(header, rows)])


def slices_section(metrics: Metrics, configs: Sequence[str], settings: StatsConfig) -> str:
    measure = RECALL_OF[settings.measure]
    slices = _slices(metrics, configs)
    if not slices:
        return ""
    header = ["config", *(f"{s} (n={n}{', too small' if small else ''})" for s, (n, small) in slices.items())]
    rows = []
    for name in configs:
        if not available(metrics, name):
            rows.append([config_label(name, settings.baseline), "unavailable", *[""] * (len(slices) - 1)])
            continue
        by_slice = metrics[name].get("by_slice", {})
        rows.append([config_label(name, settings.baseline),
                     *(_measure_cell(by_slice.get(s, {}), measure) for s in slices)])
    return "\n".join([f"## {LABELS[measure]} by slice", "", table(header, rows)])


def _comparisons(metrics: Metrics, configs: Sequence[str], settings: StatsConfig) -> list[tuple[str, Metrics]]:
    return baseline_comparisons(metrics, configs, settings.baseline)


def paired_section(metrics: Metrics, configs: Sequence[str], settings: StatsConfig) -> str:
    compared = _comparisons(metrics, configs, settings)
    label = LABELS[RECALL_OF[settings.measure]]
    title = f"## Paired changes against `{settings.baseline}`"
    if not compared:
        return f"{title}\n\nNo config could be compared with the baseline."
    family = next((v[settings.measure]["family"] for _, v in compared if settings.measure in v), 0)
    test = test_name(settings.measure)
    fixed, broken = count_words(settings.measure, settings.margin)
    rows, rr_rows, notes = [], [], []
    for name, vs in compared:
        if vs.get("only_config") or vs.get("only_baseline"):
            notes.append(f"- `{name}`: {vs['only_config']} question(s) only it has and {vs['only_baseline']} only "
                         "the baseline has were left out, not paired.")
        b, r = change_of(vs, settings.measure), change_of(vs, RR_COLUMN)
        if b is None or r is None:
            rows.append([f"`{name}`", "no shared questions", *[""] * 8])
            continue
        up, down = counts_in(b)
        rows.append([f"`{name}`", str(vs["n"]), str(up), str(down), signed(b["delta"]),
                     interval(b, signed), p_value(b[P_KEYS[TESTS[settings.measure]]]), p_value(b["p_holm"]),
                     detectable(b), change_verdict(b)])
        rr_mde = points(r["mde"]) if r["mde"] > 0 else "n/a: no question differs"
        rr_rows.append([f"`{name}`", signed(r["delta"]), interval(r, signed), p_value(r["p_sign_flip"]),
                        p_value(r["p_holm"]), rr_mde, change_verdict(r)])
    header = ["config", "n", fixed, broken, f"change in {label}", f"{settings.confidence:.0%} interval",
              f"p ({test} test)", f"Holm p (family of {family})", "could detect", "verdict"]
    rr_header = ["config", "change in MRR@10", f"{settings.confidence:.0%} interval", "p (sign-flip)",
                 f"Holm p (family of {family})", "could detect", "verdict"]
    if is_binary(settings.measure):
        words = (f"*Fixed*: the baseline missed it in the top {settings.measure.rsplit('_', 1)[-1]} and the config "
                 "found it; *broken*: the reverse.")
    else:
        words = (f"*{fixed}* / *{broken}*: the config's {label} on the question is above / below the baseline's by "
                 f"more than {settings.margin:g} (`stats.margin`); the p-value is a paired sign-flip test of the "
                 f"per-question differences ({settings.resamples:,} flips, seed {settings.seed}).")
    parts = [title, "", f"Measure: {label} (`{settings.measure}`), compared with the {test_text(settings.measure)}, "
             f"Holm-adjusted. Same questions, question by question. {words}",
             "", table(header, rows)]
    if settings.measure != RR_COLUMN:
        parts += ["", table(rr_header, rr_rows)]
    if notes:
        parts += ["", *notes]
    return "\n".join(parts)


def slice_counts_section(metrics: Metrics, configs: Sequence[str], settings: StatsConfig) -> str:
    compared = _comparisons(metrics, configs, settings)
    slices = sorted({s for _, vs in compared for s in vs.get("by_slice", {})})
    if not compared or not slices:
        return ""
    header = ["config", *slices]
    rows = []
    for name, vs in compared:
        cells = []
        for s in slices:
            d = vs.get("by_slice", {}).get(s)
            if d is None:
                cells.append("")
                continue
            up, down = counts_in(d)
            cells.append(f"+{up} / -{down}" + (" (too small)" if d["too_small"] else ""))
        rows.append([f"`{name}`", *cells])
    label = LABELS[RECALL_OF[settings.measure]]
    fixed, broken = count_words(settings.measure, settings.margin)
    return "\n".join([f"### {fixed.capitalize()} / {broken} per slice ({label})", "",
                      f"`rag-ablation diff REV` names the questions; {test_name(settings.measure)}-test p-values per "
                      "slice are in `metrics/stats.json` (unadjusted).", "", table(header, rows)])


def subsample_section(metrics: Metrics, configs: Sequence[str], settings: StatsConfig) -> str:
    base = config_metrics(metrics, settings.baseline).get("subsample")
    if not base:
        return ""
    keys = sorted(base, key=lambda k: base[k]["n"])
    label = LABELS[RECALL_OF[settings.measure]]
    header = ["", *(f"{base[k]['n']} questions" + (" (all)" if k == "all" else "") for k in keys)]
    rows = [[f"`{settings.baseline}` {label}, range of 90% of draws",
             *(num(base[k]["low"]) if base[k]["low"] == base[k]["high"] else
               f"{num(base[k]['low'])} to {num(base[k]['high'])}" for k in keys)]]
    for name, vs in _comparisons(metrics, configs, settings):
        sub = metrics[name].get("subsample", {})
        direction = _subsample_direction(sub, vs, settings.measure)
        rows.append([f"`{name}`: {SUBSAMPLE_ROWS[direction]}",
                     *(share(vanished_share(sub[k]["lost_share"], sub[k]["reversed_share"], direction)) if k in sub
                       else "" for k in keys)])
    return "\n".join([
        "## How many questions does it take?", "",
        f"Draws of n questions from this set ({settings.subsample_draws:,} per size, seed {settings.seed}): the "
        f"spread of the baseline's {label}, and how often each config's change against the baseline on all "
        "questions would not have shown: a gain would have looked like no gain or a loss, a loss like no loss or "
        "a gain (and no change like a change). With all questions every share is 0%.", "",
        table(header, rows)])


SUBSAMPLE_ROWS = {GAIN: "a gain on all questions; gone or reversed", LOSS: "a loss on all questions; gone or reversed",
                  NONE: "no change on all questions; looked like a gain or a loss"}
"""The subsampling table's row of a config, by the direction of its change on all questions."""


def _subsample_direction(sub: Metrics, vs: Metrics, measure: str) -> str:
    """``stats.change_direction`` of a config's subsample entries (its ``all`` row), else of its
    paired change of ``measure`` (a file whose ``stats.subsample_sizes`` has no ``all``)."""
    full = sub.get("all")
    if full is not None:
        return change_direction(full["lost_share"], full["reversed_share"])
    change = change_of(vs, measure)
    return change_direction(delta=change["delta"] if change else 0.0)


def answers_section(metrics: Metrics, answered: Sequence[str], settings: StatsConfig) -> str:
    """The judge-free proxy per answered config; one line, not a table of "unavailable", when no
    answered config has answers to score (a retrieval-only run). The mean lexical support and its
    interval are columns only when some answered config has it."""
    if not answered:
        return ""
    if all(answer_proxy(metrics, name) is None for name in answered):
        names = ", ".join(f"`{name}`" for name in answered)
        return ("## Answers (judge-free proxy)\n\n"
                f"No answers to score: none of the answered configs ({names}) has an answer to an answerable "
                "question (a retrieval-only run, `llm.backend: none`, answers nothing; otherwise each config's "
                "`generate@NAME` output says why).")
    supported = any(lexical_support(metrics, name) is not None for name in answered)
    rows = []
    for name in answered:
        d = answer_proxy(metrics, name)
        s = lexical_support(metrics, name)
        support = ([num(s["value"]), interval(s), f"{s['n']} ({s['n_undefined']} without)"] if s is not None
                   else ["", "", ""]) if supported else []
        if d is None:
            rows.append([f"`{name}`", "unavailable", "", "", *support])
            continue
        rows.append([f"`{name}`", num(d["value"]), interval(d), str(d["n"]), *support])
    level = f"{settings.confidence:.0%}"
    header = ["config", "contains reference", f"{level} Wilson interval", "n"]
    about = [
        "Share of answers that contain the normalized reference answer, on the answerable questions that were "
        "answered. This is a proxy computed without any judge, not a graded accuracy: a correct answer in other "
        "words counts as wrong, and a long answer that quotes the reference among errors counts as right."]
    if supported:
        header += ["lexical support", f"{level} bootstrap interval", "n (without)"]
        about.append(
            "Lexical support: the mean share of an answer's content words (stop words left out, numbers kept) "
            "found in the passages its prompt showed, over the answers that have one (without: refusals, answers "
            "with no content word, answers whose passages are unknown). It counts wording taken from the passages, "
            "not support: a correct paraphrase scores low and an answer copied from a wrong passage scores high; "
            "on its own it has no threshold and no supported / unsupported verdict: how well it ranks hand grades "
            "of support, and the threshold chosen on them, are in the Support (groundedness) section.")
    return "\n".join(["## Answers (judge-free proxy)", "", " ".join(about), "", table(header, rows)])


def audit_section(metrics: Metrics, configs: Sequence[str], settings: StatsConfig) -> str:
    """Original against audited labels, per config: only when the stats carry an audit that
    changed some question (an empty audit, or graded qrels, which no audit changes, would give a
    table of equal columns)."""
    audited = [n for n in configs if available(metrics, n) and "audited" in metrics[n]]
    if not any(metrics[n]["audited"].get("changed") or metrics[n]["audited"].get("newly_found") for n in audited):
        return ""
    found = sum(metrics[n]["audited"]["newly_found"] for n in audited)
    recall = RECALL_OF[settings.measure]
    header = ["config", f"{LABELS[recall]} original", f"{LABELS[recall]} audited", "MRR@10 original", "MRR@10 audited",
              "questions changed", f"newly found at {LABELS[recall]}"]
    rows = [[config_label(n, settings.baseline), _measure_cell(metrics[n], recall),
             _measure_cell(metrics[n]["audited"], recall), _measure_cell(metrics[n], "mrr_at_10"),
             _measure_cell(metrics[n]["audited"], "mrr_at_10"), str(metrics[n]["audited"]["changed"]),
             str(metrics[n]["audited"]["newly_found"])] for n in audited]
    return "\n".join(["## Label audit: before and after", "",
                      "The data set's label audit (its audit.jsonl; the handbook's is data/labels/audit.jsonl) "
                      "adds passages that were read and found to answer a "
                      "question its span did not cover. The stored rankings are re-scored with them; nothing is "
                      f"searched again. Across configs, {found} miss(es) turn out to be hits.", "", table(header, rows)])


def render(metrics: Metrics, *, configs: Sequence[str], answered: Sequence[str], settings: StatsConfig,
           not_run: Sequence[str] = ()) -> str:
    """The whole report as Markdown text (module docstring), ending with a newline. ``configs``
    are the configs that ran (``Params.searched``), ``not_run`` the others, named in one line.
    ``settings.measure`` ``auto`` is read as the stage used it (``metrics_view.stats_settings``)."""
    settings = stats_settings(settings, metrics, configs)
    sections = [intro(metrics, configs, settings, not_run), how_to_read(settings), configs_section(metrics, configs, settings),
                slices_section(metrics, configs, settings), paired_section(metrics, configs, settings),
                slice_counts_section(metrics, configs, settings), subsample_section(metrics, configs, settings),
                audit_section(metrics, configs, settings), answers_section(metrics, answered, settings)]
    return "\n\n".join(s for s in sections if s) + "\n"
