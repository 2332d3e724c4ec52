"""`rag-ablation label` in headless Chromium, used as a person would: select spans with the mouse,
save, read the refusals on the page, label a pooled query, audit a miss, judge and fix a
model-drafted question. Screenshots of every mode go to ``tmp_path``.

The app runs in a thread under uvicorn on the tiny project of ``tests/authoring/workbench``
(``tiny_project.py``), with fixed searches for the label-queries mode (two configs, named
``dense`` and ``bm25``, whose names must never reach the page) and, for the drafts mode, the
stand-in model ``FixedDrafts`` (it only fixes the drafts' text). Debian's chromium
(``/usr/bin/chromium``) is driven by Playwright's Python package; no browser is downloaded.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed "
                               "(pip install playwright; the dev extra has it)")
uvicorn = pytest.importorskip("uvicorn", reason="uvicorn is not installed (the dev extra has it)")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=f"no chromium at {CHROMIUM} (apt-get install chromium)"),
]

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-dev-shm-usage"]


def _tiny():
    name = "workbench_tiny_project"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests/authoring/workbench/tiny_project.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


DRAFT_QUESTION = "How often can a rider catch a boat from the northern dock?"
DRAFT_SPAN = "leaves every forty minutes from the north pier"
"""The fixed draft of the first sampled passage: its span is not in the passage (not copied exactly)."""


def draft_replies(passages):
    """The replies of the drafts mode's stand-in model (``FixedDrafts``): a draft for the first
    passage shown, and for the second one (which the user judges not answered), in write mode's
    order (the tracks interleaved)."""
    from rag_ablation.authoring.workbench.session import interleaved

    tiny = _tiny()
    first, second = (passages[n] for n in interleaved(passages)[:2])
    return {first.text: tiny.reply(DRAFT_QUESTION, DRAFT_SPAN),
            second.text: tiny.reply("Which tram line serves the kiosk?", "the coastal bus")}


@pytest.fixture
def served(tmp_path, monkeypatch):
    """(base URL, Workbench) of the app serving the tiny project in a thread."""
    from rag_ablation.authoring.workbench.app import create_app, own_hosts
    from rag_ablation.authoring.workbench.session import Workbench, WriteMode
    from rag_ablation.commands.label import bind

    monkeypatch.chdir(tmp_path)
    tiny = _tiny()
    project, params = tiny.make_project(tmp_path)
    tiny.audit_project(project, params)
    project.questions.unlink()  # audit_project wrote two questions; write mode starts from an empty file
    bench = Workbench(project, params)
    docs = {d.doc: d.text for d in bench.view.documents}
    ferries, trams = docs["ferries/operations.md"], docs["trams/maintenance.md"]
    searchers = {"dense": lambda q: [("ferries/operations.md", ferries[34:466]), ("trams/maintenance.md", trams[475:898])],
                 "bm25": lambda q: [("ferries/operations.md", ferries[480:940])]}
    sock = bind(0)
    port = sock.getsockname()[1]
    app = create_app(bench, hosts=own_hosts(port), searchers=searchers,
                     llm=tiny.FixedDrafts(draft_replies(WriteMode(bench).passages)),
                     llm_cache=tmp_path / "cache/prompts.sqlite")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", bench
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def chromium_page():
    """A page of headless Debian chromium; ``page.dialogs`` collects any alert() it shows."""
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            pg = browser.new_page(viewport={"width": 1100, "height": 1400})
            pg.dialogs = []  # type: ignore[attr-defined]
            pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))  # type: ignore[attr-defined]
            yield pg
        finally:
            browser.close()


@pytest.fixture
def page(served):
    with chromium_page() as pg:
        yield pg


def mouse_select(page, selector: str, text: str) -> None:
    """Select ``text`` inside the element ``selector`` with the mouse: press at its first
    character, drag to its last, release (a real selection, as a person makes it)."""
    box = page.evaluate("""([sel, text]) => {
        const el = document.querySelector(sel);
        const at = el.textContent.indexOf(text);
        if (at < 0) return null;
        // the text node and offset of character `n` of el's text (a passage may hold <mark> elements)
        const point = (n) => {
            const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
            for (let node = walk.nextNode(); node; node = walk.nextNode()) {
                if (n < node.textContent.length) return [node, n];
                n -= node.textContent.length;
            }
            return null;
        };
        const r = document.createRange();
        const [first, start] = point(at);
        r.setStart(first, start); r.setEnd(first, start + 1);
        const a = r.getBoundingClientRect();
        const [last, off] = point(at + text.length - 1);
        r.setStart(last, off); r.setEnd(last, off + 1);
        const b = r.getBoundingClientRect();
        return {x0: a.left + 1, y0: a.top + a.height / 2, x1: b.right - 1, y1: b.top + b.height / 2};
    }""", [selector, text])
    assert box, f"{text!r} is not shown in {selector}"
    page.mouse.move(box["x0"], box["y0"])
    page.mouse.down()
    page.mouse.move(box["x1"], box["y1"], steps=8)
    page.mouse.up()


def shows(page, selector: str, fragment: str) -> bool:
    """Whether ``selector``'s text comes to include ``fragment`` within 10 s."""
    try:
        page.wait_for_function("([s, f]) => document.querySelector(s).textContent.includes(f)", arg=[selector, fragment],
                               timeout=10_000)
    except sync_api.TimeoutError:
        print(f"{selector} shows: {page.text_content(selector)!r}")
        return False
    return True


