"""The helpers every stage script shares (rag_ablation.core.runner)."""
from __future__ import annotations

import json

from rag_ablation.core.runner import write_unavailable


def test_write_unavailable_writes_the_record_and_the_no_work_latency_and_says_why(tmp_path, capsys):
    record = {"config": "dense", "status": "unavailable", "reason": "no LLM", "answers": []}
    write_unavailable(record, out=tmp_path / "out" / "dense.json", latency=tmp_path / "lat" / "dense.json",
                      no_work={"calls": 0, "hits": 0, "misses": 0}, label="generate@dense")
    assert json.loads((tmp_path / "out" / "dense.json").read_text()) == record
    assert json.loads((tmp_path / "lat" / "dense.json").read_text()) == {"calls": 0, "hits": 0, "misses": 0}
    captured = capsys.readouterr()
    assert captured.err == "generate@dense: unavailable: no LLM\n" and captured.out == ""
