"""The workbench's page: HTML, script and style, served by the app itself (no CDN, nothing
fetched from elsewhere). The script inserts every text from the corpus, the questions and the
server with ``textContent`` (never ``innerHTML``), so a passage holding ``<script>`` is shown
as text. The label-queries view names no retrieval config anywhere (its pool is config-blind).
The drafts view shows the model's draft beside its passage and saves a verdict per draft.
"""
from __future__ import annotations

HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>rag-ablation label</title>
<link rel="stylesheet" href="/app.css">
</head>
<body>
<header>
  <h1>rag-ablation label</h1>
  <nav>
    <button type="button" class="tab" data-view="write">Write from passages</button>
    <button type="button" class="tab" data-view="queries">Label real queries</button>
    <button type="button" class="tab" data-view="audit">Audit misses</button>
    <button type="button" class="tab" data-view="drafts">Model drafts</button>
  </nav>
</header>

<section id="write" class="view">
  <p id="w-progress" class="progress"></p>
  <p class="meta">Document: <span id="w-doc"></span></p>
  <div id="w-passage" class="passage"></div>
  <div class="form">
    <label>Question, in your own words <textarea id="w-question" rows="2"></textarea></label>
    <label>Answering span: select it with the mouse in the passage <textarea id="w-span" rows="2"></textarea></label>
    <label>Reference answer (one line) <input id="w-answer" type="text"></label>
    <label>Slice <select id="w-slice"></select></label>
    <label>Id <input id="w-id" type="text"></label>
    <div class="buttons">
      <button type="button" id="w-save">Save</button>
      <button type="button" id="w-skip">Skip</button>
      <button type="button" id="w-code">Mostly code/table</button>
    </div>
    <ul id="w-messages" class="messages"></ul>
  </div>
  <h2>Live checks</h2>
  <ul id="w-checks" class="messages"></ul>
</section>

<section id="queries" class="view" hidden>
  <label>Queries file (one query a line, or JSON lines)
    <input id="q-file" type="file" accept=".txt,.jsonl,.json,text/plain"></label>
  <p id="q-progress" class="progress"></p>
  <p class="meta">Query: <strong id="q-text"></strong></p>
  <p class="hint">Candidate passages, pooled and shuffled. Select the answering text in a passage, then add it.</p>
  <ol id="q-candidates" class="candidates"></ol>
  <h2>Marked spans</h2>
  <ul id="q-spans"></ul>
  <div class="form">
    <label>Question (the query as asked) <textarea id="q-question" rows="2"></textarea></label>
    <label>Reference answer (one line) <input id="q-answer" type="text"></label>
    <label>Slice <select id="q-slice"></select></label>
    <label>Id <input id="q-id" type="text"></label>
    <div class="buttons">
      <button type="button" id="q-save">Save</button>
      <button type="button" id="q-none">Nothing here answers it</button>
      <button type="button" id="q-skip">Skip</button>
    </div>
    <ul id="q-messages" class="messages"></ul>
  </div>
  <h2>Live checks</h2>
  <ul id="q-checks" class="messages"></ul>
</section>

<section id="audit" class="view" hidden>
  <label>Config <select id="a-config"></select></label>
  <button type="button" id="a-load">Show its misses</button>
  <p id="a-progress" class="progress"></p>
  <ul id="a-messages" class="messages"></ul>
  <div id="a-question"></div>
  <ol id="a-passages" class="candidates"></ol>
</section>
<section id="drafts" class="view" hidden>
  <p class="hint">The configured LLM drafts a question for each sampled passage. Judge whether the passage answers
    it, fix the question or the span if you like, and save the verdict. Saved drafts go to their own file, slice
    generated; a draft the passage does not answer is only counted.</p>
  <p id="d-progress" class="progress"></p>
  <p class="meta">Document: <span id="d-doc"></span>; drafted by <span id="d-model"></span></p>
  <div id="d-passage" class="passage"></div>
  <h2>The model's draft</h2>
  <p class="meta">Question: <strong id="d-draft-question"></strong></p>
  <p class="meta">Span: <span id="d-draft-span"></span></p>
  <ul id="d-draft-problems" class="messages"></ul>
  <fieldset id="d-verdicts">
    <legend>Does its passage answer the drafted question?</legend>
    <label><input type="radio" name="d-verdict" value="answerable"> Answerable</label>
    <label><input type="radio" name="d-verdict" value="partly"> Partly</label>
    <label><input type="radio" name="d-verdict" value="not_answered"> Not answered</label>
  </fieldset>
  <div class="form">
    <label>Question (fix it if needed) <textarea id="d-question" rows="2"></textarea></label>
    <label>Answering span: select it with the mouse in the passage to fix it <textarea id="d-span" rows="2"></textarea></label>
    <label>Reference answer (one line) <input id="d-answer" type="text"></label>
    <label>Id <input id="d-id" type="text"></label>
    <div class="buttons">
      <button type="button" id="d-save">Save verdict</button>
    </div>
    <ul id="d-messages" class="messages"></ul>
  </div>
  <h2>Live checks</h2>
  <ul id="d-checks" class="messages"></ul>
