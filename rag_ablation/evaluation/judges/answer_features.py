"""What an answer adds to its question, the inputs the combined judge reads beside the judges'
scores (``evaluation.judges.combined``, ``scored``): ``new_f1`` and ``question_overlap``.

Here, apart from ``judging`` (which runs the LLM judges), so the scoring and the judge analysis
read them without importing the LLM client.
"""
from __future__ import annotations

from collections import Counter

from rag_ablation.evaluation.scoring.answer_measures import normalize_answer

ANSWER_FEATURES = ("new_f1", "question_overlap")
"""The answer features of ``answer_features``, in the order the combined judge reads them."""


def answer_features(question: str, reference: str, answer: str) -> dict[str, float]:
    """What the answer adds to the question, from the SQuAD-normalized tokens (``normalize_answer``:
    lower case, punctuation and articles removed) of the three texts, with ``Q`` the question's
    token set:

    * ``new_f1``: token F1 (multiset overlap, as ``token_f1``) between the answer's tokens not in
      ``Q`` and the reference's tokens not in ``Q``; 0 when either has none. A restated question
      scores 0 however many words it shares with the reference;
    * ``question_overlap``: the share of the answer's tokens that are in ``Q``; 1 for an answer
      with no token (nothing added)."""
    q = set(normalize_answer(question).split())
    a = normalize_answer(answer).split()
    new_a = [t for t in a if t not in q]
    new_r = [t for t in normalize_answer(reference).split() if t not in q]
    common = sum((Counter(new_a) & Counter(new_r)).values())
    if common:
        p, r = common / len(new_a), common / len(new_r)
        f1 = 2 * p * r / (p + r)
    else:
        f1 = 0.0
    return {"new_f1": f1, "question_overlap": (len(a) - len(new_a)) / len(a) if a else 1.0}
