"""Judge-free measures of answers, per question first, then averaged.

Measures, over answerable questions unless named otherwise (text normalized SQuAD-style:
lowercase, punctuation and the articles a/an/the removed, whitespace collapsed):

- ``refusal_rate``: share of answers containing any refusal phrase (case-insensitive).
- ``unanswerable_refusal_rate``: the same over unanswerable questions (higher is better).
- ``contains_reference``: share of answers whose normalized text contains the normalized
  reference answer.
- ``token_f1``: mean token F1 between answer and reference: with ``c`` the size of the
  multiset intersection of their tokens, ``P = c / |answer|``, ``R = c / |reference|``,
  ``F1 = 2PR / (P + R)``; 0 when ``c = 0``; 1 when both are empty.
- ``lexical_support``: mean lexical support (``rag_ablation.evaluation.scoring.grounding``: the
  share of an answer's content words found in the passages its prompt showed) over the answers
  that have one, with ``n_lexical_support``, how many that is; both absent when no answer has one.
A set with no answerable (or no unanswerable) question omits the measures it cannot compute.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

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


def answer_scores(answer: str, reference: str, *, answerable: bool, phrases: Sequence[str]) -> dict[str, Any]:
    """One answer's measures: ``refusal`` (0/1), and for an answerable question
    ``contains_reference`` (0/1) and ``token_f1``; None where a measure does not apply."""
    return {
        "refusal": int(is_refusal(answer, phrases)),
        "contains_reference": int(contains_reference(answer, reference)) if answerable else None,
        "token_f1": token_f1(answer, reference) if answerable else None,
    }


def answer_measures(rows: Sequence[Mapping[str, Any]]) -> dict:
    """The means of the module docstring over per-question rows of ``answer_scores`` (with
    ``answerable``), rounded to 6 decimals, plus ``n_answers`` (every row)."""
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]
    out: dict[str, float | int] = {"n_answers": len(rows)}
    if ans:
        out["refusal_rate"] = sum(r["refusal"] for r in ans) / len(ans)
        out["contains_reference"] = sum(r["contains_reference"] for r in ans) / len(ans)
        out["token_f1"] = sum(r["token_f1"] for r in ans) / len(ans)
        support = [r["lexical_support"] for r in ans if r.get("lexical_support") is not None]
        if support:
            out["lexical_support"] = sum(support) / len(support)
            out["n_lexical_support"] = len(support)
    if una:
        out["unanswerable_refusal_rate"] = sum(r["refusal"] for r in una) / len(una)
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in out.items()}
