"""Stage `judge_checks`: canaries and bias tests of the judges (numbers come in judge_eval).

Canaries: for every answerable question with a hand grade, six made-up answers
(`rag_ablation.llm.judging.canaries`: "Yes.", "Sure, here is the answer.", the question
repeated, empty, the reference padded to about three times its length with no new facts, and a
rewording of the reference), judged by every judge of `judge.judges`.

Bias (the LLM judge only; skipped, saying why, when its backend is none): for `judge.bias_sample`
of those questions (seeded by `judge.bias_seed`), the reference against its padded version,
judged in both orders (position and length). Self-preference when `judge.second_llm` is set: the
second model answers the same questions from the same passages and prompt as the first
config of `generation.configs` (not measured when there is none), and each model judges each pair in both orders; otherwise it is
recorded as not measured. Every LLM call goes through the prompt cache.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import json
import random
import sys
from pathlib import Path

from rag_ablation import cli
from rag_ablation.config import LlmConfig, load_config
from rag_ablation.evaluation.grades import load_grades
from rag_ablation.io import read_jsonl, write_json
from rag_ablation.llm.backends import backend_from_config
from rag_ablation.llm.generation import answer_questions
from rag_ablation.llm.judging import (CANARY_KINDS, Item, PairResult, build_judges, canaries, compare_both_orders,
                                      llm_judge, padded)
from rag_ablation.llm.prompt_cache import CachedLLM, PromptCache
from rag_ablation.llm.prompting import load_template
from rag_ablation.questions import Question

VERDICT_NAMES = {True: "correct", False: "incorrect", None: "invalid"}


def _pair_row(qid: str, r: PairResult, x: str, y: str) -> dict:
    first, second = r.picks
    names = {"x": x, "y": y, None: None}
    return {"id": qid, "x_first_reply": r.x_first_reply, "y_first_reply": r.y_first_reply,
            "x_first_pick": names[first], "y_first_pick": names[second],
            "winner": names.get(r.winner, "tie") if r.winner != "tie" else "tie"}


def _cached(cfg: LlmConfig, cache: PromptCache, prompt: str) -> tuple[CachedLLM, dict]:
    backend = backend_from_config(cfg)
    return CachedLLM(backend, cache, options={"judge_prompt": prompt}), {**backend.identity(), **backend.settings()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--grades", type=Path, required=True)
    ap.add_argument("--answers", type=Path, required=True, help="folder of generate@ outputs")
    ap.add_argument("--runs", type=Path, required=True, help="folder of retrieve@ outputs")
    ap.add_argument("--prompts", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    params = load_config()
    jc = params.judge
    judge_cfg = jc.judge_llm(params.llm)
    questions = {d["id"]: d for d in read_jsonl(args.questions)}
    graded = sorted({g.id for g in load_grades(args.grades)
                     if g.id in questions and Question(**questions[g.id]).answerable})
    cache = PromptCache()
    out: dict = {"judges": {}, "canaries": {"kinds": list(CANARY_KINDS), "questions": graded, "items": []},
                 "length": None, "self_preference": None}

    llm_ok = "llm" in jc.judges and judge_cfg.enabled
    judge_llm = identity = None
    if llm_ok:
        template = load_template(args.prompts, jc.prompt, needs=["question", "reference", "answer"])
        judge_llm, identity = _cached(judge_cfg, cache, jc.prompt)
    for name in jc.judges:
        out["judges"][name] = ({"status": "unavailable", "reason": "the llm judge needs an LLM, and its backend is none"}
                               if name == "llm" and not llm_ok else {"status": "ok", "reason": None})
    if llm_ok:
        out["judges"]["llm"]["llm"] = identity
    runnable = [n for n in jc.judges if out["judges"][n]["status"] == "ok"]
    judges = build_judges(runnable, token_f1_threshold=jc.token_f1_threshold,
                          llm=(lambda: llm_judge(judge_llm, template, num_predict=jc.num_predict,
                                                 concurrency=judge_cfg.concurrency)) if llm_ok else None)

    items, keys = [], []
    for qid in graded:
        q = questions[qid]
        for kind, text in canaries(q["question"], q["answer"]).items():
            items.append(Item(q["question"], q["answer"], text))
            keys.append((qid, kind, text))
    results = {name: judge(items) for name, judge in judges.items()}
    for i, (qid, kind, text) in enumerate(keys):
        out["canaries"]["items"].append({"id": qid, "kind": kind, "text": text,
                                         **{f"verdict_{n}": VERDICT_NAMES[v[i].verdict] for n, v in results.items()}})

    sample = sorted(random.Random(jc.bias_seed).sample(graded, min(jc.bias_sample, len(graded))))
    if not llm_ok:
        reason = "the bias tests need the llm judge, and it is not available"
        out["length"] = {"status": "unavailable", "reason": reason}
        out["self_preference"] = {"status": "unavailable", "reason": reason}
        write_json(args.out, out)
        return
    pair_template = load_template(args.prompts, jc.pairwise_prompt, needs=["question", "a", "b"])
    pairs = [(questions[q]["question"], questions[q]["answer"], padded(questions[q]["answer"])) for q in sample]
    length = compare_both_orders(judge_llm, pair_template, pairs, num_predict=jc.num_predict,
                                 concurrency=judge_cfg.concurrency)
    out["length"] = {"status": "ok", "reason": None, "judge": identity,
                     "pairs": [_pair_row(q, r, "short", "long") for q, r in zip(sample, length)]}

    answered = params.generation.configs
    if jc.second_llm is None or not params.llm.enabled:
        out["self_preference"] = {"status": "not measured", "reason": "needs two answer models (set judge.second_llm)"}
    elif not answered:
        out["self_preference"] = {"status": "not measured", "reason": "no answered config (generation.configs is empty)"}
    else:
        answers = json.loads((args.answers / f"{answered[0]}.json").read_text(encoding="utf-8"))
        run = json.loads((args.runs / f"{answered[0]}.json").read_text(encoding="utf-8"))
        first = {r["id"]: r for r in answers.get("answers", [])}
        ids = [q for q in sample if q in first]
        gen = params.generation
        gen_template = load_template(args.prompts, answers["prompt"], needs=["passages", "question"])
        second_backend = backend_from_config(jc.second_llm)
        second_identity = {**second_backend.identity(), **second_backend.settings()}
        second_records, _ = answer_questions(
            [Question(**questions[q]) for q in ids], {q: first[q]["passages"] for q in ids}, run["passages"],
            llm=CachedLLM(second_backend, cache), template=gen_template, k=answers["k"],
            num_predict=answers["num_predict"], stop=gen.stop, concurrency=jc.second_llm.concurrency)
        second = {r["id"]: r["answer"] for r in second_records}
        first_judge, first_identity = _cached(params.llm, cache, jc.pairwise_prompt)
        second_judge, _ = _cached(jc.second_llm, cache, jc.pairwise_prompt)
        pairs = [(questions[q]["question"], first[q]["answer"], second[q]) for q in ids]
        by_judge = {}
        for name, llm_, cfg in (("first", first_judge, params.llm), ("second", second_judge, jc.second_llm)):
            res = compare_both_orders(llm_, pair_template, pairs, num_predict=jc.num_predict,
                                      concurrency=cfg.concurrency)
            by_judge[name] = [_pair_row(q, r, "first", "second") for q, r in zip(ids, res)]
        out["self_preference"] = {"status": "ok", "reason": None,
                                  "models": {"first": first_identity, "second": second_identity},
                                  "second_answers": [{"id": q, "answer": second[q]} for q in ids],
                                  "pairs": by_judge}
    write_json(args.out, out)
    print(f"judge_checks: {len(items)} canaries over {len(graded)} graded questions; "
          f"{len(sample)} length pairs; self-preference {out['self_preference']['status']}", file=sys.stderr)


if __name__ == "__main__":
    cli.run(main)
