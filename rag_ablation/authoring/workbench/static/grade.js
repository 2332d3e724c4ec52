"use strict";
/* global $, el, api, show, loaders */
// The "Grade answers" view (rag_ablation/authoring/grade_page.py): the terminal grader's
// keys and screen in the page. Loaded after app.js, whose helpers ($, el, api, show, loaders) it
// uses. Every text is inserted with textContent (el), never as HTML.

const G = {a: null, whole: false, cut: 400, help: "", busy: false, pass: "first"};
const SUPPORT_KEYS = {1: "supported", 2: "partly", 3: "not"};

function gradeTarget() {
  return {config: G.a.config, id: G.a.id, answer_sha256: G.a.answer_sha256};
}

function gradePassage(p) {
  const li = el("li");
  li.append(el("p", p.id, "meta"));
  const text = p.text === null ? "(text not in the run file)" :
    (G.whole || p.text.length <= G.cut ? p.text : p.text.slice(0, G.cut) + " ...");
  li.append(el("div", text, "passage"));
  return li;
}

// The support level chosen on the form ("" when none is).
function supportChosen() {
  const on = document.querySelector("input[name=g-support]:checked");
  return on ? on.value : "";
}

function supportSet(level) {
  document.querySelectorAll("input[name=g-support]").forEach((r) => { r.checked = r.value === (level || ""); });
}

function gradeShow(data) {
  G.a = data.answer;
  G.cut = data.cut;
  G.help = data.help;
  G.pass = data.pass;
  $("g-estimate").textContent = data.estimate || "";
  $("g-note").value = "";
  supportSet(data.answer && data.answer.own ? data.answer.own.support : "");
  // the second pass is blind: the server sends only this grader's own grades (grade_page.py)
  const order = "order " + data.order + (data.pass === "second" ? "; second pass by " + data.grader +
    ", blind: the other grades are hidden" : data.pass === "support" ? "; support pass by " + data.grader +
    ": 1 supported, 2 partly, 3 not; the verdicts stay" : "");
  $("g-offer").textContent = data.second_offer || "";
  if (!G.a) {  // data.end: how many answers in scope are graded, and by whom (grader.end_of_list)
    $("g-progress").textContent = data.end + (data.total ? " b goes back to the last answer." : "") + " (" + order +
      ")";
    ["g-where", "g-previous", "g-question", "g-reference", "g-answer"].forEach((id) => { $(id).textContent = ""; });
    $("g-passages").replaceChildren();
    return;
  }
  const a = G.a;
  // [position in this session's list / its length]; graded: the grades on file for every answer in scope
  $("g-progress").textContent = "[" + data.position + "/" + data.total + "]  " +
    (data.pass === "support" ? "support-graded " : "graded ") + data.graded + "/" + data.in_scope +
    " answers in scope (" + order + ")";
  $("g-where").textContent = "config " + a.config + ", question " + a.id + ", slice " + a.slice +
    (a.answerable ? "" : " (unanswerable: the correct answer declines)");
  const p = a.previous;
  const own = a.own;
  $("g-previous").textContent = own ? "your grade: " + own.verdict + (own.note ? " (note: " + own.note + ")" : "") +
    ", kept; support" + (own.this_session ? " this session" : "") + ": " + (own.support || "not graded yet") :
    !p ? "" : (p.stale ? "STALE grade: " + p.verdict + " by " + p.grader +
    ", given for an older answer text; grade it again" : "graded" + (p.this_session ? " this session" : "") + ": " +
    p.verdict + " by " + p.grader + (p.note ? " (note: " + p.note + ")" : "") +
    (p.support ? ", support " + p.support : "") + "; c or w changes it");
  if (p && !p.stale && p.support) supportSet(p.support);
  $("g-question").textContent = a.question === null ? "(not in the question file)" : a.question;
  $("g-reference").textContent = a.reference === null ? "(not in the question file)" : a.reference;
  $("g-answer").textContent = a.answer;
  $("g-whole").textContent = G.whole ? "Passages cut (p)" : "Passages whole (p)";
  $("g-passages").replaceChildren(...a.passages.map(gradePassage));
}

// One request at a time: a key pressed while a save is on its way is ignored, so a quick
// double press never sends a second grade for an answer already graded.
async function gradeCall(path, body) {
  if (G.busy) return null;
  G.busy = true;
  try {
    const {ok, data} = await api(path, body);
    if (!ok) { show($("g-messages"), data.problems, "problem"); return null; }
    gradeShow(data);
    return data;
  } finally {
    G.busy = false;
  }
}

async function gradeNext() {
  if (await gradeCall("/api/grade/next")) $("g-messages").replaceChildren();
}

