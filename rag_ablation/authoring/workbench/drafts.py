"""Drafts mode: the configured LLM drafts a question per sampled passage, the user judges it.

The passages are write mode's (``WriteMode.passages``: the chapter's seeded sample), in write
mode's order with every track (``WriteMode.order``: the tracks interleaved). For each, the LLM
of the ``llm:`` block is asked once, through the prompt cache
(``rag_ablation.llm.client.prompt_cache``: a rerun asks nothing again), with the template
``rag_ablation/authoring/workbench/prompts/draft_question.txt`` (``DRAFT_PROMPT``, its ``{passage}`` filled literally) for one
question the passage answers, in other words than the passage's, and the answering span copied
verbatim (``parse_draft`` reads the ``Question:`` and ``Span:`` lines of the reply).

The user gives each draft a verdict of ``VERDICTS``: ``answerable`` (the passage answers it),
``partly`` or ``not_answered``, and may fix its question and span (selected with the mouse, as in
write mode). An answerable or partly-answered draft is saved as a question of slice ``generated``
in the drafts' own file (``Project.drafts``, ``generated.jsonl`` beside the hand-written file by
default), validated by the same checks as every save, its span inside the passage. Every
verdict, ``not_answered`` included (which writes no question), is one ``draft`` event in the
drafts' session log (``<drafts file>.workbench-log``): the passage, the verdict, the draft as
the model wrote it, whether the question or span was fixed, the model. A passage is done when the
log holds a verdict for it, so a rerun resumes at the first passage without one.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_ablation.data.passages import Passage
from rag_ablation.core.errors import lookup
from rag_ablation.data.text import match_text
from rag_ablation.llm.client.base import Backend, Generation
from rag_ablation.llm.client.prompting import fill, load_template, user_messages

from rag_ablation.authoring.workbench.checks import Verdict
from rag_ablation.authoring.workbench.session import (GENERATED, Refused, Workbench, WorkbenchError, WriteMode,
                                                      index_field, locate, next_id, passage_key, text_field)
from rag_ablation.authoring.workbench.store import SessionLog, log_path

DRAFT_PROMPT = "draft_question"
"""The template under ``prompts/`` (without ``.txt``); it must hold ``{passage}``."""
DRAFT_NUM_PREDICT = 96
"""Tokens for a draft: two short lines (a question and a span)."""
VERDICTS = {"answerable": "answerable", "partly": "partly answered", "not_answered": "not answered by its passage"}
"""A draft's verdict -> what the page says. ``not_answered`` writes no question."""
SAVED_VERDICTS = ("answerable", "partly")
"""The verdicts whose (possibly fixed) draft is saved as a question."""
DRAFT_KIND = "draft"
"""The kind of a verdict's event in the drafts' session log."""
NO_LLM = ("model-drafted questions need an LLM, and llm.backend is none: set llm.backend in params.yaml "
          "(llama_cpp, the offline default; ollama or openai) and restart `rag-ablation label`")

_QUESTION = re.compile(r"^[\s*#>_-]*question\s*[*_]*\s*:[\s*_]*(.*)$", re.I | re.M)
_SPAN = re.compile(r"^[\s*#>_-]*(?:answer(?:ing)?\s+)?span\s*[*_]*\s*:[\s*_]*(.*)$", re.I | re.M)
_QUOTES = "\"'`\u201c\u201d\u2018\u2019"


@dataclass(frozen=True)
class Draft:
    """A model's draft for one passage: ``question`` and ``span`` as read from ``raw`` (the reply),
    ``span_start`` the span's offset in the passage (None when it is not in it), and ``problems``:
    why it cannot be saved as it stands (the user fixes it or judges it not answered)."""

    question: str
    span: str
    raw: str
    span_start: int | None
    problems: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "span": self.span, "raw": self.raw, "span_start": self.span_start,
                "problems": list(self.problems)}


def _line(pattern: re.Pattern[str], text: str) -> str:
    m = pattern.search(text)
    return m.group(1).strip().strip(_QUOTES).strip() if m else ""


