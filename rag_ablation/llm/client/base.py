"""What every LLM backend shares: the ``Backend`` interface, the ``Generation`` it returns, the
``LLMUnavailable`` error and the token-budget check (``check_num_predict``).

Every backend answers one chat turn at a time (``Backend.chat``) and says exactly which model
answered (``Backend.identity``), so that the prompt cache (``rag_ablation.llm.client.prompt_cache``) can key each
answer on the model's bytes and not on a name that may point at different weights tomorrow.

Backends decode deterministically by default (temperature 0, fixed seed), so the same
messages give the same text on the same machine and library version.

Backends fail early and in one sentence: anything that keeps a model from answering (library
not installed, model file missing, server down, model not pulled) raises ``LLMUnavailable``
whose message names the model, the reason and the command that fixes it.

The backends themselves live one per module (``rag_ablation.llm.client.llama_cpp``,
``rag_ablation.llm.client.ollama``, ``rag_ablation.llm.client.openai_compat``) and are built by name through
``rag_ablation.llm.client.registry``. This module imports none of them.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_ablation.core.errors import UserError


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

    ``top_logprobs`` is the first reply token's most likely alternatives as ``(token text,
    natural log probability)`` pairs, most likely first, when the call asked for them
    (``chat(..., top_logprobs=k)``) and the backend returned them; ``None`` otherwise (not asked,
    or a backend or model that gives no probabilities: never made up).
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    top_logprobs: tuple[tuple[str, float], ...] | None = None


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
    def chat(self, messages: list[dict[str, Any]], *, num_predict: int, stop: Sequence[str] = (),
             top_logprobs: int = 0) -> Generation:
        """Answer ``messages`` with at most ``num_predict`` (>= 1) new tokens, ending early at
        the first of the ``stop`` strings (which is not part of the text).

        ``top_logprobs`` > 0 also asks for the first reply token's ``top_logprobs`` most likely
        alternatives (``Generation.top_logprobs``); a backend that cannot give them returns the
        text with ``top_logprobs=None``. 0 asks for nothing (the request is as it always was).

        Raises ``ValueError`` for ``num_predict < 1`` and ``LLMUnavailable`` when the model
        cannot answer.
        """


def first_token_alternatives(entries: Any, *, token_key: str = "token",
                             logprob_key: str = "logprob") -> tuple[tuple[str, float], ...] | None:
    """``Generation.top_logprobs`` from a server's list of ``{token, logprob}`` entries (the
    OpenAI ``top_logprobs`` shape, which Ollama's client and llama.cpp's servers share), most
    likely first. ``None`` when ``entries`` is not a non-empty list of such entries."""
    if not isinstance(entries, list) or not entries:
        return None
    out = []
    for e in entries:
        token = e.get(token_key) if isinstance(e, dict) else getattr(e, token_key, None)
        logprob = e.get(logprob_key) if isinstance(e, dict) else getattr(e, logprob_key, None)
        if not isinstance(token, str) or isinstance(logprob, bool) or not isinstance(logprob, (int, float)):
            return None
        out.append((token, float(logprob)))
    return tuple(sorted(out, key=lambda t: -t[1]))


def check_num_predict(num_predict: int) -> None:
    """Reject a token budget that is not a positive int (no 'unlimited' sentinel: a run must
    have a bounded cost). Every backend's ``chat`` calls this first."""
    if isinstance(num_predict, bool) or not isinstance(num_predict, int) or num_predict < 1:
        raise ValueError(f"num_predict must be a positive int, got {num_predict!r}")

