"""Export stored rankings and relevance labels as TREC run and qrels files.

So that trec_eval, ``ir_measures`` and other TREC tools can score this project's runs. The
question id is the TREC query id and the chunk id (``doc.md#3``) the TREC docno.

- Run lines (``run_lines``): ``qid Q0 docno rank score tag``, six space-separated columns, one
  line per ranked chunk, questions in the order given, ``rank`` 1..n without gaps or repeats.
- Qrels lines (``qrels_lines``): ``qid 0 docno 1``, one per relevant chunk.

Order and ties. ``order="stored"`` (default) keeps each ranking as stored, rank = position: the
stored order is exactly what the project's measures score (``measures.first_relevant_rank``), and
it already carries each retriever's own tie-break (BM25 and dense: lower chunk index first; RRF:
best rank reached, then list order, then chunk id; a reranked head stays above the first-stage
tail, whose scores are on another scale). ``order="score"`` sorts by score descending, then chunk
id ascending, for rankings whose list order means nothing.

Why the written score, not only the rank, must carry that order: trec_eval ignores the rank
column and the line order. It sorts each query's lines by score descending and breaks ties by
docno DESCENDING; ``ir_measures`` reads only (qid, docno, score) and its providers disagree among
themselves: pytrec_eval (Success@k, RR) breaks ties like trec_eval, the msmarco provider (RR@10)
by docno ASCENDING. With two tied chunks ``a`` (relevant, ranked first here) and ``b``, one
``ir_measures`` call gives Success@1 = 0 and RR@10 = 1 on the same file, and neither need match
the stored order. Moreover trec_eval (and so pytrec_eval) keeps scores as 32-bit C floats: 0.5
and 0.5 - 1e-8 tie there. So with ``strict_scores=True`` (default) the written scores are made
strictly decreasing down the ranking in 32-bit precision: a score whose 32-bit value is not below
the previous written one's becomes the largest 32-bit float below that (ties move by one 32-bit
unit, about 6e-8 at 0.5; a reranked tail continues just below the head); every other score is
written unchanged. Every tool then sees the order of the rank column, and the measures computed
from the files equal the project's per question. ``strict_scores=False`` writes the stored
scores unchanged, and ties are broken by each reader's own rule. Scores are written with
``repr`` (shortest exact round trip), so nothing is lost in the writing.

The rank column is still written explicitly (1..n): it is the order for readers and tools that
honour it, and it makes a file checkable by eye. Ids holding whitespace (which would shift the
columns), non-finite scores, and a docno repeated within one question (trec_eval would count it
twice) raise ``InvalidData``.

Graded qrels (a BEIR-style data set, ``rag_ablation.evaluation.scoring.graded``): the run is
written per *document* (``document_rankings``: each document at the rank of its first chunk, with
that chunk's score, the question's ``exclude`` documents removed) and the qrels with their grades
(``graded_qrels_lines``: ``qid 0 docno grade``), so ir_measures' nDCG@10 and R@100 on the files
equal the project's ``ndcg_at_10`` and ``recall_at_100`` per question. Every graded row is
written, grade 0 included (a judged non-relevant document: TREC tools count it as judged, with
gain 0, and nDCG and recall ignore it, as the project does).

Original document ids (``original_ids``): a data set imported from BEIR keeps a map from each
project document path (``scifact/4983.md``) to the data set's own id (``4983``); the graded
run and qrels then both name documents by those ids, so the files can be scored against BEIR's
own qrels and runs. A document of the run or qrels missing from the map raises ``InvalidData``.

Depth (``run_depth``): the chunks the config kept per question, its ``k``. A measure cut deeper
than that (R@100 on a run of k = 10) counts the ranks never retrieved as misses; the project
leaves recall@100 empty below k = 100 for that reason.

Queries with an empty relevant set get no qrels line; TREC tools then leave them out of their
means, while the project counts them as 0 (``measures``). Queries with no run line but with
qrels score 0 in both.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag_ablation.core.errors import InvalidData, lookup
from rag_ablation.core.io import write_text
from rag_ablation.evaluation.scoring.graded import Qrel, doc_of, document_ranking

ORDERS = ("stored", "score")
F32_MAX = float(np.finfo(np.float32).max)


def _check_id(value: object, what: str) -> str:
    s = str(value)
    if not s or any(c.isspace() for c in s):
        raise InvalidData(f"{what} {s!r} cannot be written to a TREC file: columns are separated by whitespace, "
                          f"so ids must be non-empty and hold none; rename it")
    return s


def _pairs(qid: str, ranking: Sequence[Any]) -> list[tuple[str, float]]:
    out = []
    for item in ranking:
        chunk, score = (item["chunk"], item["score"]) if isinstance(item, Mapping) else item
        score = float(score)
        if not math.isfinite(score) or abs(score) > F32_MAX:
            raise InvalidData(f"question {qid!r}: chunk {chunk!r} has score {score}; a TREC run needs finite scores "
                              f"within 32-bit float range (|score| <= {F32_MAX:.3g}), which trec_eval reads")
        out.append((_check_id(chunk, f"question {qid!r}: chunk id"), score))
    return out


def rankings_from_run(run: Mapping[str, Any]) -> dict[str, list[dict]]:
    """Question id -> stored ranking (``[{"chunk", "score"}]``) of a run file
    (``data/build/runs/<config>.json``: ``questions[].ranking``). A run that is not ``ok`` or
    names a question twice raises ``InvalidData``."""
    if run.get("status", "ok") != "ok":
        raise InvalidData(f"run status is {run.get('status')!r} ({run.get('reason')}); only an 'ok' run has rankings")
    out: dict[str, list[dict]] = {}
    for rec in run["questions"]:
        if rec["id"] in out:
            raise InvalidData(f"run names question {rec['id']!r} twice; rerun the retrieve stage")
        out[rec["id"]] = list(rec["ranking"])
    return out


def run_lines(config: str, rankings: Mapping[str, Sequence[Any]], *, order: str = "stored",
              strict_scores: bool = True) -> list[str]:
    """TREC run lines (no newline) of ``rankings`` (question id -> ranking, each item a
    ``{"chunk", "score"}`` mapping or a ``(chunk, score)`` pair), tagged ``config``. See the
    module docstring for ``order`` and ``strict_scores``."""
    tag = _check_id(config, "run tag (config name)")
    lookup(dict.fromkeys(ORDERS), order, "TREC run order")
    lines: list[str] = []
    for raw_qid, ranking in rankings.items():
        qid = _check_id(raw_qid, "question id")
        pairs = _pairs(qid, ranking)
        seen: set[str] = set()
        for chunk, _ in pairs:
            if chunk in seen:
                raise InvalidData(f"question {qid!r}: chunk {chunk!r} appears twice in the ranking; a TREC run "
                                  f"names each docno once per query (trec_eval would count it twice)")
            seen.add(chunk)
        if order == "score":
            pairs.sort(key=lambda p: (-p[1], p[0]))
        previous = np.float32(np.inf)
        for rank, (chunk, score) in enumerate(pairs, start=1):
            if strict_scores:
                if np.float32(score) >= previous:
                    score = float(np.nextafter(previous, np.float32(-np.inf)))
                previous = np.float32(score)
            lines.append(f"{qid} Q0 {chunk} {rank} {score!r} {tag}")
    return lines


def qrels_lines(relevant: Mapping[str, Iterable[str]]) -> list[str]:
    """TREC qrels lines (no newline), ``qid 0 docno 1`` for every relevant chunk, in the order
    given. A chunk listed twice for one question raises ``InvalidData``."""
    lines: list[str] = []
    for raw_qid, chunks in relevant.items():
        qid = _check_id(raw_qid, "question id")
        seen: set[str] = set()
        for c in chunks:
            chunk = _check_id(c, f"question {qid!r}: chunk id")
            if chunk in seen:
                raise InvalidData(f"question {qid!r}: relevant chunk {chunk!r} is listed twice; a qrels file "
                                  f"judges each docno once per query")
            seen.add(chunk)
            lines.append(f"{qid} 0 {chunk} 1")
    return lines


def document_rankings(rankings: Mapping[str, Sequence[Any]],
                      qrels: Mapping[str, Qrel]) -> dict[str, list[dict[str, Any]]]:
    """Question id -> document ranking (``[{"chunk": document path, "score"}]``) of chunk
    ``rankings``: each document once, at its first chunk's rank and score, without the
    question's ``exclude`` documents (``graded.document_ranking``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for qid, ranking in rankings.items():
        pairs = [(str(x["chunk"]), x["score"]) if isinstance(x, Mapping) else (str(x[0]), x[1]) for x in ranking]
        first: dict[str, float] = {}
        for chunk, score in pairs:
            first.setdefault(doc_of(chunk), float(score))
        docs = document_ranking([c for c, _ in pairs], qrels[qid].exclude if qid in qrels else frozenset())
        out[qid] = [{"chunk": d, "score": first[d]} for d in docs]
    return out


