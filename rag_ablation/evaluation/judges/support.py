"""Support (groundedness) by the answer model: the probability that an answer is SUPPORTED by the
passages its prompt showed, and the canary answers that check the score.

The support prompt (``prompts/<support.prompt>.txt`` with ``{question}``, ``{passages}`` and
``{answer}``) shows the passages of the answer's prompt, numbered and in prompt order as the
answer prompt showed them (``format_passages``), and asks whether every claim of the answer is
stated in them, in one word: SUPPORTED or UNSUPPORTED.

* **Verdict** (``parse_support``): strict, as ``parse_verdict``: once surrounding whitespace,
  punctuation and markup are trimmed and case is ignored the reply must be exactly SUPPORTED
  (True) or UNSUPPORTED (False); anything else is invalid (None), counted, never guessed.
* **Score** (``p_supported``): P(SUPPORTED) from the first reply token's alternatives,
  ``label_probability(alternatives, yes="SUPPORTED", no="UNSUPPORTED")``: with ``m_s`` and
  ``m_u`` the summed probabilities of the alternatives that begin SUPPORTED ("S", "SUP", "Supp")
  and UNSUPPORTED ("UN", "U", "Un"), ``m_s / (m_s + m_u)``. No token begins both (their first
  letters differ). None (no score, never a made-up one) when the backend returned no
  alternatives or none begins either label. The score is the model's relative preference
  between the two labels only: how much of the first token's mass the labels hold is not in it.

On its own the score carries no threshold: judge_eval calibrates it against the hand grades of
support (``rag_ablation.evaluation.judges.support_eval``: AUC, cross-fitted kappa, a threshold
chosen on the grades, the canaries judged at that threshold).

**Canaries** (``support_canaries``): for a seeded selection of up to ``n`` answers of a config
whose shown passages all have text, two made-up answers each, with the answer's own question and
shown passages in the prompt:

* ``unrelated_copy``: the first sentences (``opening_sentences``) of a passage of *another
  document* (none of the shown passages' documents) that was not shown; a sound scorer calls it
  unsupported.
* ``shown_copy``: the first sentences of one of the shown passages; a sound scorer calls it
  supported.

Each canary is scored by the LLM (``p_supported``) and lexically (``grounding.lexical_support``
against the same shown passages), so the two can be compared.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_ablation.evaluation.judges.grades import answer_sha256
from rag_ablation.evaluation.judges.judging import _trimmed, label_probability
from rag_ablation.evaluation.scoring.graded import doc_of
from rag_ablation.evaluation.scoring.grounding import lexical_support
from rag_ablation.llm.client.concurrent import chat_many
from rag_ablation.llm.client.prompt_cache import CachedLLM
from rag_ablation.llm.client.prompting import fill, format_passages, user_messages

SUPPORTED, UNSUPPORTED = "SUPPORTED", "UNSUPPORTED"
"""The two replies of the support prompt."""

SUPPORT_NAMES = {True: "supported", False: "unsupported", None: "invalid"}
"""How a support verdict is written in the stage's file."""

CANARY_KINDS = ("unrelated_copy", "shown_copy")
"""The support canaries of one answer (module docstring)."""

CANARY_EXPECTED = {"unrelated_copy": False, "shown_copy": True}
"""Whether a sound scorer calls each canary kind supported."""

CANARY_MIN_CHARS = 80
"""``opening_sentences`` takes a second sentence when the first is shorter than this."""


def support_messages(template: str, question: str, passages: Sequence[str], answer: str) -> list[dict[str, str]]:
    """The support prompt as one user turn: ``passages`` are the texts of the passages the
    answer's prompt showed, in prompt order, numbered as the answer prompt numbered them."""
    return user_messages(fill(template, question=question, passages=format_passages(passages), answer=answer))


