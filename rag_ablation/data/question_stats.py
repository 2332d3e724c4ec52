"""What the questions stage reports about a question set: lexical overlap of each question
with the passage its span came from (per slice), and spans that occur in more than one place
(candidates for a label audit). Only the questions stage uses this module.
"""
from __future__ import annotations

import re

from rag_ablation.data.passages import PASSAGE_BUDGET, split_passages
from rag_ablation.data.corpus import Document
from rag_ablation.data.questions import Question
from rag_ablation.data.text import match_text

_WORD = re.compile(r"[a-z0-9_]+")
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers him his how i if in into is it its itself just me more most my
    no nor not now of off on once only or other our out over own same she should so some such than
    that the their them then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours""".split()
)


def content_words(text: str) -> list[str]:
    """Lowercased word tokens minus English stopwords."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def lexical_overlap(question: str, passage: str) -> float:
    """Share of the question's distinct content words that also occur in the passage, in [0, 1].
    A question with no content words scores 0.0."""
    q = set(content_words(question))
    if not q:
        return 0.0
    return len(q & set(content_words(passage))) / len(q)


def source_passage(span: str, doc_text: str, *, budget: int = PASSAGE_BUDGET) -> str:
    """The question-writing passage (``rag_ablation.data.passages.split_passages``) of ``doc_text``
    that contains ``span`` (whitespace normalized); if the span straddles passages, the
    normalized document text from ``budget // 2`` characters before the span to as many after."""
    s = match_text(span)
    for p in split_passages(doc_text, "", "", budget):
        if s in match_text(p.text):
            return p.text
    text = match_text(doc_text)
    at = text.find(s)
    if at < 0:
        return ""
    return text[max(0, at - budget // 2) : at + len(s) + budget // 2]


def overlap_by_slice(questions: list[Question], documents: list[Document]) -> dict[str, float]:
    """Mean ``lexical_overlap`` of each answerable question with its span's passage (the first
    of its ``spans``), per slice."""
    texts = {d.doc: d.text for d in documents}
    per: dict[str, list[float]] = {}
    for q in questions:
        if q.answerable and q.doc in texts:
            per.setdefault(q.slice, []).append(lexical_overlap(q.question, source_passage(q.relevant_spans[0], texts[q.doc])))
    return {s: round(sum(v) / len(v), 4) for s, v in sorted(per.items())}


def span_regions(span: str, documents: list[Document], *, region: int) -> int:
    """In how many separate places the normalized span occurs: occurrences in different
    documents, or more than ``region`` characters apart in one, count separately (the questions
    stage passes ``chunk_size``: a chunk-sized region)."""
    return _regions(match_text(span), [match_text(d.text) for d in documents], region)


def _regions(s: str, texts: list[str], region: int) -> int:
    """``span_regions`` over documents already normalized (each is normalized once per stage
    run, not once per span: on COVID-QA that was 1,087 x 98 long articles)."""
    if not s:
        return 0
    count = 0
    for text in texts:
        last = None
        at = text.find(s)
        while at >= 0:
            if last is None or at - last > region:
                count += 1
                last = at
            at = text.find(s, at + 1)
    return count


def ambiguous_spans(questions: list[Question], documents: list[Document], *, region: int) -> list[str]:
    """Ids of answerable questions whose span (or any of its ``spans``) occurs in more than one
    region (see above)."""
    texts = [match_text(d.text) for d in documents]
    return [q.id for q in questions if q.answerable
            and any(_regions(match_text(span), texts, region) > 1 for span in q.relevant_spans)]
