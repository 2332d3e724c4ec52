"""Question sets: the record, loading, and validation against the corpus.

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

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from rag_ablation.corpus import Document
from rag_ablation.errors import UserError
from rag_ablation.io import numbered_json_lines
from rag_ablation.text import normalize

UNANSWERABLE = "unanswerable"
FIELDS = ("id", "question", "doc", "span", "answer", "slice", "track")
MIN_SPAN_CHARS = 20  # the default of labels.min_span (and the floor of label audit spans)


class QuestionError(UserError, ValueError):
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
        elif f == "doc" and isinstance(v, str) and (v.startswith("/") or ".." in v.split("/")):
            out.append(f"field 'doc' must be a path under the corpus root (track/file.md), found {v!r}")
    span = obj.get("span")
    if not unanswerable and isinstance(span, str) and len(normalize(span)) < min_span:
        out.append(f"question {obj.get('id')!r}: span {span!r} has {len(normalize(span))} characters, expected at "
                   f"least {min_span} (labels.min_span); copy a longer span from the document or lower labels.min_span")
    return out


def load_questions(path: Path, *, min_span: int = MIN_SPAN_CHARS) -> list[Question]:
    """Read and validate a JSON-lines question file (module docstring). Blank lines are
    allowed. A span shorter than ``min_span`` characters (whitespace normalized;
    ``labels.min_span`` in the questions stage) is a problem naming its question. Raises
    ``QuestionError`` naming every bad line."""
    path = Path(path)
    if not path.is_file():
        raise QuestionError(f"question file {path} does not exist: expected JSON lines with fields {', '.join(FIELDS)}")
    rows, problems = numbered_json_lines(path)
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for n, obj in rows:
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
