"""What each stage run cost: wall time, CPU time and peak resident memory, printed and logged.

Every stage script runs through ``rag_ablation.core.runner.run``, which measures its ``main`` and, when
it succeeds, prints one line to stderr (a failed stage prints only its error)::

    cost: dense@base: 41.2 s wall, 75.0 s CPU, peak memory 612 MB

When DVC runs the stage (it sets ``DVC_STAGE`` to the stage's name, e.g. ``dense@base``), the same
figures are appended as one JSON line to ``$RAG_ABLATION_CACHE/stage_costs.jsonl`` (default
``.cache/``; outside DVC's outputs, so nothing downstream reads it and DVC's early cutoff is
untouched). ``rag-ablation costs --since T`` (``rag_ablation.commands.costs``) prints the table
of the runs that started at or after the Unix time ``T`` (``make run`` does this after ``dvc
repro``); a stage that DVC restored from its run-cache or skipped ran no code and has no line.

Peak memory is ``getrusage(RUSAGE_SELF).ru_maxrss`` (Linux reports KiB; macOS bytes), the
stage process's own high-water mark: threads count, child processes do not.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from rag_ablation.core.errors import UserError

LOG_NAME = "stage_costs.jsonl"


@dataclass(frozen=True)
class Cost:
    """One stage run: ``stage`` (DVC's name, or the script's path outside DVC), ``started`` (Unix
    seconds), ``wall_s`` and ``cpu_s`` (seconds, user + system of this process), ``peak_mb``
    (peak resident memory, MiB), ``ok`` (False when it ended with an exception or exit)."""

    stage: str
    started: float
    wall_s: float
    cpu_s: float
    peak_mb: float
    ok: bool


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB."""
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1.0 if sys.platform == "darwin" else 1024.0  # macOS reports bytes, Linux KiB
    return maxrss * scale / (1024.0 * 1024.0)


def log_path() -> Path:
    """``$RAG_ABLATION_CACHE/stage_costs.jsonl`` (``rag_ablation.core.io.default_cache_dir``)."""
    from rag_ablation.core.io import default_cache_dir

    return default_cache_dir() / LOG_NAME


def format_cost(cost: Cost) -> str:
    """The one line printed at the end of a stage (module docstring)."""
    status = "" if cost.ok else " (failed)"
    return (f"cost: {cost.stage}{status}: {cost.wall_s:.1f} s wall, {cost.cpu_s:.1f} s CPU, "
            f"peak memory {cost.peak_mb:.0f} MB")


def append(cost: Cost, path: Path) -> None:
    """Append ``cost`` as one JSON line; a log that cannot be written is reported, not fatal
    (the stage's own outputs are already written)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(cost), sort_keys=True) + "\n")
    except OSError as e:
        print(f"warning: could not log the stage's cost to {path}: {e}", file=sys.stderr)


@contextmanager
def measured(stage: str | None = None, *, log: bool | None = None) -> Iterator[None]:
    """Measure the enclosed code as one stage run, print its cost line if it succeeded, and
    (under DVC, or when ``log`` is True) append it to the log, failed or not. ``stage`` defaults
    to ``$DVC_STAGE``, else the script."""
    name = stage or os.environ.get("DVC_STAGE") or Path(sys.argv[0]).name
    started, t0, c0 = time.time(), time.perf_counter(), time.process_time()
    ok = False
    try:
        yield
        ok = True
    finally:
        cost = Cost(stage=name, started=round(started, 3), wall_s=round(time.perf_counter() - t0, 3),
                    cpu_s=round(time.process_time() - c0, 3), peak_mb=round(peak_rss_mb(), 1), ok=ok)
        if ok:  # a failed stage's one line is its error message (rag_ablation.core.runner)
            print(format_cost(cost), file=sys.stderr)
        if log if log is not None else bool(os.environ.get("DVC_STAGE")):
            append(cost, log_path())


def read_costs(path: Path, *, since: float = 0.0) -> list[Cost]:
    """The logged runs that started at or after ``since`` (inclusive), in log order. A missing log
    is an empty list; a line that is not a cost record raises ``UserError`` naming the line."""
    from rag_ablation.core.io import numbered_lines  # as in log_path

    if not path.is_file():
        return []
    costs = []
    for number, line in numbered_lines(path):
        try:
            cost = Cost(**json.loads(line))
        except (ValueError, TypeError) as e:
            raise UserError(f"{path}:{number}: not a stage cost record ({e}); expected one JSON object "
                            f"per line with the fields of rag_ablation.core.stage_costs.Cost. The file is "
                            f"only a log: delete it and rerun") from e
        if cost.started >= since:
            costs.append(cost)
    return costs


def table(costs: list[Cost]) -> str:
    """A plain-text table of ``costs`` (one row per run, in order) with a total row: wall and CPU
    are summed, peak memory is the largest single stage's."""
    if not costs:
        return "no stage ran (everything was up to date or restored from DVC's run-cache)"
    width = max(len("stage"), *(len(c.stage) for c in costs))
    rows = [f"{'stage':<{width}}  {'wall s':>8}  {'CPU s':>8}  {'peak MB':>8}"]
    for c in costs:
        rows.append(f"{c.stage:<{width}}  {c.wall_s:>8.1f}  {c.cpu_s:>8.1f}  {c.peak_mb:>8.0f}"
                    + ("" if c.ok else "  failed"))
    rows.append(f"{'total (' + str(len(costs)) + ' runs)':<{width}}  {sum(c.wall_s for c in costs):>8.1f}  "
                f"{sum(c.cpu_s for c in costs):>8.1f}  {max(c.peak_mb for c in costs):>8.0f}")
    return "\n".join(rows)
