"""A team's own app through ``method: http``: concurrency, and the call cache, side by side in one run.

The app is the example of ``examples/own_app/`` served by ``python -m own_app.serve`` in a
subprocess on 127.0.0.1 with ``--delay-ms`` (50 by default) of sleep in every request, a
stand-in for a service whose time goes into waiting (a model, a vector database, the network)
rather than this machine's CPU. The questions are the 172 of ``data/questions/handbook.jsonl``;
each run is ``rag_ablation.retrieval.external.app_run.run_app``, the ``app@NAME`` stage's own
work, with the config built as params would build it (``AppConfig.from_params``,
``RetrievalConfig.of_app``). Every measurement gets its own empty ``RAG_ABLATION_CACHE`` folder.

(a) Concurrency: ``fresh: true`` (every question asked, nothing read from the cache) at
    ``concurrency`` 1 and at ``--concurrency`` (8); wall seconds of ``run_app`` and the speed-up.
    Goal: at least 6x. Both runs must give the same rankings (the same fingerprint; exit 1 if not).
(b) The cache: an unchanged app config run twice on one cache folder, first cold then warm;
    requests counted by the server itself (``GET /stats``). Goal: 0 requests on the warm run.
    The same again with ``version: version`` (the reply's version is part of the cache key),
    where each run asks one question afresh by design, to learn the version now served.

Usage:  .venv/bin/python benchmarks/own_app.py [--delay-ms 50] [--concurrency 8]
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from rag_ablation.core.config import AppConfig, RetrievalConfig
from rag_ablation.data.questions import Question, load_questions
from rag_ablation.retrieval.external.app_run import AppRun, run_app
from rag_ablation.retrieval.external.call_cache import CallCache

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "data" / "questions" / "handbook.jsonl"
DEPS = "examples/own_app"
SPEED_UP_GOAL = 6.0
WARM_REQUESTS_GOAL = 0
ADDRESS = re.compile(r"http://127\.0\.0\.1:\d+")


@contextmanager
def served(delay_ms: float, *, timeout: float = 60.0) -> Iterator[str]:
    """``own_app.serve`` in a subprocess on a free port with ``delay_ms`` per request; yields its
    root URL once it has printed it, and stops it (that process only) on exit."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "examples"), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-m", "own_app.serve", "--port", "0", "--delay-ms", str(delay_ms)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            sys.exit(f"own_app.serve printed no address within {timeout:.0f} s")
        line = proc.stdout.readline()
        match = ADDRESS.search(line)
        if match is None:
            sys.exit(f"own_app.serve did not start: {line!r} (exit code {proc.poll()})")
        print(line.strip(), file=sys.stderr)
        yield match.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def requests_served(root: str) -> int:
    """POSTs to ``/search`` the service has answered since it started."""
    with httpx.Client(timeout=10, trust_env=False) as c:
        return int(c.get(f"{root}/stats").json()["requests"]["search"])


def app_config(name: str, root: str, *, concurrency: int, fresh: bool, version: bool = False) -> RetrievalConfig:
    """The retrieval config of an http app asking ``root``/search, as params would give it."""
    spec: dict[str, Any] = {"method": "http", "url": f"{root}/search", "deps": DEPS, "concurrency": concurrency,
                            "fresh": fresh}
    if version:
        spec["version"] = "version"
    return RetrievalConfig.of_app(name, AppConfig.from_params(name, spec))


@dataclass(frozen=True)
class Measured:
    """One ``run_app``: its label, wall seconds, the requests the server received, and what the
    run's summary says (calls made, replies read from the cache, the rankings' fingerprint)."""

    label: str
    concurrency: int
    cache: str
    seconds: float
    requests: int
    calls: int
    cached: int
    fingerprint: str


def measure(label: str, cfg: RetrievalConfig, questions: list[Question], root: str, cache_dir: Path,
            cache: str) -> Measured:
    """Run ``cfg`` over ``questions`` with the call cache in ``cache_dir`` (also exported as
    ``RAG_ABLATION_CACHE``) and count what reached the server."""
    assert cfg.app is not None
    os.environ["RAG_ABLATION_CACHE"] = str(cache_dir)
    before = requests_served(root)
    with CallCache() as calls_cache:
        t0 = time.perf_counter()
        result: AppRun = run_app(cfg, questions, base=ROOT, cache=calls_cache)
        seconds = time.perf_counter() - t0
    s = result.summary
    if s["missing"] or s["short"]:
        sys.exit(f"{label}: {s['missing']} question(s) without passages, {s['short']} with fewer than {cfg.k}")
    return Measured(label=label, concurrency=cfg.app.concurrency, cache=cache, seconds=seconds,
                    requests=requests_served(root) - before, calls=int(s["calls"]), cached=int(s["cached"]),
                    fingerprint=str(s["fingerprint"]))


def table(rows: list[Measured], baseline: float) -> str:
    """The Markdown table of ``rows``; speed-up against ``baseline`` seconds for the fresh runs."""
    out = ["| run | concurrency | cache | requests to the app | calls | from cache | wall s | speed-up |",
           "|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        speed = f"{baseline / r.seconds:.1f}x" if r.cache == "fresh" else ""
        out.append(f"| {r.label} | {r.concurrency} | {r.cache} | {r.requests} | {r.calls} | {r.cached} | "
                   f"{r.seconds:.2f} | {speed} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--delay-ms", type=float, default=50.0)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    questions = load_questions(QUESTIONS)
    load_start = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    t_all = time.perf_counter()
    rows: list[Measured] = []
    with served(args.delay_ms) as root, tempfile.TemporaryDirectory(prefix="own_app_bench_") as tmp:
        folders = iter(Path(tmp) / str(i) for i in range(100))
        # (a) concurrency, nothing cached
        rows.append(measure("(a) fresh", app_config("own_c1", root, concurrency=1, fresh=True), questions, root,
                            next(folders), "fresh"))
        rows.append(measure("(a) fresh", app_config("own_cn", root, concurrency=args.concurrency, fresh=True),
                            questions, root, next(folders), "fresh"))
        # (b) an unchanged config, cold then warm on one cache folder; then with `version`
        for label, version in (("(b) unchanged", False), ("(b) unchanged, version: version", True)):
            folder = next(folders)
            cfg = app_config("own_b", root, concurrency=args.concurrency, fresh=False, version=version)
            rows.append(measure(label, cfg, questions, root, folder, "cold"))
            rows.append(measure(label, cfg, questions, root, folder, "warm"))
    total = time.perf_counter() - t_all
    fresh1, fresh_n = rows[0], rows[1]
    speed_up = fresh1.seconds / fresh_n.seconds
    warm = rows[3]
    print(f"\n{len(questions)} questions, --delay-ms {args.delay_ms:g}; {started}, {total:.1f} s in all; load average "
          f"{load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}\n")
    print(table(rows, fresh1.seconds))
    print(f"\nspeed-up at concurrency {args.concurrency}: {speed_up:.1f}x (goal >= {SPEED_UP_GOAL:g}x: "
          f"{'met' if speed_up >= SPEED_UP_GOAL else 'NOT met'}); warm rerun: {warm.requests} request(s) "
          f"(goal {WARM_REQUESTS_GOAL}: {'met' if warm.requests == WARM_REQUESTS_GOAL else 'NOT met'})")
    if fresh1.fingerprint != fresh_n.fingerprint or len({r.fingerprint for r in rows}) != 1:
        sys.exit("the runs' rankings differ (fingerprints): concurrency or the cache changed the results")


if __name__ == "__main__":
    main()
