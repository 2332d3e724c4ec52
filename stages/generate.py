"""Stage `generate@NAME`: answers to every question from the stored ranking of retrieval
config NAME, with the LLM of the `llm:` block and the prompt template `generation.prompt`.

Writes the answers (per question: answer, passage ids, prompt hash, token counts; the LLM
identity, prompt name and settings inside the file) and a leaf latency file with time per
answer, tokens per second and the prompt cache's calls, hits and misses. Every answer is in the
prompt cache the moment it is made, so a killed run loses nothing and a rerun resumes. A config
whose retrieval is unavailable gets status `unavailable` and no answers. An app that answers
itself (`apps.NAME` with `call: ask` or an answers file) keeps its own answers, with the passages
it says it used, on the same sample of questions: no LLM is called.
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
from rag_ablation.llm.generation import answer_questions, app_answer_records, generation_latency
from rag_ablation.llm.client.prompt_cache import NO_CALLS, CachedLLM, PromptCache
from rag_ablation.llm.client.prompting import load_template
from rag_ablation.data.questions import Question
from rag_ablation.support.sampling import stratified_sample


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--run", type=Path, required=True, help="the retrieve@NAME output")
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--prompts", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--latency", type=Path, required=True)
    args = ap.parse_args()
    params = load_config()
    gen = params.generation
    prompt_name, k, num_predict = gen.prompt, gen.k, gen.num_predict
    template = load_template(args.prompts, prompt_name, needs=["passages", "question"])
    run = read_json(args.run)
    questions = [Question(**d) for d in read_jsonl(args.questions)]
    sample = stratified_sample(questions, gen.sample, seed=gen.seed)
    out = {"config": args.name, "prompt": prompt_name, "k": k, "num_predict": num_predict, "stop": list(gen.stop),
           "sample": {"size": len(sample), "of": len(questions), "seed": gen.seed},
           "status": run["status"], "reason": run["reason"], "llm": None, "answers": []}
    if run["status"] == "ok" and "answers" in run:  # an app that answers itself: its answers, no LLM
        out.update(llm={"app": args.name}, answers=app_answer_records(sample, run["answers"]))
        write_json(args.out, out)
        write_json(args.latency, NO_CALLS)
        print(f"generate@{args.name}: {len(out['answers'])} answer(s) of the app itself", file=sys.stderr)
        return
    if run["status"] == "ok" and not params.llm.enabled:
        out.update(status="unavailable", reason="answers need an LLM, and llm.backend is none")
    if out["status"] != "ok":
        runner.write_unavailable(out, out=args.out, latency=args.latency, no_work=NO_CALLS,
                                 label=f"generate@{args.name}")
        return
    backend = backend_from_config(params.llm)
    llm = CachedLLM(backend, PromptCache())
    rankings = {r["id"]: [x["chunk"] for x in r["ranking"]] for r in run["questions"]}
    records, timings = answer_questions(
        sample, rankings, run["passages"], llm=llm, template=template, k=k,
        num_predict=num_predict, stop=gen.stop, concurrency=params.llm.concurrency,
        progress=lambda it: tqdm(it, desc=f"generate@{args.name}", file=sys.stderr))
    out.update(llm={**backend.identity(), **backend.settings()}, answers=records)
    write_json(args.out, out)
    write_json(args.latency, {**llm.stats(), **generation_latency(timings)})
    s = llm.stats()
    print(f"generate@{args.name}: LLM calls {s['calls']}, cache hits {s['hits']}, misses {s['misses']}", file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
