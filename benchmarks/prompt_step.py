"""How many prompt tokens llama.cpp should read per step (its ``n_ubatch``; the project keeps
llama.cpp's default, 512) for the default run's answers, side by side in one run, and whether it
changes anything but the time.

The prompts are the default run's own: for each config of ``generation.configs``, the seeded
sample of questions ``generate`` answers, each with the top ``generation.k`` passages of the
stored ranking (``data/build/runs/<config>.json``, so run ``dvc repro`` first), ``--prompts``
of them evenly spaced over all configs. Each setting answers them with the shipped LLM settings
(SmolLM2-135M, two copies of one thread each, greedy, ``generation.num_predict`` new tokens) and
the first reply token's ``--top-logprobs`` alternatives; no prompt cache. Settings take turns
within each of ``--rounds`` rounds, so a slower hour slows every setting alike. Reported per
setting: the best and median wall time of a round, its ratio to llama.cpp's default (512), and
how many answers and first-token log-probabilities (every alternative, exact float equality)
equal the default's.

Then (``--part history``) whether a reply depends on what the same copy read before: llama.cpp
keeps the tokens a prompt shares with the copy's previous prompt and reads only the rest, so where
the steps fall depends on the previous prompt. The canary prompts of ``judge_checks`` for the first
``--canary-questions`` canaried questions are judged in the stage's order on one copy, and each
again on a fresh context; reported per setting: how many first-token P(CORRECT) differ between the
two, and from llama.cpp's default read fresh.

The project keeps llama.cpp's default (512) because of this second part (benchmarks/RESULTS.md,
"Prompt steps of 128 tokens: faster, but not kept").

A setting written with an ``a`` (``128a``) keeps only whole steps of what the previous prompt left:
the shared tokens are cut back to a multiple of the step and the rest is read from there, so the
steps fall where a fresh read puts them whatever came before (``aligned_llama``), at the cost of
re-reading up to a step's worth of shared tokens. The history part also reports each setting's
time for the prompts in order. In the speed part, a prompt whose reply or log-probabilities differ
from the 512 setting's is answered again at 512 on a fresh context, to tell whether the difference
comes from history or from the step's arithmetic.

Usage:  .venv/bin/python benchmarks/prompt_step.py [--part speed|history|both] [--prompts 40]
        [--rounds 2] [--ubatch 512,128,128a] [--canary-questions 3]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rag_ablation.core.config import load_config  # noqa: E402
from rag_ablation.core.io import read_json, read_jsonl  # noqa: E402
from rag_ablation.data.questions import Question  # noqa: E402
from rag_ablation.evaluation.judges.grades import load_grades  # noqa: E402
from rag_ablation.evaluation.judges.judge_checks import canaries, canary_questions  # noqa: E402
from rag_ablation.evaluation.judges.judging import Item, grading_messages, label_probability  # noqa: E402
from rag_ablation.llm.client.llama_cpp import LlamaCppBackend, without_extra_buffer_types  # noqa: E402
from rag_ablation.llm.client.prompting import load_template  # noqa: E402
from rag_ablation.llm.generation import answer_prompts  # noqa: E402
from rag_ablation.support.sampling import stratified_sample  # noqa: E402

DEFAULT = "512"  # llama.cpp's own n_ubatch, read as llama-cpp-python reads it


def aligned_llama() -> type:
    """``llama_cpp.Llama`` whose prompt reading keeps only whole ``n_ubatch`` steps of the tokens
    the previous prompt left: before the first read of a prompt, the kept tokens are cut back to a
    multiple of the step (the cut ones are read again), so every step starts where it would on an
    empty context. The reads of generated tokens are left as they are."""
    from llama_cpp import Llama

    class AlignedLlama(Llama):
        _align = False

        def generate(self, tokens, *args, **kwargs):
            self._align = True
            try:
                return (yield from super().generate(tokens, *args, **kwargs))
            finally:
                self._align = False

        def eval(self, tokens):
            if self._align:
                self._align = False
                keep = self.n_tokens // self.context_params.n_ubatch * self.context_params.n_ubatch
                if keep < self.n_tokens:
                    tokens = [*self.input_ids[keep:self.n_tokens].tolist(), *tokens]
                    self.n_tokens = keep
            return super().eval(tokens)

    return AlignedLlama


class StepBackend(LlamaCppBackend):
    """The embedded backend with llama.cpp's prompt step set by ``setting``: ``n_ubatch``, and
    with an ``a`` after it, steps aligned as a fresh read aligns them (``aligned_llama``)."""

    def __init__(self, setting: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.ubatch = int(setting.rstrip("a"))
        self.aligned = setting.endswith("a")

    def _load(self) -> object:
        from llama_cpp import Llama

        cls = aligned_llama() if self.aligned else Llama
        with without_extra_buffer_types():
            return cls(model_path=str(self.model_path), n_threads=self.n_threads,
                       n_threads_batch=self.n_threads_batch, n_ctx=self.n_ctx, n_ubatch=self.ubatch,
                       seed=self.seed, verbose=False)


def default_prompts(limit: int) -> list[list[dict[str, str]]]:
    """The chat messages ``generate`` sends for the default run, ``limit`` of them evenly spaced
    (every one when ``limit`` is at least their number)."""
    params = load_config(REPO / "params.yaml")
    gen = params.generation
    template = load_template(REPO / "prompts", gen.prompt, needs=["passages", "question"])
    questions = [Question(**d) for d in read_jsonl(REPO / "data/build/questions.jsonl")]
    sample = stratified_sample(questions, gen.sample, seed=gen.seed)
    out = []
    for name in gen.configs:
        run = read_json(REPO / f"data/build/runs/{name}.json")
        ranking = {r["id"]: [x["chunk"] for x in r["ranking"]] for r in run["questions"]}
        out += answer_prompts(sample, ranking, run["passages"], template=template, k=gen.k)[1]
    step = max(1, -(-len(out) // limit))
    return out[::step][:limit]


def answer_all(setting: str, prompts: list[list[dict[str, str]]], *, num_predict: int,
               top_logprobs: int) -> tuple[float, list[tuple[str, object]]]:
    """Wall seconds to answer every prompt with two copies of one thread each (both loaded
    first), and each reply with its first token's alternatives, in prompt order."""
    llm = StepBackend(setting, n_threads=1, n_threads_batch=1, copies=2)
    with ThreadPoolExecutor(2) as pool:  # load both copies before the clock starts
        list(pool.map(lambda m: llm.chat(m, num_predict=1), prompts[:2]))
    start = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        gens = list(pool.map(lambda m: llm.chat(m, num_predict=num_predict, top_logprobs=top_logprobs), prompts))
    return time.perf_counter() - start, [(g.text, g.top_logprobs) for g in gens]