def test_write_mode_saves_a_mouse_selected_span_and_refuses_bad_input_on_the_page(served, page, tmp_path):
    base, bench = served
    page.goto(base + "/")
    page.wait_for_function("() => document.querySelector('#w-passage').textContent.length > 100")
    passage = page.text_content("#w-passage") or ""
    span = next(line for line in passage.split("\n") if len(line) > 60)[4:60].strip()
    mouse_select(page, "#w-passage", span)
    assert page.input_value("#w-span") == span, "the selection fills the span, copied exactly"
    page.fill("#w-question", "How often does the boat leave the northern pier?")
    page.fill("#w-answer", "Every forty minutes.")
    page.wait_for_function("() => document.querySelector('#w-checks').textContent.includes('chunk(s)')")
    first_id = page.input_value("#w-id")
    page.screenshot(path=str(tmp_path / "write-mode.png"), full_page=True)
    page.click("#w-save")
    assert shows(page, "#w-messages", "saved " + first_id)
    line = json.loads(bench.project.questions.read_text(encoding="utf-8").splitlines()[-1])
    assert (line["id"], line["span"], line["doc"]) == (first_id, span, "ferries/operations.md")
    assert line["question"] == "How often does the boat leave the northern pier?"

    page.wait_for_function("(b) => document.querySelector('#w-passage').textContent !== b", arg=passage)
    second = page.text_content("#w-passage") or ""
    good = next(x for x in second.split("\n") if len(x) > 60)[2:70].strip()
    refusals = {
        "span not found in": dict(span="words the corpus never says anywhere at all"),
        "expected at least 20 (labels.min_span)": dict(span=good[:12]),
        f"duplicate id '{first_id}'": dict(span=good, id=first_id),
        "field 'question' must be a non-empty string": dict(span=good, question=""),
    }
    for fragment, fields in refusals.items():
        page.fill("#w-question", fields.get("question", "What does this second passage describe?"))
        page.fill("#w-span", fields["span"])
        page.fill("#w-answer", "Something.")
        page.fill("#w-id", fields.get("id", "main-x-99"))
        page.evaluate("document.querySelector('#w-messages').replaceChildren()")
        page.click("#w-save")
        assert shows(page, "#w-messages", fragment), fragment
        assert page.locator("#w-messages li.problem").count() >= 1
    page.screenshot(path=str(tmp_path / "write-refused.png"), full_page=True)
    assert len(bench.project.questions.read_text(encoding="utf-8").splitlines()) == 1, "nothing refused was written"


