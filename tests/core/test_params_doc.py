"""The params reference in docs/pipeline.md against the code: the table whose header starts
``| key | default |`` (one row per key, the key in backticks in the first column, its default in
the second) must state, for every key, the default that ``rag_ablation/core/config.py`` fills in,
and must document every key the dataclasses read (``UNDOCUMENTED`` lists the exceptions).

A default cell is read the way params.yaml is: ``null`` (or ``~``) is None, ``false`` a bool,
``[a, b]`` a list, anything else YAML scalar (``none`` is the string, as in ``query: none``). The
first code span of the cell is the value when there is one (``\\`rrf\\` (hybrid only)``), else the
text before any parenthesis or semicolon (``60 (rrf only)``); ``10,000`` and ``95%`` are read as
numbers. A key without a default (it is required) is written ``required`` or a dash.

Placeholders (``<name>``, ``<config>``, ``NAME``) all stand for a config name; ``.overlap`` after
``chunkings.<name>.size`` is ``chunkings.<name>.overlap`` (the params table's shorthand)."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import pytest
import yaml

from conftest import ROOT

from rag_ablation.core import config
from rag_ablation.core.config import field_defaults

DOC = ROOT / "docs" / "pipeline.md"

# blocks of params.yaml -> the dataclass that reads them (a key per field, ``name`` aside)
BLOCKS: dict[str, type] = {
    "labels": config.LabelsConfig, "embedding": config.EmbeddingConfig, "bm25": config.Bm25Config,
    "faiss": config.FaissConfig, "llm": config.LlmConfig, "generation": config.GenerationConfig,
    "stats": config.StatsConfig, "judge": config.JudgeConfig, "support": config.SupportConfig,
    "gate": config.GateConfig, "split": config.SplitConfig,
    "workbench": config.WorkbenchConfig, "ray": config.RayConfig, "documents": config.DocumentsConfig,
    "chunkings.<name>": config.ChunkingConfig, "retrieval.<name>": config.RetrievalConfig,
    "retrieval.<name>.rerank": config.RerankConfig, "query_transforms.<name>": config.QueryTransformConfig,
    "apps.<name>": config.AppConfig,
}
NAMED = {"chunkings", "retrieval", "query_transforms", "apps"}  # blocks of named configs
TOP = [k for k in config.Params.BLOCKS if k not in BLOCKS and k not in NAMED]  # dataset, chunk_size, ...

UNDOCUMENTED = {
    "retrieval.<name>.rerank.allow_placeholder": "tests only: lets an untrained reranker head run for plumbing",
    "split.enabled": "not a key: `split: none` turns the split off, a block (or no `split:`) turns it on",
    "retrieval.<name>.app": "not a key: an entry of `apps:` becomes a retrieval config holding its AppConfig",
}
"""Keys the dataclasses read that the reference need not list, with the reason."""

REQUIRED = object()
"""The expected "default" of a key that has none (params must set it)."""


# --- reading the table ------------------------------------------------------------------------

PLACEHOLDER = re.compile(r"<[^<>]*>|\b[A-Z][A-Z_]*\b")
KEY = re.compile(r"^\.?[a-z_][a-z0-9_]*(\.(<name>|[a-z0-9_]+))*$")
NO_DEFAULT = re.compile(r"^(|[-\u2013\u2014]+|n/?a|no default|none \(required\)|\(?required\b.*)$", re.I)


def split_row(line: str) -> list[str]:
    """The cells of a markdown table row: split at ``|`` outside code spans and not escaped."""
    cells, cell, code, i = [], "", False, 0
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line) and line[i + 1] == "|":
            cell, i = cell + "|", i + 2
            continue
        if ch == "`":
            code = not code
        if ch == "|" and not code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += ch
        i += 1
    if cell.strip():
        cells.append(cell.strip())
    return cells


def code_spans(cell: str) -> list[str]:
    return [s.strip() for s in re.findall(r"`([^`]+)`", cell)]


def normalize_key(key: str) -> str:
    return ".".join("<name>" if PLACEHOLDER.fullmatch(p) else p for p in key.strip().split("."))


def reference_rows(text: str) -> list[tuple[int, list[str], str]]:
    """(line number, keys, default cell) of every row of every table whose header starts with
    the columns ``key`` and ``default``. A first column with several keys gives several keys
    (the test then asks for one row each); ``.x`` is resolved against the key before it."""
    rows: list[tuple[int, list[str], str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        header = split_row(lines[i]) if lines[i].lstrip().startswith("|") else []
        names = [re.sub(r"[*_`]", "", c).strip().lower() for c in header]
        sep = lines[i + 1] if i + 1 < len(lines) else ""
        if len(names) >= 2 and names[0] == "key" and "default" in names[1] and re.match(r"^\s*\|?\s*:?-", sep):
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                cells = split_row(lines[i])
                keys: list[str] = []
                for span in code_spans(cells[0] if cells else ""):
                    span = normalize_key(span)
                    if not KEY.match(span):
                        continue
                    if span.startswith("."):
                        if not keys:
                            continue
                        span = keys[-1].rsplit(".", 1)[0] + span
                    keys.append(span)
                rows.append((i + 1, keys, cells[1] if len(cells) > 1 else ""))
                i += 1
            continue
        i += 1
    return rows


def lead(cell: str) -> str:
    """The cell up to its first parenthesis, semicolon or dash remark outside code spans."""
    code = False
    for i, ch in enumerate(cell):
        if ch == "`":
            code = not code
        elif not code and (ch in "(;" or cell.startswith((" \u2013 ", " \u2014 ", " - "), i)):
            return cell[:i]
    return cell


def documented_value(cell: str) -> tuple[Any, str]:
    """(the value a default cell states, the text it was read from). REQUIRED for no default."""
    cell = cell.strip()
    if NO_DEFAULT.match(cell.strip("*").strip()):
        return REQUIRED, cell
    head = lead(cell).strip() or cell
    spans = code_spans(head)
    raw = spans[0] if spans else head.strip("*").strip().rstrip(".").strip()
    if not spans and NO_DEFAULT.match(raw):
        return REQUIRED, raw
    if re.fullmatch(r"-?\d{1,3}(?:[,_]\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?%", raw):
        number = float(raw.rstrip("%").replace(",", "").replace("_", ""))
        return (number / 100 if raw.endswith("%") else number), raw
    try:
        return yaml.safe_load(raw), raw
    except yaml.YAMLError:
        return raw, raw


# --- what the code says -----------------------------------------------------------------------


def code_keys() -> dict[str, Any]:
    """Every key the dataclasses read -> its default in params.yaml terms (tuples as lists),
    REQUIRED when it has none. Defaults that a field cannot hold (they depend on the method or
    on other keys) come from the module's constants, so this follows the code."""
    out: dict[str, Any] = {}
    top = field_defaults(config.Params)
    for key in TOP:
        out[key] = top.get(key, REQUIRED)
    for block, cls in BLOCKS.items():
        defaults = field_defaults(cls)
        for f in fields(cls):
            if f.name == "name":  # the config's name is its key in the block, not a param
                continue
            out[f"{block}.{f.name}"] = as_params(defaults.get(f.name, REQUIRED))
    out["chunkings.<name>.method"] = config.DEFAULT_CHUNKING_METHOD
    out["retrieval.<name>.fusion"] = config.DEFAULT_FUSION
    out["retrieval.<name>.rrf_k"] = config.DEFAULT_RRF_K
    out["retrieval.<name>.ties"] = config.DEFAULT_TIES
    out["run_configs"] = config.RUN_DEFAULT  # the field holds the names it resolves to
    out["retrieval.<name>.optional"] = False  # split off before the config is read (optional_configs)
    return out


