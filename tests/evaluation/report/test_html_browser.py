"""metrics/report.html as a reader uses it: opened in headless Chromium with the network off
(DevTools protocol over a pipe, tests/chromium_cdp.py), the charts must draw, the grid must have
one row per question, a click on a cell must show that question's passages with the span
highlighted, the "changed only" filter must leave exactly the questions whose hit@5 differs from
the baseline (counted here from the scores CSV, not from the page's data), and no request may
leave the page. A screenshot of the first screen is saved in the test's tmp folder."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from chromium_cdp import CHROMIUM, Chromium, outside

from conftest import ROOT
from evaluation.report.test_html import EVIL, retrieval_only_detail, run_stage, stage_args, tiny_project

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install "
                                 "chromium); .ci/run installs it")]

VISIBLE_ROWS = "Array.from(document.querySelectorAll('#grid-table tr.qrow')).filter(r => !r.hidden).length"


def changed_from_scores(path: Path, baseline: str, measure: str = "hit_at_5") -> set[str]:
    """Question ids where some config's measure differs from the baseline's (both scored)."""
    by_id: dict[str, dict[str, str]] = {}
    with path.open(newline="") as f:
        for r in csv.DictReader(f):
            by_id.setdefault(r["id"], {})[r["config"]] = r[measure]
    return {qid for qid, values in by_id.items() if values.get(baseline, "") != ""
            and any(v != "" and v != values[baseline] for v in values.values())}


def open_page(browser: Chromium, page: Path) -> None:
    browser.open(page.as_uri())
    browser.wait_for("document.body && document.body.getAttribute('data-ready') === '1'", timeout=90)


def set_filters(browser: Chromium, *, changed: bool, slice_: str = "") -> int:
    browser.evaluate(f"(() => {{ const c = document.getElementById('changed-only'); c.checked = {json.dumps(changed)};"
                     " c.dispatchEvent(new Event('change'));"
                     f" const s = document.getElementById('slice-filter'); s.value = {json.dumps(slice_)};"
                     " s.dispatchEvent(new Event('change')); })()")
    return browser.evaluate(VISIBLE_ROWS)


def marks(browser: Chromium, chart: str, kind: str = "symbol") -> int:
    return browser.evaluate(f"document.querySelectorAll('#{chart} g.mark-{kind}.role-mark > *').length")


def test_the_page_works_offline_as_a_reader_uses_it(tmp_path):
    (tmp_path / "project").mkdir()
    d = tiny_project(tmp_path / "project")
    res = run_stage(d, *stage_args(d))
    assert res.returncode == 0, res.stderr
    data = json.loads((d / "metrics/stats.json").read_text())
    compared = [c for c, m in data.items() if m.get("vs_baseline")]
    with Chromium(CHROMIUM, tmp_path / "profile") as browser:
        open_page(browser, d / "metrics/report.html")
        browser.screenshot(tmp_path / "first_screen.png")
        assert browser.evaluate("document.body.getAttribute('data-charts')") == "5"
        assert browser.evaluate("document.querySelectorAll('.chart-error').length") == 0
        assert marks(browser, "forest") == len(compared) == 3  # one point per compared config
        assert marks(browser, "forest", "rule") == 1 + len(compared)  # the zero line and one interval each
        assert marks(browser, "cost-chart") == 4 and marks(browser, "sweep-chart") == 2
        assert marks(browser, "answer-cost") == 1
        # the judges by their scores: the table (the reason shown as text), the ROC curve, the canary warning
        assert browser.evaluate("Array.from(document.querySelectorAll('table.scores tbody tr'))"
                                ".map(r => r.cells[0].textContent + '|' + r.cells[1].textContent)") == [
            "llm|n/a", "token_f1 (primary)|0.750 (0.400 to 1.000)", "combined|n/a"]
        assert browser.evaluate("document.querySelectorAll('table.scores b').length") == 0
        assert marks(browser, "roc-chart", "line") >= 1
        assert "llm accepts dummy_yes canaries (8 of 8)" in browser.evaluate(
            "document.querySelector('#judge-panel p.flag').textContent")
        # the hand grades' counts in words: what a stale and an unknown grade are
        grades = browser.evaluate("document.querySelector('#judge-panel p.grades').textContent")
        assert grades.startswith("8 hand grades") and "another answer model: stale)" in grades
        assert "no longer exists (unknown); neither is used" in grades
        # the second grader beside the judges: the 2x2 table, kappa, and the disagreement (its note as text)
        card = browser.evaluate("document.querySelector('#judge-panel .card.graders').textContent")
        assert card.startswith("second grader (the ceiling)") and "says correct40" in card
        assert "8 answers graded blind by two graders (ana, bo); Cohen's kappa 0.750 (0.400 to 1.000)" in card
        assert browser.evaluate("Array.from(document.querySelectorAll('table.graders tbody tr'))"
                                ".map(r => Array.from(r.cells).map(c => c.textContent))") == [
            ["bm25", "q2", f"correct by ana ({EVIL})", "incorrect by bo", "not yet"]]
        assert browser.evaluate("document.querySelectorAll('table.graders script').length") == 0
        # support (groundedness), after the scores table: the scorers (a reason with markup as text), the canary
        # warning and table, and per config its shares and split tables (a judge's source with markup as text)
        assert browser.evaluate("Array.from(document.querySelectorAll('#judge-panel > h3')).map(h => h.textContent)")[:3] == [
            "Judges by their scores", "Support (groundedness)", "Answer configs compared, by hand grades"]
        assert "partly and not count as unsupported" in browser.evaluate(
            "document.querySelector('#judge-panel p.support').textContent")
        assert browser.evaluate("Array.from(document.querySelectorAll('table.support-scorers tbody tr'))"
                                ".map(r => Array.from(r.cells).map(c => c.textContent))") == [
            ["lexical_support (primary)", "10 (2 without a score)", "0.800 (0.600 to 0.950)",
             "0.500 (0.100 to 0.800); seeds 0.450 to 0.550", "0.625",
             "share of the answer's content words found in the passages shown"],
            ["llm_support", "3 (9 without a score)", "n/a", "not calibrated: 3 scored support grade(s), fewer than 10 "
             "<b>x</b>", "", "the answer model's probability of SUPPORTED (support@CONFIG)"]]
        assert browser.evaluate("document.querySelectorAll('table.support-scorers b').length") == 0
        assert "\u26a0 Warning: lexical_support accepts 2 of 4 unrelated_copy canaries: a sound scorer rejects every one." in (
            browser.evaluate("Array.from(document.querySelectorAll('#judge-panel p.flag')).map(p => p.textContent)"))
        assert browser.evaluate("Array.from(document.querySelectorAll('table.support-canaries tbody tr'))"
                                ".map(r => Array.from(r.cells).map(c => c.textContent))") == [
            ["lexical_support", "shown_copy", "accept", "100.0% (51.0% to 100.0%)", "4"],
            ["lexical_support", "unrelated_copy", "reject", "50.0% (15.0% to 85.0%)", "4 (1 without a score)"]]
        bm25 = "#judge-panel .support-config[data-config=\"bm25\"]"
        assert browser.evaluate(f"document.querySelector('{bm25} p').textContent") == (
            "Supported: 50.0% (20.0% to 80.0%) (3/6) of the answers with a hand support grade; 62.5% (30.0% to 86.0%) "
            "(5/8) of every answer with a known support verdict (hand grades, else lexical_support).")
        assert browser.evaluate(f"Array.from(document.querySelectorAll('{bm25} table.support-split'))"
                                ".map(t => t.getAttribute('data-source'))") == ["hand", "judge"]
        split = f"{bm25} table.support-split[data-source=\"judge\"]"
        assert browser.evaluate(f"Array.from(document.querySelectorAll('{split} tbody tr'))"
                                ".map(r => Array.from(r.cells).map(c => c.textContent))") == [
            ["yes", "2", "0", "1", "2"], ["no", "1", "0", "0", "2"]]
        assert browser.evaluate(f"document.querySelector('{split}').previousElementSibling.textContent") == (
            "Correctness from judge: token_f1 <i>fixed</i>; support from hand grades, else lexical_support; 1 answer(s) "
            "with an unknown correctness verdict left out.")
        assert browser.evaluate(f"document.querySelectorAll('{bm25} i, {bm25} b').length") == 0
        assert browser.evaluate("document.querySelectorAll('#grid-table tr.qrow').length") == 9
        cells = browser.evaluate("Array.from(document.querySelectorAll('table.answer-comparison tbody tr'))"
                                 ".map(r => Array.from(r.cells).map(c => c.textContent))")
        assert cells == [["hybrid", "8", "50.0%", "62.5%", "+12.5 pts (-25.0 pts to +50.0 pts)", "1.00", "q1, q7", "q2"],
                         ["dense", "unavailable: no question hand-graded for both", "", "", "", "", "", ""]]
        assert browser.evaluate("Array.from(document.querySelectorAll('table.answer-comparison a'))"
                                ".map(a => a.getAttribute('href'))") == ["#q/q1", "#q/q7", "#q/q2"]
        # the fixture's interval resampled source documents (stats.cluster): the note above the table says so
        note = browser.evaluate("document.querySelector('table.answer-comparison').previousElementSibling.textContent")
        assert "paired bootstrap interval (resampling whole source documents: stats.cluster), the questions" in note
        cells = browser.evaluate("Array.from(document.querySelectorAll('table.answer-measures tbody tr'))"
                                 ".map(r => Array.from(r.cells).map(c => c.textContent))")
        assert [c[:4] + c[5:6] + c[8:] for c in cells] == [
            ["token F1", "hybrid", "8", "0.113 / 0.500", "8 / 0", "\u25b2 real gain",
             "q0, q1, q2, q3, q4, q5, q6, q7", "none"],
            ["LLM judge P(correct)", "", "unavailable: no score <b>x</b>", "", "", "", "", ""]]  # the reason as text
        assert browser.evaluate("Array.from(document.querySelectorAll('table.answer-measures a'))"
                                ".map(a => a.getAttribute('href'))") == [f"#q/q{i}" for i in range(8)]
        assert browser.evaluate("document.querySelectorAll('table.answer-measures b').length") == 0

        browser.evaluate("document.querySelector('#grid-table tr.qrow[data-q=\"q0\"] td.cell[data-config=\"dense\"] a')"
                         ".click()")
        browser.wait_for("document.getElementById('question').getAttribute('data-q') === 'q0'")
        assert browser.evaluate("document.querySelectorAll('#question .passage').length") == 4 * 5  # 4 runs, top 5
        relevant = browser.evaluate("Array.from(document.querySelectorAll('#question .passage.relevant'))"
                                    ".map(p => p.querySelector('mark.span') ? p.querySelector('mark.span').textContent"
                                    " : '')")
        assert relevant == ["the span of question 0 sits in its chunk"] * 3  # dense, bm25, hybrid found it
        # the passage's <script> is shown as text: no element was made of it, and it did not run
        assert browser.evaluate("document.querySelectorAll('#question script, #question img, #question b').length") == 0
        assert EVIL.split(" & ")[0] in browser.evaluate("document.querySelector('#question .passage.relevant .text')"
                                                        ".textContent")
        assert browser.evaluate("document.title") == "Retrieval ablation report"
        assert "<img src=x" in browser.evaluate("document.querySelector('#question .answer').textContent")

        expected = changed_from_scores(d / "metrics/scores/retrieval.csv", "dense")
        assert set_filters(browser, changed=True) == len(expected) == 4
        shown = browser.evaluate("Array.from(document.querySelectorAll('#grid-table tr.qrow')).filter(r => !r.hidden)"
                                 ".map(r => r.getAttribute('data-q'))")
        assert set(shown) == expected
        assert set_filters(browser, changed=False, slice_="paraphrase") == 4
        assert set_filters(browser, changed=True, slice_="paraphrase") == len({"q7"})
        assert set_filters(browser, changed=False) == 9
        requests = browser.requests()
        assert requests and outside(requests) == [], "no request left the page"
        assert browser.failed() == []


EXAMPLE_INPUTS = [ROOT / "data/build/runs", ROOT / "data/build/questions.jsonl", ROOT / "metrics/stats.json"]


@pytest.mark.skipif(not all(p.exists() for p in EXAMPLE_INPUTS),
                    reason="the example's pipeline outputs are not here: run `make run` (dvc repro) first")
def test_the_example_page_is_small_and_every_count_matches_the_scores(tmp_path):
    out = tmp_path / "report.html"
    args = stage_args(ROOT, out=str(out))
    args = [a.replace("build/", "data/build/") if a.startswith("build/") else a for a in args]
    args[args.index("data/build/audit.jsonl")] = "data/build/dataset/audit.jsonl"
    res = run_stage(ROOT, *args)
    assert res.returncode == 0, res.stderr
    assert out.stat().st_size < 5_000_000
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    baseline = (params.get("stats") or {}).get("baseline", "dense")
    expected = changed_from_scores(ROOT / "metrics/scores/retrieval.csv", baseline)
    n_questions = sum(1 for line in (ROOT / "data/build/questions.jsonl").read_text().splitlines() if line.strip())
    with Chromium(CHROMIUM, tmp_path / "profile") as browser:
        open_page(browser, out)
        browser.screenshot(tmp_path / "first_screen.png")
        # forest, cost, answers, ROC, and the sweep when metrics/sweep.json was made on the example's data set
        sweep_path = ROOT / "metrics/sweep.json"
        sweep = json.loads(sweep_path.read_text()) if sweep_path.exists() else {}
        shown = sweep.get("dataset") == params.get("dataset") and bool(sweep.get("ranking"))
        assert browser.evaluate("document.body.getAttribute('data-charts')") == str(4 + shown)
        # the answered configs on every answer: one row per measure and compared config, as judge_detail.json has them
        block = json.loads((ROOT / "metrics/judge_detail.json").read_text())["measure_comparison"]
        expected_rows = [[block["measures"][m]["label"], c] for m in block["order"]
                         for c in block["measures"][m].get("configs", {"": 0})]
        assert browser.evaluate("Array.from(document.querySelectorAll('table.answer-measures tbody tr'))"
                                ".map(r => [r.cells[0].textContent, r.cells[1].textContent])") == expected_rows
        compared = browser.evaluate("window.reportData.forest.length")
        assert compared > 0 and marks(browser, "forest") == compared
        assert browser.evaluate("document.querySelectorAll('#grid-table tr.qrow').length") == n_questions
        assert set_filters(browser, changed=True) == len(expected)
        first = browser.evaluate("document.querySelector('#grid-table tr.qrow:not([hidden])').getAttribute('data-q')")
        browser.evaluate("document.querySelector('#grid-table tr.qrow:not([hidden]) td.cell a').click()")
        browser.wait_for(f"document.getElementById('question').getAttribute('data-q') === {json.dumps(first)}")
        assert browser.evaluate("document.querySelectorAll('#question .passage').length") > 0
        assert outside(browser.requests()) == [] and browser.failed() == []


def test_a_continuous_measure_is_named_with_its_test_in_every_note(tmp_path):
    """Verdicts on MRR@10 (``stats.measure: rr_at_10``) on a data set whose rows carry nDCG@10 and
    recall@100: the config table gains both columns and puts the letters after MRR@10, the forest
    and table notes name the paired sign-flip test, the grid says it shows recall@10 hits while
    the verdicts use MRR@10, and the sweep panel names its own measure (recall@5) and test."""
    import yaml as _yaml

    from rag_ablation.core.config import load_config
    from rag_ablation.evaluation.scoring.graded import GRADED_COLUMNS
    from rag_ablation.evaluation.scoring.scores import RETRIEVAL_FIELDS, read_scores, write_scores
    from rag_ablation.evaluation.statistics.stats import analyze, to_metrics

    (tmp_path / "project").mkdir()
    d = tiny_project(tmp_path / "project")
    params = _yaml.safe_load((d / "params.yaml").read_text())
    params["stats"]["measure"] = "rr_at_10"
    (d / "params.yaml").write_text(_yaml.safe_dump(params, sort_keys=False))
    rows = read_scores(d / "metrics/scores/retrieval.csv")
    for r in rows:  # graded columns on every answerable row, as the score stage writes them for graded qrels
        if r["config"] == "bm25" and r["answerable"]:
            r["rr_at_10"] = 1.0  # bm25 first on every question: it beats the others on MRR@10
        r["ndcg_at_10"] = r["rr_at_10"] if r["answerable"] else None
        r["recall_at_100"] = float(r["hit_at_10"]) if r["answerable"] else None
    write_scores(d / "metrics/scores/retrieval.csv", rows, (*RETRIEVAL_FIELDS, *GRADED_COLUMNS))
    settings = load_config(d / "params.yaml")
    result = analyze(rows, [], configs=list(settings.retrieval), answered=[], settings=settings.stats)
    (d / "metrics/stats.json").write_text(json.dumps(to_metrics(result)))
    res = run_stage(d, *stage_args(d))
    assert res.returncode == 0, res.stderr
    with Chromium(CHROMIUM, tmp_path / "profile") as browser:
        open_page(browser, d / "metrics/report.html")
        browser.screenshot(tmp_path / "continuous.png")
        header = browser.evaluate("Array.from(document.querySelectorAll('#configs-table thead th'))"
                                  ".map(th => th.textContent)")
        assert header[3:9] == ["recall@1", "recall@5", "recall@10", "MRR@10", "nDCG@10", "recall@100"], header
        assert "change (MRR@10)" in header
        mrr = header.index("MRR@10")
        lettered = browser.evaluate("Array.from(document.querySelectorAll('#configs-table tbody tr'))"
                                    ".map(r => Array.from(r.cells).findIndex(c => c.querySelector('.beats')))"
                                    ".filter(i => i >= 0)")
        assert lettered and set(lettered) == {mrr}, lettered
        forest = browser.evaluate("document.getElementById('forest-note').textContent")
        assert "the change in MRR@10" in forest and "Holm-adjusted paired sign-flip permutation test" in forest
        assert "paired sign-flip permutation test" in browser.evaluate(
            "document.getElementById('configs-note').textContent")
        assert "(recall@10; the verdicts use MRR@10, which is not 0/1)" in browser.evaluate(
            "document.getElementById('grid-note').textContent")
        assert "latencies within 50% or 5 ms of each other count as the same cost" in browser.evaluate(
            "document.getElementById('cost-note').textContent")
        sweep = browser.evaluate("document.querySelector('#sweep-panel p').textContent")
        assert "Measure: recall@5; pairs compared with the exact sign test" in sweep, sweep
        assert browser.evaluate("Array.from(document.querySelectorAll('#sweep-panel th'))"
                                ".map(th => th.textContent)")[2] == "recall@5"
        assert outside(browser.requests()) == [] and browser.failed() == []


def test_a_run_with_no_answers_judged_shows_one_line_and_no_empty_charts(tmp_path):
    """A retrieval-only run (``llm.backend: none``: every answered config's answers unavailable,
    nothing judged, no hand grade): the judges section is one line naming why, the answer and ROC
    charts stay empty without a "No data" note each, no question repeats that its answers are
    unavailable; and a miss whose relevant chunk ranked beyond the stored ranking says it is not
    in the stored top 10 (dense on q3)."""
    (tmp_path / "project").mkdir()
    d = tiny_project(tmp_path / "project")
    answered = yaml.safe_load((d / "params.yaml").read_text())["generation"]["configs"]
    for name in answered:
        (d / f"build/answers/{name}.json").write_text(json.dumps({"status": "unavailable", "answers": [],
                                                                  "reason": "the answer model is off"}))
    (d / "metrics/scores/verdicts.csv").unlink()  # judge_eval wrote no verdict
    (d / "metrics/judge_detail.json").write_text(json.dumps(retrieval_only_detail(answered)))
    res = run_stage(d, *stage_args(d))
    assert res.returncode == 0, res.stderr
    with Chromium(CHROMIUM, tmp_path / "profile") as browser:
        open_page(browser, d / "metrics/report.html")
        browser.screenshot(tmp_path / "retrieval_only.png")
        panel = browser.evaluate("Array.from(document.querySelectorAll('#judge-panel > *'))"
                                 ".map(e => e.tagName + ': ' + e.textContent)")
        assert panel == ["P: No answers were judged: bm25, hybrid_rerank: unavailable: the answer model is off "
                         "(llm.backend: none)."]
        assert browser.evaluate("document.getElementById('answer-cost').textContent") == ""
        assert browser.evaluate("document.getElementById('roc-chart').textContent") == ""
        assert browser.evaluate("document.body.getAttribute('data-charts')") == "3"  # forest, cost, sweep
        browser.evaluate("location.hash = '#q/q3'")
        browser.wait_for("document.getElementById('question').getAttribute('data-q') === 'q3'")
        dense = browser.evaluate("document.querySelector('#question details[data-config=\"dense\"] summary')"
                                 ".textContent")
        assert dense == "dense (baseline): recall@5 miss, relevant chunk not in the stored top 10"
        assert browser.evaluate("document.querySelector('#question details[data-config=\"dense\"] p.deeper')"
                                ".textContent") == ("The relevant chunk is not in the stored top 10: it ranked below "
                                                    "#10, or was not retrieved.")
        text = browser.evaluate("document.getElementById('question').textContent")
        assert "answers unavailable" not in text and "the answer model is off" not in text
        assert outside(browser.requests()) == [] and browser.failed() == []


def test_support_without_hand_support_grades_is_one_line(tmp_path):
    """judge_eval's support block with no hand support grade: the judges panel shows one line saying
    so and how to add them, and no support heading or table."""
    (tmp_path / "project").mkdir()
    d = tiny_project(tmp_path / "project")
    detail = json.loads((d / "metrics/judge_detail.json").read_text())
    detail["support"] = {"status": "no grades", "positive": "supported", "levels": {"supported": 0, "partly": 0, "not": 0},
                         "calibration": {}, "primary": None, "source": "hand grades",
                         "canaries": {"status": "unavailable", "reason": "no scorer is calibrated on support grades"}}
    (d / "metrics/judge_detail.json").write_text(json.dumps(detail))
    res = run_stage(d, *stage_args(d))
    assert res.returncode == 0, res.stderr
    with Chromium(CHROMIUM, tmp_path / "profile") as browser:
        open_page(browser, d / "metrics/report.html")
        line = browser.evaluate("Array.from(document.querySelectorAll('#judge-panel p.support')).map(p => p.textContent)")
        assert len(line) == 1 and "no hand support grades" in line[0] and "rag-ablation grade --support" in line[0]
        assert "Support (groundedness)" not in browser.evaluate(
            "Array.from(document.querySelectorAll('#judge-panel > h3')).map(h => h.textContent)")
        assert browser.evaluate("document.querySelectorAll('table.support-scorers, table.support-split').length") == 0
        assert outside(browser.requests()) == [] and browser.failed() == []


def test_configs_left_out_of_the_run_are_one_line(tmp_path):
    """A config marked ``optional`` in the default run (``run_configs: default``): the summary names
    it once with the command that runs it; it has no row in the configs table, no line among the
    unavailable configs (where hybrid_rerank, which ran and could not load its model, stays) and no
    searched text of its transform."""
    (tmp_path / "project").mkdir()
    d = tiny_project(tmp_path / "project")
    params = yaml.safe_load((d / "params.yaml").read_text())
    params["retrieval"]["rewrite"]["optional"] = True
    params["run_configs"] = "default"
    (d / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    res = run_stage(d, *stage_args(d))
    assert res.returncode == 0, res.stderr
    with Chromium(CHROMIUM, tmp_path / "profile") as browser:
        open_page(browser, d / "metrics/report.html")
        summary = browser.evaluate("document.getElementById('summary').textContent")
        assert summary.endswith("3 of 4 configs available. Not run: rewrite (left out by run_configs; "
                                "dvc exp run -S run_configs=all runs every config)."), summary
        table = browser.evaluate("document.getElementById('configs-table').textContent")
        assert "rewrite" not in table and "dense" in table and "hybrid" in table
        gone = browser.evaluate("document.getElementById('unavailable').textContent")
        assert "hybrid_rerank" in gone and "rewrite" not in gone
        browser.evaluate("location.hash = '#q/q0'")
        browser.wait_for("document.getElementById('question').getAttribute('data-q') === 'q0'")
        assert "rewrite" not in browser.evaluate("document.getElementById('question').textContent")
        assert outside(browser.requests()) == [] and browser.failed() == []
