"""store: atomic appends that keep the file's bytes, and the session log."""
from __future__ import annotations

import json

from rag_ablation.authoring.workbench.store import SessionLog, append_record, appended_text, json_line, log_path


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
