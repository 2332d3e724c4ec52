"""Reading a file as committed at a git revision: git itself, run without a shell.

``read_at(rev, path)`` resolves ``rev`` to its commit (``git rev-parse``) and returns that
commit's ``path`` relative to the current directory (``git show COMMIT:./PATH``). Git not
installed, a name that is no revision, a folder outside a repository and a file missing at that
commit are each one ``UserError``.
"""
from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from rag_ablation.core.errors import UserError

MISSING_HINT = "that commit does not hold it"
"""What :func:`read_at` says by default when the file is not in the commit."""


def run_git(args: Sequence[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``git ARGS`` in ``cwd``, output captured as text, never raising on a non-zero status."""
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise UserError("git is not installed or not on PATH; install git to compare with a revision") from None


def check_repository(cwd: Path | None = None) -> None:
    """A UserError unless ``cwd`` is inside a git repository."""
    if run_git(["rev-parse", "--git-dir"], cwd).returncode != 0:
        raise UserError("not inside a git repository: run `rag-ablation diff` from the project's checkout")


def commit_of(rev: str, cwd: Path | None = None) -> str | None:
    """The full commit id ``rev`` names, or None when git knows no such revision (or there is
    no repository); a name starting with ``-`` is never passed to git."""
    if not rev or rev.startswith("-"):
        return None
    res = run_git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd)
    return res.stdout.strip() if res.returncode == 0 else None


def resolve(rev: str, cwd: Path | None = None) -> str:
    """The full commit id ``rev`` names; an unknown revision (or no repository) is a UserError."""
    if not rev or rev.startswith("-"):
        raise UserError(f"revision {rev!r} is not a revision name; expected a branch, tag or commit such as main")
    res = run_git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd)
    if res.returncode != 0:
        check_repository(cwd)
        raise UserError(f"unknown revision {rev!r}: git knows no branch, tag or commit by that name "
                        "(try `git branch -a` or `git log --oneline`)")
    return res.stdout.strip()


def read_at(rev: str, path: Path, cwd: Path | None = None, *, hint: str = MISSING_HINT,
            what: str | None = None) -> tuple[str, str]:
    """``(commit, text)`` of ``path`` (relative to ``cwd``) as committed at ``rev``. A commit
    without the file is a UserError naming the file, the revision (or ``what``, e.g.
    ``experiment 'exp-1'``) and the commit, then ``hint``."""
    commit = resolve(rev, cwd)
    res = run_git(["show", f"{commit}:./{path.as_posix()}"], cwd)
    if res.returncode != 0:
        raise UserError(f"no {path.as_posix()} at {what or f'revision {rev!r}'} (commit {commit[:10]}): {hint}")
    return commit, res.stdout
