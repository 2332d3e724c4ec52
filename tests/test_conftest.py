"""The shared test helpers that guard the tests themselves."""
from __future__ import annotations

import signal
import subprocess
import sys

from conftest import default_sigint

SHOW = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"


def test_a_child_gets_default_sigint_back_when_the_run_ignores_it():
    """Started under `nohup` (SIGINT ignored), a child inherits the ignore and a Ctrl-C test
    could never interrupt it; with default_sigint it gets Python's KeyboardInterrupt back."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        inherited = subprocess.run([sys.executable, "-c", SHOW], capture_output=True, text=True, check=True)
        reset = subprocess.run([sys.executable, "-c", SHOW], capture_output=True, text=True, check=True,
                               preexec_fn=default_sigint)
    finally:
        signal.signal(signal.SIGINT, before)
    assert inherited.stdout.strip() == "False"
    assert reset.stdout.strip() == "True"
