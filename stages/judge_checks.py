"""Stage `judge_checks`: canaries and bias tests of the judges (numbers come in judge_eval).

Canaries: for every answerable question with a hand grade (or a seeded sample of
`judge.canary_sample` of them, seeded by `judge.bias_seed`), six made-up answers
(`rag_ablation.evaluation.judges.judging.canaries`: "Yes.", "Sure, here is the answer.", the question
repeated, empty, the reference padded to about three times its length with no new facts, and a
rewording of the reference), judged by every judge of `judge.judges`.

Bias (the LLM judge only; skipped, saying why, when its backend is none): for `judge.bias_sample`
of the graded answerable questions (seeded by `judge.bias_seed`), the reference against its padded version,
judged in both orders (position and length). Self-preference when `judge.second_llm` is set: the
second model answers the same questions from the same passages and prompt as the first
config of `generation.configs` (not measured when there is none), and each model judges each
pair in both orders; otherwise it is recorded as not measured. Every LLM call goes through the
prompt cache (rag_ablation.evaluation.judges.judge_checks does the work).
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.evaluation.judges.grades import load_grades
from rag_ablation.core.io import read_jsonl, write_json
from rag_ablation.evaluation.judges.judge_checks import (BIAS_TESTS_UNAVAILABLE, CANARY_KINDS, bias_sample, cached_judge,
                                                         canary_questions, canary_rows, length_pairs, self_preference)
from rag_ablation.evaluation.judges.judging import build_judges, judge_availability, llm_judge
from rag_ablation.llm.client.prompt_cache import PromptCache
from rag_ablation.llm.client.prompting import load_template
from rag_ablation.data.questions import Question


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
    canaried = canary_questions(graded, jc.canary_sample, jc.bias_seed)
    out: dict = {"judges": {}, "canaries": {"kinds": list(CANARY_KINDS), "questions": canaried, "items": []},
                 "length": None, "self_preference": None}

    available = judge_availability(judges=jc.judges, judge_llm=judge_cfg)
    llm_ok = available.uses_llm
    judge_llm = identity = None
    if llm_ok:
        template = load_template(args.prompts, jc.prompt, needs=["question", "reference", "answer"])
        judge_llm, identity = cached_judge(judge_cfg, cache, jc.prompt)
    out["judges"] = available.statuses()
    if llm_ok:
        out["judges"]["llm"]["llm"] = identity
    judges = build_judges(available.runnable, token_f1_threshold=jc.token_f1_threshold,
                          llm=(lambda: llm_judge(judge_llm, template, num_predict=jc.num_predict,
                                                 concurrency=judge_cfg.concurrency,
                                                 top_logprobs=jc.top_logprobs)) if llm_ok else None)
    out["canaries"]["items"] = canary_rows(canaried, questions, judges)

    sample = bias_sample(graded, jc.bias_sample, jc.bias_seed)
    if not llm_ok:
        out["length"] = {"status": "unavailable", "reason": BIAS_TESTS_UNAVAILABLE}
        out["self_preference"] = {"status": "unavailable", "reason": BIAS_TESTS_UNAVAILABLE}
        write_json(args.out, out)
        return
    pair_template = load_template(args.prompts, jc.pairwise_prompt, needs=["question", "a", "b"])
    out["length"] = {"status": "ok", "reason": None, "judge": identity,
                     "pairs": length_pairs(judge_llm, pair_template, questions, sample, num_predict=jc.num_predict,
                                           top_logprobs=jc.top_logprobs,
                                           concurrency=judge_cfg.concurrency)}

    out["self_preference"] = self_preference(
        answer_llm=params.llm, second_llm=jc.second_llm, answered=params.generation.configs, answers_dir=args.answers,
        runs_dir=args.runs, prompts=args.prompts, pairwise_prompt=jc.pairwise_prompt, pair_template=pair_template,
        questions=questions, sample=sample, cache=cache, stop=params.generation.stop, num_predict=jc.num_predict)
    write_json(args.out, out)
    print(f"judge_checks: {len(out['canaries']['items'])} canaries over {len(canaried)} of {len(graded)} graded questions; "
          f"{len(sample)} length pairs; self-preference {out['self_preference']['status']}", file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
