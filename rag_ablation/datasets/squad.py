"""Import a SQuAD v1.1 or v2.0 JSON file as a corpus track and a question file.

Input: ``{"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
"answers": [{"text", "answer_start"}], "is_impossible" (v2 only)}]}]}]}``.

Protocol (``import_squad``):

- Documents: one per article title, in file order, written to ``<corpus>/<track>/<name>.md``
  where ``<name>`` is ``safe_file_name(title)``. The text is ``# <title>`` (underscores shown as
  spaces: SQuAD titles are Wikipedia page names such as ``Super_Bowl_50``), a blank line, then
  the article's contexts, verbatim, joined by blank lines. Articles sharing a title are merged
  into one document. Every article is written, including those whose questions were all
  dropped: they remain distractors.
- Questions (``rag_ablation.data.questions`` format), in file order:

  - ``is_impossible`` true (v2): ``slice: unanswerable``, ``doc: None``, ``span: None``,
    ``answer: UNANSWERABLE_ANSWER``;
  - otherwise (every v1.1 question): ``doc`` = the article's document, ``answer`` = the FIRST
    answer's text, and ``span`` = that text (``span="answer"``) or the sentence(s) of the
    context holding it (``span="sentence"``, see ``sentence_bounds``), ``slice: main``.

  The question format requires spans of at least ``MIN_SPAN_CHARS`` (20) characters, because
  short answers such as "Denver Broncos" match unrelated chunks. Most SQuAD answers are
  shorter, so ``span="answer"`` keeps only the long ones (each drop counted under
  ``span_too_short``); ``span="sentence"`` keeps nearly all.
- Validation: a file that does not have the structure above (not JSON, a missing key, a wrong
  type) raises ``InvalidData`` listing every problem with its JSON path, and nothing is written.
  Data problems drop the record and are counted in the returned ``ImportReport`` with example
  ids (``DROP_REASONS``); a first answer not found at its ``answer_start`` but found elsewhere in
  the context is kept, using the occurrence nearest ``answer_start``, and counted under
  ``ADJUST_REASONS``. Nothing is skipped silently; an import left with no question at all raises
  ``NothingImported`` with the report.
- Outputs are atomic (``rag_ablation.datasets.imports.write_import``): everything is read and
  checked first, the track folder and the question file are staged beside their targets and
  renamed into place last, so an error leaves the previous outputs untouched.

What every importer shares (``ImportReport``, ``safe_file_name`` / ``safe_file_names``,
``write_import``, ...) is in ``rag_ablation.datasets.imports``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from rag_ablation.data.corpus import Document
from rag_ablation.core.errors import InvalidData, MissingInput, UserError
from rag_ablation.data.questions import MIN_SPAN_CHARS, UNANSWERABLE, Question, check_spans
from rag_ablation.data.text import normalize
from rag_ablation.datasets.imports import (
    ANSWERABLE_SLICE,
    ImportReport,
    NothingImported,
    check_track,
    questions_text,
    safe_file_names,
    write_import,
)

TRACK = "squad"
SPAN_MODES = ("answer", "sentence")
UNANSWERABLE_ANSWER = "The documents do not say."

DROP_REASONS = {
    "duplicate_id": "question id already seen (the first occurrence is kept)",
    "empty_question": "question text empty or only whitespace",
    "no_answers": "possible question (is_impossible false or absent) with no answers",
    "empty_answer": "first answer's text empty or only whitespace",
    "answer_not_in_context": "first answer's text found neither at answer_start nor anywhere in its context",
    "span_too_short": "span shorter than the question format's minimum (span='sentence' keeps more)",
}
ADJUST_REASONS = {
    "answer_start_mismatch": "first answer's text not at answer_start but found elsewhere in the context "
                             "(kept; the occurrence nearest answer_start is used)",
    "impossible_with_answers": "is_impossible true but answers given (kept as unanswerable; answers ignored)",
}
NOTE_KEYS = {
    "empty_context": "paragraph with an empty context (left out of its document)",
    "merged_title": "article whose title an earlier article already used (paragraphs merged into one document)",
}


# ---------------------------------------------------------------------------------------------
# sentences

# A sentence ends after ., ! or ? (and any closing quotes or brackets) followed by whitespace and
# then an uppercase letter, a digit or an opening quote/bracket; a line break always ends one.
_BOUNDARY = re.compile(r"(?<=[.!?])(?P<close>[\"'\u201d\u2019)\]]*)\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])|\s*\n\s*")


def sentence_bounds(context: str, start: int, end: int) -> tuple[int, int]:
    """(begin, end) offsets in ``context`` of the sentence(s) holding ``context[start:end]``.

    The rule (deliberately simple): a sentence ends after ``.``, ``!`` or ``?``, plus any closing
    quotes or brackets, when whitespace and then an uppercase letter, a digit or an opening
    quote/bracket follow; a line break always ends a sentence. Abbreviations such as "U.S. Army"
    therefore split too; an answer that crosses a boundary gets every sentence it touches, so the
    result always contains the answer. Surrounding whitespace is excluded."""
    begin, stop = 0, len(context)
    for m in _BOUNDARY.finditer(context):
        if m.end() <= start:
            begin = m.end()
        elif m.start() >= end:
            stop = m.end("close") if m.group("close") is not None else m.start()
            break
    while begin < start and context[begin].isspace():
        begin += 1
    while stop > end and context[stop - 1].isspace():
        stop -= 1
    return begin, stop


# ---------------------------------------------------------------------------------------------
# SQuAD


def _structure_problems(data: object) -> list[str]:
    """Every departure from the SQuAD structure, with its JSON path."""
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return ["top level: expected an object with a 'data' list of articles"]
    out: list[str] = []

    def need(obj: object, where: str, key: str, types: type | tuple[type, ...], what: str) -> bool:
        if not isinstance(obj, dict):
            out.append(f"{where}: expected an object, found {type(obj).__name__}")
            return False
        if key not in obj:
            out.append(f"{where}: missing {key!r} ({what})")
            return False
        if isinstance(obj[key], bool) or not isinstance(obj[key], types):
            out.append(f"{where}.{key}: expected {what}, found {type(obj[key]).__name__}")
            return False
        return True

    for a, art in enumerate(data["data"]):
        wa = f"data[{a}]"
        if need(art, wa, "title", str, "a string") and not art["title"].strip():
            out.append(f"{wa}.title: empty")
        if not need(art, wa, "paragraphs", list, "a list"):
            continue
        for p, par in enumerate(art["paragraphs"]):
            wp = f"{wa}.paragraphs[{p}]"
            need(par, wp, "context", str, "a string")
            if not need(par, wp, "qas", list, "a list"):
                continue
            for q, qa in enumerate(par["qas"]):
                wq = f"{wp}.qas[{q}]"
                if need(qa, wq, "id", (str, int), "a string") and not str(qa["id"]).strip():
                    out.append(f"{wq}.id: empty")
                need(qa, wq, "question", str, "a string")
                if isinstance(qa, dict) and "is_impossible" in qa and not isinstance(qa["is_impossible"], bool):
                    out.append(f"{wq}.is_impossible: expected true or false, found {qa['is_impossible']!r}")
                if not need(qa, wq, "answers", list, "a list"):
                    continue
                for n, ans in enumerate(qa["answers"]):
                    wn = f"{wq}.answers[{n}]"
                    need(ans, wn, "text", str, "a string")
                    need(ans, wn, "answer_start", int, "an integer")
    return out


def _nearest(context: str, text: str, start: int) -> int | None:
    best: int | None = None
    i = context.find(text)
    while i >= 0:
        if best is None or abs(i - start) < abs(best - start):
            best = i
        i = context.find(text, i + 1)
    return best


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InvalidData(f"{path}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); "
                          f"expected a SQuAD v1.1/v2.0 file") from None
    except UnicodeDecodeError as e:
        raise InvalidData(f"{path}: not UTF-8 ({e.reason} at byte {e.start}); expected a SQuAD JSON file") from None


def read_squad(path: Path | str, *, span: str = "answer", track: str = TRACK,
               min_span: int = MIN_SPAN_CHARS) -> tuple[dict[str, str], list[Question], ImportReport]:
    """(document file name -> text, questions, report) of a SQuAD file under the module's
    protocol, without writing anything. Raises ``MissingInput`` for a missing file and
    ``InvalidData`` listing every structural problem."""
    path = Path(path)
    if span not in SPAN_MODES:
        raise UserError(f"unknown span mode {span!r}; expected one of: {', '.join(SPAN_MODES)}")
    check_track(track)
    if not path.is_file():
        raise MissingInput(f"SQuAD file {path} does not exist: expected a SQuAD v1.1/v2.0 JSON file "
                           f"(such as train-v2.0.json)")
    data = _read_json(path)
    problems = _structure_problems(data)
    if problems:
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        raise InvalidData(f"{path} is not a SQuAD v1.1/v2.0 file: {len(problems)} problem(s); fix them and rerun:\n  "
                          + "\n  ".join(shown))
    assert isinstance(data, dict)
    report = ImportReport(source=f"SQuAD {path.name}")
    articles = data["data"]
    names = safe_file_names(dict.fromkeys(a["title"] for a in articles))
    contexts: dict[str, list[str]] = {}
    questions: list[Question] = []
    seen: set[str] = set()
    n_par = n_q = 0
    for art in articles:
        title = art["title"]
        doc = f"{track}/{names[title]}.md"
        if title in contexts:
            report.note("merged_title", title, NOTE_KEYS["merged_title"])
        parts = contexts.setdefault(title, [])
        for par in art["paragraphs"]:
            n_par += 1
            context = par["context"]
            if context.strip():
                parts.append(context)
            else:
                report.note("empty_context", title, NOTE_KEYS["empty_context"])
            for qa in par["qas"]:
                n_q += 1
                qid = str(qa["id"])
                if qid in seen:
                    report.drop("duplicate_id", qid, DROP_REASONS["duplicate_id"])
                    continue
                seen.add(qid)
                question = qa["question"].strip()
                if not question:
                    report.drop("empty_question", qid, DROP_REASONS["empty_question"])
                    continue
                if qa.get("is_impossible", False):
                    if qa["answers"]:
                        report.adjust("impossible_with_answers", qid, ADJUST_REASONS["impossible_with_answers"])
                    questions.append(Question(id=qid, question=question, doc=None, span=None,
                                              answer=UNANSWERABLE_ANSWER, slice=UNANSWERABLE, track=track))
                    continue
                if not qa["answers"]:
                    report.drop("no_answers", qid, DROP_REASONS["no_answers"])
                    continue
                text, start = qa["answers"][0]["text"], qa["answers"][0]["answer_start"]
                if not text.strip():
                    report.drop("empty_answer", qid, DROP_REASONS["empty_answer"])
                    continue
                if context[start : start + len(text)] != text:
                    found = _nearest(context, text, start)
                    if found is None:
                        report.drop("answer_not_in_context", qid, DROP_REASONS["answer_not_in_context"])
                        continue
                    report.adjust("answer_start_mismatch", qid, ADJUST_REASONS["answer_start_mismatch"])
                    start = found
                if span == "sentence":
                    b, e = sentence_bounds(context, start, start + len(text))
                    chosen = context[b:e]
                else:
                    chosen = text.strip()
                if len(normalize(chosen)) < min_span:
                    report.drop("span_too_short", qid,
                                f"{DROP_REASONS['span_too_short']}: fewer than {min_span} characters")
                    continue
                questions.append(Question(id=qid, question=question, doc=doc, span=chosen,
                                          answer=normalize(text), slice=ANSWERABLE_SLICE, track=track))
    documents = {
        f"{names[title]}.md": f"# {normalize(title.replace('_', ' '))}\n\n" + "\n\n".join(parts) + "\n"
        for title, parts in contexts.items()
    }
    report.read = {"articles": len(articles), "paragraphs": n_par, "questions": n_q}
    report.documents = len(documents)
    report.questions = len(questions)
    report.unanswerable = sum(not q.answerable for q in questions)
    # the pipeline's own check, so that what is written passes the `questions` stage
    check_spans(questions, [Document(f"{track}/{name}", track, text) for name, text in documents.items()])
    return documents, questions, report


def import_squad(path: Path | str, out_corpus_dir: Path | str, out_questions_path: Path | str, *,
                 span: str = "answer", track: str = TRACK, min_span: int = MIN_SPAN_CHARS,
                 overwrite: bool = False) -> ImportReport:
    """Import a SQuAD v1.1/v2.0 file (module docstring): documents into
    ``<out_corpus_dir>/<track>/``, questions into ``out_questions_path`` (JSON lines), atomically.
    Returns the ``ImportReport``; its ``summary()`` is meant to be shown to the user."""
    documents, questions, report = read_squad(path, span=span, track=track, min_span=min_span)
    if not questions:
        raise NothingImported(f"no question left to write, so nothing was written:\n{report.summary()}")
    out_q = Path(out_questions_path)
    write_import(out_corpus_dir, track, documents, {out_q: questions_text(questions)}, overwrite=overwrite)
    report.outputs = {"corpus": str(Path(out_corpus_dir) / track), "questions": str(out_q)}
    return report
