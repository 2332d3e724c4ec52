"""Running the pandoc binary that ships with ``pypandoc-binary``: one file's bytes in, GitHub
Markdown out, in a sandbox (``--sandbox``: pandoc reads nothing but its input and fetches
nothing from the network), through a Lua filter (:data:`FILTER`)."""
from __future__ import annotations

import functools
import subprocess
import tempfile
from pathlib import Path

import pypandoc

from rag_ablation.data.conversion.converted import ConversionFailed

OUTPUT = "gfm-raw_html"
"""GitHub Markdown without raw HTML: tables stay pipe tables (a merged cell becomes the text
once and empty cells beside it, never an HTML ``<table>``), and the ``<div>``/``<span>``
wrappers of unknown RST directives or HTML classes are dropped while their text stays."""
TIMEOUT_S = 300

FILTER = r"""
-- Pictures carry no text: drop them (no ![alt](media/image1.png) lines).
function Image(el) return {} end

-- Every code block fenced (pandoc writes a block without a language indented by four spaces),
-- with a fence longer than any backtick run inside; the language kept as the info string.
function CodeBlock(el)
  local fence = "```"
  while el.text:find(fence, 1, true) do fence = fence .. "`" end
  local lang = el.classes[1] or ""
  return pandoc.RawBlock("markdown", fence .. lang .. "\n" .. el.text .. "\n" .. fence)
end

-- Sphinx roles (:attr:`~flask.Flask.debug`, :doc:`the tutorial </tutorial/index>`) shown as
-- Sphinx shows them: the title before <target>, the last part of a ~dotted.name, no leading !.
local PLAIN_ROLES = {doc = true, ref = true, term = true, abbr = true, numref = true, download = true}
function Code(el)
  local role = el.attributes["role"]
  if role == nil then return nil end
  local text = el.text
  local title = text:match("^(.-)%s*<[^>]*>$")
  if title ~= nil and title ~= "" then
    text = title
  else
    text = text:gsub("^!", "")
    if text:sub(1, 1) == "~" then text = text:sub(2):match("([^.]*)$") end
  end
  if PLAIN_ROLES[role] then return pandoc.Str(text) end
  return pandoc.Code(text)
end
"""


def version() -> str:
    """``"pandoc <version>"`` of the bundled binary, e.g. ``"pandoc 3.9"``."""
    return f"pandoc {pypandoc.get_pandoc_version()}"


@functools.cache
def _filter_path() -> str:
    """:data:`FILTER` written once per process to a temporary file (pandoc reads filters from files)."""
    d = Path(tempfile.mkdtemp(prefix="rag-ablation-pandoc-"))
    path = d / "conversion.lua"
    path.write_text(FILTER, encoding="utf-8")
    return str(path)


def to_markdown(data: bytes, reader: str, what: str) -> str:
    """``data`` (read as pandoc's ``reader`` format, e.g. ``"docx"``; text formats as UTF-8)
    converted to :data:`OUTPUT` with ``--wrap=none`` (one line per paragraph) and the filter.
    A pandoc failure (an unreadable container, a parse error, a timeout of
    :data:`TIMEOUT_S` seconds) raises ConversionFailed ``damaged`` with pandoc's message;
    ``what`` names the format in that message (``"DOCX"``)."""
    cmd = [pypandoc.get_pandoc_path(), "--sandbox", f"--from={reader}", f"--to={OUTPUT}", "--wrap=none",
           f"--lua-filter={_filter_path()}"]
    try:
        res = subprocess.run(cmd, input=data, capture_output=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as e:
        raise ConversionFailed("damaged", f"{what}: pandoc did not finish in {TIMEOUT_S} s; "
                                          "check that the file is what its suffix says") from e
    if res.returncode != 0:
        msg = " ".join(res.stderr.decode("utf-8", "replace").split())[:300]
        raise ConversionFailed("damaged", f"damaged {what}: pandoc cannot read it (exit {res.returncode}: {msg}); "
                                          f"open it in an editor and save it again as {what}")
    return res.stdout.decode("utf-8")
