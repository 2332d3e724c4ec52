"""What every stage script shares: one clear message and a non-zero exit for a known error."""
from __future__ import annotations

import sys
from collections.abc import Callable

# Errors that mean "bad input or unavailable model": reported in one message, exit code 2.
# Anything else is a bug and keeps its traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, FileNotFoundError, RuntimeError)


def run(main: Callable[[], None]) -> None:
    """Call a stage's ``main``; a user error prints ``error: <message>`` and exits 2."""
    try:
        main()
    except USER_ERRORS as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)

