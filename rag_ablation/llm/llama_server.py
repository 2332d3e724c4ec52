"""Run llama-cpp-python's OpenAI-compatible server (``llama_cpp.server``) with llama.cpp's
"extra buffer types" off, so it does not die with SIGILL on the machines this project runs on.

Usage: the same arguments as ``python -m llama_cpp.server``, e.g.::

    python -m rag_ablation.llm.llama_server --model FILE.gguf --model_alias smollm2 \\
        --host 127.0.0.1 --port 8000 --n_threads 1 --n_ctx 2048

then point the pipeline at it with ``llm.backend: openai``, ``llm.base_urls:
[http://127.0.0.1:8000/v1]`` and ``llm.model: smollm2``.

Why a wrapper: ``llama_cpp.server`` loads the model through ``llama_cpp.Llama``, which puts
Q4/Q8 weights in llama.cpp's AMX buffer on a CPU that reports AMX; those kernels crash with
SIGILL in VMs (see ``rag_ablation.llm.llama_cpp.without_extra_buffer_types``). Neither the
server's settings nor an environment variable of llama.cpp turns weight repacking off, so this
module applies the same patch as ``LlamaCppBackend`` for the whole life of the server process
and then runs the server's own ``main``. It needs llama-cpp-python's ``[server]`` extra
(fastapi, uvicorn, sse-starlette, starlette-context, pydantic-settings).
"""
from __future__ import annotations

import sys


def main() -> None:
    """Apply the no-repack patch, then hand over to ``llama_cpp.server.__main__.main``."""
    from rag_ablation.llm.llama_cpp import without_extra_buffer_types

    try:
        from llama_cpp.server.__main__ import main as server_main
    except ImportError as e:
        sys.exit(f"error: llama_cpp.server cannot start ({e}); install the server extra with "
                 f"`pip install fastapi uvicorn sse-starlette 'starlette-context>=0.3.6,<0.4' pydantic-settings`")
    with without_extra_buffer_types():  # held until the server exits (this process loads models only here)
        server_main()


if __name__ == "__main__":
    main()
