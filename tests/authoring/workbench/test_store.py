"""store: atomic appends that keep the file's bytes, the session log, and a killed save's leftovers."""
from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import time

import pytest

from rag_ablation.authoring.workbench.session import Workbench
from rag_ablation.authoring.workbench.store import (STALE_SECONDS, SessionLog, append_record, appended_text, json_line,
                                                    log_path, remove_stale_temps, temp_files)

from workbench_tiny_project import ROOT

QUESTION = {"id": "main-ferries-01", "question": "How many bikes may ride one crossing?", "doc": "ferries/operations.md",
            "span": "the limit of twelve bicycles per crossing", "answer": "Twelve.", "slice": "main",
            "track": "ferries"}


def test_append_keeps_every_byte_and_adds_one_line(tmp_path):
    path = tmp_path / "q.jsonl"
    old = '{"id": "a"}\n\n{"id": "b", "text": "caf\u00e9 \u2028 x"}\n'
    path.write_text(old, encoding="utf-8")
    append_record(path, {"id": "c", "question": "caf\u00e9?"})
    text = path.read_text(encoding="utf-8")
    assert text == old + json_line({"id": "c", "question": "caf\u00e9?"})
    assert json.loads(text.split("\n")[-2]) == {"id": "c", "question": "caf\u00e9?"}
    assert [p.name for p in tmp_path.iterdir()] == ["q.jsonl"], "no temporary file left behind"


def test_a_file_without_its_final_newline_gets_one_before_the_new_line(tmp_path):
    assert appended_text('{"id": "a"}', "X\n") == '{"id": "a"}\nX\n'
    assert appended_text("", "X\n") == "X\n"
    path = tmp_path / "sub" / "new.jsonl"
    append_record(path, {"id": "a"})
    assert path.read_text(encoding="utf-8") == '{"id": "a"}\n'


def test_the_session_log_sits_beside_the_questions_and_is_not_a_jsonl_file(tmp_path):
    log = SessionLog(log_path(tmp_path / "data/questions/mine.jsonl"))
    assert log.path.name == "mine.workbench-log"
    log.add("skip", passage="a@0-1", reason="skip")
    log.add("question", id="q1")
    log.path.write_text(log.path.read_text(encoding="utf-8") + "not json\n", encoding="utf-8")
    assert [e["kind"] for e in log.events()] == ["skip", "question"]
    assert list(log.events("question")) == [{"kind": "question", "id": "q1"}]


def killed_save(path, record):
    """Run ``append_record(path, record)`` in a child process killed between writing its temporary
    file and renaming it over ``path`` (``os.replace`` exits the process at once)."""
    code = ("import os, sys, json\n"
            "from pathlib import Path\n"
            "from rag_ablation.authoring.workbench.store import append_record\n"
            "os.replace = lambda *a: os._exit(9)\n"
            "append_record(Path(sys.argv[1]), json.loads(sys.argv[2]))\n")
    res = subprocess.run([sys.executable, "-c", code, str(path), json.dumps(record)], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert res.returncode == 9, res.stderr


@pytest.mark.bad_input
def test_a_killed_saves_temporary_file_is_never_data_and_is_removed_when_the_workbench_starts(project):
    proj, params = project
    proj.questions.write_text(json.dumps(QUESTION) + "\n", encoding="utf-8")
    before = proj.questions.read_bytes()
    killed_save(proj.questions, {**QUESTION, "id": "main-ferries-02"})
    killed_save(proj.audit, {"id": "main-ferries-01", "doc": "ferries/operations.md", "span": QUESTION["span"],
                             "note": "n"})
    assert proj.questions.read_bytes() == before, "the killed save left the file as it was"
    left = temp_files(proj.questions) + temp_files(proj.audit)
    assert len(left) == 2 and all(p.name.startswith((".tiny.jsonl.", ".audit.jsonl.")) and p.suffix == ".tmp"
                                  for p in left)
    assert "main-ferries-02" in left[0].read_text(encoding="utf-8"), "it holds the whole new file"
    assert [p.name for p in proj.questions.parent.glob("*.jsonl")] == ["tiny.jsonl"], "no *.jsonl reader sees it"
    ignored = [line for line in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
               if line and not line.startswith("#")]
    assert all(any(fnmatch.fnmatch(p.name, pattern) for pattern in ignored) for p in left), "git ignores it"

    fresh = proj.questions.with_name(".tiny.jsonl.abcd1234.tmp")  # another process saving right now
    fresh.write_text("x", encoding="utf-8")
    old = time.time() - 2 * STALE_SECONDS
    for p in left:
        os.utime(p, (old, old))
    bench = Workbench(proj, params)
    assert sorted(bench.removed_temps) == sorted(left) and not any(p.exists() for p in left)
    assert fresh.exists(), "a temporary file younger than STALE_SECONDS is left to its save"
    assert [q.id for q in bench.questions()] == ["main-ferries-01"]
    assert remove_stale_temps(proj.questions, older_than=0) == [fresh] and not fresh.exists()
