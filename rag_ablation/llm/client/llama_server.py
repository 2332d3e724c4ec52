"""Run llama-cpp-python's OpenAI-compatible server (``llama_cpp.server``) with llama.cpp's
"extra buffer types" off, so it does not die with SIGILL on the machines this project runs on.

Usage: the same arguments as ``python -m llama_cpp.server``, e.g.::

    python -m rag_ablation.llm.client.llama_server --model FILE.gguf --model_alias smollm2 \\
        --host 127.0.0.1 --port 8000 --n_threads 1 --n_ctx 2048

then point the pipeline at it with ``llm.backend: openai``, ``llm.base_urls:
[http://127.0.0.1:8000/v1]`` and ``llm.model: smollm2``.

Why a wrapper: ``llama_cpp.server`` loads the model through ``llama_cpp.Llama``, which puts
Q4/Q8 weights in llama.cpp's AMX buffer on a CPU that reports AMX; those kernels crash with
SIGILL in VMs (see ``rag_ablation.llm.client.llama_cpp.without_extra_buffer_types``). Neither the
server's settings nor an environment variable of llama.cpp turns weight repacking off, so this
module applies the same patch as ``LlamaCppBackend`` for the whole life of the server process
and then runs the server's own ``main``. It needs llama-cpp-python's ``[server]`` extra
(fastapi, uvicorn, sse-starlette, starlette-context, pydantic-settings).
"""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def main() -> None:
    """Apply the no-repack patch, then hand over to ``llama_cpp.server.__main__.main``."""
    from rag_ablation.llm.client.llama_cpp import without_extra_buffer_types

    try:
        from llama_cpp.server.__main__ import main as server_main
    except ImportError as e:
        sys.exit(f"error: llama_cpp.server cannot start ({e}); install the server extra with "
                 f"`pip install fastapi uvicorn sse-starlette 'starlette-context>=0.3.6,<0.4' pydantic-settings`")
    with without_extra_buffer_types():  # held until the server exits (this process loads models only here)
        server_main()


EMBEDDING_ARGS = ("--embedding", "true", "--kv_overrides", "llama.pooling_type=int:1")
"""Server arguments for ``/v1/embeddings`` over a chat model's GGUF: embeddings on, and mean
pooling forced (such a GGUF declares no pooling, and the server would answer one vector per
token)."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(model: Path, *, alias: str, log: Path, args: Sequence[str] = (), port: int | None = None,
          timeout: float = 120.0) -> tuple[subprocess.Popen, str]:
    """This server (``python -m rag_ablation.llm.client.llama_server``) over the GGUF ``model`` served as
    ``alias`` on 127.0.0.1 (``port``, default a free one), with the extra server ``args`` (e.g.
    ``--n_threads 1``), its output in ``log``. Returns (process, API root
    ``http://127.0.0.1:PORT/v1``) once ``GET /models`` answers 200. Raises RuntimeError, with the
    end of the log, if the process exits first or does not answer within ``timeout`` seconds
    (then it is killed)."""
    import httpx

    port = port or free_port()
    cmd = [sys.executable, "-m", "rag_ablation.llm.client.llama_server", "--model", str(model), "--model_alias", alias,
           "--host", "127.0.0.1", "--port", str(port), *args]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"llama_cpp.server did not answer within {timeout:g} s:\n{log.read_text()[-2000:]}")
        time.sleep(0.2)


def stop(proc: subprocess.Popen, *, timeout: float = 15.0) -> None:
    """SIGTERM ``proc``, then SIGKILL if it has not exited within ``timeout`` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
