"""Hand-written against model-drafted questions: what ``rag-ablation label --compare`` prints.

Everything is computed from files and the ``stats`` block of params, with the project's own
statistics (``rag_ablation.evaluation.statistics``); nothing is resampled here by hand:

- **Share answerable**: of the drafts given a verdict in the drafts' session log (the last
  verdict of each passage), the share judged ``answerable``, with a Wilson interval at
  ``stats.confidence`` (``inference.wilson_interval``); ``partly`` and ``not_answered`` are
  counted beside it.
- **Content-word overlap** of each answerable question with its span's passage
  (``question_stats.lexical_overlap`` against ``source_passage``, the questions stage's
  statistic), hand-written (the question file, slices other than ``generated``) against
  generated (the drafts' file): the mean with a bootstrap interval (``inference.bootstrap_mean_ci``
  with the ``stats`` settings).
- **Recall@5 per config** on the two sets of the scores file (``metrics/scores/retrieval.csv``):
  its answerable rows of slice ``generated`` against those of every other slice, each the mean of
  ``hit_at_5`` with a bootstrap interval (clusters by document when ``stats.cluster``).
- **The BM25-vs-dense ordering** on each set: ``comparison.compare`` of the dense config against
  the BM25 config on that set's questions (paired by id: fixed/broken counts, the change with a
  paired interval, the exact sign test), the two tests Holm-adjusted as one family
  (``comparison.with_holm``), and the verdict of ``comparison.is_real``. The ordering *flips*
  when the two sets' changes have opposite signs; the *verdict flips* when both are real and
  opposite.

The pipeline scores generated questions only when they are in the question file of the run, so
the scores of both sets come from a comparison run (docs/workbench.md); a scores file without
generated rows leaves the recall part empty and says why.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_ablation.core.config import Params, StatsConfig
from rag_ablation.data.corpus import Document
from rag_ablation.data.question_stats import lexical_overlap, source_passage
from rag_ablation.data.questions import Question
from rag_ablation.evaluation.statistics import comparison
from rag_ablation.evaluation.statistics.inference import Interval, bootstrap_mean_ci, wilson_interval

from rag_ablation.authoring.workbench.drafts import DRAFT_KIND, VERDICTS
from rag_ablation.authoring.workbench.session import GENERATED

MEASURE = "hit_at_5"
"""The 0/1 column recall@5 is the mean of, and the one the ordering is tested on."""
SETS = ("hand-written", "generated")

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Ordering:
    """The dense config against the BM25 config on one set: ``change`` (None when no question of
    the set is scored by both) and its verdict (``is_real``)."""

    set: str
    change: comparison.Comparison | None

    @property
    def delta(self) -> float | None:
        """dense minus BM25 recall@5 on the paired questions."""
        return None if self.change is None or self.change.binary is None else self.change.binary.delta.estimate

    @property
    def real(self) -> bool:
        return self.change is not None and self.change.binary is not None and comparison.is_real(self.change.binary)


@dataclass(frozen=True)
class DraftComparison:
    """Everything of the module docstring. ``overlap`` and ``recall[config]`` map each of
    ``SETS`` to an interval (None for an empty set); ``ordering`` holds one per set."""

    verdicts: Mapping[str, int]
    answerable: Interval | None
    overlap: Mapping[str, Interval | None]
    recall: Mapping[str, Mapping[str, Interval | None]]
    bm25: str
    dense: str
    ordering: tuple[Ordering, Ordering]
    confidence: float

    @property
    def ordering_flips(self) -> bool | None:
        """Whether the sign of dense minus BM25 differs between the sets (None: a set unscored)."""
        a, b = (o.delta for o in self.ordering)
        if a is None or b is None:
            return None
        return a * b < 0

    @property
    def verdict_flips(self) -> bool | None:
        """Whether both sets have a real difference, in opposite directions (None: a set unscored)."""
        if self.ordering_flips is None:
            return None
        return bool(self.ordering_flips and all(o.real for o in self.ordering))

    def lines(self) -> list[str]:
        """The comparison as the command prints it."""
        pct = f"{self.confidence:.0%}"
        n = sum(self.verdicts.values())
        out = ["Model-drafted questions against hand-written ones", ""]
        if self.answerable is None:
            out.append("drafts judged: none yet (judge drafts in the Drafts tab of `rag-ablation label`)")
        else:
            out.append(f"drafts judged: {n}; answerable {self.verdicts['answerable']} = {_share(self.answerable)} "
                       f"({pct} Wilson interval), partly {self.verdicts['partly']}, not answered by their passage "
                       f"{self.verdicts['not_answered']}")
        out += ["", f"content-word overlap with their passage (mean, {pct} bootstrap interval):"]
        for s in SETS:
            out.append(f"  {s:<13} {_interval(self.overlap[s])}")
        out += ["", f"recall@5 ({pct} bootstrap interval):", f"  {'config':<24} {SETS[0]:<30} {SETS[1]}"]
        if not self.recall:
            out.append("  no scores of answerable questions in the scores file")
        for config, sets in self.recall.items():
            out.append(f"  {config:<24} {_interval(sets[SETS[0]]):<30} {_interval(sets[SETS[1]])}")
        if all(sets[SETS[1]] is None for sets in self.recall.values()):
            out.append("  (no generated question is scored: run the pipeline on a question file holding both sets, "
                       "docs/workbench.md)")
        out += ["", f"{self.dense} against {self.bm25} (recall@5, paired by question, Holm over the two sets):"]
        for o in self.ordering:
            out.append(f"  {o.set:<13} {_ordering(o, self.bm25, self.dense)}")
        flips = self.ordering_flips
        if flips is None:
            out.append("  the ordering cannot be compared: a set has no question scored by both configs")
        else:
            out.append(f"  the ordering {'flips' if flips else 'does not flip'} between the sets; the verdict "
                       f"{'flips' if self.verdict_flips else 'does not flip'}")
        return out


def _share(i: Interval) -> str:
    return f"{i.estimate:.0%} [{i.low:.0%}, {i.high:.0%}]"


def _interval(i: Interval | None) -> str:
    return "no questions" if i is None else f"{i.estimate:.3f} [{i.low:.3f}, {i.high:.3f}] n={i.n}"


def _ordering(o: Ordering, bm25: str, dense: str) -> str:
    c = o.change
    if c is None or c.binary is None:
        return "no question scored by both configs"
    b = c.binary
    ahead = dense if b.delta.estimate > 0 else bm25
    verdict = f"{ahead} ahead (a real difference)" if o.real else "no real difference"
    return (f"n={c.n}, change {b.delta.estimate:+.3f} [{b.delta.low:+.3f}, {b.delta.high:+.3f}], fixed "
            f"{b.counts.fixed}, broken {b.counts.broken}, sign test p={b.p:.3g} (Holm {b.p_holm:.3g}): {verdict}")


def verdict_counts(events: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many passages' last ``draft`` event has each verdict of ``VERDICTS``."""
    last = {e["passage"]: e["verdict"] for e in events
            if e.get("kind") == DRAFT_KIND and isinstance(e.get("passage"), str) and e.get("verdict") in VERDICTS}
    given = list(last.values())
    return {v: given.count(v) for v in VERDICTS}


