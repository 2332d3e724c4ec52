"""DVC behaviour of the real dvc.yaml, in a temporary git repository on the fixture corpus:
only changed configs rerun, a removed config leaves the metrics, and a second `dvc repro` runs
nothing. (`dvc exp run -S chunk_size=400` is the README's daily block: tests/test_readme.py.)"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from conftest import copy_repo, ran_stages as ran, run_in

pytestmark = pytest.mark.slow

DVC = str(Path(sys.executable).parent / "dvc")


def sh(cwd, *cmd):
    return run_in(cwd, *cmd)


@pytest.fixture(scope="module")
def repo(built_pipeline, tmp_path_factory):
    """The session's built fixture pipeline (conftest.built_pipeline), copied: the tests below change it."""
    return copy_repo(built_pipeline, tmp_path_factory.mktemp("dvcrepo") / "repo")


READS_SCORES = {"evaluate", "stats", "judge_eval", "gate", "report", "report_html"}
"""The stages that read the per-question scores (and so may rerun after a score changes)."""


def restore(repo) -> None:
    """Back to the committed state for the next test: git's files (params, code, dvc.lock, the
    metrics) from the commit, DVC's outputs from its cache. Faster than a second ``dvc repro``,
    which would rerun every stage DVC keeps no run record of (score, judge_eval, report)."""
    sh(repo, "git", "checkout", "-q", "--", ".")
    sh(repo, "git", "clean", "-fdq")
    sh(repo, DVC, "checkout", "-q", "--force")
    status = sh(repo, DVC, "status")
    assert "up to date" in status, status


def metrics(d):
    return json.loads((d / "metrics/retrieval.json").read_text())


def test_second_repro_runs_nothing(repo):
    out = sh(repo, DVC, "repro")
    assert ran(out) == set()
    assert "up to date" in out


def test_changing_one_config_reruns_only_its_instances(repo):
    p = yaml.safe_load((repo / "params.yaml").read_text())
    p["retrieval"]["hybrid"]["rrf_k"] = 30
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    out = sh(repo, DVC, "repro")
    # judge_checks reads the runs folder (the passages of self-preference); it replays its cache
    # index_plan reads every retrieval config; its files stay the same, so no index stage reruns
    assert ran(out) == {"index_plan", "retrieve@hybrid", "score", "judge_checks"} | READS_SCORES
    restore(repo)


def test_removed_config_disappears_from_metrics(repo):
    p = yaml.safe_load((repo / "params.yaml").read_text())
    del p["retrieval"]["dense"]
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    out = sh(repo, DVC, "repro")
    assert {"score", "evaluate", "stats", "report"} <= ran(out) <= {"index_plan", "score"} | READS_SCORES
    assert "dense" not in metrics(repo)
    assert "dense" not in json.loads((repo / "metrics/stats.json").read_text()) and "hybrid" in metrics(repo)
    restore(repo)


def test_a_bm25_only_study_embeds_nothing(repo):
    """Only the BM25 configs run (`run_configs`, every config kept in params.yaml): the dense
    stages write their unbuilt marker and load no model, the other configs' rankings are
    unavailable with the reason, the baseline follows to the first listed config, and the BM25
    runs are byte for byte what they were beside the dense configs."""
    before = {n: (repo / f"data/build/runs/{n}.json").read_bytes() for n in ("bm25", "rewrite")}
    p = yaml.safe_load((repo / "params.yaml").read_text())
    bm25_only = [n for n, c in p["retrieval"].items() if c["method"] == "bm25"]
    p["run_configs"] = bm25_only
    p["generation"]["configs"] = ["bm25"]
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    out = sh(repo, DVC, "repro")
    assert {"index_plan", "dense@base", "dense@heading"} <= ran(out), ran(out)
    assert "embedded" not in out and "Loading weights" not in out, "no model loaded, nothing embedded"
    for chunking in ("base", "heading"):
        assert [f.name for f in (repo / f"data/build/dense/{chunking}").iterdir()] == ["unused.json"]
    # retrieve@bm25 lists its chunking's dense folder (DVC cannot make deps depend on the method),
    # so it reruns when that folder becomes the marker, and writes the same run
    assert before == {n: (repo / f"data/build/runs/{n}.json").read_bytes() for n in before}
    dense = json.loads((repo / "data/build/runs/dense.json").read_text())
    assert dense["status"] == "unavailable" and "not in run_configs (bm25, rewrite)" in dense["reason"]
    stats = json.loads((repo / "metrics/stats.json").read_text())
    assert stats["bm25"]["is_baseline"] and not stats["dense"]["available"]
    restore(repo)
    assert (repo / "data/build/dense/base/index.faiss").is_file()


def test_evaluation_settings_never_rerun_generation(repo):
    p = yaml.safe_load((repo / "params.yaml").read_text())
    p["generation"]["refusal_phrases"].append("no idea")
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    out = sh(repo, DVC, "repro")
    # scoring reruns; evaluate only if a score changed (DVC stops at identical outputs)
    assert "score" in ran(out) and ran(out) <= {"score"} | READS_SCORES
    restore(repo)


