"""Import a SQuAD v1.1 or v2.0 JSON file as a corpus track and a question file.

Input: ``{"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
"answers": [{"text", "answer_start"}], "is_impossible" (v2 only)}]}]}]}``.

Protocol (``import_squad``):

- Documents (``doc``, ``DOC_UNITS``; ``--doc``):

  - ``"article"`` (default): one per article title, in file order, written to
    ``<corpus>/<track>/<name>.md`` where ``<name>`` is ``safe_file_name(title)``. The text is
    ``# <title>`` (underscores shown as spaces: SQuAD titles are Wikipedia page names such as
    ``Super_Bowl_50``), a blank line, then the article's contexts, verbatim, joined by blank
    lines. Articles sharing a title are merged into one document.
  - ``"paragraph"``: one per non-empty paragraph, ``<corpus>/<track>/<name>.p<k>.md`` with
    ``<name>`` as above and ``<k>`` the paragraph's position among its title's paragraphs in file
    order, from 0 (``paragraphs[k]`` of the article; merged articles number on), zero-padded to
    4 digits (more if an article has more paragraphs), all passed through ``safe_file_names``
    (a name over ``MAX_NAME`` characters is cut and hashed). The text is ``# <title>``, a blank
    line, then the context verbatim, so a chunker sees SQuAD's own passages, each under its
    article's title.

  Every article (every paragraph) is written, including those whose questions were all dropped
  or left out of a sample: they remain distractors.
- Questions (``rag_ablation.data.questions`` format), in file order:

  - ``is_impossible`` true (v2): ``slice: unanswerable``, ``doc: None``, ``span: None``,
    ``answer: UNANSWERABLE_ANSWER``;
  - otherwise (every v1.1 question): ``doc`` = the article's document, ``answer`` = the FIRST
    answer's text, and ``span`` = that text (``span="answer"``) or the sentence(s) of the
    context holding it (``span="sentence"``, see ``sentence_bounds``), ``slice: main``.

  The question format requires spans of at least ``MIN_SPAN_CHARS`` (20) characters, because
  short answers such as "Denver Broncos" match unrelated chunks. Most SQuAD answers are
  shorter, so ``span="answer"`` keeps only the long ones (each drop counted under
  ``span_too_short``, whose description then says ``SENTENCE_HINT``); ``span="sentence"`` keeps
  nearly all.
- Sample (``sample=N``, ``seed=S``; ``--sample``, ``--seed``): after every drop, a seeded sample
  of N of the questions left, stratified by article (title; unanswerable questions belong to the
  article they are asked under, and with ``doc="paragraph"`` the stratum is still the article):
  ``rag_ablation.datasets.imports.allocate`` gives each article its proportional share rounded
  by the largest remainder, and ``sample_positions`` picks them (a seeded shuffle per article),
  in file order. N at least the questions left writes them all (the report says so). The
  documents stay every article's, as without a sample, so the sample's retrieval results
  estimate the whole file's.
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
from rag_ablation.core.io import read_json
from rag_ablation.data.questions import MIN_SPAN_CHARS, UNANSWERABLE, Question, check_spans
from rag_ablation.data.text import normalize
from rag_ablation.datasets.imports import (
    ANSWERABLE_SLICE,
    SAMPLE_SEED,
    ImportReport,
    NothingImported,
    check_sample,
    check_track,
    draw_sample,
    questions_text,
    safe_file_names,
    write_import,
)

TRACK = "squad"
SPAN_MODES = ("answer", "sentence")
SPAN_MODE = "answer"
"""The span mode when none is given (``--span``)."""
DOC_UNITS = ("article", "paragraph")
DOC_UNIT = "article"
"""What one document holds when none is given (``--doc``)."""
PARAGRAPH_DIGITS = 4
"""Least digits of a paragraph document's number (``<name>.p0000.md``)."""
SENTENCE_HINT = "--span sentence keeps more"
"""Said with ``span_too_short`` drops in span mode ``answer`` only (in mode ``sentence`` nothing keeps more)."""
UNANSWERABLE_ANSWER = "The documents do not say."

