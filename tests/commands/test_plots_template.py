"""DVC plot templates (.dvc/plots/*.json) filled the way DVC fills them, and the offline HTML
page template (rag_ablation.commands.plots_template) rendered by DVC's own renderer: no CDN anywhere."""
from __future__ import annotations

import io
import json
import tarfile

import pytest
from dvc_render import render_html
from dvc_render.vega import VegaRenderer
from score_rows import config_rows, hits_to_ranks

from conftest import ROOT
from rag_ablation.core.config import StatsConfig
from rag_ablation.core.errors import UserError
from rag_ablation.evaluation.statistics.stats import analyze
from rag_ablation.evaluation.report.plot_data import all_plots
from rag_ablation.commands.plots_template import inline_script, npm_pack, page, read_member

TEMPLATES = ROOT / ".dvc" / "plots"
# file -> (template, x, y), as the dvc.yaml plots declarations give them
PLOTS = {"configs.json": ("bars_ci", "value", "config"), "slices.json": ("bars_ci", "value", "config"),
         "changes.json": ("changes_ci", "value", "config"), "subsample.json": ("subsample_lines", "n", "value")}


def plot_rows():
    settings = StatsConfig(resamples=200, subsample_sizes=(4, None), subsample_draws=20)
    rows = [r for name, hits in (("dense", [0, 1] * 5), ("hybrid", [1] * 10))
            for r in config_rows(name, hits_to_ranks(hits), slices=["a", "b"] * 5)]
    return all_plots(analyze(rows, [], configs=["dense", "gone", "hybrid"], answered=[], settings=settings))


def renderer(name, rows, revs=("workspace",)):
    template, x, y = PLOTS[name]
    points = [{**r, "rev": rev, "filename": f"metrics/plots/{name}", "field": y} for rev in revs for r in rows]
    return VegaRenderer(points, name, template=template, template_dir=str(TEMPLATES), x=x, y=y, title=name)


@pytest.mark.parametrize("name", sorted(PLOTS))
def test_templates_fill_like_dvc_with_no_anchor_left(name):
    spec = renderer(name, plot_rows()[name], revs=("main", "workspace")).get_filled_template()
    text = json.dumps(spec)
    assert "<DVC_METRIC" not in text and spec["$schema"].endswith("vega-lite/v5.json")
    assert {p["rev"] for p in spec["data"]["values"]} == {"main", "workspace"}


def test_bars_sit_on_a_zero_to_one_axis_with_whiskers():
    spec = renderer("configs.json", plot_rows()["configs.json"]).get_filled_template()
    bar, whisker = spec["spec"]["layer"][:2]
    assert bar["encoding"]["x"] == {"field": "value", "type": "quantitative",
                                    "scale": {"domain": [0, 1], "nice": False}, "title": "value"}
    assert whisker["encoding"]["x"]["field"] == "ci_low" and whisker["encoding"]["x2"]["field"] == "ci_high"
    assert spec["spec"]["encoding"]["y"]["sort"] == {"field": "order", "op": "min"}  # params order, not by name


def test_offline_page_replaces_dvc_cdn_scripts(tmp_path):
    template = tmp_path / "offline.html"
    template.write_text(page({"vega": "var vega = 1; // </script> <!-- x", "vega-lite": "var vl = 2;"}))
    out = tmp_path / "dvc_plots" / "index.html"
    render_html([renderer("configs.json", plot_rows()["configs.json"])], out, html_template=str(template))
    html = out.read_text()
    assert "cdn.jsdelivr" not in html and "<script src" not in html
    assert "<\\/script> <\\!-- x" in html and "vegaEmbed(" in html and "var vl = 2;" in html
    assert html.index("/* vega */") < html.index("/* vega-lite */") < html.index("vegaEmbed(")


@pytest.mark.bad_input
def test_code_holding_a_dvc_placeholder_is_refused():
    with pytest.raises(UserError, match=r"contains \{scripts\}"):
        inline_script("vega", "x = '{scripts}'")


def tarball(path, files):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_reads_one_member_of_a_tarball(tmp_path):
    tgz = tarball(tmp_path / "vega-5.0.0.tgz", {"package/build/vega.min.js": "var vega;", "package/x.js": "no"})
    assert read_member(tgz, "package/build/vega.min.js") == "var vega;"


@pytest.mark.bad_input
def test_missing_member_or_npm_is_one_clear_error(tmp_path):
    tgz = tarball(tmp_path / "vega-5.0.0.tgz", {"package/other.js": ""})
    with pytest.raises(UserError, match="has no package/build/vega.min.js"):
        read_member(tgz, "package/build/vega.min.js")
    with pytest.raises(UserError, match="not found: install Node.js and npm"):
        npm_pack(["vega@5"], tmp_path, npm=str(tmp_path / "no-such-npm"))


def test_the_sweep_cost_plot_fills_like_dvc_with_a_log_latency_axis():
    """metrics/plots/sweep_cost.json (rag-ablation sweep-report) with the cost_pareto template."""
    rows = [{"candidate": "bm25@a", "value": 0.8, "p95_ms": 2.0, "front": "Pareto front"},
            {"candidate": "dense@a", "value": 0.7, "p95_ms": 40.0, "front": "dominated"}]
    points = [{**r, "rev": "workspace", "filename": "metrics/plots/sweep_cost.json", "field": "value"} for r in rows]
    spec = VegaRenderer(points, "sweep_cost.json", template="cost_pareto", template_dir=str(TEMPLATES), x="p95_ms",
                        y="value", title="cost").get_filled_template()
    assert "<DVC_METRIC" not in json.dumps(spec)
    assert spec["encoding"]["x"]["field"] == "p95_ms" and spec["encoding"]["x"]["scale"] == {"type": "log"}
    assert spec["layer"][0]["transform"] == [{"filter": "datum.front == 'Pareto front'"}]
    assert [p["candidate"] for p in spec["data"]["values"]] == ["bm25@a", "dense@a"]
