"""Per-question scores: stored rankings joined with span labels, and answers with references.

Per-question results are the currency of the evaluation: every measure exists here per
question first, is committed to git (``metrics/scores/*.csv``), and is aggregated after
(``rag_ablation.evaluation.scoring.evaluate``), so paired tests, label audits and the gate compare
questions without searching again.

Retrieval rows (``RETRIEVAL_FIELDS``), one per config and question, in the question file's
order, for every config whose run is ``ok``:

- ``first_relevant_rank``: 1-based rank of the first relevant chunk in the stored ranking,
  empty when none is in it (``rag_ablation.evaluation.scoring.measures``);
- ``hit_at_1``, ``hit_at_5``, ``hit_at_10`` (0/1, bound inclusive) and ``rr_at_10``;
- ``n_relevant``: how many chunks of the chunking the labels count as relevant (empty for an
  app, ``apps:``, whose passages are known only as far as it ranked them);
- ``top_score``: the score of the first-ranked chunk to ``SCORE_DIGITS`` significant digits
  (``rag_ablation.core.config``: dense scores carry float32 noise from the CPU's kernels; empty
  for an empty ranking);
- ``slice``, ``doc`` (the source document, the cluster for a cluster bootstrap) and
  ``answerable``;
- for a data set with graded qrels only (``rag_ablation.evaluation.scoring.graded``; the columns
  are absent otherwise): ``ndcg_at_10`` and ``recall_at_100`` (empty for a config that keeps
  fewer than 100 chunks), and the measures above use the qrels, not the spans: a chunk is
  relevant when its document is graded above 0, and ``n_relevant`` counts those documents.

Unanswerable questions keep a row with empty measures: nothing can be relevant to them, and
their ``top_score`` serves a decline threshold.

Answer rows (``ANSWER_FIELDS``), one per answered config and question: ``refusal``,
``contains_reference``, ``token_f1`` (``rag_ablation.evaluation.scoring.answer_measures``),
``relevant_in_prompt`` (1 when a passage the model saw is relevant, for the retrieved-by-correct
table; empty for unanswerable questions) and ``lexical_support`` (the share of the answer's
content words found in the passages its prompt showed, ``rag_ablation.evaluation.scoring.grounding``;
empty for unanswerable questions, refusals, answers without content words and answers whose
passages are unknown).
"""
from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_ablation.core.errors import UserError
from rag_ablation.evaluation.scoring.answer_measures import answer_scores
from rag_ablation.evaluation.scoring.grounding import answer_support
from rag_ablation.evaluation.scoring.graded import GRADED_COLUMNS, Qrel, graded_scores, relevant_chunks
from rag_ablation.evaluation.scoring.measures import MRR_K, RECALL_KS, first_relevant_rank, hit_at, rr_at
from rag_ablation.core.config import SCORE_DIGITS
from rag_ablation.core.io import round_significant, rounded_floats, write_text
from rag_ablation.data.questions import Question

RETRIEVAL_FIELDS = ("config", "id", "slice", "doc", "answerable", "first_relevant_rank",
                    *(f"hit_at_{k}" for k in RECALL_KS), f"rr_at_{MRR_K}", "n_relevant", "top_score")
ANSWER_FIELDS = ("config", "id", "slice", "doc", "answerable", "refusal", "contains_reference", "token_f1",
                 "relevant_in_prompt", "lexical_support")
_INTS = {"answerable", "first_relevant_rank", "n_relevant", "refusal", "contains_reference", "relevant_in_prompt",
         *(f"hit_at_{k}" for k in RECALL_KS)}
_FLOATS = {f"rr_at_{MRR_K}", "top_score", "token_f1", "lexical_support", *GRADED_COLUMNS}


def retrieval_fields(graded: bool) -> tuple[str, ...]:
    """The retrieval CSV's columns: ``RETRIEVAL_FIELDS``, then ``GRADED_COLUMNS`` when graded."""
    return RETRIEVAL_FIELDS + (GRADED_COLUMNS if graded else ())