def original_ids(rankings: Mapping[str, Sequence[Mapping[str, Any]]], qrels: Mapping[str, Qrel],
                 ids: Mapping[str, str]) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Qrel]]:
    """The document ``rankings`` (as ``document_rankings`` returns them) and ``qrels`` with every
    document path replaced by its original id in ``ids`` (project document path -> the data
    set's own id). Every document of both must be in ``ids``: otherwise ``InvalidData`` counts
    and names (up to 10) the missing paths, since the map then comes from another import."""
    missing = sorted({str(x["chunk"]) for r in rankings.values() for x in r} - set(ids)
                     | {d for q in qrels.values() for d in [*q.grades, *q.exclude]} - set(ids))
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise InvalidData(f"{len(missing)} document(s) of the run or qrels have no original id in the map "
                          f"({shown})")
    renamed = {q: [{**x, "chunk": ids[str(x["chunk"])]} for x in r] for q, r in rankings.items()}
    return renamed, {q: Qrel({ids[d]: g for d, g in r.grades.items()}, frozenset(ids[d] for d in r.exclude))
                     for q, r in qrels.items()}


def run_depth(config: Mapping[str, Any], rankings: Mapping[str, Sequence[Any]]) -> int:
    """How many chunks the run kept per question: the config's ``k`` (a whole number), else,
    for a run file without one, its longest stored ranking (0 when it has none)."""
    k = config.get("k")
    if isinstance(k, int) and not isinstance(k, bool) and k >= 0:
        return k
    return max((len(r) for r in rankings.values()), default=0)


def graded_qrels_lines(qrels: Mapping[str, Qrel]) -> list[str]:
    """TREC qrels lines ``qid 0 docno grade`` (no newline) of graded qrels, questions in the
    order given, documents by grade (highest first) then path. Every graded document is
    written, grade 0 included."""
    lines: list[str] = []
    for raw_qid, q in qrels.items():
        qid = _check_id(raw_qid, "question id")
        for d, grade in sorted(q.grades.items(), key=lambda x: (-x[1], x[0])):
            lines.append(f"{qid} 0 {_check_id(d, f'question {qid!r}: document path')} {grade}")
    return lines


def _text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def write_run(path: Path | str, config: str, rankings: Mapping[str, Sequence[Any]], *, order: str = "stored",
              strict_scores: bool = True) -> None:
    """``run_lines`` written atomically to ``path``."""
    write_text(Path(path), _text(run_lines(config, rankings, order=order, strict_scores=strict_scores)))


def write_qrels(path: Path | str, relevant: Mapping[str, Iterable[str]]) -> None:
    """``qrels_lines`` written atomically to ``path``."""
    write_text(Path(path), _text(qrels_lines(relevant)))
