"""``metrics/report.html``: one self-contained page, from the forest plot down to every passage.

The page is a fixed skeleton, its style sheet and a small script, files of their own in
``assets/`` (``report.html``, ``report.css``, ``report.js``, read and checked against their
pinned SHA-256 by :func:`html_assets.read_page_files`), the vendored chart libraries
(:mod:`rag_ablation.evaluation.report.html_assets`) and one JSON blob (:func:`embed_json` of the
dict :mod:`rag_ablation.evaluation.report.html_data` gathers, with the vega-lite specs of the
charts added under ``charts``), from which the script draws every section. The script goes in
as it is: no value is ever substituted into its code. Nothing is loaded from anywhere: no ``src=``
or ``href=`` leaves the page, and the charts (vega-embed, SVG) carry no external link (the
script's vega-embed options say ``actions: false``; the specs have no ``$schema`` URL).

Escaping: no text of the data (question, passage, answer, config name) is ever written into the
HTML. It is in the blob, a ``<script type="application/json">`` element, where ``<``, ``>``,
``&``, U+2028 and U+2029 are written as JSON ``\\u`` escapes, so no content can end the element
(``</script>``) or start markup; the script puts it into the page with ``textContent`` and text
nodes only (never ``innerHTML``).

Sections: the first screen (baseline, questions, the forest plot of each config's paired change
in ``stats.measure`` with its interval and a zero line, coloured and shaped by the verdict after
Holm, sorted by change); the config table (intervals on a second line, ranx letters with hover
names, verdicts coloured with an arrow, per-slice columns, unavailable configs with their
reason); quality against cost (fixed axes, names placed by :mod:`chart_labels`, "on the front" or
"dominated"); the questions x configs grid (filters: changed against the baseline only, one
slice, fixed or broken by one config; every cell links to its question); the question view
(rendered on demand from the blob when a link ``#q/ID`` is followed, so 1,000 questions x 20
configs stays quick; the searched text of a query transform, the rank of the relevant chunk on a
miss); the judge panel, with support (groundedness: the scorers calibrated on the hand support
grades, the support canaries, each config's supported shares and split retrieved-by-correct
tables) and the answered configs compared by hand grades (paired difference, McNemar, fixed and
broken questions); the sweep summary when one was made on this data set.

Deterministic: the same data give the same bytes (keys sorted, no timestamps, no random ids).
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rag_ablation.core.errors import InvalidData
from rag_ablation.evaluation.report.chart_labels import Axis, log_axis, place_labels, zero_axis
from rag_ablation.evaluation.report.html_assets import (PACKAGES, Package, inline_script, read_assets, read_page_files,
                                                        script_safe)
from rag_ablation.evaluation.statistics.comparison import COUNT_KEYS, SIGN

Json = dict[str, Any]

VERDICT_COLOURS = {"real gain": "#1a9641", "real loss": "#d7191c", "within the noise": "#8c8c8c",
                   "no change": "#c8c8c8"}
"""The forest plot's colour per verdict (``statistics.comparison.verdict``)."""

VERDICT_SHAPES = {"real gain": "triangle-up", "real loss": "triangle-down", "within the noise": "circle",
                  "no change": "square"}
"""The forest plot's shape per verdict: a second cue beside the colour, for readers who cannot
tell the colours apart (the page's tables use the same arrows, ``report.js``)."""

FRONT_COLOURS = {"on the front": "#d95f02", "dominated": "#7570b3"}
"""The cost charts' colour of a point on the Pareto front and of a dominated one."""

FRONT_SHAPES = {"on the front": "diamond", "dominated": "circle"}
"""Their shapes: the second cue beside the colour."""

CHART_WIDTH = 460
"""The plot area's width of every chart, in pixels (vega-lite's ``width``)."""

SCATTER_HEIGHT = 320
"""The plot area's height of the cost charts, in pixels."""

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


def forest_spec(rows: Sequence[Mapping[str, Any]], *, label: str, baseline: str, confidence: float,
                counts: Sequence[str] = ("fixed", "broken")) -> Json:
    """The forest plot: per config (rows already sorted) a rule from ``ci_low`` to ``ci_high`` and
    a point at ``delta``, coloured and shaped by ``verdict``, and a rule at 0. ``counts``: the
    rows' keys of the questions up and down, in the tooltip (``better`` / ``worse`` for a
    continuous measure, as ``html_data.change_entry`` names them)."""
    names = [r["config"] for r in rows]
    colour = {"field": "verdict", "type": "nominal", "title": "verdict (Holm)",
              "scale": {"domain": list(VERDICT_COLOURS), "range": list(VERDICT_COLOURS.values())}}
    shape = {"field": "verdict", "type": "nominal", "title": "verdict (Holm)",
             "scale": {"domain": list(VERDICT_SHAPES), "range": list(VERDICT_SHAPES.values())}}
    x_title = f"change in {label} against {baseline}, {confidence:.0%} interval"
    tooltip = [{"field": "config"}, {"field": "delta", "format": "+.3f"}, {"field": "ci_low", "format": "+.3f"},
               {"field": "ci_high", "format": "+.3f"}, *({"field": c} for c in counts),
               {"field": "p_holm", "title": "Holm p"}, {"field": "verdict"}]
    return {
        "width": CHART_WIDTH, "height": {"step": 20},
        "layer": [
            {"data": {"values": [{"zero": 0}]}, "mark": {"type": "rule", "color": "#444", "strokeDash": [4, 3]},
             "encoding": {"x": {"field": "zero", "type": "quantitative"}}},
            {"data": {"values": list(rows)}, "mark": {"type": "rule", "strokeWidth": 2},
             "encoding": {"y": _y(names), "x": {"field": "ci_low", "type": "quantitative", "title": x_title},
                          "x2": {"field": "ci_high"}, "color": colour}},
            {"data": {"values": list(rows)}, "mark": {"type": "point", "filled": True, "size": 80},
             "encoding": {"y": _y(names), "x": {"field": "delta", "type": "quantitative"}, "color": colour,
                          "shape": shape, "tooltip": tooltip}},
        ],
    }


