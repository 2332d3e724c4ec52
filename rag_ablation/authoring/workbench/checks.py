"""The workbench's checks: the pipeline's own validation, run before anything is written.

A question is refused (``problems``) exactly when the ``questions`` stage would refuse the
question file with it appended: the candidate file (the current file's bytes plus the new line)
goes through ``rag_ablation.data.questions.load_questions`` with ``labels.min_span`` (fields,
empty strings, duplicate ids, short spans) and the new question through ``check_spans`` (its
span occurs in its document, whitespace normalized). An audit line is refused exactly when
``rag_ablation.evaluation.scoring.audit.load_audit`` would refuse the audit file with it
appended. So nothing the workbench writes can fail the pipeline.

Warnings never block a save. For a question with a span (``span_facts``): in how many
documents the normalized span occurs, how many chunks of the baseline chunking
(``stats.baseline``'s) the labels stage would mark relevant (``relevant_chunks`` with
``labels.window``), warned above ``labels.max_relevant``; and the content-word overlap of the
question with its span's passage (``question_stats.lexical_overlap`` against
``source_passage``, as the questions stage reports it), warned above ``workbench.overlap_warn``.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_ablation.core.config import Params
from rag_ablation.core.errors import UserError
from rag_ablation.data.corpus import Document
from rag_ablation.data.question_stats import lexical_overlap, source_passage
from rag_ablation.data.questions import Question, QuestionError, check_spans, load_questions
from rag_ablation.data.text import match_text
from rag_ablation.evaluation.scoring.audit import load_audit
from rag_ablation.evaluation.scoring.labels import relevant_chunks
from rag_ablation.retrieval.chunking import chunk_corpus, chunk_options

from rag_ablation.authoring.workbench.store import appended_text, json_line


@dataclass(frozen=True)
class CorpusView:
    """The corpus as the checks need it, built once per session: documents by path, their
    normalized texts, and the (chunk id, doc, body) triples of the baseline chunking."""

    documents: tuple[Document, ...]
    chunking: str
    bodies: tuple[tuple[str, str, str], ...]
    by_doc: Mapping[str, Document] = field(default_factory=dict)
    normalized: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, documents: Sequence[Document], params: Params) -> CorpusView:
        """Chunk ``documents`` with the chunking of ``stats.baseline`` (the first chunking of params
        when the baseline is an app), in memory, as the chunk stage would."""
        # an app as the baseline has no chunking: the first chunking of params stands in
        name = params.config(params.stats.baseline).chunking or next(iter(params.chunkings))
        chunks = chunk_corpus(((d.doc, d.track, d.text) for d in documents), **chunk_options(params.chunking(name)))
        return cls(documents=tuple(documents), chunking=name, bodies=tuple((c.id, c.doc, c.body) for c in chunks),
                   by_doc={d.doc: d for d in documents}, normalized={d.doc: match_text(d.text) for d in documents})


@dataclass(frozen=True)
class Verdict:
    """What the checks found: ``problems`` refuse the save, ``warnings`` do not; ``facts`` are
    the numbers shown beside the form (``n_docs``, ``n_chunks``, ``overlap``, ``span_chars``)."""

    problems: list[str]
    warnings: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "problems": self.problems, "warnings": self.warnings, "facts": self.facts}


def problems_of_line(message: str, line: int) -> list[str]:
    """The problems a file validator's message (``PATH: N problem(s); ...:`` then one problem a
    line) lists, those of line ``line`` without their ``line N:`` prefix; problems of other lines
    (the file was broken before) are kept whole, prefixed ``already in the file:``."""
    own, other = [], []
    for part in message.split("\n")[1:]:
        part = part.strip()
        prefix = f"line {line}: "
        if part.startswith(prefix):
            own.append(part[len(prefix):])
        elif part:
            other.append(f"already in the file: {part}")
    return own + other or [message]


def _with_candidate(path: Path, record: Mapping[str, Any], validate: Callable[[Path], Any]) -> list[str]:
    """Run ``validate`` on a temporary copy of ``path`` with ``record`` appended (as
    ``store.append_record`` would write it); the problems of its message (``problems_of_line``)."""
    old = Path(path).read_text(encoding="utf-8") if Path(path).is_file() else ""
    text = appended_text(old, json_line(record))
    with tempfile.TemporaryDirectory(prefix="rag-ablation-label-") as tmp:
        candidate = Path(tmp) / Path(path).name
        candidate.write_text(text, encoding="utf-8")
        try:
            validate(candidate)
        except UserError as e:
            return problems_of_line(str(e), text.count("\n"))
    return []


def question_problems(questions_file: Path, record: Mapping[str, Any], *, min_span: int,
                      documents: Sequence[Document]) -> list[str]:
    """Why the questions stage would refuse ``questions_file`` with ``record`` appended; [] if it
    would not (module docstring)."""
    problems = _with_candidate(questions_file, record, lambda p: load_questions(p, min_span=min_span))
    if problems:
        return problems
    q = Question(**record)
    try:
        check_spans([q], list(documents))
    except QuestionError:
        doc = record.get("doc")
        if q.doc not in {d.doc for d in documents}:
            return [f"document {doc!r} is not in the corpus: label a passage the workbench shows"]
        return [f"span not found in {doc} (as labels match it: markup, hyphens and whitespace aside): select the span with the "
                f"mouse inside the passage, copied exactly"]
    return []


def audit_problems(audit_file: Path, record: Mapping[str, Any], *, questions: Sequence[Question],
                   documents: Sequence[Document]) -> list[str]:
    """Why the score stage would refuse ``audit_file`` with ``record`` appended; [] if it would not."""
    return _with_candidate(audit_file, record, lambda p: load_audit(p, questions, documents))


def span_facts(view: CorpusView, params: Params, *, question: str, doc: str, spans: Sequence[str]) -> Verdict:
    """Warnings and numbers for a question with ``spans`` in ``doc`` (module docstring). ``n_docs``
    counts documents holding any span whole; ``n_chunks`` the baseline chunks the labels stage
    would mark relevant (any span, any ``labels.window`` piece)."""
    labels, warnings = params.labels, []
    norm = [match_text(s) for s in spans if match_text(s)]
    if not norm:
        return Verdict(problems=[], facts={})
    n_docs = sum(1 for text in view.normalized.values() if any(s in text for s in norm))
    hits = relevant_chunks({"q": norm}, view.bodies, window=labels.window,
                           span_docs={"q": doc} if labels.same_doc_only else None)["q"]
    if len(hits) > labels.max_relevant:
        warnings.append(f"the span matches {len(hits)} chunks of the {view.chunking} chunking, more than "
                        f"labels.max_relevant ({labels.max_relevant}): a span this common makes a hit easy; "
                        f"select a more specific span")
    passage = source_passage(norm[0], view.by_doc[doc].text) if doc in view.by_doc else ""
    overlap = round(lexical_overlap(question, passage), 4)
    if overlap > params.workbench.overlap_warn:
        warnings.append(f"the question shares {overlap:.0%} of its content words with its passage, above "
                        f"workbench.overlap_warn ({params.workbench.overlap_warn:.0%}): that favours BM25; "
                        f"ask it in your own words")
    return Verdict(problems=[], warnings=warnings, facts={
        "n_docs": n_docs, "n_chunks": len(hits), "overlap": overlap, "span_chars": [len(s) for s in norm],
        "chunking": view.chunking})
