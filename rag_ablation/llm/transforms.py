"""Query transforms (``TRANSFORMS`` registry), applied before retrieval.

- ``none``: the question as written; no LLM call.
- ``rewrite``: the LLM rewrites the question (prompt template with ``{question}``).
- ``hyde``: the LLM writes a hypothetical handbook passage that answers the question; the
  passage, not the question, is what the retrievers search with (HyDE).

Each LLM call goes through the prompt cache. An empty LLM output falls back to the original
question and is counted, so a transform never silently drops a question.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rag_ablation.core.errors import UnknownName
from rag_ablation.llm.client.concurrent import chat_many
from rag_ablation.llm.client.prompt_cache import CachedLLM
from rag_ablation.llm.client.prompting import fill, user_messages

TRANSFORMS = ("none", "rewrite", "hyde")


@dataclass
class TransformResult:
    queries: dict[str, str]  # question id -> text sent to the retrievers
    empty_outputs: list[str]  # ids whose LLM output was empty (original question kept)
    seconds: list[float]  # LLM time per question (0 for cache hits)


def transform_queries(
    questions: Sequence[Any],
    *,
    kind: str,
    template: str | None = None,
    llm: CachedLLM | None = None,
    num_predict: int = 128,
    concurrency: int = 1,
    progress: Callable[[Any], Any] = lambda it: it,
) -> TransformResult:
    """Text to retrieve with, for every question (see the module docstring), with
    ``concurrency`` LLM requests in flight (the results do not depend on it)."""
    if kind not in TRANSFORMS:
        raise UnknownName(f"unknown query transform kind {kind!r}; expected one of: {', '.join(TRANSFORMS)}")
    if kind == "none":
        return TransformResult({q.id: q.question for q in questions}, [], [])
    if template is None or llm is None:
        raise ValueError(f"query transform {kind!r} needs a prompt template and an LLM")
    queries: dict[str, str] = {}
    empty: list[str] = []
    seconds: list[float] = []
    questions = list(questions)
    conversations = [user_messages(fill(template, question=q.question)) for q in questions]
    answers = chat_many(llm, conversations, num_predict=num_predict, concurrency=concurrency, progress=progress)
    for q, (gen, hit) in zip(questions, answers):
        text = gen.text.strip()
        if not text:
            empty.append(q.id)
            text = q.question
        queries[q.id] = text
        seconds.append(0.0 if hit else gen.seconds)
    return TransformResult(queries, empty, seconds)