def test_a_passage_holding_script_is_shown_as_text(served, page, tmp_path):
    base, _ = served
    page.goto(base + "/")
    for _ in range(4):
        page.wait_for_function("() => document.querySelector('#w-passage').textContent.length > 100")
        if "<script>" in (page.text_content("#w-passage") or ""):
            break
        before = page.text_content("#w-passage")
        page.click("#w-skip")
        page.wait_for_function("(b) => document.querySelector('#w-passage').textContent !== b", arg=before)
    assert "<script>alert('kiosk')</script>" in (page.text_content("#w-passage") or "")
    assert page.locator("#w-passage script").count() == 0
    # the only scripts are the page's own two files
    assert page.eval_on_selector_all("body script", "s => s.map(x => x.getAttribute('src'))") == ["/app.js", "/grade.js"]
    assert page.dialogs == []  # type: ignore[attr-defined]
    page.screenshot(path=str(tmp_path / "script-as-text.png"), full_page=True)


def test_the_pooled_view_names_no_config_and_saves_a_mouse_selected_span(served, page, tmp_path):
    base, bench = served
    queries = tmp_path / "queries.txt"
    queries.write_text("how many bikes can go on one crossing?\nwhat happens in a storm?\n", encoding="utf-8")
    page.goto(base + "/")
    page.click("nav .tab[data-view=queries]")
    page.set_input_files("#q-file", str(queries))
    page.wait_for_function("() => document.querySelectorAll('#q-candidates > li').length === 3")
    html = page.inner_html("#queries")
    names = sorted(bench.params.retrieval)
    assert not [n for n in names if re.search(rf"\b{re.escape(n)}\b", html, re.I)], "the pool names no config"
    assert not re.search(r"\b(rank|score)\b", page.text_content("#q-candidates") or "", re.I)
    span = "the crew counts them against the limit of twelve bicycles"
    items = page.locator("#q-candidates > li")
    n = next(i for i in range(items.count()) if span in (items.nth(i).text_content() or ""))
    mouse_select(page, f"#q-candidates > li:nth-child({n + 1}) .passage", span)
    items.nth(n).locator("button").click()
    page.wait_for_function("() => document.querySelectorAll('#q-spans li').length === 1")
    page.fill("#q-answer", "Twelve bicycles.")
    page.screenshot(path=str(tmp_path / "label-queries.png"), full_page=True)
    page.click("#q-save")
    assert shows(page, "#q-messages", "saved main-queries-01")
    line = json.loads(bench.project.questions.read_text(encoding="utf-8").splitlines()[-1])
    assert (line["question"], line["span"], line["doc"]) == ("how many bikes can go on one crossing?", span,
                                                            "ferries/operations.md")
    page.wait_for_function("() => document.querySelector('#q-text').textContent === 'what happens in a storm?'")
    page.click("#q-none")
    assert shows(page, "#q-messages", "saved unanswerable-queries-01")
    last = json.loads(bench.project.questions.read_text(encoding="utf-8").splitlines()[-1])
    assert (last["slice"], last["span"], last["doc"]) == ("unanswerable", None, None)
    logged = [e["pool"] for e in bench.log.events("question")]
    assert logged == [{"depth": bench.params.workbench.pool_depth, "configs": ["bm25", "dense"]}] * 2


