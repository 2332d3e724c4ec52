"""The score stage's loop: answers scored by the text of the passages their prompts showed."""
from __future__ import annotations

from pathlib import Path

from rag_ablation.core.config import Params, load_params
from rag_ablation.core.io import write_json
from rag_ablation.data.questions import Question
from rag_ablation.evaluation.scoring.score import score_configs

ROOT = Path(__file__).resolve().parents[3]


def params_with(configs: dict[str, dict], answered: list[str]) -> Params:
    raw = load_params(ROOT / "params.yaml")
    raw["retrieval"] = configs
    raw["generation"]["configs"] = answered
    return Params.from_params(raw)


def test_answers_with_unknown_passages_have_no_lexical_support_and_are_counted(tmp_path):
    """dense's run has the text of c0 only: the answer shown c0 is scored (2 of its 3 content
    words in c0), the one shown c0 and c9 is not, and one note line counts it."""
    questions = [Question(id=i, question=f"{i}?", doc="t/a.md", span="x" * 20, answer="ninety", slice="main",
                          track="t") for i in ("q1", "q2")]
    ranking = [{"chunk": "c0", "score": 1.0}]
    write_json(tmp_path / "runs/dense.json", {
        "status": "ok", "reason": None, "passages": {"c0": "Keys rotate every 90 days."},
        "questions": [{"id": q.id, "ranking": ranking} for q in questions]})
    write_json(tmp_path / "labels/base.json", {"relevant": {"q1": ["c0"], "q2": ["c0"]}})
    write_json(tmp_path / "answers/dense.json", {"status": "ok", "answers": [
        {"id": "q1", "answer": "Keys rotate weekly.", "passages": ["c0"]},
        {"id": "q2", "answer": "Keys rotate weekly.", "passages": ["c0", "c9"]}]})
    write_json(tmp_path / "runs/hybrid_heading.json", {"status": "unavailable", "reason": "not built"})
    params = params_with({"dense": {"chunking": "base", "method": "dense", "query": "none"},
                          "hybrid_heading": {"chunking": "heading", "method": "hybrid", "query": "none"}}, ["dense"])
    scores = score_configs(params, questions, [], runs=tmp_path / "runs", labels=tmp_path / "labels",
                           answers=tmp_path / "answers")
    assert [r["lexical_support"] for r in scores.answers] == [2 / 3, None]
    assert scores.notes == ["hybrid_heading: unavailable: not built",
                            "dense: lexical support undefined for 1 answer(s), the passages shown unknown: "
                            "passage text missing (1)"]


def test_output_files_of_configs_no_longer_in_params_are_named_and_not_scored(tmp_path):
    """runs/ holds dense (in params) and two removed configs' files; answers/ one removed config's:
    no rows for them, one note per folder naming them; other files are not outputs."""
    questions = [Question(id="q1", question="q1?", doc="t/a.md", span="x" * 20, answer="ninety", slice="main",
                          track="t")]
    run = {"status": "ok", "reason": None, "passages": {"c0": "Keys rotate every 90 days."},
           "questions": [{"id": "q1", "ranking": [{"chunk": "c0", "score": 1.0}]}]}
    for name in ("dense", "dense_rerank", "old_hybrid"):
        write_json(tmp_path / f"runs/{name}.json", run)
    (tmp_path / "runs/.dense.json.tmp").write_text("{}")
    (tmp_path / "runs/notes.txt").write_text("")
    write_json(tmp_path / "labels/base.json", {"relevant": {"q1": ["c0"]}})
    write_json(tmp_path / "answers/old_hybrid.json", {"status": "ok", "answers": []})
    write_json(tmp_path / "runs/hybrid_heading.json", {"status": "unavailable", "reason": "not built"})
    params = params_with({"dense": {"chunking": "base", "method": "dense", "query": "none"},
                          "hybrid_heading": {"chunking": "heading", "method": "hybrid", "query": "none"}}, [])
    scores = score_configs(params, questions, [], runs=tmp_path / "runs", labels=tmp_path / "labels",
                           answers=tmp_path / "answers")
    assert {r["config"] for r in scores.retrieval} == {"dense"}
    hint = ("; DVC leaves a removed config's outputs in place, and the stages reading this folder hash them: "
            "delete them (`rag-ablation prune --apply` does, while dvc.lock still records their stages), "
            "then `dvc repro`")
    assert scores.notes == [
        "hybrid_heading: unavailable: not built",
        f"{tmp_path / 'runs'}: 2 file(s) of configs not in params.yaml, not scored: dense_rerank, old_hybrid{hint}",
        f"{tmp_path / 'answers'}: 1 file(s) of configs not in params.yaml, not scored: old_hybrid{hint}"]
