"""`rag-ablation sweep-report`: name a sweep's winner, its tie set, and its held-out score.

The candidates are every (side, config) pair: each side is a DVC experiment (``--exps NAME ...``,
or ``--all-exps`` for every experiment of the current commit, as ``dvc exp list`` shows them),
or a git revision or ``workspace`` (``--revs``); the configs are every config scored on that side
(or the ``--config`` ones). Each candidate's per-question scores are read as committed on its
side (``metrics/scores/retrieval.csv``): nothing is searched again.

With the dev/test split of params.yaml (``split``; the assignment file the ``split`` stage keeps
in ``data/split/``), the winner is chosen on the dev questions and confirmed on the test
questions: its test score with interval, its paired change against the baseline there, and the
winner's curse (dev minus test). ``--no-split``, or ``split: none``, ranks on all questions.

Printed as Markdown and written, atomically and only after everything is computed, to
``OUT/sweep.md``, ``OUT/sweep.json`` (a metrics file ``dvc exp show`` and ``dvc metrics diff``
read) and ``OUT/plots/sweep_cost.json`` (quality against P95 latency, ``dvc plots show``);
OUT is ``metrics`` by default. Bad input (fewer than two candidates, an unknown experiment,
side, config or baseline, a side without scores, a split that leaves dev or test empty) is one
``error:`` line and exit 2, with nothing written.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from rag_ablation.core.config import MEASURE_CHOICES, Params, StatsConfig, load_config
from rag_ablation.core.errors import UserError
from rag_ablation.core.io import write_json, write_text
from rag_ablation.evaluation.report.metrics_view import latency_in
from rag_ablation.evaluation.report.sweep import cost_rows, format_markdown, summary_json
from rag_ablation.evaluation.statistics.comparison import rows_by_config
from rag_ablation.evaluation.statistics.revision_diff import config_order, scores_of
from rag_ablation.evaluation.statistics.sweep import summarise
from rag_ablation.support.git import run_git
from rag_ablation.support.sides import Side, head_experiments, resolve_side

PARAMS = Path("params.yaml")
LATENCY = Path("metrics/latency")
SPLIT_DIR = Path("data/split")
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
    ap.add_argument("--measure", choices=MEASURE_CHOICES, default=None,
                    help="the per-question measure to rank on: a 0/1 hit_at_k (sign tests) or a continuous "
                    "rr_at_10, ndcg_at_10, recall_at_100 (sign-flip tests); auto: ndcg_at_10 on graded qrels, "
                    "else hit_at_5 (default: stats.measure of params.yaml)")
    ap.add_argument("--baseline", default=None, metavar="CONFIG@SIDE",
                    help="the candidate changes are measured against (default: stats.baseline on the first side)")
    ap.add_argument("--no-split", action="store_true", help="rank on all questions even when params.yaml has a split")
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


def read_side_file(side: Side, path: Path) -> str | None:
    """A file's text on one side (the workspace's file, or as committed); None if it has none."""
    if side.commit is None:
        return path.read_text(encoding="utf-8") if path.is_file() else None
    res = run_git(["show", f"{side.commit}:./{path.as_posix()}"])
    return res.stdout if res.returncode == 0 else None


def latency_ms(side: Side, name: str, step: str, percentile: str) -> float | None:
    """``STEP.PERCENTILE`` (milliseconds) of ``metrics/latency/NAME.json`` on that side; None when
    the side has no such file or value (an unreadable file counts as none: latencies are leaf
    records, never inputs)."""
    text = read_side_file(side, LATENCY / f"{name}.json")
    return None if text is None else latency_in(text, step, percentile)


def p95_of(side: Side, config: str) -> float | None:
    """``total.p95_ms`` of the config's retrieval latency file on that side."""
    return latency_ms(side, config, "total", "p95_ms")


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
        text = read_side_file(side, PARAMS)
        params = yaml.safe_load(text) if text else {}
        values[side.name] = {k: v for k, v in flat(params or {}).items() if k.split(".")[0] not in IGNORED_PARAMS}
    keys = set().union(*(set(v) for v in values.values()))
    varying = sorted(k for k in keys if len({json.dumps(v.get(k), sort_keys=True) for v in values.values()}) > 1)
    return {name: {k: v.get(k) for k in varying} for name, v in values.items()}


def candidates_of(sides: Sequence[Side], selected: Sequence[str], order: Sequence[str]) -> tuple[dict, dict]:
    """``CONFIG@SIDE -> rows`` for every side and config, and ``CONFIG@SIDE -> (side, config)``."""
    candidates: dict[str, list] = {}
    where: dict[str, tuple[Side, str]] = {}
    for side in sides:
        by_config = rows_by_config(scores_of(side), where=f"scores at {side.label}")
        missing = [c for c in selected if c not in by_config]
        if missing:
            raise UserError(f"config(s) {', '.join(map(repr, missing))} not scored at {side.label}; scored configs "
                            f"there: {', '.join(config_order(by_config, order))}")
        for config in (selected or config_order(by_config, order)):
            name = f"{config}@{side.name}"
            candidates[name] = by_config[config]
            where[name] = (side, config)
    return candidates, where


def split_of(args: argparse.Namespace, params: Params | None) -> dict[str, str] | None:
    """The workspace's dev/test assignment, or None (``--no-split``, ``split: none``, no params.yaml)."""
    if args.no_split or params is None or not params.split.enabled:
        return None
    from rag_ablation.data.split import read_split

    path = SPLIT_DIR / f"{params.dataset}.jsonl"
    if not path.is_file():
        raise UserError(f"params.yaml has a split but {path} does not exist: run `dvc repro split` (or pass "
                        "--no-split to rank on all questions)")
    return read_split(path)


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
    candidates, where = candidates_of(sides, args.config, order)
    baseline = args.baseline or f"{settings.baseline}@{sides[0].name}"
    split = split_of(args, params)
    latency = {name: p95_of(side, config) for name, (side, config) in where.items()}
    summary = summarise(candidates, measure=args.measure or settings.measure, baseline=baseline, settings=settings,
                        split=split, p95_ms=latency,
                        answer_s={name: answer_seconds_of(side, config) for name, (side, config) in where.items()})
    legend = side_params(sides)
    markdown = format_markdown(summary, legend, commands=[command_line(args)])
    write_json(args.out / "sweep.json", summary_json(summary, legend))
    write_json(args.out / "plots" / "sweep_cost.json", cost_rows(summary))
    write_text(args.out / "sweep.md", markdown)
    sys.stdout.write(markdown)
