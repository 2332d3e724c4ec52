"""The workbench's state and its write and audit modes, independent of the web layer.

``Project`` fixes every path the workbench reads or writes when it starts; requests name
passages, questions, chunks and configs only by keys that are looked up in what was loaded
(a client's text is never used as a path). ``Workbench`` loads the corpus, the question file
and the params once; each mode reads what it needs on first use.

Write mode (``WriteMode``, the chapter's method): the passages of
``rag_ablation.data.passages.sample_passages`` with ``workbench.per_track`` and
``workbench.seed``, one at a time, the tracks interleaved (``interleaved``: the first passage
of every track, then the second of every track, ...) or one track chosen (its passages in
sample order). A passage is done when the question file holds a question from it (its doc, a
span inside its text) or the session log records a question (not undone) or a skip for it, so
a rerun resumes at the first passage not done.

Undo (``Workbench.undo``): the last question saved through the workbench can be taken back,
again and again, while it is the question file's last line: the line is removed (the file's
other bytes kept exactly) and an ``undo`` event is logged, so its passage or query is to do
again. A line the workbench did not write (an edit by hand) is never removed.

Audit mode (``AuditMode``, what ``rag-ablation audit-sheet`` prints): for a config with a run
file, every answerable question whose first relevant rank in ``metrics/scores/retrieval.csv``
is missing or above ``workbench.audit_k``, in question-file order, with its top ``audit_k``
passages from the run file. Accepting a passage appends ``{id, doc, span, note}`` to the audit
file (the span selected in the passage); rejecting it is logged. A passage is decided once
accepted (an audit line of the question whose span lies in it) or logged.

Model-drafted questions (drafts mode, ``rag_ablation.authoring.workbench.drafts``) have slice
``GENERATED`` and a file of their own (``Project.drafts``) with its own session log; a
hand-written question never has that slice, and a drafted one never an id of the hand-written
file (``Workbench.problems``), so the two sets never mix.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from rag_ablation.data.passages import Passage, sample_passages
from rag_ablation.core.config import Params
from rag_ablation.core.errors import UserError, lookup
from rag_ablation.core.io import default_cache_dir, numbered_json_lines, read_json
from rag_ablation.data.corpus import Document
from rag_ablation.data.provenance import where_in
from rag_ablation.datasets.sources import CACHE_FILE, read_sources
from rag_ablation.data.questions import UNANSWERABLE, Question, load_questions
from rag_ablation.data.text import match_text
from rag_ablation.evaluation.scoring.scores import read_scores

from rag_ablation.authoring.workbench.checks import (CorpusView, Verdict, audit_problems, question_problems,
                                                     span_facts)
from rag_ablation.authoring.workbench.store import (SessionLog, append_record, last_record, log_path,
                                                    remove_last_record, remove_stale_temps)

DRAFT_PROMPTS = Path(__file__).resolve().parent / "prompts"
"""Where drafts mode's template lives: beside this package, not in the pipeline's ``prompts/``,
whose every file the LLM stages depend on (a workbench prompt edit must rerun no stage)."""

SLICES = ("main", "identifier", "paraphrase")
"""The slices offered for a question with a span (the handbook's; the file's own are added)."""
GENERATED = "generated"
"""The slice of model-drafted questions (drafts mode), never offered for a hand-written one."""
GENERATED_FILE = "generated.jsonl"
"""The drafts' own question file, beside the hand-written one unless ``--generated`` names another."""
MAX_TEXT_CHARS = 20_000
"""The longest text a request's field may hold (a question, span, answer, note, id, query...):
far above any real one; the web layer refuses a longer one (``app.FIELDS``) with 422."""
SKIP_REASONS = {"skip": "skipped", "code_table": "mostly code or table"}
"""Why a passage was passed over (the chapter's two buttons): reason -> what the page says."""
ALL_TRACKS = ""
"""Write mode's track choice meaning every track, interleaved (``interleaved``)."""
UNDO = "undo"
"""The session log's event taking back the last saved question (``Workbench.undo``)."""
SAVED_SHOWN = 50
"""How many of the question file's questions the page lists (the newest)."""


class WorkbenchError(UserError, ValueError):
    """A request or a project the workbench cannot use; the message says what to do."""


