"""Interchange with Label Studio, for teams that already label there.

``export_tasks`` turns write mode's sampled passages into Label Studio tasks (its JSON import
format: a list of ``{"data": {...}}``), each holding the passage's text and, for the way back,
its document and passage key. Passages already done (written from, skipped or imported:
``WriteMode.done``) are left out, so an export after a session on the page holds only what is
left to label. ``LABEL_CONFIG`` is the labelling interface to create the
project with: the passage (``text``), a ``Labels`` control ``span`` for the answering span(s), text
areas ``question`` and ``answer``, and a ``Choices`` control ``slice``.

``import_annotations`` reads Label Studio's JSON export of that project (a list of tasks, each
with ``annotations``, each with a ``result`` list of ``{"from_name", "type", "value"}``; the
documented format) and saves every annotated task as a question through the workbench, so the
questions stage's validation applies to each exactly as to a save on the page. A task's last
annotation that was not cancelled counts; a cancelled one (Label Studio's *skip*) is logged as
a skipped passage. A span's text is the ``text`` Label Studio stores in its value, else the
passage's ``text[start:end]``. A task already imported (same task id and passage, in the
session log) is not imported again, so an export can be imported after every session.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_ablation.data.passages import Passage

from rag_ablation.authoring.workbench.session import SLICES, Refused, Workbench, next_id, passage_key

SPAN, QUESTION, ANSWER, SLICE = "span", "question", "answer", "slice"
"""The control names of ``LABEL_CONFIG`` that ``import_annotations`` reads."""

LABEL_CONFIG = f"""<View>
  <Header value="$doc"/>
  <Text name="text" value="$text"/>
  <Labels name="{SPAN}" toName="text">
    <Label value="answer span"/>
  </Labels>
  <TextArea name="{QUESTION}" toName="text" placeholder="A question the passage answers, in your own words"
            maxSubmissions="1" required="true"/>
  <TextArea name="{ANSWER}" toName="text" placeholder="A one-line reference answer" maxSubmissions="1" required="true"/>
  <Choices name="{SLICE}" toName="text" choice="single">
{chr(10).join(f'    <Choice value="{s}"/>' for s in SLICES)}
  </Choices>
</View>
"""


def export_tasks(passages: Sequence[Passage], done: Collection[str] = frozenset()) -> list[dict[str, Any]]:
    """One Label Studio task per passage, in the order given, but for those whose key
    (``passage_key``) is in ``done`` (module docstring)."""
    return [{"data": {"text": p.text, "doc": p.doc, "track": p.track, "passage": passage_key(p)}} for p in passages
            if passage_key(p) not in done]


@dataclass
class ImportReport:
    """What ``import_annotations`` did: ids saved, task ids skipped (cancelled) or already
    imported, and the refused tasks with their problems."""

    saved: list[str] = field(default_factory=list)
    skipped: list[Any] = field(default_factory=list)
    already: list[Any] = field(default_factory=list)
    refused: list[tuple[Any, list[str]]] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"{len(self.saved)} question(s) saved, {len(self.skipped)} task(s) skipped in Label Studio, "
               f"{len(self.already)} imported before, {len(self.refused)} refused"]
        out += [f"task {t}: {'; '.join(p)}" for t, p in self.refused]
        return out


def _result(annotation: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    return [r.get("value") or {} for r in annotation.get("result") or [] if isinstance(r, Mapping)
            and r.get("from_name") == name]


def _texts(annotation: Mapping[str, Any], name: str, key: str) -> list[str]:
    return [str(t).strip() for v in _result(annotation, name) for t in (v.get(key) or []) if str(t).strip()]


def _span(value: Mapping[str, Any], text: str) -> str:
    given = value.get("text")
    if isinstance(given, str) and given.strip():
        return given.strip()
    start, end = value.get("start"), value.get("end")
    return text[start:end].strip() if isinstance(start, int) and isinstance(end, int) else ""


def task_record(task: Mapping[str, Any], annotation: Mapping[str, Any], ids: Sequence[str]) -> dict[str, Any]:
    """The question a task's annotation describes (its id the next free ``main``-style one of
    its slice)."""
    data = task.get("data") or {}
    doc, text, track = str(data.get("doc") or ""), str(data.get("text") or ""), str(data.get("track") or "")
    spans = [s for s in (_span(v, text) for v in _result(annotation, SPAN)) if s]
    slices = _texts(annotation, SLICE, "choices")
    slice_name = slices[0] if slices else SLICES[0]
    record: dict[str, Any] = {"id": next_id(ids, slice_name, track), "question": " ".join(_texts(annotation, QUESTION, "text")),
                              "doc": doc, "span": spans[0] if len(spans) == 1 else None,
                              "answer": " ".join(_texts(annotation, ANSWER, "text")), "slice": slice_name, "track": track}
    if len(spans) > 1:
        record["spans"] = spans
    elif not spans:
        record["span"] = ""
    return record


def import_annotations(bench: Workbench, export: Any) -> ImportReport:
    """Save the annotated tasks of a Label Studio JSON export (module docstring)."""
    report = ImportReport()
    if not isinstance(export, list):
        report.refused.append(("-", ["expected Label Studio's JSON export: a list of tasks"]))
        return report
    done = {(e.get("task"), e.get("passage")) for e in bench.log.events() if e.get("mode") == "labelstudio"}
    for task in export:
        if not isinstance(task, Mapping):
            report.refused.append(("-", ["a task that is not a JSON object"]))
            continue
        tid, key = task.get("id"), (task.get("data") or {}).get("passage")
        if (tid, key) in done:
            report.already.append(tid)
            continue
        kept = [a for a in task.get("annotations") or [] if isinstance(a, Mapping)]
        if not kept:
            continue
        annotation = kept[-1]
        if annotation.get("was_cancelled"):
            bench.log.add("skip", passage=key, reason="skip", mode="labelstudio", task=tid)
            report.skipped.append(tid)
            continue
        doc = (task.get("data") or {}).get("doc")
        if doc not in bench.view.by_doc:
            report.refused.append((tid, [f"document {doc!r} is not in the corpus: export the tasks from this corpus"]))
            continue
        record = task_record(task, annotation, [q.id for q in bench.questions()])
        try:
            bench.save_question(record, mode="labelstudio", task=tid, passage=key)
        except Refused as e:
            report.refused.append((tid, e.problems))
            continue
        report.saved.append(record["id"])
    return report