def test_audit_mode_accepts_a_mouse_selected_span(served, page, tmp_path):
    base, bench = served
    tiny = _tiny()
    tiny.audit_project(bench.project, bench.params)  # the two questions the run file and scores name
    page.goto(base + "/")
    page.click("nav .tab[data-view=audit]")
    page.wait_for_function("() => document.querySelectorAll('#a-config option').length > 0")
    page.select_option("#a-config", "dense")
    page.click("#a-load")
    page.wait_for_function("() => document.querySelectorAll('#a-passages > li').length === 2")
    assert "main-trams-01" in (page.text_content("#a-question") or "")
    span = "Wheels are turned on the lathe at Eastgate"
    mouse_select(page, "#a-passages > li:nth-child(1) .passage", span)
    page.fill("#a-passages > li:nth-child(1) input.note", "the depot turns wheels too")
    page.screenshot(path=str(tmp_path / "audit-mode.png"), full_page=True)
    page.click("#a-passages > li:nth-child(1) button:has-text('Accept')")
    assert shows(page, "#a-messages", "accepted")
    line = json.loads(bench.project.audit.read_text(encoding="utf-8").splitlines()[-1])
    assert line == {"id": "main-trams-01", "doc": "trams/maintenance.md", "span": span,
                    "note": "the depot turns wheels too"}
    page.wait_for_function("() => document.querySelector('#a-passages > li:nth-child(1) .decision') !== null")
    page.click("#a-passages > li:nth-child(2) button:has-text('Reject')")
    page.wait_for_function("() => document.querySelector('#a-question').textContent.includes('Nothing left')")


def test_drafts_mode_shows_the_draft_takes_a_verdict_and_a_mouse_fixed_span(served, page, tmp_path):
    base, bench = served
    page.goto(base + "/")
    page.click("nav .tab[data-view=drafts]")
    page.wait_for_function("() => document.querySelector('#d-passage').textContent.length > 100")
    assert page.text_content("#d-draft-question") == DRAFT_QUESTION
    assert page.text_content("#d-draft-span") == DRAFT_SPAN
    assert shows(page, "#d-draft-problems", "the model's span is not in the passage")
    assert shows(page, "#d-progress", "0 of 4 drafts judged")
    assert page.input_value("#d-question") == DRAFT_QUESTION and page.input_value("#d-id") == "generated-ferries-01"
    fix = "leaves the north pier every forty minutes"
    mouse_select(page, "#d-passage", fix)
    assert page.input_value("#d-span") == fix, "the selection replaces the model's span, copied exactly"
    page.click("input[name=d-verdict][value=answerable]")
    page.fill("#d-answer", "Every forty minutes.")
    assert shows(page, "#d-checks", "chunk(s)")
    page.screenshot(path=str(tmp_path / "drafts-mode.png"), full_page=True)
    page.click("#d-save")
    assert shows(page, "#d-messages", "saved generated-ferries-01 (answerable)")
    line = json.loads(bench.project.drafts.read_text(encoding="utf-8").splitlines()[-1])
    assert line == {"id": "generated-ferries-01", "question": DRAFT_QUESTION, "doc": "ferries/operations.md",
                    "span": fix, "answer": "Every forty minutes.", "slice": "generated", "track": "ferries"}
    assert not bench.project.questions.exists(), "drafts never go to the hand-written file"

    assert shows(page, "#d-draft-question", "Which tram line serves the kiosk?")
    page.click("#d-save")
    assert shows(page, "#d-messages", "pick a verdict first")
    page.click("input[name=d-verdict][value=not_answered]")
    page.click("#d-save")
    assert shows(page, "#d-messages", "verdict saved: not answered by its passage; no question written")
    assert shows(page, "#d-progress", "2 of 4 drafts judged: 1 answerable, 0 partly, 1 not answered")
    page.screenshot(path=str(tmp_path / "drafts-judged.png"), full_page=True)
    assert len(bench.project.drafts.read_text(encoding="utf-8").splitlines()) == 1
    log = [json.loads(x) for x in bench.project.drafts.with_suffix(".workbench-log").read_text().splitlines()]
    assert [(e["verdict"], e["id"], e["fixed"]) for e in log] == [
        ("answerable", "generated-ferries-01", {"question": False, "span": True}), ("not_answered", None, None)]
    assert page.dialogs == []  # type: ignore[attr-defined]


