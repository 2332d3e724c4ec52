"""DVC's own overhead: a no-op ``dvc repro`` of this pipeline against a bare DVC pipeline of the
same shape, and which stage instances a change reruns.

Goal (issue "Speed"): a no-op ``dvc repro`` at most 1.2x a bare pipeline with the same stage
count and trivial commands; the stage instances run after a one-config change, a ``chunk_size``
change and a ``labels.window`` change match the counts expected.

How:
- ours: a copy of this repository (``.venv`` and ``.cache`` left out; outputs, ``dvc.lock`` and
  DVC's cache copied), one ``dvc status`` to fill DVC's hash state for the new inodes, then
  ``--rounds`` timed no-op ``dvc repro`` runs (each must run nothing).
- ours, pure-Python YAML: the same runs with ruamel.yaml's C parser (the ``ruamel.yaml.clib``
  wheel, a dependency) hidden from DVC, as on an install without it: DVC's own entry point
  started by a Python that maps ``_ruamel_yaml`` to None, so ruamel falls back to its Python parser.
- bare: a new git + DVC repository with one stage per stage instance of ours (same names
  flattened), each ``cmd: echo NAME > out/NAME`` with one shared dependency and one output;
  reproduced once, then the same number of timed no-op runs. Rounds alternate between the two.
- counts: a fresh copy per change, ``params.yaml`` edited one way, then ``dvc repro --dry`` (the
  stages whose own deps or params changed) and a real ``dvc repro`` with this repository's
  caches (the stages that ran, after DVC's early cutoff: a stage whose inputs came out
  byte-identical is skipped). Each real run is checked against the stages that must run and
  those that may (``CHANGES``). ``chunk_size`` gets the dry run only: a real one re-embeds and
  re-answers (minutes of LLM); what it must rerun is listed beside it.

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

LATER = {"score", "evaluate", "stats", "judge_checks", "judge_eval", "report", "report_html", "gate"}
"""Stages that read every run or every score: they rerun when one of their inputs changed."""

# name: (line in params.yaml, its replacement, stages that must run, stages that may also run
# when an input of theirs came out different; anything else running is unexpected)
CHANGES: dict[str, tuple[str, str, set[str], set[str]]] = {
    # one config that gets no answers: its ranking, the six stages listing `retrieval`
    # (index_plan: which FAISS indexes the configs need), and what reads the changed ranking or scores
    "one config (retrieval.hybrid.rrf_k 60 -> 30)": (
        "  hybrid: {chunking: base, method: hybrid,",
        "  hybrid: {chunking: base, method: hybrid, rrf_k: 30,",
        {"retrieve@hybrid", "index_plan", "score", "evaluate", "stats", "report", "report_html"}, LATER),
    # the labels of every chunking, then scoring; no ranking, answer or index is touched
    "labels.window 30 -> 40": ("  window: 30", "  window: 40", set(), LATER),
}


def sh(args: list[str], cwd: Path) -> str:
    out = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {cwd}:\n{out.stdout}\n{out.stderr}")
    return out.stdout + out.stderr


def names_of(addressed: list[str]) -> list[str]:
    """Stage names without their dvc.yaml (``index/dvc.yaml:chunk@base`` -> ``chunk@base``)."""
    return [a.rsplit(":", 1)[-1] for a in addressed]


def stage_names(repo: Path) -> list[str]:
    """Every stage instance of every dvc.yaml of ``repo``, by name."""
    return names_of([line.split()[0] for line in sh([DVC, "stage", "list", "--all"], repo).splitlines() if line.strip()])


def ran(output: str) -> set[str]:
    """The stages DVC's ``output`` says it ran (or would run, with ``--dry``), by name."""
    return set(names_of(re.findall(r"Running stage '([^']+)'", output)))


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


PURE_YAML = [str(REPO / ".venv" / "bin" / "python"), "-c",
             "import sys; sys.modules['_ruamel_yaml'] = None\n"
             "from dvc.cli import main; sys.exit(main(sys.argv[1:]))"]
"""DVC started with ruamel.yaml's C parser hidden: ruamel then parses in pure Python."""


