"""Label-queries mode: real queries, a pooled and shuffled candidate list, config-blind.

The lesson's method with TREC-style pooling: each query is searched live by every config of
``workbench.pool_configs``, the top ``workbench.pool_depth`` passages of each are merged
(``pooled``: the union, a passage found by several configs once), and the pool is shuffled with
a seed made of ``workbench.seed`` and the query, so the order says nothing about who found what
and the same query always shows the same list. The page gets a passage's document and text
only, never a config name or a rank, so the labeller cannot favour a config.

The labeller marks the answering span inside a passage, or several spans of one document
(a question with ``spans``), or "nothing here answers it" (an unanswerable question, slice
``unanswerable``, track ``QUERY_TRACK``). Each saved label's pool (depth and configs) goes to
the session log, beside the question; the question file holds only the question's own fields.

Queries come from a plain-text file (one query a line) or JSON lines (an object per line with
a ``query``, ``question`` or ``text`` field), sent by the page as text (``parse_queries``) and
kept in the session log, so a rerun resumes at the first query not labelled or skipped.
"""
from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rag_ablation.core.config import Params
from rag_ablation.data.chunks import Chunk, load_chunks
from rag_ablation.data.questions import UNANSWERABLE
from rag_ablation.data.text import normalize

from rag_ablation.authoring.workbench.checks import Verdict
from rag_ablation.authoring.workbench.session import (MAX_TEXT_CHARS, SLICES, Refused, Workbench, WorkbenchError,
                                                      index_field, locate, next_id, text_field)

QUERY_TRACK = "queries"
"""The track of an unanswerable question from a real query (it has no document to name one)."""
QUERY_FIELDS = ("query", "question", "text")
"""The fields a JSON line of queries may hold its query in, tried in this order."""

Search = Callable[[str], list[tuple[str, str]]]
"""A config's live search: query -> its ranking as (document, passage text), best first."""


@dataclass(frozen=True)
class Candidate:
    """One pooled passage: its document and its text (a chunk's body)."""

    doc: str
    text: str


def parse_queries(text: str) -> list[str]:
    """The queries of a plain-text or JSON-lines file's ``text`` (module docstring), whitespace
    normalized, blank lines and repeats left out, in file order. A line that parses as a JSON
    object without a query field, or a query longer than ``MAX_TEXT_CHARS``, is refused, naming
    its number."""
    out: list[str] = []
    for n, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if not line:
            continue
        query = line
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = None
            if isinstance(obj, dict):
                found = [obj[f] for f in QUERY_FIELDS if isinstance(obj.get(f), str) and obj[f].strip()]
                if not found:
                    raise WorkbenchError(f"queries line {n}: a JSON object without a query; expected a "
                                         f"{', '.join(QUERY_FIELDS)} field holding the query text")
                query = found[0]
        query = normalize(query)
        if len(query) > MAX_TEXT_CHARS:
            raise WorkbenchError(f"queries line {n}: a query of {len(query)} characters; expected at most "
                                 f"{MAX_TEXT_CHARS} (one query a line)")
        if query not in out:
            out.append(query)
    if not out:
        raise WorkbenchError("no queries found: expected one query per line, or JSON lines with a query field")
    return out


def pooled(rankings: Mapping[str, Sequence[tuple[str, str]]], *, depth: int, seed: int, query: str) -> list[Candidate]:
    """The pool of one query (module docstring): the first ``depth`` passages of every ranking
    (config name -> (doc, text) best first), each distinct (doc, normalized text) once, shuffled
    by ``random.Random(f"{seed}:{query}")``. Depends on the rankings' contents, not on the
    configs' names or order (of texts equal once normalized, the smallest is shown)."""
    seen: dict[tuple[str, str], Candidate] = {}
    for ranking in rankings.values():
        for doc, text in ranking[:depth]:
            key = (doc, normalize(text))
            if key not in seen or text < seen[key].text:  # the same text whatever the configs' names
                seen[key] = Candidate(doc, text)
    pool = sorted(seen.values(), key=lambda c: (c.doc, c.text))
    random.Random(f"{seed}:{query}").shuffle(pool)
    return pool


def open_searchers(params: Params, build: Path) -> dict[str, Search]:
    """A live search per config of ``workbench.pool_configs``, over the indexes ``dvc repro``
    built under ``build`` (``chunks/``, ``dense/``, ``bm25/`` of each config's chunking), ranking
    ``pool_depth`` passages."""
    from rag_ablation.retrieval.runner import open_retrievers, retrieve_one

    cfg = params.workbench
    if not cfg.pool_configs:
        raise WorkbenchError("workbench.pool_configs is empty: name the retrieval configs to pool in params.yaml, "
                             "e.g. pool_configs: [dense, bm25, hybrid]")
    problem = cfg.pool_problems(params.retrieval)
    if problem:
        raise WorkbenchError(problem)
    chunks: dict[str, list[Chunk]] = {}
    out: dict[str, Search] = {}
    for name in cfg.pool_configs:
        rc = params.config(name)
        rc = replace(rc, k=cfg.pool_depth, depth=max(rc.depth, cfg.pool_depth))
        assert rc.chunking is not None  # pool_problems refuses apps
        path = build / "chunks" / f"{rc.chunking}.jsonl"
        if not path.is_file():
            raise WorkbenchError(f"no chunks file {path} for pooled config {name}: run `dvc repro` first")
        chunks.setdefault(rc.chunking, load_chunks(path))
        r, _, reason = open_retrievers(rc, chunks=chunks[rc.chunking], dense_dir=build / "dense" / rc.chunking,
                                       bm25_path=build / "bm25" / rc.chunking, embedding=params.embedding,
                                       bm25=params.bm25, faiss=params.faiss)
        if r is None:
            raise WorkbenchError(f"pooled config {name} cannot run: {reason}")
        body = {c.id: (c.doc, c.body) for c in chunks[rc.chunking]}
        out[name] = _search(rc, r, body, retrieve_one)
    return out


