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
- Questions (``rag_ablation.questions`` format), in file order:

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
- Outputs are atomic (``write_import``): everything is read and checked first, the track folder
  and the question file are staged beside their targets and renamed into place last, so an error
  leaves the previous outputs untouched.

This module also holds what every importer shares: ``ImportReport``, ``safe_file_name`` /
``safe_file_names`` and ``write_import`` (``rag_ablation.datasets.beir`` uses them).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_ablation.corpus import Document
from rag_ablation.errors import InvalidData, MissingInput, UserError
from rag_ablation.questions import MIN_SPAN_CHARS, UNANSWERABLE, Question, check_spans
from rag_ablation.text import normalize

TRACK = "squad"
SPAN_MODES = ("answer", "sentence")
UNANSWERABLE_ANSWER = "The documents do not say."
ANSWERABLE_SLICE = "main"
EXAMPLES = 5  # example ids kept per reason

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


class DatasetImportError(UserError, ValueError):
    """Outputs of an import that cannot be written as asked (an existing track, a bad track name)."""


class NothingImported(DatasetImportError):
    """Every question was dropped; the message carries the report saying why."""


@dataclass
class ImportReport:
    """What an import read, wrote and left out, with counts per reason and example ids.

    ``dropped``: records left out (reason -> count); ``adjusted``: records kept but changed;
    ``notes``: other counts worth knowing (not records lost). ``examples`` holds the first
    ``EXAMPLES`` ids per reason of any of the three. ``reasons`` maps every reason that occurred
    to its one-line description."""

    source: str
    documents: int = 0
    questions: int = 0  # written, unanswerable included
    unanswerable: int = 0
    read: dict[str, int] = field(default_factory=dict)  # records read per kind
    dropped: dict[str, int] = field(default_factory=dict)
    adjusted: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)  # role -> path written

    def _count(self, table: dict[str, int], reason: str, example: str, description: str) -> None:
        table[reason] = table.get(reason, 0) + 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < EXAMPLES:
            ex.append(example)
        self.reasons.setdefault(reason, description)

    def drop(self, reason: str, example: str, description: str) -> None:
        self._count(self.dropped, reason, example, description)

    def adjust(self, reason: str, example: str, description: str) -> None:
        self._count(self.adjusted, reason, example, description)

    def note(self, reason: str, example: str, description: str) -> None:
        self._count(self.notes, reason, example, description)

    @property
    def n_dropped(self) -> int:
        return sum(self.dropped.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source, "documents": self.documents, "questions": self.questions,
            "unanswerable": self.unanswerable, "read": dict(self.read), "dropped": dict(sorted(self.dropped.items())),
            "adjusted": dict(sorted(self.adjusted.items())), "notes": dict(sorted(self.notes.items())),
            "examples": {k: list(v) for k, v in sorted(self.examples.items())},
            "reasons": dict(sorted(self.reasons.items())), "outputs": dict(self.outputs),
        }

    def summary(self) -> str:
        """Several lines: what was written, then one line per reason with its count and examples."""
        read = ", ".join(f"{n:,} {kind}" for kind, n in self.read.items())
        lines = [(f"{self.source}: read {read}; wrote {self.documents:,} document(s) and {self.questions:,} "
                  f"question(s) ({self.unanswerable:,} unanswerable)")]
        for title, table in (("dropped", self.dropped), ("kept but adjusted", self.adjusted), ("noted", self.notes)):
            if table:
                lines.append(f"{title}: {sum(table.values()):,}")
                for reason, n in sorted(table.items()):
                    lines.append(f"  {n:,} {reason}: {self.reasons[reason]} (e.g. {', '.join(self.examples[reason])})")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# shared helpers

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_TRACK = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MAX_NAME = 100


def check_track(track: str) -> str:
    """``track`` if it is a usable track folder name (letters, digits, ``_.-``, not starting
    with a dot or dash), else ``DatasetImportError``."""
    if not isinstance(track, str) or not _TRACK.fullmatch(track):
        raise DatasetImportError(f"track name {track!r} cannot be a corpus folder: use letters, digits, '_', '.' "
                           f"or '-', starting with a letter or digit (e.g. 'squad')")
    return track


