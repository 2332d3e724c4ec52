"""Running a team's own app (``apps.<name>``) over a question set: the ``app@NAME`` stage's work.

Whatever the method (``METHODS``: a python function, an http service, a TREC run or an answers
file), the result is the run file every retrieval config writes (questions with their ranking,
the text of every ranked passage) plus, for an app that answers (``call: ask``, ``file``), its
answer per question; the span labels then score the app's passages by their text
(``rag_ablation.evaluation.scoring.foreign``), so nothing maps them onto the project's chunks.

Calls (python, http) go through the call cache (``call_cache``): each question is asked once per
app identity, which includes the content hash of ``deps`` (:func:`deps_hash`), so an edit to the
team's code asks again and a rerun of an unchanged app asks nothing. Misses are asked on
``concurrency`` worker threads (``batch`` questions per call for a python app that takes
batches) with a progress line; each reply is checked against the contract and stored as it
arrives, so a failure part-way (an exception in the app, a reply of the wrong shape, a service
that dies) stops the run with one message and loses no finished call, and no run file is written.

An id that two questions' passages share with different texts (an app whose ids are ranks) is
made distinct (``ID~`` and a hash of the text; ``id_conflicts`` counts them), so every id of the
run names one text. The summary stored in the run (``app``): calls made and read from the cache, the questions that
got fewer than ``k`` passages (counted; their missing ranks are misses) or none at all, ties
re-sorted (trec), the versions the app reported, and the run's fingerprint (sha256 of its
rankings) with ``changed``: true when the last run of the same identity had other rankings (a
live service that answers differently from one run to the next is not reproducible).
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_ablation.core.config import AppConfig, RetrievalConfig
from rag_ablation.core.errors import UserError
from rag_ablation.data.questions import Question
from rag_ablation.retrieval.external.call_cache import CallCache, call_key, canonical
from rag_ablation.retrieval.external.files import read_answers, read_trec
from rag_ablation.retrieval.external.hits import BadReply, Passage, ranking_scores, to_passages
from rag_ablation.retrieval.external.http_target import HttpCaller
from rag_ablation.retrieval.external.python_target import PythonCaller
from rag_ablation.support.latency_rule import WARM
from rag_ablation.support.retry import describe
from rag_ablation.support.timing import percentiles_ms

IGNORED = ("__pycache__", ".pyc", ".git")
"""Path parts and endings :func:`deps_hash` passes over (DVC's .dvcignore leaves them out too)."""


def deps_hash(path: Path) -> str:
    """Hex sha256 over every file of ``path`` (a file, or a folder walked in sorted order): each
    file's path relative to ``path`` and its bytes. Raises ``UserError`` when ``path`` is missing."""
    if not path.exists():
        raise UserError(f"apps: deps {path} does not exist; name the file or folder of the app's code (or, for a "
                        f"service, a file whose change should rerun it)")
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        rel = f.relative_to(path).as_posix() if f != path else f.name
        if any(part in IGNORED for part in Path(rel).parts) or rel.endswith(".pyc"):
            continue
        h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


@dataclass
class AppRun:
    """What :func:`run_app` returns: run-file records and passages, answers by question id (app
    answers only), per-question call seconds (the calls' own, cached or not; none for an app read
    from files, whose cost is unknown here) and the summary."""

    records: list[dict[str, Any]]
    passages: dict[str, str]
    answers: dict[str, dict[str, Any]]
    seconds: list[float]
    summary: dict[str, Any] = field(default_factory=dict)


def _reply_of(raw: Any, app: AppConfig, *, qid: str, name: str) -> dict[str, Any]:
    """One raw reply as ``{"hits", "answer", "version"}``: a python app's list (retrieve) or
    ``{"answer", "passages"}`` mapping (ask); an http reply is already in that form."""
    if isinstance(raw, Mapping) and "hits" in raw and set(raw) <= {"hits", "answer", "version"}:
        return dict(raw)
    if app.call == "ask":
        if not isinstance(raw, Mapping) or not isinstance(raw.get("answer"), str) or "passages" not in raw:
            raise BadReply(f"app {name!r}, question {qid}: returned {str(raw)[:200]!r}; expected "
                           f"{{\"answer\": text, \"passages\": hits}} from an app with call: ask")
        return {"hits": raw["passages"], "answer": raw["answer"], "version": None}
    return {"hits": raw, "answer": None, "version": None}


def _stored(reply: Mapping[str, Any], app: AppConfig, *, qid: str, name: str, seconds: float | None) -> dict[str, Any]:
    """The cache entry of one reply: its passages checked against the contract (``hits``);
    ``seconds`` None for a reply read from a file (no call was timed)."""
    passages = to_passages(reply["hits"], qid=qid, app=name)
    if app.answers_questions and not isinstance(reply.get("answer"), str):
        raise BadReply(f"app {name!r}, question {qid}: the answer is {reply.get('answer')!r}; expected text")
    return {"passages": [vars(p) for p in passages], "answer": reply.get("answer"), "version": reply.get("version"),
            "seconds": None if seconds is None else round(seconds, 6)}


def _distinct(p: Passage, texts: Mapping[str, str], conflicts: set[str]) -> Passage:
    """``p``, or, when another question's passage already holds its id with another text (an app
    whose ids are ranks, say), ``p`` under ``ID~`` and the first 12 hex digits of its text's
    sha256, so each id of the run file names one text; the id is added to ``conflicts``."""
    if texts.get(p.id, p.text) == p.text:
        return p
    conflicts.add(p.id)
    return Passage(id=f"{p.id}~{hashlib.sha256(p.text.encode('utf-8')).hexdigest()[:12]}", doc=p.doc, text=p.text,
                   score=p.score)


Caller = Callable[[Sequence[tuple[str, str]]], list[Any]]


def _call_all(caller: Any, todo: Sequence[tuple[str, str]], app: AppConfig, *, name: str,
              store: Callable[[str, dict[str, Any]], None], progress: Callable[[Iterable[Any]], Iterable[Any]]) -> None:
    """Ask ``todo`` ((qid, text) pairs) in batches of ``caller.batch`` on ``app.concurrency``
    threads; store each checked reply as it arrives (in this thread)."""
    size = max(1, int(getattr(caller, "batch", 1)))
    batches = [todo[i:i + size] for i in range(0, len(todo), size)]

    def ask(batch: Sequence[tuple[str, str]]) -> tuple[list[Any], float]:
        t0 = time.perf_counter()
        try:
            raw = caller(batch)
        except UserError:
            raise
        except Exception as e:  # noqa: BLE001  (the team's code: any failure is reported with the question)
            raise UserError(f"app {name!r}, question {batch[0][0]}: the app raised {describe(e)}; fix the app "
                            f"(finished calls are cached: a rerun asks only for the rest)") from e
        return raw, (time.perf_counter() - t0) / len(batch)

    pool = cf.ThreadPoolExecutor(max_workers=app.concurrency)
    try:
        futures = {pool.submit(ask, b): b for b in batches}
        bar = progress(cf.as_completed(futures))
        for fut in bar:
            batch = futures[fut]
            raws, seconds = fut.result()
            for (qid, _), raw in zip(batch, raws):
                store(qid, _stored(_reply_of(raw, app, qid=qid, name=name), app, qid=qid, name=name, seconds=seconds))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _called(cfg: RetrievalConfig, questions: Sequence[Question], *, base: Path, cache: CallCache,
            progress: Callable[[Iterable[Any]], Iterable[Any]]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    app = cfg.app
    assert app is not None
    caller: Any = PythonCaller(app, base=base) if app.method == "python" else HttpCaller(app)
    try:
        pending = [(q.id, q.question) for q in questions]
        replies: dict[str, dict[str, Any]] = {}
        calls = 0
        probe = None
        if app.method == "http" and app.version and pending:  # one fresh call learns the version now served
            qid, text = pending[0]
            t0 = time.perf_counter()
            raw = caller([pending[0]])[0]
            probe = _stored(_reply_of(raw, app, qid=qid, name=cfg.name), app, qid=qid, name=cfg.name,
                            seconds=time.perf_counter() - t0)
            caller.version = probe["version"]
            calls += 1
        identity = {**caller.identity(), "deps": deps_hash(base / app.deps)}
        keys = {qid: call_key(identity, qid=qid, question=text) for qid, text in pending}
        if probe is not None:  # the probe's reply is the first question's, under the version it reported
            cache.put(keys[pending[0][0]], probe)
            replies[pending[0][0]] = probe
            pending = pending[1:]
        todo = []
        for qid, text in pending:
            hit = None if app.fresh else cache.get(keys[qid])
            if hit is None:
                todo.append((qid, text))
            else:
                replies[qid] = hit

        def store(qid: str, entry: dict[str, Any]) -> None:
            cache.put(keys[qid], entry)
            replies[qid] = entry

        _call_all(caller, todo, app, name=cfg.name, store=store, progress=progress)
        calls += len(todo)
        return replies, {"calls": calls, "cached": len(pending) - len(todo), "identity": identity}
    finally:
        close = getattr(caller, "close", None)
        if close is not None:
            close()


def _read(cfg: RetrievalConfig, questions: Sequence[Question], *, base: Path
          ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    app = cfg.app
    assert app is not None
    ids = {q.id for q in questions}
    ties = 0
    if app.method == "trec":
        assert app.run is not None and app.passages is not None
        raw, ties = read_trec(base / app.run, base / app.passages, questions=ids)
    else:
        assert app.answers is not None
        raw = read_answers(base / app.answers, questions=ids)
    replies = {qid: _stored(r, app, qid=qid, name=cfg.name, seconds=None) for qid, r in raw.items()}
    return replies, {"calls": 0, "cached": 0, "ties_resorted": ties}


METHODS: dict[str, Callable[..., tuple[dict[str, dict[str, Any]], dict[str, Any]]]] = {
    "file": _read, "http": _called, "python": _called, "trec": _read}
"""How each app method gets its replies: by calling the app (through the cache) or reading its files."""


def run_app(cfg: RetrievalConfig, questions: Sequence[Question], *, base: Path, cache: CallCache,
            progress: Callable[[Iterable[Any]], Iterable[Any]] = lambda it: it) -> AppRun:
    """Run app config ``cfg`` over ``questions`` (module docstring); ``base`` is the folder its
    params' paths are relative to (the repository)."""
    app = cfg.app
    if app is None:
        raise ValueError(f"config {cfg.name!r} is not an app")
    method = METHODS[app.method]
    kwargs: dict[str, Any] = {"base": base}
    if method is _called:
        kwargs.update(cache=cache, progress=progress)
    replies, summary = method(cfg, questions, **kwargs)
    records: list[dict[str, Any]] = []
    passages: dict[str, str] = {}
    answers: dict[str, dict[str, Any]] = {}
    seconds: list[float] = []
    short, missing = [], []
    conflicts: set[str] = set()
    for q in questions:
        reply = replies.get(q.id)
        if reply is None:
            missing.append(q.id)
            hits: list[Passage] = []
        else:
            hits = [_distinct(Passage(**p), passages, conflicts) for p in reply["passages"][: app.k]]
            if reply["seconds"] is not None:
                seconds.append(float(reply["seconds"]))
            if reply.get("answer") is not None:
                answers[q.id] = {"answer": reply["answer"], "passages": [p.id for p in hits]}
        if reply is not None and len(hits) < app.k:
            short.append(q.id)
        records.append({"id": q.id, "slice": q.slice, "answerable": bool(q.answerable),
                        "ranking": [{"chunk": p.id, "score": s} for p, s in zip(hits, ranking_scores(hits))]})
        passages.update({p.id: p.text for p in hits})
    fingerprint = hashlib.sha256(canonical(records).encode()).hexdigest()
    identity = summary.pop("identity", None)
    previous = cache.swap_fingerprint(identity, fingerprint) if identity is not None else None
    versions = sorted({str(r["version"]) for r in replies.values() if r.get("version") is not None})
    summary.update(id_conflicts=len(conflicts), short=len(short), short_ids=short[:20], missing=len(missing),
                   missing_ids=missing[:20],
                   versions=versions, fingerprint=fingerprint,
                   changed=previous is not None and previous != fingerprint)
    return AppRun(records=records, passages=dict(sorted(passages.items())), answers=answers, seconds=seconds,
                  summary=summary)


def app_latency(seconds: list[float], n_questions: int) -> dict[str, Any]:
    """The latency record of an app: ``total`` (and ``app_call``, the same) over every call's
    wall time per question (cached calls keep the time they took)."""
    out: dict[str, Any] = {"n_questions": n_questions}
    if seconds:
        p = percentiles_ms(seconds)
        out.update(timing=WARM, n_timed=len(seconds), total=p, app_call=p)
    return out
