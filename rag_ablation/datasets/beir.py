"""Import a BEIR data set folder as a corpus track, a question file and a gold-documents file.

Input (the BEIR layout): ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``) and ``qrels/<split>.tsv`` (tab-separated ``query-id corpus-id score``, the
score an integer). The qrels header line is optional, as in BEIR's own loader (MS MARCO's
qrels have none): a first line whose third field is an integer is read as data, one whose
third field is not (``score``) is skipped as the header, and the report says which
(``reading``).

Protocol (``import_beir``):

- Documents: one per corpus entry, in file order, written to ``<corpus>/<track>/<name>.md`` with
  ``<name> = safe_file_name(_id)`` (``rag_ablation.datasets.imports``). The text is ``# <title>``
  (whitespace collapsed to one line), a blank line, then ``text``; just ``text`` when the title
  is empty. Every corpus entry is written, judged or not.
- Questions (``rag_ablation.data.questions`` format): one per query that has at least one
  relevant qrels row in the split (score > 0, naming a known document), in ``queries.jsonl``
  order.
  BEIR judges documents, not answers, and the format holds one document and one span per
  question, so:

  - ``doc``: the gold document with the highest score, the first in the qrels file among equals;
  - ``span``: that document's whole text (title line included). With the labels setting
    ``same_doc_only: true`` every chunk of that document holding ``window`` characters of it is
    relevant, which is document-level relevance for that one document. Without
    ``same_doc_only`` the windows of a whole document match shared phrases in other documents:
    always set it for BEIR;
  - ``answer``: ``NO_REFERENCE_ANSWER`` (BEIR has no reference answers: the answer measures mean
    nothing on these questions, only the retrieval measures do); ``slice: main``.

  The span only satisfies the question format: a data set imported into ``data/imported/NAME``
  is scored by its gold file as graded qrels (``rag_ablation.evaluation.scoring.graded``: every
  judged document, nDCG@10 and recall@100), not by this span.

  Every judged document of a question is kept in the gold file with its score, grade 0
  included: a row of score 0 is BEIR's "judged, not relevant", which TREC tools count as judged
  (gain 0; nDCG and recall ignore it, and so does the project, whose relevance is score > 0), so
  the exported qrels keep BEIR's judged non-relevant rows. One JSON object per line in
  question order: ``{"id": query id, "gold": [{"doc": path, "score": n}, ...] (highest score
  first, in qrels order among equal scores, the first one being the question's ``doc``),
  "exclude": [path, ...]}``; ``exclude`` lists the document whose ``_id`` equals the query's
  (see below), else is empty.
- Validation: a line that is not JSON, a record without ``_id``/``text``, or a malformed qrels
  line (a first line neither a header nor a row, an empty qrels file) raises ``InvalidData``
  listing every problem, and nothing is written. Data problems are counted in the
  ``ImportReport`` with example ids (``DROP_REASONS``), each kind of record apart
  (``DROP_KINDS``): documents (duplicate ids, the first kept; empty), queries (duplicate ids;
  empty; no relevant document, i.e. no qrels row of score > 0 in the split, which is normal:
  ``queries.jsonl`` holds every split's queries; gold document too short) and qrels rows
  (naming an unknown query or document, a negative score (no grade: BEIR's data sets have none),
  repeated, judging a query against its own id, or belonging to a query dropped as empty or
  for having only score-0 rows, which go with their query but are counted as rows). So the
  documents read are those written plus those dropped, the queries read the questions written
  plus the queries dropped (without a sample), and the qrels rows read the gold file's rows
  plus the rows dropped (without a sample or a ``span_too_short`` drop, whose rows leave with
  their question). An import left with no question at all raises ``NothingImported`` (usually
  the wrong split).
- Identical ids (BEIR's ``ignore_identical_ids``): in data sets such as ArguAna and Quora a
  query is also a corpus entry with the same ``_id`` and would retrieve itself. BEIR's
  evaluation removes that document from the query's results. The question format cannot
  express a per-question exclusion, so the importer counts such ids (``notes``), lists the
  document under the query's ``exclude`` in the gold file, and with
  ``ignore_identical_ids=True`` (default) ignores qrels rows judging a query against its own
  id. The document stays in the corpus (other queries may retrieve it).
- Sample (``sample=N``, ``seed=S``; ``--sample``, ``--seed``): after every drop, a seeded sample
  of N of the questions left, stratified by their ``doc`` (the first gold document):
  ``rag_ablation.datasets.imports.allocate`` gives each document its proportional share rounded
  by the largest remainder (most BEIR documents are the first gold document of one query, so
  this is close to a plain seeded sample), ``sample_positions`` picks them, in question order;
  the gold file holds the sampled questions' rows. N at least the questions left writes them all
  (the report says so). The corpus stays whole: the unjudged documents are the distractors BEIR
  measures retrieval against, and a sample's results then estimate the whole split's.
- Id map: every document's own ``_id`` is kept in ``<questions stem>.doc_ids.json`` beside the
  questions (``DOC_IDS_SUFFIX``; project document path -> ``_id``), so ``rag-ablation
  export-trec`` writes BEIR's ids, not the mangled file names.
- Outputs are atomic (``rag_ablation.datasets.imports.write_import``), the id map with them.
"""
from __future__ import annotations