def parse_support(reply: str) -> bool | None:
    """True for SUPPORTED, False for UNSUPPORTED, None for anything else.

    Leading and trailing whitespace, punctuation and markup are trimmed and case is ignored
    (as ``parse_verdict``); nothing else is: "Supported." and "**UNSUPPORTED**" are verdicts,
    "The answer is SUPPORTED", "SUPPORTED or UNSUPPORTED", "SUP" and "" are not."""
    return {SUPPORTED: True, UNSUPPORTED: False}.get(_trimmed(reply))


def p_supported(alternatives: Sequence[tuple[str, float]] | None) -> float | None:
    """P(SUPPORTED) between the two labels from the first reply token's ``(token, natural log
    probability)`` alternatives: ``label_probability(..., yes="SUPPORTED", no="UNSUPPORTED")``
    (module docstring); None when there are none or none begins either label."""
    return label_probability(alternatives, yes=SUPPORTED, no=UNSUPPORTED)


@dataclass(frozen=True)
class SupportItem:
    """One text to check against the passages of one prompt: ``passages`` are their texts, in
    prompt order."""

    question: str
    passages: tuple[str, ...]
    answer: str


@dataclass(frozen=True)
class SupportScore:
    """The support prompt's outcome for one item: the reply (stripped), its verdict
    (``parse_support``) and ``p_supported`` (None: no probabilities)."""

    reply: str
    verdict: bool | None
    p_supported: float | None

    def record(self) -> dict[str, Any]:
        """``{"reply", "verdict": supported|unsupported|invalid, "p_supported"}``."""
        return {"reply": self.reply, "verdict": SUPPORT_NAMES[self.verdict], "p_supported": self.p_supported}


def score_support(llm: CachedLLM, template: str, items: Sequence[SupportItem], *, num_predict: int,
                  top_logprobs: int, concurrency: int = 1,
                  progress: Callable[[Any], Any] = lambda it: it) -> list[SupportScore]:
    """Every item's support prompt through the prompt cache (each reply stored as it arrives, so
    a killed run loses none), replies ending at the first line break; one score per item, in
    order. ``top_logprobs`` 0, or a backend without probabilities, gives ``p_supported`` None."""
    conversations = [support_messages(template, it.question, it.passages, it.answer) for it in items]
    replies = chat_many(llm, conversations, num_predict=num_predict, stop=("\n",), concurrency=concurrency,
                        progress=progress, top_logprobs=top_logprobs)
    return [SupportScore(gen.text.strip(), parse_support(gen.text), p_supported(gen.top_logprobs))
            for gen, _ in replies]


def grouped_order(answer_ids: Sequence[str], canary_ids: Sequence[str]) -> list[int]:
    """The order in which to ask the support prompts of ``answer_ids`` followed by those of
    ``canary_ids`` (indices into that joined list): each answer, then the canaries made for it
    (``canary_ids[j]`` is the question id of canary ``j``), then any canary whose answer is not
    in ``answer_ids``. A canary's prompt repeats its answer's prompt up to the answer text (the
    same question and passages), so asked right after it on the same model the embedded
    llama.cpp engine evaluates only the differing tail: a canary then costs about a tenth of an
    answer (0.5 s against 4 to 5 s for SmolLM2 on 2 cores). The replies do not depend on the
    order."""
    n = len(answer_ids)
    after: dict[str, list[int]] = {}
    for j, qid in enumerate(canary_ids):
        after.setdefault(qid, []).append(n + j)
    order = [k for i, qid in enumerate(answer_ids) for k in (i, *after.pop(qid, []))]
    return order + sorted(k for ks in after.values() for k in ks)


def shown_texts(shown: Sequence[str], texts: Mapping[str, str]) -> tuple[str, ...] | None:
    """The texts of the passages ``shown`` (chunk ids, in prompt order) from ``texts`` (chunk id
    -> text: the run file's ``passages``); None when none was shown or one has no text."""
    if not shown or any(pid not in texts for pid in shown):
        return None
    return tuple(texts[pid] for pid in shown)


