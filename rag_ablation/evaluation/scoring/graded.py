"""Graded document relevance (BEIR's qrels) and the measures BEIR reports: nDCG@10, recall@100.

A data set imported from BEIR judges documents, not spans, often several per query and with
grades (``rag-ablation import beir`` keeps every judged document with its score in its gold
file, ``questions.gold.jsonl``, grade 0 included: judged, not relevant; the ``dataset`` stage
copies it to ``<data>/qrels.jsonl``). For such a data set the labels of a question are its
qrels:

- a chunk is relevant when its document (the part of the chunk id before ``#``) has grade > 0;
  ``hit@k``, ``RR@10`` and ``first_relevant_rank`` use that rule, and ``n_relevant`` counts
  relevant *documents*;
- the stored chunk ranking becomes a document ranking by keeping each document at the rank of
  its first chunk (``document_ranking``; "MaxP", the usual passage-to-document rule), with the
  question's ``exclude`` documents removed (BEIR's ``ignore_identical_ids``: a query that is also
  a corpus entry never retrieves itself). Ranks past the stored ranking count as gain 0: where
  one document has several chunks, the first ``k`` stored chunks may hold fewer than 10
  documents, so set ``k`` well above 10 for numbers comparable with published ones;
- nDCG@k (``ndcg_at``), BEIR's definition as pytrec_eval's ``ndcg_cut``: gain = the grade,
  ``DCG@k = sum over ranks i <= k of grade(d_i) / log2(i + 1)``, divided by the DCG of the ideal
  order of all judged grades (descending, cut at k). A question with no document of grade > 0
  scores 0 (TREC tools leave such a query out; the project keeps it, as ``measures`` does);
- recall@k (``recall_at``): ``|{relevant documents in the first k}| / |{relevant documents}|``.
  It is only defined when the stored ranking went that deep: a config that keeps fewer than
  ``k`` chunks (``retrieval.<name>.k``) gets no recall@100 (empty, "unavailable"), because its
  missing ranks are unknown, not misses.

The same file and rules feed ``rag-ablation export-trec``'s graded export, so ir_measures'
``nDCG@10`` and ``R@100`` on the exported files equal these per question.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_ablation.core.errors import InvalidData
from rag_ablation.core.io import numbered_json_lines

NDCG_K = 10
DEEP_RECALL_K = 100
GRADED_COLUMNS = (f"ndcg_at_{NDCG_K}", f"recall_at_{DEEP_RECALL_K}")
"""The per-question columns a graded data set adds to the retrieval scores."""


def graded_columns(rows: Sequence[Mapping[str, object]]) -> list[str]:
    """The columns of ``GRADED_COLUMNS`` that every answerable row of ``rows`` holds: none for a
    span-labelled data set, no ``recall_at_100`` for a config keeping fewer than 100 chunks (its
    cells are empty). The one rule for which graded measures are reported."""
    answerable = [r for r in rows if r.get("answerable")]
    return [c for c in GRADED_COLUMNS if answerable and all(r.get(c) is not None for r in answerable)]


@dataclass(frozen=True)
class Qrel:
    """One question's judged documents (path -> grade, each >= 0; grade 0 is judged not
    relevant: counted nowhere but in the exported qrels) and the documents it must not retrieve
    (BEIR's identical ids)."""

    grades: Mapping[str, int]
    exclude: frozenset[str] = frozenset()


def doc_of(chunk_id: str) -> str:
    """The document path of a chunk id (``guide/a.md#3`` -> ``guide/a.md``)."""
    return chunk_id.rsplit("#", 1)[0]


def _qrel(n: int, obj: object) -> tuple[str, Qrel] | str:
    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not isinstance(obj.get("gold"), list):
        return f"line {n}: expected {{\"id\": str, \"gold\": [{{\"doc\": str, \"score\": int}}, ...], \"exclude\": [str]}}"
    grades: dict[str, int] = {}
    for g in obj["gold"]:
        if (not isinstance(g, dict) or not isinstance(g.get("doc"), str) or isinstance(g.get("score"), bool)
                or not isinstance(g.get("score"), int) or g["score"] < 0):
            return (f"line {n}: every gold entry needs a document path and an integer score >= 0 (0: judged not "
                    f"relevant), found {g!r}")
        if g["doc"] in grades:
            return f"line {n}: document {g['doc']!r} is graded twice for question {obj['id']!r}"
        grades[g["doc"]] = g["score"]
    exclude = obj.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(x, str) for x in exclude):
        return f"line {n}: 'exclude' must be a list of document paths"
    return obj["id"], Qrel(grades, frozenset(exclude))


