"""DVC's own overhead: a no-op ``dvc repro`` of this pipeline against a bare DVC pipeline of the
same shape, and which stage instances a change reruns.

Goal (issue "Speed"): a no-op ``dvc repro`` at most 1.2x a bare pipeline with the same stage
count and trivial commands; the stage instances run after a one-config change, a ``chunk_size``
change and a ``labels.window`` change match the counts expected.

How:
- ours: a copy of this repository (``.venv`` and ``.cache`` left out; outputs, ``dvc.lock`` and
  DVC's cache copied), one ``dvc status`` to fill DVC's hash state for the new inodes, then
  ``--rounds`` timed no-op ``dvc repro`` runs (each must run nothing).
- bare: a new git + DVC repository with one stage per stage instance of ours (same names
  flattened), each ``cmd: echo NAME > out/NAME`` with one shared dependency and one output;
  reproduced once, then the same number of timed no-op runs. Rounds alternate between the two.
- counts: in the copy, ``params.yaml`` is edited one way at a time and ``dvc repro --dry`` lists
  the stages that would run (DVC's dry run does not apply early cutoff: a stage whose inputs come
  out byte-identical is counted although a real run would skip it). Each list is checked
  against the stages expected from what each stage reads (``EXPECTED`` below).

Usage:  .venv/bin/python benchmarks/dvc_overhead.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DVC = str(REPO / ".venv" / "bin" / "dvc")

# The downstream of everything that reads all runs or all scores (DAG of dvc.yaml).
AFTER_RUNS = {"score", "evaluate", "stats", "judge_checks", "judge_eval", "report", "gate"}
# One config whose answers are not generated, a chunking change, a label change.
CHANGES: dict[str, tuple[str, str, set[str]]] = {
    # retrieval.hybrid.rrf_k 60 -> 30: its ranking, then the stages reading every run
    "one config (retrieval.hybrid.rrf_k)": (
        "  hybrid: {chunking: base, method: hybrid, fusion: rrf, rrf_k: 60,",
        "  hybrid: {chunking: base, method: hybrid, fusion: rrf, rrf_k: 30,",
        {"retrieve@hybrid"} | AFTER_RUNS),
    # chunk_size 800 -> 400: the five chunkings with size null and everything built on them
    "chunk_size": ("chunk_size: 800", "chunk_size: 400", set()),  # filled in expected_chunk_size()
    # labels.window 30 -> 40: every chunking's labels, then scoring (rankings do not change)
    "labels.window": ("  window: 30", "  window: 40", set()),
}


def sh(args: list[str], cwd: Path) -> str:
    out = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {cwd}:\n{out.stdout}\n{out.stderr}")
    return out.stdout + out.stderr


def stage_names(repo: Path) -> list[str]:
    return [line.split()[0] for line in sh([DVC, "stage", "list"], repo).splitlines() if line.strip()]


def bare_repo(folder: Path, names: list[str]) -> None:
    folder.mkdir()
    sh(["git", "init", "-q"], folder)
    sh([DVC, "init", "-q"], folder)
    (folder / "input.txt").write_text("x\n")
    lines = ["stages:"]
    for name in names:
        flat = re.sub(r"[^A-Za-z0-9_]", "_", name)
        lines += [f"  {flat}:", f"    cmd: echo {flat} > out/{flat}", "    deps:", "      - input.txt",
                  "    outs:", f"      - out/{flat}"]
    (folder / "out").mkdir()
    (folder / "dvc.yaml").write_text("\n".join(lines) + "\n")
    sh([DVC, "repro", "-q"], folder)


def timed_noop(repo: Path) -> float:
    t = time.perf_counter()
    out = sh([DVC, "repro"], repo)
    seconds = time.perf_counter() - t
    if "Running stage" in out:
        raise SystemExit(f"the no-op repro in {repo} ran a stage:\n{out}")
    return seconds


def dry_run(repo: Path, old: str, new: str) -> set[str]:
    params = repo / "params.yaml"
    text = params.read_text()
    if old not in text:
        raise SystemExit(f"params.yaml has no line starting {old!r}: update CHANGES")
    params.write_text(text.replace(old, new, 1))
    try:
        out = sh([DVC, "repro", "--dry"], repo)
    finally:
        params.write_text(text)
    return set(re.findall(r"Running stage '([^']+)'", out))


def expected(names: list[str], change: str) -> set[str]:
    """What should rerun, from what each stage reads (see dvc.yaml)."""
    import yaml

    params = yaml.safe_load((REPO / "params.yaml").read_text())
    if change == "labels.window":
        return {n for n in names if n.startswith("labels@")} | AFTER_RUNS
    if change == "chunk_size":
        resized = {k for k, v in params["chunkings"].items() if v.get("size") is None}
        configs = {k for k, v in params["retrieval"].items() if v["chunking"] in resized}
        gen = set(params["generation"]["configs"]) & configs
        return ({f"{s}@{c}" for c in resized for s in ("chunk", "dense", "bm25", "labels")}
                | {f"retrieve@{c}" for c in configs} | {f"generate@{c}" for c in gen}
                | {f"judge@{c}" for c in gen} | AFTER_RUNS)
    return CHANGES[change][2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ours = Path(tmp) / "ours"
        shutil.copytree(REPO, ours, symlinks=True, ignore=shutil.ignore_patterns(".venv", ".cache", "__pycache__"))
        sh([DVC, "status", "-q"], ours)
        names = stage_names(ours)
        bare = Path(tmp) / "bare"
        bare_repo(bare, names)
        timed_noop(ours), timed_noop(bare)  # warm both (imports, DVC's state databases)
        t_ours, t_bare = [], []
        for _ in range(args.rounds):
            t_ours.append(timed_noop(ours))
            t_bare.append(timed_noop(bare))
        print(f"no-op `dvc repro`, {len(names)} stage instances, best of {args.rounds} alternating rounds")
        print(f"  this pipeline: {min(t_ours):6.2f} s (rounds: {', '.join(f'{t:.2f}' for t in t_ours)})")
        print(f"  bare pipeline: {min(t_bare):6.2f} s (rounds: {', '.join(f'{t:.2f}' for t in t_bare)})")
        print(f"  ratio: {min(t_ours) / min(t_bare):.2f}x (goal: at most 1.20x)")
        ok = True
        for change, (old, new, _) in CHANGES.items():
            ran = dry_run(ours, old, new)
            want = expected(names, change)
            status = "as expected" if ran == want else "DIFFERS"
            ok &= ran == want
            print(f"{change}: {len(ran)} of {len(names)} stage instances would run; expected {len(want)}: {status}")
            for name in sorted(ran - want):
                print(f"  unexpected: {name}")
            for name in sorted(want - ran):
                print(f"  missing: {name}")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
