"""Deterministic, atomic output files.

Every output is written to a temporary file beside its target and renamed into place, so a
crash never leaves a half-written output. JSON is written with sorted keys, two-space indent and
a final newline, and holds no timestamps or run ids: the same inputs give the same bytes, which
is what lets DVC stop early when a rerun changes nothing.

Every float written through this module (``write_json``, ``write_jsonl`` and the scores CSVs of
``rag_ablation.evaluation.scoring.scores``) is first rounded by :func:`rounded_floats`: to
``OUTPUT_DECIMALS`` decimals, a p-value (a key starting with ``P_VALUE_PREFIX``) to
``P_VALUE_DIGITS`` significant digits, ``-0.0`` written ``0.0`` (``rag_ablation.core.config``). So
float noise from kernels that differ between CPUs (1e-16 in a PPI++ estimate) never reaches the
bytes of a committed file, and a rerun on another machine leaves ``git status`` clean.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from rag_ablation.core.config import OUTPUT_DECIMALS, P_VALUE_DIGITS, P_VALUE_PREFIX
from rag_ablation.core.errors import InvalidData, MissingInput
from rag_ablation.core.pipeline_files import stage_target


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # read once at import: os.umask is process-wide and not thread-safe


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file + rename), creating parent folders.

    The file gets the permissions a plain ``open(path, "w")`` would give (0666 less the umask),
    not the owner-only mode of the temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def replaced_folder(folder: Path) -> Iterator[Path]:
    """A hidden staging folder beside ``folder`` to write into; when the block ends without an
    exception it replaces ``folder`` whole (an older one is removed), otherwise it is deleted
    and ``folder`` is left as it was. So a crash never leaves a folder that looks complete. The
    folder gets the permissions a plain ``mkdir`` would give (0777 less the umask)."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".tmp"))
    try:
        os.chmod(tmp, 0o777 & ~_UMASK)
        yield tmp
        if folder.exists():
            old = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".old"))
            os.replace(folder, old / folder.name)
            os.replace(tmp, folder)
            shutil.rmtree(old)
        else:
            os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise

def round_decimals(x: float, decimals: int) -> float:
    """``x`` rounded to ``decimals`` places: Python's ``round``, which rounds the exact binary
    value half to even and is the same on every machine (``0.1 + 0.2`` gives ``0.3``). ``-0.0``
    (and a negative number rounding to 0) becomes ``0.0``; NaN and infinities are unchanged."""
    return round(float(x), decimals) + 0.0


def round_significant(x: float, digits: int) -> float:
    """``x`` to ``digits`` significant digits (``float(f"{x:.{digits}g}")``: ``3.14159e-09`` ->
    ``3.142e-09`` for 4), so a tiny number keeps its digits instead of becoming 0. ``-0.0``
    becomes ``0.0``; NaN and infinities are unchanged."""
    return float(f"{float(x):.{digits}g}") + 0.0


