"""Stage cost lines and the cost log (rag_ablation.core.stage_costs)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_ablation.core import runner
from rag_ablation.core.errors import UserError
from rag_ablation.core.stage_costs import Cost, format_cost, measured, read_costs, table

ROOT = Path(__file__).resolve().parents[2]


def test_measured_prints_and_logs_under_dvc(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAG_ABLATION_CACHE", str(tmp_path))
    monkeypatch.setenv("DVC_STAGE", "dense@base")
    block = bytearray(64 * 1024 * 1024)  # 64 MiB resident: the peak is at least that
    block[::4096] = b"x" * len(block[::4096])
    with measured():
        sum(range(200_000))
    err = capsys.readouterr().err
    assert err.startswith("cost: dense@base: ") and "peak memory" in err
    [cost] = read_costs(tmp_path / "stage_costs.jsonl")
    assert cost.stage == "dense@base" and cost.ok
    assert cost.wall_s >= 0 and cost.cpu_s >= 0
    assert cost.peak_mb >= 64
    del block


def test_outside_dvc_prints_but_does_not_log(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAG_ABLATION_CACHE", str(tmp_path))
    monkeypatch.delenv("DVC_STAGE", raising=False)
    with measured("by-hand"):
        pass
    assert "cost: by-hand: " in capsys.readouterr().err
    assert not (tmp_path / "stage_costs.jsonl").exists()


def test_failed_stage_prints_only_its_error_and_is_logged_as_failed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAG_ABLATION_CACHE", str(tmp_path))
    monkeypatch.setenv("DVC_STAGE", "chunk@base")

    def main() -> None:
        raise UserError("bad chunk size")

    with pytest.raises(SystemExit) as exit_info:
        runner.run(main)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err == "error: bad chunk size\n", "a failed stage prints one line: its error"
    [cost] = read_costs(tmp_path / "stage_costs.jsonl")
    assert cost.ok is False


def test_commands_print_no_cost(capsys):
    runner.run(lambda: None, cost=False)
    assert "cost:" not in capsys.readouterr().err


def test_since_is_inclusive_and_table_totals(tmp_path):
    log = tmp_path / "stage_costs.jsonl"
    rows = [Cost("a", 100.0, 1.5, 1.0, 50.0, True), Cost("b", 200.0, 2.0, 3.0, 80.0, True),
            Cost("c", 300.0, 4.0, 4.0, 70.0, False)]
    log.write_text("".join(json.dumps(r.__dict__) + "\n" for r in rows))
    assert [c.stage for c in read_costs(log, since=200.0)] == ["b", "c"]
    text = table(read_costs(log, since=200.0))
    last = text.splitlines()[-1].split()
    # total row: wall 2.0 + 4.0, CPU 3.0 + 4.0, peak = max(80, 70)
    assert last[-3:] == [f"{2.0 + 4.0:.1f}", f"{3.0 + 4.0:.1f}", "80"]
    assert "failed" in text.splitlines()[2]
    assert "no stage ran" in table([])
    assert read_costs(tmp_path / "missing.jsonl") == []


@pytest.mark.bad_input
def test_damaged_log_line_is_named(tmp_path):
    log = tmp_path / "stage_costs.jsonl"
    log.write_text(json.dumps(Cost("a", 1.0, 1.0, 1.0, 1.0, True).__dict__) + "\n{not json\n")
    with pytest.raises(UserError, match=r"stage_costs.jsonl:2: not a stage cost record.*delete it"):
        read_costs(log)


def test_format_cost():
    assert format_cost(Cost("x", 0.0, 1.25, 2.0, 99.6, True)) == \
        "cost: x: 1.2 s wall, 2.0 s CPU, peak memory 100 MB"