def test_a_label_change_reruns_labels_and_scoring_only(repo):
    """Rankings live apart from labels: changing the span rule re-scores the stored rankings
    and never searches or generates again."""
    p = yaml.safe_load((repo / "params.yaml").read_text())
    p["labels"]["window"] = 25
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    out = sh(repo, DVC, "repro")
    labels_and_scoring = {"labels@base", "labels@heading", "score"}
    assert labels_and_scoring <= ran(out) <= labels_and_scoring | READS_SCORES, ran(out)
    restore(repo)


def test_an_llm_code_edit_reruns_no_retrieval_or_scoring_stage(repo):
    """Editing a module of the LLM subpackage reruns the LLM stages (whose outputs are then
    byte-identical, so DVC stops there): no chunk, index, labels, retrieve or scoring stage."""
    prompting = repo / "rag_ablation/llm/client/prompting.py"
    original = prompting.read_text()
    prompting.write_text(original + "\n# an edit that changes no behaviour\n")
    try:
        out = sh(repo, DVC, "repro")
    finally:
        prompting.write_text(original)
    assert ran(out) and all(s.split("@")[0] in {"queries", "generate", "judge", "judge_checks", "support"}
                        for s in ran(out)), ran(out)
    restore(repo)


def test_bm25_mmap_reruns_only_the_bm25_and_retrieve_stages(repo):
    """`bm25.mmap` changes how the index is stored, not what it scores: switching it on (with
    impl bm25s) rebuilds the BM25 folders and reruns retrieval, whose run files come out
    byte-identical, so DVC stops there."""
    p = yaml.safe_load((repo / "params.yaml").read_text())
    p["bm25"] = {**p["bm25"], "impl": "bm25s", "epsilon": 0}
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    sh(repo, DVC, "repro")
    runs = {f.name: f.read_bytes() for f in (repo / "data/build/runs").iterdir()}
    p["bm25"]["mmap"] = True
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    out = sh(repo, DVC, "repro")
    # every retrieve instance lists the bm25 params (one foreach template for all methods), so the
    # dense configs rerun too; all of them write the same bytes, and nothing after them runs
    assert ran(out) == {"bm25@base", "bm25@heading"} | {f"retrieve@{n}" for n in p["retrieval"]}, ran(out)
    assert {f.name: f.read_bytes() for f in (repo / "data/build/runs").iterdir()} == runs
    assert (repo / "data/build/bm25/base/bm25s").is_dir() and not (repo / "data/build/bm25/base/tokens.jsonl").exists()
    restore(repo)


def test_an_audit_line_reruns_only_scoring_and_what_reads_scores(repo):
    """A label audit re-scores stored rankings: no labels, retrieve or generate stage runs (the
    `dataset` stage copies the audit into data/build/dataset/; its corpus and questions are
    unchanged, so nothing reading them reruns)."""
    line = {"id": "q-ack", "doc": "ops/paging.md", "span": "escalates to the secondary after ten minutes",
            "note": "the escalation rule also gives the ten-minute acknowledgement window"}
    (repo / "data/labels/audit.jsonl").write_text(json.dumps(line) + "\n")
    out = sh(repo, DVC, "repro")
    assert "score" in ran(out) and ran(out) <= {"dataset", "score"} | READS_SCORES, ran(out)
    restore(repo)


def test_diff_against_main_names_the_questions_a_tokenizer_swap_broke(repo):
    """The chapter's regression: BM25 over str.split() tokens. `rag-ablation diff main` names
    exactly the questions whose hit@1 went from found to missed, identifier ones among them."""
    from rag_ablation.evaluation.scoring.scores import parse_scores

    p = yaml.safe_load((repo / "params.yaml").read_text())
    p["bm25"]["tokenizer"] = "whitespace"
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    sh(repo, DVC, "repro")
    out = sh(repo, str(Path(sys.executable).parent / "rag-ablation"), "diff", "main", "--config", "bm25",
             "--measure", "hit_at_1")
    before = {r["id"]: r for r in parse_scores(sh(repo, "git", "show", "main:metrics/scores/retrieval.csv"))
              if r["config"] == "bm25" and r["answerable"]}
    after = {r["id"]: r for r in parse_scores((repo / "metrics/scores/retrieval.csv").read_text())
             if r["config"] == "bm25" and r["answerable"]}
    broken = sorted(q for q in before if before[q]["hit_at_1"] == 1 and after[q]["hit_at_1"] == 0)
    assert broken and any(before[q]["slice"] == "identifier" for q in broken), broken
    for q in broken:
        assert q in out, (q, out)
    restore(repo)


def test_a_pipeline_without_answered_configs_still_parses_and_runs_retrieval(repo):
    """`generation.configs: []` (a retrieval-only study): dvc.yaml still resolves (no stage
    names the first answered config), and nothing downstream of answers fails."""
    p = yaml.safe_load((repo / "params.yaml").read_text())
    p["generation"]["configs"] = []
    p["gate"] = {"configs": ["bm25"]}
    (repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    try:
        out = sh(repo, DVC, "repro")
        checks = json.loads((repo / "data/build/judge_checks.json").read_text())
        assert checks["self_preference"]["status"] == "not measured"
        assert "judge_eval" in ran(out) or "judge_checks" in ran(out)
    finally:
        restore(repo)