import json
from pathlib import Path

from rag_ablation.data.corpus import Document
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
from rag_ablation.core.errors import InvalidData, MissingInput
from rag_ablation.core.io import numbered_json_lines, numbered_lines
from rag_ablation.data.questions import MIN_SPAN_CHARS, Question, check_spans
from rag_ablation.data.text import normalize

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_DIR = "qrels"
QRELS_HEADER = ("query-id", "corpus-id", "score")
DOC_IDS_SUFFIX = ".doc_ids.json"
"""The id map beside the questions, ``<questions stem>.doc_ids.json`` (``questions.doc_ids.json``
in ``data/imported/NAME/``): project document path -> the corpus entry's ``_id``, which
``rag-ablation export-trec`` writes as the TREC docno."""
NO_REFERENCE_ANSWER = "(no reference answer: BEIR judges documents, not answers)"

DROP_REASONS = {
    "duplicate_document_id": "corpus entry whose _id an earlier entry already used (the first is kept)",
    "empty_document": "corpus entry with empty title and text (a document must hold text)",
    "duplicate_query_id": "query whose _id an earlier query already used (the first is kept)",
    "empty_question": "query text empty or only whitespace",
    "qrels_unknown_query": "qrels row naming a query id not in queries.jsonl (row ignored)",
    "qrels_unknown_document": "qrels row naming a corpus id not in corpus.jsonl, or dropped from it (row ignored)",
    "qrels_score_negative": "qrels row with a negative score, not a relevance grade (BEIR's grades are 0 and up; "
                            "row ignored)",
    "qrels_duplicate_row": "qrels row repeating an earlier (query, document) pair (the first is kept)",
    "qrels_identical_ids": "qrels row judging a query against the document with its own id "
                           "(ignore_identical_ids; row ignored)",
    "qrels_query_dropped": "qrels row of a query dropped as empty (the query is counted under queries; "
                           "row ignored with it)",
    "qrels_no_relevant": "qrels row of score 0 (judged not relevant) of a query with no relevant document, "
                         "dropped as no_qrels (the query is counted under queries; row ignored with it)",
    "no_qrels": "query without a relevant document: no qrels row of score > 0 in this split (queries.jsonl "
                "holds every split's queries)",
    "span_too_short": "gold document shorter than the question format's minimum span",
}
DROP_KINDS = {reason: ("documents" if reason.endswith("document_id") or reason == "empty_document"
                       else "qrels rows" if reason.startswith("qrels_") else "queries")
              for reason in DROP_REASONS}
"""The kind of record (a key of the report's ``read``) each drop reason leaves out: the report
counts dropped documents, queries and qrels rows apart."""
QRELS_NO_HEADER = "{name} had no header line; its first line was read as data"
QRELS_HEADER_SKIPPED = "{name} began with the header line {line!r}, skipped"
NOTE_KEYS = {
    "identical_query_and_document_id": "id that is both a query and a corpus entry (the document is listed "
                                       "under the query's 'exclude' in the gold file)",
    "several_gold_documents": "question with more than one relevant document (only the first is its 'doc'; "
                              "all are in the gold file)",
}


