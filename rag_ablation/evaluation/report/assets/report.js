(function () {
"use strict";
var D = JSON.parse(document.getElementById("report-data").textContent);
var M = D.meta;
window.reportData = D;

function el(tag, props, children) {
  var e = document.createElement(tag);
  if (props) {
    Object.keys(props).forEach(function (k) {
      var v = props[k];
      if (v === undefined || v === null) return;
      if (k === "text") e.textContent = String(v);
      else if (k === "cls") e.className = v;
      else e.setAttribute(k, String(v));
    });
  }
  (children || []).forEach(function (c) {
    if (c === null || c === undefined) return;
    e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  });
  return e;
}
function byId(id) { return document.getElementById(id); }
function num(x) { return x === null || x === undefined ? "n/a" : Number(x).toFixed(3); }
function signed(x) { return x === null || x === undefined ? "n/a" : (x >= 0 ? "+" : "") + Number(x).toFixed(3); }
function pct(x) { return x === null || x === undefined ? "n/a" : (100 * x).toFixed(1) + "%"; }
function withCi(d, f) {
  f = f || num;
  if (!d) return "n/a";
  var v = d.value !== undefined ? d.value : d.delta;
  if (d.ci_low === null || d.ci_low === undefined) return f(v);
  return f(v) + " (" + f(d.ci_low) + " to " + f(d.ci_high) + ")";
}
function ciCell(d, f, extra) {
  // the value on one line, its interval (and any extra words) on a second, smaller one
  f = f || num;
  if (!d) return el("span", {text: "n/a"});
  var v = d.value !== undefined ? d.value : d.delta;
  var out = el("span", {cls: "val"}, [f(v)]);
  var second = [];
  if (d.ci_low !== null && d.ci_low !== undefined) second.push(f(d.ci_low) + " to " + f(d.ci_high));
  if (extra) second.push(extra);
  if (second.length) out.appendChild(el("span", {cls: "ci", text: second.join(", ")}));
  return out;
}
var VERDICT_MARKS = {"real gain": ["\u25b2", "gain"], "real loss": ["\u25bc", "loss"],
                     "within the noise": ["\u25cf", "noise"], "no change": ["\u25a1", "none"]};
function verdictCell(v) {
  // colour and a shape (the arrow), so the verdict reads without colour
  var m = VERDICT_MARKS[v] || ["", "none"];
  return el("span", {cls: "verdict v-" + m[1], "data-verdict": v, text: m[0] + " " + v});
}
function qLink(id) { return "#q/" + encodeURIComponent(id); }
function table(header, rows, cls) {
  var t = el("table", {cls: cls || ""});
  t.appendChild(el("thead", null, [el("tr", null, header.map(function (h) { return el("th", {text: h}); }))]));
  var body = el("tbody");
  rows.forEach(function (r) {
    var tr = el("tr", r.cls ? {cls: r.cls} : null);
    (r.cells || r).forEach(function (c) {
      tr.appendChild(c instanceof Node ? el("td", null, [c]) : el("td", {text: c}));
    });
    body.appendChild(tr);
  });
  t.appendChild(body);
  return t;
}

var configs = D.configs;
var byName = {};
configs.forEach(function (c) { byName[c.name] = c; });
var shown = configs.filter(function (c) { return c.available; });
var letterOf = {};
shown.forEach(function (c) { letterOf[c.letter] = c.name; });

// ---------------------------------------------------------------- first screen
byId("summary").textContent = "Baseline: " + M.baseline + (M.baseline_available ? "" : " (unavailable)") +
  ". Questions: " + M.n_questions + " (" + M.n_answerable + " answerable" +
  (M.n_baseline !== null ? ", " + M.n_baseline + " scored in the baseline" : "") + "). Gate measure: " +
  M.measure_label + ". Intervals: " + Math.round(100 * M.confidence) + "% " + M.method + " bootstrap, " +
  M.resamples + " resamples. " + shown.length + " of " + configs.length + " configs available." +
  (M.not_run.length ? " Not run: " + M.not_run.join(", ") + " (left out by run_configs; " +
    "dvc exp run -S run_configs=all runs every config)." : "");
// The paired test of the verdicts' measure, named where a verdict is shown (its prose comes with the data).
var testName = M.test_text || M.test;
byId("forest-note").textContent = "Each config against " + M.baseline + " on the same questions: the change in " +
  M.measure_label + " with its interval. Real gain / real loss: the interval excludes 0 and the Holm-adjusted " +
  testName + " is below " + M.alpha + "; everything else is within the noise. Sorted by change.";

// ---------------------------------------------------------------- config table
(function () {
  var slices = [];
  shown.forEach(function (c) {
    Object.keys(c.by_slice || {}).forEach(function (s) { if (slices.indexOf(s) < 0) slices.push(s); });
  });
  slices.sort();
  var measures = [["recall_at_1", "recall@1"], ["recall_at_5", "recall@5"], ["recall_at_10", "recall@10"],
                  ["mrr_at_10", "MRR@10"], ["ndcg_at_10", "nDCG@10"], ["recall_at_100", "recall@100"]]
    .filter(function (m) { return shown.some(function (c) { return c.measures[m[0]]; }); });
  var gate = M.measure.replace("hit_at_", "recall_at_").replace("rr_at_", "mrr_at_");
  var header = ["", "config", "n"].concat(measures.map(function (m) { return m[1]; }))
    .concat(["change (" + M.measure_label + ")", "verdict"])
    .concat(slices.map(function (s) { return M.measure_label + ", " + s; }));
  var rows = shown.map(function (c) {
    var cells = [el("span", {cls: "letters", title: c.name, text: c.letter}),
                 c.name + (c.baseline ? " (baseline)" : ""), String(c.n)];
    measures.forEach(function (m) {
      var td = ciCell(c.measures[m[0]]);
      if (m[0] === gate && c.beats) {
        var marks = el("span", {cls: "letters beats"});
        c.beats.split("").forEach(function (ch) {
          marks.appendChild(el("span", {title: "beats " + letterOf[ch], "data-config": letterOf[ch], text: ch}));
        });
        td.insertBefore(marks, td.childNodes[1] || null);
      }
      cells.push(td);
    });
    cells.push(c.change ? ciCell(c.change, signed) : "");
    cells.push(c.change ? verdictCell(c.change.verdict) : "");
    slices.forEach(function (s) {
      var g = c.by_slice[s];
      if (!g) { cells.push(""); return; }
      cells.push(ciCell(g, num, "n=" + g.n + (g.too_small ? ", too small" : "")));
    });
    return cells;
  });
  byId("configs-table").appendChild(table(header, rows, "configs"));
  byId("configs-note").textContent = "Each cell: the value and its interval. The letters after " + M.measure_label +
    " name the configs it beats: the " + testName + " for each pair, Holm-adjusted over all pairs, level " +
    M.alpha + ".";
  byId("letters-legend").textContent = "Letters (hover one for its name): " +
    shown.map(function (c) { return c.letter + " = " + c.name; }).join(", ") + ". Verdict: \u25b2 real gain, " +
    "\u25bc real loss, \u25cf within the noise, \u25a1 no change.";
  var gone = configs.filter(function (c) { return !c.available; });
  if (gone.length) {
    byId("unavailable").appendChild(el("h3", {text: "Unavailable configs"}));
    byId("unavailable").appendChild(table(["config", "reason"], gone.map(function (c) {
      return {cls: "unavailable", cells: [c.name, c.reason]};
    })));
  }
})();

// ---------------------------------------------------------------- cost
(function () {
  var note = "Retrieval latency: " + M.latency_rule + ". On the Pareto front: no other config is at least as " +
    "good and at least as fast; latencies within " + Math.round(100 * M.cost_tolerance) + "% or " +
    M.cost_floor_ms + " ms of each other count as the same cost (timing noise). Names that would overlap are left out: hover a point for its name.";
  if (D.cost_missing.length) {
    note += " Not on the chart (no latency timed by this rule; rerun their retrieve stage): " +
      D.cost_missing.join(", ") + ".";
  }
  byId("cost-note").textContent = note;
})();

// ---------------------------------------------------------------- grid
var questions = D.questions;
var gridConfigs = shown.filter(function (c) { return D.grid[c.name]; });
(function () {
  var sel = byId("slice-filter");
  var byConfig = byId("config-filter");
  var base = D.grid[M.baseline];
  if (base) {
    gridConfigs.forEach(function (c) {
      if (c.name === M.baseline) return;
      byConfig.appendChild(el("option", {value: "fixed:" + c.name, text: "fixed by " + c.name}));
      byConfig.appendChild(el("option", {value: "broken:" + c.name, text: "broken by " + c.name}));
    });
  } else {
    byConfig.disabled = true;
  }
  function passes(i, rule) {
    // fixed by X: a miss in the baseline and a hit in X; broken: the other way round
    if (!rule) return true;
    var kind = rule.slice(0, rule.indexOf(":")), v = D.grid[rule.slice(rule.indexOf(":") + 1)][i];
    if (v === null || base[i] === null) return false;
    return kind === "fixed" ? (v === 1 && base[i] === 0) : (v === 0 && base[i] === 1);
  }
  var order = [];
  questions.forEach(function (q, i) { if (order.indexOf(q.slice) < 0) order.push(q.slice); });
  order.forEach(function (s) { sel.appendChild(el("option", {value: s, text: s})); });
  var t = byId("grid-table");
  var head = el("tr", null, [el("th", {text: "question"})]);
  gridConfigs.forEach(function (c) { head.appendChild(el("th", {cls: "col", title: c.name, text: c.name})); });
  t.appendChild(el("thead", null, [head]));
  order.forEach(function (s) {
    var body = el("tbody", {"data-slice": s});
    body.appendChild(el("tr", {cls: "slice-row"}, [el("th", {colspan: gridConfigs.length + 1, text: s})]));
    questions.forEach(function (q, i) {
      if (q.slice !== s) return;
      var tr = el("tr", {cls: "qrow" + (D.changed[i] ? " changed" : ""), "data-q": q.id, "data-i": i});
      tr.appendChild(el("th", null, [el("a", {href: qLink(q.id), text: q.id, title: q.question})]));
      gridConfigs.forEach(function (c) {
        var v = D.grid[c.name][i];
        var kind = v === null ? "na" : v ? "hit" : "miss";
        var word = v === null ? "n/a" : v ? "hit" : "miss";
        tr.appendChild(el("td", {cls: "cell " + kind, "data-config": c.name},
          [el("a", {href: qLink(q.id), title: c.name + ": " + word + " (" + M.grid_label + ")",
                    "aria-label": q.id + " " + c.name + " " + word, text: v === null ? "" : v ? "" : "\u00d7"})]));
      });
      body.appendChild(tr);
    });
    t.appendChild(body);
  });
  var gridMeasure = M.grid_label === M.measure_label ? M.grid_label :
    M.grid_label + "; the verdicts use " + M.measure_label + ", which is not 0/1";
  byId("grid-note").textContent = "One row per question, grouped by slice; one column per available config. " +
    "Green: a relevant chunk is in the top " + M.k + " (" + gridMeasure + "), red with \u00d7: a " +
    "miss, grey: unanswerable. Changed: some config differs from " + M.baseline + ". Fixed by X: a miss in " +
    M.baseline + " that X hits; broken by X: a hit in " + M.baseline + " that X misses. Click a cell for the " +
    "question.";
  function apply() {
    var onlyChanged = byId("changed-only").checked;
    var slice = sel.value;
    var rule = byConfig.value;
    var visible = 0;
    Array.prototype.forEach.call(t.tBodies, function (body) {
      var any = false;
      Array.prototype.forEach.call(body.querySelectorAll("tr.qrow"), function (tr) {
        var i = Number(tr.getAttribute("data-i"));
        var show = (!onlyChanged || D.changed[i]) && (!slice || questions[i].slice === slice) && passes(i, rule);
        tr.hidden = !show;
        if (show) { visible += 1; any = true; }
      });
      body.hidden = !any;
    });
    byId("grid-count").textContent = visible + " of " + questions.length + " questions shown";
  }
  byId("changed-only").addEventListener("change", apply);
  sel.addEventListener("change", apply);
  byConfig.addEventListener("change", apply);
  apply();
})();

// ---------------------------------------------------------------- one question, on demand
function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }
function findSpan(text, span) {
  var words = span.trim().split(/\s+/).filter(Boolean);
  if (!words.length) return null;
  var least = Math.min(words.length, 5);
  for (var len = words.length; len >= least; len--) {
    for (var start = 0; start + len <= words.length; start++) {
      var re = new RegExp(words.slice(start, start + len).map(escapeRe).join("\\s+"), "i");
      var m = re.exec(text);
      if (m) return [m.index, m.index + m[0].length];
    }
  }
  return null;
}
function highlighted(text, spans) {
  var ranges = [];
  spans.forEach(function (s) {
    var r = findSpan(text, s.text);
    if (r) ranges.push([r[0], r[1], s.cls]);
  });
  ranges.sort(function (a, b) { return a[0] - b[0]; });
  var nodes = [], at = 0;
  ranges.forEach(function (r) {
    if (r[0] < at) return;
    nodes.push(document.createTextNode(text.slice(at, r[0])));
    nodes.push(el("mark", {cls: r[2], text: text.slice(r[0], r[1])}));
    at = r[1];
  });
  nodes.push(document.createTextNode(text.slice(at)));
  return nodes;
}
function verdictWord(v) { return v === true ? "correct" : v === false ? "incorrect" : "unknown"; }
function renderQuestion(id) {
  var i = -1;
  for (var j = 0; j < questions.length; j++) { if (questions[j].id === id) { i = j; break; } }
  var box = byId("question");
  box.textContent = "";
  if (i < 0) { box.appendChild(el("p", {text: "No question " + id + " in this report."})); return; }
  var q = questions[i];
  box.setAttribute("data-q", q.id);
  box.appendChild(el("p", {cls: "small"}, [el("a", {href: "#questions", text: "back to the grid"})]));
  box.appendChild(el("h3", {text: q.id}));
  box.appendChild(el("p", {cls: "question-text"}, [el("strong", {text: q.question})]));
  box.appendChild(el("p", {cls: "muted small", text: "slice " + q.slice + (q.doc ? ", document " + q.doc : "") +
    ". Reference answer: " + q.answer}));
  var spans = q.spans.map(function (s) { return {text: s, cls: "span"}; })
    .concat(q.audit.map(function (a) { return {text: a.span, cls: "audit"}; }));
  if (q.spans.length) {
    box.appendChild(el("p", null, ["Span(s): "].concat(q.spans.map(function (s) {
      return el("mark", {cls: "span", text: s}); }))));
  } else {
    box.appendChild(el("p", {cls: "muted", text: "Unanswerable: no span."}));
  }
  if (q.audit.length) {
    box.appendChild(el("p", {text: "Label audit:"}));
    box.appendChild(el("ul", null, q.audit.map(function (a) {
      return el("li", null, [el("mark", {cls: "audit", text: a.span}), " (" + a.doc + "): " + a.note]);
    })));
  }
  var base = D.grid[M.baseline];
  shown.forEach(function (c) {
    var ranking = (D.rankings[c.name] || [])[i];
    if (!ranking) return;
    var v = D.grid[c.name] ? D.grid[c.name][i] : null;
    var differs = base && v !== null && base[i] !== null && v !== base[i];
    var word = v === null ? "n/a" : v ? "hit" : "miss";
    var d = el("details", {cls: "config-passages", "data-config": c.name});
    if (c.baseline || differs) d.open = true;
    var deeper = D.deeper[c.name] ? D.deeper[c.name][i] : null;
    var where = !deeper ? "" : deeper.rank !== null ? ", first relevant chunk at #" + deeper.rank :
      deeper.labelled === false ? ", no chunk labelled relevant" :
      ", relevant chunk not in the stored top " + deeper.stored;
    d.appendChild(el("summary", {text: c.name + (c.baseline ? " (baseline)" : "") + ": " + M.grid_label + " " +
      word + where + (differs ? ", differs from the baseline" : "")}));
    var searched = D.searched[c.query] ? D.searched[c.query][i] : null;
    if (searched) {
      d.appendChild(el("div", {cls: "searched"}, [el("strong", {text: "Searched with (" + c.query + "): "}),
                                                   searched]));
    }
    var texts = D.passages[c.chunking] || {};
    if (deeper) {
      d.appendChild(el("p", {cls: "deeper", text: deeper.rank !== null ?
        "The first relevant chunk ranked #" + deeper.rank + " (" + M.grid_label + " counts the top " + M.k +
        "): " + deeper.chunk + ", score " + Number(deeper.score).toFixed(4) + "." :
        deeper.labelled === false ? "No chunk of this chunking is labelled relevant to this question." :
        "The relevant chunk is not in the stored top " + deeper.stored + ": it ranked below #" + deeper.stored +
        ", or was not retrieved."}));
    }
    ranking.forEach(function (p, r) {
      var div = el("div", {cls: "passage" + (p[2] ? " relevant" : ""), "data-rank": r + 1});
      div.appendChild(el("div", {cls: "head", text: "#" + (r + 1) + "  score " + Number(p[1]).toFixed(4) + "  " +
        p[0] + (D.sources[p[0]] ? "  (" + D.sources[p[0]] + ")" : "") + (p[2] ? "  relevant" : "")}));
      div.appendChild(el("div", {cls: "text"}, highlighted(texts[p[0]] || "", spans)));
      d.appendChild(div);
    });
    if (deeper && deeper.rank !== null) {
      var far = el("div", {cls: "passage relevant deeper-passage", "data-rank": deeper.rank});
      far.appendChild(el("div", {cls: "head", text: "#" + deeper.rank + "  score " + Number(deeper.score).toFixed(4) +
        "  " + deeper.chunk + (D.sources[deeper.chunk] ? "  (" + D.sources[deeper.chunk] + ")" : "") + "  relevant"}));
      far.appendChild(el("div", {cls: "text"}, highlighted(texts[deeper.chunk] || "", spans)));
      d.appendChild(far);
    }
    box.appendChild(d);
  });
  Object.keys(D.answers).sort().forEach(function (name) {
    var a = D.answers[name];
    if (a.reason) {
      // with no answers at all, the judges section says why once, not every question
      if (!D.judge.not_judged) box.appendChild(el("p", {cls: "muted", text: name + ": answers " + a.reason}));
      return;
    }
    var e = a.answers[q.id];
    if (!e) return;
    var verdicts = M.judges.map(function (j) { return j + ": " + verdictWord(e.verdicts[j]); }).join(", ");
    box.appendChild(el("div", {cls: "answer", "data-config": name}, [
      el("strong", {text: "Answer of " + name}), "\n" + e.answer + "\n",
      el("span", {cls: "muted small", text: "hand grade: " + (e.hand === null || e.hand === undefined ?
        "not graded" : verdictWord(e.hand)) + "; judges: " + verdicts + (e.failure ? "; " + e.failure : "")})]));
  });
}
function route() {
  var h = location.hash;
  if (h.indexOf("#q/") === 0) {
    renderQuestion(decodeURIComponent(h.slice(3)));
    byId("question").scrollIntoView();
  }
}
window.addEventListener("hashchange", route);
window.renderQuestion = renderQuestion;

// ---------------------------------------------------------------- judges
(function () {
  var J = D.judge, box = byId("judge-panel");
  if (J.not_judged) { box.appendChild(el("p", {cls: "muted", text: J.not_judged})); return; }
  if (!J.judges.length) { box.appendChild(el("p", {cls: "muted", text: "No judges configured."})); return; }
  // the counts in words (stale and unknown explained), written once in Python for both reports
  box.appendChild(el("p", {cls: "muted small grades", text: J.grades_text}));
  var cards = el("div", {cls: "cards"});
  J.judges.forEach(function (j) {
    var card = el("div", {cls: "card judge", "data-judge": j.judge}, [el("h3", {text: j.judge})]);
    if (j.confusion) {
      var c = j.confusion;
      card.appendChild(table(["judge \\ hand", "correct", "incorrect"], [
        ["says correct", String(c.tp), String(c.fp)], ["says incorrect", String(c.fn), String(c.tn)]], "confusion"));
      card.appendChild(el("p", {cls: "small", text: "invalid replies: " + c.invalid + "; Cohen's kappa " +
        withCi(j.kappa) + "; accuracy " + withCi(j.accuracy)}));
    } else if (j.reason) {
      card.appendChild(el("p", {cls: "muted", text: j.reason}));
    }
    if (j.canaries.length) {
      card.appendChild(table(["canary", "should", "accepted", "n"], j.canaries.map(function (k) {
        return [k.kind, k.expected_accept ? "accept" : "reject",
                pct(k.accepted) + " (" + pct(k.low) + " to " + pct(k.high) + ")", String(k.n)];
      }), "canaries"));
    }
    cards.appendChild(card);
  });
  // two graders (judge_eval's graders): beside the judges, the ceiling of their agreement
  var G = J.graders;
  if (G && !G.line) {
    var t = G.table, card2 = el("div", {cls: "card judge graders"}, [el("h3", {text: "second grader (the ceiling)"})]);
    card2.appendChild(table(["second \\ first", "correct", "incorrect"], [
      ["says correct", String(t.both_correct), String(t.second_only)],
      ["says incorrect", String(t.first_only), String(t.both_incorrect)]], "confusion"));
    card2.appendChild(el("p", {cls: "small", text: G.n + " answers graded blind by two graders (" +
      G.graders.join(", ") + "); Cohen's kappa " + withCi(G.kappa) + "; agreement " + withCi(G.accuracy)}));
    cards.appendChild(card2);
  }
  box.appendChild(cards);
  if (G && G.line) box.appendChild(el("p", {cls: "muted small graders", text: G.line}));
  if (G && G.disagreements && G.disagreements.length) {
    var said = function (w) { return w.verdict + " by " + w.grader + (w.note ? " (" + w.note + ")" : ""); };
    box.appendChild(el("p", {cls: "small", text: "Graders' disagreements to adjudicate (an adjudicated line in the " +
      "grades file settles one; calibration uses it):"}));
    box.appendChild(table(["config", "question", "first grader", "second grader", "adjudicated"],
      G.disagreements.map(function (r) {
        return [r.config, r.id, said(r.first), said(r.second), r.adjudicated || "not yet"];
      }), "graders"));
  }
  (J.canary_flags || []).forEach(function (f) {
    box.appendChild(el("p", {cls: "flag", text: "\u26a0 Warning: " + f.judge + " accepts " + f.kind + " canaries (" +
      f.accepted_count + " of " + f.n + "): a sound judge rejects every one."}));
  });
  if ((J.scores || []).length) {
    box.appendChild(el("h3", {text: "Judges by their scores"}));
    box.appendChild(el("p", {cls: "small", text: "Each judge's score against the hand grades: AUC (0.5 = chance), " +
      "and kappa, TPR and TNR at a threshold chosen by cross-fitting (each answer judged by a threshold chosen on " +
      "the other folds' grades). combined: a logistic regression over the scores, fit the same way. kappa: the " +
      "median over repeated cross-fits (many fold seeds), its interval from a bootstrap that re-runs the whole " +
      "cross-fit (thresholds and model re-fit) on each draw." +
      (J.primary ? " Primary judge (failure tables): " + J.primary + ", the best cross-fitted kappa." : "")}));
    box.appendChild(table(["judge", "AUC", "kappa (cross-fitted)", "TPR", "TNR"], J.scores.map(function (r) {
      return r.reason ? [r.judge, "n/a", r.reason, "", ""] :
        [r.judge + (r.judge === J.primary ? " (primary)" : ""), withCi(r.auc), withCi(r.kappa), withCi(r.tpr),
         withCi(r.tnr)];
    }), "scores"));
  }
  // support (groundedness): judge_eval's support block, each scorer calibrated on the hand support grades
  var S = J.support;
  if (S && S.line) box.appendChild(el("p", {cls: "muted small support", text: S.line}));
  if (S && !S.line) {
    var lv = S.levels;
    var share = function (d) { return d ? withCi(d, pct) + " (" + d.supported + "/" + d.n + ")" : "n/a"; };
    box.appendChild(el("h3", {text: "Support (groundedness)"}));
    box.appendChild(el("p", {cls: "small support", text: "Is the answer supported by the passages its prompt " +
      "showed? Hand support grades: " + lv.supported + " supported, " + lv.partly + " partly, " + lv.not + " not " +
      "(rag-ablation grade --support adds them). Supported: every claim of the answer is stated in the passages " +
      "shown; partly and not count as unsupported (an answer with one invented claim is not grounded). Each score " +
      "is calibrated on the hand support grades as the judges are: AUC, and the cross-fitted kappa (median over " +
      "fold seeds, its interval re-fitting the threshold on every bootstrap draw). Each scorer's threshold is " +
      "chosen on the hand support grades; it judges the answers without one, and the canaries." + (S.primary ?
      " Support verdicts: the hand grade where there is one, else " + S.primary + " (the best median kappa) at " +
      "its threshold." : " No scorer is calibrated: support verdicts come from hand grades only.")}));
    box.appendChild(table(["scorer", "graded answers scored", "AUC", "kappa (median, refit interval)", "threshold",
                           "what it is"], S.scorers.map(function (r) {
      var scored = String(r.n) + (r.unscored ? " (" + r.unscored + " without a score)" : "");
      if (r.reason) return {cls: "unavailable", cells: [r.scorer, scored, "n/a", "not calibrated: " + r.reason, "",
                                                         r.what]};
      var k = r.kappa ? withCi(r.kappa) + (r.kappa.seeds_min !== null && r.kappa.seeds_min !== undefined ?
        "; seeds " + num(r.kappa.seeds_min) + " to " + num(r.kappa.seeds_max) : "") : "n/a";
      return [r.scorer + (r.scorer === S.primary ? " (primary)" : ""), scored, withCi(r.auc), k,
              r.threshold === null || r.threshold === undefined ? "n/a" : Number(r.threshold).toPrecision(3), r.what];
    }), "support-scorers"));
    var K = S.canaries;
    if (K.reason) {
      box.appendChild(el("p", {cls: "muted small", text: "Support canaries: not judged (" + K.reason + ")."}));
    } else {
      box.appendChild(el("p", {cls: "small", text: "Support canaries, judged at each scorer's threshold: " +
        "unrelated_copy copies a passage of another document that the prompt did not show (must be rejected); " +
        "shown_copy copies a passage the prompt showed (must be accepted)."}));
      K.flags.forEach(function (f) {
        box.appendChild(el("p", {cls: "flag", text: "\u26a0 Warning: " + f.scorer + " " +
          (f.expected_accept ? "rejects " : "accepts ") + f.against + " of " + f.n + " " + f.kind + " canaries: a " +
          "sound scorer " + (f.expected_accept ? "accepts" : "rejects") + " every one."}));
      });
      box.appendChild(table(["scorer", "canary", "a sound scorer would", "accepted", "canaries"],
        K.rows.map(function (r) {
          return [r.scorer, r.kind, r.expected_accept ? "accept" : "reject",
                  pct(r.accepted) + " (" + pct(r.low) + " to " + pct(r.high) + ")",
                  String(r.n) + (r.invalid ? " (" + r.invalid + " without a score)" : "")];
        }), "support-canaries"));
    }
    if (S.configs.length) {
      box.appendChild(el("p", {cls: "small", text: "Retrieved by correct, with correct split by support: a " +
        "correct answer the passages do not support was answered from the model's memory (or made up and lucky)."}));
    }
    var CELLS = ["correct_supported", "correct_unsupported", "correct_support_unknown", "wrong"];
    S.configs.forEach(function (c) {
      var part = el("div", {cls: "support-config", "data-config": c.config}, [el("h4", {text: c.config})]);
      part.appendChild(el("p", {cls: "small", text: "Supported: " + share(c.hand) + " of the answers with a hand " +
        "support grade; " + share(c.judged) + " of every answer with a known support verdict (" + S.source + ")."}));
      c.splits.forEach(function (s) {
        part.appendChild(el("p", {cls: "small muted", text: "Correctness from " + s.source + "; support from " +
          S.source + "; " + s.unknown + " answer(s) with an unknown correctness verdict left out."}));
        var t = table(["relevant passage in prompt", "correct, supported", "correct, unsupported",
                       "correct, support unknown", "wrong"], [["retrieved", "yes"], ["missed", "no"]].map(function (side) {
          return [side[1]].concat(CELLS.map(function (k) { return String(s[side[0]][k]); }));
        }), "support-split");
        t.setAttribute("data-source", s.key);
        part.appendChild(t);
      });
      box.appendChild(part);
    });
  }
  // question ids as links to their page; "none" for no id (both answer comparisons use it)
  var links = function (ids) {
    var span = el("span");
    ids.forEach(function (id, i) {
      if (i) span.appendChild(document.createTextNode(", "));
      span.appendChild(el("a", {href: qLink(id), text: id}));
    });
    return ids.length ? span : "none";
  };
  var C = J.comparison;
  if (C) {
    var pts = function (x) {
      return x === null || x === undefined ? "n/a" : (x >= 0 ? "+" : "") + (100 * x).toFixed(1) + " pts";
    };
    var clustered = C.rows.some(function (r) { return String(r.method || "").indexOf("cluster") === 0; });
    box.appendChild(el("h3", {text: "Answer configs compared, by hand grades"}));
    box.appendChild(el("p", {cls: "small", text: "Each answered config against " + C.baseline + " on the questions " +
      "hand-graded for both, paired by question: the difference in accuracy with its paired bootstrap interval" +
      (clustered ? " (resampling whole source documents: stats.cluster)" : "") + ", the " +
      "questions it fixed (wrong in " + C.baseline + ", right here) and broke, and the exact McNemar p on those. An " +
      "interval that includes 0 is no evidence either way."}));
    box.appendChild(table(["config", "graded in both", C.baseline, "config", "difference (interval)", "McNemar p",
                           "fixed", "broken"], C.rows.map(function (r) {
      if (r.reason) return {cls: "unavailable", cells: [r.config, "unavailable: " + r.reason, "", "", "", "", "", ""]};
      return [r.config, String(r.n), pct(r.baseline_accuracy), pct(r.accuracy), withCi(r, pts),
              Number(r.p_mcnemar).toPrecision(3), links(r.fixed), links(r.broken)];
    }), "answer-comparison"));
  }
  var Ms = J.measures || [];
  if (Ms.length) {
    var pv = function (x) { return x === null || x === undefined ? "n/a" : x < 0.001 ? "<0.001" : Number(x).toFixed(3); };
    var margin = null;
    Ms.forEach(function (m) { m.rows.forEach(function (r) { if (r.margin !== undefined) margin = r.margin; }); });
    var mrows = [];
    Ms.forEach(function (m) {
      if (m.reason) { mrows.push({cls: "unavailable", cells: [m.label, "", "unavailable: " + m.reason, "", "", "", "", "", "", "", ""]}); return; }
      m.rows.forEach(function (r) {
        if (r.reason) { mrows.push({cls: "unavailable", cells: [m.label, r.config, "unavailable: " + r.reason, "", "", "", "", "", "", "", ""]}); return; }
        mrows.push([m.label, r.config, String(r.n), num(r.baseline_mean) + " / " + num(r.mean), withCi(r, signed),
                    r.better + " / " + r.worse, pv(r.p), pv(r.p_holm), verdictCell(r.verdict),
                    links(r.better_ids || []), links(r.worse_ids || [])]);
      });
    });
    box.appendChild(el("h3", {text: "Answer configs compared on every answer"}));
    box.appendChild(el("p", {cls: "small", text: "Each answered config against " + Ms[0].baseline + " on every " +
      "answerable question both answered (not only the graded ones), paired by question, on token F1 (no judge " +
      "decides it) and on the primary judge's score: the change of the mean with its paired bootstrap interval, the " +
      "questions better / worse" + (margin !== null ? " by more than " + margin : "") + " (stats.margin), the paired " +
      "sign-flip test (the exact sign test for a 0/1 measure) and its Holm adjustment over the configs. A score is the judge's, not a person's: where this " +
      "and the hand-graded comparison disagree, trust the hand grades."}));
    box.appendChild(table(["measure", "config", "questions", Ms[0].baseline + " / config", "change (interval)",
                           "better / worse", "p", "Holm p", "verdict", "better", "worse"], mrows, "answer-measures"));
  }
  var p = J.position;
  box.appendChild(el("p", {cls: "small", text: p.pairs !== undefined ?
    "Position consistency: " + p.consistent + "/" + p.pairs + " pairs judged the same in both orders (" +
    pct(p.consistency) + "); ties " + p.ties + ", long wins " + p.long_wins + ", short wins " + p.short_wins + "." :
    "Position consistency: " + p.reason + "."}));
})();

// ---------------------------------------------------------------- sweep
(function () {
  var S = D.sweep, box = byId("sweep-panel");
  if (!S) { box.appendChild(el("p", {cls: "muted", text: "No sweep summary (rag-ablation sweep-report)."})); return; }
  if (S.reason) { box.appendChild(el("p", {cls: "muted", text: S.reason + "."})); return; }
  box.appendChild(el("p", {text: "Winner: " + S.winner + " (data set " + S.dataset + ", chosen on " + S.chosen_on +
    ", " + S.questions + " questions; tie set of " + S.tie_set_size + "; baseline " + S.baseline + "). Measure: " +
    S.measure_label + "; pairs compared with the " + (S.test_text || S.test) + ", Holm-adjusted."}));
  var named = {};
  S.rows.forEach(function (r) { if (r.letter) named[r.letter] = r.candidate; });
  function beatsCell(letters) {
    var out = el("span", {cls: "letters beats"});
    String(letters || "").split("").forEach(function (ch) {
      out.appendChild(el("span", {title: "beats " + (named[ch] || ch), text: ch}));
    });
    return out;
  }
  box.appendChild(table(["", "candidate", S.measure_label, "rank (interval)", "beats", "tie set", "P95 ms", "Pareto"],
    S.rows.map(function (r) {
      return [el("span", {cls: "letters", title: r.candidate, text: r.letter || ""}), r.candidate, ciCell(r),
              r.rank + " (" + r.rank_low + " to " + r.rank_high + ")", beatsCell(r.beats),
              r.in_tie_set ? "yes" : "", r.p95_ms === null ? "n/a" : String(r.p95_ms),
              r.pareto ? "\u25c6 on the front" : "dominated"];
    }), "sweep"));
})();

// ---------------------------------------------------------------- charts
var targets = {forest: "forest", cost: "cost-chart", answer_cost: "answer-cost", roc: "roc-chart",
  sweep: "sweep-chart"};
var OPTIONS = {"actions": false, "mode": "vega-lite", "renderer": "svg"};
var jobs = Object.keys(targets).filter(function (k) { return D.charts[k]; }).map(function (k) {
  return vegaEmbed("#" + targets[k], D.charts[k], OPTIONS).catch(function (err) {
    byId(targets[k]).appendChild(el("p", {cls: "chart-error", text: "chart failed: " + err}));
    throw err;
  });
});
// charts of hand-graded answers stay empty, without a note, when the judges section says there are none
var graded = !(D.judge.not_judged || D.judge.no_grades);
Object.keys(targets).forEach(function (k) {
  if (!graded && (k === "answer_cost" || k === "roc")) return;
  if (!D.charts[k]) byId(targets[k]).appendChild(el("p", {cls: "muted small", text: "No data for this chart."}));
});
Promise.allSettled(jobs).then(function (res) {
  document.body.setAttribute("data-charts", String(res.filter(function (r) { return r.status === "fulfilled"; }).length));
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
  document.body.setAttribute("data-ready", "1");
});
route();
})();