def timed_noop(repo: Path, pure_yaml: bool = False) -> float:
    t = time.perf_counter()
    out = sh([*PURE_YAML, "repro"] if pure_yaml else [DVC, "repro"], repo)
    seconds = time.perf_counter() - t
    if "Running stage" in out:
        raise SystemExit(f"the no-op repro in {repo} ran a stage:\n{out}")
    return seconds


def changed_run(source: Path, folder: Path, old: str, new: str) -> tuple[set[str], set[str]]:
    """In a fresh copy of ``source``: the stages ``dvc repro --dry`` lists after the edit (those
    whose own deps or params changed) and the stages a real ``dvc repro`` ran (after DVC's early
    cutoff). The copy uses this repository's environment and caches, so nothing is recomputed
    that the caches hold."""
    shutil.copytree(source, folder, symlinks=True, ignore=shutil.ignore_patterns(".venv", ".cache", "__pycache__"))
    (folder / ".venv").symlink_to(REPO / ".venv")
    params = folder / "params.yaml"
    text = params.read_text()
    if old not in text:
        raise SystemExit(f"params.yaml has no line starting {old!r}: update CHANGES")
    params.write_text(text.replace(old, new, 1))
    dry = ran(sh([DVC, "repro", "--dry"], folder))
    env_cache = os.environ.get("RAG_ABLATION_CACHE") or str(REPO / ".cache")
    out = subprocess.run([DVC, "repro"], cwd=folder, capture_output=True, text=True,
                         env={**os.environ, "DVC_NO_ANALYTICS": "1", "RAG_ABLATION_CACHE": env_cache,
                              "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}"})
    if out.returncode != 0:
        raise SystemExit(f"dvc repro failed in {folder}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return dry, ran(out.stdout + out.stderr)


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
        t_ours, t_pure, t_bare = [], [], []
        for _ in range(args.rounds):
            t_ours.append(timed_noop(ours))
            t_pure.append(timed_noop(ours, pure_yaml=True))
            t_bare.append(timed_noop(bare))
        print(f"no-op `dvc repro`, {len(names)} stage instances, best of {args.rounds} alternating rounds")
        for label, times in (("this pipeline", t_ours), ("this pipeline, pure-Python YAML", t_pure),
                             ("bare pipeline", t_bare)):
            print(f"  {label}: {min(times):6.2f} s (rounds: {', '.join(f'{t:.2f}' for t in times)})")
        print(f"  ratio: {min(t_ours) / min(t_bare):.2f}x (goal: at most 1.20x); "
              f"the C parser against pure Python: {min(t_pure) / min(t_ours):.2f}x faster")
        ok = True
        for i, (change, (old, new, must, may)) in enumerate(CHANGES.items()):
            if change.startswith("labels.window"):
                must = {n for n in names if n.startswith("labels@")} | {"score"}
            dry, ran = changed_run(ours, Path(tmp) / f"change{i}", old, new)
            good = must <= ran and ran <= must | may
            ok &= good
            print(f"{change}: {len(ran)} of {len(names)} stage instances ran "
                  f"({len(dry)} had changed inputs before running: {', '.join(sorted(dry))}); "
                  f"{'as expected' if good else 'NOT as expected'}")
            print(f"  ran: {', '.join(sorted(ran))}")
            for name in sorted(must - ran):
                print(f"  expected but did not run: {name}")
            for name in sorted(ran - must - may):
                print(f"  unexpected: {name}")
        params = (REPO / "params.yaml").read_text()
        import yaml

        chunkings = yaml.safe_load(params)["chunkings"]
        resized = sorted(k for k, v in chunkings.items() if v.get("size") is None)
        folder = Path(tmp) / "chunk_size"
        shutil.copytree(ours, folder, symlinks=True)
        (folder / "params.yaml").write_text(params.replace("chunk_size: 800", "chunk_size: 400", 1))
        dry = ran(sh([DVC, "repro", "--dry"], folder))
        print(f"chunk_size 800 -> 400 (dry run only): {len(dry)} stages had changed inputs: "
              f"{', '.join(sorted(dry))}; of the chunk stages only {', '.join(resized)} (size null) "
              f"produce new chunks, so the others stop there (early cutoff)")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
