"""`rag-ablation sweep-report`: name a sweep's winner, its tie set, and its held-out score.

The candidates are every (side, config) pair: each side is a DVC experiment (``--exps NAME ...``,
or ``--all-exps`` for every experiment of the current commit, as ``dvc exp list`` shows them),
or a git revision or ``workspace`` (``--revs``); the configs are every config scored on that side
(or the ``--config`` ones). Each candidate's per-question scores are read as committed on its
side (``metrics/scores/retrieval.csv``; for an answer measure or a judge's score, the answered
configs' ``metrics/scores/answers.csv`` and ``verdicts.csv``): nothing is searched again.

What the sides ran on is read from each side, never from the workspace (unless it is a side):
its data set and ``split`` from its own params.yaml, its dev/test assignment from its own
``data/split/<dataset>.jsonl`` (the files of all sides merged; sides of different data sets, sides
that disagree on whether there is a split, or split files that give one question different
sides are refused). With a split, the winner is chosen on the dev questions and confirmed on
the test questions: its test score with interval, its paired change against the baseline
there, and the winner's curse (dev minus test). ``--no-split``, or ``split: none`` on every
side, ranks on all questions.

The baseline is named, never an accident of naming: ``--baseline CONFIG@SIDE``, else
``stats.baseline`` on the first side named (``--revs``, then ``--exps``; ``--all-exps`` takes the
experiments in the order DVC ran them, so alone it means the experiment run first). The report
says which it is and why.

Printed as Markdown and written, atomically and only after everything is computed, to
``OUT/sweep.md``, ``OUT/sweep.json`` (a metrics file ``dvc exp show`` and ``dvc metrics diff``
read) and ``OUT/plots/sweep_cost.json`` (quality against P95 latency, ``dvc plots show``);
OUT is ``metrics`` by default. Bad input (fewer than two candidates, an unknown experiment,
side, config or baseline, a side without scores, sides of different data sets, a split that
leaves dev or test empty) is one
``error:`` line and exit 2, with nothing written.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_ablation.core.config import AUTO_MEASURE, MEASURE_CHOICES, StatsConfig, load_config
from rag_ablation.core.errors import UserError
from rag_ablation.core.io import write_json, write_text
from rag_ablation.data.split import merge_splits
from rag_ablation.evaluation.report.metrics_view import latency_in, retrieval_p95_in
from rag_ablation.evaluation.report.sweep import cost_rows, format_markdown, summary_json
from rag_ablation.evaluation.statistics.comparison import ANSWER_MEASURES, rows_by_config
from rag_ablation.evaluation.statistics.revision_diff import config_order, measure_rows
from rag_ablation.evaluation.statistics.sweep import summarise
from rag_ablation.support.sides import (
    PARAMS, SPLIT_DIR, Side, SideQuestions, head_experiments, params_at, questions_of, read_side_file, resolve_side, split_at,
)

LATENCY = Path("metrics/latency")
IGNORED_PARAMS = ("stats",)
"""Params blocks left out of the side legend: they change how a sweep is read, not what it ran."""


def build_parser(prog: str = "rag-ablation sweep-report") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exps", nargs="+", default=[], metavar="NAME", help="DVC experiments, as `dvc exp show` names them")
    ap.add_argument("--all-exps", action="store_true", help="every DVC experiment of the current commit")
    ap.add_argument("--revs", nargs="+", default=[], metavar="REV",
                    help="git revisions (branch, tag, commit) or `workspace`")
    ap.add_argument("--config", action="append", default=[], metavar="NAME",
                    help="only this config on every side (repeatable; default: every scored config)")
    ap.add_argument("--measure", choices=(*MEASURE_CHOICES, *ANSWER_MEASURES), default=None,
                    help="the per-question measure to rank on: a 0/1 hit_at_k (sign tests) or a continuous "
                    "rr_at_10, ndcg_at_10, recall_at_100 (sign-flip tests); auto: ndcg_at_10 on graded qrels, "
                    "else hit_at_5 (default: stats.measure of params.yaml); or, over the answered configs, "
                    "contains_reference, token_f1 or a judge's score: llm_score, combined_score")
    ap.add_argument("--baseline", default=None, metavar="CONFIG@SIDE",
                    help="the candidate changes are measured against (default: stats.baseline on the first "
                    "side named; with --all-exps alone, on the experiment DVC ran first)")
    ap.add_argument("--no-split", action="store_true",
                    help="rank on all questions even when the sides' params.yaml have a split")
    ap.add_argument("--out", type=Path, default=Path("metrics"), help="folder for sweep.md, sweep.json and "
                    "plots/sweep_cost.json (default: metrics)")
    return ap


def sides_of(args: argparse.Namespace) -> list[Side]:
    """The sides named on the command line, each once, in the order given (experiments of
    ``--all-exps`` by name)."""
    sides = [resolve_side(name) for name in args.revs] + [resolve_side(name) for name in args.exps]
    if args.all_exps:
        found = head_experiments()
        if not found:
            raise UserError("--all-exps: the current commit has no DVC experiments (`dvc exp list`); run some with "
                            "`dvc exp run --queue -S ...` and `dvc queue start`, or name them with --exps")
        sides += found
    seen: dict[str, Side] = {}
    for side in sides:
        seen.setdefault(side.name, side)
    return list(seen.values())


def latency_ms(side: Side, name: str, step: str, percentile: str) -> float | None:
    """``STEP.PERCENTILE`` (milliseconds) of ``metrics/latency/NAME.json`` on that side; None when
    the side has no such file or value (an unreadable file counts as none: latencies are leaf
    records, never inputs)."""
    text = read_side_file(side, LATENCY / f"{name}.json")
    return None if text is None else latency_in(text, step, percentile)


def p95_of(side: Side, config: str) -> float | None:
    """``total.p95_ms`` of the config's retrieval latency file on that side, when it was timed by
    the rule every config shares (``metrics_view.retrieval_p95_in``, as the report page reads
    it); None otherwise."""
    text = read_side_file(side, LATENCY / f"{config}.json")
    return None if text is None else retrieval_p95_in(text)


def answer_seconds_of(side: Side, config: str) -> float | None:
    """``answer.p50_ms`` / 1000 of the config's generation latency file on that side; None when
    the config generated no answers there."""
    ms = latency_ms(side, f"generate_{config}", "answer", "p50_ms")
    return None if ms is None else ms / 1000


def flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested params as ``a.b.c -> value``."""
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: obj}


