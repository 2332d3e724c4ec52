"""Answers: generating them from stored rankings, and judge-free measures of them.

Generation (``answer_questions``): for each question, the top ``k`` chunks of the stored
ranking are numbered into the prompt template with the question, and the LLM (through the
prompt cache) answers with at most ``num_predict`` tokens. Every question is answered,
unanswerable ones included: declining them is the right behaviour and is measured.

Measures, over answerable questions unless named otherwise (text normalized SQuAD-style:
lowercase, punctuation and the articles a/an/the removed, whitespace collapsed):

- ``refusal_rate``: share of answers containing any refusal phrase (case-insensitive).
- ``unanswerable_refusal_rate``: the same over unanswerable questions (higher is better).
- ``contains_reference``: share of answers whose normalized text contains the normalized
  reference answer.
- ``token_f1``: mean token F1 between answer and reference: with ``c`` the size of the
  multiset intersection of their tokens, ``P = c / |answer|``, ``R = c / |reference|``,
  ``F1 = 2PR / (P + R)``; 0 when ``c = 0``; 1 when both are empty.
A set with no answerable (or no unanswerable) question omits the measures it cannot compute.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rag_ablation.cache import CachedLLM
from rag_ablation.metrics import percentiles, percentiles_ms
from rag_ablation.prompting import fill, format_passages, messages_hash, user_messages

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def token_f1(answer: str, reference: str) -> float:
    a, r = normalize_answer(answer).split(), normalize_answer(reference).split()
    if not a and not r:
        return 1.0
    common = sum((Counter(a) & Counter(r)).values())
    if common == 0:
        return 0.0
    p, rec = common / len(a), common / len(r)
    return 2 * p * rec / (p + rec)


def contains_reference(answer: str, reference: str) -> bool:
    ref = normalize_answer(reference)
    return bool(ref) and ref in normalize_answer(answer)


def is_refusal(answer: str, phrases: Sequence[str]) -> bool:
    low = answer.lower()
    return any(p.lower() in low for p in phrases)


def answer_measures(records: Sequence[Mapping[str, Any]], references: Mapping[str, str], phrases: Sequence[str]) -> dict:
    """The measures of the module docstring over answer records (``id``, ``answerable``,
    ``answer``); ``references`` maps question id to reference answer."""
    ans = [r for r in records if r["answerable"]]
    una = [r for r in records if not r["answerable"]]
    out: dict[str, float] = {"n_answers": len(records)}
    if ans:
        out["refusal_rate"] = sum(is_refusal(r["answer"], phrases) for r in ans) / len(ans)
        out["contains_reference"] = sum(contains_reference(r["answer"], references[r["id"]]) for r in ans) / len(ans)
        out["token_f1"] = sum(token_f1(r["answer"], references[r["id"]]) for r in ans) / len(ans)
    if una:
        out["unanswerable_refusal_rate"] = sum(is_refusal(r["answer"], phrases) for r in una) / len(una)
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in out.items()}


def answer_questions(
    questions: Sequence[Any],
    rankings: Mapping[str, Sequence[str]],
    chunk_text: Mapping[str, str],
    *,
    llm: CachedLLM,
    template: str,
    k: int,
    num_predict: int,
    progress: Callable[[Any], Any] = lambda it: it,
) -> tuple[list[dict], list[dict[str, float]]]:
    """Answer every question from its top-``k`` chunks. Returns records (id, slice,
    answerable, answer, passages, prompt_sha256, prompt_tokens, completion_tokens) in question
    order, and timings (``seconds``, ``completion_tokens``) of the answers the LLM computed
    (cache hits cost nothing and are left out). Each answer is stored in the prompt cache as
    soon as it is made."""
    records: list[dict] = []
    timings: list[dict[str, float]] = []
    for q in progress(list(questions)):
        ids = list(rankings.get(q.id, ()))[:k]
        prompt = fill(template, passages=format_passages([chunk_text[c] for c in ids]), question=q.question)
        messages = user_messages(prompt)
        gen, hit = llm.chat(messages, num_predict=num_predict)
        records.append({
            "id": q.id, "slice": q.slice, "answerable": bool(q.answerable), "answer": gen.text.strip(),
            "passages": ids, "prompt_sha256": messages_hash(messages),
            "prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
        })
        if not hit:
            timings.append({"seconds": gen.seconds, "completion_tokens": gen.completion_tokens})
    return records, timings


def generation_latency(timings: Sequence[Mapping[str, float]]) -> dict:
    """P50/P95/P99 of the time per computed answer (ms), and of completion tokens per second
    of that time (prompt reading included, so this is not the decoder's raw speed)."""
    rates = [t["completion_tokens"] / t["seconds"] for t in timings if t["seconds"] > 0]
    return {"answer": percentiles_ms([t["seconds"] for t in timings]), "completion_tokens_per_second": percentiles(rates)}