DROP_REASONS = {
    "duplicate_id": "question id already seen (the first occurrence is kept)",
    "empty_question": "question text empty or only whitespace",
    "no_answers": "possible question (is_impossible false or absent) with no answers",
    "empty_answer": "first answer's text empty or only whitespace",
    "answer_not_in_context": "first answer's text found neither at answer_start nor anywhere in its context",
    "span_too_short": "span shorter than the minimum (--min-span, at least the question format's own)",
}
ADJUST_REASONS = {
    "answer_start_mismatch": "first answer's text not at answer_start but found elsewhere in the context "
                             "(kept; the occurrence nearest answer_start is used)",
    "impossible_with_answers": "is_impossible true but answers given (kept as unanswerable; answers ignored)",
}
NOTE_KEYS = {
    "empty_context": "paragraph with an empty context (no text to write: left out of the documents)",
    "merged_title": "article whose title an earlier article already used (taken as one article: merged into one "
                    "document, or its paragraphs numbered on from the earlier one's)",
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
        return read_json(path)
    except json.JSONDecodeError as e:
        raise InvalidData(f"{path}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); "
                          f"expected a SQuAD v1.1/v2.0 file") from None
    except UnicodeDecodeError as e:
        raise InvalidData(f"{path}: not UTF-8 ({e.reason} at byte {e.start}); expected a SQuAD JSON file") from None


def _paragraph_names(articles: list[dict], names: dict[str, str]) -> list[list[str]]:
    """File names (no suffix) of each article's paragraph documents, ``names[title]`` being the
    article's own name (module docstring: ``<name>.p<k>``), per article and paragraph in file
    order; ``safe_file_names`` makes them portable and refuses two alike."""
    per_title: dict[str, int] = {}
    for art in articles:
        per_title[art["title"]] = per_title.get(art["title"], 0) + len(art["paragraphs"])
    digits = max(PARAGRAPH_DIGITS, len(str(max(per_title.values(), default=1) - 1)))
    numbered: dict[str, int] = {}
    ids: list[list[str]] = []
    for art in articles:
        row = []
        for _ in art["paragraphs"]:
            k = numbered.get(art["title"], 0)
            numbered[art["title"]] = k + 1
            row.append(f"{names[art['title']]}.p{k:0{digits}d}")
        ids.append(row)
    safe = safe_file_names(i for row in ids for i in row)
    return [[safe[i] for i in row] for row in ids]


def _heading(title: str) -> str:
    """A document's first line and the blank line after it: ``# <title>``, underscores as spaces."""
    return f"# {normalize(title.replace('_', ' '))}\n\n"


def read_squad(path: Path | str, *, span: str = SPAN_MODE, track: str = TRACK, min_span: int = MIN_SPAN_CHARS,
               doc: str = DOC_UNIT, sample: int | None = None, seed: int = SAMPLE_SEED,
               ) -> tuple[dict[str, str], list[Question], ImportReport]:
    """(document file name -> text, questions, report) of a SQuAD file under the module's
    protocol, without writing anything: one document per article or per paragraph (``doc``),
    and the questions, or a seeded sample of ``sample`` of them stratified by article. Raises
    ``MissingInput`` for a missing file, ``InvalidData`` listing every structural problem, and
    ``UserError`` for an unknown mode or a sample size below 1."""
    path = Path(path)
    if span not in SPAN_MODES:
        raise UserError(f"unknown span mode {span!r}; expected one of: {', '.join(SPAN_MODES)}")
    if doc not in DOC_UNITS:
        raise UserError(f"unknown document unit {doc!r}; expected one of: {', '.join(DOC_UNITS)}")
    check_sample(sample)
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
    paragraph_names = _paragraph_names(articles, names) if doc == "paragraph" else None
    too_short = f"{DROP_REASONS['span_too_short']}: fewer than {min_span} characters" + (
        f" ({SENTENCE_HINT})" if span == "answer" else "")
    contexts: dict[str, list[str]] = {}  # title -> its non-empty contexts, in file order
    documents: dict[str, str] = {}  # file name -> text, doc="paragraph" (for "article": from contexts below)
    questions: list[Question] = []
    strata: list[str] = []  # each question's article title, for the sample
    seen: set[str] = set()
    n_par = n_q = 0
    for a, art in enumerate(articles):
        title = art["title"]
        if title in contexts:
            report.note("merged_title", title, NOTE_KEYS["merged_title"])
        parts = contexts.setdefault(title, [])
        for p, par in enumerate(art["paragraphs"]):
            n_par += 1
            context = par["context"]
            name = paragraph_names[a][p] if paragraph_names is not None else names[title]
            doc_path = f"{track}/{name}.md"
            if context.strip():
                parts.append(context)
                if paragraph_names is not None:
                    documents[f"{name}.md"] = _heading(title) + context + "\n"
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
                    strata.append(title)
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
                    report.drop("span_too_short", qid, too_short)
                    continue
                questions.append(Question(id=qid, question=question, doc=doc_path, span=chosen,
                                          answer=normalize(text), slice=ANSWERABLE_SLICE, track=track))
                strata.append(title)
    if paragraph_names is None:
        documents = {f"{names[title]}.md": _heading(title) + "\n\n".join(parts) + "\n"
                     for title, parts in contexts.items()}
    questions = [questions[i] for i in draw_sample(strata, sample, seed=seed, by="article", report=report)]
    report.read = {"articles": len(articles), "paragraphs": n_par, "questions": n_q}
    report.documents = len(documents)
    report.questions = len(questions)
    report.unanswerable = sum(not q.answerable for q in questions)
    # the pipeline's own check, so that what is written passes the `questions` stage
    check_spans(questions, [Document(f"{track}/{name}", track, text) for name, text in documents.items()])
    return documents, questions, report


def import_squad(path: Path | str, out_corpus_dir: Path | str, out_questions_path: Path | str, *,
                 span: str = SPAN_MODE, track: str = TRACK, min_span: int = MIN_SPAN_CHARS, doc: str = DOC_UNIT,
                 sample: int | None = None, seed: int = SAMPLE_SEED, overwrite: bool = False) -> ImportReport:
    """Import a SQuAD v1.1/v2.0 file (module docstring): documents (one per ``doc``: article or
    paragraph) into ``<out_corpus_dir>/<track>/``, questions (all, or a seeded sample of
    ``sample`` stratified by article) into ``out_questions_path`` (JSON lines), atomically.
    Returns the ``ImportReport``; its ``summary()`` is meant to be shown to the user."""
    documents, questions, report = read_squad(path, span=span, track=track, min_span=min_span, doc=doc,
                                              sample=sample, seed=seed)
    if not questions:
        raise NothingImported(f"no question left to write, so nothing was written:\n{report.summary()}")
    out_q = Path(out_questions_path)
    write_import(out_corpus_dir, track, documents, {out_q: questions_text(questions)}, overwrite=overwrite)
    report.outputs = {"corpus": str(Path(out_corpus_dir) / track), "questions": str(out_q)}
    return report
