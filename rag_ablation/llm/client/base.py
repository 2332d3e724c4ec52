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


def check_num_predict(num_predict: int) -> None:
    """Reject a token budget that is not a positive int (no 'unlimited' sentinel: a run must
    have a bounded cost). Every backend's ``chat`` calls this first."""
    if isinstance(num_predict, bool) or not isinstance(num_predict, int) or num_predict < 1:
        raise ValueError(f"num_predict must be a positive int, got {num_predict!r}")