def _records(path: Path, required: tuple[str, ...]) -> tuple[list[tuple[int, dict]], list[str]]:
    rows, problems = numbered_json_lines(path)
    out = []
    for n, obj in rows:
        if not isinstance(obj, dict):
            problems.append(f"line {n}: expected a JSON object, found {type(obj).__name__}")
            continue
        missing = [k for k in required if k not in obj]
        if missing:
            problems.append(f"line {n}: missing field(s) {', '.join(missing)}")
            continue
        bad = [k for k in ("_id", "title", "text")
               if k in obj and not (k == "title" and obj[k] is None)  # a null title counts as none
               and (isinstance(obj[k], bool) or not isinstance(obj[k], (str, int) if k == "_id" else str))]
        if bad:
            problems.append(f"line {n}: field(s) {', '.join(bad)} must be strings, found "
                            + ", ".join(type(obj[k]).__name__ for k in bad))
            continue
        out.append((n, obj))
    return out, [f"{path.name} {p}" for p in problems]


QrelsRow = tuple[int, str, str, int]
"""One qrels row: (line number, query id, corpus id, score)."""


def _qrels_row(n: int, line: str) -> QrelsRow | str:
    """Line ``n`` of a qrels file as a row, or the problem with it: three tab-separated fields
    (each stripped of surrounding whitespace, ``\\r`` included), the third an integer."""
    fields = line.split("\t")
    if len(fields) != 3:
        return f"line {n}: expected 3 tab-separated fields (query-id, corpus-id, score), found {len(fields)}"
    qid, did, score = (f.strip() for f in fields)
    try:
        return n, qid, did, int(score)
    except ValueError:
        return f"line {n}: score {score!r} is not an integer"


def _is_header(line: str) -> bool:
    """Whether a qrels file's first line is a header: three tab-separated fields, the third
    non-empty and not an integer (``query-id corpus-id score``, or other names: BEIR's loader
    skips a header whatever its names)."""
    fields = [f.strip() for f in line.split("\t")]
    return len(fields) == 3 and bool(fields[2]) and not isinstance(_qrels_row(1, line), tuple)


def _qrels(path: Path) -> tuple[list[QrelsRow], list[str], str]:
    """(rows, problems, how the file was read: one sentence for the report) of a qrels file.

    The header line is optional (MS MARCO's BEIR qrels have none): a first line that is a row
    (``_qrels_row``) is read as data, one that is a header (``_is_header``) is skipped, and
    anything else, or an empty file, is one problem. Blank lines are no rows."""
    name = f"{QRELS_DIR}/{path.name}"
    lines = [line for _, line in numbered_lines(path, skip_blank=False)]  # split at "\n" only
    first = _qrels_row(1, lines[0]) if lines else "an empty file"
    if isinstance(first, tuple):
        reading, start = QRELS_NO_HEADER.format(name=name), 1
    elif lines and _is_header(lines[0]):
        reading, start = QRELS_HEADER_SKIPPED.format(name=name, line=lines[0].strip()), 2
    else:
        found = repr(lines[0]) if lines else "an empty file"
        return [], [f"{name} line 1: expected the header {chr(9).join(QRELS_HEADER)!r} or a first row "
                    f"(3 tab-separated fields: query-id, corpus-id, integer score), found {found}; fix the first "
                    f"line (the header line is optional) or download the file again"], ""
    rows: list[QrelsRow] = []
    problems: list[str] = []
    for n, line in enumerate(lines[start - 1:], start=start):
        if not line.strip():
            continue
        row = _qrels_row(n, line)
        if isinstance(row, str):
            problems.append(f"{name} {row}")
        else:
            rows.append(row)
    return rows, problems, reading


def _document_text(title: str, text: str) -> str:
    title = normalize(title)
    return (f"# {title}\n\n{text.strip()}\n" if title else f"{text.strip()}\n")


