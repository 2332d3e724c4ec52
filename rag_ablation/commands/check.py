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

``--measure COLUMN`` gates another per-question column than ``gate.measure`` for one run; the
floors are written for ``gate.measure``'s column, so another column is gated without them (a
note says so). An answer measure (``token_f1``, ``contains_reference``, ``llm_score``,
``combined_score``: ``comparison.ANSWER_MEASURES``) gates the answered configs' answers
(``revision_diff.measure_rows``) against those committed at ``--against`` (a revision or a DVC
experiment); it needs ``--against`` (the baseline file holds retrieval scores only) and refuses
``--accept``, and the output is titled "Answer gate".

Exit status: 0 PASS, 1 FAIL, 2 when the two sides cannot be compared (:class:`Incomparable`: a
gated config without rows on one side, questions on one side only, a question whose
``answerable``, ``slice``, ``doc`` or ``n_relevant`` changed -- its span, its labels or the
config's chunking changed) and for any other user error (an unknown revision, a missing file).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from rag_ablation.commands.diff import PARAMS
from rag_ablation.core.config import MEASURE_CHOICES, GateConfig, Params, StatsConfig, load_config
from rag_ablation.core.errors import UserError
from rag_ablation.core.io import write_json, write_text
from rag_ablation.evaluation.gate.baseline import BASELINE, accepted_rows, read_baseline, write_baseline
from rag_ablation.evaluation.gate.formats import format_markdown, format_text, to_junit, to_metrics
from rag_ablation.evaluation.gate.rules import (EXIT_FAIL, GateResult, Incomparable, gated_measure, require_searched,
                                                run_gate)
from rag_ablation.evaluation.scoring.scores import parse_scores, read_scores
from rag_ablation.evaluation.statistics.comparison import ANSWER_MEASURES, measure_label, measure_of_rows
from rag_ablation.evaluation.statistics.revision_diff import SCORES, measure_rows, read_scores_at
from rag_ablation.support.sides import WORKSPACE, Side, resolve_side


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
    ap.add_argument("--measure", choices=(*MEASURE_CHOICES, *ANSWER_MEASURES), default=None,
                    help="gate this per-question column instead of gate.measure: a retrieval column, or an "
                         "answer measure of answered configs (token_f1, contains_reference, llm_score, "
                         "combined_score; needs --against). gate.floor is written for gate.measure, so "
                         "another column is gated without floors")
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


def _answer_sides(args: argparse.Namespace, configs: tuple[str, ...]) -> tuple[str, list[dict], list[dict]]:
    """``(against, base rows, workspace rows)`` of an answer measure: the answer scores (with the
    judge score joined in, ``revision_diff.measure_rows``) committed at ``--against`` (a revision
    or a DVC experiment) and in the workspace. The baseline file holds retrieval scores only; a
    gated config the workspace did not answer is a UserError naming those answered."""
    if args.accept:
        raise UserError(f"--accept writes the retrieval baseline file; {args.measure} is an answer measure, gated "
                        "against a revision: drop --accept, or drop --measure to accept the retrieval scores")
    if not args.against:
        raise UserError(f"{args.measure} is an answer measure: it is gated against the answers committed at a "
                        f"revision, not the retrieval baseline file ({BASELINE}); add --against REV, e.g. "
                        f"`rag-ablation check --against main --measure {args.measure}`")
    side = resolve_side(args.against)
    new = measure_rows(Side(WORKSPACE, "workspace", None), args.measure)
    answered = sorted({str(r["config"]) for r in new})
    unanswered = [c for c in configs if c not in answered]
    if unanswered:
        raise UserError(f"gated config(s) {', '.join(map(repr, unanswered))} have no answers in the workspace "
                        f"(answered configs: {', '.join(answered) or 'none'}; generation.configs): gate an answered "
                        "config with --config NAME")
    return f"{side.label} ({(side.commit or '')[:10]})", measure_rows(side, args.measure), new


def _with_measure(rules: GateConfig, measure: str | None, rows: list[dict], configs: tuple[str, ...]) -> GateConfig:
    """``rules`` gating ``measure`` when one is given: floors kept only when it is the column
    ``gate.measure`` stands for on these rows (``gate.floor`` is written for that one); a note
    on stdout says when they are dropped."""
    if measure is None:
        return rules
    gated = [r for r in rows if r["config"] in configs]
    own = None if measure in ANSWER_MEASURES else gated_measure(rules, gated)
    column = measure if measure in ANSWER_MEASURES else measure_of_rows(measure, gated, default=f"hit_at_{rules.k}")
    if column == own:
        return replace(rules, measure=column)
    if rules.floor is not None:
        print(f"note: gate.floor is written for gate.measure ({measure_label(own) if own else 'a retrieval measure'}); "
              f"{measure_label(column)} is gated without floors (newly failing and the margin rule only)")
    return replace(rules, measure=column, floor=None)


def run(args: argparse.Namespace) -> None:
    rules, settings, dataset, params = _params()
    configs = tuple(args.config or rules.configs)
    if params is not None:  # a config left out of run_configs: say so, not "no rows"
        require_searched(configs, params)
    if args.measure in ANSWER_MEASURES:
        against, base, new = _answer_sides(args, configs)
        rules = _with_measure(rules, args.measure, new, configs)
        result = run_gate(base, new, rules=rules, settings=settings, against=against, configs=args.config,
                          dataset=dataset)
        _report(args, result)
        return
    new = read_scores(args.scores)
    rules = _with_measure(rules, args.measure, new, configs)
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
    _report(args, result)


def _report(args: argparse.Namespace, result: GateResult) -> None:
    """Write the result where asked (``--md``, ``--junit``, ``--json``), print it, exit 1 on FAIL."""
    if args.md:
        write_text(args.md, format_markdown(result))
    if args.junit:
        write_text(args.junit, to_junit(result))
    if args.json:
        write_json(args.json, to_metrics(result))
    sys.stdout.write(format_text(result))
    if not result.passed:
        raise SystemExit(EXIT_FAIL)
