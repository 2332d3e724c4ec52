"""`rag-ablation check`: the retrieval gate for CI, question by question against an accepted run.

The chapter's "Keeping it from getting worse" check, on the committed per-question scores: for
each gated config (``gate.configs`` of params.yaml, or ``--config``) and each slice of answerable
questions, plus ``all`` of them, the workspace's values of ``gate.measure`` (``auto``: hits at
``gate.k``, or nDCG@10 on a data set with graded qrels) are paired by question id with the
accepted baseline's and printed in the chapter's form::

    hybrid_heading identifier: recall@5 = 0.850 (34/40), newly failing [], newly passing []
      PASS (baseline 0.850 (34/40), change +0.000, 95% interval +0.000 to +0.000)

A slice FAILs when recall@k is below its floor (``gate.floor``), when more than
``gate.max_newly_failing`` questions went from hit to miss, or, with
``gate.non_inferiority_margin`` m set, when the upper end of the paired bootstrap interval of the
change (``stats`` settings: method, resamples, seed, confidence, cluster) lies below -m. That last
rule fails only a loss the interval says is larger than m; it is not the textbook
non-inferiority test (which would need the lower end above -m, and fails on noise with 40
questions). A slice with fewer than ``gate.min_questions`` questions is reported ``TOO SMALL``:
it neither passes nor fails (its questions still count in ``all``), and the overall line names
it. The overall verdict is FAIL when any gated slice fails, or when no slice was big enough to
gate; else PASS.

The baseline is the committed file ``metrics/gate_baseline.csv`` (works on a fresh clone) or,
with ``--against REV``, the per-question scores committed at a git revision (read with
``rag_ablation.support.git.read_at``). ``--accept`` writes the workspace rows of the gated configs to the
baseline file, after a review; the file then holds exactly those configs. Accepting a loss
resets what counts as newly failing, never the floors. ``--md FILE`` writes Markdown for a pull
request, ``--junit FILE`` JUnit XML (one testcase per config and slice; a failure element with
the reasons; skipped when too small) and ``--json FILE`` the numbers of ``metrics/gate.json``
(see :func:`to_metrics`).

Exit status: 0 PASS, 1 FAIL, 2 when the two sides cannot be compared (:class:`Incomparable`: a
gated config without rows on one side, questions on one side only, a question whose
``answerable``, ``slice``, ``doc`` or ``n_relevant`` changed -- its span, its labels or the
config's chunking changed) and for any other user error (an unknown revision, a missing file).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_ablation.commands.diff import PARAMS
from rag_ablation.core.config import GateConfig, Params, StatsConfig, load_config
from rag_ablation.core.errors import UserError
from rag_ablation.core.io import write_json, write_text
from rag_ablation.evaluation.gate.baseline import BASELINE, accepted_rows, read_baseline, write_baseline
from rag_ablation.evaluation.gate.formats import format_markdown, format_text, to_junit, to_metrics
from rag_ablation.evaluation.gate.rules import EXIT_FAIL, Incomparable, require_searched, run_gate
from rag_ablation.evaluation.scoring.scores import parse_scores, read_scores
from rag_ablation.evaluation.statistics.revision_diff import SCORES, read_scores_at


def build_parser(prog: str = "rag-ablation check") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    side = ap.add_mutually_exclusive_group()
    side.add_argument("--against", metavar="REV", help="compare with the per-question scores committed at this "
                      "git revision (branch, tag or commit) instead of the baseline file")
    side.add_argument("--baseline", type=Path, default=None, metavar="FILE",
                      help=f"the accepted baseline (default: {BASELINE}); --accept writes it")
    ap.add_argument("--scores", type=Path, default=SCORES, metavar="FILE",
                    help=f"the workspace's per-question scores (default: {SCORES})")
    ap.add_argument("--config", action="append", default=[], metavar="NAME",
                    help="gate this config instead of gate.configs (repeatable)")
    ap.add_argument("--md", type=Path, metavar="FILE", help="also write Markdown for a pull request")
    ap.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML for CI")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write the numbers (as metrics/gate.json)")
    ap.add_argument("--accept", action="store_true",
                    help="after a review: write the workspace rows of the gated configs to the baseline file "
                         "(it then holds exactly those configs; the floors stay as params say)")
    return ap


def _params() -> tuple[GateConfig, StatsConfig, str | None, Params | None]:
    """Gate rules, bootstrap settings, the data set and the whole params from params.yaml;
    defaults (and no data set name, no params) when there is none."""
    if not PARAMS.is_file():
        return GateConfig(), StatsConfig(), None, None
    params = load_config(PARAMS)
    return params.gate, params.stats, params.dataset, params


def _accept(args: argparse.Namespace, rules: GateConfig, settings: StatsConfig, new: list[dict]) -> None:
    if args.against:
        raise UserError("--accept writes the baseline file, not a git revision: drop --against")
    path = args.baseline or BASELINE
    configs = tuple(args.config or rules.configs)
    rows = accepted_rows(new, configs)
    if path.is_file():  # show what is being accepted
        try:
            sys.stdout.write(format_text(run_gate(read_scores(path), new, rules=rules, settings=settings,
                                                  against=str(path), configs=configs)))
        except Incomparable as e:
            print(f"note: not compared with the old baseline: {e}")
    write_baseline(path, rows)
    print(f"accepted: {len(rows)} rows of {', '.join(configs)} written to {path}; commit it")


def run(args: argparse.Namespace) -> None:
    rules, settings, dataset, params = _params()
    if params is not None:  # a config left out of run_configs: say so, not "no rows"
        require_searched(args.config or rules.configs, params)
    new = read_scores(args.scores)
    if args.accept:
        _accept(args, rules, settings, new)
        return
    if args.against:
        commit, text = read_scores_at(args.against)
        against = f"{args.against} ({commit[:10]})"
        base = parse_scores(text, where=f"{SCORES.as_posix()} at {args.against}")
    else:
        path = args.baseline or BASELINE
        against, base = str(path), read_baseline(path)
    result = run_gate(base, new, rules=rules, settings=settings, against=against, configs=args.config,
                      dataset=dataset)
    if args.md:
        write_text(args.md, format_markdown(result))
    if args.junit:
        write_text(args.junit, to_junit(result))
    if args.json:
        write_json(args.json, to_metrics(result))
    sys.stdout.write(format_text(result))
    if not result.passed:
        raise SystemExit(EXIT_FAIL)
