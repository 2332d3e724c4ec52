"""`rag-ablation diff A [B]`: each config at B against itself at A (B: the workspace by default).

This is ``dvc metrics diff A`` with the answer to "is it real?". A and B are each a git revision
(branch, tag or commit), a DVC experiment name as ``dvc exp show`` prints it (resolved through
DVC's experiments API, over the experiments of every commit), or ``workspace``. The
per-question scores committed at each side (``git show COMMIT:./metrics/scores/retrieval.csv``,
relative to the current directory, read with git and no shell; the workspace's file for
``workspace``) are paired by question id, and each config present on both sides is compared with
itself (``comparison.compare``) on the measure ``--measure`` (default ``stats.measure`` of
params.yaml; ``auto``: nDCG@10 on a data set with graded qrels, else hit@5; or an answer measure,
``contains_reference`` or ``token_f1``, read from ``metrics/scores/answers.csv`` at each side
instead, for the answered configs, with no RR@10 column; or a judge's score, ``llm_score`` or
``combined_score``, from ``metrics/scores/verdicts.csv`` joined to those rows): fixed and broken
counts with the exact sign test for a 0/1 measure, better / worse by more than ``stats.margin``
with the paired sign-flip test for a continuous one (MRR@10, nDCG@10, recall@100), the change
with a paired bootstrap interval, RR@10's change with its sign-flip test, Holm's adjustment over
the configs compared (family size printed) and the smallest detectable change. Below the table,
the ids of the questions fixed and broken, per slice.

Configs found on one side only and questions answerable on one side only are named, never
paired. Configs follow params.yaml's order, then any others by name. The bootstrap settings
come from params' ``stats`` block (defaults when there is no params.yaml). Output is a
terminal table, or Markdown for a pull request with ``--md``. A revision git does not know, or
one without the scores file, is one ``UserError`` line (exit 2); an unknown name lists the
experiments DVC knows.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_ablation.core.config import MEASURE_CHOICES, StatsConfig, load_config
from rag_ablation.core.errors import UserError
from rag_ablation.evaluation.report.diff_text import format_markdown, format_text
from rag_ablation.evaluation.statistics.comparison import ANSWER_MEASURES
from rag_ablation.evaluation.statistics.revision_diff import diff_rows, measure_rows
from rag_ablation.support.sides import WORKSPACE, resolve_side

PARAMS = Path("params.yaml")


def build_parser(prog: str = "rag-ablation diff") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rev", metavar="A", help="what to compare with: a git revision (branch, tag or commit), a DVC "
                    "experiment name, or `workspace`")
    ap.add_argument("new", metavar="B", nargs="?", default=WORKSPACE,
                    help="what is compared with A, written the same way (default: the workspace)")
    ap.add_argument("--measure", choices=(*MEASURE_CHOICES, *ANSWER_MEASURES), default=None,
                    help="per-question measure the verdict uses: a 0/1 hit_at_k (sign test) or a continuous "
                    "rr_at_10, ndcg_at_10, recall_at_100 (sign-flip test); auto: ndcg_at_10 on graded qrels, "
                    "else hit_at_5 (default: stats.measure); or an answer measure of the answered configs "
                    "(metrics/scores/answers.csv): contains_reference (0/1) or token_f1 (continuous), or a "
                    "judge's score (metrics/scores/verdicts.csv, continuous): llm_score, combined_score")
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
    base, side = resolve_side(args.rev), resolve_side(args.new)
    if base.commit is None:
        raise UserError("A is the workspace: name a revision or experiment as A (B is the workspace by default)")
    measure = args.measure or settings.measure
    d = diff_rows(measure_rows(base, measure), measure_rows(side, measure), rev=base.label, commit=base.commit,
                  measure=measure, settings=settings, params_order=order,
                  selected=args.config, new_side=side.label, new_commit=side.commit)
    sys.stdout.write(format_markdown(d) if args.md else format_text(d))
