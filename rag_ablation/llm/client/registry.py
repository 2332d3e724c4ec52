"""The LLM backends by name (``BACKENDS``), and building one from its name or from the ``llm:``
block of params.yaml.

Backends (names used in ``llm.backend``):

* ``llama_cpp``: a GGUF model run in-process by llama-cpp-python (``rag_ablation.llm.client.llama_cpp``);
  the default, with the packaged SmolLM2-135M-Instruct, or a pinned model by name
  (``qwen2.5-coder-1.5b``, ``qwen2.5-coder-0.5b``; ``rag_ablation.llm.client.model_store``).
* ``ollama``: a model served by an Ollama server (``rag_ablation.llm.client.ollama``).
* ``openai``: a model behind one or several OpenAI-compatible servers: vLLM, TGI, llama.cpp's
  server, a hosted endpoint (``rag_ablation.llm.client.openai_compat``).

This module imports every backend module; none of them imports it (they share
``rag_ablation.llm.client.base``). Only code that builds a backend (stages, commands, tests) imports it.
"""
from __future__ import annotations

from typing import Any

from rag_ablation.core.config import LlmConfig
from rag_ablation.core.errors import lookup
from rag_ablation.llm.client.base import Backend
from rag_ablation.llm.client.llama_cpp import LlamaCppBackend
from rag_ablation.llm.client.ollama import OllamaBackend
from rag_ablation.llm.client.openai_compat import OpenAICompatBackend, api_key_from_env

BACKENDS: dict[str, type[Backend]] = {
    LlamaCppBackend.name: LlamaCppBackend,
    OllamaBackend.name: OllamaBackend,
    OpenAICompatBackend.name: OpenAICompatBackend,
}


def make_backend(name: str, **options: Any) -> Backend:
    """Build the backend registered as ``name`` with ``options`` as its constructor's keyword
    arguments. An unknown name raises ``UnknownName`` listing the valid names."""
    return lookup(BACKENDS, name, "LLM backend")(**options)


def backend_from_config(cfg: LlmConfig) -> Backend:
    """A backend from a checked ``llm:`` block (``rag_ablation.core.config.LlmConfig``).

    ``llama_cpp``: ``model`` is a GGUF path, a pinned model name such as ``qwen2.5-coder-1.5b``
    (its file fetched by ``rag-ablation models``; ``rag_ablation.llm.client.model_store``) or None (the
    packaged SmolLM2), ``threads`` the llama.cpp thread count, ``concurrency`` the copies of the
    model that answer at once. ``ollama``: ``model`` is a name the server has, ``host`` None means
    ``$OLLAMA_HOST`` or the default. ``openai``: ``model`` is a name the servers at ``base_urls``
    list; the API key, if any, is read from the environment variable ``api_key_env``. The
    served backends (ollama, openai) take ``timeout`` and ``retries``."""
    common = {"seed": cfg.seed, "temperature": cfg.temperature}
    if cfg.backend == "llama_cpp":
        return make_backend("llama_cpp", model_path=cfg.model, n_threads=cfg.threads,
                            n_threads_batch=cfg.threads_batch, n_ctx=cfg.num_ctx, copies=cfg.concurrency, **common)
    served = {"num_ctx": cfg.num_ctx, "timeout": cfg.timeout, "retries": cfg.retries, **common}
    if cfg.backend == "openai":
        return make_backend("openai", model=cfg.model, base_urls=cfg.base_urls,
                            api_key=api_key_from_env(cfg.api_key_env), **served)
    return make_backend(cfg.backend, model=cfg.model, host=cfg.host, **served)