def score_run(config: str, records: Sequence[Mapping[str, Any]], relevant: Mapping[str, Sequence[str]],
              questions: Sequence[Question], *, qrels: Mapping[str, Qrel] | None = None,
              depth: int = 0, count_relevant: bool = True, stage: str = "retrieve") -> list[dict[str, Any]]:
    """Retrieval rows of one run (``records``: the run file's questions, with ``ranking``)
    against ``relevant`` (question id -> relevant chunk ids), in the order of ``questions``.
    With ``qrels`` (a graded data set) relevance comes from them instead and the graded
    columns are added; ``depth`` is how many chunks the config keeps (``k``). With
    ``count_relevant`` False (an app: only its own top k is known) ``n_relevant`` is left empty. A question
    missing from the run raises ``UserError`` (the run is stale: rerun ``stage@config``)."""
    by_id = {r["id"]: r for r in records}
    missing = [q.id for q in questions if q.id not in by_id]
    if missing:
        raise UserError(f"run of {config!r} has no ranking for {len(missing)} question(s) "
                        f"({', '.join(missing[:10])}); it is stale: run `dvc repro {stage}@{config}`")
    rows = []
    for q in questions:
        ranking = [x["chunk"] for x in by_id[q.id]["ranking"]]
        row: dict[str, Any] = {"config": config, "id": q.id, "slice": q.slice, "doc": q.doc or "",
                               "answerable": int(q.answerable),
                               "top_score": round_significant(by_id[q.id]["ranking"][0]["score"], SCORE_DIGITS)
                               if ranking else None,
                               **dict.fromkeys(RETRIEVAL_FIELDS[5:-1])}
        if qrels is not None:
            row.update(dict.fromkeys(GRADED_COLUMNS))
        if q.answerable:
            qrel = qrels.get(q.id, Qrel({})) if qrels is not None else None
            rel = relevant.get(q.id, ()) if qrel is None else relevant_chunks(ranking, qrel)
            rank = first_relevant_rank(ranking, rel)
            n_relevant = len(rel) if qrel is None else sum(1 for g in qrel.grades.values() if g > 0)
            counted = n_relevant if count_relevant or qrel is not None else None
            row.update(first_relevant_rank=rank, n_relevant=counted, **{f"rr_at_{MRR_K}": rr_at(rank, MRR_K)},
                       **{f"hit_at_{k}": int(hit_at(rank, k)) for k in RECALL_KS})
            if qrel is not None:
                row.update(graded_scores(ranking, qrel, depth=depth))
        rows.append(row)
    return rows


def score_answers(config: str, answers: Sequence[Mapping[str, Any]], relevant: Mapping[str, Sequence[str]],
                  questions: Sequence[Question], *, phrases: Sequence[str], texts: Mapping[str, str],
                  undefined: Counter[str] | None = None) -> list[dict[str, Any]]:
    """Answer rows of one answers file, in the order of ``questions`` (those answered).
    ``texts``: passage id -> text (the config's run file's ``passages``), for ``lexical_support``;
    each answer whose lexical support is undefined adds its reason
    (``rag_ablation.evaluation.scoring.grounding.REASONS``) to ``undefined`` when given."""
    by_id = {a["id"]: a for a in answers}
    rows = []
    for q in questions:
        a = by_id.get(q.id)
        if a is None:
            continue
        rel = set(relevant.get(q.id, ()))
        scored = answer_scores(a["answer"], q.answer, answerable=q.answerable, phrases=phrases)
        support = answer_support(a["answer"], a["passages"], texts, answerable=q.answerable,
                                 refused=bool(scored["refusal"]))
        if undefined is not None and support.reason is not None:
            undefined[support.reason] += 1
        rows.append({"config": config, "id": q.id, "slice": q.slice, "doc": q.doc or "",
                     "answerable": int(q.answerable),
                     "relevant_in_prompt": int(bool(rel & set(a["passages"]))) if q.answerable else None,
                     **scored, "lexical_support": support.value})
    return rows


def to_csv(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> str:
    """CSV text with a header; None is an empty cell; floats rounded as every output file's
    (``rag_ablation.core.io.rounded_floats``: ``OUTPUT_DECIMALS`` decimals, ``-0.0`` as ``0.0``)
    and then written with ``repr`` (the shortest text that reads back as the same float)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n", extrasaction="raise")
    w.writeheader()
    for r in rows:
        w.writerow(rounded_floats({k: ("" if r.get(k) is None else r.get(k)) for k in fields}))
    return buf.getvalue()


def write_scores(path: Path, rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> None:
    write_text(path, to_csv(rows, fields))


def parse_scores(text: str, *, where: str = "scores") -> list[dict[str, Any]]:
    """Rows of a scores CSV with their types back (ints, floats, None for an empty cell)."""
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        out: dict[str, Any] = {}
        for k, v in r.items():
            if k is None:
                raise UserError(f"{where}: a row has more cells than the header; regenerate it with `dvc repro`")
            out[k] = None if v == "" and (k in _INTS or k in _FLOATS) else (
                int(v) if k in _INTS else float(v) if k in _FLOATS else v)
        rows.append(out)
    return rows


def read_scores(path: Path) -> list[dict[str, Any]]:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"no per-question scores file {path}: run `dvc repro score`")
    return parse_scores(path.read_text(encoding="utf-8"), where=str(path))
