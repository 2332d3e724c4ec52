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

What a side ran on is read from that side's own files (:func:`read_side_file`), never the
workspace's: its data set and split from its params.yaml (:func:`questions_of`), and its dev/test
assignment from its own ``data/split/<dataset>.jsonl`` (:func:`split_at`).
"""
from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rag_ablation.core.config import ConfigError, Params, SplitConfig, field_defaults
from rag_ablation.core.errors import UserError
from rag_ablation.data.split import read_split
from rag_ablation.support.git import check_repository, commit_of, run_git

WORKSPACE = "workspace"
"""The side name of the working tree."""

KINDS = ("workspace", "revision", "experiment")
PARAMS = Path("params.yaml")
SPLIT_DIR = Path("data/split")
"""Where the ``split`` stage keeps each data set's dev/test assignment (``SPLIT_DIR/<dataset>.jsonl``)."""
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
    when = commit_times(found.values(), cwd)
    return [Side(name, "experiment", sha) for name, sha in sorted(found.items(), key=lambda x: (when[x[1]], x[0]))]


def commit_times(commits: Iterable[str], cwd: Path | None = None) -> dict[str, int]:
    """Each commit's committer time (Unix seconds, ``git show -s --format=%ct``). An experiment's
    commit is made when its run ends, so DVC's queue (first in, first out) orders them as they
    were queued; an unreadable commit is a UserError."""
    shas = sorted(set(commits))
    if not shas:
        return {}
    res = run_git(["show", "-s", "--format=%H %ct", *shas], cwd)
    if res.returncode != 0:
        raise UserError(f"git cannot read the experiments' commits ({res.stderr.strip()}); check `git fsck`")
    return {sha: int(t) for sha, t in (line.split() for line in res.stdout.splitlines() if line.strip())}


def read_side_file(side: Side, path: Path, cwd: Path | None = None) -> str | None:
    """A file's text on one side (the workspace's file, or as committed); None if it has none."""
    if side.commit is None:
        full = (cwd or Path(".")) / path
        return full.read_text(encoding="utf-8") if full.is_file() else None
    res = run_git(["show", f"{side.commit}:./{path.as_posix()}"], cwd)
    return res.stdout if res.returncode == 0 else None


def params_at(side: Side, cwd: Path | None = None) -> dict[str, Any]:
    """The side's own params.yaml, parsed (empty when it has none); a file that is not a YAML
    mapping is a UserError naming the side."""
    text = read_side_file(side, PARAMS, cwd)
    try:
        params = yaml.safe_load(text) if text else {}
    except yaml.YAMLError as e:
        raise UserError(f"params.yaml at {side.label} is not valid YAML ({e}); fix it there or leave that side "
                        "out") from None
    if not isinstance(params, dict):
        raise UserError(f"params.yaml at {side.label} must hold a mapping of keys, found {type(params).__name__}; "
                        "fix it there or leave that side out")
    return params


@dataclass(frozen=True)
class SideQuestions:
    """What a side's questions are: its ``dataset`` and ``split`` as its own params.yaml set them
    (the defaults of ``rag_ablation.core.config`` for a key it leaves out)."""

    dataset: str
    split: SplitConfig


def questions_of(side: Side, cwd: Path | None = None) -> SideQuestions:
    """``dataset`` and ``split`` of the side's own params.yaml (:func:`params_at`); a value the
    project would refuse is a UserError naming the side."""
    raw = params_at(side, cwd)
    dataset = raw.get("dataset", field_defaults(Params)["dataset"])
    try:
        if not isinstance(dataset, str) or not dataset:
            raise ConfigError(f"dataset: expected a data set name, got {dataset!r}")
        return SideQuestions(dataset, SplitConfig.from_params(raw.get("split")))
    except ConfigError as e:
        raise UserError(f"params.yaml at {side.label}: {e}") from None


def split_at(side: Side, dataset: str, cwd: Path | None = None) -> dict[str, str] | None:
    """The side's own dev/test assignment (``SPLIT_DIR/<dataset>.jsonl`` in its workspace or
    commit, ``rag_ablation.data.split.read_split``), or None when it has no such file."""
    path = SPLIT_DIR / f"{dataset}.jsonl"
    text = read_side_file(side, path, cwd)
    if text is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:  # the one reader of split files reads files
        copy = Path(tmp) / path.name
        copy.write_text(text, encoding="utf-8")
        return read_split(copy, where=f"{path.as_posix()} at {side.label}")
