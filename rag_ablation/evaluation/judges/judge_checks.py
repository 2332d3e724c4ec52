"""The checks of the judges that the ``judge_checks`` stage runs: canaries for graded questions,
the length pairs judged in both orders, and self-preference between two answer models.

Records are plain dicts (written as JSON by the stage, read by
``rag_ablation.evaluation.judges.judge_eval``):

* a canary row: ``id``, ``kind`` (``CANARY_KINDS``), ``text``, ``verdict_<judge>``
  (``correct``, ``incorrect`` or ``invalid``) and ``score_<judge>`` (the judge's score in [0, 1],
  None when it gave none) for every judge run, and the canary's answer features (``new_f1``,
  ``question_overlap``: ``answer_features.answer_features``);
* a pair row: ``id``, the two raw replies (``x_first_reply``: the x answer in slot A;
  ``y_first_reply``: swapped), which answer each order picked (``x_first_pick``,
  ``y_first_pick``: the x or y name, None when the reply was not A or B), ``winner`` (a name
  when both orders agree, else ``tie``) and each order's P(A) from its first reply token
  (``x_first_p_a``, ``y_first_p_a``; None without token probabilities).
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_ablation.core.config import LlmConfig
from rag_ablation.core.io import read_json
from rag_ablation.data.questions import Question
from rag_ablation.llm.generation import answer_questions
from rag_ablation.evaluation.judges.judging import (CANARY_KINDS, VERDICT_NAMES, Item, JudgeFn, PairResult,
                                                    answer_features, canaries, compare_both_orders, padded)
from rag_ablation.llm.client.prompt_cache import CachedLLM, PromptCache
from rag_ablation.llm.client.prompting import load_template
from rag_ablation.llm.client.registry import backend_from_config

BIAS_TESTS_UNAVAILABLE = "the bias tests need the llm judge, and it is not available"
"""The reason recorded for the length and self-preference tests when the LLM judge cannot run."""


def canary_rows(graded: Sequence[str], questions: Mapping[str, Mapping[str, Any]],
                judges: Mapping[str, JudgeFn]) -> list[dict[str, Any]]:
    """Every canary of every graded question (in ``graded`` order, kinds in ``CANARY_KINDS``
    order), judged by every judge, with its ``answer_features`` (``new_f1``, ``question_overlap``:
    what the combined judge reads besides the judges' scores)."""
    items, keys = [], []
    for qid in graded:
        q = questions[qid]
        for kind, text in canaries(q["question"], q["answer"]).items():
            items.append(Item(q["question"], q["answer"], text))
            keys.append((qid, kind, text))
    results = {name: judge(items) for name, judge in judges.items()}
    return [{"id": qid, "kind": kind, "text": text,
             **{f"verdict_{n}": VERDICT_NAMES[v[i].verdict] for n, v in results.items()},
             **{f"score_{n}": v[i].score for n, v in results.items()},
             **answer_features(items[i].question, items[i].reference, text)}
            for i, (qid, kind, text) in enumerate(keys)]


def bias_sample(graded: Sequence[str], size: int, seed: int) -> list[str]:
    """A seeded sample of ``size`` graded question ids (all when fewer), sorted."""
    return sorted(random.Random(seed).sample(list(graded), min(size, len(graded))))


def canary_questions(graded: Sequence[str], size: int | None, seed: int) -> list[str]:
    """The graded question ids that get canaries: all of them when ``size`` is None
    (``judge.canary_sample: null``), else ``bias_sample(graded, size, seed)``."""
    return list(graded) if size is None else bias_sample(graded, size, seed)


def pair_row(qid: str, r: PairResult, x: str, y: str) -> dict[str, Any]:
    """One pair judged both ways, with the answers named ``x`` and ``y`` (module docstring)."""
    names = {"x": x, "y": y}
    first, second = r.picks
    return {"id": qid, "x_first_reply": r.x_first_reply, "y_first_reply": r.y_first_reply,
            "x_first_pick": names.get(first or ""), "y_first_pick": names.get(second or ""),
            "winner": names.get(r.winner, "tie"), "x_first_p_a": r.x_first_p_a, "y_first_p_a": r.y_first_p_a}


def length_pairs(llm: CachedLLM, template: str, questions: Mapping[str, Mapping[str, Any]], ids: Sequence[str], *,
                 num_predict: int, concurrency: int, top_logprobs: int = 0) -> list[dict[str, Any]]:
    """Each reference (``short``) against itself padded (``long``), in both orders (each order's
    P(A) too with ``top_logprobs`` > 0)."""
    pairs = [(questions[q]["question"], questions[q]["answer"], padded(questions[q]["answer"])) for q in ids]
    results = compare_both_orders(llm, template, pairs, num_predict=num_predict, concurrency=concurrency,
                                  top_logprobs=top_logprobs)
    return [pair_row(q, r, "short", "long") for q, r in zip(ids, results)]


def second_answers(llm: CachedLLM, answers: Mapping[str, Any], run: Mapping[str, Any],
                   questions: Sequence[Any], *, template: str, stop: Sequence[str], concurrency: int) -> dict[str, str]:
    """The second model's answers to ``questions`` from the same passages, prompt, passage count
    and token budget as the first model's ``answers`` file (``run``: its retrieval run)."""
    first = {r["id"]: r for r in answers["answers"]}
    records, _ = answer_questions(questions, {q.id: first[q.id]["passages"] for q in questions}, run["passages"],
                                  llm=llm, template=template, k=answers["k"], num_predict=answers["num_predict"],
                                  stop=stop, concurrency=concurrency)
    return {r["id"]: r["answer"] for r in records}


def self_preference_pairs(judges: Mapping[str, tuple[CachedLLM, int]], template: str,
                          questions: Mapping[str, Mapping[str, Any]], first: Mapping[str, str],
                          second: Mapping[str, str], ids: Sequence[str], *, num_predict: int) -> dict[str, list]:
    """Each judging model (``first``/``second``: its cached LLM and concurrency) on each pair of
    the two models' answers, in both orders; answers are named ``first`` and ``second``."""
    pairs = [(questions[q]["question"], first[q], second[q]) for q in ids]
    out = {}
    for name, (llm, concurrency) in judges.items():
        results = compare_both_orders(llm, template, pairs, num_predict=num_predict, concurrency=concurrency)
        out[name] = [pair_row(q, r, "first", "second") for q, r in zip(ids, results)]
    return out


NO_SECOND_MODEL = "needs two answer models (set judge.second_llm)"
"""Why self-preference is not measured when there is no second answer model (or no LLM at all)."""

NO_ANSWERED_CONFIG = "no answered config (generation.configs is empty)"
"""Why self-preference is not measured when no config has answers to compare."""


def cached_judge(cfg: LlmConfig, cache: PromptCache, prompt: str) -> tuple[CachedLLM, dict[str, Any]]:
    """The model of ``cfg`` as a judge through ``cache`` (its cache keys carry the judging
    prompt's name ``prompt``), and the identity and settings the stage records for it."""
    backend = backend_from_config(cfg)
    return CachedLLM(backend, cache, options={"judge_prompt": prompt}), {**backend.identity(), **backend.settings()}


def self_preference(*, answer_llm: LlmConfig, second_llm: LlmConfig | None, answered: Sequence[str],
                    answers_dir: Path, runs_dir: Path, prompts: Path, pairwise_prompt: str, pair_template: str,
                    questions: Mapping[str, Mapping[str, Any]], sample: Sequence[str], cache: PromptCache,
                    stop: Sequence[str], num_predict: int) -> dict[str, Any]:
    """The self-preference record of the judge_checks stage (``status``, ``reason``, and when
    measured ``models``, ``second_answers`` and ``pairs``).

    Not measured (``status`` "not measured", ``reason`` ``NO_SECOND_MODEL``) unless there is a
    ``second_llm`` and the answer model ``answer_llm`` is enabled; nor (``NO_ANSWERED_CONFIG``)
    when ``answered`` (``generation.configs``) is empty. Otherwise the second model answers the
    questions of ``sample`` that the first config of ``answered`` answered (its generate output
    in ``answers_dir``, its retrieval run in ``runs_dir``), from the same passages and prompt
    (``prompts``: the prompts folder) with the ``stop`` strings; then each model judges each pair
    of the two models' answers in both orders with the pairwise template ``pair_template``
    (named ``pairwise_prompt``), ``num_predict`` tokens per reply. Every call goes through
    ``cache``."""
    if second_llm is None or not answer_llm.enabled:
        return {"status": "not measured", "reason": NO_SECOND_MODEL}
    if not answered:
        return {"status": "not measured", "reason": NO_ANSWERED_CONFIG}
    answers = read_json(answers_dir / f"{answered[0]}.json")
    run = read_json(runs_dir / f"{answered[0]}.json")
    first = {r["id"]: r["answer"] for r in answers.get("answers", [])}
    ids = [q for q in sample if q in first]
    second_backend = backend_from_config(second_llm)
    second = second_answers(CachedLLM(second_backend, cache), answers, run, [Question(**questions[q]) for q in ids],
                            template=load_template(prompts, answers["prompt"], needs=["passages", "question"]),
                            stop=stop, concurrency=second_llm.concurrency)
    first_judge, first_identity = cached_judge(answer_llm, cache, pairwise_prompt)
    second_judge, _ = cached_judge(second_llm, cache, pairwise_prompt)
    return {
        "status": "ok", "reason": None,
        "models": {"first": first_identity, "second": {**second_backend.identity(), **second_backend.settings()}},
        "second_answers": [{"id": q, "answer": second[q]} for q in ids],
        "pairs": self_preference_pairs({"first": (first_judge, answer_llm.concurrency),
                                        "second": (second_judge, second_llm.concurrency)},
                                       pair_template, questions, first, second, ids, num_predict=num_predict)}


__all__ = ["BIAS_TESTS_UNAVAILABLE", "CANARY_KINDS", "NO_ANSWERED_CONFIG", "NO_SECOND_MODEL", "VERDICT_NAMES", "bias_sample",
           "cached_judge", "canary_rows", "length_pairs", "pair_row", "second_answers", "self_preference",
           "self_preference_pairs"]
