"""What every stage script shares: one clear message and exit status 2 for a user error.

Ctrl-C (``KeyboardInterrupt``) while a stage runs prints one line and exits 130 (the shell's
status for SIGINT) instead of a traceback; outputs are written atomically, so none is left
half-written, and a rerun resumes from the caches.

Only ``rag_ablation.core.errors.UserError`` (bad data, bad params, a missing model, a server that is
down) becomes the one-line message; any other exception is a bug and keeps its traceback.

A config that cannot run (no LLM, a reranker that cannot be loaded) is not an error: the stage
writes its outputs with its status (``unavailable``, or the status of the stage output it
reads) and the reason, and says so on stderr (``write_unavailable``).
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rag_ablation.core.errors import UserError
from rag_ablation.core.io import write_json


def run(main: Callable[[], None], *, cost: bool = True) -> None:
    """Call a stage's ``main``; a ``UserError`` prints ``error: <message>`` and exits 2.

    With ``cost`` (stage scripts), the run's wall time, CPU time and peak memory are printed at
    the end and, under DVC, logged (``rag_ablation.core.stage_costs``); commands pass ``cost=False``."""
    try:
        if cost:
            from rag_ablation.core.stage_costs import measured

            with measured():
                main()
        else:
            main()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C); rerun to resume from the caches", file=sys.stderr)
        sys.exit(130)


def write_unavailable(record: Mapping[str, Any], *, out: Path, latency: Path, no_work: Mapping[str, Any],
                      label: str) -> None:
    """The early exit of a stage whose config cannot run (``record["status"]`` is not ``ok``,
    ``record["reason"]`` says why): writes ``record`` to ``out`` and ``no_work`` (the stage's
    latency record when nothing ran) to ``latency``, and prints ``LABEL: STATUS: REASON`` on
    stderr, ``label`` naming the stage and its config (``generate@dense``). The stage then
    returns: not an error, the pipeline goes on and the unavailable status is reported."""
    write_json(out, record)
    write_json(latency, no_work)
    print(f"{label}: {record['status']}: {record['reason']}", file=sys.stderr)
