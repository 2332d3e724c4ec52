"""metrics/report.html (rag_ablation.evaluation.report.html, html_data, html_assets and
stages/report_html.py) on a tiny hand-built project: expected values from the formulas, text
escaped everywhere, nothing loaded from outside the page, byte-identical reruns, and one clear
message for a missing or damaged input. ``tiny_project`` is shared with test_html_browser.py."""
from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from score_rows import config_rows, hits_to_ranks, write_retrieval

from conftest import FIXTURES, ROOT
from rag_ablation.core.config import StatsConfig, load_config
from rag_ablation.core.errors import InvalidData, MissingInput
from rag_ablation.evaluation.report import html, html_assets, html_data
from rag_ablation.evaluation.report.plot_data import TEST_TEXTS
from rag_ablation.evaluation.statistics.answer_verdicts import measure_comparison
from rag_ablation.evaluation.statistics.stats import analyze, to_metrics
from rag_ablation.evaluation.statistics.sweep import pareto_front

EVIL = "<script>document.title='pwned'</script> & </script><!-- \u2028"
"""Passage text that would break the page if it were ever written as HTML."""
SLICES = ["identifier"] * 4 + ["paraphrase"] * 4
HITS = {  # hit@5 per answerable question q0..q7
    "dense": [1, 1, 0, 0, 1, 0, 1, 0],
    "bm25": [1, 1, 1, 1, 1, 0, 1, 0],  # differs from dense at q2, q3
    "hybrid": [1, 1, 0, 0, 1, 0, 1, 0],  # as dense
    "rewrite": [0, 1, 0, 0, 1, 0, 1, 1],  # differs at q0, q7
}  # hybrid_rerank (in the fixture params) has an unavailable run
CHANGED = {"q0", "q2", "q3", "q7"}
P95 = {"dense": 2.0, "bm25": 5.0, "hybrid": 3.0, "rewrite": 50.0}
F1 = {"bm25": [0.0, 0.1, 0.2, 0.0, 0.3, 0.1, 0.0, 0.2], "hybrid": [0.5, 0.4, 0.6, 0.3, 0.7, 0.4, 0.5, 0.6]}
"""Token F1 of the answered configs' answers to q0..q7 (hybrid better on every one)."""


def measure_block() -> dict:
    """judge_eval's ``measure_comparison`` of the fixture, written by the library: hybrid against
    bm25 on token F1, and a judge score that is unavailable (its reason carries markup)."""
    rows = [{"config": c, "id": f"q{i}", "slice": SLICES[i], "doc": f"d{i}", "answerable": 1, "token_f1": v,
             "llm_score": None} for c, values in F1.items() for i, v in enumerate(values)]
    out = measure_comparison(rows, ["bm25", "hybrid"], measures=["token_f1"], settings=StatsConfig(resamples=200))
    out["measures"]["llm_score"] = {"status": "unavailable", "label": "LLM judge P(correct)", "reason": "no score <b>x</b>"}
    return out


def span(i: int) -> str:
    return f"the span of question {i} sits in its chunk"


def chunk_text(chunking: str, i: int) -> str:
    head = "Title > Section\n" if chunking == "heading" else ""
    if i == 0:
        return f"{head}Before {EVIL} and then {span(0)}, after."
    return head + (f"Some words first. {span(i)}. Tail words." if i < 8 else f"Filler passage {i} about nothing.")


DEEP = ("dense", 2)
"""dense misses q2 in its top 5, but ranks q2's relevant chunk 7th (every other miss ranks it nowhere)."""
SEARCHED = {"q0": "rewritten: what sits in chunk 0 <i>?</i>", "q3": "rewritten three"}
"""The rewrite transform's texts that differ from their question (the others are the question)."""


def ranking(hit: bool, i: int, deep: bool = False) -> list[dict]:
    ids = [f"t/d.md#{j}" for j in range(10, 20)]
    if hit:
        ids = ids[:2] + [f"t/d.md#{i}"] + ids[2:9]
    elif deep:
        ids = ids[:6] + [f"t/d.md#{i}"] + ids[6:9]
    return [{"chunk": c, "score": round(0.9 - 0.05 * r, 4)} for r, c in enumerate(ids)]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def graders_block() -> dict:
    """judge_eval's ``graders`` (grader_agreement.grader_detail) for 8 answers graded by two: 4
    both correct, 1 only the first, 3 both incorrect: kappa (7/8 - 1/2) / (1 - 1/2) = 0.75; the
    one disagreement's note holds markup, which must stay text."""
    overall = {"n": 8, "confidence": 0.95, "seed": 0,
               "kappa": {"estimate": 0.75, "low": 0.4, "high": 1.0, "n": 8, "dropped": 0, "n_resamples": 50,
                         "reason": None},
               "accuracy": {"estimate": 0.875, "low": 0.625, "high": 1.0, "n": 8, "dropped": 0, "n_resamples": 50,
                            "reason": None},
               "table": {"both_correct": 4, "first_only": 1, "second_only": 0, "both_incorrect": 3}}
    return {"status": "ok", "graders": ["ana", "bo"], "overall": overall, "configs": {"bm25": overall},
            "disagreements": [{"config": "bm25", "id": "q2", "answer_sha256": "a" * 64,
                               "first": {"grader": "ana", "verdict": "correct", "note": EVIL},
                               "second": {"grader": "bo", "verdict": "incorrect", "note": ""},
                               "adjudicated": None}],
            "adjudicated": 0}


def support_block() -> dict:
    """judge_eval's ``support`` block (``judges.support_eval.evaluate_support``'s schema) for 12
    hand support grades: lexical_support calibrated, llm_support not (its reason holds markup,
    which must stay text); lexical_support accepts 2 of 4 ``unrelated_copy`` canaries, a flag."""
    kappa = {"estimate": 0.5, "low": 0.1, "high": 0.8, "n": 12, "min": 0.45, "max": 0.55, "seeds": 50,
             "by_seed": [0.5] * 50}
    rate = {"shown_copy": {"accepted": 1.0, "accepted_count": 4, "expected_accept": True, "high": 1.0, "invalid": 0,
                           "kind": "shown_copy", "low": 0.51, "n": 4, "wrong": 0.0},
            "unrelated_copy": {"accepted": 0.5, "accepted_count": 2, "expected_accept": False, "high": 0.85,
                               "invalid": 1, "kind": "unrelated_copy", "low": 0.15, "n": 4, "wrong": 0.5}}
    return {"status": "ok", "positive": "supported", "levels": {"supported": 5, "partly": 3, "not": 4},
            "calibration": {
                "lexical_support": {"status": "ok", "n": 10, "supported": 4, "unscored": 2,
                                    "auc": {"estimate": 0.8, "low": 0.6, "high": 0.95, "n": 10}, "kappa": kappa,
                                    "threshold": 0.625},
                "llm_support": {"status": "unavailable", "reason": "3 scored support grade(s), fewer than 10 <b>x</b>",
                                "n": 3, "supported": 1, "unscored": 9}},
            "primary": "lexical_support", "source": "hand grades, else lexical_support",
            "canaries": {"status": "ok", "scorers": {"lexical_support": rate},
                         "flags": [{"scorer": "lexical_support", "kind": "unrelated_copy", "against": 2, "n": 4,
                                    "expected_accept": False}]}}


