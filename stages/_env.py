"""Imported first by every stage script: make sure the project's environment runs it.

DVC runs each stage's `python ...` command with the PATH of the shell that called it. When a user
runs `.venv/bin/dvc repro` without activating the environment, that `python` is the system's,
which cannot import `rag_ablation`. Then this module re-runs the stage with the repository's own
`.venv/bin/python` (found from the working directory, where DVC runs stages); when there is none,
it prints one line saying how to set the environment up, and exits 2.

It also puts the working directory first on ``sys.path`` when it holds the package, so a stage
imports the ``rag_ablation`` beside it, not the editable install's. ``dvc exp run --queue`` runs
each experiment in a copy of the repository under ``.dvc/tmp/exps/``: without this, every
queued experiment would run the library as it is in the workspace when the worker reaches it
(edits made after queueing included), while DVC records the hashes of the copy's files.

Before any library loads, it sets ``GOMP_SPINCOUNT=10000`` unless ``OMP_WAIT_POLICY`` or
``GOMP_SPINCOUNT`` is already set: OpenMP (libgomp, which llama.cpp, torch and FAISS use here)
then spins 10,000 times instead of about 300,000 before a waiting thread sleeps. Measured side
by side (benchmarks/RESULTS.md, "OpenMP wait policy"): whole llama.cpp answers as fast as the
default on a quiet machine and 2.8x faster beside a process that holds one core; embedding 5%
slower quiet and 1.3x faster busy. ``OMP_WAIT_POLICY=PASSIVE`` gains more on a busy machine but
costs 30% on a quiet one. A value the user set is never changed.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


SPIN = {"GOMP_SPINCOUNT": "10000"}
"""The OpenMP setting applied when the user set none (module docstring)."""
if not any(k in os.environ for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")):
    os.environ.update(SPIN)


def _venv_python() -> Path | None:
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        candidate = folder / ".venv" / "bin" / "python"
        if candidate.is_file():
            return candidate
        if (folder / ".dvc").is_dir() and "/.dvc/tmp/exps/" not in f"{folder.as_posix()}/":
            break  # the repository's own root (a queued experiment's copy looks further up, to its repository)
    return None


if importlib.util.find_spec("rag_ablation") is None:
    venv = _venv_python()
    # compare environments, not binaries: a venv's python is often a symlink to the very
    # interpreter that runs here without the venv (sys.prefix tells them apart)
    if venv is not None and Path(sys.prefix).resolve() != venv.parent.parent.resolve() \
            and not os.environ.get("RAG_ABLATION_REEXEC"):
        os.environ["RAG_ABLATION_REEXEC"] = "1"
        os.execv(str(venv), [str(venv), *sys.argv])
    print(f"error: {sys.executable} cannot import rag_ablation: the project's environment is not active. "
          "Run `make install` once, then `. .venv/bin/activate` (or use `make run`)", file=sys.stderr)
    sys.exit(2)

# After the environment check (which must see the installed environment, not this folder): the
# package beside the stage wins over the editable install's (module docstring).
if (Path.cwd() / "rag_ablation" / "__init__.py").is_file() and sys.path[:1] != [str(Path.cwd())]:
    sys.path.insert(0, str(Path.cwd()))