def read_qrels(path: Path | str) -> dict[str, Qrel]:
    """Question id -> ``Qrel`` of a gold file (one JSON object per line, as the BEIR importer
    writes it). A missing or empty file is no qrels (``{}``: the data set is span-labelled).
    Every malformed line, and a question listed twice, raises one ``InvalidData`` naming the
    file and lines."""
    path = Path(path)
    if not path.is_file():
        return {}
    rows, problems = numbered_json_lines(path)
    out: dict[str, Qrel] = {}
    for n, obj in rows:
        got = _qrel(n, obj)
        if isinstance(got, str):
            problems.append(got)
        elif got[0] in out:
            problems.append(f"line {n}: question {got[0]!r} is listed twice")
        else:
            out[got[0]] = got[1]
    if problems:
        raise InvalidData(f"qrels file {path}: {len(problems)} problem(s); re-import the data set "
                          f"(`rag-ablation import beir ... --overwrite`) or fix the lines:\n  " + "\n  ".join(problems[:20]))
    return out


def dumps_qrels(qrels: Mapping[str, Qrel]) -> str:
    """The gold-file text of ``qrels`` (sorted keys, grades highest first then by path)."""
    lines = []
    for qid, q in qrels.items():
        gold = [{"doc": d, "score": s} for d, s in sorted(q.grades.items(), key=lambda x: (-x[1], x[0]))]
        lines.append(json.dumps({"exclude": sorted(q.exclude), "gold": gold, "id": qid}, ensure_ascii=False) + "\n")
    return "".join(lines)


def document_ranking(chunks: Sequence[str], exclude: frozenset[str] = frozenset()) -> list[str]:
    """Documents in the order of their first chunk in ``chunks``, without ``exclude``."""
    seen: dict[str, None] = {}
    for c in chunks:
        d = doc_of(c)
        if d not in exclude:
            seen.setdefault(d, None)
    return list(seen)


def ndcg_at(docs: Sequence[str], grades: Mapping[str, int], k: int = NDCG_K) -> float:
    """nDCG@k of a document ranking (module docstring); 0 when nothing is graded above 0."""
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    if not ideal:
        return 0.0
    dcg = sum(grades.get(d, 0) / math.log2(i + 1) for i, d in enumerate(docs[:k], start=1))
    return dcg / sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))


def recall_at(docs: Sequence[str], grades: Mapping[str, int], k: int = DEEP_RECALL_K) -> float:
    """Share of the documents graded above 0 found in the first ``k``; 0 when there are none."""
    relevant = {d for d, g in grades.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(docs[:k])) / len(relevant)


def relevant_chunks(chunks: Sequence[str], qrel: Qrel) -> list[str]:
    """The chunks of ``chunks`` whose document has grade > 0 (and is not excluded)."""
    return [c for c in chunks if qrel.grades.get(doc_of(c), 0) > 0 and doc_of(c) not in qrel.exclude]


def graded_scores(chunks: Sequence[str], qrel: Qrel, *, depth: int) -> dict[str, float | None]:
    """``ndcg_at_10`` and ``recall_at_100`` of one stored chunk ranking that kept ``depth``
    chunks at most; recall@100 is None when ``depth < 100`` (module docstring)."""
    docs = document_ranking(chunks, qrel.exclude)
    return {f"ndcg_at_{NDCG_K}": ndcg_at(docs, qrel.grades),
            f"recall_at_{DEEP_RECALL_K}": recall_at(docs, qrel.grades) if depth >= DEEP_RECALL_K else None}