def parse_draft(raw: str, passage: str) -> Draft:
    """The draft in a reply ``raw`` to ``DRAFT_PROMPT`` about ``passage``: the text after the first
    ``Question:`` and ``Span:`` line labels (case, markdown emphasis and enclosing quotes
    ignored). The span must occur in the passage exactly; one that occurs only with other
    whitespace is replaced by the passage's own text of it."""
    question, span = _line(_QUESTION, raw), _line(_SPAN, raw)
    problems: list[str] = []
    if not question:
        problems.append("the model wrote no question: write one in your own words, or judge the draft not answered")
    at = locate(span, passage)
    if at is None and span:
        found = _loose(span, passage)
        if found is not None:
            at, span = found
    if not span:
        problems.append("the model copied no answering span: select it with the mouse in the passage")
    elif at is None:
        problems.append("the model's span is not in the passage (it was not copied exactly): select the answering "
                        "span with the mouse in the passage")
    return Draft(question=question, span=span, raw=raw, span_start=at, problems=tuple(problems))


def _loose(span: str, passage: str) -> tuple[int, str] | None:
    """Where ``span`` occurs in ``passage`` with any run of whitespace for each of its own (a
    line break the model wrote as a space), and the passage's text there; None if nowhere."""
    words = span.split()
    if not words:
        return None
    m = re.search(r"\s+".join(re.escape(w) for w in words), passage)
    return (m.start(), m.group(0)) if m else None


