"""Files that no stage writes any more: the leftovers of a removed config, chunking or transform.

DVC does not clean up after a stage instance disappears from a ``dvc.yaml`` (a config removed
from params.yaml): its committed leaf files (``metrics/latency/<config>.json``,
``metrics/index/<chunking>.json``) stay tracked in git and are never written again, its build
outputs (``data/build/runs/<config>.json``, a chunking's folders) stay in the workspace, and its
entry stays in the ``dvc.lock`` beside that ``dvc.yaml`` (one per file of
``pipeline_files.PIPELINE_FILES``). The build outputs matter beyond disk space: ``score``,
``judge_checks`` and ``report_html`` depend on whole folders such as ``data/build/runs``, so a
leftover file enters their dvc.lock hashes, and a clean checkout (which never has it) finds
them changed. ``stale`` finds all three from what the lock files recorded and which outputs
the current pipeline declares; ``prune`` removes them (``git rm`` for tracked files, deletion
for the build outputs, which git ignores, the entries from the lock files; the command is
``rag-ablation prune``, ``rag_ablation.commands.prune``). Only paths inside the repository that
a lock file records as outputs of a stage that no longer exists are candidates (every stage of
this pipeline runs in the top folder, so a lock's paths are the repository's), so nothing the
pipeline never wrote is touched: not the files a command writes beside the metrics
(``rag-ablation sweep-report``'s ``metrics/sweep.*``), nor a file of the user's in an output
folder.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from rag_ablation.core.errors import UserError
from rag_ablation.core.io import write_text
from rag_ablation.core.pipeline_files import PIPELINE_FILES


@dataclass(frozen=True)
class Stale:
    files: tuple[str, ...]  # tracked files (repository-relative) that no stage writes
    lock_entries: tuple[str, ...]  # lock entries no dvc.yaml defines any more, as FILE:NAME (lock_entry)
    build: tuple[str, ...]  # untracked build outputs (files or folders) in the workspace that no stage writes


def _relative(path: str, root: Path) -> str | None:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:  # a dependency outside the repository
        return None


def lock_entry(lock: str, name: str) -> str:
    """How ``Stale.lock_entries`` names entry ``name`` of the lock file ``lock``
    (repository-relative): ``dvc.lock:retrieve@old``, ``index/dvc.lock:chunk@old``."""
    return f"{lock}:{name}"


def _lock_of(dvcfile: str) -> str:
    """The lock file beside the ``dvc.yaml`` ``dvcfile`` (repository-relative)."""
    return (Path(dvcfile).parent / "dvc.lock").as_posix()


def _pipeline(root: Path) -> tuple[set[str], set[str], set[str]]:
    """(stage entries as ``lock_entry`` names them, output paths, dependency paths), relative to
    ``root``, of the current pipeline. A file a stage reads (the gate's accepted baseline beside
    the metrics) is never a leftover."""
    from dvc.repo import Repo

    try:
        repo = Repo(str(root))
    except Exception as e:  # noqa: BLE001 - not a DVC repository, or a broken dvc.yaml
        raise UserError(f"{root} is not a DVC repository DVC can read ({e}); run this in the project's root") from None
    with repo:
        stages = list(repo.index.stages)
        names = {lock_entry(_lock_of(_relative(s.dvcfile.path, root) or s.dvcfile.path), s.name) for s in stages}
        outs = {_relative(o.fs_path, root) for s in stages for o in s.outs}
        deps = {_relative(d.fs_path, root) for s in stages for d in s.deps}
    return names, {p for p in outs if p}, {p for p in deps if p}


def _tracked(root: Path, paths: set[str]) -> set[str]:
    """The files git tracks at or under ``paths`` (repository-relative)."""
    if not paths:
        return set()
    res = subprocess.run(["git", "ls-files", "-z", "--", *sorted(paths)], cwd=root, capture_output=True, text=True)
    if res.returncode != 0:
        raise UserError(f"git ls-files failed in {root}: {res.stderr.strip()}; run this inside the git repository")
    return {p for p in res.stdout.split("\0") if p}


def stale(root: Path = Path(".")) -> Stale:
    """The leftovers of the current checkout (module docstring): the entries of every lock file
    (beside each of ``PIPELINE_FILES``) of stages no ``dvc.yaml`` defines any more, and the
    outputs those entries record that no current stage writes or reads, split into the ones git
    tracks and the build outputs present in the workspace (a folder output counts whole; one
    holding a tracked file is left alone)."""
    root = Path(root)
    names, outs, deps = _pipeline(root)
    stages = {lock_entry(lock, name): entry for lock, data in _locks(root).items()
              for name, entry in (data.get("stages") or {}).items()}
    entries = sorted(set(stages) - names)
    recorded = {o["path"] for e in entries for o in (stages[e].get("outs") or []) if isinstance(o, dict)
                and isinstance(o.get("path"), str) and o["path"]}
    left = sorted(p for p in recorded - outs - deps if _relative(str(root / p), root) == Path(p).as_posix())
    tracked = _tracked(root, set(left))
    files = [p for p in left if p in tracked]
    build = [p for p in left if p not in tracked and (root / p).exists()
             and not any(t.startswith(p + "/") for t in tracked)]
    return Stale(tuple(files), tuple(entries), tuple(build))


def _locks(root: Path) -> dict[str, dict]:
    """Lock file (repository-relative) -> its data, for the lock beside each of
    ``PIPELINE_FILES`` that exists."""
    locks = [_lock_of(f) for f in PIPELINE_FILES]
    return {lock: yaml.safe_load((root / lock).read_text(encoding="utf-8")) or {}
            for lock in locks if (root / lock).is_file()}


def _unignore(root: Path, rel: str) -> None:
    """Drop the line ``/NAME`` that DVC wrote for the output ``rel`` from the ``.gitignore`` beside
    it (what ``dvc remove`` does). Other lines, and a ``.gitignore`` without that line, are left
    as they are. A ``.gitignore`` left with no line stays, empty: it may be the only tracked file
    of a folder a stage depends on (``score`` reads ``data/build/answers`` even when no config is
    answered), and without it a clean checkout has no such folder and DVC stops at that stage."""
    path = Path(rel)
    gitignore = root / path.parent / ".gitignore"
    if not gitignore.is_file():
        return
    lines = gitignore.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if line.strip() != f"/{path.name}"]
    if kept == lines:
        return
    write_text(gitignore, "".join(line + "\n" for line in kept))


def prune(root: Path = Path("."), *, apply: bool) -> Stale:
    """Find the leftovers and, with ``apply``, remove them: ``git rm`` each tracked file, delete
    each build output (a folder with its contents) and its line in the ``.gitignore`` beside it,
    and drop the entries from their lock files.
    Returns what was (or would be) removed."""
    root = Path(root)
    found = stale(root)
    if not apply:
        return found
    if found.files:
        res = subprocess.run(["git", "rm", "-q", "--", *found.files], cwd=root, capture_output=True, text=True)
        if res.returncode != 0:
            raise UserError(f"git rm failed: {res.stderr.strip()}")
    for rel in found.build:
        path = root / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        _unignore(root, rel)
    dropped: dict[str, list[str]] = {}
    for entry in found.lock_entries:  # lock_entry's FILE:NAME (a lock path holds no colon)
        lock, name = entry.split(":", 1)
        dropped.setdefault(lock, []).append(name)
    for lock, names in dropped.items():
        data = yaml.safe_load((root / lock).read_text(encoding="utf-8"))
        for name in names:
            del data["stages"][name]
        write_text(root / lock, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return found
