"""How OpenMP's wait policy changes the heavy steps on a busy machine: llama.cpp decoding and
torch embedding, each on 2 threads, quiet and beside a CPU hog that holds one core, with
``OMP_WAIT_POLICY`` unset (OpenMP's default: worker threads spin while they wait) and set to
``PASSIVE`` (they sleep), side by side in one run.

Each measurement is its own Python process, so the policy is in the environment before the
libraries load (OpenMP reads it once, at start-up); the hog is ``python -c 'while True: pass'``,
started before the measurement and killed after it. Reported: tokens/s of SmolLM2-135M decoding
(the shipped GGUF, greedy, a fixed prompt, ``--tokens`` new tokens), whole answers per second
(``--answers`` prompts of five handbook passages each, 48 new tokens, as ``generate`` asks, for each
``--llm-settings`` THREADS/THREADS_BATCH/COPIES: decode threads, prompt threads, and copies of
the model answering at once from as many threads) and
passages/s of all-MiniLM-L6-v2 encoding ``--passages`` handbook chunks, best of ``--rounds``;
then the ratio busy / quiet per setting. Every measured process starts with both variables
removed and then the setting's own, so the stages' default (``GOMP_SPINCOUNT=10000``, set by
``stages/_env.py``) does not leak in (benchmarks/RESULTS.md, "OpenMP wait policy").

Usage:  .venv/bin/python benchmarks/thread_policy.py [--tokens 96] [--passages 256] [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
POLICIES: dict[str, dict[str, str]] = {
    "unset (spin)": {},
    "PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
    "GOMP_SPINCOUNT=10000": {"GOMP_SPINCOUNT": "10000"},
    "GOMP_SPINCOUNT=100000": {"GOMP_SPINCOUNT": "100000"},
}
"""The settings compared (environment added to the measured process): unset is libgomp's
default (spin about 300,000 times, then sleep), PASSIVE sleeps at once, GOMP_SPINCOUNT spins
that many times first."""
OMP_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")

LLAMA = """
import json, sys
from rag_ablation.llm.client.llama_cpp import LlamaCppBackend
llm = LlamaCppBackend(n_threads=2, n_threads_batch=2, n_ctx=1024)
msgs = [{"role": "user", "content": "Explain in detail how a retrieval-augmented generation pipeline works."}]
llm.chat(msgs, num_predict=4)
g = llm.chat(msgs, num_predict=int(sys.argv[1]))
print(json.dumps(g.completion_tokens / g.seconds))
"""

ANSWER = """
import json, sys, time
from rag_ablation.data.chunks import load_chunks
from rag_ablation.llm.client.llama_cpp import LlamaCppBackend
chunks = [c.text for c in load_chunks(sys.argv[2])]
n = int(sys.argv[1])
from concurrent.futures import ThreadPoolExecutor
threads, batch, copies = (int(x) for x in sys.argv[3].split("/"))
llm = LlamaCppBackend(n_threads=threads, n_threads_batch=batch, n_ctx=2048, copies=copies)
def prompt(i):
    passages = "\\n\\n".join(chunks[(5 * i + j) % len(chunks)][:900] for j in range(5))
    return [{"role": "user", "content": f"Answer from the passages only.\\n\\n{passages}\\n\\nQuestion {i}: what do "
                                        f"these passages say about the procedure?"}]
with ThreadPoolExecutor(copies) as pool:  # load every copy first
    list(pool.map(lambda i: llm.chat(prompt(n + i), num_predict=4), range(copies)))
start = time.perf_counter()
with ThreadPoolExecutor(copies) as pool:
    list(pool.map(lambda i: llm.chat(prompt(i), num_predict=48), range(n)))
print(json.dumps(n / (time.perf_counter() - start)))
"""

TORCH = """
import json, sys, time
from rag_ablation.data.chunks import load_chunks
from rag_ablation.retrieval.embeddings import encode, load_model
texts = [c.text for c in load_chunks(sys.argv[2])][: int(sys.argv[1])]
model = load_model("all-MiniLM-L6-v2", threads=2)
encode(model, texts[:32])
start = time.perf_counter()
encode(model, texts)
print(json.dumps(len(texts) / (time.perf_counter() - start)))
"""


def measure(code: str, args: list[str], policy: dict[str, str], busy: bool) -> float:
    env = {**{k: v for k, v in os.environ.items() if k not in OMP_VARS}, **policy}
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        time.sleep(0.5 if busy else 0)
        out = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=REPO, capture_output=True,
                             text=True, check=True)
        return float(out.stdout.strip().splitlines()[-1])
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--passages", type=int, default=256)
    ap.add_argument("--chunks", type=Path, default=REPO / "data/build/chunks/base.jsonl",
                    help="chunks to embed (`dvc repro index/dvc.yaml:chunk@base` writes the default)")
    ap.add_argument("--answers", type=int, default=6,
                    help="answers per measurement of the whole-answer step: five ~900-character passages and a "
                         "question each (about 1,000 prompt tokens), 48 new tokens, as `generate` does")
    ap.add_argument("--llm-settings", default="2/2/1",
                    help="comma-separated THREADS/THREADS_BATCH/COPIES of the whole-answer step (llm.threads, "
                         "llm.threads_batch, llm.concurrency: copies of the model answering at once), each its own row")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", default=None, help="comma-separated step names to run (default: all)")
    ap.add_argument("--policies", default=",".join(POLICIES), help="comma-separated labels of POLICIES to run")
    args = ap.parse_args()
    if not args.chunks.is_file():
        raise SystemExit(f"{args.chunks} does not exist: run `dvc repro index/dvc.yaml:chunk@base` first, or pass --chunks")
    whole = {f"llama.cpp whole answers, threads/batch/copies {t} (answers/s)":
             (ANSWER, [str(args.answers), str(args.chunks), t]) for t in args.llm_settings.split(",")}
    steps = {"llama.cpp decode (tokens/s)": (LLAMA, [str(args.tokens)]), **whole,
             "torch embedding (passages/s)": (TORCH, [str(args.passages), str(args.chunks)])}
    if args.steps:
        steps = {k: v for k, v in steps.items() if any(k.startswith(x) for x in args.steps.split(","))}
    results: dict[str, dict[str, dict[str, float]]] = {}
    for step, (code, extra) in steps.items():
        for label in args.policies.split(","):
            policy = POLICIES[label]
            for busy in (False, True):
                best = max(measure(code, extra, policy, busy) for _ in range(args.rounds))
                results.setdefault(step, {}).setdefault(label, {})["busy" if busy else "quiet"] = best
                print(f"{step:<30} {label:<13} {'beside a hog' if busy else 'quiet':<13} {best:8.2f}", flush=True)
    print("\n| step | OpenMP setting | quiet | beside a CPU hog | busy / quiet |\n|---|---|---|---|---|")
    for step, by_policy in results.items():
        for label, r in by_policy.items():
            print(f"| {step} | {label} | {r['quiet']:.2f} | {r['busy']:.2f} | {r['busy'] / r['quiet']:.2f} |")
    print("\n" + json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
