"""Groundedness, lexically: how much of an answer's wording occurs in the passages its prompt showed.

``lexical_support`` of one answer is the share of its content words that occur in the text
of the passages the model was shown (the answer record's ``passages``, in the prompt):

- content words: the answer lowercased, cut into word tokens (runs of letters and digits;
  punctuation, ``_`` and hyphens split), minus :data:`STOP_WORDS`; numbers are words
  (``45`` is a content word, so an invented number counts against the answer), and a word
  is counted as often as the answer uses it;
- a word occurs in the passages when it is one of the word tokens of any shown passage's text
  (lowercased the same way; no stemming: ``key`` and ``keys`` differ).

With ``n`` content words of which ``s`` occur in the passages it is ``s / n``, from 0 to 1.
It is a lexical proxy, not a judgement of support: a correct paraphrase scores low, and an
answer copied from a passage that was shown but does not answer the question scores 1. On its
own it carries no threshold and no supported / unsupported verdict; judge_eval calibrates it
against hand grades of support (``rag_ablation.evaluation.judges.support_eval``).

Undefined (``None``, an empty cell; never 0 or 1), each with its reason (:data:`REASONS`):

- the question is unanswerable: as ``token_f1`` and ``contains_reference``
  (``rag_ablation.evaluation.scoring.answer_measures``), the measure is for answerable
  questions only (reason ``unanswerable``);
- the answer is a refusal (any refusal phrase, as the ``refusal`` column) or has no content
  word (empty, or only stop words): there is nothing to support (``refusal``,
  ``no content words``);
- the passages shown are not known: the record lists none (``no passage shown``), or a listed
  passage has no text in the config's run file (``passage text missing``). These are counted
  per config by the score stage (``rag_ablation.evaluation.scoring.score``), never dropped
  silently.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

STOP_WORDS: frozenset[str] = frozenset({
    "a", "an", "the", "and", "or", "but", "if", "then", "than", "so", "as",
    "of", "to", "in", "on", "at", "by", "for", "with", "from", "into", "about", "over", "under",
    "is", "are", "was", "were", "be", "been", "being", "am",
    "do", "does", "did", "has", "have", "had",
    "will", "would", "can", "could", "should", "may", "might", "must", "shall",
    "it", "its", "this", "that", "these", "those", "there", "here",
    "i", "you", "he", "she", "we", "they", "me", "us", "them", "my", "your", "our", "their", "his", "her",
    "which", "who", "whom", "what", "when", "where", "why", "how",
    "also", "each", "every", "any", "all", "some", "such", "only", "very", "just",
})
"""Function words left out of an answer's content words: articles, conjunctions, common
prepositions, forms of *be* / *do* / *have*, modal verbs, pronouns, question words and a few
quantifiers. Small on purpose: every other word, numbers included, counts. ``no`` and ``not``
are kept as content words (a negation changes what is claimed)."""

REASONS: tuple[str, ...] = ("unanswerable", "refusal", "no content words", "no passage shown",
                            "passage text missing")
"""Why an answer's lexical support is undefined (module docstring), in the order checked."""

MISSING_PASSAGES: tuple[str, ...] = ("no passage shown", "passage text missing")
"""The reasons that mean the passages shown are unknown (counted per config by the score stage)."""

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The word tokens of ``text``, lowercased: runs of letters and digits, in order."""
    return _WORD.findall(text.lower())


def content_words(text: str) -> list[str]:
    """The word tokens of ``text`` that are not :data:`STOP_WORDS`, repeats kept."""
    return [w for w in words(text) if w not in STOP_WORDS]


def passage_vocabulary(passages: Iterable[str]) -> frozenset[str]:
    """Every word token of the passages' texts."""
    return frozenset(w for text in passages for w in words(text))


def lexical_support(answer: str, passages: Iterable[str]) -> float | None:
    """The share of ``answer``'s content words that occur in ``passages`` (texts); None when the
    answer has no content word."""
    content = content_words(answer)
    if not content:
        return None
    vocabulary = passage_vocabulary(passages)
    return sum(1 for w in content if w in vocabulary) / len(content)


@dataclass(frozen=True)
class Support:
    """One answer's lexical support: ``value`` (None when undefined) and ``reason`` (one of
    :data:`REASONS` when undefined, else None)."""

    value: float | None
    reason: str | None


def answer_support(answer: str, shown: Sequence[str], texts: Mapping[str, str], *, answerable: bool,
                   refused: bool) -> Support:
    """The lexical support of ``answer`` given the ids of the passages ``shown`` in its prompt
    and ``texts`` (passage id -> text: the config's run file's ``passages``); undefined as the
    module docstring says, with the first reason of :data:`REASONS` that applies."""
    if not answerable:
        return Support(None, "unanswerable")
    if refused:
        return Support(None, "refusal")
    if not content_words(answer):
        return Support(None, "no content words")
    if not shown:
        return Support(None, "no passage shown")
    if any(pid not in texts for pid in shown):
        return Support(None, "passage text missing")
    return Support(lexical_support(answer, [texts[pid] for pid in shown]), None)
