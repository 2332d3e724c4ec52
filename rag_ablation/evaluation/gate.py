"""`rag-ablation check`: the retrieval gate for CI, question by question against an accepted run.

The chapter's "Keeping it from getting worse" check, on the committed per-question scores: for
each gated config (``gate.configs`` of params.yaml, or ``--config``) and each slice of answerable
questions, plus ``all`` of them, the workspace's hits at ``gate.k`` are paired by question id
with the accepted baseline's and printed in the chapter's form::

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
``revision_diff.read_at``). ``--accept`` writes the workspace rows of the gated configs to the
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
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_ablation.config import GateConfig, StatsConfig, load_config
from rag_ablation.errors import InvalidData, UserError
from rag_ablation.evaluation import stats
from rag_ablation.evaluation.comparison import rounded, rows_by_config
from rag_ablation.evaluation.report import num, signed, table
from rag_ablation.evaluation.revision_diff import PARAMS, SCORES, read_at
from rag_ablation.evaluation.scoring import RETRIEVAL_FIELDS, parse_scores, read_scores, write_scores
from rag_ablation.evaluation.stats import Interval
from rag_ablation.io import write_json, write_text

BASELINE = Path("metrics/gate_baseline.csv")
"""The accepted per-question scores of the gated configs (``--accept`` writes it; committed)."""

ALL = "all"
"""The slice name of every answerable question together."""

EXIT_PASS = 0
EXIT_FAIL = 1
"""Exit statuses of ``rag-ablation check``; 2 (a ``UserError``) means the sides cannot be compared."""

COMPARED_FIELDS = ("answerable", "slice", "doc", "n_relevant")
"""Per-question fields that must agree on both sides for a question to be compared."""

MAX_IDS = 10
"""Most question ids named in one error message (then ``and N more``)."""

Row = Mapping[str, Any]


class Incomparable(UserError):
    """The workspace and the baseline cannot be compared: the message names the config, the
    questions and what differs, and how to accept the new state after a review."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class SliceResult:
    """One gated config on one slice: hits at ``k`` in the workspace and the baseline, the ids
    that went from hit to miss (``newly_failing``) and back (``newly_passing``), sorted, the
    paired interval of the change, the floor applied, which rule failed (``below_floor``,
    ``too_many_newly_failing``, ``below_margin``) and the reasons (empty: pass). ``too_small``
    slices are not gated: no rule fails and there are no reasons."""

    config: str
    slice: str
    k: int
    n: int
    hits: int
    baseline_hits: int
    newly_failing: tuple[str, ...]
    newly_passing: tuple[str, ...]
    change: Interval
    floor: float | None
    too_small: bool
    below_floor: bool
    too_many_newly_failing: bool
    below_margin: bool
    failures: tuple[str, ...]

    @property
    def recall(self) -> float:
        return self.hits / self.n

    @property
    def baseline_recall(self) -> float:
        return self.baseline_hits / self.n

    @property
    def gated(self) -> bool:
        return not self.too_small

    @property
    def passed(self) -> bool:
        """Gated and no rule failed (a too-small slice never passes on its own)."""
        return self.gated and not self.failures

    @property
    def status(self) -> str:
        return "TOO SMALL" if self.too_small else "FAIL" if self.failures else "PASS"

    @property
    def key(self) -> str:
        return f"{self.config}/{self.slice}"


@dataclass(frozen=True)
class GateResult:
    """Every gated config's slices (config order as gated; ``all`` first, then slices by name)
    against ``against`` (the baseline file or ``REV (commit)``)."""

    against: str
    rules: GateConfig
    settings: StatsConfig
    configs: tuple[str, ...]
    slices: tuple[SliceResult, ...]

    @property
    def failed(self) -> tuple[SliceResult, ...]:
        return tuple(s for s in self.slices if s.gated and s.failures)

    @property
    def not_gated(self) -> tuple[SliceResult, ...]:
        return tuple(s for s in self.slices if s.too_small)

    @property
    def gated(self) -> tuple[SliceResult, ...]:
        return tuple(s for s in self.slices if s.gated)

    @property
    def passed(self) -> bool:
        """No gated slice failed and at least one slice was gated."""
        return bool(self.gated) and not self.failed

    @property
    def reason(self) -> str:
        """The overall line after PASS or FAIL."""
        if self.failed:
            text = (f"{len(self.failed)} of {len(self.gated)} gated slice(s) failed: "
                    f"{', '.join(s.key for s in self.failed)}")
        elif not self.gated:
            text = (f"no slice has at least {self.rules.min_questions} questions (gate.min_questions), "
                    "so nothing was gated")
        else:
            text = f"all {len(self.gated)} gated slice(s) passed"
        if self.not_gated and self.gated:
            text += ("; not gated (too small): "
                     + ", ".join(f"{s.key} ({s.n} questions)" for s in self.not_gated))
        return text

    @property
    def exit_status(self) -> int:
        return EXIT_PASS if self.passed else EXIT_FAIL


