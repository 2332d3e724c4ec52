"""``metrics/report.html``: one self-contained page, from the forest plot down to every passage.

The page is a fixed skeleton (:data:`SKELETON`), the vendored chart libraries
(:mod:`rag_ablation.evaluation.report.html_assets`), one JSON blob (:func:`embed_json` of the
dict :mod:`rag_ablation.evaluation.report.html_data` gathers, with the vega-lite specs of the
charts added under ``charts``) and a small script (:data:`APP`) that draws every section from
the blob. Nothing is loaded from anywhere: no ``src=`` or ``href=`` leaves the page, and the
charts (vega-embed, SVG) carry no external link (``actions: false``, no ``$schema`` URL).

Escaping: no text of the data (question, passage, answer, config name) is ever written into the
HTML. It is in the blob, a ``<script type="application/json">`` element, where ``<``, ``>``,
``&``, U+2028 and U+2029 are written as JSON ``\\u`` escapes, so no content can end the element
(``</script>``) or start markup; the script puts it into the page with ``textContent`` and text
nodes only (never ``innerHTML``).

Sections: the first screen (baseline, questions, the forest plot of each config's paired change
in ``stats.measure`` with its interval and a zero line, coloured by the verdict after Holm,
sorted by change); the config table (intervals, ranx letters with a legend, per-slice columns,
unavailable configs with their reason); quality against cost; the questions x configs grid
(filters: changed against the baseline only, one slice; every cell links to its question); the
question view (rendered on demand from the blob when a link ``#q/ID`` is followed, so 1,000
questions x 20 configs stays quick); the judge panel, with the answered configs compared by
hand grades (paired difference, McNemar, fixed and broken questions); the sweep summary when one was given.

Deterministic: the same data give the same bytes (keys sorted, no timestamps, no random ids).
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rag_ablation.core.errors import InvalidData
from rag_ablation.evaluation.report.html_assets import PACKAGES, Package, inline_script, read_assets, script_safe

Json = dict[str, Any]

VERDICT_COLOURS = {"real gain": "#1a9641", "real loss": "#d7191c", "within the noise": "#8c8c8c",
                   "no change": "#c8c8c8"}
"""The forest plot's colour per verdict (``markdown.verdict``)."""

EMBED_OPTIONS = {"actions": False, "renderer": "svg", "mode": "vega-lite"}
"""vega-embed options: no action menu (its links leave the page), SVG marks (countable in a test)."""