def rounded_floats(obj: Any, key: str | None = None) -> Any:
    """``obj`` with every float in it (nested in dicts, lists and tuples; tuples become lists, as
    JSON writes them) rounded as written: under a key starting with ``P_VALUE_PREFIX`` (the
    nearest enclosing dict key) to ``P_VALUE_DIGITS`` significant digits
    (:func:`round_significant`), else to ``OUTPUT_DECIMALS`` decimals (:func:`round_decimals`).
    Ints, bools, strings and None are returned as they are. Rounding an already rounded value
    changes nothing."""
    if isinstance(obj, float):
        if key is not None and key.startswith(P_VALUE_PREFIX):
            return round_significant(obj, P_VALUE_DIGITS)
        return round_decimals(obj, OUTPUT_DECIMALS)
    if isinstance(obj, dict):
        return {k: rounded_floats(v, k if isinstance(k, str) else key) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [rounded_floats(v, key) for v in obj]
    return obj


def dumps(obj: object) -> str:
    """The text ``write_json`` writes: ``obj`` with its floats rounded (:func:`rounded_floats`),
    keys sorted, two-space indent, a final newline."""
    return json.dumps(rounded_floats(obj), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def write_json(path: Path, obj: object) -> None:
    write_text(path, dumps(obj))


def write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    """One JSON object per line, keys sorted, floats rounded (:func:`rounded_floats`)."""
    write_text(path, "".join(json.dumps(rounded_floats(r), sort_keys=True, ensure_ascii=False) + "\n" for r in rows))


def numbered_lines(path: Path, *, skip_blank: bool = True) -> Iterator[tuple[int, str]]:
    """The lines of a UTF-8 text file with their 1-based numbers, split at ``\\n`` only: the one
    reader of every JSON-lines file (and of the other line-based files the project reads).

    A line's ``\\n`` and a trailing ``\\r`` (a CRLF file) are removed; nothing else is, and no
    other character ends a line: ``str.splitlines`` also breaks at U+0085, U+2028, U+2029,
    ``\\x0b``, ``\\x0c`` and ``\\x1c``-``\\x1e``, which JSON allows raw inside strings and which
    ``json.dumps(..., ensure_ascii=False)`` writes raw. Blank lines (only whitespace) are left
    out unless ``skip_blank`` is false. The file is read as it is iterated, one line at a time.
    A line that is not UTF-8 raises ``InvalidData`` naming the file, the line and the byte."""
    path = Path(path)
    with path.open("rb") as f:  # binary: lines end at b"\n" only, which no UTF-8 sequence holds
        for n, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InvalidData(f"{path} line {n}: not valid UTF-8 ({e.reason} at byte {e.start + 1} of the "
                                  "line); expected UTF-8 text: re-save the file as UTF-8") from None
            line = line.removesuffix("\n").removesuffix("\r")
            if line.strip() or not skip_blank:
                yield n, line


def numbered_json_lines(path: Path) -> tuple[list[tuple[int, object]], list[str]]:
    """Every non-blank line of a JSON-lines file (``numbered_lines``), parsed, with its 1-based
    line number, and one problem per line that is not valid JSON (``line N: not valid JSON
    (<reason> at column C)``), so that a reader can report every bad line at once."""
    rows: list[tuple[int, object]] = []
    problems: list[str] = []
    for n, line in numbered_lines(path):
        try:
            rows.append((n, json.loads(line)))
        except json.JSONDecodeError as e:
            problems.append(f"line {n}: not valid JSON ({e.msg} at column {e.colno})")
    return rows, problems


def string_record_problems(obj: object, fields: Sequence[str], *, non_empty: bool = False) -> list[str]:
    """What is wrong with ``obj`` as a record of exactly the string ``fields`` (a line of a
    hand-written JSON-lines file such as the audit or the hand grades): not an object, missing or
    unknown fields, a field that is not a string (with ``non_empty``: not a non-empty string).
    An empty list when it has that shape."""
    listed = ", ".join(fields)
    if not isinstance(obj, dict):
        return [f"expected a JSON object with {listed}, found {type(obj).__name__}"]
    out = []
    missing = [f for f in fields if f not in obj]
    extra = sorted(set(obj) - set(fields))
    if missing:
        out.append(f"missing field(s) {', '.join(missing)}")
    if extra:
        out.append(f"unknown field(s) {', '.join(extra)} (expected only {listed})")
    for f in fields:
        if f in obj and (not isinstance(obj[f], str) or (non_empty and not obj[f].strip())):
            out.append(f"field {f!r} must be a non-empty string, found {obj[f]!r}" if non_empty else
                       f"field {f!r} must be a string, found {obj[f]!r}")
    return out


SHOWN_PROBLEMS = 20
"""How many bad lines one message lists (then ``... and N more``)."""


def read_json(path: Path | str) -> Any:
    """The JSON value in the UTF-8 file ``path`` (``json.loads`` of its whole text). A missing
    file raises FileNotFoundError and text that is not JSON raises ``json.JSONDecodeError``, as
    ``json.loads(path.read_text())`` would: each caller knows which file it read and says how to
    fix it."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_output(path: Path, stage: str) -> dict[str, Any]:
    """The JSON object the DVC stage ``stage`` wrote at ``path``. Missing: MissingInput ``no file
    PATH: run `dvc repro STAGE```; not JSON (with its line) or not UTF-8, or JSON but not an
    object: InvalidData saying to regenerate it with ``dvc repro STAGE``. STAGE is the name
    ``dvc repro`` takes from the top folder (``pipeline_files.stage_target``: ``labels@base`` becomes
    ``index/dvc.yaml:labels@base``)."""
    stage = stage_target(stage)
    if not path.is_file():
        raise MissingInput(f"no file {path}: run `dvc repro {stage}`")
    try:
        data = read_json(path)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        line = f" (line {e.lineno})" if isinstance(e, json.JSONDecodeError) else ""
        raise InvalidData(f"{path} is not valid JSON{line}: regenerate it with `dvc repro {stage}`") from None
    if not isinstance(data, dict):
        raise InvalidData(f"{path} must hold a JSON object; regenerate it with `dvc repro {stage}`")
    return data


def read_jsonl(path: Path) -> list[dict]:
    """The rows of a JSON-lines file a stage wrote (chunks, the checked question set), blank
    lines skipped. A line that is not valid JSON raises ``InvalidData`` naming the file and every
    bad line (the first ``SHOWN_PROBLEMS``)."""
    rows, problems = numbered_json_lines(path)
    if problems:
        shown = problems[:SHOWN_PROBLEMS] + (
            [f"... and {len(problems) - SHOWN_PROBLEMS} more"] if len(problems) > SHOWN_PROBLEMS else [])
        raise InvalidData(f"{path}: {len(problems)} line(s) not valid JSON, expected one JSON object per line; "
                          "rerun the stage that writes the file (dvc repro) or fix the line(s):\n  "
                          + "\n  ".join(shown))
    return cast("list[dict]", [obj for _, obj in rows])


def repo_root(start: Path | None = None) -> Path:
    """The DVC repository being run: the nearest folder at or above ``start`` (default: the
    current directory, where DVC runs every stage) that holds ``.dvc/``; ``start`` itself when
    there is none. Never the folder the package is installed from, so one environment serving
    two clones keeps each clone's caches in that clone."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".dvc").is_dir():
            return folder
    return here


EXPERIMENT_COPIES = (".dvc", "tmp", "exps")
"""Where DVC makes the copy a queued or ``--temp`` experiment runs in: ``REPO/.dvc/tmp/exps/...``."""


def home_repo(start: Path | None = None) -> Path:
    """The repository the user works in: :func:`repo_root`, or, inside the copy DVC runs a queued
    experiment in (``REPO/.dvc/tmp/exps/.../``), the ``REPO`` it was copied from. Caches and
    external data sets are found from here, so every experiment of a sweep shares the user's
    caches and reads the data sets beside the user's checkout."""
    root = repo_root(start)
    parts = root.parts
    for i in range(len(parts) - len(EXPERIMENT_COPIES)):
        if parts[i:i + len(EXPERIMENT_COPIES)] == EXPERIMENT_COPIES and i > 0:
            return Path(*parts[:i])
    return root


def default_cache_dir() -> Path:
    """Where caches live, outside DVC's outputs: ``$RAG_ABLATION_CACHE`` if set and non-empty,
    else ``.cache/`` in the user's repository (:func:`home_repo`; git-ignored), shared by the
    experiments DVC runs in copies of it. The folder need not exist yet."""
    return Path(os.environ.get("RAG_ABLATION_CACHE") or home_repo() / ".cache")


def datasets_dir() -> Path:
    """Where external data sets (such as ``covidqa/``) are read in place, never copied:
    ``$RAG_ABLATION_DATASETS`` if set and non-empty, else ``../shared/datasets`` beside the
    user's repository (:func:`home_repo`, also from inside a queued experiment's copy)."""
    return Path(os.environ.get("RAG_ABLATION_DATASETS") or home_repo().parent / "shared" / "datasets")