def as_params(value: Any) -> Any:
    if isinstance(value, tuple):
        return [as_params(v) for v in value]
    return value


def _mentions(*names: str) -> Callable[[Any, str, str], bool]:
    return lambda value, raw, cell: any(n in cell for n in names)


def _none_or_required(value: Any, raw: str, cell: str) -> bool:
    return value is REQUIRED or value is None or value == [] or str(value).lower() == "none"


# keys whose default is not one value a cell can state exactly: what the cell may say instead
ALSO: dict[str, Callable[[Any, str, str], bool]] = {
    # size and overlap null take the base size and overlap
    "chunkings.<name>.size": lambda v, raw, cell: v is None or "chunk_size" in cell,
    "chunkings.<name>.overlap": lambda v, raw, cell: v is None or "chunk_overlap" in cell,
    # `all` in params is None in the dataclass
    "generation.sample": lambda v, raw, cell: v is None or v == "all",
    # the answered configs, else the first retrieval config
    "gate.configs": _mentions("generation.configs"),
    # no weights: 1 each
    "retrieval.<name>.weights": lambda v, raw, cell: v in (None, {}) or "1" in cell,
    # None, and required with the backends or kinds that need them
    "llm.model": _none_or_required,
    "llm.base_urls": _none_or_required,
    "query_transforms.<name>.prompt": _none_or_required,
    # ten phrases: listed, or described
    "generation.refusal_phrases": lambda v, raw, cell: not isinstance(v, list),
}


