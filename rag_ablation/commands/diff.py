"""`rag-ablation diff REV`: each config in the workspace against itself at a git revision.

This is ``dvc metrics diff REV`` with the answer to "is it real?". The committed per-question
scores at ``REV`` (``git show REV:./metrics/scores/retrieval.csv``, relative to the current
directory, read with git and no shell) are paired by question id with the workspace's file, and
each config present on both sides is compared with itself (``comparison.compare``): fixed and
broken counts of the 0/1 measure (``--measure``, default ``stats.measure`` of params.yaml), the
change with a paired bootstrap interval, the exact sign test, RR@10's change with its sign-flip
test, Holm's adjustment over the configs compared (family size printed) and the smallest
detectable change. Below the table, the ids of the questions fixed and broken, per slice.

Configs found on one side only and questions answerable on one side only are named, never
paired. Configs follow params.yaml's order, then any others by name. The bootstrap settings
come from params' ``stats`` block (defaults when there is no params.yaml). Output is a
terminal table, or Markdown for a pull request with ``--md``. A revision git does not know, or
one without the scores file, is one ``UserError`` line (exit 2).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_ablation.core.config import PAIRED_MEASURES, StatsConfig, load_config
from rag_ablation.evaluation.scoring.scores import parse_scores, read_scores
from rag_ablation.evaluation.statistics.revision_diff import SCORES, diff_rows, format_markdown, format_text, read_scores_at

PARAMS = Path("params.yaml")


def build_parser(prog: str = "rag-ablation diff") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rev", metavar="REV", help="git revision to compare with (branch, tag or commit)")
    ap.add_argument("--measure", choices=PAIRED_MEASURES, default=None,
                    help="0/1 measure whose fixed and broken questions are counted (default: stats.measure)")
    ap.add_argument("--config", action="append", default=[], metavar="NAME",
                    help="compare only this config (repeatable)")
    ap.add_argument("--md", action="store_true", help="print Markdown for a pull request")
    return ap


def _params() -> tuple[StatsConfig, list[str]]:
    """Stats settings and config order from params.yaml; defaults when there is none."""
    if not PARAMS.is_file():
        return StatsConfig(), []
    params = load_config(PARAMS)
    return params.stats, list(params.retrieval)


def run(args: argparse.Namespace) -> None:
    settings, order = _params()
    commit, text = read_scores_at(args.rev)
    old = parse_scores(text, where=f"{SCORES.as_posix()} at {args.rev}")
    new = read_scores(SCORES)
    d = diff_rows(old, new, rev=args.rev, commit=commit, measure=args.measure or settings.measure, settings=settings,
                  params_order=order, selected=args.config)
    sys.stdout.write(format_markdown(d) if args.md else format_text(d))
