"""`rag-ablation costs` (rag_ablation.commands.costs): the table of the logged stage runs."""
from __future__ import annotations

import json
import subprocess
import sys

from rag_ablation.core.stage_costs import Cost


def test_costs_command_prints_the_table(tmp_path):
    log = tmp_path / "stage_costs.jsonl"
    log.write_text(json.dumps(Cost("judge@dense", 10.0, 12.25, 11.0, 300.0, True).__dict__) + "\n")
    out = subprocess.run([sys.executable, "-m", "rag_ablation.commands.main", "costs", "--since", "5"],
                         capture_output=True, text=True, cwd=tmp_path,
                         env={"RAG_ABLATION_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert "judge@dense" in out.stdout and "12.2" in out.stdout and "cost:" not in out.stderr
