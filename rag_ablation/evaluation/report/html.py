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
from rag_ablation.evaluation.report.html_assets import (PACKAGES, Package, inline_script, read_assets, read_page_files,
                                                        script_safe)

Json = dict[str, Any]

VERDICT_COLOURS = {"real gain": "#1a9641", "real loss": "#d7191c", "within the noise": "#8c8c8c",
                   "no change": "#c8c8c8"}
"""The forest plot's colour per verdict (``statistics.comparison.verdict``)."""

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
