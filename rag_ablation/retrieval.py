"""Retrieval configurations: parsing, validation, and running one over a question set.

A config (one entry of ``retrieval:`` in params.yaml) has:

``chunking``
    Name of an entry of ``chunkings:``.
``method``
    ``dense`` (FAISS over MiniLM embeddings), ``bm25``, or ``hybrid`` (both, fused).
``fusion``
    For ``hybrid``: ``rrf`` or ``append`` (see ``rag_ablation.fusion``). ``rrf_k`` (default 60)
    and optional ``weights`` ``{dense: w, bm25: w}`` tune RRF.
``depth``
    Candidates taken from each retriever before fusion and rerank (default 100).
``rerank``
    Null, or ``{model: NAME_OR_PATH, depth: N}``: the top N fused candidates are re-scored by a
    cross-encoder and put first in its order; the rest keep their order after them.
``k``
    Length of the stored ranking (default 10; must be at least 10 for recall@10 and MRR@10).
``query``
    Name of an entry of ``query_transforms:`` (default ``none``: the question as written).
    ``rewrite`` sends an LLM-rewritten question and ``hyde`` an LLM-written hypothetical
    passage to the first-stage retrievers (dense and BM25 alike); a reranker still scores the
    original question.

Running a config times each step per question (query embedding, FAISS search, BM25 search,
fusion, rerank) with ``time.perf_counter``; those times go to a leaf latency file, never into
the ranking output, which stays byte-for-byte deterministic.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_ablation.bm25 import Scorer, get_tokenizer, make_scorer, top_k
from rag_ablation.chunking import Chunk
from rag_ablation.embeddings import encode, load_model
from rag_ablation.fusion import FUSIONS, fuse
from rag_ablation.indexes import load_bm25, load_dense, search_dense
from rag_ablation.metrics import first_relevant_rank, percentiles_ms
from rag_ablation.rerank import Reranker, RerankerUnavailable, load_reranker

METHODS = ("dense", "bm25", "hybrid")
STEPS = ("query_embed", "faiss_search", "bm25_search", "fusion", "rerank")


class ConfigError(ValueError):
    """A retrieval config in params.yaml that cannot run; the message names the key."""


@dataclass(frozen=True)
class RetrievalConfig:
    name: str
    chunking: str
    method: str
    fusion: str = "rrf"
    rrf_k: float = 60
    weights: Mapping[str, float] = field(default_factory=dict)
    depth: int = 100
    rerank: Mapping[str, Any] | None = None
    k: int = 10
    query: str = "none"

    @property
    def uses_dense(self) -> bool:
        return self.method in ("dense", "hybrid")

    @property
    def uses_bm25(self) -> bool:
        return self.method in ("bm25", "hybrid")


_KNOWN = {"chunking", "method", "fusion", "rrf_k", "weights", "depth", "rerank", "k", "query"}


def parse_config(
    name: str, spec: Mapping[str, Any], chunkings: Mapping[str, Any], transforms: Mapping[str, Any] | None = None
) -> RetrievalConfig:
    """Validate one ``retrieval.<name>`` entry against the named chunkings and query
    transforms; every problem raises ``ConfigError`` naming the key."""
    where = f"retrieval.{name}"
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where} must be a mapping, found {type(spec).__name__}")
    unknown = sorted(set(spec) - _KNOWN)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; expected some of {', '.join(sorted(_KNOWN))}")
    for req in ("chunking", "method"):
        if req not in spec:
            raise ConfigError(f"{where}: missing key {req!r}")
    if spec["chunking"] not in chunkings:
        raise ConfigError(
            f"{where}.chunking is {spec['chunking']!r}; expected one of the chunkings: {', '.join(sorted(chunkings))}"
        )
    if spec["method"] not in METHODS:
        raise ConfigError(f"{where}.method is {spec['method']!r}; expected one of: {', '.join(METHODS)}")
    fusion = spec.get("fusion") or "rrf"
    if fusion not in FUSIONS:
        raise ConfigError(f"{where}.fusion is {fusion!r}; expected one of: {', '.join(sorted(FUSIONS))}")
    k = int(spec.get("k", 10))
    depth = int(spec.get("depth", 100))
    if k < 10:
        raise ConfigError(f"{where}.k is {k}; expected at least 10 (recall@10 and MRR@10 need ten results)")
    if depth < k:
        raise ConfigError(f"{where}.depth is {depth}; expected at least k={k}")
    weights = dict(spec.get("weights") or {})
    bad = sorted(set(weights) - {"dense", "bm25"})
    if bad:
        raise ConfigError(f"{where}.weights has key(s) {', '.join(bad)}; expected dense and/or bm25")
    query = spec.get("query") or "none"
    if transforms is not None and query not in transforms:
        raise ConfigError(f"{where}.query is {query!r}; expected one of the query_transforms: {', '.join(sorted(transforms))}")
    rerank = spec.get("rerank")
    if rerank is not None:
        if not isinstance(rerank, Mapping) or "model" not in rerank:
            raise ConfigError(f"{where}.rerank must be null or a mapping with 'model' and 'depth'")
        if int(rerank.get("depth", 20)) < 1:
            raise ConfigError(f"{where}.rerank.depth must be at least 1")
    return RetrievalConfig(
        name=name, chunking=spec["chunking"], method=spec["method"], fusion=fusion,
        rrf_k=float(spec.get("rrf_k", 60)), weights=weights, depth=depth,
        rerank=dict(rerank) if rerank is not None else None, k=k, query=query,
    )


@dataclass
class Retrievers:
    """What a config may need, already loaded. ``embed_query`` maps a question to a normalized
    vector; ``chunk_text`` gives the indexed text of a chunk id (for the reranker)."""

    dense_index: Any = None
    dense_ids: Sequence[str] | None = None
    embed_query: Callable[[str], np.ndarray] | None = None
    bm25: Scorer | None = None
    bm25_ids: Sequence[str] | None = None
    tokenizer: str = "regex"
    reranker: Reranker | None = None
    chunk_text: Mapping[str, str] | None = None


def open_retrievers(
    cfg: RetrievalConfig,
    *,
    chunks: Sequence[Chunk],
    dense_dir: Any,
    bm25_path: Any,
    embedding: Mapping[str, Any],
    bm25: Mapping[str, Any],
) -> tuple[Retrievers | None, str, str | None]:
    """Load only what ``cfg`` uses: the FAISS index and embedding model (dense, hybrid), the
    BM25 scorer rebuilt from its stored tokens (bm25, hybrid), the reranker (rerank).

    Returns (retrievers, status, reason). Status ``ok``; ``unavailable`` when the reranker
    cannot be loaded (retrievers None, reason says why and how to fix it); ``placeholder``
    when the reranker's head is untrained (rankings usable for plumbing and latency only).
    """
    threads = int(embedding.get("threads", 1))
    r = Retrievers(tokenizer=str(bm25["tokenizer"]), chunk_text={c.id: c.text for c in chunks})
    status, reason = "ok", None
    if cfg.rerank is not None:
        try:
            r.reranker = load_reranker(str(cfg.rerank["model"]), threads=threads,
                                       allow_placeholder=bool(cfg.rerank.get("allow_placeholder", False)))
        except RerankerUnavailable as e:
            return None, "unavailable", str(e)
        if r.reranker.placeholder:
            status = "placeholder"
            reason = f"reranker {cfg.rerank['model']!r} has an untrained head: rankings are for plumbing and latency only"
    if cfg.uses_dense:
        r.dense_index, r.dense_ids, _ = load_dense(dense_dir)
        model = load_model(str(embedding["model"]), threads=threads)
        r.embed_query = lambda text: encode(model, [text])[0]
    if cfg.uses_bm25:
        stored = load_bm25(bm25_path)
        r.bm25_ids = stored["chunk_ids"]
        r.bm25 = make_scorer(str(bm25["impl"]), stored["tokens"], k1=float(bm25["k1"]), b=float(bm25["b"]),
                             epsilon=float(bm25["epsilon"]))
    return r, status, reason


def step_latency(times: Sequence[Mapping[str, float]]) -> dict:
    """P50/P95/P99 (ms) per step that ran, plus the per-question total; ``n_questions``."""
    out: dict[str, Any] = {"n_questions": len(times)}
    if times:
        out["total"] = percentiles_ms([sum(t.values()) for t in times])
    for step in STEPS:
        p = percentiles_ms([t[step] for t in times if step in t])
        if p:
            out[step] = p
    return out


def retrieve_one(
    cfg: RetrievalConfig, question: str, r: Retrievers, *, rerank_query: str | None = None
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """Ranking of (chunk id, score), best first, at most ``cfg.k`` long, and step times in
    seconds (only the steps this config runs). ``question`` goes to the first-stage
    retrievers; the reranker scores ``rerank_query`` (default: ``question``)."""
    times: dict[str, float] = {}
    lists: list[list[tuple[str, float]]] = []
    names: list[str] = []
    if cfg.uses_dense:
        assert r.embed_query is not None and r.dense_index is not None and r.dense_ids is not None
        t0 = time.perf_counter()
        qv = r.embed_query(question)
        t1 = time.perf_counter()
        hits = search_dense(r.dense_index, qv, cfg.depth)
        t2 = time.perf_counter()
        times["query_embed"], times["faiss_search"] = t1 - t0, t2 - t1
        lists.append([(r.dense_ids[i], s) for i, s in hits])
        names.append("dense")
    if cfg.uses_bm25:
        assert r.bm25 is not None and r.bm25_ids is not None
        t0 = time.perf_counter()
        scores = r.bm25.scores(get_tokenizer(r.tokenizer)(question))
        hits = [(i, s) for i, s in top_k(scores, cfg.depth) if s > 0]
        times["bm25_search"] = time.perf_counter() - t0
        lists.append([(r.bm25_ids[i], s) for i, s in hits])
        names.append("bm25")
    if cfg.method == "hybrid":
        t0 = time.perf_counter()
        ids = [[c for c, _ in lst] for lst in lists]
        opts: dict[str, Any] = {}
        if cfg.fusion == "rrf":
            opts = {"k": cfg.rrf_k, "weights": [float(cfg.weights.get(n, 1.0)) for n in names]}
        ranking = fuse(cfg.fusion, ids, **opts)
        times["fusion"] = time.perf_counter() - t0
    else:
        ranking = lists[0]
    if cfg.rerank is not None:
        assert r.reranker is not None and r.chunk_text is not None
        depth = int(cfg.rerank.get("depth", 20))
        head, tail = ranking[:depth], ranking[depth:]
        t0 = time.perf_counter()
        s = r.reranker.scores(rerank_query or question, [r.chunk_text[c] for c, _ in head])
        times["rerank"] = time.perf_counter() - t0
        order = sorted(range(len(head)), key=lambda i: (-s[i], i))
        ranking = [(head[i][0], s[i]) for i in order] + tail
    return ranking[: cfg.k], times


def run_config(
    cfg: RetrievalConfig,
    questions: Sequence[Any],
    relevant: Mapping[str, Sequence[str]],
    r: Retrievers,
    *,
    queries: Mapping[str, str] | None = None,
    progress: Callable[[Any], Any] = lambda it: it,
) -> tuple[list[dict], list[dict[str, float]]]:
    """Rank every question, unanswerable ones included (generation needs their passages;
    recall leaves them out). ``queries`` maps a question id to the text sent to the first-stage
    retrievers (a rewritten question or a HyDE passage); the reranker always scores the
    original question. Returns per-question records (id, slice, answerable, ranking of
    ``{"chunk": id, "score": s}`` with scores rounded to 6 decimals, ``first_relevant_rank``,
    ``n_relevant``) in question order, and the per-question step times."""
    records: list[dict] = []
    times: list[dict[str, float]] = []
    for q in progress(list(questions)):
        text = queries.get(q.id, q.question) if queries else q.question
        ranking, t = retrieve_one(cfg, text, r, rerank_query=q.question)
        ids = [c for c, _ in ranking]
        rel = relevant.get(q.id, ()) if q.answerable else ()
        records.append(
            {
                "id": q.id,
                "slice": q.slice,
                "answerable": bool(q.answerable),
                "ranking": [{"chunk": c, "score": round(s, 6)} for c, s in ranking],
                "first_relevant_rank": first_relevant_rank(ids, rel),
                "n_relevant": len(rel),
            }
        )
        times.append(t)
    return records, times