def support_entry() -> dict:
    """An answered config's ``support`` entry: its shares and the split tables by hand grades and
    by the judge (``two_by_two.judge.source`` names the judge)."""
    def split(cells_retrieved, cells_missed, unknown):
        names = ("correct_supported", "correct_unsupported", "correct_support_unknown", "wrong")
        return {"retrieved": dict(zip(names, cells_retrieved)), "missed": dict(zip(names, cells_missed)),
                "unknown": unknown, "unanswerable_skipped": 1, "markdown": "| table |"}
    return {"hand": {"estimate": 0.5, "low": 0.2, "high": 0.8, "supported": 3, "n": 6},
            "judged": {"estimate": 0.625, "low": 0.3, "high": 0.86, "supported": 5, "n": 8},
            "split": {"hand": split((2, 1, 0, 1), (0, 0, 0, 2), 0), "judge": split((2, 0, 1, 2), (1, 0, 0, 2), 1)}}


def tiny_project(d: Path) -> Path:
    """A project folder holding every input of the report_html stage, built by hand."""
    shutil.copy(FIXTURES / "params.yaml", d / "params.yaml")
    params = load_config(d / "params.yaml")
    questions = [{"id": f"q{i}", "question": f"What is in chunk {i}? <b>{i}</b>", "doc": "t/d.md", "span": span(i),
                  "answer": f"answer {i}", "slice": SLICES[i], "track": "t"} for i in range(8)]
    questions.append({"id": "u0", "question": "Unanswerable?", "doc": None, "span": None, "answer": "none",
                      "slice": "unanswerable", "track": "t"})
    write(d / "build/questions.jsonl", "".join(json.dumps(q) + "\n" for q in questions))
    write(d / "build/audit.jsonl", json.dumps({"id": "q1", "doc": "t/d.md", "span": "Some words first.",
                                               "note": "the intro <i>also</i> answers it"}) + "\n")
    for name in params.retrieval:
        chunking = params.config(name).chunking
        run: dict = {"config": {"name": name, "chunking": chunking}, "passages": {}, "questions": [],
                     "reason": None, "status": "ok"}
        if name not in HITS:
            run.update(status="unavailable", reason="cross-encoder 'no-such' is not on this machine")
        else:
            for i, q in enumerate(questions):
                top = ranking(i < 8 and bool(HITS[name][i]), i, deep=(name, i) == DEEP)
                run["questions"].append({"id": q["id"], "answerable": i < 8, "ranking": top})
                run["passages"].update({x["chunk"]: chunk_text(chunking, int(x["chunk"].split("#")[1])) for x in top})
        write(d / f"build/runs/{name}.json", json.dumps(run))
    texts = {q["id"]: SEARCHED.get(q["id"], q["question"]) for q in questions}
    write(d / "build/queries/rewrite.json", json.dumps({"transform": "rewrite", "kind": "rewrite", "status": "ok",
                                                        "reason": None, "queries": texts, "empty_outputs": []}))
    for chunking in params.chunkings:
        write(d / f"build/labels/{chunking}.json", json.dumps({"relevant": {f"q{i}": [f"t/d.md#{i}"] for i in range(8)}}))
    answers = [{"id": f"q{i}", "answer": f"answer {i}" if i % 2 else f"<img src=x onerror=alert(1)> {i}"}
               for i in range(8)]
    write(d / "build/answers/bm25.json", json.dumps({"status": "ok", "reason": None, "answers": answers}))
    for name in params.generation.configs:
        if name != "bm25":
            write(d / f"build/answers/{name}.json", json.dumps({"status": "unavailable", "answers": [],
                                                                 "reason": "its run is unavailable"}))
    verdicts = io.StringIO()
    w = csv.writer(verdicts, lineterminator="\n")
    w.writerow(["config", "id", "slice", "answer_sha256", "hand", "llm", "token_f1", "contains"])
    for i in range(8):
        w.writerow(["bm25", f"q{i}", SLICES[i], "0" * 64, i % 2, "" if i == 3 else 1, i % 2, 0])
    write(d / "metrics/scores/verdicts.csv", verdicts.getvalue())
    rows = [r for name, hits in HITS.items()
            for r in config_rows(name, hits_to_ranks(hits), ids=[f"q{i}" for i in range(8)], slices=SLICES,
                                 docs=["t/d.md"] * 8, unanswerable=1)]
    write_retrieval(d / "metrics/scores/retrieval.csv", rows)
    result = analyze(rows, [], configs=list(params.retrieval), answered=[], settings=params.stats)
    write(d / "metrics/stats.json", json.dumps(to_metrics(result)))
    judge = {"configs": {"bm25": {"status": "ok", "accuracy": {"hand": {"estimate": 0.5, "low": 0.2, "high": 0.8,
                                                                        "n": 8}},
                                  "failures": {"hand": {"n": 8, "wrong_with_relevant": {"count": 1, "ids": ["q2"],
                                                                                        "share": 0.125}}},
                                  "two_by_two": {"hand": {"source": "hand grades"},
                                                 "judge": {"source": "judge: token_f1 <i>fixed</i>"}},
                                  "support": support_entry()}},
             "calibration": {"token_f1": {"confusion": {"tp": 3, "fp": 1, "fn": 1, "tn": 3, "invalid": 0, "n": 8},
                                          "kappa": {"estimate": 0.5, "low": 0.1, "high": 0.9, "n": 8},
                                          "accuracy": {"estimate": 0.75, "low": 0.5, "high": 1.0, "n": 8}},
                             "llm": {"reason": "no hand grades for the llm judge"}},
             "canaries": {"token_f1": {"empty": {"accepted": 0.0, "low": 0.0, "high": 0.3, "n": 8, "invalid": 0,
                                                 "expected_accept": False}}},
             "bias": {"length": {"pairs": 4, "consistent": 3, "consistency": 0.75, "ties": 1, "long_wins": 2,
                                 "short_wins": 1}},
             "grades": {"answers": 8, "matching": 8, "stale": 0, "unknown": 0},
             # judge_eval's scores: token_f1 ranks with AUC 0.75; the llm judge had no probabilities
             "scores": {"primary": "token_f1", "folds": 5, "judges": {
                 "token_f1": {"status": "ok", "auc": {"estimate": 0.75, "low": 0.4, "high": 1.0, "n": 8},
                              "crossfit": {"kappa": {"estimate": 0.5, "low": 0.0, "high": 1.0},
                                           "tpr": {"estimate": 0.75}, "tnr": {"estimate": 0.75}},
                              "roc": [{"fpr": 0.0, "tpr": 0.0}, {"fpr": 0.25, "tpr": 0.75}, {"fpr": 1.0, "tpr": 1.0}]},
                 "llm": {"status": "unscored", "reason": "no score on 8 of 8 graded answers <b>x</b>"}},
                 "combined": {"status": "unavailable", "reason": "1 judge(s) scored on every answer"}},
             "canary_flags": [{"judge": "llm", "kind": "dummy_yes", "accepted": 1.0, "accepted_count": 8, "n": 8}],
             "comparison": {"baseline": "bm25", "configs": {
                 "hybrid": {"status": "ok", "n": 8, "baseline_accuracy": 0.5, "accuracy": 0.625,
                            "difference": {"estimate": 0.125, "low": -0.25, "high": 0.5, "method": "cluster-percentile"},
                            "fixed": 2, "broken": 1, "fixed_ids": ["q1", "q7"], "broken_ids": ["q2"],
                            "both_right": 3, "both_wrong": 2, "p_mcnemar": 1.0},
                 "dense": {"status": "unavailable", "reason": "no question hand-graded for both"}}},
             "measure_comparison": measure_block(),
             "graders": graders_block(),
             "support": support_block()}
    write(d / "metrics/judge_detail.json", json.dumps(judge))
    for name, ms in P95.items():
        write(d / f"metrics/latency/{name}.json", json.dumps({"timing": "warm", "total": {"p95_ms": ms}}))
    write(d / "metrics/latency/generate_bm25.json", json.dumps({"answer": {"p50_ms": 2500.0}}))
    write(d / "metrics/sweep.json", json.dumps({
        "dataset": "handbook", "measure": "hit_at_5", "baseline": "dense@a", "chosen_on": "all", "questions": 8,
        "tie_set_size": 2,
        "winner": {"name": "bm25@a"},
        "ranking": {n: {"letter": ch, "value": v, "ci_low": v - 0.1, "ci_high": v + 0.1, "rank": r, "rank_low": 1,
                        "rank_high": 2, "beats": "", "in_tie_set": True, "p95_ms": p, "pareto": f}
                    for n, ch, v, r, p, f in (("dense@a", "b", 0.5, 2, 2.0, True), ("bm25@a", "a", 0.75, 1, 5.0, True))}}))
    return d


