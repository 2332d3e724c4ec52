"""Which graded questions get canaries (rag_ablation.evaluation.judges.judge_checks.canary_questions), and
the self-preference record (``self_preference``)."""
from __future__ import annotations

import json

from rag_ablation.core.config import LlmConfig
from rag_ablation.evaluation.judges import judge_checks
from rag_ablation.evaluation.judges.judge_checks import (NO_ANSWERED_CONFIG, NO_SECOND_MODEL, bias_sample,
                                                         canary_questions, self_preference)
from rag_ablation.llm.client.base import Backend, Generation
from rag_ablation.llm.client.prompt_cache import PromptCache

GRADED = [f"q{i}" for i in range(10)]


def test_every_graded_question_without_a_sample_else_the_seeded_bias_sample():
    assert canary_questions(GRADED, None, 0) == GRADED
    assert canary_questions(GRADED, 4, 3) == bias_sample(GRADED, 4, 3)
    assert len(canary_questions(GRADED, 4, 3)) == 4 and canary_questions(GRADED, 99, 0) == sorted(GRADED)


# --------------------------------------------------------------------------- self-preference
FIRST, SECOND, NONE = LlmConfig(model="first"), LlmConfig(model="second"), LlmConfig(backend="none")
QUESTIONS = {q: {"id": q, "question": f"When does {q} run?", "doc": "t/a.md", "span": "at noon", "answer": "At noon.",
                 "slice": "main", "track": "t"} for q in ("q1", "q2", "q3")}


class Fake(Backend):
    """Answers with its model's name; as a pairwise judge, always picks A."""

    name = "fake"

    def __init__(self, model: str) -> None:
        self.model = model

    def identity(self):
        return {"backend": "fake", "model": self.model, "digest": self.model}

    def settings(self):
        return {"temperature": 0}

    def chat(self, messages, *, num_predict, stop=()):
        text = "A" if "Answer A" in messages[-1]["content"] else f"{self.model} says noon"
        return Generation(text, 1, 1, 0.0)


def measure(tmp_path, *, answer_llm=FIRST, second_llm=SECOND, answered=("dense",)):
    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "answer.txt").write_text("{passages}\n{question}")
    (tmp_path / "answers").mkdir(exist_ok=True)
    (tmp_path / "answers" / "dense.json").write_text(json.dumps({"prompt": "answer", "k": 1, "num_predict": 8, "answers": [
        {"id": "q1", "answer": "first says noon", "passages": ["c1"]},
        {"id": "q3", "answer": "first says noon too", "passages": ["c1"]}]}))
    (tmp_path / "runs").mkdir(exist_ok=True)
    (tmp_path / "runs" / "dense.json").write_text(json.dumps({"passages": {"c1": "It runs at noon."}}))
    cache = PromptCache(tmp_path / "prompts.sqlite")
    return self_preference(answer_llm=answer_llm, second_llm=second_llm, answered=list(answered),
                           answers_dir=tmp_path / "answers", runs_dir=tmp_path / "runs", prompts=tmp_path / "prompts",
                           pairwise_prompt="pairwise", pair_template="{question}\nAnswer A: {a}\nAnswer B: {b}",
                           questions=QUESTIONS, sample=["q1", "q2", "q3"], cache=cache, stop=(), num_predict=4)


def test_self_preference_is_not_measured_without_two_models_or_answers(tmp_path):
    not_measured = {"status": "not measured", "reason": NO_SECOND_MODEL}
    assert measure(tmp_path, second_llm=None) == not_measured
    assert measure(tmp_path, answer_llm=NONE) == not_measured
    assert measure(tmp_path, answered=()) == {"status": "not measured", "reason": NO_ANSWERED_CONFIG}


def test_self_preference_has_each_model_judge_both_answers_in_both_orders(tmp_path, monkeypatch):
    monkeypatch.setattr(judge_checks, "backend_from_config", lambda cfg: Fake(cfg.model))
    out = measure(tmp_path)
    assert out["status"] == "ok" and out["reason"] is None
    assert out["models"] == {"first": {"backend": "fake", "model": "first", "digest": "first", "temperature": 0},
                             "second": {"backend": "fake", "model": "second", "digest": "second", "temperature": 0}}
    # the sampled questions the first config answered (q2 has no answer), answered by the second model
    assert out["second_answers"] == [{"id": "q1", "answer": "second says noon"},
                                     {"id": "q3", "answer": "second says noon"}]
    assert set(out["pairs"]) == {"first", "second"}
    for rows in out["pairs"].values():  # always A: each order picks a different answer, so a tie
        assert [r["id"] for r in rows] == ["q1", "q3"]
        assert all(r["x_first_pick"] == "first" and r["y_first_pick"] == "second" and r["winner"] == "tie"
                   for r in rows)

