"""Span labels: which chunks are relevant to which question, decided by text, not chunk number.

The rule (the chapter's): a chunk is relevant to a question if its body contains the question's
span, or any window of ``window`` consecutive characters of it, after whitespace normalization
(every run of whitespace becomes one space; ends stripped; case kept). A span shorter than
``window`` must occur whole. The added heading line of a chunk is never matched (only
``Chunk.body``). Because labels are defined by text, the same question file labels every
chunking.

A question with several acceptable spans (``spans``) is labelled with the union: a chunk is
relevant if it matches any of them by the rule above.

With ``same_doc_only`` a chunk must also come from the question's own document, which keeps
short, common windows from matching unrelated documents (needed on corpora such as COVID-QA).

Matching is one pass over every chunk body per distinct window length, looking each slice up in
a table of the questions' windows: O(total characters), not O(chunks x windows).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rag_ablation.data.text import match_text

def span_windows(span: str, window: int) -> set[str]:
    """All ``window``-character substrings of the normalized span; the whole span if shorter
    than ``window``; empty for an empty span."""
    if window <= 0:
        raise ValueError(f"window must be positive, got {window}")
    s = match_text(span)
    if not s:
        return set()
    width = min(window, len(s))
    return {s[i : i + width] for i in range(len(s) - width + 1)}


def relevant_chunks(
    spans: Mapping[str, str | Sequence[str]],
    bodies: Iterable[tuple[str, str, str]],
    *,
    window: int = 30,
    span_docs: Mapping[str, str] | None = None,
) -> dict[str, list[str]]:
    """For each question id in ``spans`` (id -> span, or id -> list of spans), the ids of
    relevant chunks: those matching the span, or any span of the list (the union).

    ``bodies`` yields (chunk id, chunk doc, chunk body). ``span_docs`` (id -> doc), when given,
    restricts each question to chunks of its own document. Every question id appears in the
    result; the chunk ids keep the order of ``bodies``.
    """
    # one window table per document when restricted (a chunk only scans its own document's
    # questions), else one shared table under the key None
    tables: dict[str | None, dict[int, dict[str, list[str]]]] = {}
    for qid, given in spans.items():
        owner = span_docs.get(qid) if span_docs is not None else None
        by_width = tables.setdefault(owner, {})
        windows = set().union(*(span_windows(s, window) for s in ([given] if isinstance(given, str) else given)))
        for w in windows:
            by_width.setdefault(len(w), {}).setdefault(w, []).append(qid)
    out: dict[str, list[str]] = {qid: [] for qid in spans}
    for cid, cdoc, body in bodies:
        chunk_tables = tables.get(cdoc if span_docs is not None else None)
        if not chunk_tables:
            continue
        text = match_text(body)
        found: set[str] = set()
        for width, table in chunk_tables.items():
            for i in range(len(text) - width + 1):
                hit = table.get(text[i : i + width])
                if hit:
                    found.update(hit)
        for qid in sorted(found):
            out[qid].append(cid)
    return out
