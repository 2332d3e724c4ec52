"""A committed output is the same bytes on another machine: the dense retrieval of the fixture
corpus (its questions and one per line of its documents, so that there are enough top scores),
run through the stage scripts as DVC runs them (questions, queries, chunk, dense_index, labels,
retrieve, score), once with ``embedding.threads: 1`` and once with ``embedding.threads: 2`` on
torch's portable kernels (``ATEN_CPU_CAPABILITY=default``, the arithmetic of a CPU without
AVX2/AVX-512), each with an empty embedding cache of its own. The embeddings differ in their last
float32 bits, and the run files' scores in their sixth decimal (as on two machines: mean 1.2e-7
between AVX-512 and AVX2 on the handbook), yet ``metrics/scores/retrieval.csv`` is byte for byte
the same: its top scores are written to ``SCORE_DIGITS`` significant digits and every other float
to ``OUTPUT_DECIMALS`` decimals."""
from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import FIXTURES, ROOT
from rag_ablation.core.config import SCORE_DIGITS
from rag_ablation.core.io import round_significant

CHUNKINGS = ("base",)
CONFIGS = {"dense": {"chunking": "base", "method": "dense", "depth": 20, "query": "none"}}
PORTABLE_KERNELS = {"ATEN_CPU_CAPABILITY": "default"}
"""torch's unvectorized kernels: another machine's float32 sums, on this one."""


def stage(cwd: Path, env: dict[str, str], script: str, *args: object) -> None:
    res = subprocess.run([sys.executable, str(ROOT / "stages" / script), *map(str, args)], cwd=cwd,
                         capture_output=True, text=True,
                         env={**os.environ, **env, "RAG_ABLATION_CACHE": str(cwd / ".cache")})
    assert res.returncode == 0, f"{script}: {res.stderr}"


def scored_project(d: Path, *, threads: int, env: dict[str, str]) -> Path:
    """The fixture project with only the dense configs, retrieved and scored; its folder."""
    shutil.copytree(FIXTURES / "corpus", d / "corpus")
    (d / "questions.jsonl").write_text((FIXTURES / "questions.jsonl").read_text() + "".join(
        json.dumps(q) + "\n" for q in line_questions(FIXTURES / "corpus")))
    shutil.copytree(ROOT / "prompts", d / "prompts")
    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    params["embedding"]["threads"] = threads
    params["retrieval"] = CONFIGS
    params["query_transforms"] = {"none": {}}
    params["generation"]["configs"] = []
    params["gate"]["configs"] = list(CONFIGS)
    (d / "params.yaml").write_text(yaml.safe_dump(params))
    b = d / "build"
    stage(d, env, "questions.py", "--corpus", "corpus", "--questions", "questions.jsonl", "--out", b / "q.jsonl",
          "--metrics", d / "metrics/questions.json")
    stage(d, env, "queries.py", "--name", "none", "--questions", b / "q.jsonl", "--prompts", "prompts",
          "--out", b / "queries/none.json", "--latency", d / "metrics/latency/queries_none.json")
    stage(d, env, "query_vectors.py", "--name", "none", "--questions", b / "q.jsonl", "--queries", b / "queries/none.json",
          "--out", b / "query_vectors/none", "--latency", d / "metrics/latency/query_embed_none.json")
    for c in CHUNKINGS:
        stage(d, env, "chunk.py", "--name", c, "--corpus", "corpus", "--out", b / f"chunks/{c}.jsonl")
        stage(d, env, "dense_index.py", "--chunks", b / f"chunks/{c}.jsonl", "--out", b / f"dense/{c}",
              "--metrics", d / f"metrics/index/{c}.json")
        stage(d, env, "labels.py", "--chunks", b / f"chunks/{c}.jsonl", "--questions", b / "q.jsonl",
              "--out", b / f"labels/{c}.json", "--metrics", d / f"metrics/labels/{c}.json")
    for name, cfg in CONFIGS.items():
        c = cfg["chunking"]
        stage(d, env, "retrieve.py", "--name", name, "--questions", b / "q.jsonl", "--chunks", b / f"chunks/{c}.jsonl",
              "--dense", b / f"dense/{c}", "--bm25", b / f"bm25/{c}", "--queries", b / "queries/none.json",
              "--query-vectors", b / "query_vectors/none", "--query-times", d / "metrics/latency/query_embed_none.json",
              "--out", b / f"runs/{name}.json", "--latency", d / f"metrics/latency/{name}.json")
    (b / "answers").mkdir()
    stage(d, env, "score.py", "--questions", b / "q.jsonl", "--runs", b / "runs", "--labels", b / "labels",
          "--answers", b / "answers", "--retrieval-out", d / "metrics/scores/retrieval.csv",
          "--answers-out", d / "metrics/scores/answers.csv", "--corpus", "corpus", "--audit", d / "audit.jsonl",
          "--audited-out", d / "metrics/scores/retrieval_audited.csv")
    return d


def line_questions(corpus: Path) -> list[dict[str, str]]:
    """Questions on every prose line of 40 characters or more: the line is the span, and each
    question asks about five of its words, from every third word on."""
    out = []
    for path in sorted(corpus.rglob("*.md")):
        doc = path.relative_to(corpus).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            line, words = line.strip(), line.split()
            if len(line) < 40 or not line[0].isalpha():
                continue
            for w in range(0, max(1, len(words) - 4), 3):
                out.append({"id": f"line-{doc.replace('/', '-').removesuffix('.md')}-{n}-{w}", "doc": doc, "span": line,
                            "question": f"What about {' '.join(words[w:w + 5]).strip('.,:;')}?", "answer": line,
                            "slice": "main", "track": "lines"})
    return out


def vectors(project: Path) -> dict[str, bytes]:
    """The embedding cache's vectors by text hash (float32 bytes, as each side computed them)."""
    with sqlite3.connect(project / ".cache" / "embeddings.sqlite") as db:
        return dict(db.execute("SELECT key, vec FROM vectors").fetchall())


@pytest.mark.slow
def test_the_scores_are_the_same_bytes_with_one_or_two_threads_and_another_cpus_kernels(tmp_path):
    one = scored_project(tmp_path / "one", threads=1, env={})
    two = scored_project(tmp_path / "two", threads=2, env=PORTABLE_KERNELS)
    a, b = vectors(one), vectors(two)
    assert a.keys() == b.keys() and len(a) > 60
    assert sum(a[k] != b[k] for k in a) > 0, "the two sides must compute different float32 embeddings"
    runs = [json.loads((p / "build/runs/dense.json").read_text())["questions"] for p in (one, two)]
    top = [[q["ranking"][0]["score"] for q in run] for run in runs]
    assert top[0] != top[1], "the noise reaches the sixth decimal the run files keep: a CSV with it would differ"
    for name in ("retrieval.csv", "retrieval_audited.csv", "answers.csv"):
        assert (one / "metrics/scores" / name).read_bytes() == (two / "metrics/scores" / name).read_bytes(), name
    with open(one / "metrics/scores/retrieval.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {r["config"] for r in rows} == set(CONFIGS) and len(rows) > 60 and all(r["top_score"] for r in rows)
    assert all(float(r["top_score"]) == round_significant(float(r["top_score"]), SCORE_DIGITS) for r in rows)