class Refused(WorkbenchError):
    """A save the pipeline's validation refuses; ``problems`` lists every reason."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True)
class Project:
    """Every path the workbench uses, fixed at start (module docstring)."""

    corpus: Path
    questions: Path
    audit: Path
    runs: Path
    scores: Path
    build: Path
    generated: Path | None = None
    prompts: Path = DRAFT_PROMPTS

    @property
    def log(self) -> Path:
        return log_path(self.questions)

    @property
    def drafts(self) -> Path:
        """The file of model-drafted questions (slice ``generated``): ``generated`` when given,
        else ``generated.jsonl`` beside the hand-written question file."""
        return self.generated if self.generated is not None else self.questions.with_name(GENERATED_FILE)

    @property
    def written(self) -> tuple[Path, ...]:
        """Every file the workbench writes: the question, audit and drafts' files and their logs."""
        return (self.questions, self.log, self.audit, self.drafts, log_path(self.drafts))


def text_field(payload: Mapping[str, Any], key: str) -> str:
    """``payload[key]`` as a string with its ends stripped ("" when absent); another type is
    refused."""
    v = payload.get(key, "")
    if not isinstance(v, str):
        raise WorkbenchError(f"field {key!r} must be a string, found {type(v).__name__}")
    return v.strip()


def index_field(payload: Mapping[str, Any], key: str, size: int) -> int:
    """``payload[key]`` as an index into a list of ``size`` items; anything else is refused."""
    v = payload.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < size:
        raise WorkbenchError(f"field {key!r} must be an index from 0 to {size - 1}, found {v!r}")
    return v


def locate(span: str, text: str, near: object = None) -> int | None:
    """Where ``span`` occurs in ``text`` (the occurrence nearest ``near``, a character offset the
    page measured, when it occurs several times); None when it does not occur exactly."""
    if not span:
        return None
    found = [m.start() for m in re.finditer(re.escape(span), text)]
    if not found:
        return None
    target = near if isinstance(near, int) and not isinstance(near, bool) else 0
    return min(found, key=lambda at: abs(at - target))


def next_id(existing: Sequence[str], slice_name: str, track: str) -> str:
    """``<slice>-<track>-NN`` with NN one above the highest such number in ``existing`` (01
    when there is none): the handbook's id scheme."""
    prefix = f"{slice_name}-{track}-"
    numbers = [int(i[len(prefix):]) for i in existing if i.startswith(prefix) and i[len(prefix):].isdigit()]
    return f"{prefix}{max(numbers, default=0) + 1:02d}"


def interleaved(passages: Sequence[Passage]) -> list[int]:
    """The indices of ``passages`` taking the tracks in turn, tracks in name order and each
    track's passages in their order: its first passage of every track, then the second, and so
    on; a track that runs out drops out. Every index exactly once."""
    by_track: dict[str, list[int]] = {}
    for n, p in enumerate(passages):
        by_track.setdefault(p.track, []).append(n)
    columns = [by_track[t] for t in sorted(by_track)]
    return [c[i] for i in range(max(map(len, columns), default=0)) for c in columns if i < len(c)]


def corpus_digest(documents: Sequence[Document]) -> str:
    """A short fingerprint of the corpus (SHA-256 of every path and text, in path order): logged
    with each label, so a set can be traced to the corpus version it was made on."""
    h = hashlib.sha256()
    for d in sorted(documents, key=lambda d: d.doc):
        h.update(f"{len(d.doc)}:{d.doc}{len(d.text)}:".encode())
        h.update(d.text.encode("utf-8"))
    return h.hexdigest()[:16]