def safe_file_name(name: str) -> str:
    """A portable file name (no suffix) for an id or title: accents removed (``é`` -> ``e``),
    every run of characters other than ``A-Za-z0-9._-`` replaced by ``_``, leading dots and
    dashes removed, at most ``MAX_NAME`` characters. When that changed anything, ``-`` and 8 hex
    digits of the original's SHA-1 are appended, so two different ids never share a name
    (``a b`` -> ``a_b-<hash>`` while ``a_b`` stays ``a_b``)."""
    ascii_ = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    base = _UNSAFE.sub("_", ascii_).lstrip(".-")[:MAX_NAME]
    if base == name:
        return base
    return f"{base or 'doc'}-{hashlib.sha1(name.encode('utf-8')).hexdigest()[:8]}"


def safe_file_names(ids: Iterable[str]) -> dict[str, str]:
    """``safe_file_name`` of each id; raises ``InvalidData`` if two ids still share a name
    ignoring case (case-insensitive file systems), which takes ids built to collide."""
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for i in ids:
        name = safe_file_name(i)
        other = seen.setdefault(name.lower(), i)
        if other != i:
            raise InvalidData(f"ids {other!r} and {i!r} map to the same file name {name!r} (ignoring case); "
                              f"rename one of them in the source data")
        out[i] = name
    return out


def _staged_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_import(out_corpus_dir: Path | str, track: str, documents: Mapping[str, str],
                 files: Mapping[Path, str], *, overwrite: bool = False) -> None:
    """Write ``documents`` (file name -> text) as the folder ``<out_corpus_dir>/<track>/`` and
    each of ``files`` (path -> text), all or nothing.

    Without ``overwrite`` an existing track folder or output file raises ``DatasetImportError`` before
    anything is written; with it the track folder is replaced whole (files of an earlier import
    that this one does not write disappear). The track is staged in a hidden folder beside it
    (which ``load_corpus`` ignores should a crash leave it behind) and each file in a hidden
    temporary file beside its target; the renames into place come last, and an error among them
    puts the previous track and files back (a killed process can still stop between two
    renames: each output is then whole, but they may come from different imports)."""
    root = Path(out_corpus_dir)
    check_track(track)
    target = root / track
    if not overwrite:
        existing = [str(p) for p in (target, *map(Path, files)) if p.exists()]
        if existing:
            raise DatasetImportError(f"{', '.join(existing)} already exist(s): the import would replace them. "
                               f"Remove them or pass overwrite=True")
    for p in files:
        if Path(p).resolve().is_relative_to(target.resolve()):
            raise DatasetImportError(f"output {p} lies inside the track folder {target}, which the import replaces "
                               f"whole; write it elsewhere")
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root, prefix=f".{track}.import-"))
    staged_files: list[tuple[Path, Path]] = []
    backups: list[tuple[Path, Path]] = []  # (copy of a replaced file, the file)
    old: Path | None = None
    swapped = False
    try:
        for name, text in documents.items():
            (staging / name).write_text(text, encoding="utf-8")
        for p, text in files.items():
            staged_files.append((_staged_file(Path(p), text), Path(p)))
        if target.exists():
            old = Path(tempfile.mkdtemp(dir=root, prefix=f".{track}.old-"))
            old.rmdir()
            os.rename(target, old)
        os.rename(staging, target)
        swapped = True
        for tmp, p in staged_files:
            if p.exists():
                bak = Path(tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.old-")[1])
                bak.unlink()
                try:
                    os.link(p, bak)
                except OSError:
                    shutil.copy2(p, bak)
                backups.append((bak, p))
            os.replace(tmp, p)
    except BaseException:
        # undo in reverse: files already replaced, then the track folder
        for bak, p in backups:
            if p.exists() and os.path.samefile(bak, p):  # not replaced yet (rename would do nothing)
                bak.unlink()
            else:
                os.rename(bak, p)
        for tmp, _ in staged_files:
            tmp.unlink(missing_ok=True)
        shutil.rmtree(target if swapped else staging, ignore_errors=True)
        if old is not None:
            os.rename(old, target)
        raise
    for bak, _ in backups:
        bak.unlink(missing_ok=True)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def questions_text(questions: Iterable[Question]) -> str:
    """The question file's text: one JSON object per line, keys sorted (as ``write_jsonl``)."""
    return "".join(json.dumps(q.to_json(), sort_keys=True, ensure_ascii=False) + "\n" for q in questions)


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
