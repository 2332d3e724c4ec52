
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

// Where `span` occurs in `text`: the occurrence nearest `near` (the earliest of equally near
// ones), -1 when it does not occur; the server's rule (session.locate).
function locate(span, text, near) {
  if (!span) return -1;
  const target = Number.isInteger(near) ? near : 0;
  let best = -1;
  for (let at = text.indexOf(span); at >= 0; at = text.indexOf(span, at + 1)) {
    if (best < 0 || Math.abs(at - target) < Math.abs(best - target)) best = at;
  }
  return best;
}

// Show `text` in `box` with `ranges` ({start, end, cls}) wrapped in <mark> elements, as text
// nodes only (never HTML); a range overlapping an earlier one is left unmarked.
function markText(box, text, ranges) {
  const parts = [];
  let pos = 0;
  ranges.filter((r) => r.start >= 0 && r.end > r.start && r.end <= text.length)
    .sort((a, b) => a.start - b.start).forEach((r) => {
      if (r.start < pos) return;
      if (r.start > pos) parts.push(document.createTextNode(text.slice(pos, r.start)));
      parts.push(el("mark", text.slice(r.start, r.end), r.cls));
      pos = r.end;
    });
  if (pos < text.length) parts.push(document.createTextNode(text.slice(pos)));
  box.replaceChildren(...parts);
}

// Mark `span` (ends trimmed, as the server reads it) where it occurs in `text` nearest `near`,
// so the selected span stays highlighted; its offset, or -1 (nothing marked) when it is not in it.
function markSpan(box, text, span, near) {
  const s = span.trim();
  const at = locate(s, text, near);
  markText(box, text, at >= 0 ? [{start: at, end: at + s.length, cls: "span"}] : []);
  return at;
}

// The write and drafts views: `state` ({p, spanStart}) is the passage shown and the span's
// offset in it; the span of the `prefix`-span field stays marked in `prefix`-passage.
function keepMarked(prefix, state) {
  if (!state.p) return;
  const at = markSpan($(prefix + "-passage"), state.p.text, $(prefix + "-span").value, state.spanStart);
  if (at >= 0) state.spanStart = at;
}

// Text selected with the mouse in `prefix`-passage fills `prefix`-span, is marked, and `check` runs.
function pickSpans(prefix, state, check) {
  $(prefix + "-passage").addEventListener("mouseup", () => {
    const s = selectionIn($(prefix + "-passage"));
    if (!s || !state.p) return;
    $(prefix + "-span").value = s.text;
    state.spanStart = s.start;
    window.getSelection().removeAllRanges();
    keepMarked(prefix, state);
    check();
  });
}

// --- saved questions (write and label-queries views) --------------------------------------
// The question file's newest questions under `prefix`-saved, and the undo button of the last one.
async function loadSaved(prefix) {
  const {ok, data} = await api("/api/questions/saved");
  if (!ok) { show($(prefix + "-messages"), data.problems, "problem"); return; }
  const listed = data.total > data.questions.length ? "; the newest " + data.questions.length + " listed" : "";
  $(prefix + "-saved-count").textContent = data.total ? data.total + " question(s) in " + data.file + listed :
    "No question in " + data.file + " yet.";
  const undo = $(prefix + "-undo");
  undo.hidden = !data.undo;
  undo.dataset.id = data.undo || "";
  undo.textContent = data.undo ? "Undo the last save (" + data.undo + ")" : "";
  $(prefix + "-saved").replaceChildren(...data.questions.map((q) => {
    const li = el("li");
    li.append(el("strong", q.id), document.createTextNode(" (" + q.slice + ") " + q.question));
    if (q.spans.length) li.appendChild(el("div", q.doc + ": " + q.spans.join(" | "), "span-text"));
    return li;
  }));
}

