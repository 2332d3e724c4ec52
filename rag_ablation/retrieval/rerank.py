"""Second-stage reranking with a sentence-transformers ``CrossEncoder``.

``load_reranker`` resolves the model with ``HF_HUB_OFFLINE=1`` so a model that is not on this
machine fails at once, and turns any failure into ``RerankerUnavailable`` with a message saying
which model, why, and how to get it. A retrieval config whose reranker is unavailable reports
``unavailable`` with that reason and carries no numbers; the rest of the pipeline goes on.

A checkpoint without a trained sequence-classification head (for example a bi-encoder folder
loaded with ``num_labels=1``) gets a freshly initialised head: its code path and latency are
real but its scores are noise. ``is_placeholder`` detects that from the checkpoint's own
``config.json`` (no ``*ForSequenceClassification`` architecture); such a model is refused unless
``allow_placeholder=True``, which only tests use, and results made with it are marked
``placeholder`` and never reported as numbers.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from rag_ablation.core.errors import UserError
from rag_ablation.core.io import read_json

DEFAULT_RERANKER = "cross-encoder/ms-marco-MiniLM-L-6-v2"


class RerankerUnavailable(UserError, RuntimeError):
    """The configured cross-encoder cannot be used; ``str(e)`` is the reason."""


def _checkpoint_config(name_or_path: str) -> dict | None:
    """The checkpoint's config.json from a local folder or the local hub cache, or None."""
    local = Path(name_or_path)
    if local.is_dir():
        cfg = local / "config.json"
        return read_json(cfg) if cfg.is_file() else None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name_or_path, "config.json")
    except Exception:  # noqa: BLE001 - an odd name is simply "not cached"
        return None
    return read_json(found) if isinstance(found, str) else None


def is_placeholder(name_or_path: str) -> bool:
    """True when the checkpoint has no trained sequence-classification head."""
    cfg = _checkpoint_config(name_or_path) or {}
    return not any(str(a).endswith("ForSequenceClassification") for a in cfg.get("architectures") or [])


class Reranker:
    """A loaded cross-encoder; ``placeholder`` is True for an untrained head."""

    def __init__(self, model, name: str, placeholder: bool, batch_size: int) -> None:
        self.model = model
        self.name = name
        self.placeholder = placeholder
        self.batch_size = batch_size

    def scores(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        out = self.model.predict([(query, p) for p in passages], batch_size=self.batch_size, show_progress_bar=False)
        return [float(x) for x in out]


def load_reranker(name_or_path: str, *, threads: int = 1, batch_size: int = 32, allow_placeholder: bool = False) -> Reranker:
    """Load a cross-encoder offline or raise ``RerankerUnavailable`` (module docstring)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    cfg = _checkpoint_config(name_or_path)
    if cfg is None:
        raise RerankerUnavailable(
            f"cross-encoder {name_or_path!r} is not on this machine (not a local folder and not in the "
            "Hugging Face cache) and downloads are off. Get it on a machine with network access "
            f"(`huggingface-cli download {name_or_path}`) and copy the cache, or set the rerank model "
            "to a local folder holding a trained cross-encoder"
        )
    placeholder = is_placeholder(name_or_path)
    if placeholder and not allow_placeholder:
        raise RerankerUnavailable(
            f"cross-encoder {name_or_path!r} has no trained classification head (its config.json lists "
            f"{cfg.get('architectures')}); its scores would be noise. Point the rerank model at a trained "
            f"cross-encoder such as {DEFAULT_RERANKER}"
        )
    try:
        import torch
        from sentence_transformers import CrossEncoder

        torch.set_num_threads(max(1, threads))
        model = CrossEncoder(name_or_path, num_labels=1, device="cpu")
    except Exception as e:  # noqa: BLE001
        raise RerankerUnavailable(f"cross-encoder {name_or_path!r} failed to load: {type(e).__name__}: {e}") from e
    return Reranker(model, name_or_path, placeholder, batch_size)
