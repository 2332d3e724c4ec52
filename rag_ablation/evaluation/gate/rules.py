"""The retrieval gate's rules: each gated config, per slice of answerable questions, against an accepted run.

The chapter's "Keeping it from getting worse" check on the per-question scores (the library of
``rag-ablation check``, ``rag_ablation.commands.check``, and of the ``gate`` stage). For each gated
config and each slice of answerable questions, plus ``all`` of them, the workspace's values of
the gated measure are paired by question id with the baseline's (:func:`run_gate`). The measure
is ``gate.measure`` (:func:`gated_measure`): ``auto`` is nDCG@10 on a data set with graded qrels,
else hit@``gate.k``; any per-question column can be named. A slice FAILs when the measure's mean
(recall@k for a hit column) is below its floor (``gate.floor``), when more than
``gate.max_newly_failing`` questions went from hit to miss (for a continuous measure: dropped by
more than ``stats.margin``), or, with ``gate.non_inferiority_margin`` m set, when the upper
end of the paired bootstrap interval of the change lies below -m. A slice with fewer than
``gate.min_questions`` questions is ``TOO SMALL``: neither passes nor fails. Two sides that
cannot be compared (a gated config without rows on one side, questions on one side only, a
question whose ``answerable``, ``slice``, ``doc`` or ``n_relevant`` changed) raise
:class:`Incomparable`.

The accepted baseline file is read and written by ``rag_ablation.evaluation.gate.baseline``; the
results are rendered (terminal, Markdown, JUnit XML, metrics) by ``rag_ablation.evaluation.gate.formats``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_ablation.core.config import GateConfig, Params, StatsConfig
from rag_ablation.core.errors import InvalidData, UserError
from rag_ablation.evaluation.report.formatting import signed
from rag_ablation.evaluation.statistics import inference as stats
from rag_ablation.evaluation.statistics.comparison import (
    changed_ids,
    is_binary,
    measure_label,
    measure_of_rows,
    rows_by_config,
)
from rag_ablation.evaluation.statistics.inference import Interval

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


class NoBaseline(Incomparable):
    """The accepted baseline holds none of the workspace's questions (another data set)."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class SliceResult:
    """One gated config on one slice: the sum of ``measure`` over its questions in the workspace
    and the baseline (``hits``, ``baseline_hits``: the hits at ``k`` for a hit column), the ids
    that went from hit to miss (``newly_failing``; for a continuous measure: dropped by more than
    ``margin``) and back (``newly_passing``), sorted, the
    paired interval of the change, the floor applied, which rule failed (``below_floor``,
    ``too_many_newly_failing``, ``below_margin``) and the reasons (empty: pass). ``too_small``
    slices are not gated: no rule fails and there are no reasons."""

    config: str
    slice: str
    k: int
    measure: str
    margin: float
    n: int
    hits: float
    baseline_hits: float
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
        """The measure's mean on the slice (recall@k for a hit column)."""
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
    against ``against`` (the baseline file or ``REV (commit)``), on the column ``measure``."""

    against: str
    rules: GateConfig
    settings: StatsConfig
    configs: tuple[str, ...]
    slices: tuple[SliceResult, ...]
    measure: str

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
    with the same ``answerable``, ``slice``, ``doc`` and ``n_relevant`` (a field neither side's
    row holds is not compared: answer rows have no ``n_relevant``). The message names the
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
        changed = [f"{i} ({base[i].get(field)!r} -> {new[i].get(field)!r})" for i in new
                   if i in base and (field in base[i] or field in new[i]) and base[i].get(field) != new[i].get(field)]
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


def gated_measure(rules: GateConfig, rows: Sequence[Row]) -> str:
    """The column the gate checks: ``gate.measure``, where ``auto`` is nDCG@10 when every
    answerable row of ``rows`` holds it (graded qrels) and ``hit_at_<gate.k>`` otherwise
    (``comparison.measure_of_rows``, whose UserError names a column the rows lack)."""
    return measure_of_rows(rules.measure, rows, default=f"hit_at_{rules.k}")


def _slice_result(config: str, name: str, pairs: Sequence[tuple[Row, Row]], *, rules: GateConfig,
                  settings: StatsConfig, against: str, measure: str) -> SliceResult:
    k = rules.k
    binary = is_binary(measure)
    margin = 0.0 if binary else settings.margin
    label = measure_label(measure)
    before = _hits([b for b, _ in pairs], measure, against)
    after = _hits([a for _, a in pairs], measure, "workspace scores")
    ids = [a["id"] for _, a in pairs]
    docs = [str(a["doc"]) for _, a in pairs]
    clusters = docs if settings.cluster and len(set(docs)) >= 2 else None
    change = stats.paired_bootstrap_ci(before, after, method=settings.method, n_resamples=settings.resamples,
                                       seed=settings.seed, confidence=settings.confidence, clusters=clusters)
    n = len(ids)
    hits: float = int(after.sum()) if binary else float(after.sum())
    baseline_hits: float = int(before.sum()) if binary else float(before.sum())
    newly_passing, newly_failing = changed_ids(ids, before, after, margin)
    floor = rules.floor_for(name)
    non_inferiority = rules.non_inferiority_margin
    gated = n >= rules.min_questions
    below_floor = gated and floor is not None and hits < floor * n - 1e-9  # at the floor passes
    too_many = gated and len(newly_failing) > rules.max_newly_failing
    below_margin = gated and non_inferiority is not None and change.high < -non_inferiority - stats.TOLERANCE
    failures = []
    if below_floor:
        failures.append(f"{label} {hits / n:.3f} is below the floor {floor:.3f}")
    if too_many:
        failures.append(f"{len(newly_failing)} newly failing, at most {rules.max_newly_failing} allowed")
    if below_margin:
        failures.append(f"the {settings.confidence:.0%} interval of the change, {signed(change.low)} to "
                        f"{signed(change.high)}, lies below -{non_inferiority:g} (gate.non_inferiority_margin)")
    return SliceResult(config=config, slice=name, k=k, measure=measure, margin=margin, n=n, hits=hits,
                       baseline_hits=baseline_hits, newly_failing=newly_failing, newly_passing=newly_passing,
                       change=change, floor=floor, too_small=not gated, below_floor=below_floor,
                       too_many_newly_failing=too_many, below_margin=below_margin, failures=tuple(failures))


def gate_config(name: str, base_rows: Sequence[Row], new_rows: Sequence[Row], *, rules: GateConfig,
                settings: StatsConfig, against: str = "the baseline", measure: str | None = None) -> list[SliceResult]:
    """One config's slices on ``measure`` (default: :func:`gated_measure` of its rows): ``all``
    first, then each slice of answerable questions by name. Raises :class:`Incomparable` when
    the two sides differ (:func:`check_comparable`)."""
    measure = measure or gated_measure(rules, new_rows)
    check_comparable(name, base_rows, new_rows, against=against)
    base = {r["id"]: r for r in base_rows}
    pairs = [(base[r["id"]], r) for r in new_rows if r["answerable"]]
    groups: dict[str, list[tuple[Row, Row]]] = {}
    for b, a in pairs:
        groups.setdefault(str(a["slice"]), []).append((b, a))
    out = ([_slice_result(name, ALL, pairs, rules=rules, settings=settings, against=against, measure=measure)]
           if pairs else [])
    out += [_slice_result(name, s, groups[s], rules=rules, settings=settings, against=against, measure=measure)
            for s in sorted(groups)]
    return out


def check_same_question_set(base_rows: Sequence[Row], new_rows: Sequence[Row], *, against: str,
                            dataset: str | None = None) -> None:
    """Raise :class:`NoBaseline` when the baseline shares no question id with the workspace: it is
    empty, or was accepted on another question set (after ``dataset:`` switched), so nothing can
    be compared and one line says so, instead of a "cannot compare" per config."""
    base_ids = {r["id"] for r in base_rows}
    new_ids = {r["id"] for r in new_rows}
    if new_ids and not base_ids & new_ids:
        what = f"data set {dataset!r}" if dataset else "this question set"
        held = ("no rows (nothing was accepted yet)" if not base_ids else
                f"none of its {len(new_ids)} questions (it was accepted on another question set)")
        raise NoBaseline(f"no accepted baseline for {what}: {against} holds {held}; review the scores, then accept "
                         f"them with `rag-ablation check --accept` and commit {against}")


def require_searched(names: Sequence[str], params: Params) -> None:
    """Raise :class:`Incomparable` when a gated config is left out of ``run_configs`` (it has no
    ranking in this run, so nothing to gate), naming each with the reason. A name that is no
    retrieval config is not judged here: :func:`run_gate` says it has no rows and lists those
    scored."""
    reasons = [reason for name in names if name in params.retrieval and (reason := params.left_out(name)) is not None]
    if reasons:
        raise Incomparable("; ".join(reasons))


def run_gate(base_rows: Iterable[Row], new_rows: Iterable[Row], *, rules: GateConfig, settings: StatsConfig,
             against: str, configs: Sequence[str] | None = None, dataset: str | None = None) -> GateResult:
    """The gate over ``configs`` (default ``rules.configs``): every config must have rows on both
    sides and be comparable (else :class:`Incomparable`; :class:`NoBaseline` when the baseline
    holds none of the workspace's questions, e.g. accepted on another ``dataset``); a floor named
    for a slice that no gated config has is a ``UserError`` (a typo in ``gate.floor`` would
    silently check nothing)."""
    names = tuple(configs or rules.configs)
    if not names:
        raise UserError("no config to gate: set gate.configs in params.yaml or pass --config NAME")
    base_rows, new_rows = list(base_rows), list(new_rows)
    check_same_question_set(base_rows, new_rows, against=against, dataset=dataset)
    base = rows_by_config(base_rows, where=against)
    new = rows_by_config(new_rows, where="workspace scores")
    for name in names:
        for side, rows, fix in ((against, base, ACCEPT_HINT),
                                ("the workspace scores", new, "run `dvc repro score`, or gate another config "
                                 "(gate.configs)")):
            if not rows.get(name):
                raise Incomparable(f"gated config {name!r} has no rows in {side} (scored configs there: "
                                   f"{', '.join(rows) or 'none'}); {fix}")
    measure = gated_measure(rules, [r for name in names for r in new[name]])
    slices = tuple(s for name in names
                   for s in gate_config(name, base[name], new[name], rules=rules, settings=settings, against=against,
                                        measure=measure))
    if isinstance(rules.floor, Mapping):
        known = {s.slice for s in slices}
        unknown = sorted(set(rules.floor) - known)
        if unknown:
            raise UserError(f"gate.floor: no slice named {', '.join(map(repr, unknown))} among the answerable "
                            f"questions of {', '.join(names)}; slices are: {', '.join(sorted(known))}")
    return GateResult(against=against, rules=rules, settings=settings, configs=names, slices=slices, measure=measure)
