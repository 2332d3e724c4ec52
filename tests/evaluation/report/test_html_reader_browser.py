"""metrics/report.html as a first-time reader asked for it (issue 36), in headless Debian chromium
driven by Playwright, the network off (the context is offline and every request other than the
page's own file is refused and recorded): names on the cost chart that never overlap (and show
on hover), a legend that says "on the front" and "dominated", axes from zero, hover names on
the letters, verdicts in colour with an arrow, intervals on their own smaller line, the grid's
"fixed by / broken by" filter (its rows counted here from the scores CSV), the searched text of
a query transform and the rank of the relevant chunk on a miss, and the sweep section only on
the data set it was made on. Screenshots go to the test's tmp folder (looked at, never
committed)."""
from __future__ import annotations

import csv
import json
import shutil
from itertools import combinations
from pathlib import Path

import pytest

from evaluation.report.test_html import SEARCHED, run_stage, stage_args, tiny_project

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed "
                               "(pip install playwright; the dev extra has it)")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=f"no chromium at {CHROMIUM} (apt-get install chromium)"),
]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-dev-shm-usage"]


def fixed_and_broken(path: Path, baseline: str, config: str, measure: str = "hit_at_5") -> tuple[set, set]:
    """Question ids ``config`` fixes (a miss in the baseline, a hit here) and breaks, from the CSV."""
    by_id: dict[str, dict[str, str]] = {}
    with path.open(newline="") as f:
        for r in csv.DictReader(f):
            by_id.setdefault(r["id"], {})[r["config"]] = r[measure]
    pairs = [(qid, v.get(baseline, ""), v.get(config, "")) for qid, v in by_id.items()]
    return ({q for q, b, c in pairs if b == "0" and c == "1"}, {q for q, b, c in pairs if b == "1" and c == "0"})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("reader")
    d = tiny_project(root)
    res = run_stage(d, *stage_args(d))
    assert res.returncode == 0, res.stderr
    other = json.loads((d / "metrics/sweep.json").read_text())
    (d / "metrics/sweep_other.json").write_text(json.dumps({**other, "dataset": "covidqa"}))
    args = stage_args(d, out="metrics/other.html")
    args[args.index("metrics/sweep.json")] = "metrics/sweep_other.json"
    res = run_stage(d, *args)
    assert res.returncode == 0, res.stderr
    return d


@pytest.fixture
def page(tmp_path):
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1200, "height": 1000}, offline=True)
            refused: list[str] = []

            def guard(route):
                if route.request.url.startswith("file://"):
                    route.continue_()
                else:
                    refused.append(route.request.url)
                    route.abort()

            context.route("**/*", guard)
            pg = context.new_page()
            errors: list[str] = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.refused = refused  # type: ignore[attr-defined]
            pg.errors = errors  # type: ignore[attr-defined]
            yield pg
            assert refused == [], "no request left the page"
            assert errors == [], "the page's script raised no error"
        finally:
            browser.close()


def open_report(page, path: Path) -> None:
    page.goto(path.as_uri())
    page.wait_for_function("document.body.getAttribute('data-ready') === '1'", timeout=90_000)


def rects(page, selector: str) -> list[dict]:
    return page.evaluate(f"Array.from(document.querySelectorAll({json.dumps(selector)})).map(e => "
                         "{const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, right: r.right, "
                         "bottom: r.bottom, text: e.textContent};})")


def test_the_cost_chart_names_never_overlap_and_show_on_hover(built, page, tmp_path):
    open_report(page, built / "metrics/report.html")
    assert page.evaluate("document.body.getAttribute('data-charts')") == "5"  # forest, cost, answers, ROC, sweep
    names = rects(page, "#cost-chart g.mark-text.role-mark text")
    assert {n["text"] for n in names} <= {"dense", "bm25", "hybrid", "rewrite"} and names
    for a, b in combinations(names, 2):
        assert a["right"] <= b["x"] or b["right"] <= a["x"] or a["bottom"] <= b["y"] or b["bottom"] <= a["y"], (a, b)
    legend = page.evaluate("Array.from(document.querySelectorAll('#cost-chart .role-legend-label text'))"
                           ".map(t => t.textContent)")
    assert legend == ["on the front", "dominated"]
    # hover a point: vega-embed's tooltip names it
    point = page.locator("#cost-chart g.mark-symbol.role-mark path").first
    point.hover()
    page.wait_for_selector("#vg-tooltip-element.visible", timeout=5000)
    tip = page.inner_text("#vg-tooltip-element")
    assert any(name in tip for name in ("dense", "bm25", "hybrid", "rewrite")) and "on the front" in tip or \
        "dominated" in tip
    # axes from where a reader expects: shares from 0, seconds per answer from 0
    first_tick = "document.querySelector('#{} .role-axis-label text').textContent"
    assert float(page.evaluate(first_tick.format("answer-cost"))) == 0
    ticks = page.evaluate("Array.from(document.querySelectorAll('#cost-chart .role-axis-label text'))"
                          ".map(t => t.textContent)")
    assert {"0.0", "1.0"} <= set(ticks) and {"1", "10", "100"} <= set(ticks)  # recall 0 to 1; decades of ms
    note = page.inner_text("#cost-note")
    assert "every config timed alike and warm" in note and "within 50%" in note
    page.locator("#cost").screenshot(path=str(tmp_path / "cost.png"))


