"""The quality-against-cost Pareto front, run again: does a second run of the example give the
same front in the report and in ``sweep-report``?

Goal (issue 36, "honest costs"): every config's latency is measured by one rule (warm, each
config's own query embedding, each step the shorter of two runs;
``rag_ablation/support/latency_rule.py``), and costs within ``COST_TOLERANCE`` count as equal,
so timing noise does not move a config on or off the front.

How: the front is computed as each reader computes it, from the files a run leaves:
- the report (``report_html``, through its own ``html_data.cost_points``): recall of
  ``stats.measure`` per available config in ``metrics/stats.json`` (all questions) against
  ``retrieval_p95`` of ``metrics/latency/CONFIG.json``;
- ``sweep-report --revs workspace`` (every scored config of the workspace a candidate; with the
  example's split, ranked on the dev questions): the ``pareto`` flags of ``metrics/sweep.json``,
  written to a temp folder.
The runs: the committed state at each ``--rev`` (the report's inputs read with ``git show``,
sweep-report given ``--revs REV``), then the workspace as it is, then ``--rounds`` more runs, each forcing
every ``retrieve@CONFIG`` stage again (``dvc repro -f -s``: new latencies, the same rankings, so
nothing downstream reruns). Every run's P95 per config is printed, with each front.

It changes the workspace's latency files and dvc.lock entries of the retrieve stages (a real
rerun; commit them or `git checkout` them after).

Usage:  .venv/bin/python benchmarks/pareto_repeat.py [--rounds 1] [--rev HEAD [REV ...]]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

from rag_ablation.core.config import load_config
from rag_ablation.evaluation.report.html_data import cost_points
from rag_ablation.evaluation.report.metrics_view import retrieval_p95, retrieval_p95_in
from rag_ablation.evaluation.scoring.scores import read_scores
from rag_ablation.evaluation.statistics.comparison import RECALL_OF, measure_of_rows

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / ".venv" / "bin"


def report_front(stats: dict, p95: dict[str, float | None], measure: str) -> dict[str, bool]:
    """Config -> on the report's front, through the page's own ``html_data.cost_points`` (the
    available configs with a latency)."""
    recall = RECALL_OF[measure]
    configs = [{"name": c, "available": m.get("available"), "p95_ms": p95.get(c), "measures": {recall: m.get(recall)}}
               for c, m in stats.items()]
    return {p["config"]: p["front"] for p in cost_points(configs, measure)}


def sweep_front(side: str) -> dict[str, bool]:
    """Config -> on ``sweep-report --revs SIDE``'s front (every scored config of that side)."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([str(BIN / "rag-ablation"), "sweep-report", "--revs", side, "--out", out],
                       cwd=REPO, check=True, capture_output=True, text=True)
        sweep = json.loads((Path(out) / "sweep.json").read_text())
    return {name.split("@")[0]: bool(r["pareto"]) for name, r in sweep["ranking"].items()}


def workspace_state(measure: str, configs: list[str]) -> tuple[dict[str, float | None], dict[str, bool], dict[str, bool]]:
    stats = json.loads((REPO / "metrics" / "stats.json").read_text())
    p95 = {c: retrieval_p95(REPO / "metrics" / "latency", c) for c in configs}
    return p95, report_front(stats, p95, measure), sweep_front("workspace")


def committed_state(rev: str, measure: str, configs: list[str]) -> tuple[dict[str, float | None], dict[str, bool],
                                                                        dict[str, bool]]:
    def show(path: str) -> str | None:
        res = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=REPO, capture_output=True, text=True)
        return res.stdout if res.returncode == 0 else None

    stats = json.loads(show("metrics/stats.json") or "{}")
    p95 = {}
    for c in configs:
        text = show(f"metrics/latency/{c}.json")
        p95[c] = None if text is None else retrieval_p95_in(text)
    return p95, report_front(stats, p95, measure), sweep_front(rev)


def on_front(front: dict[str, bool]) -> list[str]:
    return sorted(c for c, f in front.items() if f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=1, help="forced reruns of every retrieve stage after the first (1)")
    ap.add_argument("--rev", nargs="+", default=["HEAD"], help="the committed runs to compare with (HEAD)")
    args = ap.parse_args()
    os.chdir(REPO)
    params = load_config()
    measure = measure_of_rows(params.stats.measure, read_scores(REPO / "metrics" / "scores" / "retrieval.csv"))
    configs = list(params.retrieval)
    runs: list[tuple[str, dict, dict, dict]] = []
    for rev in args.rev:
        runs.append((f"committed ({rev})", *committed_state(rev, measure, configs)))
    runs.append(("workspace", *workspace_state(measure, configs)))
    for i in range(args.rounds):
        subprocess.run([str(BIN / "dvc"), "repro", "-f", "-s", *(f"retrieve@{c}" for c in configs)], cwd=REPO,
                       check=True, capture_output=True, text=True)
        runs.append((f"forced rerun {i + 1}", *workspace_state(measure, configs)))
    names = sorted({c for _, p, _, _ in runs for c, v in p.items() if v is not None})
    print("P95 ms per config, by run:")
    print("config".ljust(24) + "".join(label[:22].rjust(24) for label, *_ in runs))
    for c in names:
        print(c.ljust(24) + "".join(("n/a" if p.get(c) is None else f"{p[c]:.2f}").rjust(24) for _, p, _, _ in runs))
    print()
    for label, _, front, sweep in runs:
        print(f"{label}: report front {on_front(front)}")
        print(f"{label}: sweep-report front {on_front(sweep)}")
    reports = {tuple(on_front(f)) for _, _, f, _ in runs}
    sweeps = {tuple(on_front(s)) for _, _, _, s in runs}
    print(f"\nreport front the same in every run: {len(reports) == 1}; "
          f"sweep-report front the same in every run: {len(sweeps) == 1}")


if __name__ == "__main__":
    main()