# -------------------------------------------------------------------------- comparing


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:MAX_IDS])
    return shown + (f" and {len(ids) - MAX_IDS} more" if len(ids) > MAX_IDS else "")


ACCEPT_HINT = "review the change, then make the workspace the new baseline with `rag-ablation check --accept`"


def check_comparable(name: str, base_rows: Sequence[Row], new_rows: Sequence[Row], *, against: str) -> None:
    """Raise :class:`Incomparable` unless ``name`` has the same questions on both sides, each
    with the same ``answerable``, ``slice``, ``doc`` and ``n_relevant``. The message names the
    questions (at most :data:`MAX_IDS` per kind) and what changed."""
    base = {r["id"]: r for r in base_rows}
    new = {r["id"]: r for r in new_rows}
    problems = []
    only_base = sorted(set(base) - set(new))
    only_new = sorted(set(new) - set(base))
    if only_base:
        problems.append(f"{len(only_base)} question(s) only in {against}: {_ids(only_base)}")
    if only_new:
        problems.append(f"{len(only_new)} question(s) only in the workspace: {_ids(only_new)}")
    for field in COMPARED_FIELDS:
        changed = [f"{i} ({base[i][field]!r} -> {new[i][field]!r})" for i in new
                   if i in base and base[i][field] != new[i][field]]
        if changed:
            why = {"n_relevant": " (the span labels or this config's chunking changed)",
                   "doc": " (the span moved to another document)"}.get(field, "")
            problems.append(f"{field} changed for {len(changed)} question(s){why}: {_ids(changed)}")
    if problems:
        raise Incomparable(f"cannot compare {name!r} with {against}: {'; '.join(problems)}; {ACCEPT_HINT}")


def _hits(rows: Sequence[Row], column: str, where: str) -> np.ndarray:
    missing = [r["id"] for r in rows if r.get(column) is None]
    if missing:
        raise InvalidData(f"{where}: {column} is empty for answerable question(s) {_ids(missing)}; "
                          "regenerate the scores with `dvc repro score`")
    return np.asarray([r[column] for r in rows], dtype=float)


def _slice_result(config: str, name: str, pairs: Sequence[tuple[Row, Row]], *, rules: GateConfig,
                  settings: StatsConfig, against: str) -> SliceResult:
    k = rules.k
    column = f"hit_at_{k}"
    before = _hits([b for b, _ in pairs], column, against)
    after = _hits([a for _, a in pairs], column, "workspace scores")
    ids = [a["id"] for _, a in pairs]
    docs = [str(a["doc"]) for _, a in pairs]
    clusters = docs if settings.cluster and len(set(docs)) >= 2 else None
    change = stats.paired_bootstrap_ci(before, after, method=settings.method, n_resamples=settings.resamples,
                                       seed=settings.seed, confidence=settings.confidence, clusters=clusters)
    n, hits = len(ids), int(after.sum())
    newly_failing = tuple(sorted(i for i, b, a in zip(ids, before, after) if b and not a))
    newly_passing = tuple(sorted(i for i, b, a in zip(ids, before, after) if a and not b))
    floor = rules.floor_for(name)
    margin = rules.non_inferiority_margin
    gated = n >= rules.min_questions
    below_floor = gated and floor is not None and hits < floor * n - 1e-9  # at the floor passes
    too_many = gated and len(newly_failing) > rules.max_newly_failing
    below_margin = gated and margin is not None and change.high < -margin - stats.TOLERANCE
    failures = []
    if below_floor:
        failures.append(f"recall@{k} {hits / n:.3f} is below the floor {floor:.3f}")
    if too_many:
        failures.append(f"{len(newly_failing)} newly failing, at most {rules.max_newly_failing} allowed")
    if below_margin:
        failures.append(f"the {settings.confidence:.0%} interval of the change, {signed(change.low)} to "
                        f"{signed(change.high)}, lies below -{margin:g} (gate.non_inferiority_margin)")
    return SliceResult(config=config, slice=name, k=k, n=n, hits=hits, baseline_hits=int(before.sum()),
                       newly_failing=newly_failing, newly_passing=newly_passing, change=change, floor=floor,
                       too_small=not gated, below_floor=below_floor, too_many_newly_failing=too_many,
                       below_margin=below_margin, failures=tuple(failures))


