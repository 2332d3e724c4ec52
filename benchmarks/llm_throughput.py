"""LLM answers per second through the concurrent path (``rag_ablation.llm.client.concurrent.chat_many``
+ ``OpenAICompatBackend`` + the SQLite prompt cache) at concurrency 1, 2, 4 and 8, side by side
in one run.

The server is the loopback stub of ``tests/openai_stub.py``: an OpenAI-compatible HTTP server
on 127.0.0.1 that answers every request after a fixed delay (``--delay``, default 0.1 s) and
answers many requests at once, like a serving engine with spare batch slots. So the numbers
measure the client: how much of the ideal ``concurrency x`` speed-up the pipeline's own code
(HTTP client, threads, one committed cache write per answer) keeps. They are not a model's
speed. Every run starts from an empty cache, and the answers of every concurrency must equal
those of concurrency 1, in the same order (the script exits 1 otherwise).

Usage:  .venv/bin/python benchmarks/llm_throughput.py [--prompts 48] [--delay 0.1] [--rounds 2]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from openai_stub import MODEL, StubServer  # noqa: E402

from rag_ablation.llm.client.concurrent import chat_many  # noqa: E402
from rag_ablation.llm.client.openai_compat import OpenAICompatBackend  # noqa: E402
from rag_ablation.llm.client.prompt_cache import CachedLLM, PromptCache  # noqa: E402

LEVELS = (1, 2, 4, 8)


def run_once(url: str, prompts: list, concurrency: int, folder: Path) -> tuple[float, list[str]]:
    """Seconds to answer every prompt from an empty cache, and the answers."""
    with PromptCache(folder / f"c{concurrency}-{time.monotonic_ns()}.sqlite") as cache:
        llm = CachedLLM(OpenAICompatBackend(MODEL, url, timeout=30), cache)
        llm.key(prompts[0], num_predict=32)  # the model listing, outside the timed part
        start = time.perf_counter()
        results = chat_many(llm, prompts, num_predict=32, concurrency=concurrency)
        seconds = time.perf_counter() - start
        assert llm.stats()["misses"] == len(prompts) and len(cache) == len(prompts)
    return seconds, [g.text for g, _ in results]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=48)
    ap.add_argument("--delay", type=float, default=0.1, help="the stub's seconds per request")
    ap.add_argument("--rounds", type=int, default=2, help="rounds over all levels; the best round counts")
    args = ap.parse_args()
    prompts = [[{"role": "user", "content": f"question {i}: what does section {i} say?"}] for i in range(args.prompts)]
    best: dict[int, float] = {}
    answers: dict[int, list[str]] = {}
    with StubServer(delay=lambda body: args.delay) as stub, tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for n in LEVELS:  # interleaved, so machine noise hits every level alike
                seconds, texts = run_once(stub.url, prompts, n, Path(tmp))
                best[n] = min(best.get(n, float("inf")), seconds)
                answers.setdefault(n, texts)
                if texts != answers[1]:
                    print(f"error: answers at concurrency {n} differ from concurrency 1", file=sys.stderr)
                    return 1
    print(f"{args.prompts} prompts, stub delay {args.delay:g} s per request, best of {args.rounds} round(s)")
    print(f"{'concurrency':>11} {'seconds':>8} {'answers/s':>10} {'vs 1':>6} {'ideal':>6} {'of ideal':>9}")
    for n in LEVELS:
        rate = args.prompts / best[n]
        ratio = best[1] / best[n]
        print(f"{n:>11} {best[n]:>8.2f} {rate:>10.1f} {ratio:>5.2f}x {n:>5}x {ratio / n:>8.0%}")
    print("answers identical and in the same order at every concurrency: yes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