def side_params(sides: Sequence[Side]) -> dict[str, dict[str, Any]]:
    """Per side, the params whose values differ between the sides (a key missing on a side
    shows as None there; the ``stats`` block is left out)."""
    values = {}
    for side in sides:
        values[side.name] = {k: v for k, v in flat(params_at(side)).items() if k.split(".")[0] not in IGNORED_PARAMS}
    keys = set().union(*(set(v) for v in values.values()))
    varying = sorted(k for k in keys if len({json.dumps(v.get(k), sort_keys=True) for v in values.values()}) > 1)
    return {name: {k: v.get(k) for k in varying} for name, v in values.items()}


def candidates_of(sides: Sequence[Side], selected: Sequence[str], order: Sequence[str],
                  measure: str = AUTO_MEASURE) -> tuple[dict, dict]:
    """``CONFIG@SIDE -> rows`` (the rows holding ``measure``: ``revision_diff.measure_rows``) for
    every side and config, and ``CONFIG@SIDE -> (side, config)``."""
    candidates: dict[str, list] = {}
    where: dict[str, tuple[Side, str]] = {}
    for side in sides:
        by_config = rows_by_config(measure_rows(side, measure), where=f"scores at {side.label}")
        missing = [c for c in selected if c not in by_config]
        if missing:
            raise UserError(f"config(s) {', '.join(map(repr, missing))} not scored at {side.label}; scored configs "
                            f"there: {', '.join(config_order(by_config, order))}")
        for config in (selected or config_order(by_config, order)):
            name = f"{config}@{side.name}"
            candidates[name] = by_config[config]
            where[name] = (side, config)
    return candidates, where


def labels(sides: Sequence[Side]) -> str:
    """The sides as reports name them, comma-separated."""
    return ", ".join(side.label for side in sides)


def dataset_of(sides: Sequence[Side]) -> tuple[str, dict[str, SideQuestions]]:
    """The one data set every side ran on, each side's as its own params.yaml sets it (never
    the workspace's, unless the workspace is a side), and each side's ``SideQuestions``. Sides of
    different data sets are one UserError naming each data set with its sides."""
    found = {side.name: questions_of(side) for side in sides}
    by_dataset: dict[str, list[Side]] = {}
    for side in sides:
        by_dataset.setdefault(found[side.name].dataset, []).append(side)
    if len(by_dataset) > 1:
        named = "; ".join(f"{dataset} at {labels(group)}" for dataset, group in by_dataset.items())
        raise UserError(f"the sides ran on different data sets: {named}; a sweep ranks the questions of one data "
                        "set (each side's `dataset` in its own params.yaml): name sides of one data set")
    return next(iter(by_dataset)), found


