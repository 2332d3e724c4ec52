"""The pipeline reproduces the COVID-QA reference table (shared/notes/anchors-covidqa.md) when run
the anchors' way: the run that the command of docs/datasets.md
(``rag_ablation.datasets.covidqa_anchors.command()``: COVID-QA, no LLM, relevance in the gold
document, the anchors' chunkings and configs added) would make, stage script by stage script
(dataset, questions, chunk, bm25/dense index, labels, queries, retrieve, score, evaluate), on the
real release. The params are the shipped params.yaml with those switches applied by DVC's own
override code; only the configs under test are kept (each stage reads only its own entry, so
this changes no number).

The BM25 rows take about a minute on 2 cores. The dense and hybrid rows embed about 8,700 chunks
(several minutes on one thread) and run only with RAG_ABLATION_DENSE_ANCHORS=1. Skipped when the
release is absent ($RAG_ABLATION_DATASETS/covidqa).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import COVIDQA, ROOT

needs_covidqa = pytest.mark.skipif(not COVIDQA.is_dir(), reason=f"COVID-QA not found at {COVIDQA}")

# shared/notes/anchors-covidqa.md: (hit@1, hit@5, hit@10, MRR@10) and chunk counts
ANCHORS = {
    "bm25_fixed1000": (0.500, 0.722, 0.785, 0.594),
    "dense_fixed1000": (0.276, 0.511, 0.611, 0.380),
    "hybrid_fixed1000": (0.420, 0.670, 0.768, 0.528),
    "bm25_fixed500": (0.466, 0.684, 0.749, 0.559),
    "dense_fixed500": (0.271, 0.523, 0.621, 0.377),
    "hybrid_fixed500": (0.408, 0.670, 0.754, 0.518),
}
CHUNKS = {"fixed1000": 2904, "fixed500": 5783}
N_QUESTIONS = 1087
# The anchors are printed to three decimals (+-0.0005); one question more or less is 1/1087 =
# 0.0009. Measured with rank-bm25: every BM25 number rounds to the anchor except hit@10 at 500,
# 815/1087 = .7498 against .749 (one question; chunk order makes no difference). A chunking,
# label, tokenizer or BM25 change moves these by far more than 0.0015.
TOLERANCE = 0.0015
MEASURES = ("recall_at_1", "recall_at_5", "recall_at_10", "mrr_at_10")
DENSE = os.environ.get("RAG_ABLATION_DENSE_ANCHORS") == "1"


def stage(cwd, script, *args):
    env = {**os.environ, "RAG_ABLATION_DATASETS": str(COVIDQA.parent), "RAG_ABLATION_CACHE": str(cwd / ".cache")}
    res = subprocess.run([sys.executable, str(ROOT / "stages" / script), *map(str, args)], cwd=cwd,
                         capture_output=True, text=True, env=env)
    assert res.returncode == 0, f"{script} failed:\n{res.stderr}"
    return res.stderr


def anchor_params(configs, tmp_path):
    """The shipped params after the documented command's switches (DVC's own Hydra override
    code), keeping only ``configs`` and their chunkings."""
    from dvc.utils.hydra import apply_overrides

    from rag_ablation.datasets.covidqa_anchors import overrides

    path = tmp_path / "switched.yaml"
    shutil.copy(ROOT / "params.yaml", path)
    apply_overrides(path, overrides())
    p = yaml.safe_load(path.read_text())
    path.unlink()
    assert (p["dataset"], p["llm"]["backend"], p["labels"]["same_doc_only"]) == ("covidqa", "none", True)
    assert p["run_configs"] == list(ANCHORS) and p["stats"]["baseline"] == "bm25_fixed1000"
    p["retrieval"] = {name: p["retrieval"][name] for name in configs}
    p["chunkings"] = {c: p["chunkings"][c] for c in {cfg["chunking"] for cfg in p["retrieval"].values()}}
    p["run_configs"] = list(configs)
    p["generation"]["configs"] = []
    p["stats"]["baseline"] = configs[0]
    p["gate"]["configs"] = [configs[0]]
    p["embedding"]["threads"] = 1
    return p


def test_the_documented_command_adds_the_anchors_to_the_shipped_params(tmp_path):
    """docs/datasets.md shows the command as the module writes it (and the two results folders
    made with the anchors beside the example's configs theirs); applied by DVC's own override
    code to the shipped params.yaml (which holds none of the anchors' chunkings or configs), it
    leaves params that load, search the six configs only, with the anchors' chunkings and RRF
    ties to BM25, and bm25_fixed1000 as the baseline."""
    from dvc.utils.hydra import apply_overrides

    from rag_ablation.core.config import Params
    from rag_ablation.datasets.covidqa_anchors import CHUNKINGS, CONFIGS, command, handbook_overrides, overrides

    assert command() in (ROOT / "docs/datasets.md").read_text()
    assert command(handbook_overrides()) in (ROOT / "results/all-configs/README.md").read_text()
    assert command(["llm.model=qwen2.5-coder-1.5b", *handbook_overrides(), "support.ask_llm=true"]) in (
        ROOT / "results/qwen2.5-coder-1.5b/README.md").read_text()
    shipped = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert not set(CHUNKINGS) & set(shipped["chunkings"]) and not set(CONFIGS) & set(shipped["retrieval"])
    path = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", path)
    apply_overrides(path, overrides())
    raw = yaml.safe_load(path.read_text())
    assert {n: raw["chunkings"][n] for n in CHUNKINGS} == CHUNKINGS
    assert {n: raw["retrieval"][n] for n in CONFIGS} == CONFIGS
    p = Params.from_params(raw)
    assert p.dataset == "covidqa" and p.llm.backend == "none" and p.labels.same_doc_only is True
    assert list(p.searched()) == list(CONFIGS) == list(ANCHORS)
    assert [p.config(n).ties for n in CONFIGS if n.startswith("hybrid")] == ["bm25", "bm25"]
    assert p.stats.baseline == "bm25_fixed1000"
    apply_overrides(path, overrides())  # ++ replaces what the first application added
    assert yaml.safe_load(path.read_text()) == raw
    shutil.copy(ROOT / "params.yaml", path)  # beside the example's configs: every one searched
    apply_overrides(path, handbook_overrides())
    beside = Params.from_params(yaml.safe_load(path.read_text()))
    assert list(beside.searched()) == [*shipped["retrieval"], *CONFIGS] and beside.dataset == "handbook"


@needs_covidqa
@pytest.mark.slow
def test_the_pipeline_reproduces_the_covidqa_anchors(tmp_path):
    configs = [c for c in ANCHORS if DENSE or c.startswith("bm25")]
    params = anchor_params(configs, tmp_path)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    d, b = tmp_path, tmp_path / "build"
    # the repository's own data paths, as dvc.yaml passes them (covidqa ignores them)
    stage(d, "dataset.py", "--corpus", ROOT / "data/corpus", "--questions", ROOT / "data/questions/handbook.jsonl",
          "--audit", ROOT / "data/labels/audit.jsonl", "--grades", ROOT / "data/labels/grades.jsonl",
          "--out", b / "dataset")
    stage(d, "questions.py", "--corpus", b / "dataset/corpus", "--questions", b / "dataset/questions.jsonl",
          "--out", b / "questions.jsonl", "--metrics", d / "metrics/questions.json")
    assert json.loads((d / "metrics/questions.json").read_text())["n_questions"] == N_QUESTIONS
    stage(d, "queries.py", "--name", "none", "--questions", b / "questions.jsonl", "--prompts", ROOT / "prompts",
          "--out", b / "queries/none.json", "--latency", d / "metrics/latency/queries_none.json")
    if DENSE:
        stage(d, "query_vectors.py", "--name", "none", "--questions", b / "questions.jsonl", "--queries",
              b / "queries/none.json", "--out", b / "query_vectors/none", "--latency",
              d / "metrics/latency/query_embed_none.json")
    for name in params["chunkings"]:
        chunks = b / f"chunks/{name}.jsonl"
        stage(d, "chunk.py", "--name", name, "--corpus", b / "dataset/corpus", "--out", chunks)
        assert sum(1 for _ in chunks.open()) == CHUNKS[name]
        stage(d, "bm25_index.py", "--chunks", chunks, "--out", b / f"bm25/{name}")
        if DENSE:
            stage(d, "dense_index.py", "--chunks", chunks, "--out", b / f"dense/{name}",
                  "--metrics", d / f"metrics/index/{name}.json")
        stage(d, "labels.py", "--chunks", chunks, "--questions", b / "questions.jsonl",
              "--out", b / f"labels/{name}.json", "--metrics", d / f"metrics/labels/{name}.json")
        labels = json.loads((b / f"labels/{name}.json").read_text())
        assert labels["same_doc_only"] is True and labels["unlabeled"] == []
    for name, cfg in params["retrieval"].items():
        c = cfg["chunking"]
        stage(d, "retrieve.py", "--name", name, "--questions", b / "questions.jsonl", "--chunks", b / f"chunks/{c}.jsonl",
              "--dense", b / f"dense/{c}", "--bm25", b / f"bm25/{c}", "--queries", b / "queries/none.json",
              "--query-vectors", b / "query_vectors/none", "--query-times", d / "metrics/latency/query_embed_none.json",
              "--out", b / f"runs/{name}.json", "--latency", d / f"metrics/latency/{name}.json")
    (b / "answers").mkdir()
    stage(d, "score.py", "--questions", b / "questions.jsonl", "--runs", b / "runs", "--labels", b / "labels",
          "--answers", b / "answers", "--retrieval-out", d / "metrics/scores/retrieval.csv",
          "--answers-out", d / "metrics/scores/answers.csv", "--corpus", b / "dataset/corpus",
          "--audit", b / "dataset/audit.jsonl", "--audited-out", d / "metrics/scores/retrieval_audited.csv")
    stage(d, "evaluate.py", "--retrieval-scores", d / "metrics/scores/retrieval.csv",
          "--answer-scores", d / "metrics/scores/answers.csv", "--out", d / "metrics/retrieval.json")
    metrics = json.loads((d / "metrics/retrieval.json").read_text())
    assert all(metrics[name]["n_questions"] == N_QUESTIONS for name in configs)
    off = {(name, m): (round(metrics[name][m], 4), anchor) for name in configs
           for m, anchor in zip(MEASURES, ANCHORS[name]) if abs(metrics[name][m] - anchor) > TOLERANCE}
    assert not off, off


@needs_covidqa
@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("RAG_ABLATION_DVC_COVIDQA") != "1",
                    reason="a real `dvc exp run` on COVID-QA embeds 8,687 chunks (minutes): RAG_ABLATION_DVC_COVIDQA=1")
def test_dvc_exp_run_switches_the_whole_pipeline_to_covidqa(tmp_path):
    """The project in a fresh git + DVC repository with the shipped params.yaml, committed on the
    handbook; the command of docs/datasets.md, run as printed, then adds the anchors' chunkings
    and configs and runs every stage on COVID-QA through DVC itself, and each row equals the
    reference."""
    import shlex

    from conftest import run_in
    from rag_ablation.core.pipeline_files import PIPELINE_FILES
    from rag_ablation.datasets.covidqa_anchors import command
    d = tmp_path / "repo"
    d.mkdir()
    for item in (*PIPELINE_FILES, "params.yaml", "stages", "rag_ablation", "prompts", ".dvcignore", "data/corpus",
                 "data/questions", "data/labels", "data/split", "data/imported", "metrics/gate_baseline.csv"):
        src, dst = ROOT / item, d / item
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    for ignore in subprocess.run(["git", "ls-files", "data/build"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.split():  # a clone has data/build/<stage>/ (their .gitignore)
        (d / ignore).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / ignore, d / ignore)
    for pyc in d.rglob("__pycache__"):
        shutil.rmtree(pyc)
    dvc = str(ROOT / ".venv/bin/dvc") if (ROOT / ".venv/bin/dvc").exists() else "dvc"
    env = {**os.environ, "RAG_ABLATION_DATASETS": str(COVIDQA.parent), "RAG_ABLATION_CACHE": str(tmp_path / "cache"),
           "PATH": f"{ROOT / '.venv/bin'}{os.pathsep}{os.environ['PATH']}"}
    for cmd in (["git", "init", "-q", "-b", "main"], [dvc, "init", "-q"], [dvc, "config", "core.analytics", "false"],
                ["git", "add", "-A"], ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "handbook"]):
        run_in(d, *cmd, env=env)
    words = shlex.split(command().replace("\\\n", " "))
    assert words[:3] == ["dvc", "exp", "run"]
    run_in(d, dvc, *words[1:], env=env)
    metrics = json.loads((d / "metrics/retrieval.json").read_text())
    for name, anchor in ANCHORS.items():
        assert metrics[name]["n_questions"] == N_QUESTIONS
        got = tuple(metrics[name][k] for k in MEASURES)
        assert all(abs(g - a) <= TOLERANCE for g, a in zip(got, anchor)), (name, got)
