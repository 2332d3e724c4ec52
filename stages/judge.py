"""Stage `judge@NAME`: every judge of `judge.judges` on every answer of generate@NAME.

Writes, per answer, each judge's verdict (`correct`, `incorrect` or `invalid`) with its detail
(the LLM's reply, or the token F1) and the sha256 of the answer text it judged, plus each
judge's status: the LLM judge is `unavailable` (with the reason) when the judge's backend is
`none`, and the judge-free ones still run. Answers that are unavailable give an unavailable
file. Every LLM verdict goes through the prompt cache, so a killed run loses nothing and a rerun
resumes; a leaf latency file holds the cache's calls, hits and misses.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.core.io import read_json, read_jsonl, write_json
from rag_ablation.llm.client.registry import backend_from_config
from rag_ablation.evaluation.judges.judging import (build_judges, judge_answers, judge_availability, llm_judge,
                                                    unscored_note)
from rag_ablation.llm.client.prompt_cache import NO_CALLS, CachedLLM, PromptCache
from rag_ablation.llm.client.prompting import load_template



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--answers", type=Path, required=True, help="the generate@NAME output")
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--prompts", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--latency", type=Path, required=True)
    args = ap.parse_args()
    params = load_config()
    jc = params.judge
    judge_llm = jc.judge_llm(params.llm)
    answers = read_json(args.answers)
    questions = {d["id"]: d for d in read_jsonl(args.questions)}
    out = {"config": args.name, "status": answers["status"], "reason": answers["reason"], "judges": {},
           "verdicts": []}
    if answers["status"] != "ok":
        runner.write_unavailable(out, out=args.out, latency=args.latency, no_work=NO_CALLS, label=f"judge@{args.name}")
        return

    cached: CachedLLM | None = None
    available = judge_availability(judges=jc.judges, judge_llm=judge_llm)
    out["judges"] = {name: {**status, "llm": None} for name, status in available.statuses().items()}
    if available.uses_llm:
        template = load_template(args.prompts, jc.prompt, needs=["question", "reference", "answer"])
        backend = backend_from_config(judge_llm)
        cached = CachedLLM(backend, PromptCache(), options={"judge_prompt": jc.prompt})
        out["judges"]["llm"].update(llm={**backend.identity(), **backend.settings()}, prompt=jc.prompt)
    if "token_f1" in available.names:
        out["judges"]["token_f1"]["threshold"] = jc.token_f1_threshold

    def make_llm_judge():
        return llm_judge(cached, template, num_predict=jc.num_predict, concurrency=judge_llm.concurrency,
                         progress=lambda it: tqdm(it, desc=f"judge@{args.name}", file=sys.stderr),
                         top_logprobs=jc.top_logprobs)

    judges = build_judges(available.runnable, token_f1_threshold=jc.token_f1_threshold,
                          llm=make_llm_judge if cached is not None else None)
    judged = judge_answers(answers["answers"], questions, judges)
    out["verdicts"] = judged.rows()
    for name, invalid in judged.invalid().items():
        out["judges"][name]["invalid"] = invalid
    for name, unscored in judged.unscored().items():
        out["judges"][name]["unscored"] = unscored
    note = unscored_note(judged.unscored().get("llm"), len(out["verdicts"]), top_logprobs=jc.top_logprobs)
    if note:
        out["judges"]["llm"]["score_note"] = note
        print(f"judge@{args.name}: {note}", file=sys.stderr)
    write_json(args.out, out)
    write_json(args.latency, cached.stats() if cached else NO_CALLS)
    print(f"judge@{args.name}: {judged.summary()}", file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