def canary_prompts(n_questions: int) -> list[list[dict[str, str]]]:
    """The LLM judge's canary prompts of ``judge_checks`` for its first ``n_questions`` canaried
    questions, in the stage's order."""
    params = load_config(REPO / "params.yaml")
    jc = params.judge
    template = load_template(REPO / "prompts", jc.prompt, needs=["question", "reference", "answer"])
    questions = {d["id"]: d for d in read_jsonl(REPO / "data/build/questions.jsonl")}
    graded = sorted({g.id for g in load_grades(REPO / "data/build/dataset/grades.jsonl")
                     if g.id in questions and Question(**questions[g.id]).answerable})
    out = []
    for qid in canary_questions(graded, jc.canary_sample, jc.bias_seed)[:n_questions]:
        q = questions[qid]
        for text in canaries(q["question"], q["answer"]).values():
            out.append(grading_messages(template, Item(q["question"], q["answer"], text)))
    return out


def p_correct(setting: str, prompts: list[list[dict[str, str]]], *, fresh: bool) -> list[float | None]:
    """P(CORRECT) from the first reply token of each prompt, on one copy in order (``fresh``
    False: each prompt reuses what it shares with the one before) or each on an emptied context."""
    llm = StepBackend(setting, n_threads=1, n_threads_batch=1)
    out = []
    for m in prompts:
        if fresh:
            llm._model().reset()
        g = llm.chat(m, num_predict=8, stop=("\n",), top_logprobs=20)
        out.append(label_probability(g.top_logprobs, yes="CORRECT", no="INCORRECT"))
    return out


def history(settings: list[str], n_questions: int) -> None:
    prompts = canary_prompts(n_questions)
    reference = p_correct(DEFAULT, prompts, fresh=True)
    print(f"\n{len(prompts)} canary prompts ({n_questions} questions)\n| n_ubatch | in order: P(CORRECT) "
          f"differing from fresh | differing from 512 fresh | in order, s |\n|---|---|---|---|")
    rows = {}
    for u in settings:
        fresh = reference if u == DEFAULT else p_correct(u, prompts, fresh=True)
        start = time.perf_counter()
        in_order = p_correct(u, prompts, fresh=False)
        seconds = time.perf_counter() - start
        rows[u] = {"prompts": len(prompts), "in_order_vs_fresh": sum(a != b for a, b in zip(in_order, fresh)),
                   "in_order_vs_512_fresh": sum(a != b for a, b in zip(in_order, reference)),
                   "in_order_s": round(seconds, 1),
                   "differences": [[i, b, a] for i, (a, b) in enumerate(zip(in_order, reference)) if a != b]}
        print(f"| {u} | {rows[u]['in_order_vs_fresh']} of {len(prompts)} | {rows[u]['in_order_vs_512_fresh']} "
              f"of {len(prompts)} | {rows[u]['in_order_s']} |", flush=True)
    print("\n" + json.dumps(rows, sort_keys=True))


