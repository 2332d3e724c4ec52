"""The dataset switch: which corpus, questions and label audit the pipeline runs on.

``dataset`` in params.yaml names an entry of ``DATASETS``; the ``dataset`` stage builds it and
writes it to one folder that every later stage reads (``write_dataset``)::

    <out>/corpus/<track>/<file>    the documents' texts, as ``rag_ablation.data.corpus.load_corpus`` reads them
                                   (a converted file keeps its name: ``guides/setup.pdf`` holds its Markdown)
    <out>/documents.jsonl          each document's provenance (``rag_ablation.data.provenance.Provenance``:
                                   format, converter, content hash, page or slide starts)
    <out>/questions.jsonl          the question set (``rag_ablation.data.questions``)
    <out>/audit.jsonl              the label audit (``rag_ablation.evaluation.scoring.audit``; may hold none)
    <out>/grades.jsonl             the hand grades (``rag_ablation.evaluation.judges.grades``; may hold none)
    <out>/qrels.jsonl              graded document qrels (``rag_ablation.evaluation.scoring.graded``; none
                                   unless the data set was imported from BEIR)

A file of the three last that holds no record is one blank line (:data:`NO_RECORDS`), never an
empty file: DVC warns "'<file>' is empty." each time it saves an empty output or dependency,
which for a BEIR import (no audit, no hand grades) was 14 warning lines on every run; the stage's
own last line says how many audit lines, hand grades and qrels it wrote.

A data set's audit and hand grades are its own: one data set's are never applied to another's
questions (covidqa has none; an imported set has its own files, or none).

The datasets:

- ``handbook``: the repository's example data, at the paths dvc.yaml passes (``data/corpus``,
  ``data/questions/handbook.jsonl``, ``data/labels/audit.jsonl``). Documents are read by
  ``rag_ablation.datasets.sources.read_sources`` (Markdown and text as they are, other formats
  converted; ``documents`` in params.yaml) and written under their own paths; the question file is validated (a problem
  names the source file and its line) and kept byte for byte, and so is the audit. Every later
  output is therefore the same as when the stages read ``data/`` directly.
- ``covidqa``: the normalized COVID-QA release, read in place from
  ``$RAG_ABLATION_DATASETS/covidqa`` (``rag_ablation.core.io.datasets_dir``; never copied into git)
  by ``rag_ablation.datasets.covidqa.load_covidqa`` under its protocol: the questions whose first
  answer span has at least ``labels.min_span`` characters. Document ``<doc_id>`` becomes
  ``covidqa/<doc_id>.txt`` (text unchanged); each question becomes ``{id, question, doc:
  covidqa/<doc_id>.txt, span: its first answer span, answer: the same span, slice: main, track:
  covidqa}``, in file order. It has no label audit. Its relevance rule needs
  ``labels.same_doc_only: true`` (the anchors' protocol); DVC does not watch the external folder,
  so after changing it run ``dvc repro -f dataset``.
- any other name: an imported data set, ``data/imported/NAME/`` (``rag_ablation.core.config.IMPORTED_DIR``)
  as ``rag-ablation import`` writes it: ``corpus/``, ``questions.jsonl``, and optionally
  ``audit.jsonl``, ``grades.jsonl`` (hand grades given with ``rag-ablation grade`` while it
  was selected) and ``questions.gold.jsonl`` (a BEIR import's every judged document with its
  grade: the data set is then scored by these qrels, with nDCG@10 and recall@100).
  Read like the handbook (documents as ``load_corpus`` reads them, the question
  file validated and kept byte for byte). The dataset stage depends on ``data/imported``, so
  DVC sees an edit to any imported set.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rag_ablation.data.corpus import Document
from rag_ablation.data.provenance import Provenance
from rag_ablation.datasets.sources import SourceCorpus, read_sources
from rag_ablation.datasets.covidqa import TRACK as COVIDQA_TRACK
from rag_ablation.datasets.covidqa import load_covidqa
from rag_ablation.core.config import IMPORTED_DIR, imported_datasets
from rag_ablation.core.errors import InvalidData, UserError, lookup
from rag_ablation.core.io import datasets_dir, replaced_folder, write_text
from rag_ablation.data.questions import Question, load_questions
from rag_ablation.evaluation.scoring.graded import read_qrels


@dataclass(frozen=True)
class Sources:
    """The repository's own data files (paths from dvc.yaml); datasets read from elsewhere
    ignore them."""

    corpus: Path
    questions: Path
    audit: Path
    grades: Path | None = None
    qrels: Path | None = None


@dataclass(frozen=True)
class Dataset:
    """A built dataset: documents, the question file's text (JSON lines) and the audit's text.
    ``read_from``: the files and folders it was read from, as given (those that exist: an
    absent audit, grades or qrels file reads as empty), for the stage to name (:func:`reading`)."""

    documents: list[Document]
    questions_text: str
    audit_text: str
    grades_text: str = ""
    qrels_text: str = ""
    read_from: tuple[str, ...] = ()
    provenance: tuple[Provenance, ...] = ()
    conversion: dict | None = None  # SourceCorpus.summary() of a converted corpus folder
    conversion_line: str | None = None  # SourceCorpus.conversion_line(): what was converted, what came cached

    @property
    def audit_lines(self) -> int:
        """Non-blank lines of the audit (entries, if it is well formed: the score stage checks it)."""
        return _lines(self.audit_text)

    @property
    def grade_lines(self) -> int:
        """Non-blank lines of the hand grades (the judge stages check them)."""
        return _lines(self.grades_text)

    @property
    def qrels_lines(self) -> int:
        """Non-blank lines of the graded qrels (questions with judged documents)."""
        return _lines(self.qrels_text)


def _lines(text: str) -> int:
    return sum(1 for line in text.split("\n") if line.strip())


Reader = Callable[[Path], SourceCorpus]
"""Reads a corpus folder: ``read_sources`` with the ``documents`` settings bound."""


def handbook(src: Sources, *, min_span: int, reader: Reader = read_sources) -> Dataset:
    """The repository's example data (module docstring)."""
    corpus = reader(src.corpus)
    load_questions(src.questions, min_span=min_span)  # problems name the source file and its lines
    if src.qrels is not None and src.qrels.is_file():
        read_qrels(src.qrels)  # a malformed line names the source file, not the copy
    present = [p for p in (src.audit, src.grades, src.qrels) if p is not None and p.is_file()]
    return Dataset(corpus.documents, src.questions.read_text(encoding="utf-8"), _text(src.audit), _text(src.grades),
                   _text(src.qrels), tuple(p.as_posix() for p in (src.corpus, src.questions, *present)),
                   tuple(corpus.provenance), corpus.summary(), corpus.conversion_line())


