"""Label audits: extra acceptable spans for questions whose misses turned out to be answered.

The chapter's lesson: read the misses before trusting recall. A "miss" is often a passage that
answers the question in other words, or the same fact stated in another document. The audit
file records such passages, one JSON object per line::

    {"id": "main-runbooks-03", "doc": "guides/settlement.md", "span": "text copied from doc",
     "note": "why this passage answers the question"}

``load_audit`` checks every line (fields, a known answerable question id, a span of at least
``MIN_SPAN_CHARS`` characters that occurs in ``doc`` after whitespace normalization, exactly as
question spans are checked) and raises one ``InvalidData`` naming every bad line.

Audited scoring re-scores the stored rankings without searching again: a ranked chunk is also
relevant to a question when its text contains one of the question's audit spans or any
``window``-character piece of it (the span rule of ``rag_ablation.evaluation.scoring.labels``), matched
against the passages stored in the run file. Only ranked chunks can change a rank, so nothing
else is needed. ``worksheet`` writes, for each question a config missed at ``k``, its top
passages with their ids, to read and decide (``rag-ablation audit-sheet``,
``rag_ablation.commands.audit_sheet``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from rag_ablation.data.corpus import Document
from rag_ablation.core.errors import InvalidData
from rag_ablation.evaluation.scoring.labels import relevant_chunks
from rag_ablation.core.io import numbered_json_lines, string_record_problems
from rag_ablation.data.questions import MIN_SPAN_CHARS, Question
from rag_ablation.data.text import match_text, normalize

FIELDS = ("id", "doc", "span", "note")


@dataclass(frozen=True)
class AuditSpan:
    id: str
    doc: str
    span: str
    note: str


def _problems(obj: Any, questions: Mapping[str, Question], texts: Mapping[str, str]) -> list[str]:
    out = string_record_problems(obj, FIELDS, non_empty=True)
    if out:
        return out
    q = questions.get(obj["id"])
    if q is None:
        out.append(f"unknown question id {obj['id']!r}: audit lines must name a question of the question set")
    elif not q.answerable:
        out.append(f"question {obj['id']!r} is unanswerable: it cannot have acceptable passages")
    if len(normalize(obj["span"])) < MIN_SPAN_CHARS:
        out.append(f"span has {len(normalize(obj['span']))} characters, expected at least {MIN_SPAN_CHARS}")
    elif obj["doc"] not in texts:
        out.append(f"doc {obj['doc']!r} is not in the corpus (give its path under the corpus root, track included)")
    elif match_text(obj["span"]) not in texts[obj["doc"]]:
        out.append(f"span not found in {obj['doc']}: copy it exactly from the document")
    return out


def load_audit(path: Path, questions: Sequence[Question], documents: Sequence[Document]) -> list[AuditSpan]:
    """The audit lines of ``path`` (module docstring); an absent file is an empty audit."""
    path = Path(path)
    if not path.is_file():
        return []
    by_id = {q.id: q for q in questions}
    texts = {d.doc: match_text(d.text) for d in documents}
    spans: list[AuditSpan] = []
    rows, problems = numbered_json_lines(path)
    for n, obj in rows:
        bad = _problems(obj, by_id, texts)
        if bad:
            problems.extend(f"line {n}: {b}" for b in bad)
        else:
            record = cast(dict[str, Any], obj)  # a dict whenever there are no problems
            spans.append(AuditSpan(**{f: record[f] for f in FIELDS}))
    if problems:
        raise InvalidData(f"{path}: {len(problems)} problem(s); fix them and rerun:\n  " + "\n  ".join(problems))
    return spans


def audited_relevant(relevant: Mapping[str, Sequence[str]], passages: Mapping[str, str],
                     audit: Sequence[AuditSpan], *, window: int) -> dict[str, list[str]]:
    """``relevant`` (question id -> chunk ids) plus every stored passage that holds one of the
    question's audit spans (or a ``window`` piece of it). Questions without audit lines keep
    their labels; chunk ids keep the labels' order, then the passages' order."""
    if not audit:
        return {q: list(ids) for q, ids in relevant.items()}
    by_q: dict[str, list[str]] = {}
    for a in audit:
        by_q.setdefault(a.id, []).append(a.span)
    # one pass over the passages for every audit span at once (a question's spans: the union)
    hits = relevant_chunks(by_q, ((c, "", t) for c, t in passages.items()), window=window)
    extra = {qid: set(ids) for qid, ids in hits.items()}
    out = {q: list(ids) for q, ids in relevant.items()}
    for qid, ids in extra.items():
        have = set(out.get(qid, ()))
        out[qid] = out.get(qid, []) + [c for c in passages if c in ids and c not in have]
    return out


def worksheet(config: str, records: Sequence[Mapping[str, Any]], passages: Mapping[str, str],
              rows: Sequence[Mapping[str, Any]], questions: Sequence[Question], *, k: int = 5) -> str:
    """Markdown: for every answerable question whose first relevant rank in ``rows`` (this
    config's scores) is not within ``k``, the question, its span, and the top ``k`` passages
    with their chunk ids, to read and decide whether one answers it."""
    ranking = {r["id"]: [x["chunk"] for x in r["ranking"]] for r in records}
    missed = {r["id"] for r in rows if r["config"] == config and r["answerable"]
              and (r["first_relevant_rank"] is None or r["first_relevant_rank"] > k)}
    lines = [f"# Audit worksheet: {config}, questions missed at {k}", "",
             f"{len(missed)} question(s). For each, read the passages; if one truly answers the question, add a line "
             "to data/labels/audit.jsonl with the question id, the passage's document, a span copied from it, "
             "and a note.", ""]
    for q in questions:
        if q.id not in missed:
            continue
        lines += [f"## {q.id} ({q.slice})", "", f"**Question:** {q.question}", "",
                  f"**Labelled span** ({q.doc}): {' | '.join(q.relevant_spans)}", "", f"**Reference answer:** {q.answer}", ""]
        for rank, cid in enumerate(ranking.get(q.id, [])[:k], start=1):
            text = " ".join(passages.get(cid, "").split())
            lines += [f"{rank}. `{cid}`", "", f"   > {text}", ""]
    return "\n".join(lines).rstrip() + "\n"
