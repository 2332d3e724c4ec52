"""Question sets: the record, loading, and validation against the corpus.

A question file is JSON lines, one object per question with the fields of ``FIELDS``:
``id`` (unique string), ``question``, ``doc`` (path of the source document under the corpus root,
null for unanswerable), ``span`` (text copied exactly from ``doc``, null for unanswerable),
``answer`` (a one-line reference answer), ``slice`` and ``track``. Questions of the
``unanswerable`` slice carry no span and are excluded from retrieval recall (and counted).

One optional field, ``spans``, gives a question several acceptable spans (a list of texts, each
copied exactly from ``doc``): a chunk holding any of them is relevant. A question gives ``span``
(one text) or ``spans`` (a list), not both: with ``spans``, ``span`` is null or left out. A
question without ``spans`` is written back exactly as before (no ``spans`` key).

``load_questions`` checks everything it can see in the file itself and raises one
``QuestionError`` listing every problem with its line number; ``check_spans`` then checks that
each span occurs in its document after whitespace normalization.
"""
from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Collection
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from rag_ablation.data.corpus import Document
from rag_ablation.core.errors import UserError
from rag_ablation.core.io import numbered_json_lines
from rag_ablation.data.text import match_text, normalize

UNANSWERABLE = "unanswerable"
FIELDS = ("id", "question", "doc", "span", "answer", "slice", "track")
OPTIONAL_FIELDS = ("spans",)
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
    spans: tuple[str, ...] | None = None  # several acceptable spans instead of ``span``

    def __post_init__(self) -> None:
        if self.spans is not None and not isinstance(self.spans, tuple):
            object.__setattr__(self, "spans", tuple(self.spans))

    @property
    def answerable(self) -> bool:
        return self.slice != UNANSWERABLE

    @property
    def relevant_spans(self) -> tuple[str, ...]:
        """Every acceptable span: ``spans`` when given, else ``(span,)``; () when unanswerable."""
        if self.spans is not None:
            return self.spans
        return (self.span,) if self.span is not None else ()

    def to_json(self) -> dict:
        """The question as a JSON object; ``spans`` only when the question has it."""
        d = asdict(self)
        if self.spans is None:
            del d["spans"]
        else:
            d["spans"] = list(self.spans)
        return d


def _problems_of(obj: object, min_span: int) -> list[str]:
    if not isinstance(obj, dict):
        return [f"expected a JSON object, found {type(obj).__name__}"]
    out = []
    has_spans = obj.get("spans") is not None
    missing = [f for f in FIELDS if f not in obj and not (f == "span" and has_spans)]
    if missing:
        out.append(f"missing field(s) {', '.join(missing)}")
    extra = sorted(set(obj) - set(FIELDS) - set(OPTIONAL_FIELDS))
    if extra:
        out.append(f"unknown field(s) {', '.join(extra)} (expected only {', '.join(FIELDS + OPTIONAL_FIELDS)})")
    for f in ("id", "question", "answer", "slice", "track"):
        if f in obj and (not isinstance(obj[f], str) or not obj[f].strip()):
            out.append(f"field {f!r} must be a non-empty string, found {obj[f]!r}")
    unanswerable = obj.get("slice") == UNANSWERABLE
    for f in ("doc", "span", "spans"):
        if f not in obj or (f == "span" and has_spans and obj[f] is None):
            continue
        v = obj[f]
        if unanswerable and v is not None:
            out.append(f"field {f!r} must be null for an unanswerable question, found {v!r}")
        elif f == "span" and has_spans:
            out.append(f"fields 'span' and 'spans' both set, found span {v!r}: give one span in 'span' or several "
                       f"in 'spans' (then set 'span' to null)")
        elif f == "spans":
            if not unanswerable and v is not None and (
                    not isinstance(v, list) or not v or not all(isinstance(x, str) and x.strip() for x in v)):
                out.append(f"field 'spans' must be a non-empty list of non-empty strings, found {v!r}")
        elif not unanswerable and (not isinstance(v, str) or not v.strip()):
            out.append(f"field {f!r} must be a non-empty string, found {v!r}")
        elif f == "doc" and isinstance(v, str) and (v.startswith("/") or ".." in v.split("/")):
            out.append(f"field 'doc' must be a path under the corpus root (track/file.md), found {v!r}")
    if not unanswerable:
        spans = obj.get("spans") if has_spans else [obj.get("span")]
        for i, span in enumerate(spans if isinstance(spans, list) else []):
            if isinstance(span, str) and span.strip() and len(normalize(span)) < min_span:
                which = f"spans[{i}]" if has_spans else "span"
                out.append(f"question {obj.get('id')!r}: {which} {span!r} has {len(normalize(span))} characters, "
                           f"expected at least {min_span} (labels.min_span); copy a longer span from the document "
                           f"or lower labels.min_span")
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
        record = cast(dict[str, Any], obj)  # a dict: _problems_of flags anything else
        values: dict[str, Any] = {f: record.get(f) for f in FIELDS + OPTIONAL_FIELDS}
        questions.append(Question(**values))
    if not questions and not problems:
        problems.append("no questions found")
    if problems:
        raise QuestionError(
            f"{path}: {len(problems)} problem(s); fix them and rerun:\n  " + "\n  ".join(problems)
        )
    return questions


