"""Import the normalized COVID-QA release (``corpus.jsonl`` + ``questions.jsonl``).

The data lives outside the project (``../shared/datasets/covidqa/``, see its ``SOURCE.md``) and
is read in place, never copied into the repository.

Protocol (the one of ``shared/notes/anchors-covidqa.md``):

- Documents: every line of ``corpus.jsonl`` becomes ``Document(doc=doc_id, track="covidqa",
  text=text)``, in file order.
- Questions: only those whose FIRST answer span has at least ``MIN_SPAN_CHARS`` (20) characters
  are kept (1,087 of the 1,380 in the 2020-04-23 release); shorter answers such as "3" would
  match unrelated chunks. Each kept question is a dict ``{"id": qid, "question": question,
  "span": first answer span, "doc": first gold doc id}``, in file order.
- Relevance (applied by the caller, not here): a chunk is relevant if it belongs to the question's
  ``doc`` and contains its span or any 30-character window of it
  (``rag_ablation.evaluation.scoring.labels.relevant_chunks(..., window=30, span_docs=...)``).
"""
from __future__ import annotations

import json
from pathlib import Path

from rag_ablation.data.corpus import Document
from rag_ablation.core.errors import InvalidData, MissingInput
from rag_ablation.core.io import numbered_lines

TRACK = "covidqa"
MIN_SPAN_CHARS = 20
CORPUS_FILE = "corpus.jsonl"
QUESTIONS_FILE = "questions.jsonl"


def _read_jsonl(path: Path) -> list[dict]:
    """The non-blank lines of ``path``, parsed (lines split at ``\\n`` only: ``numbered_lines``);
    the first line that is not valid JSON raises ``InvalidData`` naming the file and the line."""
    rows = []
    for n, line in numbered_lines(path):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise InvalidData(f"{path} line {n}: not valid JSON ({e.msg} at column {e.colno})") from None
    return rows


def load_covidqa(folder: Path | str, *, min_span: int = MIN_SPAN_CHARS) -> tuple[list[Document], list[dict]]:
    """(documents, questions) of the COVID-QA folder under the protocol of the module docstring.

    Raises ``FileNotFoundError`` if the folder or one of its two files is missing, and
    ``ValueError`` naming the line of a malformed record.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise MissingInput(
            f"COVID-QA folder {folder} does not exist: expected a folder holding {CORPUS_FILE} and "
            f"{QUESTIONS_FILE} (normally ../shared/datasets/covidqa/ beside the project)"
        )
    for name in (CORPUS_FILE, QUESTIONS_FILE):
        if not (folder / name).is_file():
            raise MissingInput(f"COVID-QA folder {folder} has no {name}: expected {CORPUS_FILE} and {QUESTIONS_FILE}")

    documents: list[Document] = []
    for n, row in enumerate(_read_jsonl(folder / CORPUS_FILE), start=1):
        missing = [k for k in ("doc_id", "text") if k not in row]
        if missing:
            raise InvalidData(f"{folder / CORPUS_FILE} record {n}: missing field(s) {', '.join(missing)}")
        documents.append(Document(doc=str(row["doc_id"]), track=TRACK, text=row["text"]))

    questions: list[dict] = []
    for n, row in enumerate(_read_jsonl(folder / QUESTIONS_FILE), start=1):
        missing = [k for k in ("qid", "question", "answer_spans", "gold_doc_ids") if k not in row]
        if missing:
            raise InvalidData(f"{folder / QUESTIONS_FILE} record {n}: missing field(s) {', '.join(missing)}")
        spans, golds = row["answer_spans"], row["gold_doc_ids"]
        if not spans or not golds:
            continue  # no answer or no gold document: nothing to retrieve against
        if len(spans[0]) < min_span:
            continue
        questions.append({"id": str(row["qid"]), "question": row["question"], "span": spans[0], "doc": str(golds[0])})
    return documents, questions
