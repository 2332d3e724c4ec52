"""Seconds per answer and peak memory of the embedded answer models, on the same prompts.

SmolLM2-135M (the packaged default, ``llm.model: null``) and the pinned models of
``rag-ablation models`` (``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b``) answer the same
handbook prompts through the project's llama.cpp backend (``LlamaCppBackend``, the path
``generate@CONFIG`` takes, without the prompt cache). A prompt is the answer template
(``prompts/answer_escape_hatch.txt``) filled with a question of ``data/questions/handbook.jsonl``
and the top ``k`` passages of the stored dense ranking (``data/build/runs/dense.json``), so the
workspace's ``retrieve@dense`` must have run.

Each model runs in its own child process, so its peak RSS (``VmHWM``) is its own: the load
(seconds to read the GGUF), then every prompt once (greedy, ``--num-predict`` tokens at most),
timed one by one. A pinned model not fetched yet is reported as skipped.

Usage:  .venv/bin/python benchmarks/answer_models.py [--questions 3] [--threads 2] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODELS = ("smollm2", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def prompts(n: int, k: int) -> list[dict]:
    from rag_ablation.llm.client.prompting import fill, format_passages, load_template

    template = load_template(REPO / "prompts", "answer_escape_hatch", needs=("passages", "question"))
    run = json.loads((REPO / "data/build/runs/dense.json").read_text(encoding="utf-8"))
    questions = {}
    for line in (REPO / "data/questions/handbook.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            questions[q["id"]] = q
    out = []
    for r in run["questions"]:
        q = questions.get(r["id"])
        if q is None or not r.get("answerable", True):
            continue
        ids = [x["chunk"] for x in r["ranking"][:k]]
        text = fill(template, passages=format_passages([run["passages"][c] for c in ids]), question=q["question"])
        out.append({"id": q["id"], "question": q["question"], "reference": q.get("answer", ""), "prompt": text})
        if len(out) == n:
            break
    return out


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(model: str, prompt_file: Path, threads: int, num_predict: int) -> None:
    """Run one model on the prompts; print one JSON line."""
    from rag_ablation.llm.client.base import LLMUnavailable
    from rag_ablation.llm.client.llama_cpp import LlamaCppBackend
    from rag_ablation.llm.client.prompting import user_messages

    items = json.loads(prompt_file.read_text(encoding="utf-8"))
    try:
        backend = LlamaCppBackend(None if model == "smollm2" else model, n_threads=threads,
                                  n_threads_batch=threads, n_ctx=4096)
    except LLMUnavailable as e:
        print(json.dumps({"model": model, "skipped": str(e)}))
        return
    rss_before = peak_rss_mib()
    start = time.perf_counter()
    backend._model()
    load = time.perf_counter() - start
    answers = []
    load_avg = Path("/proc/loadavg").read_text().split()[0]
    for item in items:
        cpu = time.process_time()
        gen = backend.chat(user_messages(item["prompt"]), num_predict=num_predict)
        answers.append({"id": item["id"], "seconds": gen.seconds, "cpu_seconds": time.process_time() - cpu,
                        "prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
                        "answer": gen.text.strip()})
    print(json.dumps({"model": model, "file": str(backend.model_path), "size_mib": backend.model_path.stat().st_size
                      / 2**20, "load_seconds": load, "rss_before_load_mib": rss_before,
                      "peak_rss_mib": peak_rss_mib(), "load_avg": f"{load_avg} -> "
                      f"{Path('/proc/loadavg').read_text().split()[0]}", "answers": answers}))


def report(results: list[dict], items: list[dict], threads: int, num_predict: int, load_avg: str) -> str:
    lines = [f"# Answer models: seconds per answer and peak RSS ({len(items)} handbook prompts)", "",
             f"llama.cpp through `LlamaCppBackend`, n_threads = n_threads_batch = {threads}, n_ctx 4096, greedy, "
             f"at most {num_predict} new tokens; each model in its own process. Load average before: {load_avg}.",
             "", "| model | GGUF MiB | load s | s/answer (mean) | s per prompt | CPU s/answer | prompt tok (mean) | "
             "answer tok (mean) | tok/s generated | peak RSS MiB | load avg (1 min) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "skipped" in r:
            lines.append(f"| {r['model']} | skipped: {r['skipped']} | | | | | | | | | |")
            continue
        a = r["answers"]
        secs = [x["seconds"] for x in a]
        ptok = sum(x["prompt_tokens"] for x in a) / len(a)
        ctok = sum(x["completion_tokens"] for x in a) / len(a)
        lines.append(f"| {r['model']} | {r['size_mib']:,.0f} | {r['load_seconds']:.1f} | {sum(secs) / len(secs):.1f} | "
                     f"{', '.join(f'{s:.1f}' for s in secs)} | {sum(x['cpu_seconds'] for x in a) / len(a):.1f} | "
                     f"{ptok:.0f} | {ctok:.0f} | {sum(x['completion_tokens'] for x in a) / sum(secs):.1f} | "
                     f"{r['peak_rss_mib']:,.0f} | {r['load_avg']} |")
    lines += ["", "tok/s generated = answer tokens / answer seconds (prompt reading included). CPU s/answer is the "
              "process's CPU time (both threads) per answer: less sensitive than wall time to other processes "
              "on the cores. Load avg: the 1-minute load average when the model's answers started -> ended.",
              "", "## Answers", ""]
    for i, item in enumerate(items):
        lines += [f"**{item['id']}**: {item['question']}", f"- reference: {item['reference']}"]
        for r in results:
            if "skipped" not in r:
                lines.append(f"- {r['model']}: {' '.join(r['answers'][i]['answer'].split())}")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--k", type=int, default=5, help="passages per prompt (generation.k)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--num-predict", type=int, default=64, help="generation.num_predict")
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--out", type=Path, default=None, help="also write the markdown table here")
    ap.add_argument("--child", nargs=2, metavar=("MODEL", "PROMPTS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), args.threads, args.num_predict)
        return
    items = prompts(args.questions, args.k)
    prompt_file = Path("/tmp") / f"answer_models_prompts_{time.time_ns()}.json"
    prompt_file.write_text(json.dumps(items), encoding="utf-8")
    load_avg = Path("/proc/loadavg").read_text().split()[:3]
    results = []
    try:
        for model in args.models:
            print(f"{model} ...", file=sys.stderr, flush=True)
            proc = subprocess.run([sys.executable, __file__, "--threads", str(args.threads), "--num-predict",
                                   str(args.num_predict), "--child", model, str(prompt_file)],
                                  capture_output=True, text=True, cwd=REPO)
            if proc.returncode != 0:
                sys.exit(f"{model} failed:\n{proc.stderr[-2000:]}")
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    finally:
        prompt_file.unlink(missing_ok=True)
    text = report(results, items, args.threads, args.num_predict, " ".join(load_avg))
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