def gate_config(name: str, base_rows: Sequence[Row], new_rows: Sequence[Row], *, rules: GateConfig,
                settings: StatsConfig, against: str = "the baseline") -> list[SliceResult]:
    """One config's slices: ``all`` first, then each slice of answerable questions by name.
    Raises :class:`Incomparable` when the two sides differ (:func:`check_comparable`)."""
    check_comparable(name, base_rows, new_rows, against=against)
    base = {r["id"]: r for r in base_rows}
    pairs = [(base[r["id"]], r) for r in new_rows if r["answerable"]]
    groups: dict[str, list[tuple[Row, Row]]] = {}
    for b, a in pairs:
        groups.setdefault(str(a["slice"]), []).append((b, a))
    out = [_slice_result(name, ALL, pairs, rules=rules, settings=settings, against=against)] if pairs else []
    out += [_slice_result(name, s, groups[s], rules=rules, settings=settings, against=against) for s in sorted(groups)]
    return out


def run_gate(base_rows: Iterable[Row], new_rows: Iterable[Row], *, rules: GateConfig, settings: StatsConfig,
             against: str, configs: Sequence[str] | None = None) -> GateResult:
    """The gate over ``configs`` (default ``rules.configs``): every config must have rows on both
    sides and be comparable (else :class:`Incomparable`); a floor named for a slice that no gated
    config has is a ``UserError`` (a typo in ``gate.floor`` would silently check nothing)."""
    names = tuple(configs or rules.configs)
    if not names:
        raise UserError("no config to gate: set gate.configs in params.yaml or pass --config NAME")
    base = rows_by_config(base_rows, where=against)
    new = rows_by_config(new_rows, where="workspace scores")
    for name in names:
        for side, rows, fix in ((against, base, ACCEPT_HINT),
                                ("the workspace scores", new, "run `dvc repro score`, or gate another config "
                                 "(gate.configs)")):
            if not rows.get(name):
                raise Incomparable(f"gated config {name!r} has no rows in {side} (scored configs there: "
                                   f"{', '.join(rows) or 'none'}); {fix}")
    slices = tuple(s for name in names
                   for s in gate_config(name, base[name], new[name], rules=rules, settings=settings, against=against))
    if isinstance(rules.floor, Mapping):
        known = {s.slice for s in slices}
        unknown = sorted(set(rules.floor) - known)
        if unknown:
            raise UserError(f"gate.floor: no slice named {', '.join(map(repr, unknown))} among the answerable "
                            f"questions of {', '.join(names)}; slices are: {', '.join(sorted(known))}")
    return GateResult(against=against, rules=rules, settings=settings, configs=names, slices=slices)


# ------------------------------------------------------------------------- rendering


def _floors(rules: GateConfig) -> str:
    if rules.floor is None:
        return "no floor"
    if isinstance(rules.floor, float):
        return f"floor {num(rules.floor)}"
    return "floor " + ", ".join(f"{s} {num(f)}" for s, f in rules.floor.items())


def rules_text(r: GateResult) -> str:
    """One sentence: what is checked, against what, with which rules."""
    rules, k = r.rules, r.rules.k
    margin = (f"change interval ({r.settings.confidence:.0%}, {r.settings.resamples:,} resamples, seed "
              f"{r.settings.seed}) not entirely below -{rules.non_inferiority_margin:g}"
              if rules.non_inferiority_margin is not None else "non-inferiority margin off")
    return (f"recall@{k} of {', '.join(r.configs)} against {r.against}, per slice of answerable questions and "
            f"all: {_floors(rules)}; at most {rules.max_newly_failing} newly failing; {margin}; "
            f"slices under {rules.min_questions} questions are not gated.")


def summary_line(s: SliceResult) -> str:
    """The chapter's line: ``NAME SLICE: recall@5 = 0.850 (34/40), newly failing [...], newly passing [...]``."""
    return (f"{s.config} {s.slice}: recall@{s.k} = {s.recall:.3f} ({s.hits}/{s.n}), "
            f"newly failing {list(s.newly_failing)}, newly passing {list(s.newly_passing)}")