class DraftMode:
    """Judge and fix model-drafted questions (module docstring). ``backend`` defaults to the
    ``llm:`` block's (``llm.backend: none`` is refused with ``NO_LLM``), asked through the prompt
    cache in ``cache`` (default: the project's, ``prompt_cache.default_cache_path``). The cache's
    SQLite connection belongs to the thread that opens it, so every LLM call runs in one worker
    thread of this mode, whatever thread the web server answers a request in."""

    def __init__(self, bench: Workbench, backend: Backend | None = None, *, cache: Path | None = None) -> None:
        self.bench = bench
        self.write = WriteMode(bench)
        self._backend = backend
        self._cache = cache
        self._llm: Any = None  # the CachedLLM, made and used in the worker thread only
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-llm")
        self._drafts: dict[int, Draft] = {}
        self.log = SessionLog(log_path(bench.project.drafts))

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            if not self.bench.params.llm.enabled:
                raise WorkbenchError(NO_LLM)
            from rag_ablation.llm.client.registry import backend_from_config

            self._backend = backend_from_config(self.bench.params.llm)
        return self._backend

    def _ask(self, messages: list[dict[str, Any]]) -> Generation:
        """One call through the prompt cache; runs in the worker thread."""
        if self._llm is None:
            from rag_ablation.llm.client.prompt_cache import CachedLLM, PromptCache

            self._llm = CachedLLM(self.backend, PromptCache(self._cache))
        gen, _ = self._llm.chat(messages, num_predict=DRAFT_NUM_PREDICT)
        return gen

    @property
    def passages(self) -> list[Passage]:
        return self.write.passages

    def template(self) -> str:
        return load_template(self.bench.project.prompts, DRAFT_PROMPT, needs=["passage"])

    def draft(self, n: int) -> Draft:
        """The draft of passage ``n`` (asked once per session; the prompt cache keeps it across)."""
        if n not in self._drafts:
            p = self.passages[n]
            messages = user_messages(fill(self.template(), passage=p.text))
            gen = self._worker.submit(self._ask, messages).result()
            self._drafts[n] = parse_draft(gen.text, p.text)
        return self._drafts[n]

    def verdicts(self) -> dict[str, str]:
        """Passage key -> its verdict (the last logged)."""
        return {e["passage"]: e["verdict"] for e in self.log.events(DRAFT_KIND)
                if isinstance(e.get("passage"), str) and e.get("verdict") in VERDICTS}

    def counts(self) -> dict[str, int]:
        """How many drafts got each verdict."""
        given = list(self.verdicts().values())
        return {v: given.count(v) for v in VERDICTS}

    def next(self) -> dict[str, Any]:
        """The first passage without a verdict, with its draft (``passage`` None when all have
        one). Asks the LLM when the draft is not in the cache (seconds with the offline model)."""
        backend = self.backend  # no LLM: one message before anything else
        done = self.verdicts()
        todo = [n for n in self.write.order() if passage_key(self.passages[n]) not in done]
        out: dict[str, Any] = {"total": len(self.passages), "done": len(self.passages) - len(todo),
                               "counts": self.counts(), "verdicts": VERDICTS, "passage": None, "draft": None}
        if todo:
            n = todo[0]
            p = self.passages[n]
            ids = [q.id for q in self.bench.questions()] + [q.id for q in self.drafted()]
            out["passage"] = {"index": n, "doc": p.doc, "track": p.track, "text": p.text,
                              "suggested_id": next_id(ids, GENERATED, p.track)}
            out["draft"] = self.draft(n).to_json()
            out["model"] = _model(backend)
        return out

    def drafted(self) -> list[Any]:
        """The questions of the drafts' file ([] while it is empty or absent)."""
        from rag_ablation.data.questions import load_questions

        path = self.bench.project.drafts
        if not path.is_file() or not path.read_text(encoding="utf-8").strip():
            return []
        return load_questions(path, min_span=self.bench.params.labels.min_span)

    def record(self, payload: Mapping[str, Any]) -> tuple[dict[str, Any], Passage]:
        """The question the page's form describes (slice ``generated``) and its passage; a span
        not inside the passage (as labels match it: markup, hyphens and whitespace aside) is refused."""
        p = self.passages[index_field(payload, "passage", len(self.passages))]
        span = text_field(payload, "span")
        if not span:
            raise Refused(["select the answering span with the mouse in the passage"])
        if match_text(span) not in match_text(p.text):
            raise Refused([f"the span {span[:40]!r} is not in the passage: select the answering span with the mouse "
                           f"in the passage"])
        record = {"id": text_field(payload, "id"), "question": text_field(payload, "question"), "doc": p.doc,
                  "span": span, "answer": text_field(payload, "answer"), "slice": GENERATED, "track": p.track}
        return record, p

    def check(self, payload: Mapping[str, Any]) -> Verdict:
        record, _ = self.record(payload)
        return self.bench.check_question(record, drafted=True)

    def _event(self, p: Passage, verdict: str, n: int, question: str | None, span: str | None) -> dict[str, Any]:
        d = self.draft(n)
        return {"passage": passage_key(p), "doc": p.doc, "verdict": verdict,
                "draft": {"question": d.question, "span": d.span},
                "fixed": None if question is None else {"question": question != d.question, "span": span != d.span},
                "prompt": DRAFT_PROMPT, "model": _model(self.backend)}

    def save(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Record a verdict (``verdict``): ``answerable`` or ``partly`` saves the form's question
        (validated; the verdict is logged with it), ``not_answered`` only logs the verdict."""
        verdict = text_field(payload, "verdict")
        lookup(VERDICTS, verdict, "verdict")
        n = index_field(payload, "passage", len(self.passages))
        p = self.passages[n]
        if verdict not in SAVED_VERDICTS:
            self.log.add(DRAFT_KIND, id=None, **self._event(p, verdict, n, None, None), corpus=self.bench.corpus_digest)
            return {"ok": True, "verdict": verdict, "id": None}
        record, _ = self.record(payload)
        event = self._event(p, verdict, n, record["question"], record["span"])
        self.bench.save_question(record, drafted=True, kind=DRAFT_KIND, **event)
        return {**record, "verdict": verdict}


def _model(backend: Backend) -> dict[str, Any]:
    """The backend and model that drafted (from its identity), for the log and the page."""
    ident = backend.identity()
    return {"backend": ident.get("backend"), "model": ident.get("model")}
