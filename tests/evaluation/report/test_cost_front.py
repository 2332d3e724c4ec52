"""The report's Pareto front of quality against cost (``html_data.cost_points``, the rule of
``sweep.pareto_front`` that ``sweep-report`` uses too) on the nine committed runs of the example
(``tests/fixtures/latency_runs.json``): timing noise must not move a config on or off it.

At a 25% tolerance one run (9da32d7) timed ``hybrid`` at 18.9 ms and the better
``hybrid_fixed1000`` at 24.2 ms, 1.28x apart, and put ``hybrid`` on the front, which no other
run did (issue 47). ``COST_TOLERANCE`` is 50% now: every run gives one front."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import FIXTURES, ROOT
from rag_ablation.evaluation.report.html_data import cost_points
from rag_ablation.evaluation.report.metrics_view import retrieval_p95_in
from rag_ablation.evaluation.statistics.sweep import COST_FLOOR_MS, COST_TOLERANCE, pareto_front

RUNS = json.loads((FIXTURES / "latency_runs.json").read_text(encoding="utf-8"))
FRONT = ["bm25", "bm25_fixed1000", "hybrid_fixed1000"]
"""The example's front: BM25 (both chunkings, the same recall@5 within the cost floor) and the
best hybrid; every dense config is dominated by a BM25 one that is better and cheaper."""


def page_configs(run: dict) -> list[dict]:
    """The run's configs as ``html_data.config_entries`` gives them to ``cost_points``."""
    return [{"name": name, "available": True, "p95_ms": c["p95_ms"],
             "measures": {"recall_at_5": {"value": c["recall_at_5"], "ci_low": c["recall_at_5"],
                                          "ci_high": c["recall_at_5"]}}}
            for name, c in run["configs"].items()]


def report_front(run: dict) -> list[str]:
    return sorted(p["config"] for p in cost_points(page_configs(run), RUNS["measure"]) if p["front"])


def test_the_report_front_is_the_same_in_every_committed_run():
    assert len(RUNS["runs"]) == 9 and all(len(r["configs"]) == 18 for r in RUNS["runs"])
    assert {r["commit"][:7]: report_front(r) for r in RUNS["runs"]} == {r["commit"][:7]: FRONT for r in RUNS["runs"]}


def test_the_run_that_moved_the_front_at_25_percent():
    """9da32d7 at the old tolerance: hybrid 18.9 ms against hybrid_fixed1000's 24.2 ms, beyond
    25% and 5 ms, so hybrid (recall@5 0.870 < 0.903) counted as cheaper and stayed on the front;
    within the 50% of COST_TOLERANCE it is dominated, as in the eight other runs."""
    run = next(r for r in RUNS["runs"] if r["commit"].startswith("9da32d7"))
    hybrid, best = run["configs"]["hybrid"], run["configs"]["hybrid_fixed1000"]
    assert (round(hybrid["p95_ms"], 1), round(best["p95_ms"], 1)) == (18.9, 24.2)
    assert hybrid["recall_at_5"] < best["recall_at_5"]
    names = list(run["configs"])
    quality = [run["configs"][n]["recall_at_5"] for n in names]
    cost = [run["configs"][n]["p95_ms"] for n in names]
    old = sorted(n for n, f in zip(names, pareto_front(quality, cost, tolerance=0.25, floor_ms=COST_FLOOR_MS)) if f)
    assert old == ["bm25", "bm25_fixed1000", "hybrid", "hybrid_fixed1000"]
    assert COST_TOLERANCE == 0.5 and report_front(run) == FRONT


def test_the_largest_same_cost_ratio_in_the_runs_is_inside_the_tolerance():
    """hybrid and hybrid_fixed1000 do the same work (a dense and a BM25 search, fused); across
    the runs one timed them up to 1.28x apart, inside 1.5x."""
    ratios = [max(a, b) / min(a, b) for r in RUNS["runs"]
              for a, b in [(r["configs"]["hybrid"]["p95_ms"], r["configs"]["hybrid_fixed1000"]["p95_ms"])]]
    assert 1.25 < max(ratios) < 1 + COST_TOLERANCE


def _git_show(commit: str, path: str) -> str | None:
    res = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return res.stdout if res.returncode == 0 else None


@pytest.mark.skipif(_git_show(RUNS["runs"][0]["commit"], "metrics/stats.json") is None,
                    reason="the committed runs are not in this clone's history (a shallow clone)")
def test_the_fixture_holds_what_the_committed_files_say():
    """Each run's numbers as git holds them: recall@5 of metrics/stats.json and the P95 of each
    config's latency file read by the reports' own reader (``retrieval_p95_in``)."""
    for run in RUNS["runs"]:
        stats = json.loads(_git_show(run["commit"], "metrics/stats.json") or "{}")
        for name, c in run["configs"].items():
            text = _git_show(run["commit"], f"metrics/latency/{name}.json")
            assert text is not None and retrieval_p95_in(text) == c["p95_ms"], (run["commit"][:7], name)
            assert stats[name]["recall_at_5"]["value"] == c["recall_at_5"], (run["commit"][:7], name)
