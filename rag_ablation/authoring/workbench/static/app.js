
"use strict";
const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

// Every API request is a POST of a JSON object with the X-Workbench header, which the server
// requires (a page of another site cannot send it without a CORS preflight the server refuses).
async function api(path, body) {
  const opts = {method: "POST", headers: {"Content-Type": "application/json", "X-Workbench": "1"},
    body: JSON.stringify(body === undefined ? {} : body)};
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
  const {ok, data} = await api("/api/audit/next", {config: config});
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
