"""A BEIR first hour: a 5,000-passage BEIR-format corpus imported and run cold with the command
the import prints.

Goal (issue 35, item 3): dense, bm25 and hybrid on 5,000 short passages and 43 graded queries,
cold (a fresh clone: empty DVC cache, empty embedding cache), in under 5 minutes on 2 cores,
with recall@100 measured.

How:
- the data: a synthetic BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv`` with
  its header line), written from a seed. Passages are 40 to 80 words drawn with the word
  frequencies of the handbook corpus (``data/corpus``), about MS MARCO's length (56 words on
  average); each query is 5 words of its grade-2 passage, with up to two grade-1 passages that
  share words with it.
- each side: ``git clone`` of this repository's committed state into a temp folder (``.venv``
  linked), ``rag-ablation import beir`` into ``data/imported/synth``, the import committed, then
  ``dvc exp run`` with ``RAG_ABLATION_CACHE`` pointing at a new empty folder, timed end to end.
- ``first run``: the command the import printed (params that hold only dense, bm25 and hybrid
  with ``k: 100``, their one chunking and query transform), on ``--n`` passages.
- side by side, on ``--compare-n`` passages each (the full config set on ``--n`` would take
  about 40 minutes): the printed command against the one the import printed before (every
  shipped config: eight chunkings embedded, sixteen searched), in that order, each cold.

The stage instances run, each dense stage's embedding counts (new texts, texts from the cache:
its stderr line) and each searched config's nDCG@10 and recall@100 are printed with the times.

Usage:  .venv/bin/python benchmarks/beir_first_hour.py [--n 5000] [--queries 43] [--compare-n 500]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import subprocess
import tempfile
import time
from pathlib import Path

from rag_ablation.commands.import_data import printed_commands

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / ".venv" / "bin"
NAME = "synth"
OLD_COMMAND = f"dvc exp run -S dataset={NAME} -S labels.same_doc_only=true -S llm.backend=none"
"""What the import printed before ``run_configs``: every shipped config."""


def vocabulary() -> tuple[list[str], list[int]]:
    """The handbook corpus's words (lowercase letters, 3+) and their counts."""
    counts: collections.Counter[str] = collections.Counter()
    for path in sorted((REPO / "data" / "corpus").rglob("*.md")):
        counts.update(re.findall(r"[a-z]{3,}", path.read_text(encoding="utf-8").lower()))
    words = sorted(counts)
    return words, [counts[w] for w in words]


def write_beir(folder: Path, *, n: int, queries: int, seed: int = 0) -> None:
    """The synthetic BEIR folder described in the module docstring."""
    rng = random.Random(seed)
    words, weights = vocabulary()
    passages = [rng.choices(words, weights, k=rng.randint(40, 80)) for _ in range(n)]
    folder.mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w") as f:
        for i, p in enumerate(passages):
            f.write(json.dumps({"_id": f"p{i}", "title": f"Passage {i}", "text": " ".join(p)}) + "\n")
    qrels = ["query-id\tcorpus-id\tscore"]
    with (folder / "queries.jsonl").open("w") as f:
        for q in range(queries):
            gold = rng.randrange(n)
            terms = rng.sample(sorted(set(passages[gold])), 5)
            f.write(json.dumps({"_id": f"q{q}", "text": " ".join(terms)}) + "\n")
            qrels.append(f"q{q}\tp{gold}\t2")
            near = [i for i in rng.sample(range(n), min(n, 400)) if i != gold and len(set(terms) & set(passages[i])) >= 2]
            qrels += [f"q{q}\tp{i}\t1" for i in near[:2]]
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")


