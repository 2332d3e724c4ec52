"""Files that no stage writes any more: the leftovers of a removed config, chunking or transform.

DVC does not clean up after a stage instance disappears from ``dvc.yaml`` (a config removed from
params.yaml): its committed leaf files (``metrics/latency/<config>.json``,
``metrics/index/<chunking>.json``) stay tracked in git and are never written again, and its
entry stays in ``dvc.lock``. ``stale`` finds both by asking DVC which outputs the current
pipeline declares; ``prune`` removes them (``git rm`` for tracked files, the entries from
``dvc.lock``; the command is ``rag-ablation prune``, ``rag_ablation.commands.prune``). Only
folders that hold at least one current output are looked at, so nothing the pipeline never
owned is touched.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from rag_ablation.core.errors import UserError


@dataclass(frozen=True)
class Stale:
    files: tuple[str, ...]  # tracked files (repository-relative) that no stage writes
    lock_entries: tuple[str, ...]  # dvc.lock stage names that dvc.yaml no longer defines


def _relative(path: str, root: Path) -> str | None:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:  # a dependency outside the repository
        return None


def _pipeline(root: Path) -> tuple[set[str], set[str], set[str]]:
    """(stage names, output paths, dependency paths), relative to ``root``, of the current
    pipeline. A file a stage reads (the gate's accepted baseline beside the metrics) is never a
    leftover."""
    from dvc.repo import Repo

    try:
        repo = Repo(str(root))
    except Exception as e:  # noqa: BLE001 - not a DVC repository, or a broken dvc.yaml
        raise UserError(f"{root} is not a DVC repository DVC can read ({e}); run this in the project's root") from None
    with repo:
        stages = list(repo.index.stages)
        names = {s.addressing.split(":")[-1] for s in stages}
        outs = {_relative(o.fs_path, root) for s in stages for o in s.outs}
        deps = {_relative(d.fs_path, root) for s in stages for d in s.deps}
    return names, {p for p in outs if p}, {p for p in deps if p}


def _tracked(root: Path, folders: set[str]) -> list[str]:
    if not folders:
        return []
    res = subprocess.run(["git", "ls-files", "-z", "--", *sorted(folders)], cwd=root, capture_output=True, text=True)
    if res.returncode != 0:
        raise UserError(f"git ls-files failed in {root}: {res.stderr.strip()}; run this inside the git repository")
    return [p for p in res.stdout.split("\0") if p]


def stale(root: Path = Path(".")) -> Stale:
    """The leftovers of the current checkout (module docstring)."""
    root = Path(root)
    names, outs, deps = _pipeline(root)
    folders = {Path(o).parent.as_posix() for o in outs if Path(o).parent.as_posix() != "."}
    files = [f for f in _tracked(root, folders) if f not in outs and f not in deps
             and Path(f).parent.as_posix() in folders and Path(f).name != ".gitignore"]
    lock = root / "dvc.lock"
    entries: list[str] = []
    if lock.is_file():
        data = yaml.safe_load(lock.read_text(encoding="utf-8")) or {}
        entries = sorted(set(data.get("stages") or {}) - names)
    return Stale(tuple(sorted(files)), tuple(entries))


def prune(root: Path = Path("."), *, apply: bool) -> Stale:
    """Find the leftovers and, with ``apply``, remove them: ``git rm`` each file and drop the
    entries from ``dvc.lock``. Returns what was (or would be) removed."""
    root = Path(root)
    found = stale(root)
    if apply and found.files:
        res = subprocess.run(["git", "rm", "-q", "--", *found.files], cwd=root, capture_output=True, text=True)
        if res.returncode != 0:
            raise UserError(f"git rm failed: {res.stderr.strip()}")
    if apply and found.lock_entries:
        lock = root / "dvc.lock"
        data = yaml.safe_load(lock.read_text(encoding="utf-8"))
        for name in found.lock_entries:
            del data["stages"][name]
        from rag_ablation.core.io import write_text

        write_text(lock, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return found