def read_beir(folder: Path | str, *, split: str = "test", track: str | None = None,
              ignore_identical_ids: bool = True, min_span: int = MIN_SPAN_CHARS, sample: int | None = None,
              seed: int = SAMPLE_SEED) -> tuple[dict[str, str], list[Question], list[dict], ImportReport,
                                                dict[str, str]]:
    """(document file name -> text, questions, gold rows, report, document path -> the corpus
    entry's own ``_id``: the id map, ``DOC_IDS_SUFFIX``) of a BEIR folder under the
    module's protocol, without writing anything: every document, and the questions (with their
    gold rows), or a seeded sample of ``sample`` of them stratified by ``doc``. ``track``
    defaults to the folder's name. Raises ``MissingInput`` for a missing folder, file or split
    (listing the splits there are), ``InvalidData`` listing every malformed line, and
    ``DatasetImportError`` for a sample size below 1."""
    folder = Path(folder)
    check_sample(sample)
    track = check_track(track if track is not None else folder.resolve().name)
    if not folder.is_dir():
        raise MissingInput(f"BEIR folder {folder} does not exist: expected a folder holding {CORPUS_FILE}, "
                           f"{QUERIES_FILE} and {QRELS_DIR}/<split>.tsv")
    for name in (CORPUS_FILE, QUERIES_FILE):
        if not (folder / name).is_file():
            raise MissingInput(f"BEIR folder {folder} has no {name}: expected {CORPUS_FILE}, {QUERIES_FILE} "
                               f"and {QRELS_DIR}/<split>.tsv")
    qrels_path = folder / QRELS_DIR / f"{split}.tsv"
    if not qrels_path.is_file():
        splits = sorted(p.stem for p in (folder / QRELS_DIR).glob("*.tsv")) if (folder / QRELS_DIR).is_dir() else []
        raise MissingInput(f"BEIR folder {folder} has no {QRELS_DIR}/{split}.tsv; splits found: "
                           f"{', '.join(splits) or 'none'}. Pass one of them as the split")
    corpus_rows, problems = _records(folder / CORPUS_FILE, ("_id", "text"))
    query_rows, p2 = _records(folder / QUERIES_FILE, ("_id", "text"))
    qrels_rows, p3, qrels_reading = _qrels(qrels_path)
    problems += p2 + p3
    if problems:
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        raise InvalidData(f"BEIR folder {folder}: {len(problems)} problem(s); fix them and rerun:\n  "
                          + "\n  ".join(shown))

    report = ImportReport(source=f"BEIR {folder.name} ({split})", drop_kinds=dict(DROP_KINDS),
                          reading=[qrels_reading])
    texts: dict[str, str] = {}  # corpus id -> document text
    for _, row in corpus_rows:
        did = str(row["_id"])
        if did in texts:
            report.drop("duplicate_document_id", did, DROP_REASONS["duplicate_document_id"])
            continue
        text = _document_text(row.get("title") or "", row["text"])
        if not text.strip():
            report.drop("empty_document", did, DROP_REASONS["empty_document"])
            texts[did] = ""  # seen: a later duplicate is still a duplicate
            continue
        texts[did] = text
    texts = {d: t for d, t in texts.items() if t}
    queries: dict[str, str] = {}
    seen_queries: set[str] = set()
    for _, row in query_rows:
        qid = str(row["_id"])
        if qid in seen_queries:
            report.drop("duplicate_query_id", qid, DROP_REASONS["duplicate_query_id"])
            continue
        seen_queries.add(qid)
        if not row["text"].strip():
            report.drop("empty_question", qid, DROP_REASONS["empty_question"])
            continue
        queries[qid] = row["text"].strip()
    for qid in sorted(set(queries) & set(texts)):
        report.note("identical_query_and_document_id", qid, NOTE_KEYS["identical_query_and_document_id"])

    gold: dict[str, dict[str, int]] = {}  # query id -> corpus id -> score (0 included), in qrels order
    for _, qid, did, score in qrels_rows:
        example = f"{qid}/{did}"
        if qid not in seen_queries:
            report.drop("qrels_unknown_query", example, DROP_REASONS["qrels_unknown_query"])
        elif qid not in queries:  # the query was dropped as empty (counted under queries): its rows go with it
            report.drop("qrels_query_dropped", example, DROP_REASONS["qrels_query_dropped"])
        elif did not in texts:
            report.drop("qrels_unknown_document", example, DROP_REASONS["qrels_unknown_document"])
        elif score < 0:
            report.drop("qrels_score_negative", example, DROP_REASONS["qrels_score_negative"])
        elif ignore_identical_ids and qid == did:
            report.drop("qrels_identical_ids", example, DROP_REASONS["qrels_identical_ids"])
        elif did in gold.get(qid, {}):
            report.drop("qrels_duplicate_row", example, DROP_REASONS["qrels_duplicate_row"])
        else:
            gold.setdefault(qid, {})[did] = score

    names = safe_file_names(texts)
    path_of = {d: f"{track}/{names[d]}.md" for d in texts}
    questions: list[Question] = []
    gold_rows: list[dict] = []
    for qid, text in queries.items():
        judged = gold.get(qid, {})
        if not any(s > 0 for s in judged.values()):
            report.drop("no_qrels", qid, DROP_REASONS["no_qrels"])
            for did in judged:  # its score-0 rows leave with it, counted as rows
                report.drop("qrels_no_relevant", f"{qid}/{did}", DROP_REASONS["qrels_no_relevant"])
            continue
        ranked = sorted(judged.items(), key=lambda kv: -kv[1])  # stable: qrels order among equal scores
        first = ranked[0][0]
        span = texts[first].strip()
        if len(normalize(span)) < min_span:
            report.drop("span_too_short", qid, f"{DROP_REASONS['span_too_short']} ({min_span} characters)")
            continue
        if sum(s > 0 for _, s in ranked) > 1:
            report.note("several_gold_documents", qid, NOTE_KEYS["several_gold_documents"])
        questions.append(Question(id=qid, question=text, doc=path_of[first], span=span, answer=NO_REFERENCE_ANSWER,
                                  slice=ANSWERABLE_SLICE, track=track))
        gold_rows.append({"id": qid, "gold": [{"doc": path_of[d], "score": s} for d, s in ranked],
                          "exclude": [path_of[qid]] if qid in texts else []})

    kept = draw_sample([q.doc or "" for q in questions], sample, seed=seed, by="document", report=report)
    questions, gold_rows = [questions[i] for i in kept], [gold_rows[i] for i in kept]
    documents = {f"{names[d]}.md": t for d, t in texts.items()}
    report.read = {"documents": len(corpus_rows), "queries": len(query_rows), "qrels rows": len(qrels_rows)}
    report.documents = len(documents)
    report.questions = len(questions)
    check_spans(questions, [Document(path_of[d], track, t) for d, t in texts.items()])
    return documents, questions, gold_rows, report, {path_of[d]: d for d in texts}


