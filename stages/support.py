"""Stage `support@NAME`: the answer model's probability that each answer of generate@NAME is
supported by the passages its prompt showed, and the support canaries.

Writes, per answer, the support prompt's reply, its verdict (`supported`, `unsupported` or
`invalid`), P(SUPPORTED) from the first reply token (null: no probabilities, or the passages shown
are unknown and nothing was asked) and the sha256 of the answer text; then two canary answers for
each of a seeded selection of up to `support.canaries` answers (`unrelated_copy`, `shown_copy`),
each with P(SUPPORTED) and its lexical support (rag_ablation.evaluation.judges.support). The
model is the answer model (`llm`). Unavailable (with the reason) when the answers are, or when
`llm.backend` is `none`, or `support.ask_llm` is false; in the last two cases the same canaries
are still written, scored lexically only, so judge_eval checks lexical support against them.
Every prompt goes through the prompt cache, so a killed run loses nothing and a rerun resumes;
a leaf latency file holds the cache's calls, hits and misses.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tqdm import tqdm

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.core.io import read_json, read_jsonl, write_json
from rag_ablation.evaluation.judges.support import lexical_canaries, support_records
from rag_ablation.llm.client.prompt_cache import NO_CALLS, CachedLLM, PromptCache
from rag_ablation.llm.client.prompting import load_template
from rag_ablation.llm.client.registry import backend_from_config

NO_LLM_REASON = "the support score needs an LLM, and llm.backend is none"
NOT_ASKED_REASON = ("support.ask_llm is false: the answer model was not asked (lexical support is still "
                    "calibrated in judge_eval); -S support.ask_llm=true asks it")


def questions_of(path: Path) -> dict[str, str]:
    """Question id -> question text, from the questions file."""
    return {d["id"]: d["question"] for d in read_jsonl(path)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--answers", type=Path, required=True, help="the generate@NAME output")
    ap.add_argument("--run", type=Path, required=True, help="the retrieve@NAME output (the passages' texts)")
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--prompts", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--latency", type=Path, required=True)
    args = ap.parse_args()
    params = load_config()
    sc, llm_cfg = params.support, params.llm
    answers = read_json(args.answers)
    out: dict[str, Any] = {"config": args.name, "status": answers["status"], "reason": answers["reason"],
                           "llm": None, "prompt": sc.prompt, "answers": [], "canaries": [], "unscored": 0, "invalid": 0}
    if answers["status"] == "ok" and not llm_cfg.enabled:
        out.update(status="unavailable", reason=NO_LLM_REASON)
    elif answers["status"] == "ok" and not sc.ask_llm:
        out.update(status="unavailable", reason=NOT_ASKED_REASON)
    if out["status"] != "ok":
        if answers["status"] == "ok":  # the model is not asked: the canaries are still scored lexically
            out["canaries"] = lexical_canaries(answers["answers"], questions_of(args.questions),
                                               read_json(args.run)["passages"], canaries=sc.canaries, seed=sc.seed)
        runner.write_unavailable(out, out=args.out, latency=args.latency, no_work=NO_CALLS,
                                 label=f"support@{args.name}")
        return

    template = load_template(args.prompts, sc.prompt, needs=["question", "passages", "answer"])
    questions = questions_of(args.questions)
    texts: Mapping[str, str] = read_json(args.run)["passages"]
    backend = backend_from_config(llm_cfg)
    cached = CachedLLM(backend, PromptCache(), options={"support_prompt": sc.prompt})
    out["llm"] = {**backend.identity(), **backend.settings(), "num_predict": sc.num_predict,
                  "top_logprobs": sc.top_logprobs}
    out.update(support_records(cached, template, answers["answers"], questions, texts, canaries=sc.canaries,
                               seed=sc.seed, num_predict=sc.num_predict, top_logprobs=sc.top_logprobs,
                               concurrency=llm_cfg.concurrency,
                               progress=lambda it: tqdm(it, desc=f"support@{args.name}", file=sys.stderr)))
    write_json(args.out, out)
    write_json(args.latency, cached.stats())
    supported = sum(row["verdict"] == "supported" for row in out["answers"])
    print(f"support@{args.name}: {supported}/{len(out['answers'])} supported, {out['invalid']} invalid, "
          f"{out['unscored']} without a score, {len(out['canaries'])} canaries", file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