class Workbench:
    """The corpus, the question file and the params of one session (module docstring). Each
    question and accepted audit line is logged with ``corpus_digest``. Starting removes the
    temporary files a killed save left beside the files it writes (``store.remove_stale_temps``;
    ``removed_temps`` lists them)."""

    def __init__(self, project: Project, params: Params) -> None:
        self.project = project
        self.params = params
        self.removed_temps = [tmp for path in dict.fromkeys(project.written) for tmp in remove_stale_temps(path)]
        opts = params.documents
        corpus = read_sources(project.corpus, exclude=opts.exclude, on_problem=opts.on_problem, workers=opts.workers,
                              cache=default_cache_dir() / CACHE_FILE)
        documents = corpus.documents
        self.documents = documents
        self.provenance = {p.doc: p for p in corpus.provenance}
        self.view = CorpusView.build(documents, params)
        self.corpus_digest = corpus_digest(documents)
        self.log = SessionLog(project.log)
        self.questions()  # a broken question file stops the workbench before it serves anything

    def questions(self) -> list[Question]:
        """The question file as the questions stage reads it ([] while it is empty or absent)."""
        path = self.project.questions
        if not path.is_file() or not path.read_text(encoding="utf-8").strip():
            return []
        return load_questions(path, min_span=self.params.labels.min_span)

    def slices(self) -> list[str]:
        """``SLICES`` and the file's own answerable slices, in that order (never ``GENERATED``)."""
        own = [q.slice for q in self.questions() if q.answerable and q.slice != GENERATED]
        return list(dict.fromkeys([*SLICES, *own]))

    def problems(self, record: Mapping[str, Any], *, drafted: bool = False) -> list[str]:
        """Why ``record`` may not be saved: ``checks.question_problems`` against its file (the
        question file, or the drafts' file when ``drafted``), and the slice rule: a drafted
        question has slice ``generated`` and an id the hand-written file does not use; a
        hand-written one never has slice ``generated``."""
        target = self.project.drafts if drafted else self.project.questions
        problems = question_problems(target, record, min_span=self.params.labels.min_span,
                                     documents=self.view.documents)
        if not drafted and record.get("slice") == GENERATED:
            problems.append(f"slice {GENERATED} is for model-drafted questions (the Drafts tab), kept in their own "
                            f"file: pick another slice")
        if drafted and record.get("id") in {q.id for q in self.questions()}:
            problems.append(f"id {record['id']!r} is already used in {self.project.questions}: the comparison run "
                            f"reads both files, pick another id")
        return problems

    def save_question(self, record: dict[str, Any], *, drafted: bool = False, kind: str = "question",
                      **log_fields: Any) -> dict[str, Any]:
        """Validate ``record`` (``problems``), append it to the question file (the drafts' file
        when ``drafted``), then log it as an event of ``kind`` with ``log_fields`` in that file's
        session log; raises ``Refused``."""
        problems = self.problems(record, drafted=drafted)
        if problems:
            raise Refused(problems)
        append_record(self.project.drafts if drafted else self.project.questions, record)
        log = SessionLog(log_path(self.project.drafts)) if drafted else self.log
        log.add(kind, id=record["id"], **log_fields, corpus=self.corpus_digest)
        return record

    def saved_events(self) -> list[dict[str, Any]]:
        """The session log's ``question`` events not taken back, in log order: an ``undo`` event
        cancels the latest question event of its id."""
        out: list[dict[str, Any]] = []
        for e in self.log.events():
            if e.get("kind") == "question":
                out.append(e)
            elif e.get("kind") == UNDO:
                hit = [n for n, s in enumerate(out) if s.get("id") == e.get("id")]
                if hit:
                    del out[hit[-1]]
        return out

    def undoable(self) -> str | None:
        """The id an undo would take back: the question file's last line when it is the last
        question the workbench saved (``saved_events``); None otherwise."""
        saved, path = self.saved_events(), self.project.questions
        if not saved or not path.is_file():
            return None
        _, last = last_record(path.read_text(encoding="utf-8"))
        ident = saved[-1].get("id")
        return ident if isinstance(last, dict) and isinstance(ident, str) and last.get("id") == ident else None

    def undo(self, ident: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Take back the last saved question when its id is ``ident`` (module docstring): the
        ``undo`` event is logged first, then the line removed, so a crash between the two keeps
        the question. Returns (the removed record, its question event); raises ``Refused`` with
        nothing written when ``ident`` is not ``undoable``."""
        last = self.undoable()
        if last is None:
            raise Refused([f"nothing to undo: the last line of {self.project.questions} is not a question saved in "
                           f"the workbench (remove a line you wrote by hand in your editor)"])
        if last != ident:
            raise Refused([f"only the last saved question can be undone, and that is {last!r}, not {ident!r}: "
                           f"reload the page"])
        event = self.saved_events()[-1]
        self.log.add(UNDO, id=ident, mode=event.get("mode"))
        try:
            record = remove_last_record(self.project.questions, ident)
        except ValueError as e:  # the file changed in between (an editor): keep it as it is
            raise Refused([str(e)]) from None
        return record, event

    def saved_list(self) -> dict[str, Any]:
        """The question file's questions as the page lists them: the newest ``SAVED_SHOWN``
        first, how many there are, and the id ``undo`` would take back (``undoable``)."""
        questions = self.questions()
        return {"file": str(self.project.questions), "total": len(questions), "undo": self.undoable(),
                "questions": [{"id": q.id, "question": q.question, "slice": q.slice, "doc": q.doc,
                               "spans": list(q.relevant_spans)} for q in questions[::-1][:SAVED_SHOWN]]}

    def check_question(self, record: dict[str, Any], *, drafted: bool = False) -> Verdict:
        """The refusals of ``save_question`` and, for a question with spans, ``span_facts``."""
        problems = self.problems(record, drafted=drafted)
        spans = record.get("spans") or ([record["span"]] if record.get("span") else [])
        if not spans or not isinstance(record.get("doc"), str):
            return Verdict(problems=problems)
        facts = span_facts(self.view, self.params, question=record.get("question") or "", doc=record["doc"],
                           spans=spans)
        return Verdict(problems=problems, warnings=facts.warnings, facts=facts.facts)


def passage_key(p: Passage) -> str:
    """A passage's stable name in the session log: ``doc@start-end``."""
    return f"{p.doc}@{p.start}-{p.end}"


class WriteMode:
    """Write a question per sampled passage (module docstring)."""

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    @cached_property
    def passages(self) -> list[Passage]:
        cfg = self.bench.params.workbench
        try:
            passages, _ = sample_passages(self.bench.documents, per_track=cfg.per_track, seed=cfg.seed)
        except ValueError as e:
            raise WorkbenchError(f"cannot sample passages: {e} (workbench.per_track in params.yaml)") from None
        return passages

    def tracks(self) -> list[str]:
        """The sample's tracks, in name order."""
        return sorted({p.track for p in self.passages})

    def order(self, track: str = ALL_TRACKS) -> list[int]:
        """The indices of the passages in the order they are offered: every track interleaved
        (``ALL_TRACKS``), or the passages of ``track`` in sample order (an unknown track is
        refused, listing the sample's)."""
        if track == ALL_TRACKS:
            return interleaved(self.passages)
        lookup(dict.fromkeys(self.tracks()), track, "track")
        return [n for n, p in enumerate(self.passages) if p.track == track]

    def done(self) -> set[str]:
        """Keys of the passages already written from (not undone) or skipped."""
        keys = {e.get("passage") for e in self.bench.saved_events()} | {e.get("passage") for e in
                                                                       self.bench.log.events("skip")}
        questions = self.bench.questions()
        for p in self.passages:
            text = match_text(p.text)
            if any(q.doc == p.doc and any(match_text(s) in text for s in q.relevant_spans) for q in questions):
                keys.add(passage_key(p))
        return {k for k in keys if isinstance(k, str)}

    def show(self, n: int, slices: Sequence[str]) -> dict[str, Any]:
        """Passage ``n`` as the page shows it, with the id suggested for each of ``slices``."""
        p = self.passages[n]
        ids = [q.id for q in self.bench.questions()]
        return {"index": n, "doc": p.doc, "track": p.track, "text": p.text,
                "source": where_in(p.doc, p.start, self.bench.provenance.get(p.doc), p.end),
                "suggested_ids": {s: next_id(ids, s, p.track) for s in slices}}

    def next(self, track: str = ALL_TRACKS) -> dict[str, Any]:
        """The first passage not done in ``order(track)``, as the page shows it (``passage``
        None when all of them are), with the progress overall and per track."""
        done = self.done()
        is_done = [passage_key(p) in done for p in self.passages]
        todo = [n for n in self.order(track) if not is_done[n]]
        per_track = {t: {"total": 0, "done": 0} for t in self.tracks()}
        for p, d in zip(self.passages, is_done):
            per_track[p.track]["total"] += 1
            per_track[p.track]["done"] += d
        out: dict[str, Any] = {"total": len(self.passages), "done": sum(is_done), "track": track,
                               "tracks": per_track, "slices": self.bench.slices(), "passage": None}
        if todo:
            out["passage"] = self.show(todo[0], out["slices"])
        return out

    def undo(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Take back the last saved question (``Workbench.undo``, ``id`` naming it). When write
        mode saved it, its passage comes back as ``next`` shows one, with the span's offset in
        it, so the page can show the question again to be fixed (``passage`` None otherwise)."""
        record, event = self.bench.undo(text_field(payload, "id"))
        keys = {passage_key(p): n for n, p in enumerate(self.passages)}
        key = event.get("passage")
        n = keys.get(key) if event.get("mode") == "write" and isinstance(key, str) else None
        out: dict[str, Any] = {"undone": record, "mode": event.get("mode"), "passage": None, "span_start": None}
        if n is not None:
            out["passage"] = self.show(n, self.bench.slices())
            start = event.get("start")
            out["span_start"] = start - self.passages[n].start if isinstance(start, int) else None
        return out

    def record(self, payload: Mapping[str, Any]) -> tuple[dict[str, Any], Passage, int | None]:
        """The question record the page's form describes, its passage, and the span's offset in
        the passage (None when the span is not in it: it was edited by hand)."""
        p = self.passages[index_field(payload, "passage", len(self.passages))]
        span = text_field(payload, "span")
        at = locate(span, p.text, payload.get("span_start"))
        slice_name = text_field(payload, "slice") or SLICES[0]
        if slice_name == UNANSWERABLE:
            raise WorkbenchError("a question written from a passage has a span: use another slice than unanswerable")
        record = {"id": text_field(payload, "id"), "question": text_field(payload, "question"), "doc": p.doc,
                  "span": span, "answer": text_field(payload, "answer"), "slice": slice_name, "track": p.track}
        return record, p, at

    def check(self, payload: Mapping[str, Any]) -> Verdict:
        record, _, _ = self.record(payload)
        return self.bench.check_question(record)

    def save(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and append the question; the session log keeps the passage and the span's
        offsets in the document (null when the span was typed)."""
        record, p, at = self.record(payload)
        start = None if at is None else p.start + at
        return self.bench.save_question(record, mode="write", passage=passage_key(p), doc=p.doc, start=start,
                                        end=None if start is None else start + len(record["span"]))

    def skip(self, payload: Mapping[str, Any]) -> None:
        """Pass over a passage for a reason of ``SKIP_REASONS``."""
        p = self.passages[index_field(payload, "passage", len(self.passages))]
        reason = text_field(payload, "reason")
        lookup(SKIP_REASONS, reason, "skip reason")
        self.bench.log.add("skip", passage=passage_key(p), reason=reason)


def chunk_doc(chunk_id: str) -> str:
    """The document of a chunk id ``<doc>#<n>``."""
    return chunk_id.rsplit("#", 1)[0]


class AuditMode:
    """Audit one config's misses (module docstring)."""

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench
        self.k = bench.params.workbench.audit_k

    def _status(self, name: str, scored: set[str]) -> tuple[dict[str, Any] | None, str | None]:
        """Config ``name``'s run file and None when it ran (a run file of status ``ok`` and rows
        in the scores file, whose configs are ``scored``); else (None, why not)."""
        path = self.bench.project.runs / f"{name}.json"
        if not path.is_file():
            return None, "no run file (run `dvc repro`)"
        run = read_json(path)
        if not isinstance(run, dict) or run.get("status") != "ok":
            why = run.get("reason") if isinstance(run, dict) else None
            return None, f"did not run ({run.get('status') if isinstance(run, dict) else 'no status'}: {why})"
        if name not in scored:
            return None, "not in the scores file (run `dvc repro`)"
        return run, None

    def _scored(self) -> set[str]:
        scores = self.bench.project.scores
        return {r["config"] for r in read_scores(scores)} if scores.is_file() else set()

    def statuses(self) -> dict[str, str | None]:
        """Every retrieval config of params, in params order: None when it ran (its misses can
        be audited), else why not (no run file, a run file saying it was unavailable, no scores)."""
        scored = self._scored()
        return {name: self._status(name, scored)[1] for name in self.bench.params.retrieval}

    def configs(self) -> list[str]:
        """The retrieval configs that ran (``statuses``), in params order: the audit menu."""
        return [name for name, why in self.statuses().items() if why is None]

    def listing(self) -> dict[str, Any]:
        """The audit menu: the configs that ran, and the others with why each is left out."""
        statuses = self.statuses()
        return {"configs": [n for n, why in statuses.items() if why is None], "k": self.k,
                "left_out": {n: why for n, why in statuses.items() if why is not None}}

    def _run(self, config: str) -> tuple[dict[str, list[str]], Mapping[str, str]]:
        if config not in self.bench.params.retrieval:
            lookup(dict.fromkeys(self.configs()), config, "config that ran (run `dvc repro` first)")
        run, why = self._status(config, self._scored())
        if run is None:
            raise WorkbenchError(f"config {config!r} has no misses to audit: {why}; pick one of: "
                                 f"{', '.join(self.configs()) or 'none yet'}")
        ranking = {r["id"]: [x["chunk"] for x in r["ranking"]] for r in run["questions"]}
        return ranking, run.get("passages", {})

    def missed(self, config: str) -> list[Question]:
        """The answerable questions ``config`` missed at ``k``, in question-file order."""
        scores = self.bench.project.scores
        if not scores.is_file():
            raise WorkbenchError(f"no scores file {scores}: run `dvc repro` first")
        rows = read_scores(scores)
        ids = {r["id"] for r in rows if r["config"] == config and r["answerable"]
               and (r["first_relevant_rank"] is None or r["first_relevant_rank"] > self.k)}
        return [q for q in self.bench.questions() if q.id in ids]

    def decided(self, config: str) -> dict[tuple[str, str], str]:
        """(question id, chunk id) -> ``accepted`` or ``rejected``: the log's decisions, and every
        passage holding an audit line's span of its question."""
        out = {(e["id"], e["chunk"]): e["decision"] for e in self.bench.log.events("audit")
               if isinstance(e.get("id"), str) and isinstance(e.get("chunk"), str)}
        audit = self.bench.project.audit
        lines = [obj for _, obj in numbered_json_lines(audit)[0] if isinstance(obj, dict)] if audit.is_file() else []
        ranking, passages = self._run(config)
        for a in lines:
            for cid in ranking.get(str(a.get("id")), [])[: self.k]:
                if match_text(a.get("span") or "") in match_text(passages.get(cid, "")):
                    out.setdefault((a["id"], cid), "accepted")
        return out

    def next(self, config: str) -> dict[str, Any]:
        """The first missed question with a passage not yet decided, its top ``k`` passages and
        their decisions (``question`` None when every passage is decided)."""
        ranking, passages = self._run(config)
        missed = self.missed(config)
        decided = self.decided(config)
        open_ = [q for q in missed if any((q.id, c) not in decided for c in ranking.get(q.id, [])[: self.k])]
        out: dict[str, Any] = {"config": config, "k": self.k, "missed": len(missed), "open": len(open_),
                               "question": None}
        if open_:
            q = open_[0]
            out["question"] = {"id": q.id, "question": q.question, "slice": q.slice, "doc": q.doc,
                               "spans": list(q.relevant_spans), "answer": q.answer}
            out["passages"] = [{"rank": n, "chunk": c, "doc": chunk_doc(c), "text": passages.get(c, ""),
                                "decision": decided.get((q.id, c))}
                               for n, c in enumerate(ranking.get(q.id, [])[: self.k], start=1)]
        return out

    def _target(self, payload: Mapping[str, Any]) -> tuple[str, Question, str, str]:
        config = text_field(payload, "config")
        ranking, passages = self._run(config)
        by_id = {q.id: q for q in self.missed(config)}
        q = lookup(by_id, text_field(payload, "id"), f"question {config} missed")
        top = {c: passages.get(c, "") for c in ranking.get(q.id, [])[: self.k]}
        chunk = text_field(payload, "chunk")
        lookup(top, chunk, f"passage of {q.id}'s top {self.k}")
        return config, q, chunk, top[chunk]

    def accept(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Append ``{id, doc, span, note}`` for a passage that also answers its question; the span
        must be selected inside the passage; the audit file's validation refuses the rest."""
        config, q, chunk, text = self._target(payload)
        span = text_field(payload, "span")
        if match_text(span) not in match_text(text) or not span:
            raise Refused(["select the span with the mouse inside the passage you accept"])
        record = {"id": q.id, "doc": chunk_doc(chunk), "span": span, "note": text_field(payload, "note")}
        problems = audit_problems(self.bench.project.audit, record, questions=self.bench.questions(),
                                  documents=self.bench.view.documents)
        if problems:
            raise Refused(problems)
        append_record(self.bench.project.audit, record)
        self.bench.log.add("audit", id=q.id, chunk=chunk, config=config, decision="accepted",
                           corpus=self.bench.corpus_digest)
        return record

    def reject(self, payload: Mapping[str, Any]) -> None:
        """Log that a passage does not answer its question (it is not shown again)."""
        config, q, chunk, _ = self._target(payload)
        self.bench.log.add("audit", id=q.id, chunk=chunk, config=config, decision="rejected")
