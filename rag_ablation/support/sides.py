"""What one side of a comparison names: the workspace, a git revision, or a DVC experiment.

``rag-ablation diff A [B]`` compares the per-question scores of two sides. A side is written as

- ``workspace``: the files in the working tree (the default for B);
- a git revision: a branch, tag or commit (``git rev-parse``), tried first;
- a DVC experiment name, as ``dvc exp show`` and ``dvc exp list`` print it (``exp-3f1a2``, or a
  name given with ``dvc exp run -n``). Names are resolved through DVC's own experiments API
  (``Repo.experiments.ls``, the code behind ``dvc exp list --all-commits``), over the
  experiments of every commit, to the commit DVC stored the experiment in; never by guessing
  ref paths. An experiment's committed files (the scores are ``cache: false``, so in git) are
  then read with git like any revision's.

A name that is neither is one ``UserError`` listing the experiments DVC knows; a name DVC gives
to experiments of two different commits is one too, listing their commits.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_ablation.core.errors import UserError
from rag_ablation.support.git import check_repository, commit_of

WORKSPACE = "workspace"
"""The side name of the working tree."""

KINDS = ("workspace", "revision", "experiment")
SHOWN = 20  # experiment names listed in an error message


@dataclass(frozen=True)
class Side:
    """One side: ``name`` as written, its ``kind`` (one of :data:`KINDS`) and ``commit`` (the
    full commit id of a revision or experiment; None for the workspace)."""

    name: str
    kind: str
    commit: str | None

    @property
    def label(self) -> str:
        """How reports name it: ``workspace``, the revision as written, or ``experiment NAME``."""
        return f"experiment {self.name}" if self.kind == "experiment" else self.name


def dvc_experiments(cwd: Path | None = None) -> dict[str, list[str]]:
    """Every DVC experiment of the repository at ``cwd`` (all commits): name -> the commit ids
    DVC stored experiments of that name in (one, unless two baselines reuse a name), sorted."""
    try:
        from dvc.exceptions import NotDvcRepoError
        from dvc.repo import Repo
    except ImportError:  # pragma: no cover - dvc is a dependency of the project
        raise UserError("DVC is not installed: `make install` (or `pip install -e .`) installs it") from None
    try:
        with Repo(str(cwd or Path.cwd())) as repo:
            listed: Mapping[str, Sequence[tuple[str, str | None]]] = repo.experiments.ls(all_commits=True)
    except NotDvcRepoError:
        return {}
    out: dict[str, set[str]] = {}
    for entries in listed.values():
        for name, sha in entries:
            if sha:
                out.setdefault(name, set()).add(sha)
    return {name: sorted(shas) for name, shas in sorted(out.items())}


def resolve_side(spec: str, cwd: Path | None = None) -> Side:
    """The side ``spec`` names: ``workspace``, else a git revision, else a DVC experiment."""
    if spec == WORKSPACE:
        return Side(spec, "workspace", None)
    commit = commit_of(spec, cwd)
    if commit is not None:
        return Side(spec, "revision", commit)
    check_repository(cwd)
    known = dvc_experiments(cwd)
    shas = known.get(spec)
    if shas is None:
        names = ", ".join(list(known)[:SHOWN]) + (f" (and {len(known) - SHOWN} more)" if len(known) > SHOWN else "")
        listed = f"the experiments DVC knows are: {names}" if known else "DVC knows no experiment in this repository"
        raise UserError(f"unknown revision or experiment {spec!r}: git knows no branch, tag or commit by that name "
                        f"and DVC no experiment; {listed} (`dvc exp list --all-commits`), or write `{WORKSPACE}` "
                        "for the working tree")
    if len(shas) > 1:
        raise UserError(f"experiment name {spec!r} names {len(shas)} experiments (commits "
                        f"{', '.join(s[:10] for s in shas)}); write one of those commits instead")
    return Side(spec, "experiment", shas[0])


def head_experiments(cwd: Path | None = None) -> list[Side]:
    """The DVC experiments of the current commit (``dvc exp list``, DVC's experiments API), as
    sides, by name. None is an empty list."""
    try:
        from dvc.exceptions import NotDvcRepoError
        from dvc.repo import Repo
    except ImportError:  # pragma: no cover - dvc is a dependency of the project
        raise UserError("DVC is not installed: `make install` (or `pip install -e .`) installs it") from None
    check_repository(cwd)
    try:
        with Repo(str(cwd or Path.cwd())) as repo:
            listed: Mapping[str, Sequence[tuple[str, str | None]]] = repo.experiments.ls()
    except NotDvcRepoError:
        return []
    found = {name: sha for entries in listed.values() for name, sha in entries if sha}
    return [Side(name, "experiment", sha) for name, sha in sorted(found.items())]