_JSON_ESCAPES = {"&": "\\u0026", "<": "\\u003c", ">": "\\u003e", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def embed_json(obj: Any) -> str:
    """``obj`` as compact JSON with sorted keys, safe inside a ``<script>`` element: ``&``, ``<``,
    ``>``, U+2028 and U+2029 become ``\\u`` escapes (inside JSON strings, the only place they can
    occur, these mean the same characters). NaN or infinity raises ValueError."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, escaped in _JSON_ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


# --------------------------------------------------------------------------- chart specs


def _y(names: Sequence[str], field: str = "config") -> Json:
    return {"field": field, "type": "nominal", "sort": list(names), "title": None}


def forest_spec(rows: Sequence[Mapping[str, Any]], *, label: str, baseline: str, confidence: float) -> Json:
    """The forest plot: per config (rows already sorted) a rule from ``ci_low`` to ``ci_high`` and
    a point at ``delta``, coloured by ``verdict``, and a rule at 0."""
    names = [r["config"] for r in rows]
    colour = {"field": "verdict", "type": "nominal", "title": "verdict (Holm)",
              "scale": {"domain": list(VERDICT_COLOURS), "range": list(VERDICT_COLOURS.values())}}
    x_title = f"change in {label} against {baseline}, {confidence:.0%} interval"
    tooltip = [{"field": "config"}, {"field": "delta", "format": "+.3f"}, {"field": "ci_low", "format": "+.3f"},
               {"field": "ci_high", "format": "+.3f"}, {"field": "fixed"}, {"field": "broken"},
               {"field": "p_holm", "title": "Holm p"}, {"field": "verdict"}]
    return {
        "width": 460, "height": {"step": 20},
        "layer": [
            {"data": {"values": [{"zero": 0}]}, "mark": {"type": "rule", "color": "#444", "strokeDash": [4, 3]},
             "encoding": {"x": {"field": "zero", "type": "quantitative"}}},
            {"data": {"values": list(rows)}, "mark": {"type": "rule", "strokeWidth": 2},
             "encoding": {"y": _y(names), "x": {"field": "ci_low", "type": "quantitative", "title": x_title},
                          "x2": {"field": "ci_high"}, "color": colour}},
            {"data": {"values": list(rows)}, "mark": {"type": "point", "filled": True, "size": 70},
             "encoding": {"y": _y(names), "x": {"field": "delta", "type": "quantitative"}, "color": colour,
                          "tooltip": tooltip}},
        ],
    }


def pareto_spec(points: Sequence[Mapping[str, Any]], *, name: str, x: str, x_title: str, y_title: str) -> Json:
    """Quality (``value``) against cost (``x``, log axis), the Pareto front (``front`` True)
    joined by a line, each point labelled with its ``name`` field."""
    x_enc = {"field": x, "type": "quantitative", "scale": {"type": "log"}, "title": x_title}
    y_enc = {"field": "value", "type": "quantitative", "scale": {"zero": False}, "title": y_title}
    front = {"field": "front", "type": "nominal", "title": "Pareto front",
             "scale": {"domain": [True, False], "range": ["#d95f02", "#7570b3"]}}
    return {
        "width": 460, "height": 300, "data": {"values": list(points)},
        "layer": [
            {"transform": [{"filter": "datum.front"}], "mark": {"type": "line", "color": "#d95f02"},
             "encoding": {"x": x_enc, "y": y_enc, "order": {"field": x}}},
            {"mark": {"type": "point", "filled": True, "size": 60},
             "encoding": {"x": x_enc, "y": y_enc, "color": front,
                          "tooltip": [{"field": name}, {"field": x}, {"field": "value"}]}},
            {"mark": {"type": "text", "align": "left", "dx": 5, "dy": -5, "fontSize": 9},
             "encoding": {"x": x_enc, "y": y_enc, "text": {"field": name}}},
        ],
    }


def answer_cost_spec(points: Sequence[Mapping[str, Any]]) -> Json:
    """Hand-graded answer accuracy with its interval against median seconds per answer."""
    x_enc = {"field": "seconds", "type": "quantitative", "scale": {"zero": False},
             "title": "median seconds per answer"}
    return {
        "width": 460, "height": 220, "data": {"values": list(points)},
        "layer": [
            {"mark": "rule", "encoding": {"x": x_enc, "y": {"field": "ci_low", "type": "quantitative",
                                                            "title": "answer accuracy (hand grades)"},
                                          "y2": {"field": "ci_high"}}},
            {"mark": {"type": "point", "filled": True, "size": 60},
             "encoding": {"x": x_enc, "y": {"field": "value", "type": "quantitative"},
                          "tooltip": [{"field": "config"}, {"field": "value", "format": ".3f"}, {"field": "n"}]}},
            {"mark": {"type": "text", "align": "left", "dx": 6, "fontSize": 10},
             "encoding": {"x": x_enc, "y": {"field": "value", "type": "quantitative"}, "text": {"field": "config"}}},
        ],
    }


def chart_specs(data: Mapping[str, Any]) -> Json:
    """Chart id -> vega-lite spec, for the charts that have points."""
    meta = data["meta"]
    label = meta["measure_label"]
    charts: Json = {}
    if data["forest"]:
        charts["forest"] = forest_spec(data["forest"], label=label, baseline=meta["baseline"],
                                       confidence=meta["confidence"])
    if data["cost"]:
        charts["cost"] = pareto_spec(data["cost"], name="config", x="p95_ms",
                                     x_title="P95 retrieval latency per query, ms (log)", y_title=label)
    if data["answer_cost"]:
        charts["answer_cost"] = answer_cost_spec(data["answer_cost"])
    sweep = data.get("sweep")
    if sweep:
        points = [{"candidate": r["candidate"], "p95_ms": r["p95_ms"], "value": r["value"], "front": bool(r["pareto"])}
                  for r in sweep["rows"] if isinstance(r.get("p95_ms"), (int, float)) and r["p95_ms"] > 0]
        if points:
            charts["sweep"] = pareto_spec(points, name="candidate", x="p95_ms",
                                          x_title="P95 retrieval latency per query, ms (log)",
                                          y_title=f"{sweep.get('measure')} (dev)")
    return charts


# --------------------------------------------------------------------------- the page


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:0 1em 4em;
color:#222;line-height:1.4}
h1{font-size:1.5em;margin:.6em 0 .2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd}
nav a{margin-right:1em}.muted{color:#666}.small{font-size:.85em}
table{border-collapse:collapse;font-size:.85em}th,td{padding:2px 6px;border-bottom:1px solid #eee;text-align:left;
vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.letters{color:#0b61a4;font-weight:600;margin-left:.3em}
.unavailable td{color:#999}
#grid-wrap{overflow:auto;max-height:80vh;border:1px solid #ddd}
#grid-table th.col{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;white-space:nowrap;
position:sticky;top:0;background:#fff}
#grid-table td.cell{padding:0;border:1px solid #fff}
#grid-table td.cell a{display:block;width:16px;height:14px}
td.hit{background:#1a9641}td.miss{background:#d7191c}td.na{background:#ddd}
tr.changed th a{font-weight:600}
tr.slice-row th{background:#f4f4f4;font-weight:600}
.passage{border-left:4px solid #ccc;margin:.4em 0;padding:.2em .6em;white-space:pre-wrap;font-size:.85em}
.passage.relevant{border-left-color:#1a9641;background:#f3fbf5}
.passage .head{font-family:monospace;color:#555;white-space:normal}
mark.span{background:#ffe066}mark.audit{background:#b3e0ff}
details{margin:.3em 0}summary{cursor:pointer}
.answer{border:1px solid #ddd;padding:.4em .6em;margin:.4em 0;white-space:pre-wrap}
.cards{display:flex;flex-wrap:wrap;gap:1em}.card{border:1px solid #ddd;padding:.5em .8em;border-radius:4px}
.chart-error{color:#d7191c}
"""

SKELETON = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Retrieval ablation report</title>
<style>{style}</style>
{libraries}
<script type="application/json" id="report-data">{data}</script>
</head>
<body>
<header>
<h1>Retrieval ablation: what changed, and can you believe it</h1>
<p id="summary"></p>
<nav><a href="#configs">configs</a><a href="#cost">quality and cost</a><a href="#questions">questions</a>
<a href="#judges">judges</a><a href="#sweep">sweep</a></nav>
</header>
<section id="first">
<h2>Paired change against the baseline</h2>
<p class="muted small" id="forest-note"></p>
<div id="forest" class="chart"></div>
</section>
<section id="configs">
<h2>Configs</h2>
<p class="muted small" id="configs-note"></p>
<div id="configs-table"></div>
<p class="small" id="letters-legend"></p>
<div id="unavailable"></div>
</section>
<section id="cost">
<h2>Quality against cost</h2>
<div id="cost-chart" class="chart"></div>
<div id="answer-cost" class="chart"></div>
</section>
<section id="questions">
<h2>Questions x configs</h2>
<p class="muted small" id="grid-note"></p>
<p><label><input type="checkbox" id="changed-only"> changed against the baseline only</label>
<label>slice <select id="slice-filter"><option value="">all slices</option></select></label>
<span id="grid-count" class="muted"></span></p>
<div id="grid-wrap"><table id="grid-table"></table></div>
<div id="question"><p class="muted">Click a cell or a question id to see its passages and answers here.</p></div>
</section>
<section id="judges">
<h2>Judges</h2>
<div id="judge-panel"></div>
</section>
<section id="sweep">
<h2>Sweep</h2>
<div id="sweep-panel"></div>
<div id="sweep-chart" class="chart"></div>
</section>
<script>{app}</script>
</body>
</html>
"""

APP = r"""
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
  M.resamples + " resamples. " + shown.length + " of " + configs.length + " configs available.";
byId("forest-note").textContent = "Each config against " + M.baseline + " on the same questions: the change in " +
  M.measure_label + " with its interval. Real gain / real loss: the interval excludes 0 and the Holm-adjusted " +
  "sign test is below 0.05; everything else is within the noise. Sorted by change.";

// ---------------------------------------------------------------- config table
(function () {
  var slices = [];
  shown.forEach(function (c) {
    Object.keys(c.by_slice || {}).forEach(function (s) { if (slices.indexOf(s) < 0) slices.push(s); });
  });
  slices.sort();
  var measures = [["recall_at_1", "recall@1"], ["recall_at_5", "recall@5"], ["recall_at_10", "recall@10"],
                  ["mrr_at_10", "MRR@10"]];
  var gate = M.measure.replace("hit_at_", "recall_at_");
  var header = ["", "config", "n"].concat(measures.map(function (m) { return m[1]; }))
    .concat(["change (" + M.measure_label + ")", "verdict"])
    .concat(slices.map(function (s) { return M.measure_label + ", " + s; }));
  var rows = shown.map(function (c) {
    var cells = [el("span", {cls: "letters", text: c.letter}), c.name + (c.baseline ? " (baseline)" : ""),
                 String(c.n)];
    measures.forEach(function (m) {
      var td = el("span", {text: withCi(c.measures[m[0]])});
      if (m[0] === gate && c.beats) td.appendChild(el("span", {cls: "letters", text: c.beats}));
      cells.push(td);
    });
    cells.push(c.change ? withCi(c.change, signed) : "");
    cells.push(c.change ? c.change.verdict : "");
    slices.forEach(function (s) {
      var g = c.by_slice[s];
      cells.push(g ? withCi(g) + " n=" + g.n + (g.too_small ? ", too small" : "") : "");
    });
    return cells;
  });
  byId("configs-table").appendChild(table(header, rows, "configs"));
  byId("configs-note").textContent = "Each cell: the value and its interval. The letters after " + M.measure_label +
    " name the configs it beats: exact sign tests on the questions each pair disagrees on, Holm-adjusted over " +
    "all pairs, level " + M.alpha + ".";
  byId("letters-legend").textContent = "Letters: " + shown.map(function (c) { return c.letter + " = " + c.name; })
    .join(", ") + ".";
  var gone = configs.filter(function (c) { return !c.available; });
  if (gone.length) {
    byId("unavailable").appendChild(el("h3", {text: "Unavailable configs"}));
    byId("unavailable").appendChild(table(["config", "reason"], gone.map(function (c) {
      return {cls: "unavailable", cells: [c.name, c.reason]};
    })));
  }
})();

// ---------------------------------------------------------------- grid
var questions = D.questions;
var gridConfigs = shown.filter(function (c) { return D.grid[c.name]; });
(function () {
  var sel = byId("slice-filter");
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
          [el("a", {href: qLink(q.id), title: c.name + ": " + word + " (" + M.measure_label + ")",
                    "aria-label": q.id + " " + c.name + " " + word})]));
      });
      body.appendChild(tr);
    });
    t.appendChild(body);
  });
  byId("grid-note").textContent = "One row per question, grouped by slice; one column per available config. " +
    "Green: the question's span is in the top " + M.k + " (" + M.measure_label + " hit), red: a miss, grey: " +
    "unanswerable. Changed: some config differs from " + M.baseline + ". Click a cell for the question.";
  function apply() {
    var onlyChanged = byId("changed-only").checked;
    var slice = sel.value;
    var visible = 0;
    Array.prototype.forEach.call(t.tBodies, function (body) {
      var any = false;
      Array.prototype.forEach.call(body.querySelectorAll("tr.qrow"), function (tr) {
        var i = Number(tr.getAttribute("data-i"));
        var show = (!onlyChanged || D.changed[i]) && (!slice || questions[i].slice === slice);
        tr.hidden = !show;
        if (show) { visible += 1; any = true; }
      });
      body.hidden = !any;
    });
    byId("grid-count").textContent = visible + " of " + questions.length + " questions shown";
  }
  byId("changed-only").addEventListener("change", apply);
  sel.addEventListener("change", apply);
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
    d.appendChild(el("summary", {text: c.name + (c.baseline ? " (baseline)" : "") + ": " + M.measure_label + " " +
      word + (differs ? ", differs from the baseline" : "")}));
    var texts = D.passages[c.chunking] || {};
    ranking.forEach(function (p, r) {
      var div = el("div", {cls: "passage" + (p[2] ? " relevant" : ""), "data-rank": r + 1});
      div.appendChild(el("div", {cls: "head", text: "#" + (r + 1) + "  score " + Number(p[1]).toFixed(4) + "  " +
        p[0] + (p[2] ? "  relevant" : "")}));
      div.appendChild(el("div", {cls: "text"}, highlighted(texts[p[0]] || "", spans)));
      d.appendChild(div);
    });
    box.appendChild(d);
  });
  Object.keys(D.answers).sort().forEach(function (name) {
    var a = D.answers[name];
    if (a.reason) { box.appendChild(el("p", {cls: "muted", text: name + ": answers " + a.reason})); return; }
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
  if (!J.judges.length) { box.appendChild(el("p", {cls: "muted", text: "No judges configured."})); return; }
  box.appendChild(el("p", {cls: "muted small", text: (J.grades.matching || 0) + " hand grades match the current " +
    "answers (" + (J.grades.stale || 0) + " stale, " + (J.grades.unknown || 0) + " unknown)."}));
  var cards = el("div", {cls: "cards"});
  J.judges.forEach(function (j) {
    var card = el("div", {cls: "card judge", "data-judge": j.judge}, [el("h3", {text: j.judge})]);
    if (j.confusion) {
      var c = j.confusion;
      card.appendChild(table(["judge \\ hand", "correct", "incorrect"], [
        ["says correct", String(c.tp), String(c.fp)], ["says incorrect", String(c.fn), String(c.tn)]], "confusion"));
      card.appendChild(el("p", {cls: "small", text: "invalid replies: " + c.invalid + "; Cohen's kappa " +
        withCi(j.kappa) + "; accuracy " + withCi(j.accuracy)}));
    } else {
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
  box.appendChild(cards);
  var C = J.comparison;
  if (C) {
    var links = function (ids) {
      var span = el("span");
      ids.forEach(function (id, i) {
        if (i) span.appendChild(document.createTextNode(", "));
        span.appendChild(el("a", {href: qLink(id), text: id}));
      });
      return ids.length ? span : "none";
    };
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
  box.appendChild(el("p", {text: "Winner: " + S.winner + " (chosen on " + S.chosen_on + ", " + S.questions +
    " questions; tie set of " + S.tie_set_size + "; baseline " + S.baseline + ")."}));
  box.appendChild(table(["", "candidate", "value", "rank (interval)", "beats", "tie set", "P95 ms", "Pareto"],
    S.rows.map(function (r) {
      return [r.letter || "", r.candidate, withCi(r), r.rank + " (" + r.rank_low + " to " + r.rank_high + ")",
              r.beats || "", r.in_tie_set ? "yes" : "", r.p95_ms === null ? "n/a" : String(r.p95_ms),
              r.pareto ? "yes" : ""];
    }), "sweep"));
})();

// ---------------------------------------------------------------- charts
var targets = {forest: "forest", cost: "cost-chart", answer_cost: "answer-cost", sweep: "sweep-chart"};
var OPTIONS = __EMBED_OPTIONS__;
var jobs = Object.keys(targets).filter(function (k) { return D.charts[k]; }).map(function (k) {
  return vegaEmbed("#" + targets[k], D.charts[k], OPTIONS).catch(function (err) {
    byId(targets[k]).appendChild(el("p", {cls: "chart-error", text: "chart failed: " + err}));
    throw err;
  });
});
Object.keys(targets).forEach(function (k) {
  if (!D.charts[k]) byId(targets[k]).appendChild(el("p", {cls: "muted small", text: "No data for this chart."}));
});
Promise.allSettled(jobs).then(function (res) {
  document.body.setAttribute("data-charts", String(res.filter(function (r) { return r.status === "fulfilled"; }).length));
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
  document.body.setAttribute("data-ready", "1");
});
route();
})();
"""


_PLACEHOLDER = re.compile(r"\{(style|libraries|data|app)\}")


def page(data: Mapping[str, Any], scripts: Mapping[str, str]) -> str:
    """The whole page: ``data`` (:func:`html_data.page_data`'s dict) with its chart specs added,
    embedded once; ``scripts`` (name -> code, in load order) inlined."""
    blob = {**data, "charts": chart_specs(data)}
    try:
        text = embed_json(blob)
    except ValueError:
        raise InvalidData("the report's inputs hold NaN or infinity, which JSON cannot carry: regenerate the metrics "
                          "files (`dvc repro -f stats judge_eval`)") from None
    libraries = "\n".join(inline_script(name, code, indent="") for name, code in scripts.items())
    app = APP.replace("__EMBED_OPTIONS__", json.dumps(EMBED_OPTIONS, sort_keys=True))
    parts = {"style": STYLE.strip(), "libraries": libraries, "data": text, "app": script_safe(app)}
    # one pass over the skeleton only: a placeholder inside the libraries or the data stays as it is
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], SKELETON)


def render(data: Mapping[str, Any], *, packages: Sequence[Package] = PACKAGES) -> str:
    """The page with the vendored chart libraries (``html_assets.read_assets``)."""
    return page(data, read_assets(tuple(packages)))