function savedLine(s) {
  return s.config + " " + s.id + ": " + s.verdict + (s.note ? " (note: " + s.note + ")" : "") +
    (s.support ? ", support " + s.support : "") + ", saved";
}

async function gradeVerdict(verdict) {
  if (!G.a) { show($("g-messages"), ["nothing to grade here: b goes back to the last answer"], "problem"); return; }
  if (G.pass === "support") {
    show($("g-messages"), ["support pass: the verdict stays; 1 supported, 2 partly, 3 not, s skip"], "problem");
    return;
  }
  const data = await gradeCall("/api/grade/save", {...gradeTarget(), verdict: verdict, note: $("g-note").value,
    support: supportChosen()});
  if (data) show($("g-messages"), [savedLine(data.saved)], "saved");
}

// A support level: in the support pass saved at once; else chosen on the form for the next c or w.
async function gradeSupport(level) {
  if (!G.a) { show($("g-messages"), ["nothing to grade here: b goes back to the last answer"], "problem"); return; }
  if (G.pass !== "support") {
    supportSet(level);
    show($("g-messages"), ["support " + level + " kept for this answer's grade: press c or w"], "fact");
    return;
  }
  const data = await gradeCall("/api/grade/support", {...gradeTarget(), support: level});
  if (data) show($("g-messages"), [savedLine(data.saved)], "saved");
}

async function gradeSkip() {
  if (!G.a) return;
  const skipped = G.a;
  if (await gradeCall("/api/grade/skip", gradeTarget())) {
    show($("g-messages"), [skipped.config + " " + skipped.id + ": skipped (no grade)"], "saved");
  }
}

async function gradeBack() {
  if (await gradeCall("/api/grade/back")) $("g-messages").replaceChildren();
}

function gradeToggle() {
  G.whole = !G.whole;
  if (G.a) {
    $("g-passages").replaceChildren(...G.a.passages.map(gradePassage));
    $("g-whole").textContent = G.whole ? "Passages cut (p)" : "Passages whole (p)";
  }
}

async function gradeSummary() {
  const {ok, data} = await api("/api/grade/summary");
  show($("g-messages"), ok ? data.lines : data.problems, ok ? "fact" : "problem");
}

$("g-correct").addEventListener("click", () => gradeVerdict("correct"));
$("g-wrong").addEventListener("click", () => gradeVerdict("incorrect"));
$("g-skip").addEventListener("click", gradeSkip);
$("g-back").addEventListener("click", gradeBack);
$("g-whole").addEventListener("click", gradeToggle);
$("g-summary").addEventListener("click", gradeSummary);
$("g-second").addEventListener("click", async () => {
  if (await gradeCall("/api/grade/second", {grader: $("g-grader").value})) $("g-messages").replaceChildren();
});
$("g-support-start").addEventListener("click", async () => {
  if (await gradeCall("/api/grade/supportpass", {grader: $("g-support-grader").value})) {
    $("g-messages").replaceChildren();
  }
});
document.querySelectorAll("input[name=g-support]").forEach((r) => r.addEventListener("change", () => {
  if (G.pass === "support" && G.a && r.value) gradeSupport(r.value);
}));
$("g-first").addEventListener("click", async () => {
  if (await gradeCall("/api/grade/first")) $("g-messages").replaceChildren();
});

const GRADE_KEYS = {
  c: () => gradeVerdict("correct"), w: () => gradeVerdict("incorrect"), s: gradeSkip, b: gradeBack,
  p: gradeToggle, n: () => $("g-note").focus(), "?": () => show($("g-messages"), [G.help], "fact"),
  1: () => gradeSupport(SUPPORT_KEYS[1]), 2: () => gradeSupport(SUPPORT_KEYS[2]), 3: () => gradeSupport(SUPPORT_KEYS[3]),
};

document.addEventListener("keydown", (e) => {
  if ($("grade").hidden || e.ctrlKey || e.altKey || e.metaKey) return;
  if (e.target.matches && e.target.matches("input[type=text], textarea, select")) {
    if (e.key === "Enter" && e.target.id === "g-note") { e.preventDefault(); e.target.blur(); }
    return;  // typing a note: keys are text
  }
  const act = GRADE_KEYS[e.key];
  if (act) { e.preventDefault(); act(); return; }
  if (e.key.length === 1) {
    show($("g-messages"), ["unknown key " + e.key + (G.pass === "support" ? ": 1 supported, 2 partly, 3 not, s skip, " +
      "b back, p passages, ? help" : ": c correct, w wrong, 1/2/3 support, s skip, b back, n note, p passages, ? help")],
    "problem");
  }
});

loaders.grade = gradeNext;