def _importance(points: Sequence[Mapping[str, Any]], name: str) -> list[Mapping[str, Any]]:
    """Points in the order their names are placed: the front first, then by value (best first),
    then by name."""
    return sorted(points, key=lambda p: (not p["front"], -p["value"], str(p[name])))


def _labels_layer(x_enc: Json, y_enc: Json, name: str) -> Json:
    """The names placed by ``chart_labels.place_labels`` (left-aligned at ``label_x``,
    ``label_y``); a name it could not place is not drawn (its point's tooltip has it)."""
    return {"transform": [{"filter": "datum.label_x !== null"}],
            "mark": {"type": "text", "align": "left", "baseline": "middle", "fontSize": 10, "color": "#333"},
            "encoding": {"x": {**x_enc, "field": "label_x"}, "y": {**y_enc, "field": "label_y"},
                         "text": {"field": name}}}


def pareto_spec(points: Sequence[Mapping[str, Any]], *, name: str, x: str, x_title: str, y_title: str) -> Json:
    """Quality (``value``, a share: axis 0 to 1) against cost (``x``, log axis from a power of ten
    below the cheapest to one above the dearest), the Pareto front (``front`` True) joined by a
    line, coloured and shaped "on the front" or "dominated", each name placed where it overlaps
    no other (:func:`chart_labels.place_labels`) or, when it fits nowhere, shown on hover."""
    x_axis = log_axis([float(p[x]) for p in points], CHART_WIDTH)
    y_axis = Axis(0.0, 1.0, SCATTER_HEIGHT, flip=True)
    rows = [{**p, "status": "on the front" if p["front"] else "dominated"} for p in _importance(points, name)]
    rows = place_labels(rows, x=x, y="value", name=name, x_axis=x_axis, y_axis=y_axis)
    x_enc = {"field": x, "type": "quantitative", "scale": x_axis.scale(), "title": x_title}
    y_enc = {"field": "value", "type": "quantitative", "scale": y_axis.scale(), "title": y_title}
    status = {"field": "status", "type": "nominal", "title": "Pareto front",
              "scale": {"domain": list(FRONT_COLOURS), "range": list(FRONT_COLOURS.values())}}
    shape = {**status, "scale": {"domain": list(FRONT_SHAPES), "range": list(FRONT_SHAPES.values())}}
    return {
        "width": CHART_WIDTH, "height": SCATTER_HEIGHT, "data": {"values": rows},
        "layer": [
            {"transform": [{"filter": "datum.front"}], "mark": {"type": "line", "color": FRONT_COLOURS["on the front"]},
             "encoding": {"x": x_enc, "y": y_enc, "order": {"field": x}}},
            {"mark": {"type": "point", "filled": True, "size": 60},
             "encoding": {"x": x_enc, "y": y_enc, "color": status, "shape": shape,
                          "tooltip": [{"field": name}, {"field": x, "title": "P95 ms"},
                                      {"field": "value", "format": ".3f"}, {"field": "status"}]}},
            _labels_layer(x_enc, y_enc, name),
        ],
    }


def answer_cost_spec(points: Sequence[Mapping[str, Any]]) -> Json:
    """Hand-graded answer accuracy with its interval (axis 0 to 1) against median seconds per
    answer (axis from 0), each name placed as on the cost chart."""
    x_axis = zero_axis([float(p["seconds"]) for p in points], CHART_WIDTH)
    y_axis = Axis(0.0, 1.0, SCATTER_HEIGHT, flip=True)
    rows = place_labels(sorted(points, key=lambda p: (-p["value"], p["config"])), x="seconds", y="value",
                        name="config", x_axis=x_axis, y_axis=y_axis)
    x_enc = {"field": "seconds", "type": "quantitative", "scale": x_axis.scale(), "title": "median seconds per answer"}
    y_enc = {"field": "value", "type": "quantitative", "scale": y_axis.scale(),
             "title": "answer accuracy (hand grades)"}
    return {
        "width": CHART_WIDTH, "height": SCATTER_HEIGHT, "data": {"values": rows},
        "layer": [
            {"mark": "rule", "encoding": {"x": x_enc, "y": {**y_enc, "field": "ci_low"}, "y2": {"field": "ci_high"}}},
            {"mark": {"type": "point", "filled": True, "size": 60},
             "encoding": {"x": x_enc, "y": y_enc,
                          "tooltip": [{"field": "config"}, {"field": "seconds", "format": ".2f"},
                                      {"field": "value", "format": ".3f"}, {"field": "n"}]}},
            _labels_layer(x_enc, y_enc, "config"),
        ],
    }


