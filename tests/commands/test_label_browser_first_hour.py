"""`rag-ablation label` in headless Chromium: what a first-time user asked for in their first hour.

The tracks interleaved or one chosen, the selected span kept highlighted in its passage, the saved
questions listed with an undo of the last save, the label-queries form kept in view (and its
slice kept from query to query), and the audit menu listing only the configs that ran. The app,
the browser and the mouse are ``test_label_browser``'s (Debian's chromium, nothing downloaded, no
network); screenshots go to ``tmp_path``.
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path


def _browser_tests():
    """``test_label_browser``, imported by path (the tests run with ``--import-mode=importlib``)."""
    name = "workbench_browser_tests"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("test_label_browser.py"))
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


_b = _browser_tests()
pytestmark = _b.pytestmark
served, page = _b.served, _b.page  # the fixtures
_tiny, mouse_select, shows = _b._tiny, _b.mouse_select, _b.shows


def passage_text(pg) -> str:
    return pg.text_content("#w-passage") or ""


def wait_passage(pg, other_than: str = "") -> str:
    pg.wait_for_function("(b) => { const t = document.querySelector('#w-passage').textContent;"
                         " return t.length > 100 && t !== b; }", arg=other_than)
    return passage_text(pg)


def test_write_mode_takes_the_tracks_in_turn_or_the_one_chosen(served, page, tmp_path):
    base, bench = served
    page.goto(base + "/")
    first = wait_passage(page)
    assert page.text_content("#w-doc") == "ferries/operations.md (track ferries)"
    options = page.eval_on_selector_all("#w-track option", "os => os.map(o => [o.value, o.textContent])")
    assert options == [["", "every track, in turn"], ["ferries", "ferries (0 of 2 done)"], ["trams", "trams (0 of 2 done)"]]
    page.click("#w-skip")
    wait_passage(page, first)
    assert page.text_content("#w-doc") == "trams/maintenance.md (track trams)", "the second passage is the other track's"
    page.select_option("#w-track", "ferries")
    assert shows(page, "#w-doc", "ferries/operations.md")
    assert shows(page, "#w-progress", "1 of 4 sampled passages done; track ferries: 1 of 2")
    assert page.input_value("#w-track") == "ferries", "the choice stays after the menu is refilled"
    page.screenshot(path=str(tmp_path / "write-track-chosen.png"), full_page=True)
    shown = passage_text(page)
    page.click("#w-skip")
    assert shows(page, "#w-passage", "Every sampled passage of track ferries is done.")
    assert shown != first and not bench.project.questions.exists()


def test_the_selected_span_stays_highlighted_while_the_form_is_filled(served, page, tmp_path):
    base, _ = served
    page.goto(base + "/")
    text = wait_passage(page)
    span = "leaves the north pier every forty minutes"
    assert text.count(span) == 1
    mouse_select(page, "#w-passage", span)
    page.click("#w-question")
    page.keyboard.type("How often does the boat leave?")
    assert page.evaluate("window.getSelection().toString()") == "", "the mouse selection itself is gone"
    assert page.eval_on_selector_all("#w-passage mark.span", "ms => ms.map(m => m.textContent)") == [span]
    assert page.text_content("#w-passage") == text, "the passage's text is unchanged around the mark"
    page.screenshot(path=str(tmp_path / "span-highlighted.png"), full_page=True)
    page.fill("#w-span", "the north pier every forty minutes")  # trimmed by hand: the mark follows
    page.dispatch_event("#w-span", "input")
    assert page.text_content("#w-passage mark.span") == "the north pier every forty minutes"
    page.fill("#w-span", "a span typed by hand that the passage never holds")
    page.dispatch_event("#w-span", "input")
    assert page.locator("#w-passage mark").count() == 0, "nothing is marked for a span not in the passage"


def test_saved_questions_are_listed_and_the_last_save_can_be_undone(served, page, tmp_path):
    base, bench = served
    page.goto(base + "/")
    text = wait_passage(page)
    assert shows(page, "#w-saved-count", "No question in")
    assert page.is_hidden("#w-undo")
    span = "leaves the north pier every forty minutes"
    mouse_select(page, "#w-passage", span)
    page.fill("#w-question", "How often does the harbour boat sail?")
    page.fill("#w-answer", "Every forty minutes.")
    page.click("#w-save")
    assert shows(page, "#w-messages", "saved main-ferries-01")
    assert shows(page, "#w-saved", "main-ferries-01 (main) How often does the harbour boat sail?")
    assert shows(page, "#w-saved", "ferries/operations.md: " + span)
    assert shows(page, "#w-undo", "Undo the last save (main-ferries-01)")
    assert shows(page, "#w-saved-count", "1 question(s) in")
    wait_passage(page, text)
    page.screenshot(path=str(tmp_path / "saved-list.png"), full_page=True)
    saved = bench.project.questions.read_text(encoding="utf-8")

    page.click("#w-undo")
    assert shows(page, "#w-messages", "undone: main-ferries-01 is no longer in the question file; its passage is back")
    assert bench.project.questions.read_text(encoding="utf-8") == "", "the line is gone"
    assert passage_text(page) == text, "its passage is shown again"
    assert page.input_value("#w-question") == "How often does the harbour boat sail?"
    assert (page.input_value("#w-span"), page.input_value("#w-id")) == (span, "main-ferries-01")
    assert page.text_content("#w-passage mark.span") == span
    assert shows(page, "#w-saved-count", "No question in") and page.is_hidden("#w-undo")
    page.screenshot(path=str(tmp_path / "undone.png"), full_page=True)
    page.fill("#w-question", "How often does the harbour ferry sail?")
    page.click("#w-save")
    assert shows(page, "#w-messages", "saved main-ferries-01")
    line = json.loads(bench.project.questions.read_text(encoding="utf-8"))
    assert line == {**json.loads(saved), "question": "How often does the harbour ferry sail?"}
    assert [(e["kind"], e["id"]) for e in bench.log.events()] == [
        ("question", "main-ferries-01"), ("undo", "main-ferries-01"), ("question", "main-ferries-01")]


def test_the_query_form_stays_in_view_and_keeps_its_slice(served, page, tmp_path):
    base, bench = served
    queries = tmp_path / "queries.txt"
    queries.write_text("how many bikes can go on one crossing?\nwhat happens in a storm?\n", encoding="utf-8")
    page.set_viewport_size({"width": 1100, "height": 600})
    page.goto(base + "/")
    page.click("nav .tab[data-view=queries]")
    page.set_input_files("#q-file", str(queries))
    page.wait_for_function("() => document.querySelectorAll('#q-candidates > li').length === 3")
    page.locator("#q-candidates > li").last.scroll_into_view_if_needed()
    assert page.evaluate("window.scrollY") > 200, "the candidates are longer than the window"
    box, height = page.locator("#q-save").bounding_box(), page.evaluate("window.innerHeight")
    assert box and 0 <= box["y"] and box["y"] + box["height"] <= height, "Save is in view beside the last candidate"
    assert page.locator("#q-text").bounding_box()["y"] >= 0
    span = "the crew counts them against the limit of twelve bicycles"
    items = page.locator("#q-candidates > li")
    n = next(i for i in range(items.count()) if span in (items.nth(i).text_content() or ""))
    items.nth(n).locator(".passage").scroll_into_view_if_needed()
    mouse_select(page, f"#q-candidates > li:nth-child({n + 1}) .passage", span)
    assert page.text_content(f"#q-candidates > li:nth-child({n + 1}) .passage mark.span") == span
    items.nth(n).locator("button").click()
    assert page.text_content(f"#q-candidates > li:nth-child({n + 1}) .passage mark.marked") == span, \
        "an added span stays marked in its passage"
    page.select_option("#q-slice", "identifier")
    page.fill("#q-answer", "Twelve bicycles.")
    page.screenshot(path=str(tmp_path / "queries-sticky.png"))
    page.click("#q-save")
    assert shows(page, "#q-messages", "saved main-queries-01")
    assert json.loads(bench.project.questions.read_text(encoding="utf-8"))["slice"] == "identifier"
    page.wait_for_function("() => document.querySelector('#q-text').textContent === 'what happens in a storm?'")
    assert page.input_value("#q-slice") == "identifier", "the slice stays as picked"
    assert shows(page, "#q-saved", "main-queries-01 (identifier) how many bikes can go on one crossing?")
    page.click("#q-undo")
    assert shows(page, "#q-messages", "undone: main-queries-01")
    assert shows(page, "#q-text", "how many bikes can go on one crossing?"), "the undone query is to label again"
    assert bench.project.questions.read_text(encoding="utf-8") == ""


def test_the_audit_menu_lists_only_the_configs_that_ran(served, page, tmp_path):
    from rag_ablation.core.io import write_json

    base, bench = served
    _tiny().audit_project(bench.project, bench.params)  # dense ran
    write_json(bench.project.runs / "rewrite.json", {"config": "rewrite", "status": "unavailable",
                                                           "reason": "the LLM is off", "passages": {},
                                                           "questions": []})
    page.goto(base + "/")
    page.click("nav .tab[data-view=audit]")
    page.wait_for_function("() => document.querySelectorAll('#a-config option').length > 0")
    assert page.eval_on_selector_all("#a-config option", "os => os.map(o => o.value)") == ["dense"]
    assert shows(page, "#a-left-out", "; rewrite: did not run (unavailable: the LLM is off)")
    assert shows(page, "#a-left-out", "bm25, hybrid, ")
    assert shows(page, "#a-left-out", ": no run file (run `dvc repro`)")
    page.click("#a-load")
    page.wait_for_function("() => document.querySelectorAll('#a-passages > li').length === 2")
    span = "Wheels are turned on the lathe at Eastgate"
    mouse_select(page, "#a-passages > li:nth-child(1) .passage", span)
    assert page.text_content("#a-passages > li:nth-child(1) .passage mark.span") == span
    page.screenshot(path=str(tmp_path / "audit-menu.png"), full_page=True)


UNDO_FROM_ANOTHER_SITE = """<!doctype html><body>
<img id="img" src="BASE/api/questions/undo">
<form id="form" method="post" action="BASE/api/questions/undo" enctype="text/plain">
<input name='{"id": "ID", "x": "' value='"}'></form>
</body>"""
"""Another site's page aiming an image, fetches and a form at the undo endpoint."""