def _search(rc: Any, r: Any, body: Mapping[str, tuple[str, str]], retrieve_one: Callable[..., Any]) -> Search:
    return lambda query: [body[c] for c, _ in retrieve_one(rc, query, r)[0]]


class QueryMode:
    """Label real queries against their pool (module docstring). ``searchers`` defaults to
    ``open_searchers`` over the project's build folder, opened on first use."""

    def __init__(self, bench: Workbench, searchers: Mapping[str, Search] | None = None) -> None:
        self.bench = bench
        self._searchers = dict(searchers) if searchers is not None else None
        self._pools: dict[str, list[Candidate]] = {}

    @property
    def searchers(self) -> Mapping[str, Search]:
        if self._searchers is None:
            self._searchers = open_searchers(self.bench.params, self.bench.project.build)
        return self._searchers

    def queries(self) -> list[str]:
        """Every query loaded so far, in load order."""
        out: list[str] = []
        for e in self.bench.log.events("queries"):
            out.extend(q for q in e.get("queries", []) if isinstance(q, str) and q not in out)
        return out

    def load(self, payload: Mapping[str, Any]) -> dict[str, int]:
        """Add the queries of the file text the page sent (``text``); returns how many were new
        and how many there are."""
        have = self.queries()
        new = [q for q in parse_queries(text_field(payload, "text")) if q not in have]
        if new:
            self.bench.log.add("queries", queries=new)
        return {"added": len(new), "total": len(have) + len(new)}

    def done(self) -> set[str]:
        """The queries labelled (a question not undone) or skipped."""
        events = [*self.bench.saved_events(), *self.bench.log.events("query_skip")]
        return {e["query"] for e in events if isinstance(e.get("query"), str)}

    def pool(self, query: str) -> list[Candidate]:
        if query not in self._pools:
            cfg = self.bench.params.workbench
            rankings = {name: search(query) for name, search in self.searchers.items()}
            self._pools[query] = pooled(rankings, depth=cfg.pool_depth, seed=cfg.seed, query=query)
        return self._pools[query]

    def next(self) -> dict[str, Any]:
        """The first query not labelled or skipped, with its pool (``query`` None when all are).
        Nothing here names a config."""
        queries, done = self.queries(), self.done()
        todo = [n for n, q in enumerate(queries) if q not in done]
        out: dict[str, Any] = {"total": len(queries), "done": len(queries) - len(todo), "query": None,
                               "slices": self.bench.slices()}
        if todo:
            n = todo[0]
            ids = [q.id for q in self.bench.questions()]
            out["query"] = {"index": n, "text": queries[n], "suggested_id": next_id(ids, SLICES[0], QUERY_TRACK),
                            "unanswerable_id": next_id(ids, UNANSWERABLE, QUERY_TRACK)}
            out["candidates"] = [{"index": i, "doc": c.doc, "text": c.text} for i, c in enumerate(self.pool(queries[n]))]
        return out

    def _query(self, payload: Mapping[str, Any]) -> str:
        queries = self.queries()
        return queries[index_field(payload, "query", len(queries))]

    def record(self, payload: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        """The question the page's form describes, and its query."""
        query = self._query(payload)
        ident, question = text_field(payload, "id"), text_field(payload, "question") or query
        answer = text_field(payload, "answer")
        if payload.get("unanswerable") is True:
            return {"id": ident, "question": question, "doc": None, "span": None, "answer": answer,
                    "slice": UNANSWERABLE, "track": QUERY_TRACK}, query
        pool = self.pool(query)
        marked = payload.get("spans")
        if not isinstance(marked, list) or not marked:
            raise Refused(["mark the answering span inside a passage (or choose \u201cnothing here answers it\u201d)"])
        spans, docs = [], []
        for m in marked:
            if not isinstance(m, dict):
                raise WorkbenchError("each marked span must be an object with candidate and span")
            c = pool[index_field(m, "candidate", len(pool))]
            span = text_field(m, "span")
            if locate(span, c.text, m.get("span_start")) is None:
                raise Refused([f"the span {span[:40]!r} is not in the passage it was marked in: select it with the mouse"])
            spans.append(span)
            docs.append(c.doc)
        if len(set(docs)) > 1:
            raise Refused([f"the spans come from {len(set(docs))} documents ({', '.join(sorted(set(docs)))}): a "
                           f"question has one document; keep the spans of one"])
        slice_name = text_field(payload, "slice") or SLICES[0]
        one = len(spans) == 1
        record: dict[str, Any] = {"id": ident, "question": question, "doc": docs[0], "span": spans[0] if one else None,
                                  "answer": answer, "slice": slice_name, "track": docs[0].split("/", 1)[0]}
        if not one:
            record["spans"] = spans
        return record, query

    def check(self, payload: Mapping[str, Any]) -> Verdict:
        record, _ = self.record(payload)
        return self.bench.check_question(record)

    def save(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and append the question; the log keeps the query and the pool's depth and configs."""
        record, query = self.record(payload)
        cfg = self.bench.params.workbench
        return self.bench.save_question(record, mode="queries", query=query,
                                        pool={"depth": cfg.pool_depth, "configs": sorted(self.searchers)})

    def skip(self, payload: Mapping[str, Any]) -> None:
        self.bench.log.add("query_skip", query=self._query(payload))