def _baseline_text(s: SliceResult, confidence: float) -> str:
    return (f"baseline {s.baseline_recall:.3f} ({s.baseline_hits}/{s.n}), change {signed(s.change.estimate)}, "
            f"{confidence:.0%} interval {signed(s.change.low)} to {signed(s.change.high)}")


def verdict_line(s: SliceResult, r: GateResult) -> str:
    """``PASS``, ``FAIL: reasons`` or ``TOO SMALL: ...``, then the baseline and the change."""
    if s.too_small:
        head = f"TOO SMALL: {s.n} questions, fewer than {r.rules.min_questions} (gate.min_questions): not gated"
    elif s.failures:
        head = "FAIL: " + "; ".join(s.failures)
    else:
        head = "PASS"
    return f"{head} ({_baseline_text(s, r.settings.confidence)})"


def format_text(r: GateResult) -> str:
    """The terminal form: the rules, two lines per config and slice, then the overall verdict."""
    lines = [f"Retrieval gate: {rules_text(r)}", ""]
    for s in r.slices:
        lines += [summary_line(s), f"  {verdict_line(s, r)}"]
    lines += ["", f"{'PASS' if r.passed else 'FAIL'}: {r.reason}"]
    return "\n".join(lines) + "\n"


def _code_ids(ids: Sequence[str]) -> str:
    return ", ".join(f"`{i}`" for i in ids)


def format_markdown(r: GateResult) -> str:
    """The pull-request form: verdict heading, a table per config and slice, then the ids."""
    k = r.rules.k
    conf = f"{r.settings.confidence:.0%}"
    header = ["config", "slice", "n", f"recall@{k}", "baseline", f"change ({conf} interval)", "newly failing",
              "newly passing", "verdict"]
    rows = []
    for s in r.slices:
        verdict = ("too small, not gated" if s.too_small else
                   ("**FAIL**: " + "; ".join(s.failures)) if s.failures else "PASS")
        rows.append([f"`{s.config}`", s.slice, str(s.n), f"{s.recall:.3f} ({s.hits}/{s.n})",
                     f"{s.baseline_recall:.3f} ({s.baseline_hits}/{s.n})",
                     f"{signed(s.change.estimate)} ({signed(s.change.low)} to {signed(s.change.high)})",
                     str(len(s.newly_failing)), str(len(s.newly_passing)), verdict])
    parts = [f"### Retrieval gate: {'PASS' if r.passed else 'FAIL'}", "", rules_text(r), "", table(header, rows)]
    changed = [s for s in r.slices if s.slice != ALL and (s.newly_failing or s.newly_passing)]
    if changed:
        parts += ["", "**Questions that changed**", ""]
        for s in changed:
            bits = [f"newly failing {_code_ids(s.newly_failing)}" if s.newly_failing else "",
                    f"newly passing {_code_ids(s.newly_passing)}" if s.newly_passing else ""]
            parts.append(f"- `{s.config}` {s.slice}: " + "; ".join(b for b in bits if b))
    parts += ["", f"**{'PASS' if r.passed else 'FAIL'}**: {r.reason}"]
    return "\n".join(parts) + "\n"