def roc_spec(rows: Sequence[Mapping[str, Any]]) -> Json:
    """Each judge's ROC curve on the hand grades (both axes 0 to 1, the chance diagonal dashed),
    one line per judge, distinguished by colour and by dash (a second cue), named on hover."""
    axis = {"type": "quantitative", "scale": {"domain": [0, 1]}}
    return {
        "width": SCATTER_HEIGHT, "height": SCATTER_HEIGHT,
        "layer": [
            {"data": {"values": [{"fpr": 0, "tpr": 0}, {"fpr": 1, "tpr": 1}]},
             "mark": {"type": "line", "strokeDash": [2, 2], "color": "#999"},
             "encoding": {"x": {**axis, "field": "fpr"}, "y": {**axis, "field": "tpr"}}},
            {"data": {"values": list(rows)}, "mark": {"type": "line", "point": True},
             "encoding": {"x": {**axis, "field": "fpr", "title": "false positive rate (incorrect called correct)"},
                          "y": {**axis, "field": "tpr", "title": "true positive rate (correct called correct)"},
                          "color": {"field": "judge", "type": "nominal"},
                          "strokeDash": {"field": "judge", "type": "nominal"},
                          "tooltip": [{"field": "judge"}, {"field": "fpr", "format": ".2f"},
                                      {"field": "tpr", "format": ".2f"}]}},
        ],
    }


def chart_specs(data: Mapping[str, Any]) -> Json:
    """Chart id -> vega-lite spec, for the charts that have points."""
    meta = data["meta"]
    label = meta["measure_label"]
    charts: Json = {}
    if data["forest"]:
        charts["forest"] = forest_spec(data["forest"], label=label, baseline=meta["baseline"],
                                       confidence=meta["confidence"], counts=COUNT_KEYS[meta.get("test", SIGN)][:2])
    if data["cost"]:
        charts["cost"] = pareto_spec(data["cost"], name="config", x="p95_ms",
                                     x_title="P95 retrieval latency per query, ms (log)", y_title=label)
    if data["answer_cost"]:
        charts["answer_cost"] = answer_cost_spec(data["answer_cost"])
    if (data.get("judge") or {}).get("roc"):
        charts["roc"] = roc_spec(data["judge"]["roc"])
    sweep = data.get("sweep")
    if sweep and "rows" in sweep:
        points = [{"candidate": r["candidate"], "p95_ms": r["p95_ms"], "value": r["value"], "front": bool(r["pareto"])}
                  for r in sweep["rows"] if isinstance(r.get("p95_ms"), (int, float)) and r["p95_ms"] > 0]
        if points:
            charts["sweep"] = pareto_spec(points, name="candidate", x="p95_ms",
                                          x_title="P95 retrieval latency per query, ms (log)",
                                          y_title=f"{sweep.get('measure')} (dev)")
    return charts


# --------------------------------------------------------------------------- the page


_PLACEHOLDER = re.compile(r"\{(style|libraries|data|app)\}")
"""The skeleton's placeholders (``assets/report.html``), each filled by :func:`page`."""


def fragment(text: str) -> str:
    """A front-end file's text as it goes into the skeleton: without the newline ending the file."""
    return text.removesuffix("\n")


def page(data: Mapping[str, Any], scripts: Mapping[str, str]) -> str:
    """The whole page: ``data`` (:func:`html_data.page_data`'s dict) with its chart specs added,
    embedded once; ``scripts`` (name -> code, in load order) inlined. The skeleton, the style
    sheet and the script are the files of :func:`html_assets.read_page_files`: the skeleton as it
    is, with the other two (:func:`fragment` of each) and the libraries and the blob in its
    placeholders."""
    files = read_page_files()
    blob = {**data, "charts": chart_specs(data)}
    try:
        text = embed_json(blob)
    except ValueError:
        raise InvalidData("the report's inputs hold NaN or infinity, which JSON cannot carry: regenerate the metrics "
                          "files (`dvc repro -f stats judge_eval`)") from None
    libraries = "\n".join(inline_script(name, code, indent="") for name, code in scripts.items())
    parts = {"style": fragment(files["style"]), "libraries": libraries, "data": text,
             "app": script_safe(fragment(files["app"]))}
    # one pass over the skeleton only: a placeholder inside the libraries or the data stays as it is
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], files["skeleton"])


def render(data: Mapping[str, Any], *, packages: Sequence[Package] = PACKAGES) -> str:
    """The page with the vendored chart libraries (``html_assets.read_assets``)."""
    return page(data, read_assets(tuple(packages)))
