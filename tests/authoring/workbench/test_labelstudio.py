"""labelstudio: sampled passages out as Label Studio tasks, its JSON export back in as questions."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_ablation.data.passages import sample_passages
from rag_ablation.authoring.workbench.labelstudio import LABEL_CONFIG, export_tasks, import_annotations
from rag_ablation.authoring.workbench.session import WriteMode, passage_key
from rag_ablation.authoring.workbench.store import STALE_SECONDS
from rag_ablation.data.corpus import load_corpus
from rag_ablation.data.questions import check_spans, load_questions


def annotated(task_id, task, spans, question="What does it say?", answer="It says so.", slice_name=None,
              cancelled=False):
    """A task as Label Studio's JSON export writes it, with one annotation."""
    text = task["data"]["text"]
    result = []
    for n, s in enumerate(spans):
        at = text.find(s)
        value = {"start": at, "end": at + len(s), "labels": ["answer span"]}
        if n % 2 == 0:
            value["text"] = s  # Label Studio stores the text; without it the offsets are used
        result.append({"id": f"r{n}", "from_name": "span", "to_name": "text", "type": "labels", "value": value})
    result.append({"id": "q", "from_name": "question", "to_name": "text", "type": "textarea", "value": {"text": [question]}})
    result.append({"id": "a", "from_name": "answer", "to_name": "text", "type": "textarea", "value": {"text": [answer]}})
    if slice_name:
        result.append({"id": "s", "from_name": "slice", "to_name": "text", "type": "choices",
                       "value": {"choices": [slice_name]}})
    return {"id": task_id, "data": task["data"], "annotations": [
        {"id": 100 + task_id, "result": result, "was_cancelled": cancelled, "ground_truth": False}],
        "predictions": []}


def test_export_is_one_task_per_sampled_passage(bench):
    proj, params = bench.project, bench.params
    sample, _ = sample_passages(proj.corpus, per_track=params.workbench.per_track, seed=params.workbench.seed)
    tasks = export_tasks(WriteMode(bench).passages)
    assert tasks == [{"data": {"text": p.text, "doc": p.doc, "track": p.track, "passage": passage_key(p)}} for p in sample]
    assert '<Labels name="span" toName="text">' in LABEL_CONFIG and '<Choice value="paraphrase"/>' in LABEL_CONFIG


def test_export_leaves_out_the_passages_done(bench):
    write = WriteMode(bench)
    p = write.next()["passage"]
    span = p["text"][40:100].strip()
    write.save({"passage": p["index"], "question": "What does the first passage say?", "span": span,
                "span_start": p["text"].find(span), "answer": "So.", "slice": "main", "id": "main-ferries-01"})
    write.skip({"passage": 2, "reason": "code_table"})
    tasks = export_tasks([write.passages[n] for n in write.order()], done=write.done())
    assert [t["data"]["passage"] for t in tasks] == [passage_key(write.passages[n]) for n in (1, 3)]


def test_import_saves_each_annotated_task_through_the_questions_validation(bench):
    tasks = export_tasks(WriteMode(bench).passages)
    t0, t1, t2, t3 = tasks
    one = t0["data"]["text"].split("\n")[0][10:70].strip()
    a, b = t1["data"]["text"].split("\n")[0][5:50].strip(), t1["data"]["text"].split("\n")[1][5:50].strip()
    export = [annotated(1, t0, [one]), annotated(2, t1, [a, b], slice_name="paraphrase"),
              annotated(3, t2, ["x"], cancelled=True), annotated(4, t3, ["not in this passage at all, nowhere"])]
    report = import_annotations(bench, export)
    assert report.saved == ["main-ferries-01", "paraphrase-ferries-01"] and report.skipped == [3]
    assert [t for t, _ in report.refused] == [4] and "span not found in trams/maintenance.md" in report.refused[0][1][0]
    questions = load_questions(bench.project.questions)
    check_spans(questions, load_corpus(bench.project.corpus))
    assert (questions[0].span, questions[1].spans) == (one, (a, b))
    assert WriteMode(bench).next()["done"] == 3, "the imported and the skipped passages count as done"
    again = import_annotations(bench, export)
    assert again.saved == [] and again.already == [1, 2, 3] and [t for t, _ in again.refused] == [4]


@pytest.mark.bad_input
def test_an_export_that_is_not_a_task_list_is_refused(bench):
    assert import_annotations(bench, {"tasks": []}).refused == [("-", ["expected Label Studio's JSON export: a list of tasks"])]
    task = {"id": 9, "data": {"doc": "../../etc/passwd", "text": "x", "passage": "p"}, "annotations": [{"result": []}]}
    assert import_annotations(bench, [task]).refused[0][1][0].startswith("document '../../etc/passwd' is not in the corpus")


def test_the_command_exports_and_imports(project, tmp_path):
    proj, _ = project
    cmd = [sys.executable, "-m", "rag_ablation.commands.main", "label"]
    out = subprocess.run([*cmd, "--export-labelstudio", "ls"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    tasks = json.loads((tmp_path / "ls/tasks.json").read_text())
    assert len(tasks) == 4 and (tmp_path / "ls/label_config.xml").read_text() == LABEL_CONFIG
    span = tasks[0]["data"]["text"].split("\n")[0][10:70].strip()
    (tmp_path / "export.json").write_text(json.dumps([annotated(1, tasks[0], [span])]))
    out = subprocess.run([*cmd, "--import-labelstudio", "export.json"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("1 question(s) saved, 0 task(s) skipped in Label Studio, 0 imported before, 0 refused")
    assert json.loads((tmp_path / "data/questions/handbook.jsonl").read_text())["span"] == span
    stale = tmp_path / "data/questions/.handbook.jsonl.k3j9x2.tmp"  # left by a killed save
    stale.write_text("{}", encoding="utf-8")
    os.utime(stale, (time.time() - 2 * STALE_SECONDS,) * 2)
    out = subprocess.run([*cmd, "--export-labelstudio", "ls"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == (f"rag-ablation label: removed {Path('data/questions') / stale.name}, left by "
                                          f"a save that was killed (the file it was saving is whole and keeps every "
                                          f"save that was acknowledged)") and not stale.exists()
    assert "3 tasks in ls/tasks.json (1 of the 4 sampled passages left out: already done)" in out.stdout
    again = json.loads((tmp_path / "ls/tasks.json").read_text())
    assert [t["data"]["passage"] for t in again] == [t["data"]["passage"] for t in tasks if t != tasks[0]]
    bad = subprocess.run([*cmd, "--import-labelstudio", "missing.json"], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2 and "cannot read the Label Studio export missing.json" in bad.stderr