def to_junit(r: GateResult) -> str:
    """JUnit XML: one testsuite, one testcase per config and slice (``classname`` gate.CONFIG,
    ``name`` the slice); a failed slice has a ``failure`` (message: the reasons; text: the
    chapter's line and the baseline), a too-small one ``skipped``, and the others carry that
    text as ``system-out``. The verdict and its reason are suite properties. No times, so the
    same inputs give the same bytes."""
    suite = ET.Element("testsuite", {
        "name": "rag-ablation retrieval gate", "tests": str(len(r.slices)), "failures": str(len(r.failed)),
        "errors": "0", "skipped": str(len(r.not_gated))})
    props = ET.SubElement(suite, "properties")
    for name, value in (("against", r.against), ("verdict", "PASS" if r.passed else "FAIL"), ("reason", r.reason)):
        ET.SubElement(props, "property", {"name": name, "value": value})
    for s in r.slices:
        case = ET.SubElement(suite, "testcase", {"classname": f"gate.{s.config}", "name": s.slice})
        detail = f"{summary_line(s)}\n{_baseline_text(s, r.settings.confidence)}"
        if s.too_small:
            ET.SubElement(case, "skipped", {"message": f"too small: {s.n} questions, fewer than "
                                                       f"{r.rules.min_questions} (gate.min_questions)"})
        elif s.failures:
            failure = ET.SubElement(case, "failure", {"message": "; ".join(s.failures), "type": "regression"})
            failure.text = detail
        if not s.failures:
            ET.SubElement(case, "system-out").text = detail
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def to_metrics(r: GateResult) -> dict[str, Any]:
    """The numbers of ``metrics/gate.json`` (sorted keys when written; no times, no ids):
    ``pass``, ``comparable`` (1), ``k``, counts ``gated``, ``failed``, ``too_small``, and per
    ``configs.<config>.<slice>``: ``n``, ``hits``, ``recall``, ``baseline_hits``,
    ``baseline_recall``, ``change``, ``ci_low``, ``ci_high``, ``newly_failing``, ``newly_passing``
    (counts), ``floor`` (when the slice has one), ``too_small`` and ``gated`` (0/1), and for a
    gated slice ``pass`` and one 0/1 flag per rule: ``below_floor``, ``too_many_newly_failing``,
    ``below_margin``."""
    configs: dict[str, dict[str, Any]] = {}
    for s in r.slices:
        entry: dict[str, Any] = {
            "n": s.n, "hits": s.hits, "recall": rounded(s.recall), "baseline_hits": s.baseline_hits,
            "baseline_recall": rounded(s.baseline_recall), "change": rounded(s.change.estimate),
            "ci_low": rounded(s.change.low), "ci_high": rounded(s.change.high),
            "newly_failing": len(s.newly_failing), "newly_passing": len(s.newly_passing),
            "too_small": int(s.too_small), "gated": int(s.gated)}
        if s.floor is not None:
            entry["floor"] = s.floor
        if s.gated:
            entry.update({"pass": int(s.passed), "below_floor": int(s.below_floor),
                          "too_many_newly_failing": int(s.too_many_newly_failing),
                          "below_margin": int(s.below_margin)})
        configs.setdefault(s.config, {})[s.slice] = entry
    return {"pass": int(r.passed), "comparable": 1, "k": r.rules.k, "gated": len(r.gated), "failed": len(r.failed),
            "too_small": len(r.not_gated), "configs": configs}


INCOMPARABLE_METRICS = {"pass": 0, "comparable": 0}
"""``metrics/gate.json`` when the two sides cannot be compared (the reason goes to stderr)."""


# --------------------------------------------------------------------------- accepting


def accepted_rows(new_rows: Iterable[Row], configs: Sequence[str]) -> list[Row]:
    """The workspace rows of ``configs`` (in the file's order), the whole of a new baseline; a
    config without rows is a ``UserError``."""
    if not configs:
        raise UserError("no config to accept: set gate.configs in params.yaml or pass --config NAME")
    rows = list(new_rows)
    present = {r["config"] for r in rows}
    missing = [c for c in configs if c not in present]
    if missing:
        raise UserError(f"cannot accept: no workspace rows for {', '.join(map(repr, missing))} (scored configs: "
                        f"{', '.join(sorted(present)) or 'none'}); run `dvc repro score` first")
    return [r for r in rows if r["config"] in configs]


def write_baseline(path: Path, rows: Sequence[Row]) -> None:
    """Write accepted rows in the per-question scores format (``read_scores`` reads it back)."""
    write_scores(path, rows, RETRIEVAL_FIELDS)


def read_baseline(path: Path) -> list[dict[str, Any]]:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"no accepted baseline {path}: review the workspace scores, then run "
                        f"`rag-ablation check --accept` and commit {path} (or compare with a revision: --against main)")
    return read_scores(path)


# ----------------------------------------------------------------------- command


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


def _params() -> tuple[GateConfig, StatsConfig]:
    """Gate rules and bootstrap settings from params.yaml; defaults when there is none."""
    if not PARAMS.is_file():
        return GateConfig(), StatsConfig()
    params = load_config(PARAMS)
    return params.gate, params.stats


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
    rules, settings = _params()
    new = read_scores(args.scores)
    if args.accept:
        _accept(args, rules, settings, new)
        return
    if args.against:
        commit, text = read_at(args.against)
        against = f"{args.against} ({commit[:10]})"
        base = parse_scores(text, where=f"{SCORES.as_posix()} at {args.against}")
    else:
        path = args.baseline or BASELINE
        against, base = str(path), read_baseline(path)
    result = run_gate(base, new, rules=rules, settings=settings, against=against, configs=args.config)
    if args.md:
        write_text(args.md, format_markdown(result))
    if args.junit:
        write_text(args.junit, to_junit(result))
    if args.json:
        write_json(args.json, to_metrics(result))
    sys.stdout.write(format_text(result))
    if not result.passed:
        raise SystemExit(EXIT_FAIL)