def sh(cmd: str, cwd: Path, env: dict[str, str]) -> str:
    """Run ``cmd`` with bash; its stdout and stderr as one stream, in the order written."""
    res = subprocess.run(["bash", "-c", "set -euo pipefail\n" + cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{cmd} failed in {cwd}:\n{res.stdout[-6000:]}")
    return res.stdout


def clone_with_import(tmp: Path, beir: Path, tag: str) -> tuple[Path, dict[str, str], str]:
    """A clone of the committed repository with the BEIR folder imported and committed by the
    printed commit step; its environment (a new empty cache) and the printed experiment command,
    the last one (the one timed)."""
    repo = tmp / f"repo_{tag}"
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "RAG_ABLATION_CACHE": str(tmp / f"cache_{tag}"),
           "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", "clone", "-q", str(REPO), str(repo)], check=True)
    (repo / ".venv").symlink_to(BIN.parent)
    out = sh(f"rag-ablation import beir {beir} --corpus data/imported/{NAME}/corpus "
             f"--questions data/imported/{NAME}/questions.jsonl", repo, env)
    *before, command = printed_commands(out)
    for step in before:  # the commit of the import, as printed
        sh(step, repo, env)
    return repo, env, command


def embedded_per_stage(out: str) -> dict[str, str]:
    """``dense@CHUNKING`` -> its "embedded N new texts, M from the cache" line, from DVC's output."""
    found, stage = {}, None
    for line in out.splitlines():
        m = re.search(r"Running stage '([^']+)'", line)
        if m:
            stage = m.group(1).rsplit(":", 1)[-1]  # without its dvc.yaml (index/dvc.yaml:dense@base)
        m = re.search(r"embedded (\d+) new texts, (\d+) from the cache", line)
        if m and stage:
            found[stage] = f"{m.group(1)} new, {m.group(2)} cached"
    return found


def timed_run(repo: Path, env: dict[str, str], command: str) -> dict:
    """Run ``command`` in ``repo`` and time it; print the stages' own costs (``rag-ablation costs``)."""
    since, start = int(time.time()), time.perf_counter()
    out = sh(command, repo, env)
    seconds = time.perf_counter() - start
    print(sh(f"rag-ablation costs --since {since}", repo, env))
    retrieval = json.loads((repo / "metrics" / "retrieval.json").read_text())
    searched = {name: {k: entry.get(k) for k in ("ndcg_at_10", "recall_at_100")}
                for name, entry in sorted(retrieval.items()) if entry.get("available")}
    return {"seconds": round(seconds, 1), "stages_run": out.count("Running stage '"), "searched": searched,
            "embedded": embedded_per_stage(out)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000, help="passages of the first run (5000)")
    ap.add_argument("--queries", type=int, default=43, help="queries (43, as MS MARCO's subset)")
    ap.add_argument("--compare-n", type=int, default=500, help="passages of the side-by-side runs (500; 0: skip)")
    args = ap.parse_args()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip()
    if dirty:
        print("note: the clone takes the committed state; uncommitted changes are not measured")
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        write_beir(tmp / "beir", n=args.n, queries=args.queries)
        repo, env, command = clone_with_import(tmp, tmp / "beir", "first")
        print(f"printed: {command}")
        first = timed_run(repo, env, command)
        print(f"first run, {args.n} passages, {args.queries} queries, cold: {json.dumps(first, indent=1)}")
        print(f"goal: under 300 s: {'met' if first['seconds'] < 300 else 'NOT met'}")
        if args.compare_n:
            write_beir(tmp / "beir_small", n=args.compare_n, queries=args.queries)
            sides = {}
            for tag, cmd in (("printed", None), ("every_config", OLD_COMMAND)):
                repo, env, printed = clone_with_import(tmp, tmp / "beir_small", tag)
                sides[tag] = timed_run(repo, env, cmd or printed)
                print(f"{tag}, {args.compare_n} passages, cold: {json.dumps(sides[tag], indent=1)}")
            ratio = sides["every_config"]["seconds"] / sides["printed"]["seconds"]
            print(f"side by side on {args.compare_n} passages: every config {sides['every_config']['seconds']} s, "
                  f"the printed command {sides['printed']['seconds']} s: {ratio:.2f}x")


if __name__ == "__main__":
    main()