def _text(path: Path | None) -> str:
    return path.read_text(encoding="utf-8") if path is not None and path.is_file() else ""


def imported_sources(name: str, root: Path | None = None) -> Sources:
    """Where the imported data set ``name`` keeps its files (module docstring)."""
    folder = (root or Path(".")) / IMPORTED_DIR / name
    return Sources(folder / "corpus", folder / "questions.jsonl", folder / "audit.jsonl", folder / "grades.jsonl",
                   folder / "questions.gold.jsonl")


def doc_ids_path(name: str, root: Path | None = None) -> Path | None:
    """The document id map of data set ``name`` (``questions.doc_ids.json`` of an imported set,
    which a BEIR import writes: project document path -> the data set's own id); None for the
    built-in data sets, whose file names are their documents' names."""
    if name in DATASETS:
        return None
    return imported_sources(name, root).questions.with_name("questions.doc_ids.json")


def read_doc_ids(path: Path) -> dict[str, str]:
    """The id map at ``path`` ({} when there is none). Not JSON, not an object of non-empty
    strings, or two paths sharing an id raises ``InvalidData`` naming the file."""
    if not path.is_file():
        return {}
    fix = "re-import the data set (`rag-ablation import beir FOLDER ... --overwrite`)"
    try:
        ids = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InvalidData(f"id map {path} is not valid JSON ({e}); {fix}") from None
    if not isinstance(ids, dict) or not all(isinstance(v, str) and v for v in ids.values()):
        raise InvalidData(f"id map {path} is not an object of document path -> original id (non-empty strings); "
                          f"{fix}")
    if len(set(ids.values())) < len(ids):
        raise InvalidData(f"id map {path} gives two documents the same original id; {fix}")
    return ids