# ----------------------------------------------------------------------------- canaries
_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*(```|~~~)[^\n]*$", re.MULTILINE | re.DOTALL)
_NOT_PROSE = re.compile(r"^\s*(#+\s|\|).*$", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def opening_sentences(text: str, *, min_chars: int = CANARY_MIN_CHARS) -> str:
    """The first one or two sentences of a passage's prose: fenced code blocks, Markdown heading
    lines (``# ...``) and table lines (``| ...``) dropped, whitespace runs collapsed to one
    space, sentences cut after ``.``, ``!`` or ``?`` followed by whitespace; the first sentence,
    and the second too when the first is shorter than ``min_chars`` characters. "" when the
    passage has no prose."""
    body = " ".join(_NOT_PROSE.sub("", _FENCE.sub("", text)).split())
    sentences = [s for s in _SENTENCE_END.split(body) if s]
    if not sentences:
        return ""
    return " ".join(sentences[:2]) if len(sentences[0]) < min_chars and len(sentences) > 1 else sentences[0]


@dataclass(frozen=True)
class Canary:
    """One canary answer: the answer record it was made for (``id``: question id), its ``kind``
    (``CANARY_KINDS``), its ``text`` and ``source``, the chunk id the text was copied from;
    ``item`` is its support prompt (the answer's question and shown passages)."""

    id: str
    kind: str
    text: str
    source: str
    item: SupportItem


def _pick_source(rng: random.Random, candidates: Sequence[str], texts: Mapping[str, str]) -> tuple[str, str] | None:
    """A seeded choice among ``candidates`` (chunk ids, sorted by the caller) whose opening
    sentences are not empty: ``(chunk id, text)``, or None when none has any."""
    usable = [(pid, opening_sentences(texts[pid])) for pid in candidates]
    usable = [(pid, t) for pid, t in usable if t]
    return rng.choice(usable) if usable else None


def answer_canaries(record: Mapping[str, Any], question: str, texts: Mapping[str, str], *,
                    rng: random.Random) -> list[Canary]:
    """The canaries of one answer record (``id``, ``passages``): ``unrelated_copy`` from a passage
    of ``texts`` whose document is none of the shown passages' documents (so it was not shown),
    ``shown_copy`` from one of the shown passages, each chosen by ``rng`` among the candidates in
    sorted id order. A kind with no candidate (every passage of ``texts`` is from a shown
    document, or no shown passage has a sentence) is left out; no canary when the shown passages'
    texts are not all known."""
    shown = list(record["passages"])
    passages = shown_texts(shown, texts)
    if passages is None:
        return []
    shown_docs = {doc_of(pid) for pid in shown}
    candidates = {
        "unrelated_copy": sorted(pid for pid in texts if doc_of(pid) not in shown_docs),
        "shown_copy": sorted(set(shown)),
    }
    out = []
    for kind in CANARY_KINDS:
        picked = _pick_source(rng, candidates[kind], texts)
        if picked is not None:
            source, text = picked
            out.append(Canary(id=str(record["id"]), kind=kind, text=text, source=source,
                              item=SupportItem(question=question, passages=passages, answer=text)))
    return out


def support_canaries(records: Sequence[Mapping[str, Any]], questions: Mapping[str, str], texts: Mapping[str, str],
                     *, n: int, seed: int) -> list[Canary]:
    """The canaries of a seeded selection of up to ``n`` answer records (``id``, ``passages``)
    whose shown passages all have text in ``texts``: ``random.Random(seed)`` samples ``n`` of
    them by id (sorted first, so file order never matters; all of them when there are at most
    ``n``), and the same generator then picks each selected record's sources, records in id
    order. ``questions``: question id -> question text. Canaries come in id order, then
    ``CANARY_KINDS`` order."""
    if n < 0:
        raise ValueError(f"support.canaries must be >= 0, got {n}")
    eligible = sorted((r for r in records if shown_texts(r["passages"], texts) is not None), key=lambda r: str(r["id"]))
    rng = random.Random(seed)
    chosen = eligible if len(eligible) <= n else sorted(rng.sample(eligible, n), key=lambda r: str(r["id"]))
    return [c for r in chosen for c in answer_canaries(r, questions[r["id"]], texts, rng=rng)]


# ----------------------------------------------------------------------------- the stage's records
def answer_rows(records: Sequence[Mapping[str, Any]], scores: Mapping[str, SupportScore]) -> list[dict[str, Any]]:
    """One row per answer record, in record order: ``id``, ``answer_sha256`` and the score's
    ``reply``, ``verdict`` and ``p_supported``; a record not in ``scores`` (its shown passages
    unknown, so nothing was asked) has reply and p_supported null and verdict ``invalid``."""
    rows = []
    for r in records:
        score = scores.get(r["id"])
        outcome = score.record() if score else {"reply": None, "verdict": "invalid", "p_supported": None}
        rows.append({"id": r["id"], "answer_sha256": answer_sha256(r["answer"]), **outcome})
    return rows


def canary_record(canary: Canary, outcome: Mapping[str, Any]) -> dict[str, Any]:
    """The record of one canary as ``support@CONFIG`` writes it: ``id``, ``kind``, ``text``,
    ``source``, its ``lexical_support`` against the passages shown, then ``outcome`` (the support
    prompt's ``SupportScore.record()``, or only ``p_supported`` null when the model was not asked)."""
    return {"id": canary.id, "kind": canary.kind, "text": canary.text, "source": canary.source,
            "lexical_support": lexical_support(canary.text, canary.item.passages), **outcome}


def lexical_canaries(records: Sequence[Mapping[str, Any]], questions: Mapping[str, str], texts: Mapping[str, str],
                     *, canaries: int, seed: int) -> list[dict[str, Any]]:
    """The canaries ``support_records`` would ask about (the same ones: ``support_canaries`` with
    the same ``canaries`` and ``seed``), scored lexically only, for a run where the answer model
    is not asked (``support.ask_llm`` false, or no LLM): ``id``, ``kind``, ``text``, ``source``,
    ``lexical_support``, and ``p_supported`` null."""
    return [canary_record(c, {"p_supported": None})
            for c in support_canaries(records, questions, texts, n=canaries, seed=seed)]


def support_records(llm: CachedLLM, template: str, records: Sequence[Mapping[str, Any]],
                    questions: Mapping[str, str], texts: Mapping[str, str], *, canaries: int, seed: int,
                    num_predict: int, top_logprobs: int, concurrency: int = 1,
                    progress: Callable[[Any], Any] = lambda it: it) -> dict[str, Any]:
    """The ``support@CONFIG`` records of the answer ``records`` (``id``, ``answer``, ``passages``):
    every answer whose shown passages all have text in ``texts`` is asked the support prompt, and
    so are the canaries of up to ``canaries`` of them (``support_canaries``), each canary right
    after its answer (``grouped_order``). Returns ``answers`` (``answer_rows``), ``canaries``
    (``id``, ``kind``, ``text``, ``source``, ``lexical_support`` and the score's record),
    ``unscored`` (answers without P(SUPPORTED)) and ``invalid`` (answers asked whose reply is not
    a verdict)."""
    asked = [(r, shown_texts(r["passages"], texts)) for r in records]
    items = {r["id"]: SupportItem(questions[r["id"]], passages, r["answer"]) for r, passages in asked if passages}
    made = support_canaries(records, questions, texts, n=canaries, seed=seed)
    every = [*items.values(), *(c.item for c in made)]
    order = grouped_order(list(items), [c.id for c in made])
    in_order = score_support(llm, template, [every[k] for k in order], num_predict=num_predict,
                             top_logprobs=top_logprobs, concurrency=concurrency, progress=progress)
    position = {k: pos for pos, k in enumerate(order)}
    scores = [in_order[position[k]] for k in range(len(every))]
    rows = answer_rows(records, dict(zip(items, scores)))
    return {"answers": rows,
            "canaries": [canary_record(c, sc.record()) for c, sc in zip(made, scores[len(items):])],
            "unscored": sum(row["p_supported"] is None for row in rows),
            "invalid": sum(row["verdict"] == "invalid" and row["reply"] is not None for row in rows)}
