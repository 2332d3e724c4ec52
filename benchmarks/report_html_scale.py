"""metrics/report.html at scale: a synthetic 1,000 questions x 20 configs page, built and opened
in headless Chromium (network off, DevTools protocol over a pipe: tests/chromium_cdp.py).

Builds the inputs in memory (4 slices, 2 chunkings of 3,000 chunks of ~500 characters, top-10
rankings, each config's hit@5 a seeded coin with its own rate; 2 answered configs), runs the
library (`html_data.page_data`, `html.render`) as the `report_html` stage does, writes the page
and reports its size and build time, then opens it ``--rounds`` times in a fresh browser and
reports, per round: when every chart had drawn (``data-ready-ms``, milliseconds from navigation
start, which includes parsing the page, the JSON and drawing the grid), the time to render one
question's section (20 configs x 5 passages, span highlighted) and to apply the "changed only"
filter. With ``--example`` it measures the example's page as well (built from the committed
pipeline outputs under data/build and metrics/, when they are there).

Usage:  .venv/bin/python benchmarks/report_html_scale.py [--questions 1000] [--configs 20] [--rounds 3] [--example]
"""
from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from chromium_cdp import CHROMIUM, Chromium, outside  # noqa: E402
from score_rows import config_rows  # noqa: E402

from rag_ablation.core.config import load_config  # noqa: E402
from rag_ablation.data.questions import Question  # noqa: E402
from rag_ablation.evaluation.report import html, html_data  # noqa: E402
from rag_ablation.evaluation.statistics.stats import analyze, to_metrics  # noqa: E402

SLICES = ("main", "identifier", "paraphrase", "unanswerable")
WORDS = ("gateway", "ledger", "settlement", "agency", "validator", "rollback", "deploy", "tap", "fare", "runbook",
         "policy", "incident", "postmortem", "budget", "latency", "cache", "queue", "retry", "token", "region")


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def synthetic(folder: Path, n_questions: int, n_configs: int, seed: int = 0):
    """(params, Inputs) of a synthetic project (module docstring)."""
    rng = random.Random(seed)
    spec = yaml.safe_load((REPO / "tests/fixtures/params.yaml").read_text())
    names = [f"c{i:02d}" for i in range(n_configs)]
    spec["retrieval"] = {n: {"chunking": "base" if i % 2 == 0 else "heading", "method": "dense", "query": "none"}
                         for i, n in enumerate(names)}
    spec["generation"]["configs"] = names[:2]
    spec["gate"]["configs"] = names[:1]
    spec["stats"].update(baseline=names[0], resamples=1000, subsample_draws=100)
    (folder / "params.yaml").write_text(yaml.safe_dump(spec))
    params = load_config(folder / "params.yaml")
    chunks = {ch: {f"d{j // 30}.md#{j % 30}": sentence(rng, 80) for j in range(3000)} for ch in ("base", "heading")}
    ids = list(chunks["base"])
    questions, spans = [], {}
    for q in range(n_questions):
        s = SLICES[q % 4]
        qid = f"{s}-{q:04d}"
        if s == "unanswerable":
            questions.append(Question(qid, sentence(rng, 12) + "?", None, None, "none", s, "t"))
            continue
        gold = ids[rng.randrange(len(ids))]
        span = " ".join(chunks["base"][gold].split()[10:22])
        spans[qid] = gold
        questions.append(Question(qid, sentence(rng, 12) + "?", gold.split("#")[0], span, sentence(rng, 8), s, "t"))
    runs, rows = {}, []
    for name in names:
        rate = 0.55 + 0.4 * rng.random()
        hits, recs, passages = [], [], {}
        for q in questions:
            top = rng.sample(ids, 10)
            hit = q.answerable and rng.random() < rate
            if hit:
                top[rng.randrange(5)] = spans[q.id]
            elif q.answerable and spans[q.id] in top[:5]:
                top.remove(spans[q.id])
                top.append(ids[0] if ids[0] != spans[q.id] else ids[1])
            recs.append({"id": q.id, "answerable": q.answerable,
                         "ranking": [{"chunk": c, "score": round(1 - 0.03 * r, 4)} for r, c in enumerate(top)]})
            passages.update({c: chunks[params.config(name).chunking][c] for c in top})
            if q.answerable:
                hits.append((q, top.index(spans[q.id]) + 1 if spans[q.id] in top else None))
        runs[name] = {"status": "ok", "reason": None, "questions": recs, "passages": passages}
        rows += config_rows(name, [r for _, r in hits], ids=[q.id for q, _ in hits],
                            slices=[q.slice for q, _ in hits], docs=[q.doc or "" for q, _ in hits])
    labels = {ch: {q.id: [spans[q.id]] for q in questions if q.answerable} for ch in ("base", "heading")}
    answers = {n: {"status": "ok", "reason": None,
                   "answers": [{"id": q.id, "answer": sentence(rng, 20)} for q in questions[:200]]} for n in names[:2]}
    stats = to_metrics(analyze(rows, [], configs=names, answered=[], settings=params.stats))
    judge = {"configs": {}, "calibration": {}, "canaries": {}, "bias": {}, "grades": {}}
    inputs = html_data.Inputs(stats=stats, judge=judge, rows=rows, questions=questions, audit=[], runs=runs,
                              labels=labels, answers=answers, verdicts=[],
                              p95_ms={n: 0.1 + rng.random() * 20 for n in names}, answer_s={}, sweep=None)
    return params, inputs