def grades_path(name: str, handbook_grades: Path) -> Path | None:
    """The hand-grades file of data set ``name``: the handbook's (``handbook_grades``), an
    imported set's ``grades.jsonl``, None for covidqa (graded nowhere)."""
    if name == "handbook":
        return handbook_grades
    if name in DATASETS:
        return None
    return imported_sources(name).grades


def covidqa(src: Sources, *, min_span: int, reader: Reader = read_sources) -> Dataset:
    """COVID-QA from ``$RAG_ABLATION_DATASETS/covidqa`` (module docstring)."""
    folder = datasets_dir() / "covidqa"
    docs, rows = load_covidqa(folder, min_span=min_span)
    path = {d.doc: f"{COVIDQA_TRACK}/{d.doc}.txt" for d in docs}
    documents = [Document(path[d.doc], COVIDQA_TRACK, d.text) for d in docs]
    questions = [Question(id=r["id"], question=r["question"], doc=path.get(r["doc"], r["doc"]), span=r["span"],
                          answer=r["span"], slice="main", track=COVIDQA_TRACK) for r in rows]
    return Dataset(documents, "".join(dumps_line(q.to_json()) for q in questions), "",
                   read_from=(f"{folder.as_posix()} (in place, never copied)",))


def dumps_line(obj: dict) -> str:
    """One JSON line as ``rag_ablation.core.io.write_jsonl`` writes it (sorted keys)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False) + "\n"


DATASETS: dict[str, Callable[..., Dataset]] = {"covidqa": covidqa, "handbook": handbook}


def build_dataset(name: str, src: Sources, *, min_span: int, reader: Reader = read_sources) -> Dataset:
    """The dataset registered as ``name`` (built in, or imported under ``data/imported``); an
    unknown name lists the valid ones. ``reader`` reads a corpus folder (covidqa has none)."""
    if name in DATASETS:
        return lookup(DATASETS, name, "dataset")(src, min_span=min_span, reader=reader)
    if name in imported_datasets():
        return handbook(imported_sources(name), min_span=min_span, reader=reader)
    raise UserError(f"unknown dataset {name!r}: expected one of {', '.join(DATASETS)} or an imported data set "
                    f"under {IMPORTED_DIR.as_posix()}/ (here: {', '.join(imported_datasets()) or 'none'})")


def reading(name: str, ds: Dataset) -> str:
    """The line saying which data set the ``dataset`` stage read and from where:
    ``dataset NAME: read FILE, FILE, ...`` (``Dataset.read_from``). For any data set but the
    handbook it adds that the paths on the command line (which DVC echoes: dvc.yaml always
    passes the handbook's files, as dependencies) were not read, so a run on an imported set
    never seems to read the handbook."""
    line = f"dataset {name}: read {', '.join(ds.read_from) or 'nothing'}"
    if name != "handbook":
        line += "; not the handbook's files named on the command line (read for dataset: handbook only)"
    return line


NO_RECORDS = "\n"
"""What :func:`write_dataset` writes for an audit, hand grades or qrels file without a record:
one blank line, which every reader skips (``core.io.numbered_lines``), so the file is never
empty and DVC never warns that it is (module docstring)."""


def records_text(text: str) -> str:
    """``text``, or :data:`NO_RECORDS` when it holds no non-blank line."""
    return text if _lines(text) else NO_RECORDS


def write_dataset(ds: Dataset, out: Path) -> None:
    """Write ``ds`` to ``out`` (module docstring). The corpus folder is written beside its
    target and renamed into place, so a failure never leaves half a corpus."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with replaced_folder(out / "corpus") as tmp:
        for d in ds.documents:
            write_text(tmp / d.doc, d.text)
    write_text(out / "questions.jsonl", ds.questions_text)
    write_text(out / "audit.jsonl", records_text(ds.audit_text))
    write_text(out / "grades.jsonl", records_text(ds.grades_text))
    write_text(out / "qrels.jsonl", records_text(ds.qrels_text))
    write_text(out / "documents.jsonl", records_text("".join(dumps_line(p.to_json()) for p in ds.provenance)))
