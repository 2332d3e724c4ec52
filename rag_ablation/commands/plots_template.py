"""An HTML page template for `dvc plots show` / `dvc plots diff` that works offline.

DVC's plot pages load vega, vega-lite and vega-embed from a CDN, so they stay blank without a
network. DVC fills a page template of our own instead when ``plots.html_template`` is set (a
path relative to ``.dvc/``): it replaces ``{plot_divs}`` with the charts, and ``{scripts}``
with its CDN ``<script src=...>`` tags. The template built here has the three libraries inlined
and no ``{scripts}`` placeholder, so no generated page refers to a CDN.

The libraries are the project's one vendored copy (``rag_ablation/evaluation/report/assets``,
the versions and hashes of :data:`PACKAGES`; ``metrics/report.html`` inlines the same files), so
building the template needs neither npm nor a network. ``--vendor`` refreshes that copy from
the npm registry through npm itself (``npm pack`` into a temporary folder; nothing is
installed; one file is read from each tarball, its minified browser build). Usage, from the
repository root::

    python -m rag_ablation.commands.plots_template .dvc/plots/offline.html
    dvc config --local plots.html_template plots/offline.html
    python -m rag_ablation.commands.plots_template --vendor   # after changing PACKAGES
"""
from __future__ import annotations

import argparse
import json
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.errors import UserError
from rag_ablation.core.io import write_text
from rag_ablation.evaluation.report.html_assets import ASSETS, PACKAGES, Package, read_assets, script_safe

__all__ = ["PACKAGES", "Package", "build", "inline_script", "npm_pack", "page", "read_member", "vendor"]

DVC_PLACEHOLDERS = ("{plot_divs}", "{scripts}", "{refresh_tag}")
"""What DVC replaces in the page with ``str.replace``; inlined code must not contain them."""

PAGE = """<!DOCTYPE html>
<html>
<head>
    <meta charset="utf-8">
    {refresh_tag}
    <title>DVC Plot</title>
{inlined}
    <style>
        body { font-family: sans-serif; }
        table { border-spacing: 15px; }
    </style>
</head>
<body>
    {plot_divs}
</body>
</html>
"""


def npm_pack(specs: Sequence[str], dest: Path, *, npm: str = "npm") -> dict[str, Path]:
    """``npm pack --json`` the ``specs`` into ``dest``; package spec -> tarball path.

    Raises UserError when npm is missing or fails (its last error line is quoted)."""
    try:
        res = subprocess.run([npm, "pack", "--json", "--pack-destination", str(dest), *specs], capture_output=True,
                             text=True, check=False)
    except FileNotFoundError:
        raise UserError(f"{npm!r} not found: install Node.js and npm (Debian: apt-get install npm) to build the "
                        "offline plots template") from None
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"npm pack {' '.join(specs)} failed ({last}); check that the npm registry is reachable")
    packed = json.loads(res.stdout)
    return {spec: dest / item["filename"] for spec, item in zip(specs, packed)}


def read_member(tarball: Path, member: str) -> str:
    """The text of one file in an npm tarball (nothing is extracted to disk)."""
    with tarfile.open(tarball, "r:gz") as tar:
        try:
            f = tar.extractfile(member)
        except KeyError:
            f = None
        if f is None:
            raise UserError(f"{tarball.name} has no {member}; the package layout changed: pick another version")
        return f.read().decode("utf-8")


def inline_script(name: str, code: str) -> str:
    """``code`` in a ``<script>`` element. ``</script`` and ``<!--`` are escaped (``<\\/``,
    ``<\\!``; the same code in JavaScript) so the HTML parser cannot end the element early. Code
    holding one of :data:`DVC_PLACEHOLDERS` raises UserError: DVC would rewrite it."""
    found = [p for p in DVC_PLACEHOLDERS if p in code]
    if found:
        raise UserError(f"{name} contains {', '.join(found)}, which DVC replaces in the page; pick another version")
    return f"    <script>/* {name} */\n{script_safe(code)}\n    </script>"


def page(scripts: Mapping[str, str]) -> str:
    """The page template with each (name -> code) inlined in order; holds ``{plot_divs}`` and
    ``{refresh_tag}`` but no ``{scripts}``."""
    inlined = "\n".join(inline_script(name, code) for name, code in scripts.items())
    return PAGE.replace("{inlined}", inlined)


def build(out: Path, *, packages: Sequence[Package] = PACKAGES, folder: Path = ASSETS) -> Path:
    """Write the page template to ``out`` with the vendored ``packages`` (read from ``folder``)."""
    write_text(out, page(read_assets(tuple(packages), folder)))
    return out


def vendor(folder: Path = ASSETS, *, packages: Sequence[Package] = PACKAGES, npm: str = "npm") -> list[Path]:
    """Pack ``packages`` with npm into a temporary folder and write each browser build into
    ``folder`` (the vendored copy); the written paths. Their hashes are not checked here: copy
    the new ones into ``PACKAGES`` (``html_assets.read_asset`` refuses a file that differs)."""
    with tempfile.TemporaryDirectory(prefix="rag-ablation-vega-") as tmp:
        tarballs = npm_pack([p.spec for p in packages], Path(tmp), npm=npm)
        written = []
        for p in packages:
            write_text(folder / p.file, read_member(tarballs[p.spec], p.member))
            written.append(folder / p.file)
    return written


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m rag_ablation.commands.plots_template", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, nargs="?", help="where to write the template, e.g. .dvc/plots/offline.html")
    ap.add_argument("--vendor", action="store_true", help="refresh the vendored libraries from npm instead")
    ap.add_argument("--npm", default="npm", help="the npm executable for --vendor (default: npm on PATH)")
    args = ap.parse_args(argv)
    if args.vendor:
        runner.run(lambda: print(*vendor(npm=args.npm), sep="\n"), cost=False)
    elif args.out is None:
        ap.error("name the template to write (OUT), or pass --vendor")
    else:
        runner.run(lambda: print(build(args.out)), cost=False)


if __name__ == "__main__":
    main()
