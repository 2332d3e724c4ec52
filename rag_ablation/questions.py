"""Question sets: loading, validation against the corpus, and lexical overlap.

A question file is JSON lines, one object per question with the fields of ``FIELDS``:
``id`` (unique string), ``question``, ``doc`` (path of the source document under the corpus root,
null for unanswerable), ``span`` (text copied exactly from ``doc``, null for unanswerable),
``answer`` (a one-line reference answer), ``slice`` and ``track``. Questions of the
``unanswerable`` slice carry no span and are excluded from retrieval recall (and counted).

``load_questions`` checks everything it can see in the file itself and raises one
``QuestionError`` listing every problem with its line number; ``check_spans`` then checks that
each span occurs in its document after whitespace normalization.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from rag_ablation.corpus import Document
from rag_ablation.labels import normalize

UNANSWERABLE = "unanswerable"
FIELDS = ("id", "question", "doc", "span", "answer", "slice", "track")
MIN_SPAN_CHARS = 20


class QuestionError(ValueError):
    """A question file that fails validation; the message lists every problem."""


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    doc: str | None
    span: str | None
    answer: str
    slice: str
    track: str

    @property
    def answerable(self) -> bool:
        return self.slice != UNANSWERABLE

    def to_json(self) -> dict:
        return asdict(self)


def _problems_of(obj: object, min_span: int) -> list[str]:
    if not isinstance(obj, dict):
        return [f"expected a JSON object, found {type(obj).__name__}"]
    out = []
    missing = [f for f in FIELDS if f not in obj]
    if missing:
        out.append(f"missing field(s) {', '.join(missing)}")
    extra = sorted(set(obj) - set(FIELDS))
    if extra:
        out.append(f"unknown field(s) {', '.join(extra)} (expected only {', '.join(FIELDS)})")
    for f in ("id", "question", "answer", "slice", "track"):
        if f in obj and (not isinstance(obj[f], str) or not obj[f].strip()):
            out.append(f"field {f!r} must be a non-empty string, found {obj[f]!r}")
    unanswerable = obj.get("slice") == UNANSWERABLE
    for f in ("doc", "span"):
        if f not in obj:
            continue
        v = obj[f]
        if unanswerable and v is not None:
            out.append(f"field {f!r} must be null for an unanswerable question, found {v!r}")
        if not unanswerable and (not isinstance(v, str) or not v.strip()):
            out.append(f"field {f!r} must be a non-empty string, found {v!r}")
    span = obj.get("span")
    if not unanswerable and isinstance(span, str) and len(normalize(span)) < min_span:
        out.append(f"span {span!r} has {len(normalize(span))} characters, expected at least {min_span}")
    return out


def load_questions(path: Path, *, min_span: int = MIN_SPAN_CHARS) -> list[Question]:
    """Read and validate a JSON-lines question file (module docstring). Blank lines are
    allowed. Raises ``QuestionError`` naming every bad line."""
    path = Path(path)
    if not path.is_file():
        raise QuestionError(f"question file {path} does not exist: expected JSON lines with fields {', '.join(FIELDS)}")
    problems: list[str] = []
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"line {n}: not valid JSON ({e.msg} at column {e.colno})")
            continue
        bad = _problems_of(obj, min_span)
        if isinstance(obj, dict) and isinstance(obj.get("id"), str):
            if obj["id"] in seen:
                bad.append(f"duplicate id {obj['id']!r} (first on line {seen[obj['id']]})")
            else:
                seen[obj["id"]] = n
        if bad:
            problems.extend(f"line {n}: {b}" for b in bad)
            continue
        questions.append(Question(**{f: obj[f] for f in FIELDS}))
    if not questions and not problems:
        problems.append("no questions found")
    if problems:
        raise QuestionError(
            f"{path}: {len(problems)} problem(s); fix them and rerun:\n  " + "\n  ".join(problems)
        )
    return questions


def check_spans(questions: list[Question], documents: list[Document]) -> None:
    """Every answerable question's document exists and contains its span (whitespace
    normalized). Raises one ``QuestionError`` naming every question id that fails: the usual
    cause is a question set gone stale after the corpus was edited."""
    texts = {d.doc: normalize(d.text) for d in documents}
    missing_doc: list[str] = []
    missing_span: list[str] = []
    for q in questions:
        if not q.answerable:
            continue
        if q.doc not in texts:
            missing_doc.append(f"{q.id} (doc {q.doc!r})")
        elif normalize(q.span or "") not in texts[q.doc]:
            missing_span.append(q.id)
    parts = []
    if missing_doc:
        parts.append(f"{len(missing_doc)} question(s) name a document not in the corpus: " + ", ".join(missing_doc))
    if missing_span:
        parts.append(
            f"{len(missing_span)} question(s) have a span not found in their document: "
            + ", ".join(missing_span)
        )
    if parts:
        raise QuestionError(
            "stale question set: " + "; ".join(parts)
            + ". Re-copy each span from the current document text, or restore the document."
        )


def slice_counts(questions: list[Question]) -> dict[str, int]:
    return dict(sorted(Counter(q.slice for q in questions).items()))


# --- lexical overlap ----------------------------------------------------------------------

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


def source_passage(span: str, doc_text: str, *, budget: int = 800) -> str:
    """The question-writing passage (``rag_ablation.passages.split_passages``) of ``doc_text``
    that contains ``span`` (whitespace normalized); if the span straddles passages, the
    normalized document text from ``budget // 2`` characters before the span to as many after."""
    from rag_ablation.passages import split_passages

    s = normalize(span)
    for p in split_passages(doc_text, "", "", budget):
        if s in normalize(p.text):
            return p.text
    text = normalize(doc_text)
    at = text.find(s)
    if at < 0:
        return ""
    return text[max(0, at - budget // 2) : at + len(s) + budget // 2]


def overlap_by_slice(questions: list[Question], documents: list[Document]) -> dict[str, float]:
    """Mean ``lexical_overlap`` of each answerable question with its span's passage, per slice."""
    texts = {d.doc: d.text for d in documents}
    per: dict[str, list[float]] = {}
    for q in questions:
        if q.answerable and q.doc in texts:
            per.setdefault(q.slice, []).append(lexical_overlap(q.question, source_passage(q.span or "", texts[q.doc])))
    return {s: round(sum(v) / len(v), 4) for s, v in sorted(per.items())}


def span_regions(span: str, documents: list[Document], *, region: int = 800) -> int:
    """In how many separate places the normalized span occurs: occurrences in different
    documents, or more than ``region`` characters apart in one, count separately."""
    s = normalize(span)
    if not s:
        return 0
    count = 0
    for d in documents:
        text = normalize(d.text)
        last = None
        at = text.find(s)
        while at >= 0:
            if last is None or at - last > region:
                count += 1
                last = at
            at = text.find(s, at + 1)
    return count


def ambiguous_spans(questions: list[Question], documents: list[Document], *, region: int = 800) -> list[str]:
    """Ids of answerable questions whose span occurs in more than one region (see above)."""
    return [q.id for q in questions if q.answerable and span_regions(q.span or "", documents, region=region) > 1]
