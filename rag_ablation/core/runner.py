"""What every stage script shares: one clear message and exit status 2 for a user error.

Ctrl-C (``KeyboardInterrupt``) while a stage runs prints one line and exits 130 (the shell's
status for SIGINT) instead of a traceback; outputs are written atomically, so none is left
half-written, and a rerun resumes from the caches.

Only ``rag_ablation.core.errors.UserError`` (bad data, bad params, a missing model, a server that is
down) becomes the one-line message; any other exception is a bug and keeps its traceback.
"""
from __future__ import annotations

import sys
from collections.abc import Callable

from rag_ablation.core.errors import UserError


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
