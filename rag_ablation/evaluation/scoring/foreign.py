"""Span labels for passages the project did not cut: a team's app's passages, scored by text.

The rule is the labels stage's own (``rag_ablation.evaluation.scoring.labels.relevant_chunks``,
called here, not copied): a passage is relevant to a question when its text contains the span or
any ``labels.window``-character piece of it after whitespace normalization, and, with
``labels.same_doc_only``, when its document is the question's. A passage's document is the part
of its run-file id before the last ``#`` (``rag_ablation.retrieval.external.hits``).

A passage is *unlabelled* when its text is empty or its document is not one of the data set's
documents (``known_docs``): the labels say nothing about it, so it is never matched, and it is
counted (per config and per question) instead of being silently called irrelevant.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from rag_ablation.core.config import LabelsConfig
from rag_ablation.data.questions import Question
from rag_ablation.evaluation.scoring.graded import doc_of
from rag_ablation.evaluation.scoring.labels import relevant_chunks


def question_spans(questions: Sequence[Question]) -> dict[str, str | Sequence[str]]:
    """Each answerable question's span, or its list of spans."""
    return {q.id: q.spans if q.spans is not None else q.span or "" for q in questions if q.answerable}


def unlabelled_passages(passages: Mapping[str, str], known_docs: Collection[str] | None) -> set[str]:
    """The passage ids with empty text or a document not in ``known_docs`` (None: every
    document counts as known)."""
    return {pid for pid, text in passages.items()
            if not text.strip() or (known_docs is not None and doc_of(pid) not in known_docs)}


def foreign_relevant(run: Mapping[str, Any], questions: Sequence[Question], *, labels: LabelsConfig,
                     known_docs: Collection[str] | None) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """(question id -> ids of the run's relevant passages, counts) for an app's run file
    (``passages``: id -> text). The counts: ``passages`` (distinct passages ranked),
    ``unlabelled`` (of them), ``ranked_unlabelled`` (ranking entries whose passage is
    unlabelled, over all questions) and ``unlabelled_ids`` (all of them, sorted)."""
    passages: Mapping[str, str] = run["passages"]
    unlabelled = unlabelled_passages(passages, known_docs)
    answerable = [q for q in questions if q.answerable]
    relevant = relevant_chunks(
        question_spans(answerable),
        ((pid, doc_of(pid), text) for pid, text in sorted(passages.items()) if pid not in unlabelled),
        window=labels.window,
        span_docs={q.id: q.doc or "" for q in answerable} if labels.same_doc_only else None,
    )
    ranked = sum(1 for r in run["questions"] for x in r["ranking"] if x["chunk"] in unlabelled)
    return relevant, {"passages": len(passages), "unlabelled": len(unlabelled), "ranked_unlabelled": ranked,
                      "unlabelled_ids": sorted(unlabelled)}