def stage_args(d: Path, out: str = "metrics/report.html") -> list[str]:
    return ["--stats", "metrics/stats.json", "--judge", "metrics/judge_detail.json",
            "--scores", "metrics/scores/retrieval.csv", "--verdicts", "metrics/scores/verdicts.csv",
            "--questions", "build/questions.jsonl", "--audit", "build/audit.jsonl", "--runs", "build/runs",
            "--labels", "build/labels", "--answers", "build/answers", "--queries", "build/queries",
            "--latency", "metrics/latency",
            "--sweep", "metrics/sweep.json", "--out", out]


def run_stage(d: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "stages" / "report_html.py"), *args], cwd=d,
                          capture_output=True, text=True)


def inputs_of(d: Path, **changes) -> html_data.Inputs:
    paths = {"stats": "metrics/stats.json", "judge": "metrics/judge_detail.json",
             "scores": "metrics/scores/retrieval.csv", "verdicts": "metrics/scores/verdicts.csv",
             "questions": "build/questions.jsonl", "audit": "build/audit.jsonl", "runs": "build/runs",
             "labels": "build/labels", "answers": "build/answers", "queries": "build/queries",
             "latency": "metrics/latency",
             "sweep": "metrics/sweep.json", **changes}
    return html_data.read_inputs(load_config(d / "params.yaml"),
                                 **{k: None if v is None else d / v for k, v in paths.items()})


def test_a_missing_sweep_file_is_no_sweep(project):
    assert inputs_of(project, sweep="metrics/no-such-sweep.json").sweep is None


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return tiny_project(tmp_path_factory.mktemp("report_html"))


@pytest.fixture(scope="module")
def data(project):
    return html_data.page_data(inputs_of(project), load_config(project / "params.yaml"))