def test_another_sites_page_cannot_undo_a_save(served, page):
    from rag_ablation.authoring.workbench.session import WriteMode

    base, bench = served
    write = WriteMode(bench)
    p = write.next()["passage"]
    span = "leaves the north pier every forty minutes"
    saved = write.save({"passage": p["index"], "question": "How often does the boat sail?", "span": span,
                        "span_start": p["text"].find(span), "answer": "Every forty minutes.", "slice": "main",
                        "id": "main-ferries-01"})
    files = {f: f.read_bytes() for f in (bench.project.questions, bench.project.log)}
    page.set_content(UNDO_FROM_ANOTHER_SITE.replace("BASE", base).replace("ID", saved["id"]))
    results = page.evaluate("""async ([base, id]) => {
        const img = document.getElementById("img");
        await new Promise((done) => { if (img.complete) done(); img.onload = done; img.onerror = done; });
        const out = {img: img.naturalWidth};
        const body = JSON.stringify({id: id});
        for (const [name, opts] of [
            ["no-cors", {method: "POST", mode: "no-cors", body: body, headers: {"X-Workbench": "1"}}],
            ["no-cors plain", {method: "POST", mode: "no-cors", body: body}],
            ["cors", {method: "POST", body: body, headers: {"X-Workbench": "1", "Content-Type": "application/json"}}]]) {
            try { const r = await fetch(base + "/api/questions/undo", opts); out[name] = r.type + " " + r.status; }
            catch (e) { out[name] = "refused"; }
        }
        return out;
    }""", [base, saved["id"]])
    assert results["img"] == 0 and results["cors"] == "refused", results
    with page.expect_navigation():
        page.evaluate("document.getElementById('form').submit()")
    assert "refused:" in (page.text_content("body") or "")
    assert {f: f.read_bytes() for f in files} == files, "the save is still there, nothing logged"
    assert bench.undoable() == saved["id"]