</section>
<script src="/app.js"></script>
</body>
</html>
"""

CSS = """
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 0 1rem 4rem; }
header { display: flex; align-items: baseline; gap: 2rem; flex-wrap: wrap; }
h1 { font-size: 1.3rem; } h2 { font-size: 1rem; margin-bottom: 0.2rem; }
nav button.active { font-weight: bold; }
.passage { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 0.9rem; border: 1px solid #999;
  padding: 0.6rem; background: #fafaf5; user-select: text; }
.form label { display: block; margin: 0.5rem 0; }
.form textarea, .form input[type=text] { display: block; width: 100%; box-sizing: border-box; }
.buttons { display: flex; gap: 0.5rem; margin: 0.6rem 0; }
.messages li.problem { color: #a00; } .messages li.warning { color: #855a00; } .messages li.saved { color: #060; }
.meta, .hint, .progress { color: #444; }
.candidates > li { margin-bottom: 1rem; }
.decision { font-weight: bold; }
input.note { width: 40%; }
.picked { color: #036; font-size: 0.9rem; margin: 0.2rem 0; }
fieldset { border: 1px solid #999; margin: 0.6rem 0; } fieldset label { margin-right: 1rem; }
"""

JS = r"""
"use strict";
const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

async function api(path, body) {
  const opts = body === undefined ? {} :
    {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  let r;
  try { r = await fetch(path, opts); } catch (e) {
    return {ok: false, data: {problems: ["the workbench does not answer: is `rag-ablation label` still running?"]}};
  }
  let data;
  try { data = await r.json(); } catch (e) {
    data = {problems: ["unexpected answer from the workbench (HTTP " + r.status + ")"]};
  }
  return {ok: r.ok, data: data};
}

function show(list, items, cls) {
  list.replaceChildren(...(items || []).map((t) => el("li", t, cls)));
}

function showVerdict(list, v) {
  const items = [];
  (v.problems || []).forEach((t) => items.push(el("li", t, "problem")));
  (v.warnings || []).forEach((t) => items.push(el("li", t, "warning")));
  const f = v.facts || {};
  if (f.n_chunks !== undefined) {
    items.push(el("li", "span found in " + f.n_docs + " document(s) and " + f.n_chunks + " chunk(s) of the " +
      f.chunking + " chunking; content-word overlap with its passage " + Math.round(f.overlap * 100) + "%", "fact"));
  }
  list.replaceChildren(...items);
}

function fillSelect(select, values, keep) {
  const old = keep ? select.value : null;
  select.replaceChildren(...values.map((v) => { const o = el("option", v); o.value = v; return o; }));
  if (old && values.includes(old)) select.value = old;
}

// The selection inside `box`, as the text selected (ends trimmed) and its offset in box's text.
function selectionIn(box) {
  const sel = window.getSelection();
  if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
  const r = sel.getRangeAt(0);
  if (!box.contains(r.startContainer) || !box.contains(r.endContainer)) return null;
  const before = document.createRange();
  before.selectNodeContents(box);
  before.setEnd(r.startContainer, r.startOffset);
  const raw = r.toString();
  const lead = raw.length - raw.trimStart().length;
  const text = raw.trim();
  return text ? {text: text, start: before.toString().length + lead} : null;
}

// --- tabs ---------------------------------------------------------------------------------
const loaders = {};
function openView(name) {
  document.querySelectorAll(".view").forEach((s) => { s.hidden = s.id !== name; });
  document.querySelectorAll("nav .tab").forEach((b) => b.classList.toggle("active", b.dataset.view === name));
  if (loaders[name]) loaders[name]();
}
document.querySelectorAll("nav .tab").forEach((b) => b.addEventListener("click", () => openView(b.dataset.view)));

// --- write from passages ------------------------------------------------------------------
const W = {p: null, spanStart: null, timer: null};

async function writeNext() {
  const {ok, data} = await api("/api/write/next");
  if (!ok) { show($("w-messages"), data.problems, "problem"); return; }
  $("w-progress").textContent = data.done + " of " + data.total + " sampled passages done";
  fillSelect($("w-slice"), data.slices);
  W.p = data.passage;
  W.spanStart = null;
  ["w-question", "w-span", "w-answer"].forEach((id) => { $(id).value = ""; });
  $("w-checks").replaceChildren();
  if (!W.p) {
    $("w-doc").textContent = "";
    $("w-passage").textContent = "Every sampled passage is done.";
    $("w-id").value = "";
    return;
  }
  $("w-doc").textContent = W.p.doc;
  $("w-passage").textContent = W.p.text;
  $("w-id").value = W.p.suggested_ids[$("w-slice").value] || "";
}

function writePayload() {
  return {passage: W.p.index, question: $("w-question").value, span: $("w-span").value, span_start: W.spanStart,
          answer: $("w-answer").value, slice: $("w-slice").value, id: $("w-id").value};
}

async function writeCheck() {
  if (!W.p) return;
  const {data} = await api("/api/write/check", writePayload());
  showVerdict($("w-checks"), data);
}

function scheduleWriteCheck() { clearTimeout(W.timer); W.timer = setTimeout(writeCheck, 300); }

$("w-passage").addEventListener("mouseup", () => {
  const s = selectionIn($("w-passage"));
  if (s) { $("w-span").value = s.text; W.spanStart = s.start; scheduleWriteCheck(); }
});
["w-question", "w-span", "w-answer", "w-id"].forEach((id) => $(id).addEventListener("input", () => {
  if (id === "w-span") W.spanStart = null;
  scheduleWriteCheck();
}));
$("w-slice").addEventListener("change", () => {
  if (W.p) {
    const ids = Object.values(W.p.suggested_ids);
    if (!$("w-id").value || ids.includes($("w-id").value)) $("w-id").value = W.p.suggested_ids[$("w-slice").value] || "";
  }
  scheduleWriteCheck();
});

$("w-save").addEventListener("click", async () => {
  if (!W.p) return;
  const {ok, data} = await api("/api/write/save", writePayload());
  if (!ok) { show($("w-messages"), data.problems, "problem"); return; }
  show($("w-messages"), ["saved " + data.id], "saved");
  await writeNext();
});

async function writeSkip(reason) {
  if (!W.p) return;
  const {ok, data} = await api("/api/write/skip", {passage: W.p.index, reason: reason});
  if (!ok) { show($("w-messages"), data.problems, "problem"); return; }
  show($("w-messages"), [reason === "skip" ? "passage skipped" : "passage skipped: mostly code or table"], "saved");
  await writeNext();
}
$("w-skip").addEventListener("click", () => writeSkip("skip"));
$("w-code").addEventListener("click", () => writeSkip("code_table"));
loaders.write = writeNext;

// --- label real queries -------------------------------------------------------------------
const Q = {q: null, spans: [], timer: null};

$("q-file").addEventListener("change", async () => {
  const file = $("q-file").files[0];
  if (!file) return;
  const text = await file.text();
  const {ok, data} = await api("/api/queries/load", {text: text});
  if (!ok) { show($("q-messages"), data.problems, "problem"); return; }
  show($("q-messages"), [data.added + " new queries loaded, " + data.total + " in all"], "saved");
  await queriesNext();
});

function renderSpans() {
  $("q-spans").replaceChildren(...Q.spans.map((m, i) => {
    const li = el("li", m.span + "  ");
    const drop = el("button", "remove");
    drop.type = "button";
    drop.addEventListener("click", () => { Q.spans.splice(i, 1); renderSpans(); scheduleQueriesCheck(); });
    li.appendChild(drop);
    return li;
  }));
}

async function queriesNext() {
  const {ok, data} = await api("/api/queries/next");
  if (!ok) { show($("q-messages"), data.problems, "problem"); return; }
  $("q-progress").textContent = data.total ? data.done + " of " + data.total + " queries done" : "Load a queries file to start.";
  fillSelect($("q-slice"), data.slices);
  Q.q = data.query;
  Q.spans = [];
  renderSpans();
  $("q-checks").replaceChildren();
  $("q-answer").value = "";
  if (!Q.q) {
    $("q-text").textContent = data.total ? "Every query is done." : "";
    $("q-candidates").replaceChildren();
    $("q-question").value = "";
    $("q-id").value = "";
    return;
  }
  $("q-text").textContent = Q.q.text;
  $("q-question").value = Q.q.text;
  $("q-id").value = Q.q.suggested_id;
  $("q-candidates").replaceChildren(...data.candidates.map((c) => {
    const li = el("li");
    li.appendChild(el("div", c.doc, "meta"));
    const box = el("div", c.text, "passage");
    li.appendChild(box);
    const add = el("button", "Add the selected span");
    add.type = "button";
    const shown = el("div", "", "picked");
    li.appendChild(shown);
    let picked = null;
    box.addEventListener("mouseup", () => {
      picked = selectionIn(box);
      shown.textContent = picked ? "selected: " + picked.text : "";
    });
    add.addEventListener("click", () => {
      if (!picked) { show($("q-messages"), ["select the answering text inside this passage first"], "problem"); return; }
      Q.spans.push({candidate: c.index, span: picked.text, span_start: picked.start});
      picked = null;
      shown.textContent = "";
      renderSpans();
      scheduleQueriesCheck();
    });
    li.appendChild(add);
    return li;
  }));
}

function queriesPayload(unanswerable) {
  return {query: Q.q.index, id: $("q-id").value, question: $("q-question").value, answer: $("q-answer").value,
          slice: $("q-slice").value, spans: Q.spans, unanswerable: unanswerable};
}

async function queriesCheck() {
  if (!Q.q || !Q.spans.length) { $("q-checks").replaceChildren(); return; }
  const {data} = await api("/api/queries/check", queriesPayload(false));
  showVerdict($("q-checks"), data);
}
function scheduleQueriesCheck() { clearTimeout(Q.timer); Q.timer = setTimeout(queriesCheck, 300); }
["q-question", "q-answer", "q-id"].forEach((id) => $(id).addEventListener("input", scheduleQueriesCheck));

async function queriesSave(unanswerable) {
  if (!Q.q) return;
  const body = queriesPayload(unanswerable);
  if (unanswerable) {
    if (body.id === Q.q.suggested_id) body.id = Q.q.unanswerable_id;
    if (!body.answer.trim()) body.answer = "The corpus does not say.";
    body.spans = [];
  }
  const {ok, data} = await api("/api/queries/save", body);
  if (!ok) { show($("q-messages"), data.problems, "problem"); return; }
  show($("q-messages"), ["saved " + data.id], "saved");
  await queriesNext();
}
$("q-save").addEventListener("click", () => queriesSave(false));
$("q-none").addEventListener("click", () => queriesSave(true));
$("q-skip").addEventListener("click", async () => {
  if (!Q.q) return;
  const {ok, data} = await api("/api/queries/skip", {query: Q.q.index});
  if (!ok) { show($("q-messages"), data.problems, "problem"); return; }
  await queriesNext();
});
loaders.queries = queriesNext;

// --- audit misses -------------------------------------------------------------------------
async function auditConfigs() {
  const {ok, data} = await api("/api/audit/configs");
  if (!ok) { show($("a-messages"), data.problems, "problem"); return; }
  fillSelect($("a-config"), data.configs, true);
  if (!data.configs.length) show($("a-messages"), ["no run files yet: run `dvc repro` first"], "problem");
}

async function auditDecide(kind, body) {
  const {ok, data} = await api("/api/audit/" + kind, body);
  if (!ok) { show($("a-messages"), data.problems, "problem"); return; }
  show($("a-messages"), [kind === "accept" ? "accepted: written to the audit file" : "rejected"], "saved");
  await auditNext();
}

async function auditNext() {
  const config = $("a-config").value;
  if (!config) return;
  const {ok, data} = await api("/api/audit/next?config=" + encodeURIComponent(config));
  if (!ok) { show($("a-messages"), data.problems, "problem"); return; }
  $("a-progress").textContent = data.missed + " question(s) missed at " + data.k + "; " + data.open + " with passages to decide";
  const q = data.question;
  const box = $("a-question");
  if (!q) {
    box.replaceChildren(el("p", "Nothing left to decide for this config."));
    $("a-passages").replaceChildren();
    return;
  }
  box.replaceChildren(el("h2", q.id + " (" + q.slice + ")"), el("p", "Question: " + q.question),
    el("p", "Labelled span (" + q.doc + "): " + q.spans.join(" | ")), el("p", "Reference answer: " + q.answer));
  $("a-passages").replaceChildren(...data.passages.map((p) => {
    const li = el("li");
    li.appendChild(el("div", p.chunk, "meta"));
    const text = el("div", p.text, "passage");
    li.appendChild(text);
    if (p.decision) { li.appendChild(el("div", p.decision, "decision")); return li; }
    const shown = el("div", "", "picked");
    li.appendChild(shown);
    let picked = null;
    text.addEventListener("mouseup", () => {
      picked = selectionIn(text);
      shown.textContent = picked ? "selected: " + picked.text : "";
    });
    const note = el("input");
    note.type = "text";
    note.placeholder = "note: why this passage answers the question";
    note.className = "note";
    const accept = el("button", "Accept (the selected span answers it)");
    accept.type = "button";
    accept.addEventListener("click", () => auditDecide("accept",
      {config: config, id: q.id, chunk: p.chunk, span: picked ? picked.text : "", note: note.value}));
    const reject = el("button", "Reject");
    reject.type = "button";
    reject.addEventListener("click", () => auditDecide("reject", {config: config, id: q.id, chunk: p.chunk}));
    li.append(note, accept, reject);
    return li;
  }));
}
$("a-load").addEventListener("click", auditNext);
loaders.audit = auditConfigs;

// --- model drafts -------------------------------------------------------------------------
const D = {p: null, spanStart: null, timer: null, verdicts: {}};

function clearDraft() {
  ["d-doc", "d-model", "d-draft-question", "d-draft-span"].forEach((id) => { $(id).textContent = ""; });
  ["d-question", "d-span", "d-answer", "d-id"].forEach((id) => { $(id).value = ""; });
  ["d-draft-problems", "d-checks"].forEach((id) => $(id).replaceChildren());
  document.querySelectorAll("input[name=d-verdict]").forEach((r) => { r.checked = false; });
}

async function draftsNext() {
  D.p = null;
  clearDraft();
  $("d-passage").textContent = "";
  $("d-progress").textContent = "asking the model for a draft (seconds with the offline model)...";
  const {ok, data} = await api("/api/drafts/next");
  if (!ok) { $("d-progress").textContent = ""; show($("d-messages"), data.problems, "problem"); return; }
  const c = data.counts;
  D.verdicts = data.verdicts;
  $("d-progress").textContent = data.done + " of " + data.total + " drafts judged: " + c.answerable + " answerable, " +
    c.partly + " partly, " + c.not_answered + " not answered by their passage";
  D.p = data.passage;
  if (!D.p) { $("d-passage").textContent = "Every sampled passage's draft has a verdict."; return; }
  const d = data.draft;
  $("d-doc").textContent = D.p.doc;
  $("d-model").textContent = data.model.backend + " " + data.model.model;
  $("d-passage").textContent = D.p.text;
  $("d-draft-question").textContent = d.question || "(none)";
  $("d-draft-span").textContent = d.span || "(none)";
  show($("d-draft-problems"), d.problems, "problem");
  $("d-question").value = d.question;
  $("d-span").value = d.span;
  $("d-answer").value = d.span;
  $("d-id").value = D.p.suggested_id;
  D.spanStart = d.span_start;
  scheduleDraftCheck();
}

function draftPayload(verdict) {
  return {passage: D.p.index, verdict: verdict, question: $("d-question").value, span: $("d-span").value,
          span_start: D.spanStart, answer: $("d-answer").value, id: $("d-id").value};
}

async function draftCheck() {
  if (!D.p || !$("d-span").value.trim()) { $("d-checks").replaceChildren(); return; }
  const {data} = await api("/api/drafts/check", draftPayload(""));
  showVerdict($("d-checks"), data);
}
function scheduleDraftCheck() { clearTimeout(D.timer); D.timer = setTimeout(draftCheck, 300); }

$("d-passage").addEventListener("mouseup", () => {
  const s = selectionIn($("d-passage"));
  if (s && D.p) { $("d-span").value = s.text; D.spanStart = s.start; scheduleDraftCheck(); }
});
["d-question", "d-span", "d-answer", "d-id"].forEach((id) => $(id).addEventListener("input", () => {
  if (id === "d-span") D.spanStart = null;
  scheduleDraftCheck();
}));

$("d-save").addEventListener("click", async () => {
  if (!D.p) return;
  const picked = document.querySelector("input[name=d-verdict]:checked");
  if (!picked) { show($("d-messages"), ["pick a verdict first: answerable, partly or not answered"], "problem"); return; }
  const {ok, data} = await api("/api/drafts/save", draftPayload(picked.value));
  if (!ok) { show($("d-messages"), data.problems, "problem"); return; }
  show($("d-messages"), [data.id ? "saved " + data.id + " (" + D.verdicts[data.verdict] + ")" :
    "verdict saved: " + D.verdicts[data.verdict] + "; no question written"], "saved");
  await draftsNext();
});
loaders.drafts = draftsNext;

openView("write");
"""
