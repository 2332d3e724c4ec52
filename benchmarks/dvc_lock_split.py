"""What DVC's lock rewrite costs a first run, and what splitting a pipeline over several
``dvc.yaml`` files would save: the same trivial stages, run cold, from one ``dvc.yaml`` and from
``--parts`` of them, side by side.

Why: DVC rewrites a ``dvc.yaml``'s whole ``dvc.lock`` (ruamel's round trip: load, then dump) after
every stage it runs, and keeps one lock per ``dvc.yaml``. This project's lock is about 187 KB
(1,017 dep entries, because every stage lists exactly the modules it imports), so each stage run
costs DVC about a second whatever the stage does (benchmarks/RESULTS.md, "DVC's share scales with
the size of dvc.lock").

How: two new git + DVC repositories in a temporary folder, with ``--stages`` stages, each
``cmd: echo NAME > out/NAME.txt`` with ``--deps`` dependency files (drawn from 300 small files)
and two params, like this project's stages. In the first, every stage is in the top ``dvc.yaml``.
In the second, the stages are spread over ``--parts`` files (the top one and ``pN/dvc.yaml`` with
``wdir: ..``, so paths and ``params.yaml`` stay the top folder's), and the top file also holds a
``sink`` stage that depends on every output, as a pipeline's last stage (the report) does, so
that a plain ``dvc repro`` in the top folder runs all of them; the first repository has the same
sink. Each is reproduced once cold (``dvc repro``, no target), then once more, which must run
nothing. Reported: wall seconds, stages run (outputs written), and the size of the lock files.

Usage:  .venv/bin/python benchmarks/dvc_lock_split.py [--stages 48] [--deps 60] [--parts 4]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from dvc_overhead import DVC, sh

SOURCES = 300


def stage_lines(name: str, deps: list[str], *, wdir: bool) -> list[str]:
    """One stage of a ``dvc.yaml``: the echo command, its deps, params ``a`` and ``b``, its out."""
    lines = [f"  {name}:", f"    cmd: echo {name} > out/{name}.txt"] + (["    wdir: .."] if wdir else [])
    lines += ["    deps:"] + [f"      - {d}" for d in deps] + ["    params:", "      - a", "      - b"]
    return lines + ["    outs:", f"      - out/{name}.txt"]


def build(root: Path, *, stages: int, deps: int, parts: int) -> None:
    """A new git + DVC repository at ``root`` with the stages spread over ``parts`` files."""
    root.mkdir(parents=True)
    sh(["git", "init", "-q"], root)
    sh([DVC, "init", "-q"], root)
    (root / "src").mkdir()
    (root / "out").mkdir()
    for i in range(SOURCES):
        (root / "src" / f"m{i:03d}.py").write_text(f"x = {i}\n")
    (root / "params.yaml").write_text("a: 1\nb: {c: 2, d: [1, 2, 3]}\n")
    names = [f"s{s:02d}" for s in range(stages)]
    files: list[list[str]] = [["stages:"] for _ in range(parts)]
    for s, name in enumerate(names):
        part = s * parts // stages
        files[part] += stage_lines(name, [f"src/m{(s * 7 + j) % SOURCES:03d}.py" for j in range(deps)], wdir=part > 0)
    files[0] += ["  sink:", "    cmd: cat out/s*.txt > sink.txt", "    deps:"]
    files[0] += [f"      - out/{n}.txt" for n in names] + ["    outs:", "      - sink.txt"]
    for part, lines in enumerate(files):
        folder = root if part == 0 else root / f"p{part}"
        folder.mkdir(exist_ok=True)
        (folder / "dvc.yaml").write_text("\n".join(lines) + "\n")


def repro(root: Path) -> float:
    """Wall seconds of a plain ``dvc repro`` in ``root`` (it must succeed)."""
    start = time.perf_counter()
    sh([DVC, "repro", "-q"], root)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stages", type=int, default=48)
    ap.add_argument("--deps", type=int, default=60)
    ap.add_argument("--parts", type=int, default=4)
    args = ap.parse_args()
    print(f"{args.stages} stages of {args.deps} deps each, and a sink\n| dvc.yaml files | cold repro, s | stages run "
          f"| lock bytes (all files) | largest lock, bytes | second repro, s |\n|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for parts in (1, args.parts):
            root = Path(tmp) / f"parts{parts}"
            build(root, stages=args.stages, deps=args.deps, parts=parts)
            cold = repro(root)
            ran = len(list((root / "out").glob("*.txt"))) + (root / "sink.txt").is_file()
            again = repro(root)
            locks = [p.stat().st_size for p in root.rglob("dvc.lock")]
            print(f"| {parts} | {cold:.1f} | {ran} | {sum(locks)} | {max(locks)} | {again:.1f} |", flush=True)


if __name__ == "__main__":
    main()