def overlaps(questions: Sequence[Question], documents: Sequence[Document]) -> list[float]:
    """The content-word overlap of each answerable question with its first span's passage (the
    questions stage's ``overlap_by_slice``, per question), in order."""
    texts = {d.doc: d.text for d in documents}
    return [lexical_overlap(q.question, source_passage(q.relevant_spans[0], texts[q.doc]))
            for q in questions if q.answerable and q.doc in texts]


def mean_interval(values: Sequence[float], settings: StatsConfig, clusters: Sequence[str] | None = None
                  ) -> Interval | None:
    """The mean of ``values`` with the ``stats`` block's bootstrap interval; None when empty."""
    if not values:
        return None
    return bootstrap_mean_ci(list(values), clusters=clusters, **comparison.bootstrap_options(settings))


def split_rows(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """The answerable score rows of each of ``SETS``: slice ``generated`` or any other."""
    out: dict[str, list[Row]] = {s: [] for s in SETS}
    for r in comparison.answerable(rows):
        out[SETS[1] if r["slice"] == GENERATED else SETS[0]].append(r)
    return out


def recall(rows: Sequence[Row], settings: StatsConfig) -> Interval | None:
    """Recall@5 of one config on one set's answerable ``rows``: the mean of ``hit_at_5`` with
    the bootstrap interval of the ``stats`` block."""
    if not rows:
        return None
    return mean_interval(list(comparison.column_values(rows, MEASURE)), settings,
                         comparison.cluster_labels(rows, settings))


def default_pair(params: Params) -> tuple[str, str]:
    """The BM25 and dense configs to order: the first of params' retrieval configs searching
    with BM25 and the question as written, and ``stats.baseline`` when it is a dense config of
    that kind (else the first such dense config). A kind without a config raises ``UserError``."""
    from rag_ablation.core.config import NO_TRANSFORM
    from rag_ablation.core.errors import UserError

    plain = {n: c for n, c in params.retrieval.items() if c.query == NO_TRANSFORM and c.rerank is None}
    bm25 = [n for n, c in plain.items() if c.method == "bm25"]
    dense = [n for n, c in plain.items() if c.method == "dense"]
    if not bm25 or not dense:
        raise UserError("the ordering needs a BM25 and a dense retrieval config (query none, no reranker) in params' "
                        "retrieval block, or name them with --pair BM25 DENSE")
    return bm25[0], params.stats.baseline if params.stats.baseline in dense else dense[0]


def compare_sets(*, hand: Sequence[Question], generated: Sequence[Question], documents: Sequence[Document],
                 events: Iterable[Mapping[str, Any]], rows: Sequence[Row], settings: StatsConfig,
                 pair: tuple[str, str]) -> DraftComparison:
    """The comparison of the module docstring. ``hand`` are the hand-written question file's
    questions (those of slice ``generated``, if any, are left out), ``generated`` the drafts'
    file's, ``events`` the drafts' session log, ``rows`` the scores file's retrieval rows, and
    ``pair`` the (BM25, dense) configs to order."""
    counts = verdict_counts(events)
    n = sum(counts.values())
    overlap = {SETS[0]: mean_interval(overlaps([q for q in hand if q.slice != GENERATED], documents), settings),
               SETS[1]: mean_interval(overlaps(generated, documents), settings)}
    by_config = comparison.rows_by_config(rows)
    recalls = {config: {s: recall(set_rows, settings) for s, set_rows in split_rows(config_rows).items()}
               for config, config_rows in by_config.items()}
    bm25, dense = pair
    changes: list[comparison.Comparison | None] = []
    for s in SETS:
        base, new = (split_rows(by_config.get(name, []))[s] for name in (bm25, dense))
        changes.append(comparison.compare(base, new, base=bm25, new=dense, measure=MEASURE, settings=settings)
                       if base and new else None)
    tested = comparison.with_holm([c for c in changes if c is not None])
    held = iter(tested)
    adjusted = [None if c is None else next(held) for c in changes]
    return DraftComparison(verdicts=counts, answerable=wilson_interval(counts["answerable"], n,
                                                                       confidence=settings.confidence) if n else None,
                           overlap=overlap, recall=recalls, bm25=bm25, dense=dense,
                           ordering=(Ordering(SETS[0], adjusted[0]), Ordering(SETS[1], adjusted[1])),
                           confidence=settings.confidence)