CROSS_SITE = """<!doctype html><body>
<img id="img" src="BASE/api/drafts/next">
<script src="BASE/api/write/next"></script>
<form id="form" method="post" action="BASE/api/write/skip" enctype="text/plain">
<input name='{"passage": 0, "reason": "skip", "x": "' value='"}'></form>
</body>"""
"""Another site's page: an image, a script and a form aimed at the workbench's API."""


def test_another_sites_page_cannot_make_the_workbench_draft_sample_or_write(served, page, tmp_path):
    base, bench = served
    page.set_content(CROSS_SITE.replace("BASE", base))
    results = page.evaluate("""async (base) => {
        const img = document.getElementById("img");
        await new Promise((done) => { if (img.complete) done(); img.onload = done; img.onerror = done; });
        const out = {img: img.naturalWidth};
        for (const [name, opts] of [
            ["no-cors", {method: "POST", mode: "no-cors", body: "{}", headers: {"X-Workbench": "1"}}],
            ["cors", {method: "POST", body: "{}", headers: {"X-Workbench": "1", "Content-Type": "application/json"}}],
            ["get", {headers: {"X-Workbench": "1"}}]]) {
            try { const r = await fetch(base + "/api/drafts/next", opts); out[name] = r.type + " " + r.status; }
            catch (e) { out[name] = "refused"; }
        }
        return out;
    }""", base)
    assert results["img"] == 0 and results["cors"] == "refused" and results["get"] == "refused", results
    with page.expect_navigation():
        page.evaluate("document.getElementById('form').submit()")
    assert "refused:" in (page.text_content("body") or "")
    assert not (tmp_path / "cache/prompts.sqlite").exists(), "the model was never asked"
    assert not bench.project.log.exists() and not bench.project.drafts.exists(), "nothing was written"
    page.goto(base + "/")  # the page itself still works
    page.wait_for_function("() => document.querySelector('#w-passage').textContent.length > 100")


def start_command(cwd: Path) -> tuple[subprocess.Popen, str]:
    """`rag-ablation label` run in ``cwd`` as a user runs it; (process, the URL it printed)."""
    proc = subprocess.Popen([sys.executable, "-m", "rag_ablation.commands.main", "label"], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:\d+", line)
    assert m, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
    return proc, m.group(0)


def test_killing_the_server_mid_session_loses_nothing_and_the_page_resumes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _tiny().make_project(tmp_path)
    questions = tmp_path / "data/questions/handbook.jsonl"
    proc, base = start_command(tmp_path)
    try:
        with chromium_page() as page:
            page.goto(base + "/")
            page.wait_for_function("() => document.querySelector('#w-passage').textContent.length > 100")
            text = page.text_content("#w-passage") or ""
            span = next(x for x in text.split("\n") if len(x) > 60)[3:58].strip()
            mouse_select(page, "#w-passage", span)
            page.fill("#w-question", "What does the first sampled passage promise riders?")
            page.fill("#w-answer", "A ferry every forty minutes.")
            page.click("#w-save")
            assert shows(page, "#w-messages", "saved ")
            page.fill("#w-question", "A second question, typed but never saved")
            os.kill(proc.pid, signal.SIGKILL)  # mid-session: a question is being edited
            proc.wait(timeout=10)
    finally:
        proc.kill()
    lines = questions.read_text(encoding="utf-8")
    assert lines.endswith("\n") and [json.loads(x)["span"] for x in lines.splitlines()] == [span]
    proc, base = start_command(tmp_path)
    try:
        with chromium_page() as page:
            page.goto(base + "/")
            assert shows(page, "#w-progress", "1 of 4 sampled passages done")
            assert (page.text_content("#w-passage") or "") != text, "the restart resumes at the next passage"
            page.screenshot(path=str(tmp_path / "resumed.png"), full_page=True)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    assert [json.loads(x)["span"] for x in questions.read_text(encoding="utf-8").splitlines()] == [span]
