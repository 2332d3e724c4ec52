"""The plots as a reader sees them: DVC's page, built with the offline template (the vendored
vega inlined, no CDN), opened in headless Chromium with the network off; the charts must draw."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from dvc_render import render_html

from rag_ablation.commands.plots_template import build

from commands.test_plots_template import PLOTS, plot_rows, renderer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install "
                                 "chromium); .ci/run installs it")]


@pytest.fixture(scope="module")
def offline_template(tmp_path_factory):
    return build(tmp_path_factory.mktemp("tpl") / "offline.html")


def test_every_chart_draws_offline(offline_template, tmp_path):
    rows = plot_rows()
    out = tmp_path / "dvc_plots" / "index.html"
    render_html([renderer(name, rows[name], revs=("main", "workspace")) for name in sorted(PLOTS)], out,
                html_template=str(offline_template))
    html = out.read_text()
    assert not re.search(r"<(?:script|link)[^>]*(?:src|href)=", html), "every script is inline, nothing loads"
    res = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={tmp_path / 'profile'}", "--proxy-server=127.0.0.1:9",
                          "--virtual-time-budget=10000", "--dump-dom", out.as_uri()],
                         capture_output=True, text=True, timeout=120)
    dom = res.stdout
    assert res.returncode == 0, res.stderr[-2000:]
    drawn = re.findall(r'<(?:svg|canvas)[^>]*class="marks"', dom)
    assert len(drawn) == len(PLOTS), f"expected {len(PLOTS)} drawn charts, found {len(drawn)}"
    assert "Error" not in re.sub(r"<script.*?</script>", "", dom, flags=re.S)
