"""Running one retrieval configuration over a question set.

A config is a ``rag_ablation.core.config.RetrievalConfig`` (one entry of ``retrieval:`` in
params.yaml, checked and with its defaults filled when params are read). ``query`` names a query
transform: ``rewrite`` sends an LLM-rewritten question and ``hyde`` an LLM-written hypothetical
passage to the first-stage retrievers (dense and BM25 alike); a reranker still scores the
original question.

Run files hold rankings only, never labels: scoring them against span labels is
``rag_ablation.evaluation.scoring.scores``'s job, so a label change never reruns a search.

Running a config times each step per question (query embedding, FAISS search, BM25 search,
fusion, rerank) with ``time.perf_counter``; those times go to a leaf latency file, never into
the ranking output, which stays byte-for-byte deterministic.

Every config is timed the same way (``support.latency_rule.WARM``, the rule the reports read): before
the first timed question, one untimed pass over the first question loads the reranker and
touches the indexes' pages; then each question's steps are timed one by one. A dense or hybrid
config's ``query_embed`` is one warm single-text embedding of the text it searches with. In the
pipeline it is measured once per query transform by ``query_vectors@TRANSFORM``
(``retrieval.query_vectors``) and each config is charged that question's time
(``embed_seconds``), so no config is charged the model's loading or spared the embedding because
another config embedded its texts first, and no config loads the model to time it. Without
``embed_seconds`` (the workbench, benchmarks) the config times ``Retrievers.embed_query`` itself.
With more than ``latency_rule.TIMED_QUESTIONS`` questions, only that many, spread evenly and the
same in every config, are timed (``latency_rule.timed``); the latency file says how many
(``n_timed``).

The vectors it searches with are given by ``Retrievers.embed_many``: in the pipeline the
transform's stored query vectors, embedded through the embedding cache the chunks use (keyed by
model and text) in batches (``query_vectors.embed_queries``), so the rankings never depend on
which config ran first or on a batch's make-up; a timed single-text vector is never used for the
search.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_ablation.data.chunks import Chunk
from rag_ablation.core.config import (DEFAULT_FUSION, Bm25Config, EmbeddingConfig, FaissConfig, RetrievalConfig,
                                     field_defaults)
from rag_ablation.retrieval.bm25 import Scorer, open_bm25, top_k
from rag_ablation.retrieval.faiss_index import set_search_params
from rag_ablation.retrieval.fusion import fuse
from rag_ablation.retrieval.indexes import load_dense, search_dense
from rag_ablation.retrieval.plan import check_built
from rag_ablation.retrieval.query_vectors import query_embedder
from rag_ablation.retrieval.rerank import Reranker, RerankerUnavailable, load_reranker
from rag_ablation.data.text import get_tokenizer
from rag_ablation.support.latency_rule import TIMED_RUNS, WARM, timed
from rag_ablation.support.timing import percentiles_ms

STEPS = ("query_embed", "faiss_search", "bm25_search", "fusion", "rerank")

@dataclass
class Retrievers:
    """What a config may need, already loaded. ``embed_many`` maps query texts to normalized
    vectors, one row each (batched and cached, ``query_vectors.embed_queries``); ``embed_query`` maps one
    text (used when there is no ``embed_many``); ``chunk_text`` gives the indexed text of a chunk
    id (for the reranker)."""

    dense_index: Any = None
    dense_ids: Sequence[str] | None = None
    embed_query: Callable[[str], np.ndarray] | None = None
    embed_many: Callable[[Sequence[str]], np.ndarray] | None = None
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
    embedding: EmbeddingConfig,
    bm25: Bm25Config,
    faiss: FaissConfig | None = None,
    stored_vectors: Callable[[Sequence[str]], np.ndarray] | None = None,
) -> tuple[Retrievers | None, str, str | None]:
    """Load only what ``cfg`` uses: the FAISS index with ``faiss``'s search-time settings
    (nprobe, ef_search; None: the defaults of ``FaissConfig``) set on it and the embedding model (dense, hybrid), the BM25 scorer
    (bm25, hybrid: rebuilt from its stored tokens, or memory-mapped with ``bm25.mmap``), the reranker (rerank).
    Given ``stored_vectors`` (``QueryVectors.lookup``: the query vectors ``query_vectors@TRANSFORM``
    stored), a dense config searches with those and gets no query embedder (nothing to time it
    with: its times are charged, ``run_config``'s ``embed_seconds``).

    Returns (retrievers, status, reason). Status ``ok``; ``unavailable`` when the reranker
    cannot be loaded (retrievers None, reason says why and how to fix it); ``placeholder``
    when the reranker's head is untrained (rankings usable for plumbing and latency only).
    """
    threads = embedding.threads
    r = Retrievers(tokenizer=bm25.tokenizer, chunk_text={c.id: c.text for c in chunks})
    status, reason = "ok", None
    if cfg.rerank is not None:
        try:
            r.reranker = load_reranker(cfg.rerank.model, threads=threads,
                                       allow_placeholder=cfg.rerank.allow_placeholder)
        except RerankerUnavailable as e:
            return None, "unavailable", str(e)
        if r.reranker.placeholder:
            status = "placeholder"
            reason = f"reranker {cfg.rerank.model!r} has an untrained head: rankings are for plumbing and latency only"
    if cfg.uses_dense:
        check_built(dense_dir, kind="dense", config=cfg.name)
        r.dense_index, r.dense_ids, _ = load_dense(dense_dir)
        set_search_params(r.dense_index, faiss or FaissConfig())
        if stored_vectors is not None:  # the transform's stored vectors: no model here
            r.embed_many = stored_vectors
        else:
            embedder = query_embedder(embedding)
            r.embed_query, r.embed_many = embedder.one, embedder.many
    if cfg.uses_bm25:
        check_built(bm25_path, kind="bm25", config=cfg.name)
        r.bm25, r.bm25_ids = open_bm25(bm25_path, bm25)
    return r, status, reason


def resolved_config(cfg: RetrievalConfig, *, embedding: EmbeddingConfig, bm25: Bm25Config,
                    faiss: FaissConfig) -> dict[str, Any]:
    """The config as the run file records it: ``cfg.resolved()`` (every default filled in), plus
    ``embedding_model`` (the embedding model; None unless the config is dense or hybrid) and
    ``bm25`` (``Bm25Config.scoring``; None unless it is bm25 or hybrid). A dense or hybrid config
    also records ``embedding_backend`` when the embedding backend is not ``EmbeddingConfig``'s
    default, and ``faiss`` (the index type with its search-time setting: ``nprobe`` for ivf,
    ``ef_search`` otherwise) when the index type is not ``FaissConfig``'s default; at the defaults
    these keys are absent, so the runs made before those settings existed stay as they were."""
    out = {**cfg.resolved(), "embedding_model": embedding.model if cfg.uses_dense else None,
           "bm25": bm25.scoring() if cfg.uses_bm25 else None}
    if cfg.uses_dense and embedding.backend != field_defaults(EmbeddingConfig)["backend"]:
        out["embedding_backend"] = embedding.backend
    if cfg.uses_dense and faiss.index != field_defaults(FaissConfig)["index"]:
        out["faiss"] = {"index": faiss.index,
                        **({"nprobe": faiss.nprobe} if faiss.index == "ivf" else {"ef_search": faiss.ef_search})}
    return out


def step_latency(times: Sequence[Mapping[str, float]], n_questions: int | None = None) -> dict:
    """P50/P95/P99 (ms) per step that ran, plus the per-question total, over the timed questions
    (``times``); ``n_questions`` (default: as many as timed); and, when any question was timed,
    ``n_timed`` and ``timing``: the rule the times were taken by (``support.latency_rule.WARM``, module
    docstring)."""
    out: dict[str, Any] = {"n_questions": len(times) if n_questions is None else n_questions}
    if times:
        out["timing"] = WARM
        out["n_timed"] = len(times)
        out["total"] = percentiles_ms([sum(t.values()) for t in times])
    for step in STEPS:
        p = percentiles_ms([t[step] for t in times if step in t])
        if p:
            out[step] = p
    return out


def tie_order(lists: Sequence[Sequence[str]], names: Sequence[str], ties: str | None) -> tuple[list, list[str]]:
    """The lists in fusion order: the retriever named by ``ties`` first, so that RRF (which breaks
    a tie by the best rank, then by the earlier list) gives a tie to its chunk. The others keep
    their order; ``ties`` None or absent from ``names`` changes nothing."""
    order = sorted(range(len(names)), key=lambda i: names[i] != ties)
    return [list(lists[i]) for i in order], [names[i] for i in order]


def retrieve_one(
    cfg: RetrievalConfig, question: str, r: Retrievers, *, rerank_query: str | None = None,
    query_vector: np.ndarray | None = None, time_embedding: bool = True,
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """Ranking of (chunk id, score), best first, at most ``cfg.k`` long, and step times in
    seconds (only the steps this config runs). ``question`` goes to the first-stage
    retrievers; the reranker scores ``rerank_query`` (default: ``question``). A dense config
    embeds ``question`` with ``r.embed_query`` and times that call as ``query_embed``; given
    ``query_vector`` (the cached vector of the same text) it searches with that vector instead
    of the one it just timed (module docstring); with ``time_embedding`` False it skips that
    call and has no ``query_embed`` (a question that is not timed, :func:`timed`)."""
    times: dict[str, float] = {}
    lists: list[list[tuple[str, float]]] = []
    names: list[str] = []
    if cfg.uses_dense:
        assert r.dense_index is not None and r.dense_ids is not None
        embed = time_embedding or query_vector is None
        if embed and r.embed_query is None:
            raise ValueError(f"config {cfg.name!r} searches a dense index but has no query embedder to time")
        t0 = time.perf_counter()
        qv = r.embed_query(question) if embed and r.embed_query is not None else None
        t1 = time.perf_counter()
        search_with = query_vector if query_vector is not None else qv
        assert search_with is not None  # no query_vector: embed is True, so qv was just made
        hits = search_dense(r.dense_index, search_with, cfg.depth)
        t2 = time.perf_counter()
        if embed:
            times["query_embed"] = t1 - t0
        times["faiss_search"] = t2 - t1
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
            ids, names = tie_order(ids, names, cfg.ties)
            opts = {"k": cfg.rrf_k, "weights": [float(cfg.weights.get(n, 1.0)) for n in names]}
        ranking = fuse(cfg.fusion or DEFAULT_FUSION, ids, **opts)
        times["fusion"] = time.perf_counter() - t0
    else:
        ranking = lists[0]
    if cfg.rerank is not None:
        assert r.reranker is not None and r.chunk_text is not None
        depth = cfg.rerank.depth
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
    r: Retrievers,
    *,
    queries: Mapping[str, str] | None = None,
    progress: Callable[[Any], Any] = lambda it: it,
    embed_seconds: Mapping[str, float] | None = None,
) -> tuple[list[dict], list[dict[str, float]]]:
    """Rank every question, unanswerable ones included (generation needs their passages;
    scoring leaves them out). ``queries`` maps a question id to the text sent to the first-stage
    retrievers (a rewritten question or a HyDE passage); the reranker always scores the
    original question. Returns per-question records (id, slice, answerable, ranking of
    ``{"chunk": id, "score": s}`` with scores rounded to 6 decimals) in question order, and the
    step times of the timed questions (:func:`timed`: all of them up to :data:`TIMED_QUESTIONS`),
    taken warm (one untimed pass over the first question first), each step the shortest of
    :data:`TIMED_RUNS` runs of the question. With
    ``r.embed_many``, a dense config gets the vectors it searches with in one call before the
    first search; each question's ``query_embed`` is still its own timed single-text embedding
    (module docstring). Given ``embed_seconds`` (question id -> seconds: the warm single-text
    embedding time measured once for the config's query transform, ``retrieval.query_vectors``),
    a dense config embeds nothing itself and each timed question is charged that question's
    time as ``query_embed``; a timed question without one is a ``ValueError``."""
    records: list[dict] = []
    times: list[dict[str, float]] = []
    questions = list(questions)
    texts = [queries.get(q.id, q.question) if queries else q.question for q in questions]
    vectors: np.ndarray | None = None
    if cfg.uses_dense and r.embed_many is not None and texts:
        vectors = r.embed_many(texts)
    charged = embed_seconds is not None and cfg.uses_dense
    if charged and vectors is None:
        raise ValueError(f"config {cfg.name!r}: embedding times are charged, but there are no query vectors")
    own = not charged  # the config times its own query embedding
    if questions:  # warm-up, untimed and discarded: loads the models, touches the indexes
        retrieve_one(cfg, texts[0], r, rerank_query=questions[0].question,
                     query_vector=None if vectors is None else vectors[0], time_embedding=own)
    for n, q in enumerate(progress(questions)):
        clock = timed(n, len(questions))
        ranking, t = retrieve_one(cfg, texts[n], r, rerank_query=q.question,
                                  query_vector=None if vectors is None else vectors[n], time_embedding=clock and own)
        for _ in range(TIMED_RUNS - 1 if clock else 0):
            again = retrieve_one(cfg, texts[n], r, rerank_query=q.question,
                                 query_vector=None if vectors is None else vectors[n], time_embedding=own)[1]
            t = {step: min(seconds, again[step]) for step, seconds in t.items()}
        if clock and charged:
            assert embed_seconds is not None
            if q.id not in embed_seconds:
                raise ValueError(f"config {cfg.name!r}: question {q.id!r} is timed but has no query embedding time")
            t = {"query_embed": float(embed_seconds[q.id]), **t}
        records.append(
            {
                "id": q.id,
                "slice": q.slice,
                "answerable": bool(q.answerable),
                "ranking": [{"chunk": c, "score": round(s, 6)} for c, s in ranking],
            }
        )
        if clock:
            times.append(t)
    return records, times


def ranked_passages(records: Sequence[Mapping[str, Any]], chunk_text: Mapping[str, str]) -> dict[str, str]:
    """The indexed text of every chunk that appears in any stored ranking, by chunk id. Stored
    in the run file, so that generation and label audits read the passages a config ranked
    without depending on the chunks of its chunking."""
    return {x["chunk"]: chunk_text[x["chunk"]] for r in records for x in r["ranking"]}