def nearest_text(text: str, span: str, *, context: int = 10) -> str:
    """The passage of ``text`` (both normalized) that best matches ``span``: around the longest
    block the two share (``difflib.SequenceMatcher.find_longest_match``), as long as the span
    plus ``context`` characters each side; "" when they share nothing."""
    t, s = match_text(text), match_text(span)
    m = difflib.SequenceMatcher(None, t, s, autojunk=False).find_longest_match(0, len(t), 0, len(s))
    if m.size == 0:
        return ""
    start = max(0, m.a - m.b - context)
    return t[start : m.a - m.b + len(s) + context]


def check_spans(questions: list[Question], documents: list[Document], *, seen: Collection[str] = ()) -> None:
    """Every answerable question's document exists and contains its span, or each of its
    ``spans`` (both as ``normalize`` makes them). A ``doc`` not in the corpus whose file name is
    (e.g. one missing its track folder) gets a hint naming the corpus path(s) with that name. A
    span not found is named with its document ("not found in the text of FILE", "the converted
    text" for a file that is not .md or .txt) and the nearest passage of that text
    (:func:`nearest_text`). ``seen``: ids of questions an earlier run accepted (the split file);
    their spans were found then, so theirs is called *stale* (the document changed since), the
    others *not found* (a new question). Raises one ``QuestionError`` naming every failing
    question id (with ``spans[i]`` for a span of a list)."""
    texts = {d.doc: d.text for d in documents}
    normalized = {d.doc: match_text(d.text) for d in documents}
    by_name: dict[str, list[str]] = {}
    for d in documents:
        by_name.setdefault(d.doc.rsplit("/", 1)[-1], []).append(d.doc)
    missing_doc: list[str] = []
    missing_span: list[str] = []
    for q in questions:
        if not q.answerable:
            continue
        if q.doc not in texts:
            near = by_name.get((q.doc or "").rsplit("/", 1)[-1], [])
            hint = (f"; did you mean {' or '.join(near)}? the path must include the track" if near else "")
            missing_doc.append(f"{q.id} (doc {q.doc!r}{hint})")
            continue
        given = [(q.id, q.span or "")] if q.spans is None else [(f"{q.id} (spans[{i}])", s) for i, s in enumerate(q.spans)]
        for name, span in given:
            if match_text(span) in normalized[q.doc]:
                continue
            kind = "converted text" if not q.doc.lower().endswith((".md", ".txt")) else "text"
            line = (f"{name}: stale: found on an earlier run, so the document changed since; not in the {kind} of "
                    f"{q.doc}" if q.id in seen else f"{name}: not found in the {kind} of {q.doc}")
            nearest = nearest_text(texts[q.doc], span)
            missing_span.append(line + (f"; nearest: {nearest!r}" if nearest else "; no part of it is there"))
    parts = []
    if missing_doc:
        parts.append(f"{len(missing_doc)} question(s) name a document not in the corpus: " + ", ".join(missing_doc))
    if missing_span:
        parts.append(f"{len(missing_span)} span(s) not in their document:\n  " + "\n  ".join(missing_span))
    if parts:
        raise QuestionError(
            "question set does not match the corpus: " + "; ".join(parts)
            + "\nRe-copy each span from the document's text as the pipeline reads it (`rag-ablation label` shows "
              "it; `rag-ablation convert FILE` prints a converted file), or restore the document."
        )


def slice_counts(questions: list[Question]) -> dict[str, int]:
    return dict(sorted(Counter(q.slice for q in questions).items()))