def setting_list(text: str) -> list[str]:
    """``--ubatch``'s settings (``512,128,128a``), with 512 first if it is missing."""
    settings = [x.strip() for x in text.split(",") if x.strip()]
    for x in settings:
        if not x.rstrip("a").isdigit() or int(x.rstrip("a")) < 1 or x.count("a") > 1:
            raise SystemExit(f"--ubatch: {x!r} is not a step (a positive integer, optionally followed by 'a')")
    return settings if DEFAULT in settings else [DEFAULT, *settings]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--ubatch", default="512,128",
                    help="comma-separated n_ubatch values, 'a' after one for aligned steps; 512 is compared against")
    ap.add_argument("--top-logprobs", type=int, default=5)
    ap.add_argument("--part", choices=("speed", "history", "both"), default="both")
    ap.add_argument("--canary-questions", type=int, default=3)
    args = ap.parse_args()
    settings = setting_list(args.ubatch)
    if args.part in ("speed", "both"):
        speed(settings, args)
    if args.part in ("history", "both"):
        history(settings, args.canary_questions)


def fresh_answer(llm: StepBackend, prompt: list[dict[str, str]], *, num_predict: int,
                 top_logprobs: int) -> tuple[str, object]:
    """``llm``'s reply (and first-token alternatives) to ``prompt`` on an emptied context."""
    llm._model().reset()
    g = llm.chat(prompt, num_predict=num_predict, top_logprobs=top_logprobs)
    return g.text, g.top_logprobs


def speed(settings: list[str], args: argparse.Namespace) -> None:
    prompts = default_prompts(args.prompts)
    num_predict = load_config(REPO / "params.yaml").generation.num_predict
    times: dict[str, list[float]] = {u: [] for u in settings}
    replies: dict[str, list[tuple[str, object]]] = {}
    for r in range(args.rounds):
        order = settings if r % 2 == 0 else settings[::-1]
        for u in order:
            seconds, out = answer_all(u, prompts, num_predict=num_predict, top_logprobs=args.top_logprobs)
            times[u].append(seconds)
            if replies.setdefault(u, out) != out:
                print(f"n_ubatch {u}: round {r + 1} answered differently from round 1", flush=True)
            print(f"round {r + 1} n_ubatch {u}: {seconds:.1f} s", flush=True)
    base = replies[DEFAULT]
    rows = {}
    for u in settings:
        same_text = sum(a[0] == b[0] for a, b in zip(replies[u], base))
        same_lp = sum(a[1] == b[1] for a, b in zip(replies[u], base))
        rows[u] = {"best_s": round(min(times[u]), 1), "median_s": round(statistics.median(times[u]), 1),
                   "ratio_to_512": round(min(times[u]) / min(times[DEFAULT]), 3),
                   "same_answers": same_text, "same_logprobs": same_lp, "prompts": len(prompts)}
    print(f"\n{len(prompts)} prompts, {args.rounds} rounds\n| n_ubatch | best s | median s | best / 512 | "
          f"answers equal to 512's | first-token log-probs equal |\n|---|---|---|---|---|---|")
    for u, row in rows.items():
        print(f"| {u} | {row['best_s']} | {row['median_s']} | {row['ratio_to_512']} | {row['same_answers']} of "
              f"{row['prompts']} | {row['same_logprobs']} of {row['prompts']} |")
    differing = sorted({i for u in settings for i, (a, b) in enumerate(zip(replies[u], base)) if a != b})
    reference = StepBackend(DEFAULT, n_threads=1, n_threads_batch=1)
    fresh_512: dict[str, list[str]] = {}
    for i in differing:
        fresh = fresh_answer(reference, prompts[i], num_predict=num_predict, top_logprobs=args.top_logprobs)
        equal = fresh_512[str(i)] = [u for u in settings if replies[u][i] == fresh]
        print(f"prompt {i}: 512 on an empty context {'equals' if fresh == base[i] else 'differs from'} 512 in the "
              f"run; settings equal to it: {equal}", flush=True)
    print("\n" + json.dumps({**rows, "fresh_512": fresh_512}, sort_keys=True))


if __name__ == "__main__":
    main()
