"""The query vectors of one query transform, embedded once and shared by every dense and hybrid
config that searches with that transform, and the query-embedding time charged to each of them.

Before, every ``retrieve@NAME`` of a dense or hybrid config loaded the embedding model only to
time its own single-text embedding of each question (the vectors it searched with already came
from the embedding cache). On the example that meant loading torch and MiniLM fifteen times to
embed the same 172 texts. Now the ``query_vectors@TRANSFORM`` stage does it once per transform:

- the vectors: every text the transform sends to the first-stage retrievers (its rewritten
  question or HyDE passage; the question itself for ``none``), embedded through the embedding
  cache in batches (:func:`embed_queries`), exactly the vectors the configs searched with
  before, so no ranking changes. Written as a folder (:func:`write_vectors`): ``vectors.npy``
  (float32, one row per question in question order) and ``index.json`` (status, reason, the
  model's cache name, the question ids and each text's sha256).
- the time: after one untimed embedding (the model loaded and warm), each timed question
  (``latency_rule.timed``: the same questions every config times) is embedded alone
  ``latency_rule.TIMED_RUNS`` times and keeps its shortest time, the rule each config used for itself
  (``support.latency_rule.WARM``). Written to the stage's latency file with the per-question
  seconds (:func:`embedding_times`), which the retrieve stages read and charge, question by
  question, as their ``query_embed`` step; so each config's total still adds its own embedding
  of each question to its own search of it.

Edge cases: a transform that could not run (no LLM) writes status ``unavailable`` with its
reason and no vectors, and its configs are unavailable with that reason; no question writes an
empty ``(0, 0)`` array and no times.
"""
from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_ablation.core.errors import UserError
from rag_ablation.core.io import read_json, replaced_folder, write_json
from rag_ablation.core.config import EmbeddingConfig
from rag_ablation.retrieval.embeddings import (EmbeddingCache, Engine, cache_name, embed_cached, encode, make_engine,
                                               open_backend, text_key)
from rag_ablation.support.latency_rule import TIMED_RUNS, WARM, timed
from rag_ablation.support.timing import percentiles_ms

VECTORS_FILE = "vectors.npy"
INDEX_FILE = "index.json"


@dataclass(frozen=True)
class QueryVectors:
    """One transform's query vectors: row ``i`` of ``vectors`` is the embedding of the text with
    sha256 ``text_keys[i]`` that question ``ids[i]`` is searched with, under model ``model``
    (``embeddings.cache_name``). Status ``ok``, or ``unavailable`` with ``reason`` and no rows."""

    ids: list[str]
    text_keys: list[str]
    vectors: np.ndarray
    model: str | None
    status: str = "ok"
    reason: str | None = None

    def for_texts(self, ids: Sequence[str], texts: Sequence[str], *, model: str) -> np.ndarray:
        """The rows for questions ``ids`` searched with ``texts``, in that order. Raises a
        ``UserError`` naming the first question whose id or text differs from what was embedded,
        or a model other than ``model``: the vectors are stale and the stage that writes them
        must run again (``dvc repro`` does)."""
        if self.model != model:
            raise UserError(f"the query vectors were embedded with {self.model!r}, not {model!r}: they are stale; "
                            "run `dvc repro` (it reruns query_vectors@TRANSFORM)")
        row = {qid: i for i, qid in enumerate(self.ids)}
        out = []
        for qid, text in zip(ids, texts, strict=True):
            i = row.get(qid)
            if i is None or self.text_keys[i] != text_key(text):
                what = "has no vector" if i is None else "was embedded from another text"
                raise UserError(f"question {qid!r} {what} in the query vectors: they are stale; run `dvc repro` "
                                "(it reruns query_vectors@TRANSFORM)")
            out.append(i)
        return self.vectors[np.asarray(out, dtype=np.intp)]

    def lookup(self, ids: Sequence[str], *, model: str) -> Callable[[Sequence[str]], np.ndarray]:
        """``Retrievers.embed_many`` for questions ``ids``: maps the texts they are searched with
        to their stored rows (:meth:`for_texts`)."""
        return lambda texts: self.for_texts(ids, texts, model=model)


@dataclass(frozen=True)
class QueryEmbedder:
    """How an embedding config embeds query texts: ``load`` gives the model (loaded once, on
    first call), ``one`` embeds one text, ``many`` embeds texts through the embedding cache in
    batches (:func:`embed_queries`; queries never go to Ray, a few batches, while a served
    backend's engine sends them concurrently), ``model_name`` is ``embeddings.cache_name``."""

    load: Callable[[], Any]
    one: Callable[[str], np.ndarray]
    many: Callable[[Sequence[str]], np.ndarray]
    model_name: str


