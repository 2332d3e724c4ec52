"""Answers generated from stored rankings (the measures of answers are in
``rag_ablation.evaluation.scoring.answer_measures``).

For each question, the top ``k`` chunks of the stored
ranking are numbered into the prompt template with the question, and the LLM (through the
prompt cache) answers with at most ``num_predict`` tokens. Every question is answered,
unanswerable ones included: declining them is the right behaviour and is measured.

"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rag_ablation.llm.client.concurrent import chat_many
from rag_ablation.llm.client.prompt_cache import CachedLLM
from rag_ablation.support.timing import percentiles, percentiles_ms
from rag_ablation.llm.client.prompting import fill, format_passages, messages_hash, user_messages

def answer_prompts(questions: Sequence[Any], rankings: Mapping[str, Sequence[str]], chunk_text: Mapping[str, str],
                   *, template: str, k: int) -> tuple[list[list[str]], list[list[dict[str, str]]]]:
    """For each question in order: the ids of the top ``k`` chunks of its stored ranking (fewer
    when the ranking is shorter, none when the question has no ranking), and the chat messages
    asking it, with those chunks' texts numbered into ``template``."""
    passages = [list(rankings.get(q.id, ()))[:k] for q in questions]
    conversations = [
        user_messages(fill(template, passages=format_passages([chunk_text[c] for c in ids]), question=q.question))
        for q, ids in zip(questions, passages)
    ]
    return passages, conversations


def answer_questions(
    questions: Sequence[Any],
    rankings: Mapping[str, Sequence[str]],
    chunk_text: Mapping[str, str],
    *,
    llm: CachedLLM,
    template: str,
    k: int,
    num_predict: int,
    stop: Sequence[str] = (),
    concurrency: int = 1,
    progress: Callable[[Any], Any] = lambda it: it,
) -> tuple[list[dict], list[dict[str, float]]]:
    """Answer every question from its top-``k`` chunks. Returns records (id, slice,
    answerable, answer, passages, prompt_sha256, prompt_tokens, completion_tokens) in question
    order, and timings (``seconds``, ``completion_tokens``, ``cached``) of every answer: a cached
    answer keeps the time of the call that made it, so the latency files show what generation
    costs even after a rerun served from the cache. Each answer is stored in the prompt cache as
    soon as it is made. ``concurrency`` requests are in flight at once
    (``rag_ablation.llm.client.concurrent``); the results do not depend on it."""
    records: list[dict] = []
    timings: list[dict[str, float]] = []
    questions = list(questions)
    passages, conversations = answer_prompts(questions, rankings, chunk_text, template=template, k=k)
    answers = chat_many(llm, conversations, num_predict=num_predict, stop=stop, concurrency=concurrency,
                        progress=progress)
    for q, ids, messages, (gen, hit) in zip(questions, passages, conversations, answers):
        records.append({
            "id": q.id, "slice": q.slice, "answerable": bool(q.answerable), "answer": gen.text.strip(),
            "passages": ids, "prompt_sha256": messages_hash(messages),
            "prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
        })
        timings.append({"seconds": gen.seconds, "completion_tokens": gen.completion_tokens, "cached": hit})
    return records, timings


def generation_latency(timings: Sequence[Mapping[str, float]]) -> dict:
    """P50/P95/P99 of the time per answer (ms; a cached answer counts with the time of the call
    that made it), and of completion tokens per second of that time (prompt reading included,
    so this is not the decoder's raw speed)."""
    rates = [t["completion_tokens"] / t["seconds"] for t in timings if t["seconds"] > 0]
    return {"answer": percentiles_ms([t["seconds"] for t in timings]), "completion_tokens_per_second": percentiles(rates)}


def app_answer_records(questions: Sequence[Any], answers: Mapping[str, Mapping[str, Any]]) -> list[dict]:
    """The answer records of an app that answers itself (``apps.<name>`` with ``call: ask`` or an
    answers file: the ``answers`` of its run file, question id -> ``{"answer", "passages"}``), for
    ``questions`` in their order, in the form :func:`answer_questions` writes: ``passages`` are
    the passages the app says it answered from; there is no prompt, so ``prompt_sha256`` and the
    token counts are None. A question the app did not answer gets no record."""
    return [{"id": q.id, "slice": q.slice, "answerable": bool(q.answerable),
             "answer": str(answers[q.id]["answer"]).strip(), "passages": list(answers[q.id]["passages"]),
             "prompt_sha256": None, "prompt_tokens": None, "completion_tokens": None}
            for q in questions if q.id in answers]