def split_of(args: argparse.Namespace, sides: Sequence[Side], found: Mapping[str, SideQuestions],
             dataset: str) -> dict[str, str] | None:
    """The dev/test assignment of the sides' data set, from each side's own split file
    (``data/split/<dataset>.jsonl`` at that side), merged (``merge_splits``: files that give
    one question different sides are refused); None with ``--no-split`` or when every side's
    params.yaml has ``split: none``. Sides that disagree on whether there is a split, and a side
    whose params set a split but which holds no split file, are UserErrors."""
    if args.no_split:
        return None
    on = [side for side in sides if found[side.name].split.enabled]
    if not on:
        return None
    off = [side for side in sides if not found[side.name].split.enabled]
    if off:
        raise UserError(f"the sides disagree on the split: a dev/test split at {labels(on)}, `split: none` at "
                        f"{labels(off)}; a sweep chooses on dev and confirms on test of one split: name sides with "
                        "the same `split` in their params.yaml, or pass --no-split to rank on all questions")
    splits = {}
    for side in sides:
        split = split_at(side, dataset)
        if split is None:
            raise UserError(f"params.yaml at {side.label} has a split but {SPLIT_DIR.as_posix()}/{dataset}.jsonl "
                            "does not exist there: run `dvc repro split` (an experiment or revision: rerun it "
                            "through the pipeline, which commits the file), or pass --no-split to rank on all "
                            "questions")
        splits[side.label] = split
    return merge_splits(splits)


def baseline_of(args: argparse.Namespace, sides: Sequence[Side], settings: StatsConfig) -> tuple[str, str]:
    """The candidate changes are measured against, and a sentence saying why it is that one:
    ``--baseline``, else ``stats.baseline`` on the first side named (``--revs`` first, then
    ``--exps``; with ``--all-exps`` alone, the experiment DVC ran first)."""
    if args.baseline:
        return args.baseline, f"Baseline `{args.baseline}`: given with `--baseline`."
    first = sides[0]
    how = ("the first side named" if args.revs or args.exps else
           "the first experiment of `--all-exps`, which are taken in the order DVC ran them")
    return (f"{settings.baseline}@{first.name}",
            f"Baseline `{settings.baseline}@{first.name}`: `stats.baseline` on {how} ({first.label}); "
            "`--baseline CONFIG@SIDE` names another.")


def command_line(args: argparse.Namespace) -> str:
    """The command that makes this report, written from the parsed arguments."""
    words = ["rag-ablation", "sweep-report"]
    if args.revs:
        words += ["--revs", *args.revs]
    if args.exps:
        words += ["--exps", *args.exps]
    if args.all_exps:
        words.append("--all-exps")
    for config in args.config:
        words += ["--config", config]
    for flag, value in (("--measure", args.measure), ("--baseline", args.baseline)):
        if value:
            words += [flag, value]
    if args.no_split:
        words.append("--no-split")
    if args.out != Path("metrics"):
        words += ["--out", args.out.as_posix()]
    return " ".join(words)


def run(args: argparse.Namespace) -> None:
    params = load_config(PARAMS) if PARAMS.is_file() else None
    settings = params.stats if params else StatsConfig()
    order = list(params.retrieval) if params else []
    sides = sides_of(args)
    if not sides:
        raise UserError("no sides: name the candidates with --exps NAME ..., --all-exps or --revs REV ...")
    measure = args.measure or settings.measure
    candidates, where = candidates_of(sides, args.config, order, measure)
    dataset, found = dataset_of(sides)
    split = split_of(args, sides, found, dataset)
    baseline, baseline_note = baseline_of(args, sides, settings)
    latency = {name: p95_of(side, config) for name, (side, config) in where.items()}
    summary = summarise(candidates, measure=measure, baseline=baseline, settings=settings,
                        split=split, p95_ms=latency,
                        answer_s={name: answer_seconds_of(side, config) for name, (side, config) in where.items()})
    legend = side_params(sides)
    source = (f"each side's own `{SPLIT_DIR.as_posix()}/{dataset}.jsonl`" if split is not None else
              "no split (`--no-split`)" if args.no_split else "no split (`split: none` on every side)")
    notes = [f"Data set `{dataset}` (each side's params.yaml); dev/test: {source}.", baseline_note]
    markdown = format_markdown(summary, legend, commands=[command_line(args)], notes=notes)
    write_json(args.out / "sweep.json", summary_json(summary, legend, dataset=dataset))
    write_json(args.out / "plots" / "sweep_cost.json", cost_rows(summary))
    write_text(args.out / "sweep.md", markdown)
    sys.stdout.write(markdown)
