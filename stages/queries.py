"""Stage `queries@NAME`: the text each question is retrieved with, under query transform NAME
(`query_transforms.NAME` in params.yaml: kind none | rewrite | hyde, prompt, num_predict).

A transform no running config searches with (the index_plan stage's `--plan` file says so)
asks the LLM nothing and writes status `unavailable` with the reason. LLM calls go through the
prompt cache; calls, hits and misses are printed and written, with
the LLM time, to a leaf latency file.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from rag_ablation.core import runner
from rag_ablation.llm.client.prompt_cache import NO_CALLS, CachedLLM, PromptCache
from rag_ablation.core.io import read_jsonl, write_json
from rag_ablation.core.config import load_config
from rag_ablation.llm.client.registry import backend_from_config
from rag_ablation.llm.client.prompting import load_template
from rag_ablation.data.questions import Question
from rag_ablation.llm.transforms import transform_queries
from rag_ablation.retrieval.plan import transform_unused
from rag_ablation.support.timing import percentiles_ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--prompts", type=Path, required=True)
    ap.add_argument("--plan", type=Path, default=None,
                    help="index_plan's file of this transform (dvc.yaml passes it); without it the transform runs")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--latency", type=Path, required=True)
    args = ap.parse_args()
    params = load_config()
    spec = params.transform(args.name)
    kind = spec.kind
    questions = [Question(**d) for d in read_jsonl(args.questions)]
    unused = transform_unused(args.plan) if args.plan is not None else None
    if unused is not None or (kind != "none" and not params.llm.enabled):
        reason = unused or f"query transform {args.name!r} ({kind}) needs an LLM, and llm.backend is none"
        runner.write_unavailable({"transform": args.name, "kind": kind, "status": "unavailable", "reason": reason,
                                  "queries": {}, "empty_outputs": []},
                                 out=args.out, latency=args.latency, no_work=NO_CALLS, label=f"queries@{args.name}")
        return
    llm = None
    template = None
    if kind != "none":
        template = load_template(args.prompts, str(spec.prompt), needs=["question"])
        llm = CachedLLM(backend_from_config(params.llm), PromptCache())
    result = transform_queries(questions, kind=kind, template=template, llm=llm,
                               num_predict=spec.num_predict, concurrency=params.llm.concurrency,
                               progress=lambda it: tqdm(it, desc=f"queries@{args.name}", file=sys.stderr))
    if result.empty_outputs:
        print(f"warning: {len(result.empty_outputs)} empty LLM output(s), original question kept: "
              f"{', '.join(result.empty_outputs)}", file=sys.stderr)
    write_json(args.out, {"transform": args.name, "kind": kind, "status": "ok", "reason": None,
                          "queries": result.queries, "empty_outputs": result.empty_outputs})
    stats = llm.stats() if llm else NO_CALLS
    write_json(args.latency, {**stats, "llm": percentiles_ms([s for s in result.seconds if s > 0])})
    print(f"queries@{args.name}: LLM calls {stats['calls']}, cache hits {stats['hits']}, misses {stats['misses']}",
          file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