def blob_of(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert m, "the page embeds its data once"
    return json.loads(m.group(1))


# --------------------------------------------------------------------------- the data


def test_configs_follow_params_with_the_unavailable_one_and_its_reason(data):
    names = [c["name"] for c in data["configs"]]
    assert names == ["dense", "bm25", "hybrid", "hybrid_rerank", "rewrite"]
    gone = data["configs"][3]
    assert gone["available"] is False and "cross-encoder 'no-such' is not on this machine" in gone["reason"]
    bm25 = data["configs"][1]
    assert bm25["measures"]["recall_at_5"]["value"] == round(6 / 8, 4)
    assert bm25["by_slice"]["identifier"]["value"] == 1.0 and bm25["by_slice"]["paraphrase"]["value"] == 0.5
    assert [c["letter"] for c in data["configs"] if c["available"]] == ["a", "b", "c", "d"]


def test_forest_rows_are_the_paired_changes_sorted_by_change(data):
    rows = data["forest"]
    assert [r["config"] for r in rows] == ["bm25", "hybrid", "rewrite"]  # +2/8, 0, 0 (+1 -1): ties by name
    assert rows[0]["delta"] == round(2 / 8, 4) and (rows[0]["fixed"], rows[0]["broken"]) == (2, 0)
    assert rows[1]["verdict"] == "no change"  # identical to the baseline: a point interval at 0
    assert rows[2]["delta"] == 0 and (rows[2]["fixed"], rows[2]["broken"]) == (1, 1)
    assert {r["verdict"] for r in rows} <= {"real gain", "real loss", "within the noise", "no change"}


def test_grid_and_changed_questions(data):
    ids = [q["id"] for q in data["questions"]]
    assert ids == [f"q{i}" for i in range(8)] + ["u0"]
    assert data["grid"]["bm25"] == HITS["bm25"] + [None]  # the unanswerable question has no value
    assert {i for i, c in zip(ids, data["changed"]) if c} == CHANGED


def test_rankings_mark_the_relevant_passage_and_store_each_text_once(data):
    top = data["rankings"]["dense"][0]
    assert len(top) == 5 == data["meta"]["k"]  # hit_at_5: the top 5
    assert top[2] == ["t/d.md#0", 0.8, 1] and [p[2] for p in top].count(1) == 1
    assert data["rankings"]["dense"][2] == [[f"t/d.md#{10 + r}", round(0.9 - 0.05 * r, 4), 0] for r in range(5)]
    assert "hybrid_rerank" not in data["rankings"]
    assert EVIL in data["passages"]["base"]["t/d.md#0"]
    assert data["passages"]["heading"]["t/d.md#0"].startswith("Title > Section\n")  # per chunking


def test_cost_points_and_their_pareto_front(data):
    front = {p["config"]: p["front"] for p in data["cost"]}
    # bm25 (0.75 at 5 ms) dominates dense (0.5, 2 ms) and hybrid (0.5, 3 ms): costs within COST_FLOOR_MS
    # count as one; and rewrite (0.5, 50 ms). With no floor, dense would be on the front too, and hybrid,
    # within 1.5x (COST_TOLERANCE) of dense's cost and as good.
    assert front == {"dense": False, "bm25": True, "hybrid": False, "rewrite": False}
    points = [p for p in data["cost"]]
    assert pareto_front([p["value"] for p in points], [p["p95_ms"] for p in points], floor_ms=0) == [
        p["config"] in {"dense", "bm25", "hybrid"} for p in points]
    assert data["answer_cost"] == [{"config": "bm25", "seconds": 2.5, "value": 0.5, "ci_low": 0.2, "ci_high": 0.8,
                                    "n": 8}]


def test_a_miss_shows_where_the_relevant_chunk_ranked(data):
    """dense misses q2 in the top 5 and ranks its relevant chunk 7th; its other misses rank it
    nowhere in the stored 10; hits and the unanswerable question have nothing to show."""
    deeper = data["deeper"]["dense"]
    assert deeper[2] == {"rank": 7, "chunk": "t/d.md#2", "score": round(0.9 - 0.05 * 6, 4)}
    assert deeper[3] == {"rank": None, "stored": 10}
    assert deeper[0] is None and deeper[8] is None  # a hit; the unanswerable u0
    assert data["passages"]["base"]["t/d.md#2"] == chunk_text("base", 2), "the deep chunk's text is in the page"
    assert [i for i, x in enumerate(data["deeper"]["bm25"]) if x] == [5, 7]  # bm25's misses


def test_a_miss_with_no_labelled_chunk_says_so_apart_from_one_beyond_the_stored_ranking(project):
    """Beyond the stored ranking (the page says "not in the stored top 10") is not the same as a
    question this chunking labels no chunk relevant to (``labelled: False``)."""
    inputs = inputs_of(project)
    run = inputs.runs["dense"]
    labels = {q: ids for q, ids in inputs.labels["base"].items() if q != "q3"}  # q3: no chunk labelled relevant
    deeper = html_data.deeper_relevant(run, inputs.questions, labels, 5, {})
    assert deeper[3] == {"rank": None, "stored": 10, "labelled": False}
    assert deeper[5] == {"rank": None, "stored": 10}  # labelled, ranked beyond the stored 10
    assert deeper[2]["rank"] == 7


def test_the_judge_panel_says_what_stale_and_unknown_grades_are(data):
    """The counts in words, as report.md words them (``judge_report.grades_text``), not "(0 stale,
    0 unknown)" alone."""
    j = data["judge"]
    assert j["grades_text"].startswith("8 hand grades (the data set's grades.jsonl") and "of 8 answers" in j["grades_text"]
    assert "0 graded another text of a current answer (an earlier generation or another answer model: stale)" in (
        j["grades_text"])
    assert "0 an answer that no longer exists (unknown); neither is used" in j["grades_text"]
    assert j["not_judged"] is None and j["no_grades"] is False


def retrieval_only_detail(answered=("bm25", "hybrid")) -> dict:
    """judge_eval's detail file of a run that answered nothing (``llm.backend: none``); shared with
    test_html_browser.py."""
    reason = "the answer model is off (llm.backend: none)"
    return {"configs": {c: {"status": "unavailable", "reason": reason} for c in answered},
            "calibration": {j: {"status": "unavailable", "reason": "no hand-graded answer has this judge's verdict"}
                            for j in ("llm", "token_f1", "contains")},
            "canaries": {}, "bias": {}, "grades": {"matching": 0, "stale": 0, "unknown": 0, "answers": 0}}


def test_a_run_with_no_answers_judged_says_so_in_one_line():
    panel = html_data.judge_panel(retrieval_only_detail(), ["llm", "token_f1", "contains"], ["bm25", "hybrid"])
    assert panel["not_judged"] == ("No answers were judged: bm25, hybrid: unavailable: the answer model is off "
                                   "(llm.backend: none).")
    assert panel["no_grades"] is True and all("reason" not in j for j in panel["judges"])  # no reason per judge
    assert panel["grades_text"].startswith("No hand grades:")
    none = html_data.judge_panel({"configs": {}, "grades": {}}, ["llm"], [])
    assert none["not_judged"] == "No answered config (generation.configs is empty): no answers to judge."
    mixed = retrieval_only_detail()
    mixed["configs"]["bm25"] = {"status": "ok"}
    assert html_data.judge_panel(mixed, ["llm"], ["bm25", "hybrid"])["not_judged"] is None


def test_the_support_panel_copies_scorers_canaries_shares_and_split_tables(data):
    panel = data["judge"]["support"]
    assert panel == html_data.support_panel(json.loads(json.dumps({"support": support_block(), "configs": {
        "bm25": {"status": "ok", "support": support_entry(),
                 "two_by_two": {"hand": {"source": "hand grades"}, "judge": {"source": "judge: token_f1 <i>fixed</i>"}}},
        "hybrid_rerank": {"status": "unavailable", "reason": "its run is unavailable"}}})), ["bm25", "hybrid_rerank"])
    lexical, llm = panel["scorers"]
    assert lexical == {"scorer": "lexical_support", "n": 10, "unscored": 2,
                       "what": "share of the answer's content words found in the passages shown",
                       "auc": {"value": 0.8, "ci_low": 0.6, "ci_high": 0.95, "n": 10},
                       "kappa": {"value": 0.5, "ci_low": 0.1, "ci_high": 0.8, "n": 12, "seeds_min": 0.45,
                                 "seeds_max": 0.55, "seeds": 50},
                       "threshold": 0.625}
    assert llm["reason"] == "3 scored support grade(s), fewer than 10 <b>x</b>" and "auc" not in llm
    assert (llm["n"], llm["unscored"]) == (3, 9)
    assert (panel["primary"], panel["source"]) == ("lexical_support", "hand grades, else lexical_support")
    assert panel["levels"] == {"supported": 5, "partly": 3, "not": 4}
    assert [(r["scorer"], r["kind"], r["expected_accept"], r["accepted"], r["n"], r["invalid"])
            for r in panel["canaries"]["rows"]] == [("lexical_support", "shown_copy", True, 1.0, 4, 0),
                                                     ("lexical_support", "unrelated_copy", False, 0.5, 4, 1)]
    assert panel["canaries"]["flags"] == [{"scorer": "lexical_support", "kind": "unrelated_copy", "against": 2,
                                           "n": 4, "expected_accept": False}]
    (bm25,) = panel["configs"]  # hybrid_rerank was not judged: no entry
    assert bm25["config"] == "bm25"
    assert bm25["hand"] == {"value": 0.5, "ci_low": 0.2, "ci_high": 0.8, "n": 6, "supported": 3}
    assert bm25["judged"]["supported"] == 5 and bm25["judged"]["n"] == 8
    hand, judge = bm25["splits"]
    assert (hand["key"], hand["source"], judge["key"], judge["source"]) == (
        "hand", "hand grades", "judge", "judge: token_f1 <i>fixed</i>")
    assert judge["retrieved"] == {"correct_supported": 2, "correct_unsupported": 0, "correct_support_unknown": 1,
                                  "wrong": 2}
    assert judge["missed"]["correct_supported"] == 1 and judge["unknown"] == 1


def test_the_support_panel_without_grades_is_one_line_and_absent_without_the_block():
    no_grades = {"status": "no grades", "positive": "supported", "levels": {"supported": 0, "partly": 0, "not": 0},
                 "calibration": {"lexical_support": {"status": "unavailable", "reason": "0 scored support grade(s)",
                                                     "n": 0, "supported": 0, "unscored": 0}},
                 "primary": None, "source": "hand grades",
                 "canaries": {"status": "unavailable", "reason": "no scorer is calibrated on support grades"}}
    panel = html_data.support_panel({"support": no_grades, "configs": {"bm25": {"status": "ok"}}}, ["bm25"])
    assert panel == {"line": html_data.NO_SUPPORT_GRADES}
    assert "no hand support grades" in panel["line"] and "rag-ablation grade --support" in panel["line"]
    assert html_data.support_panel({"configs": {}}, ["bm25"]) is None  # a detail file from before support
    # the source of a split table without its two_by_two: hand grades for "hand", else the key
    block = {**support_block(), "status": "ok"}
    detail = {"support": block, "configs": {"bm25": {"status": "ok", "support": support_entry()}}}
    assert [s["source"] for s in html_data.support_panel(detail, ["bm25"])["configs"][0]["splits"]] == [
        "hand grades", "judge"]
    # no canary judged: the reason
    detail["support"] = {**block, "canaries": {"status": "unavailable", "reason": "no support canaries"}}
    assert html_data.support_panel(detail, ["bm25"])["canaries"] == {"reason": "no support canaries"}


EXAMPLE_DETAIL = ROOT / "metrics/judge_detail.json"


@pytest.mark.skipif(not EXAMPLE_DETAIL.is_file(), reason="no metrics/judge_detail.json (run `make run`)")
def test_the_support_panel_reads_the_example_detail_file():
    """The committed detail file, as judge_eval writes it: every scorer has a row, every answered
    config with a support entry its shares and one split table per source of correctness."""
    detail = json.loads(EXAMPLE_DETAIL.read_text())
    block = detail.get("support")
    if not block or block.get("status") != "ok":
        pytest.skip("the example's judge_detail.json has no support grades")
    answered = list(load_config(ROOT / "params.yaml").generation.configs)
    panel = html_data.support_panel(detail, answered)
    assert [r["scorer"] for r in panel["scorers"]] == list(block["calibration"])
    for entry in panel["configs"]:
        split = detail["configs"][entry["config"]]["support"]["split"]
        assert [s["key"] for s in entry["splits"]] == list(split)
        for s in entry["splits"]:
            assert f"Correctness from {s['source']}; support from {block['source']};" in split[s["key"]]["markdown"]


def test_the_searched_text_of_a_transform_is_shown_where_it_differs_from_the_question(data):
    assert data["searched"] == {"rewrite": [SEARCHED.get(f"q{i}") for i in range(8)] + [None]}
    assert {c["name"]: c["query"] for c in data["configs"]}["rewrite"] == "rewrite"


def test_the_cost_chart_says_its_rule_and_which_configs_it_leaves_out(project):
    data = html_data.page_data(inputs_of(project), load_config(project / "params.yaml"))
    assert data["meta"]["latency_rule"].startswith("P95 per query over the questions, every config timed alike")
    assert data["meta"]["cost_tolerance"] == 0.5 and data["cost_missing"] == []
    # the verdicts' test in prose, written once in Python for both reports (report.js holds no copy)
    assert data["meta"]["test_text"] == TEST_TEXTS[data["meta"]["test"]] == TEST_TEXTS["sign"]
    assert "fixed against those broken" not in (ROOT / "rag_ablation/evaluation/report/assets/report.js").read_text()
    old = project / "metrics/latency_old"
    shutil.copytree(project / "metrics/latency", old, dirs_exist_ok=True)
    write(old / "hybrid.json", json.dumps({"total": {"p95_ms": 3.0}}))  # timed by the old rule
    data = html_data.page_data(inputs_of(project, latency="metrics/latency_old"), load_config(project / "params.yaml"))
    assert data["cost_missing"] == ["hybrid"] and "hybrid" not in {p["config"] for p in data["cost"]}


def test_the_sweep_is_shown_only_on_the_data_set_it_was_made_on(project, tmp_path):
    params = load_config(project / "params.yaml")
    sweep = json.loads((project / "metrics/sweep.json").read_text())
    assert html_data.sweep_entries(sweep, "handbook")["dataset"] == "handbook"
    other = html_data.sweep_entries(sweep, "mydocs")
    assert set(other) == {"reason"} and "made on the data set 'handbook'" in other["reason"]
    assert "this report is on 'mydocs'" in other["reason"]
    old = html_data.sweep_entries({k: v for k, v in sweep.items() if k != "dataset"}, params.dataset)
    assert "does not record its data set" in old["reason"]
    assert "sweep" not in html.chart_specs({**html_data.page_data(inputs_of(project), params), "sweep": other})


def test_answers_carry_verdicts_hand_grades_and_failure_kinds(data):
    a = data["answers"]["bm25"]["answers"]
    assert a["q3"]["hand"] is True and a["q3"]["verdicts"] == {"llm": None, "token_f1": True, "contains": False}
    assert a["q2"]["failure"] == "wrong, relevant passage in prompt" and a["q1"]["failure"] is None


def test_judge_panel_and_sweep(data):
    j = {x["judge"]: x for x in data["judge"]["judges"]}
    assert j["token_f1"]["confusion"]["tp"] == 3 and j["token_f1"]["kappa"]["value"] == 0.5
    assert j["llm"]["reason"] == "no hand grades for the llm judge"
    assert data["judge"]["position"]["consistent"] == 3
    comp = data["judge"]["comparison"]
    assert comp["baseline"] == "bm25" and comp["rows"] == [
        {"config": "hybrid", "n": 8, "baseline_accuracy": 0.5, "accuracy": 0.625, "delta": 0.125, "ci_low": -0.25,
         "ci_high": 0.5, "method": "cluster-percentile", "fixed": ["q1", "q7"], "broken": ["q2"], "p_mcnemar": 1.0},
        {"config": "dense", "reason": "no question hand-graded for both"}]
    f1, llm = data["judge"]["measures"]
    assert (f1["measure"], f1["baseline"], llm["reason"]) == ("token_f1", "bm25", "no score <b>x</b>") and not llm["rows"]
    (row,) = f1["rows"]
    gain = sum(F1["hybrid"]) / 8 - sum(F1["bm25"]) / 8
    assert (row["config"], row["n"], row["better"], row["worse"]) == ("hybrid", 8, 8, 0)
    assert row["delta"] == pytest.approx(gain, abs=1e-4) and row["verdict"] == "real gain"  # p = 2 / 2^8
    assert row["better_ids"] == [f"q{i}" for i in range(8)] and row["worse_ids"] == []
    assert [r["candidate"] for r in data["sweep"]["rows"]] == ["bm25@a", "dense@a"]


def test_letters_name_the_configs_beaten_after_holm():
    def rows(name, hits):
        return config_rows(name, hits_to_ranks(hits), ids=[f"q{i}" for i in range(len(hits))])
    n = 20  # a wins all 20 disagreements with b: p = 2 / 2^20; Holm over 3 pairs: 3 p < 0.05
    strong = rows("a", [1] * n) + rows("b", [0] * n) + rows("c", [1] * n)
    marks = html_data.config_letters(strong, ["a", "b", "c", "gone"], measure="hit_at_5", alpha=0.05)
    assert marks == {"a": {"letter": "a", "beats": "b"}, "b": {"letter": "b", "beats": ""},
                     "c": {"letter": "c", "beats": "b"}}
    # 6 to 0: raw p = 2 / 2^6 = 0.031 < 0.05, but Holm's smallest is 3 x 0.031 = 0.094: nobody beats anybody
    weak = rows("a", [1] * 6) + rows("b", [0] * 6) + rows("c", [0] * 6)
    assert 2 / 2 ** 6 < 0.05 < 3 * 2 / 2 ** 6
    assert all(m["beats"] == "" for m in html_data.config_letters(weak, ["a", "b", "c"], measure="hit_at_5",
                                                                   alpha=0.05).values())


def test_letters_on_a_continuous_measure_use_the_sign_flip_test():
    def rows(name, ranks):
        return config_rows(name, ranks, ids=[f"q{i}" for i in range(len(ranks))])
    n = 12  # RR@10 1.0 against 0.5 on every question: sign-flip p about 2 / 2^12 each, Holm over 3 pairs
    data = rows("a", [1] * n) + rows("b", [2] * n) + rows("c", [1] * n)
    settings = StatsConfig(resamples=4000)
    marks = html_data.config_letters(data, ["a", "b", "c"], measure="rr_at_10", alpha=0.05, settings=settings)
    assert {k: m["beats"] for k, m in marks.items()} == {"a": "b", "b": "", "c": "b"}
    # a copy of a (c) is tied with it, and 4 questions cannot separate anything: p >= 2 / 2^4 = 0.125
    few = rows("a", [1] * 4) + rows("b", [2] * 4)
    assert all(m["beats"] == "" for m in html_data.config_letters(few, ["a", "b"], measure="rr_at_10", alpha=0.05,
                                                                   settings=settings).values())


def test_a_missing_latency_is_unknown_not_an_error(tmp_path):
    write(tmp_path / "bad.json", "{not json")
    write(tmp_path / "list.json", "[1]")
    assert html_data.latency_value(tmp_path, "bad", "total", "p95_ms") is None
    assert html_data.latency_value(tmp_path, "list", "total", "p95_ms") is None
    assert html_data.latency_value(tmp_path, "absent", "total", "p95_ms") is None
    assert html_data.retrieval_p95(tmp_path, "bad") is None and html_data.retrieval_p95(tmp_path, "absent") is None


def test_a_retrieval_latency_counts_only_when_every_config_was_timed_alike(tmp_path):
    """A file written before the shared rule (no ``timing``: the first config paid the model and
    every embedding) is left out of the cost chart rather than compared with honest ones."""
    write(tmp_path / "old.json", json.dumps({"total": {"p95_ms": 43.8}}))
    write(tmp_path / "new.json", json.dumps({"timing": "warm", "total": {"p95_ms": 7.5}}))
    write(tmp_path / "odd.json", json.dumps({"timing": "cold", "total": {"p95_ms": 7.5}}))
    assert html_data.retrieval_p95(tmp_path, "old") is None and html_data.retrieval_p95(tmp_path, "odd") is None
    assert html_data.retrieval_p95(tmp_path, "new") == 7.5


# --------------------------------------------------------------------------- the page


def test_embedded_json_cannot_end_its_script_element():
    obj = {"t": EVIL, "u": "a\u2029b"}
    text = html.embed_json(obj)
    assert not re.search(r"[<>&\u2028\u2029]", text)
    assert json.loads(text) == obj


def test_every_text_stays_data_and_nothing_loads_from_outside(data):
    page = html.page(data, {"vega": "var vega = 1; // </script> <!-- x"})
    assert page.count("<script") == 3  # the library, the data, the app: no passage opened one
    assert "<script>document.title" not in page and "<img src=x" not in page and "<b>1</b>" not in page
    blob = blob_of(page)
    assert blob["passages"]["base"]["t/d.md#0"].count(EVIL) == 1 and blob["questions"][1]["question"].endswith("<b>1</b>")
    assert "<\\/script> <\\!-- x" in page  # the library's own text, made safe
    outside = re.findall(r"""(?:src|href)\s*=\s*["']?(?!#)[^"'\s>]+""", re.sub(r"<script.*?</script>", "", page,
                                                                              flags=re.S))
    assert outside == [], "every link stays on the page"
    app = html_assets.read_page_files()["app"]
    assert "innerHTML" not in app and "insertAdjacentHTML" not in app and "outerHTML" not in app


@pytest.mark.bad_input
def test_a_nan_in_the_inputs_is_one_clear_error(data):
    broken = {**data, "meta": {**data["meta"], "confidence": float("nan")}}
    with pytest.raises(InvalidData, match="hold NaN or infinity, which JSON cannot carry"):
        html.page(broken, {})


def test_the_charts_are_vega_lite_specs_with_no_url(data):
    charts = html.chart_specs(data)
    assert set(charts) == {"forest", "cost", "answer_cost", "roc", "sweep"}
    # the ROC chart: both axes 0 to 1, the chance diagonal, one line per scored judge
    roc = charts["roc"]
    assert [layer["data"]["values"] for layer in roc["layer"]] == [
        [{"fpr": 0, "tpr": 0}, {"fpr": 1, "tpr": 1}],
        [{"judge": "token_f1", "fpr": 0.0, "tpr": 0.0}, {"judge": "token_f1", "fpr": 0.25, "tpr": 0.75},
         {"judge": "token_f1", "fpr": 1.0, "tpr": 1.0}]]
    assert roc["layer"][1]["encoding"]["x"]["scale"] == {"domain": [0, 1]}
    forest = charts["forest"]
    assert forest["layer"][0]["data"]["values"] == [{"zero": 0}]  # the zero line
    assert forest["layer"][2]["encoding"]["y"]["sort"] == ["bm25", "hybrid", "rewrite"]
    # axes start where a reader expects: latency on decades around the points, shares from 0 to 1,
    # seconds per answer from 0 (the example's answer axis ran 4.790 to 4.812 s)
    cost_x, cost_y = (charts["cost"]["layer"][1]["encoding"][k]["scale"] for k in ("x", "y"))
    assert cost_x == {"type": "log", "domain": [1, 100], "nice": False, "zero": False}  # P95 2 to 50 ms
    assert cost_y["domain"] == [0.0, 1.0]
    answer_x, answer_y = (charts["answer_cost"]["layer"][1]["encoding"][k]["scale"] for k in ("x", "y"))
    assert answer_x["domain"] == [0.0, 5.0] and answer_y["domain"] == [0.0, 1.0]  # 2.5 s: 0 to 5
    legend = charts["cost"]["layer"][1]["encoding"]["color"]["scale"]["domain"]
    assert legend == ["on the front", "dominated"]
    assert {r["status"] for r in charts["cost"]["data"]["values"]} == {"on the front", "dominated"}
    assert forest["layer"][2]["encoding"]["shape"]["scale"]["range"][:2] == ["triangle-up", "triangle-down"]
    assert "http" not in json.dumps(charts) and "$schema" not in json.dumps(charts)


def test_the_real_libraries_are_inlined_and_the_page_is_deterministic(data):
    first, second = html.render(data), html.render(data)
    assert first == second
    for p in html_assets.PACKAGES:
        assert f"/* {p.spec} */" in first
    assert first.index("/* vega@") < first.index("/* vega-lite@") < first.index("/* vega-embed@") < first.index(
        'id="report-data"')


# --------------------------------------------------------------------------- the vendored libraries


def test_vendored_files_match_their_pinned_hashes():
    for p in html_assets.PACKAGES:
        data = (html_assets.ASSETS / p.file).read_bytes()
        assert hashlib.sha256(data).hexdigest() == p.sha256
        assert (html_assets.ASSETS / p.file.replace(".min.js", ".LICENSE")).is_file()
        assert p.sha256 in (html_assets.ASSETS / "README.md").read_text()


@pytest.mark.bad_input
def test_an_edited_or_missing_vendored_file_is_one_clear_error(tmp_path):
    p = html_assets.PACKAGES[0]
    with pytest.raises(MissingInput, match="no vendored chart library"):
        html_assets.read_asset(p, tmp_path)
    write(tmp_path / p.file, "var vega = 'edited';")
    with pytest.raises(InvalidData, match="not the pinned"):
        html_assets.read_asset(p, tmp_path)


# --------------------------------------------------------------------------- the page's own front-end

FIXED_DATA = {
    "meta": {"measure_label": "hit@5", "baseline": "dense", "confidence": 0.95},
    "forest": [{"config": "bm25", "delta": 0.25, "ci_low": -0.125, "ci_high": 0.5, "verdict": "within the noise",
                "fixed": 2, "broken": 0, "p_holm": 0.5}],
    "cost": [{"config": "dense", "p95_ms": 2.0, "value": 0.5, "front": True}],
    "answer_cost": [],
    "sweep": None,
    "questions": [{"id": "q0", "question": "<script>x</script> & \u2028 {style} {app}"}],
}
"""The smallest data ``html.page`` takes, with text that must stay data."""
FIXED_PAGE_SHA256 = "9b0217fb8ac75fe20452e9e3158804aebd6b32fe30db9f7fce76c92b004c9651"
"""SHA-256 of ``html.page(FIXED_DATA, {"vega": ...})`` as the page was built when the skeleton,
style and script were still strings in html.py (issue 33): moving them into assets/ changed no
byte. Re-pinned for issue 36 (the cost charts' fixed axes, placed names and front legend, the
verdict arrows, intervals on a second line, the fixed/broken filter, the searched text and deeper
relevant rank), after looking at the page in chromium (test_html_reader_browser.py); and for issue 34
(the judges' scores table, ROC chart and canary warnings, test_html_browser.py); and for issue 35 (each
note names the verdicts' measure and paired test, nDCG@10 and recall@100 columns, the grid's own
measure, the sweep's measure, the cost floor in the front note; the answered configs compared on
every answer by token F1 and the primary judge's score, and each test's prose from the page data:
test_html_browser.py); and for issue 47 (the hand grades' counts in words, one line for a run with
no answers judged, the relevant chunk "not in the stored top k", no empty answer charts:
test_html_browser.py); and for issue 46 (a passage's page or slide beside its chunk id,
D.sources: tests/test_dvc_documents.py) and the judges' kappa as the median over re-fits; and for issue
48 (a second grader's card beside the judges', the graders' disagreements, or one line saying how
to add a second grader: test_html_browser.py); and for issue 48 item 7 (support, or groundedness, in the
judges panel: the scorers calibrated on the hand support grades, the support canaries and their warnings,
each config's supported shares and split retrieved-by-correct tables: test_html_browser.py); and for issue 47
item 5 (configs left out by run_configs named in one line of the summary: test_html_browser.py). A change to
report.html, report.css or report.js (or to how they are put together) shows here: check the
page in a browser (test_html_browser.py), then put the new hash here."""


def test_the_page_assembled_from_its_files_is_byte_for_byte_the_pinned_one():
    page = html.page(FIXED_DATA, {"vega": "var vega = 1; // </script> <!-- x {data}"})
    assert len(page.encode("utf-8")) == 42990
    assert hashlib.sha256(page.encode("utf-8")).hexdigest() == FIXED_PAGE_SHA256
    files = html_assets.read_page_files()
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert "<style>" + files["style"].removesuffix("\n") + "</style>" in page
    assert "<script>\n" + files["app"] + "</script>" in page


def test_page_files_match_their_pinned_hashes_and_the_skeleton_has_each_placeholder_once():
    files = html_assets.read_page_files()
    assert set(files) == {"skeleton", "style", "app"}
    for part, f in html_assets.PAGE_FILES.items():
        data = (html_assets.ASSETS / f.file).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f.sha256, part
        assert data.endswith(b"\n") and not data.endswith(b"\n\n") and b"\r" not in data, part
    for name in ("style", "libraries", "data", "app"):
        assert files["skeleton"].count("{" + name + "}") == 1
    assert set(re.findall(r"\{(\w+)\}", files["skeleton"])) == {"style", "libraries", "data", "app"}


def test_the_script_embeds_the_charts_with_no_action_menu_and_svg_marks():
    """vega-embed's options, written in report.js: no action menu (its links would leave the page),
    SVG marks (countable in the browser test), vega-lite specs."""
    app = html_assets.read_page_files()["app"]
    assert "__EMBED_OPTIONS__" not in app  # nothing is substituted into the code any more
    options = re.findall(r"^var OPTIONS = (\{.*\});$", app, re.M)
    assert len(options) == 1
    assert json.loads(options[0]) == {"actions": False, "renderer": "svg", "mode": "vega-lite"}


@pytest.mark.bad_input
def test_an_edited_or_missing_page_file_is_one_clear_error(tmp_path):
    part = html_assets.PAGE_FILES["app"]
    with pytest.raises(MissingInput, match="no report page file .*report.js: restore it from git"):
        html_assets.read_page_file(part, tmp_path)
    write(tmp_path / part.file, "(function () {})();\n")
    with pytest.raises(InvalidData, match=r"report page file report.js has SHA-256 .*, not the pinned "
                                          + re.escape(part.sha256[:12]) + r"\.\.\.: restore it from git .*pin its new SHA-256 "
                                          r"\(`sha256sum .*report.js`\) in PAGE_FILES"):
        html_assets.read_page_file(part, tmp_path)


WEB_LINE = re.compile(r"</?[a-zA-Z][\w-]*[\s>/]|[{};]\s*$|=>|\b(?:const|let|var|function|document)\b")
"""A line that looks like HTML (a tag), CSS or JavaScript (a brace or semicolon at its end, a keyword)."""


def test_the_web_line_count_sees_the_page_files():
    for part, text in html_assets.read_page_files().items():
        lines = text.splitlines()
        assert sum(1 for line in lines if WEB_LINE.search(line)) > 0.8 * len(lines), part


@pytest.mark.parametrize("module", sorted(p.name for p in (ROOT / "rag_ablation/evaluation/report").glob("*.py")))
def test_no_python_file_of_the_report_holds_a_big_web_string(module):
    """The project's rule: no Python string holds more than 40 lines of HTML, CSS or JavaScript."""
    tree = ast.parse((ROOT / "rag_ablation/evaluation/report" / module).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            web = sum(1 for line in node.value.splitlines() if WEB_LINE.search(line))
            assert web <= 40, f"{module}:{node.lineno}: web code belongs in assets/"


# --------------------------------------------------------------------------- the stage


def test_the_stage_writes_the_same_page_twice(project):
    res = run_stage(project, *stage_args(project))
    assert res.returncode == 0, res.stderr
    page = (project / "metrics/report.html").read_bytes()
    res = run_stage(project, *stage_args(project, out="metrics/again.html"))
    assert res.returncode == 0, res.stderr
    assert (project / "metrics/again.html").read_bytes() == page
    blob = blob_of(page.decode())
    assert blob["meta"]["baseline"] == "dense" and blob["meta"]["n_questions"] == 9
    assert blob["sweep"]["winner"] == "bm25@a"


def test_the_sweep_summary_is_optional(project):
    args = stage_args(project, out="metrics/nosweep.html")
    args[args.index("metrics/sweep.json")] = "metrics/no-such-sweep.json"
    res = run_stage(project, *args)
    assert res.returncode == 0, res.stderr
    assert blob_of((project / "metrics/nosweep.html").read_text())["sweep"] is None


@pytest.mark.bad_input
@pytest.mark.parametrize("target, content, message", [
    ("metrics/stats.json", None, "no file metrics/stats.json: run `dvc repro stats`"),
    ("metrics/stats.json", "{broken", "is not valid JSON (line 1): regenerate it with `dvc repro stats`"),
    ("metrics/judge_detail.json", "[1, 2]", "must hold a JSON object; regenerate it with `dvc repro judge_eval`"),
    ("build/runs/bm25.json", None, "no file build/runs/bm25.json: run `dvc repro retrieve@bm25`"),
    ("build/audit.jsonl", '{"id": "q1"}\n', "line 1: missing field(s) doc, span, note"),
    ("metrics/scores/verdicts.csv", "config,id\nbm25,q1,extra\n", "not a row of the verdicts file"),
    ("build/runs/dense.json", '{"status": "ok", "questions": [{"id": "q0"}]}',
     "the run file of 'dense' is not a run the retrieve stage writes"),
])
def test_a_bad_input_is_one_message_and_no_page(tmp_path, target, content, message):
    d = tiny_project(tmp_path)
    if content is None:
        (d / target).unlink()
    else:
        write(d / target, content)
    res = run_stage(d, *stage_args(d))
    assert res.returncode == 2
    assert message in res.stderr and "Traceback" not in res.stderr
    assert not (d / "metrics/report.html").exists()


def test_every_verdict_has_a_colour():
    from rag_ablation.evaluation.statistics.comparison import VERDICTS

    assert set(html.VERDICT_COLOURS) == set(VERDICTS)


def test_the_judge_panel_has_a_canary_card_for_the_combined_judge():
    rate = {"expected_accept": False, "accepted": 0.0, "low": 0.0, "high": 0.096, "accepted_count": 0, "n": 36,
            "invalid": 0, "kind": "question_repeated", "wrong": 0.0}
    detail = {"configs": {}, "grades": {"matching": 160},
              "canaries": {"token_f1": {"question_repeated": rate},
                           "combined": {"question_repeated": {**rate, "accepted": 5 / 36, "accepted_count": 5}}},
              "canary_flags": [{"judge": "combined", "kind": "question_repeated", "accepted": 5 / 36,
                                "accepted_count": 5, "n": 36}]}
    panel = html_data.judge_panel(detail, ["token_f1"], [])
    assert [j["judge"] for j in panel["judges"]] == ["token_f1", "combined"]
    combined = panel["judges"][1]
    assert combined["reason"] == "a model over the judges' scores: its agreement is under Judges by their scores"
    assert [(k["kind"], k["accepted"], k["n"]) for k in combined["canaries"]] == [("question_repeated", 5 / 36, 36)]
    assert panel["canary_flags"] == detail["canary_flags"]


def test_the_score_table_leads_with_the_median_kappa_and_its_refit_interval():
    """report.html's "Judges by their scores": ``kappa`` is judge_eval's headline (the median over
    fold seeds with the refit interval), the one seed's kappa beside it; a detail file from before
    the repeated cross-fit shows that one seed's kappa as before."""
    one_seed = {"estimate": 0.5, "low": 0.3, "high": 0.7, "n": 40}
    entry = {"status": "ok", "auc": {"estimate": 0.8, "low": 0.7, "high": 0.9, "n": 40},
             "crossfit": {"kappa": one_seed, "tpr": {"estimate": 0.7}, "tnr": {"estimate": 0.8}}, "roc": []}
    median = {"estimate": 0.45, "low": 0.2, "high": 0.72, "n": 40, "seeds": 50, "first_seed": 0, "min": 0.3,
              "max": 0.55, "resamples": 200, "skipped": 0, "by_seed": [0.5, 0.45]}
    detail = {"scores": {"primary": "token_f1", "folds": 5, "judges": {"token_f1": {**entry, "kappa": median}},
                         "combined": {"status": "unavailable", "reason": "one judge"}}}
    (row, _) = html_data.score_panel(detail, ["token_f1"])["scores"]
    assert row["kappa"] == {"value": 0.45, "ci_low": 0.2, "ci_high": 0.72, "n": 40} and row["seeds"] == 50
    assert row["kappa_seed"]["value"] == 0.5 and row["tpr"]["value"] == 0.7
    old = {"scores": {**detail["scores"], "judges": {"token_f1": entry}}}
    (row, _) = html_data.score_panel(old, ["token_f1"])["scores"]
    assert row["kappa"]["value"] == 0.5 and row["seeds"] is None


def test_the_judge_panel_carries_the_second_grader_or_one_line_saying_how_to_add_one():
    from rag_ablation.evaluation.judges.grader_agreement import grader_detail
    from rag_ablation.evaluation.judges.grades import Grade, answer_sha256

    hashes = {("c", q): answer_sha256(q) for q in ("q1", "q2")}
    first = [Grade(hashes[("c", q)], "c", "ana", q, "", "correct") for q in ("q1", "q2")]
    second = [Grade(hashes[("c", "q1")], "c", "bo", "q1", "", "correct"),
              Grade(hashes[("c", "q2")], "c", "bo", "q2", "hedges", "incorrect")]
    ok = grader_detail([*first, *second], hashes, ["c"], resamples=50, seed=0, confidence=0.95)
    g = html_data.graders_panel({"graders": ok})
    assert (g["n"], g["graders"], g["table"]) == (2, ["ana", "bo"], {"both_correct": 1, "first_only": 1,
                                                                     "second_only": 0, "both_incorrect": 0})
    assert g["kappa"]["value"] == ok["overall"]["kappa"]["estimate"]
    assert g["disagreements"] == [{"config": "c", "id": "q2", "first": {"grader": "ana", "verdict": "correct", "note": ""},
                                   "second": {"grader": "bo", "verdict": "incorrect", "note": "hedges"},
                                   "adjudicated": None}]
    none = grader_detail(first, hashes, ["c"], resamples=50, seed=0, confidence=0.95)
    assert html_data.graders_panel({"graders": none}) == {"line": f"Second grader: {none['reason']}."}
    assert html_data.graders_panel({}) is None  # a detail file from before: nothing shown
