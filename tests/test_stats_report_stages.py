"""Smoke tests of stages/stats.py and stages/report.py, run as DVC runs them, on tiny hand-built
score files in tmp_path (the fixture params.yaml, whose stats block is absent: defaults apply)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from score_rows import answer_row, config_rows, hits_to_ranks, write_answers, write_retrieval

from conftest import FIXTURES, ROOT
from rag_ablation.core.config import P_VALUE_DIGITS, P_VALUE_PREFIX, STAT_DECIMALS
from rag_ablation.core.io import round_decimals, round_significant

SLICES = ["identifier"] * 12 + ["paraphrase"] * 12
HITS = {
    "dense": [0] * 8 + [1] * 4 + [1] * 6 + [0] * 6,
    "bm25": [1] * 12 + [0] * 6 + [1] * 6,  # identifier all found; paraphrase mixed
    "hybrid": [1] * 24,
    "rewrite": [0] * 24,
}  # hybrid_rerank (in params) has no rows: unavailable


def stage(cwd, script, *args):
    return subprocess.run([sys.executable, str(ROOT / "stages" / script), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True)


def stats_args(d, out="metrics/stats.json", plots="metrics/plots"):
    return ["--retrieval-scores", d / "metrics/scores/retrieval.csv", "--answer-scores",
            d / "metrics/scores/answers.csv", "--out", d / out, "--plots", d / plots,
            "--audited-scores", d / "metrics/scores/retrieval_audited.csv"]


NO_JUDGED_ANSWERS = {"configs": {}, "calibration": {}, "canaries": {}, "bias": {},
                     "grades": {"matching": 0, "stale": 0, "unknown": 0, "answers": 0}}
"""A judge_eval detail file with no judged config: the report has no graded-answer sections."""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    d = tmp_path_factory.mktemp("stats_project")
    shutil.copy(FIXTURES / "params.yaml", d / "params.yaml")
    rows = [r for name, hits in HITS.items() for r in config_rows(name, hits_to_ranks(hits), slices=SLICES,
                                                                     unanswerable=2)]
    write_retrieval(d / "metrics/scores/retrieval.csv", rows)
    # the label audit found answers for dense's first two misses (q0, q1), at rank 2
    audited = [{**r, "first_relevant_rank": 2, "hit_at_1": 0, "hit_at_5": 1, "hit_at_10": 1, "rr_at_10": 0.5}
               if r["config"] == "dense" and r["id"] in ("q0", "q1") else r for r in rows]
    write_retrieval(d / "metrics/scores/retrieval_audited.csv", audited)
    write_answers(d / "metrics/scores/answers.csv", [answer_row("bm25", f"q{i}", int(i % 3 == 0)) for i in range(24)])
    res = stage(d, "stats.py", *stats_args(d))
    assert res.returncode == 0, res.stderr
    (d / "metrics/judge_detail.json").write_text(json.dumps(NO_JUDGED_ANSWERS))
    res = stage(d, "report.py", "--stats", d / "metrics/stats.json", "--judge", d / "metrics/judge_detail.json",
                "--out", d / "metrics/report.md")
    assert res.returncode == 0, res.stderr
    return d


def test_stats_stage_writes_numbers_only_per_config_in_params_order(project):
    m = json.loads((project / "metrics/stats.json").read_text())
    assert set(m) == {"dense", "bm25", "hybrid", "hybrid_rerank", "rewrite"}
    assert m["hybrid_rerank"] == {"available": 0, "answers": {"available": 0}}  # answered in params, no rows
    assert m["dense"]["is_baseline"] == 1 and "vs_baseline" not in m["dense"]
    vs = m["hybrid"]["vs_baseline"]["hit_at_5"]
    assert (vs["fixed"], vs["broken"], vs["family"]) == (14, 0, 3)  # bm25, hybrid, rewrite against dense
    assert vs["delta"] == round(14 / 24, 4) and vs["ci_low"] > 0 and vs["real"] == 1
    assert m["bm25"]["by_slice"]["identifier"]["too_small"] == 1  # 12 < 20, the default min_slice
    assert m["bm25"]["answers"]["contains_reference"]["n"] == 24

    def walk(v):
        if isinstance(v, dict):
            return all(walk(x) for x in v.values())
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    assert walk(m)


def test_plot_files_are_lists_of_rows(project):
    for name in ("configs.json", "slices.json", "changes.json", "subsample.json"):
        rows = json.loads((project / "metrics/plots" / name).read_text())
        assert isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows), name
    configs = json.loads((project / "metrics/plots/configs.json").read_text())
    assert [r["config"] for r in configs if r["panel"] == "recall@5"] == ["dense", "bm25", "hybrid", "hybrid_rerank",
                                                                           "rewrite"]


def test_report_has_the_tables(project):
    text = (project / "metrics/report.md").read_text()
    for heading in ("## Configs", "## recall@5 by slice", "## Paired changes against `dense`",
                    "## How many questions does it take?", "## Answers (judge-free proxy)", "## How to read this"):
        assert heading in text, heading
    assert "| `hybrid_rerank` | unavailable |" in text and "Holm p (family of 3)" in text


def floats(obj, key=""):
    """(key, value) of every float in a JSON value, with the nearest dict key."""
    if isinstance(obj, dict):
        return [kv for k, v in obj.items() for kv in floats(v, k)]
    if isinstance(obj, list):
        return [kv for v in obj for kv in floats(v, key)]
    return [(key, obj)] if isinstance(obj, float) else []


def test_the_stats_writer_rounds_every_float(project):
    """metrics/stats.json and its plot data are committed: each number to STAT_DECIMALS decimals,
    each p-value to P_VALUE_DIGITS significant digits, no -0.0, so another machine writes the
    same bytes."""
    files = [project / "metrics/stats.json", *sorted((project / "metrics/plots").glob("*.json"))]
    for path in files:
        text = path.read_text()
        got = floats(json.loads(text))
        assert got, path
        for key, v in got:
            want = (round_significant(v, P_VALUE_DIGITS) if key.startswith(P_VALUE_PREFIX)
                    else round_decimals(v, STAT_DECIMALS))
            assert v == want, (path.name, key, v)
        assert "-0.0," not in text and "-0.0\n" not in text, path.name
    assert any(k.startswith(P_VALUE_PREFIX) and 0 < v < 10 ** -STAT_DECIMALS
               for k, v in floats(json.loads(files[0].read_text()))), "a p below 1e-4 keeps its digits"


def test_a_rerun_writes_identical_bytes(project, tmp_path):
    res = stage(project, "stats.py", *stats_args(project, out=tmp_path / "again.json", plots=tmp_path / "plots"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "again.json").read_bytes() == (project / "metrics/stats.json").read_bytes()
    for name in ("configs.json", "subsample.json"):
        assert (tmp_path / "plots" / name).read_bytes() == (project / "metrics/plots" / name).read_bytes()


@pytest.mark.bad_input
def test_missing_scores_is_one_line_and_exit_2(project, tmp_path):
    shutil.copy(project / "params.yaml", tmp_path / "params.yaml")
    res = stage(tmp_path, "stats.py", *stats_args(tmp_path))
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert res.stderr.startswith("error: no per-question scores file")
    assert not (tmp_path / "metrics/stats.json").exists()


@pytest.mark.bad_input
def test_report_without_stats_is_one_line_and_exit_2(project, tmp_path):
    shutil.copy(project / "params.yaml", tmp_path / "params.yaml")
    res = stage(tmp_path, "report.py", "--stats", tmp_path / "stats.json", "--judge", project / "metrics/judge_detail.json",
                "--out", tmp_path / "report.md")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "dvc repro stats" in res.stderr


def test_the_audit_is_reported_before_and_after(project):
    m = json.loads((project / "metrics/stats.json").read_text())
    dense = m["dense"]
    assert dense["audited"]["changed"] == 2 and dense["audited"]["newly_found"] == 2
    # 10 of 24 found before the audit (dense's hits), 12 after
    assert dense["recall_at_5"]["value"] == round(10 / 24, 4)
    assert dense["audited"]["recall_at_5"]["value"] == round(12 / 24, 4)
    assert m["bm25"]["audited"]["changed"] == 0
    report = (project / "metrics/report.md").read_text()
    assert "## Label audit: before and after" in report and "2 miss(es) turn out to be hits" in report