def test_letters_verdicts_and_intervals_read_without_colour_or_guessing(built, page, tmp_path):
    open_report(page, built / "metrics/report.html")
    letters = page.evaluate("Array.from(document.querySelectorAll('table.configs tbody tr')).map(r => "
                            "[r.cells[0].querySelector('.letters').getAttribute('title'), r.cells[1].textContent])")
    assert all(title == name.replace(" (baseline)", "") for title, name in letters)
    beats = page.evaluate("Array.from(document.querySelectorAll('table.configs .beats span'))"
                          ".map(s => [s.textContent, s.getAttribute('title')])")
    by_letter = {title: name.replace(" (baseline)", "") for title, name in
                 page.evaluate("Array.from(document.querySelectorAll('table.configs tbody tr')).map(r => "
                               "[r.cells[0].textContent, r.cells[1].textContent])")}
    assert all(title == f"beats {by_letter[ch]}" for ch, title in beats)
    verdicts = page.evaluate("Array.from(document.querySelectorAll('table.configs .verdict')).map(v => "
                             "[v.getAttribute('data-verdict'), v.textContent, getComputedStyle(v).backgroundColor])")
    assert verdicts, "every compared config has a verdict"
    arrows = {"real gain": "\u25b2", "real loss": "\u25bc", "within the noise": "\u25cf", "no change": "\u25a1"}
    for verdict, text, colour in verdicts:
        assert text == f"{arrows[verdict]} {verdict}" and colour not in ("rgba(0, 0, 0, 0)", "transparent")
    # the interval on a second, smaller line, so no cell takes three
    lines = page.evaluate("""Array.from(document.querySelectorAll('table.configs .val')).map(v => {
        const ci = v.querySelector('.ci'); const cell = v.closest('td');
        return [ci ? ci.getBoundingClientRect().top - v.getBoundingClientRect().top : null,
                ci ? parseFloat(getComputedStyle(ci).fontSize) : null, parseFloat(getComputedStyle(v).fontSize),
                cell.getBoundingClientRect().height];
    })""")
    assert lines and all(gap is not None and gap > 5 and small < big for gap, small, big, _ in lines)
    assert max(h for *_, h in lines) < 3 * 14
    page.locator("#configs").screenshot(path=str(tmp_path / "configs.png"))


def test_the_grid_filters_fixed_and_broken_by_a_config(built, page):
    open_report(page, built / "metrics/report.html")
    options = page.evaluate("Array.from(document.querySelectorAll('#config-filter option')).map(o => o.value)")
    assert options[:3] == ["", "fixed:bm25", "broken:bm25"] and "fixed:dense" not in options
    scores = built / "metrics/scores/retrieval.csv"
    for config in ("bm25", "rewrite", "hybrid"):
        fixed, broken = fixed_and_broken(scores, "dense", config)
        for kind, expected in (("fixed", fixed), ("broken", broken)):
            page.select_option("#config-filter", f"{kind}:{config}")
            shown = page.evaluate("Array.from(document.querySelectorAll('#grid-table tr.qrow'))"
                                  ".filter(r => !r.hidden).map(r => r.getAttribute('data-q'))")
            assert set(shown) == expected, (kind, config)
            assert page.inner_text("#grid-count").startswith(f"{len(expected)} of 9")
    stats = json.loads((built / "metrics/stats.json").read_text())
    assert len(fixed_and_broken(scores, "dense", "bm25")[0]) == stats["bm25"]["vs_baseline"]["hit_at_5"]["fixed"]
    page.select_option("#config-filter", "")
    assert page.evaluate("Array.from(document.querySelectorAll('#grid-table tr.qrow')).filter(r => !r.hidden)"
                         ".length") == 9


def test_a_question_shows_the_searched_text_and_where_the_relevant_chunk_ranked(built, page, tmp_path):
    open_report(page, built / "metrics/report.html")
    page.evaluate("location.hash = '#q/q2'")
    page.wait_for_function("document.getElementById('question').getAttribute('data-q') === 'q2'")
    dense = page.locator("#question details[data-config='dense']")
    assert "The first relevant chunk ranked #7 (recall@5 counts the top 5): t/d.md#2" in dense.inner_text()
    deep = dense.locator(".deeper-passage")
    assert deep.get_attribute("data-rank") == "7" and deep.locator("mark.span").count() == 1
    page.locator("#question").screenshot(path=str(tmp_path / "question_q2.png"))
    assert "The relevant chunk is not in the stored top 10" in page.inner_text("#question details[data-config='bm25']") \
        or page.locator("#question details[data-config='bm25'] .deeper").count() == 0
    page.evaluate("location.hash = '#q/q0'")
    page.wait_for_function("document.getElementById('question').getAttribute('data-q') === 'q0'")
    searched = page.locator("#question details[data-config='rewrite'] .searched")
    assert searched.inner_text() == f"Searched with (rewrite): {SEARCHED['q0']}"
    assert page.locator("#question .searched i").count() == 0, "the searched text is text, never markup"
    assert page.locator("#question details[data-config='dense'] .searched").count() == 0  # transform none
    page.evaluate("location.hash = '#q/q1'")  # the rewrite searched q1 with the question itself
    page.wait_for_function("document.getElementById('question').getAttribute('data-q') === 'q1'")
    assert page.locator("#question .searched").count() == 0


def test_the_sweep_section_shows_only_on_the_data_set_it_was_made_on(built, page):
    open_report(page, built / "metrics/report.html")
    assert page.locator("table.sweep").count() == 1 and page.locator("#sweep-chart svg").count() == 1
    assert "data set handbook" in page.inner_text("#sweep-panel")
    open_report(page, built / "metrics/other.html")
    assert page.locator("table.sweep").count() == 0 and page.locator("#sweep-chart svg").count() == 0
    assert "was made on the data set 'covidqa', and this report is on 'handbook'" in page.inner_text("#sweep-panel")