def doc_ids_text(ids: dict[str, str]) -> str:
    """The id map's text: one JSON object, project document path -> the data set's own id,
    one entry per line in corpus order."""
    return json.dumps(ids, ensure_ascii=False, indent=0) + "\n"


def import_beir(folder: Path | str, out_corpus_dir: Path | str, out_questions_path: Path | str, *,
                split: str = "test", track: str | None = None, out_gold_path: Path | str | None = None,
                ignore_identical_ids: bool = True, min_span: int = MIN_SPAN_CHARS, sample: int | None = None,
                seed: int = SAMPLE_SEED, overwrite: bool = False) -> ImportReport:
    """Import a BEIR folder (module docstring): every document into ``<out_corpus_dir>/<track>/``,
    the questions (all, or a seeded sample of ``sample`` stratified by ``doc``) into
    ``out_questions_path``, their gold documents into ``out_gold_path`` (default: beside the
    questions, ``<stem>.gold.jsonl``) and the id map beside the questions (``<stem>.doc_ids.json``,
    ``DOC_IDS_SUFFIX``), all atomically. Returns the ``ImportReport``."""
    track = check_track(track if track is not None else Path(folder).resolve().name)
    documents, questions, gold_rows, report, ids = read_beir(folder, split=split, track=track,
                                                        ignore_identical_ids=ignore_identical_ids, min_span=min_span,
                                                        sample=sample, seed=seed)
    if not questions:
        raise NothingImported(f"no question left to write, so nothing was written:\n{report.summary()}")
    out_q = Path(out_questions_path)
    out_g = Path(out_gold_path) if out_gold_path is not None else out_q.with_name(f"{out_q.stem}.gold.jsonl")
    gold_text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in gold_rows)
    out_ids = out_q.with_name(f"{out_q.stem}{DOC_IDS_SUFFIX}")
    write_import(out_corpus_dir, track, documents, {out_q: questions_text(questions), out_g: gold_text,
                                                    out_ids: doc_ids_text(ids)}, overwrite=overwrite)
    report.outputs = {"corpus": str(Path(out_corpus_dir) / track), "questions": str(out_q), "gold": str(out_g)}
    return report