def show(value: Any) -> str:
    """A code default as params.yaml writes it."""
    if value is REQUIRED:
        return "none (the key is required)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join("all" if v is None else show(v) for v in value) + "]"
    return str(value)


def same(documented: Any, expected: Any) -> bool:
    if documented is REQUIRED or expected is REQUIRED:
        return documented is expected
    if isinstance(documented, bool) or isinstance(expected, bool):
        return type(documented) is type(expected) and documented == expected
    if isinstance(expected, (int, float)) and isinstance(documented, (int, float)):
        return float(documented) == float(expected)
    if expected in ([], {}, None):
        return documented in ([], {}, None) or str(documented).lower() in ("none", "empty")
    if isinstance(expected, list) and isinstance(documented, list):
        return len(expected) == len(documented) and all(
            same(d, "all" if e is None else e) or (e is None and d is None) for d, e in zip(documented, expected))
    return documented == expected


# --- the tests --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def table() -> dict[str, tuple[int, str]]:
    """docs/pipeline.md's reference rows: key -> (line, default cell)."""
    if not DOC.is_file():
        pytest.skip("docs/pipeline.md does not exist yet (the README's params table is moving there): "
                    "rerun this test once it does")
    rows = reference_rows(DOC.read_text(encoding="utf-8"))
    assert rows, f"{DOC.relative_to(ROOT)}: no table whose header starts `| key | default |`"
    problems = [f"line {n}: no key in backticks in the first column" for n, keys, _ in rows if not keys]
    problems += [f"line {n}: one row per key, got {', '.join(keys)}" for n, keys, _ in rows if len(keys) > 1]
    out: dict[str, tuple[int, str]] = {}
    for n, keys, cell in rows:
        if len(keys) == 1:
            if keys[0] in out:
                problems.append(f"line {n}: `{keys[0]}` already documented on line {out[keys[0]][0]}")
            out.setdefault(keys[0], (n, cell))
    assert not problems, f"{DOC.relative_to(ROOT)}:\n" + "\n".join(problems)
    return out


def test_the_key_list_covers_every_block():
    """A new block of Params must be added to BLOCKS (or is a top-level key) before it is checked."""
    assert set(config.Params.BLOCKS) == set(TOP) | NAMED | {b for b in BLOCKS if "." not in b}
    assert set(TOP) == {"dataset", "chunk_size", "chunk_overlap", "run_configs"}
    assert set(UNDOCUMENTED) <= set(code_keys())


