"""What a team's app returns, turned into the passages a run file stores.

The contract (docs/own-app.md): a retriever returns a list of hits in rank order, best first;
each hit is a mapping with ``text`` and ``doc`` (required), ``id`` and ``score`` (optional). Two
frameworks' own objects are accepted as they come, recognised by their attributes (neither
package is imported here):

- LangChain ``Document`` (``page_content``, ``metadata``, ``id``), alone or as the
  ``(Document, score)`` pair of ``similarity_search_with_score``; the document is
  ``metadata["doc"]``, else ``metadata["source"]``; the score ``metadata["score"]`` if any;
- LlamaIndex ``NodeWithScore`` (``node`` with ``get_content()``, ``metadata`` and ``node_id``;
  ``score``) and a bare node; the document is ``metadata["doc"]``, else ``"file_path"``, else
  ``"source"``.

A passage's id in the run file is ``DOC#ID``, so the part before the last ``#`` is its document
everywhere a chunk id's is (``rag_ablation.evaluation.scoring.graded.doc_of``): the hit's own id
when it already reads ``DOC#...``, else ``DOC#`` and the hit's id, else ``DOC#`` and the first
12 hex digits of the sha256 of its text. Two hits of one ranking with the same id are refused.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_ablation.core.errors import UserError

DOC_KEYS = ("doc", "file_path", "source")
"""Metadata keys read, in order, for a framework object's document."""

CONTRACT = ('a list of hits in rank order, each a mapping with "text" and "doc" (strings) and optional "id" and '
            '"score", or LangChain Documents, (Document, score) pairs or LlamaIndex NodeWithScore objects')


class BadReply(UserError):
    """What an app returned does not follow the contract; the message names the question."""


@dataclass(frozen=True)
class Passage:
    """One hit: its run-file id (``DOC#...``), document, text and score (None: the app gave none)."""

    id: str
    doc: str
    text: str
    score: float | None


def passage_id(doc: str, given: str | None, text: str) -> str:
    """The run-file id of a hit (module docstring)."""
    if given is not None and given.rsplit("#", 1)[0] == doc and "#" in given:
        return given
    if given is not None:
        return f"{doc}#{given}"
    return f"{doc}#{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"


def _metadata_doc(meta: Any) -> Any:
    if isinstance(meta, Mapping):
        for key in DOC_KEYS:
            if meta.get(key) is not None:
                return meta[key]
    return None


def as_mapping(hit: Any) -> Any:
    """A hit as a plain mapping with text, doc, id and score, whatever form it came in; a value
    of another kind is returned unchanged (the caller says what is wrong with it)."""
    if isinstance(hit, Mapping):
        return hit
    if isinstance(hit, tuple) and len(hit) == 2 and hasattr(hit[0], "page_content"):
        doc, score = hit
        return {**as_mapping(doc), "score": score}
    if hasattr(hit, "page_content"):  # LangChain Document
        meta = getattr(hit, "metadata", None) or {}
        return {"text": hit.page_content, "doc": _metadata_doc(meta), "id": getattr(hit, "id", None),
                "score": meta.get("score") if isinstance(meta, Mapping) else None}
    if hasattr(hit, "node") and hasattr(hit, "score"):  # LlamaIndex NodeWithScore
        return {**as_mapping(hit.node), "score": hit.score}
    if hasattr(hit, "get_content") and hasattr(hit, "node_id"):  # a LlamaIndex node
        return {"text": hit.get_content(), "doc": _metadata_doc(getattr(hit, "metadata", None)), "id": hit.node_id,
                "score": None}
    return hit


def _shown(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def to_passages(hits: Any, *, qid: str, app: str) -> list[Passage]:
    """The passages of one question's reply, in rank order. Raises ``BadReply`` naming the
    question, what came back and what was expected, for a reply that is not a list, a hit
    without text or doc, an id or score of the wrong type, or two hits with one id."""
    if isinstance(hits, (str, bytes, Mapping)) or not isinstance(hits, Sequence):
        raise BadReply(f"app {app!r}, question {qid}: returned {_shown(hits)}; expected {CONTRACT}")
    out: list[Passage] = []
    seen: set[str] = set()
    for rank, raw in enumerate(hits, 1):
        hit = as_mapping(raw)
        where = f"app {app!r}, question {qid}, hit {rank}"
        if not isinstance(hit, Mapping):
            raise BadReply(f"{where}: got {_shown(raw)}; expected {CONTRACT}")
        text, doc, given, score = hit.get("text"), hit.get("doc"), hit.get("id"), hit.get("score")
        if not isinstance(text, str):
            raise BadReply(f"{where}: \"text\" is {_shown(text)}; expected the passage's text as a string")
        if not isinstance(doc, str) or not doc:
            raise BadReply(f"{where}: \"doc\" is {_shown(doc)}; expected the passage's document as a non-empty "
                           f"string: its path under the data set's corpus folder (guide/a.md)")
        if given is not None and not isinstance(given, (str, int)):
            raise BadReply(f"{where}: \"id\" is {_shown(given)}; expected a string, a number or nothing")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                                  or not math.isfinite(score)):
            raise BadReply(f"{where}: \"score\" is {_shown(score)}; expected a finite number or nothing")
        pid = passage_id(doc, None if given is None else str(given), text)
        if pid in seen:
            raise BadReply(f"{where}: id {pid!r} was already returned at a higher rank; expected each passage once "
                           f"per question")
        seen.add(pid)
        out.append(Passage(id=pid, doc=doc, text=text, score=None if score is None else float(score)))
    return out


def ranking_scores(passages: Sequence[Passage]) -> list[float]:
    """The score stored with each passage: the app's, or, for an app that gives none, ``1 / rank``
    (decreasing, so the stored order reads as a ranking). Rounded as the built-in runs' are."""
    return [round(p.score if p.score is not None else 1.0 / rank, 6) for rank, p in enumerate(passages, 1)]