def query_embedder(embedding: EmbeddingConfig) -> QueryEmbedder:
    """The :class:`QueryEmbedder` of ``embedding``; nothing is loaded until a call needs it."""
    load = functools.cache(lambda: open_backend(embedding))
    engine = make_engine(dataclasses.replace(embedding, engine="local"))
    name = cache_name(embedding)
    return QueryEmbedder(load=load, one=lambda text: encode(load(), [text])[0], model_name=name,
                         many=lambda texts: embed_queries(texts, model_name=name, load=load,
                                                          batch_size=embedding.batch_size, engine=engine))


def embed_queries(texts: Sequence[str], *, model_name: str, load: Callable[[], Any], batch_size: int,
                  cache: EmbeddingCache | None = None, engine: Engine | None = None) -> np.ndarray:
    """Vectors of ``texts`` (one row each) through the embedding cache (default: the project's,
    the one the dense stage fills): only texts it lacks are embedded, each once, in batches of
    ``batch_size`` committed as they finish (``embeddings.embed_cached``, on ``engine``: default
    one batch after another in this process); ``load`` gives the model and is called only then."""
    own = cache is None
    cache = cache or EmbeddingCache()
    try:
        vectors, _ = embed_cached(texts, model_name=model_name, cache=cache, load=load, batch_size=batch_size,
                                  progress=False, engine=engine)
    finally:
        if own:
            cache.close()
    return vectors


def unavailable(reason: str) -> QueryVectors:
    """No vectors, with the reason (the transform could not run)."""
    return QueryVectors(ids=[], text_keys=[], vectors=np.zeros((0, 0), dtype=np.float32), model=None,
                        status="unavailable", reason=reason)


def embed_transform(ids: Sequence[str], texts: Sequence[str], *, embedder: QueryEmbedder,
                    clock: Callable[[], float] = time.perf_counter) -> tuple[QueryVectors, dict[str, float]]:
    """The vectors of ``texts`` (question ``ids[i]`` searches with ``texts[i]``) through
    ``embedder.many`` (batched, the embedding cache), and the warm single-text embedding seconds
    of each timed question by id through ``embedder.one`` (module docstring): the first text is
    embedded once untimed before any timing (it loads the model), and each timed question's time
    is the shortest of ``TIMED_RUNS`` runs. No texts: no vectors, no times, nothing loaded."""
    if len(ids) != len(texts):
        raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
    if not texts:
        return QueryVectors(ids=[], text_keys=[], vectors=np.zeros((0, 0), dtype=np.float32),
                            model=embedder.model_name), {}
    vectors = embedder.many(texts)
    embedder.one(texts[0])  # warm-up, untimed: loads the model, its first call
    seconds: dict[str, float] = {}
    for n, (qid, text) in enumerate(zip(ids, texts)):
        if not timed(n, len(texts)):
            continue
        best = float("inf")
        for _ in range(TIMED_RUNS):
            t0 = clock()
            embedder.one(text)
            best = min(best, clock() - t0)
        seconds[qid] = best
    return QueryVectors(ids=list(ids), text_keys=[text_key(t) for t in texts], vectors=vectors,
                        model=embedder.model_name), seconds


def write_vectors(folder: Path, qv: QueryVectors) -> None:
    """The folder of the module docstring, all or nothing (``io.replaced_folder``)."""
    with replaced_folder(Path(folder)) as tmp:
        np.save(tmp / VECTORS_FILE, np.ascontiguousarray(qv.vectors, dtype=np.float32), allow_pickle=False)
        write_json(tmp / INDEX_FILE, {"status": qv.status, "reason": qv.reason, "model": qv.model, "ids": qv.ids,
                                      "text_sha256": qv.text_keys})


def read_vectors(folder: Path) -> QueryVectors:
    """What :func:`write_vectors` wrote. A missing or unreadable folder is a ``UserError`` saying
    which stage writes it."""
    folder = Path(folder)
    try:
        index = read_json(folder / INDEX_FILE)
        vectors = np.load(folder / VECTORS_FILE, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read the query vectors in {folder} ({e}); they are written by the "
                        "query_vectors@TRANSFORM stage: run `dvc repro`") from e
    return QueryVectors(ids=list(index["ids"]), text_keys=list(index["text_sha256"]), vectors=vectors,
                        model=index["model"], status=index["status"], reason=index["reason"])


def embedding_times(seconds: Mapping[str, float], n_questions: int) -> dict[str, Any]:
    """The latency record of ``query_vectors@TRANSFORM``: ``n_questions``, and when any question
    was timed ``n_timed``, ``timing`` (``WARM``), ``query_embed`` (P50/P95/P99 in ms) and
    ``seconds`` (each timed question's time by id, read by the retrieve stages)."""
    out: dict[str, Any] = {"n_questions": n_questions}
    if seconds:
        out.update(n_timed=len(seconds), timing=WARM, query_embed=percentiles_ms(list(seconds.values())),
                   seconds=dict(seconds))
    return out


def charged_times(latency: Mapping[str, Any]) -> dict[str, float]:
    """The per-question embedding seconds of a ``query_vectors@TRANSFORM`` latency record (none
    when nothing was timed)."""
    return {str(k): float(v) for k, v in (latency.get("seconds") or {}).items()}