// Take back the question the undo button of `prefix` names; `then(data)` shows what comes back.
async function undoLast(prefix, then) {
  const id = $(prefix + "-undo").dataset.id;
  if (!id) return;
  const {ok, data} = await api("/api/questions/undo", {id: id});
  if (!ok) { show($(prefix + "-messages"), data.problems, "problem"); await loadSaved(prefix); return; }
  await then(data);
  show($(prefix + "-messages"), ["undone: " + id + " is no longer in the question file" +
    (data.passage ? "; its passage is back with the question, to fix and save again" : "")], "saved");
  await loadSaved(prefix);
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

// The track menu: every track interleaved, or one track; each with its progress.
function fillTracks(data) {
  const select = $("w-track");
  const old = select.value;
  const all = el("option", "every track, in turn");
  all.value = "";
  select.replaceChildren(all, ...Object.entries(data.tracks).map(([name, t]) => {
    const o = el("option", name + " (" + t.done + " of " + t.total + " done)");
    o.value = name;
    return o;
  }));
  select.value = old in data.tracks ? old : "";
}

// The next passage not done of the chosen tracks; `shown` ({p, record, spanStart}, from an
// undo) shows that passage with that question in the form instead.
async function writeNext(shown) {
  const {ok, data} = await api("/api/write/next", {track: $("w-track").value});
  if (!ok) { show($("w-messages"), data.problems, "problem"); return; }
  fillTracks(data);
  const chosen = data.track ? "; track " + data.track + ": " + data.tracks[data.track].done + " of " +
    data.tracks[data.track].total : "";
  $("w-progress").textContent = data.done + " of " + data.total + " sampled passages done" + chosen;
  fillSelect($("w-slice"), data.slices);
  clearTimeout(W.timer);  // a check of the form just saved would list the new empty form's problems
  const record = shown ? shown.record : {};
  W.p = shown ? shown.p : data.passage;
  W.spanStart = shown ? shown.spanStart : null;
  $("w-question").value = record.question || "";
  $("w-span").value = record.span || "";
  $("w-answer").value = record.answer || "";
  $("w-checks").replaceChildren();
  if (!W.p) {
    $("w-doc").textContent = "";
    $("w-passage").textContent = data.track ? "Every sampled passage of track " + data.track + " is done." :
      "Every sampled passage is done.";
    $("w-id").value = "";
    return;
  }
  $("w-doc").textContent = W.p.source + " (track " + W.p.track + ")";
  if (record.slice && data.slices.includes(record.slice)) $("w-slice").value = record.slice;
  $("w-id").value = record.id || W.p.suggested_ids[$("w-slice").value] || "";
  writeMark();
  if (shown) scheduleWriteCheck();
}

// Keep the span highlighted in the passage (the mouse selection goes when the form is typed in).
function writeMark() { keepMarked("w", W); }
$("w-track").addEventListener("change", () => writeNext());

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

pickSpans("w", W, scheduleWriteCheck);
["w-question", "w-span", "w-answer", "w-id"].forEach((id) => $(id).addEventListener("input", () => {
  if (id === "w-span") writeMark();
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
  await loadSaved("w");
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
$("w-undo").addEventListener("click", () => undoLast("w", (data) =>
  writeNext(data.passage ? {p: data.passage, record: data.undone, spanStart: data.span_start} : undefined)));
loaders.write = async () => { await writeNext(); await loadSaved("w"); };

// --- label real queries -------------------------------------------------------------------
const Q = {q: null, spans: [], timer: null, redraw: []};

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
  Q.redraw.forEach((f) => f());
}

// A candidate's marks: the spans added from it (green) and the one selected in it (yellow).
function candidateMarks(c, picked) {
  const marks = Q.spans.filter((m) => m.candidate === c.index)
    .map((m) => ({start: m.span_start, end: m.span_start + m.span.length, cls: "marked"}));
  if (picked) marks.push({start: picked.start, end: picked.start + picked.text.length, cls: "span"});
  return marks;
}

async function queriesNext() {
  const {ok, data} = await api("/api/queries/next");
  if (!ok) { show($("q-messages"), data.problems, "problem"); return; }
  $("q-progress").textContent = data.total ? data.done + " of " + data.total + " queries done" : "Load a queries file to start.";
  fillSelect($("q-slice"), data.slices, true);  // the slice stays as picked, query after query
  Q.q = data.query;
  Q.spans = [];
  Q.redraw = [];
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
    const redraw = () => markText(box, c.text, candidateMarks(c, picked));
    Q.redraw.push(redraw);
    box.addEventListener("mouseup", () => {
      picked = selectionIn(box);
      shown.textContent = picked ? "selected: " + picked.text : "";
      if (picked) window.getSelection().removeAllRanges();
      redraw();
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
  await loadSaved("q");
}
$("q-save").addEventListener("click", () => queriesSave(false));
$("q-none").addEventListener("click", () => queriesSave(true));
$("q-skip").addEventListener("click", async () => {
  if (!Q.q) return;
  const {ok, data} = await api("/api/queries/skip", {query: Q.q.index});
  if (!ok) { show($("q-messages"), data.problems, "problem"); return; }
  await queriesNext();
});
$("q-undo").addEventListener("click", () => undoLast("q", () => queriesNext()));
loaders.queries = async () => { await queriesNext(); await loadSaved("q"); };

// --- audit misses -------------------------------------------------------------------------
async function auditConfigs() {
  const {ok, data} = await api("/api/audit/configs");
  if (!ok) { show($("a-messages"), data.problems, "problem"); return; }
  fillSelect($("a-config"), data.configs, true);
  const byWhy = {};  // why -> the configs left out for it
  Object.entries(data.left_out).forEach(([name, why]) => { (byWhy[why] = byWhy[why] || []).push(name); });
  $("a-left-out").textContent = Object.keys(byWhy).length ? "Not listed, nothing to audit: " +
    Object.entries(byWhy).map(([why, names]) => names.join(", ") + ": " + why).join("; ") + "." : "";
  if (!data.configs.length) show($("a-messages"), ["no config has run yet: run `dvc repro` first"], "problem");
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
      if (picked) window.getSelection().removeAllRanges();
      markText(text, p.text, picked ? [{start: picked.start, end: picked.start + picked.text.length, cls: "span"}] : []);
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
  draftMark();
  scheduleDraftCheck();
}

function draftMark() { keepMarked("d", D); }

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

pickSpans("d", D, scheduleDraftCheck);
["d-question", "d-span", "d-answer", "d-id"].forEach((id) => $(id).addEventListener("input", () => {
  if (id === "d-span") draftMark();
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