def test_every_documented_default_is_the_code_default(table):
    expected = code_keys()
    wrong = []
    for key, (line, cell) in sorted(table.items(), key=lambda kv: kv[1][0]):
        if key not in expected:
            continue  # test_every_documented_key_exists names it
        value, raw = documented_value(cell)
        want = expected[key]
        if same(value, want) or (key in ALSO and ALSO[key](value, raw, cell)):
            continue
        wrong.append(f"line {line}: `{key}` documents {cell!r}, the code's default is {show(want)}")
    assert not wrong, f"{DOC.relative_to(ROOT)} disagrees with rag_ablation/core/config.py:\n" + "\n".join(wrong)


def test_every_key_is_documented(table):
    missing = sorted(set(code_keys()) - set(table) - set(UNDOCUMENTED))
    assert not missing, f"{DOC.relative_to(ROOT)} documents no default for: {', '.join(missing)}"


def test_every_documented_key_exists(table):
    unknown = sorted(k for k in table if k not in code_keys())
    assert not unknown, f"{DOC.relative_to(ROOT)} documents keys no dataclass reads: {', '.join(unknown)}"


# --- the reader itself, on the table's likely shapes (runs without docs/pipeline.md) ------------

SAMPLE = """\
Some text with a | pipe.

| key | default | meaning |
|---|---|---|
| `dataset` | `handbook` | What the pipeline runs on. |
| `chunk_size` | required | Base chunk size in characters. |
| `chunkings.<name>.size` | null (`chunk_size`) | Characters. |
| `retrieval.<config>.rrf_k` | 60 (rrf only) | RRF's k. |
| `retrieval.NAME.fusion` | `rrf` (hybrid only) | `rrf` \\| `append`. |
| `stats.resamples` | 10,000 | Bootstrap draws. |
| `stats.confidence` | 95% | Level. |
| `stats.subsample_sizes` | `[20, 40, 60, 100, all]` | Sizes. |
| `labels.same_doc_only` | `false` | Gold document only. |
| `llm.host` | null | ollama only. |
| `retrieval.<name>.query` | `none` | A transform name. |
| `bm25.k1`, `.b` | 1.5, 0.75 | BM25. |
| `retrieval.<name>.chunking` | \u2014 | Which chunking. |

| key | meaning |
|---|---|
| `not.this.table` | no default column |
"""


def test_the_reader_on_a_sample_table():
    rows = {tuple(keys): cell for _, keys, cell in reference_rows(SAMPLE)}
    assert ("not.this.table",) not in rows, "only tables with a default column"
    assert ("bm25.k1", "bm25.b") in rows, "shorthand resolved, several keys kept (and refused by the fixture)"
    read = {keys[0]: documented_value(cell)[0] for keys, cell in rows.items() if len(keys) == 1}
    expected = code_keys()
    assert read["dataset"] == "handbook" == expected["dataset"]
    assert read["chunk_size"] is REQUIRED is expected["chunk_size"]
    assert read["retrieval.<name>.chunking"] is REQUIRED is expected["retrieval.<name>.chunking"]
    assert read["chunkings.<name>.size"] is None and ALSO["chunkings.<name>.size"](None, "null", "null (`chunk_size`)")
    assert same(read["retrieval.<name>.rrf_k"], expected["retrieval.<name>.rrf_k"])
    assert read["retrieval.<name>.fusion"] == expected["retrieval.<name>.fusion"]
    assert same(read["stats.resamples"], expected["stats.resamples"])
    assert same(read["stats.confidence"], expected["stats.confidence"])
    assert same(read["stats.subsample_sizes"], expected["stats.subsample_sizes"])
    assert same(read["labels.same_doc_only"], expected["labels.same_doc_only"]) and not same(0, False)
    assert same(read["llm.host"], expected["llm.host"])
    assert read["retrieval.<name>.query"] == "none" == expected["retrieval.<name>.query"]
    assert not same(80, expected["generation.sample"]) and not ALSO["generation.sample"](80, "80", "80")