def measure(page: Path, rounds: int, profile: Path) -> list[dict]:
    out = []
    for r in range(rounds):
        with Chromium(CHROMIUM, profile / f"r{r}") as browser:
            browser.open(page.as_uri())
            browser.wait_for("document.body && document.body.getAttribute('data-ready') === '1'", timeout=300)
            ready = int(browser.evaluate("document.body.getAttribute('data-ready-ms')"))
            question = browser.evaluate(
                "(() => { const id = window.reportData.questions[1].id; const t = performance.now();"
                " window.renderQuestion(id); return performance.now() - t; })()")
            passages = browser.evaluate("document.querySelectorAll('#question .passage').length")
            changed = browser.evaluate(
                "(() => { const c = document.getElementById('changed-only'); const t = performance.now();"
                " c.checked = true; c.dispatchEvent(new Event('change')); return performance.now() - t; })()")
            rows = browser.evaluate("document.querySelectorAll('#grid-table tr.qrow').length")
            left = outside(browser.requests())
            out.append({"ready_ms": ready, "question_ms": round(question, 1), "passages": passages,
                        "filter_ms": round(changed, 1), "rows": rows, "outside": len(left)})
    return out


def report(label: str, size: int, build_s: float, runs: list[dict]) -> None:
    print(f"\n{label}: {size / 1e6:.2f} MB, built in {build_s:.2f} s")
    print("round | ready (ms) | one question (ms) | passages | 'changed only' (ms) | grid rows | requests out")
    for i, r in enumerate(runs):
        print(f"{i + 1} | {r['ready_ms']} | {r['question_ms']} | {r['passages']} | {r['filter_ms']} | {r['rows']} | "
              f"{r['outside']}")
    print(f"median ready: {statistics.median(r['ready_ms'] for r in runs)} ms")


def example_page(folder: Path) -> tuple[Path, float] | None:
    if not (REPO / "data/build/runs").is_dir():
        return None
    out = folder / "example.html"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(REPO / "stages/report_html.py"), "--stats", "metrics/stats.json",
                    "--judge", "metrics/judge_detail.json", "--scores", "metrics/scores/retrieval.csv",
                    "--verdicts", "metrics/scores/verdicts.csv", "--questions", "data/build/questions.jsonl",
                    "--audit", "data/build/dataset/audit.jsonl", "--runs", "data/build/runs", "--labels",
                    "data/build/labels", "--answers", "data/build/answers", "--latency", "metrics/latency",
                    "--sweep", "metrics/sweep.json", "--out", str(out)], cwd=REPO, check=True)
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--configs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--example", action="store_true", help="measure the example's page too")
    args = ap.parse_args()
    if CHROMIUM is None:
        sys.exit("Chromium is not installed (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="report-html-bench-") as tmp:
        folder = Path(tmp)
        params, inputs = synthetic(folder, args.questions, args.configs)
        t0 = time.perf_counter()
        page = html.render(html_data.page_data(inputs, params))
        build_s = time.perf_counter() - t0
        out = folder / "synthetic.html"
        out.write_text(page, encoding="utf-8")
        report(f"synthetic, {args.questions} questions x {args.configs} configs", out.stat().st_size, build_s,
               measure(out, args.rounds, folder / "profiles"))
        if args.example:
            found = example_page(folder)
            if found is None:
                print("\nexample: no pipeline outputs under data/build (run `make run` first)")
            else:
                page_path, seconds = found
                report("example (metrics/ and data/build/)", page_path.stat().st_size, seconds,
                       measure(page_path, args.rounds, folder / "profiles-example"))


if __name__ == "__main__":
    main()
