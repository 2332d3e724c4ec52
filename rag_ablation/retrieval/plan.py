"""Which indexes a chunking needs: build the dense index only for chunkings a dense or hybrid
config searches, the BM25 index only for those a BM25 or hybrid config searches.

DVC's templating cannot give a ``foreach`` instance a dependency list that depends on the item
(``deps: ${item.deps}`` fails dvc.yaml's schema in DVC 3.67; treeverse/dvc#7151 and #8171 are
open), so every ``dense@CHUNKING`` and ``bm25@CHUNKING`` instance exists and every
``retrieve@CONFIG`` lists both index folders of its chunking. What this module decides instead
is whether an index stage *builds*:

- the ``index_plan`` stage reads ``retrieval``, ``run_configs`` and ``chunkings`` from params
  (a config left out of ``run_configs`` needs nothing) and writes one file per chunking,
  ``<plan>/<chunking>.json`` = ``{"bm25": bool, "dense": bool}`` (``index_needs``);
- ``dense@CHUNKING`` and ``bm25@CHUNKING`` depend on their chunking's file, not on the
  ``retrieval`` params. When the file says the index is not needed, the stage writes an
  "unbuilt" folder holding only ``unused.json`` (``write_unused``) in well under a second, with
  no model loaded and nothing embedded or tokenized;
- a parameter that does not flip a need (``rrf_k``, ``k``, a query transform) reruns only the
  ``index_plan`` stage, whose files stay byte-identical, so DVC skips every index stage after it.

Query transforms get the same treatment: ``index_plan`` also writes ``<transforms>/<name>.json``
= ``{"used": bool, "reason": str | null}`` (``transform_needs``), and ``queries@NAME`` depends on
that file. A transform no running config searches with (HyDE when its config is ``optional``
and the run is the default one) asks the LLM nothing: it writes an unavailable output with the
reason, and so does everything after it.

So a BM25-only study embeds nothing, and a dense-only study tokenizes nothing. A retriever asked
to open an unbuilt index (``check_built``) raises one error saying which and why: it would mean
the plan and the configs disagree, which the DAG above prevents.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from rag_ablation.core.config import RetrievalConfig
from rag_ablation.core.errors import MissingInput, UserError
from rag_ablation.core.io import read_json, replaced_folder, write_json, write_text
from rag_ablation.core.pipeline_files import stage_target

UNUSED_FILE = "unused.json"
KINDS = ("bm25", "dense")


def index_needs(retrieval: Mapping[str, RetrievalConfig], chunkings: Iterable[str]) -> dict[str, dict[str, bool]]:
    """Chunking -> ``{"bm25": any config on it uses BM25, "dense": any uses dense}``, for every
    chunking named (one no config uses needs neither)."""
    needs = {c: {"bm25": False, "dense": False} for c in sorted(chunkings)}
    for cfg in retrieval.values():
        if cfg.chunking is None:  # an app: it keeps its own index
            continue
        entry = needs.setdefault(cfg.chunking, {"bm25": False, "dense": False})
        entry["bm25"] |= cfg.uses_bm25
        entry["dense"] |= cfg.uses_dense
    return needs


def transform_needs(searched: Mapping[str, RetrievalConfig], retrieval: Mapping[str, RetrievalConfig],
                    transforms: Iterable[str]) -> dict[str, dict[str, object]]:
    """Transform -> ``{"used": bool, "reason": str | None}``: used when a config of ``searched``
    (the configs that run) searches with it; else the reason names the configs of ``retrieval``
    that would (left out of this run), or says none does."""
    out: dict[str, dict[str, object]] = {}
    for name in sorted(transforms):
        if any(c.query == name for c in searched.values()):
            out[name] = {"used": True, "reason": None}
            continue
        users = [n for n, c in retrieval.items() if c.query == name]
        reason = (f"no retrieval config that runs searches with query transform {name!r}: "
                  + (f"{', '.join(users)} {'is' if len(users) == 1 else 'are'} left out of this run "
                     f"(run every config: dvc exp run -S run_configs=all)" if users else
                     "no retrieval config names it (query: " + name + ")"))
        out[name] = {"used": False, "reason": reason}
    return out


def write_transform_plan(folder: Path, needs: Mapping[str, Mapping[str, object]]) -> None:
    """One ``<transform>.json`` per entry of ``needs`` in ``folder``, replaced whole."""
    with replaced_folder(Path(folder)) as tmp:
        for name, need in needs.items():
            write_text(tmp / f"{name}.json", json.dumps(dict(need), sort_keys=True) + "\n")


def transform_unused(plan_file: Path) -> str | None:
    """Why the query transform of ``plan_file`` is not used in this run, or None when it is."""
    plan_file = Path(plan_file)
    if not plan_file.is_file():
        raise MissingInput(f"no query transform plan {plan_file}: run `dvc repro index_plan`")
    need = read_json(plan_file)
    if not isinstance(need, dict) or not isinstance(need.get("used"), bool):
        raise UserError(f"query transform plan {plan_file} has no true/false 'used'; regenerate it with "
                        "`dvc repro index_plan`")
    return None if need["used"] else str(need.get("reason") or "not used by any config that runs")


def unbuilt_lines(needs: Mapping[str, Mapping[str, bool]]) -> list[str]:
    """One line per index kind some chunking does not need, naming those chunkings."""
    out = []
    for kind in ("dense", "bm25"):
        unused = [c for c, n in needs.items() if not n[kind]]
        if unused:
            out.append(f"index_plan: no {kind} index for {', '.join(unused)} "
                       f"(no config of run_configs searches them with {kind})")
    return out


def write_plan(folder: Path, needs: Mapping[str, Mapping[str, bool]]) -> None:
    """One ``<chunking>.json`` per entry of ``needs`` in ``folder``, replaced whole."""
    with replaced_folder(Path(folder)) as tmp:
        for chunking, need in needs.items():
            write_text(tmp / f"{chunking}.json", json.dumps(dict(need), sort_keys=True) + "\n")


def needed(plan_file: Path, kind: str) -> bool:
    """Whether the plan file of one chunking asks for the ``kind`` index (``bm25`` or ``dense``)."""
    plan_file = Path(plan_file)
    if not plan_file.is_file():
        raise MissingInput(f"no index plan {plan_file}: run `dvc repro index_plan`")
    need = read_json(plan_file)
    if not isinstance(need, dict) or not isinstance(need.get(kind), bool):
        raise UserError(f"index plan {plan_file} has no true/false {kind!r}; regenerate it with `dvc repro index_plan`")
    return need[kind]


def write_unused(folder: Path, *, kind: str, chunking: str) -> str:
    """Write the unbuilt ``kind`` index folder of ``chunking`` (only ``unused.json``); returns
    the reason, one line."""
    reason = (f"no retrieval config that runs searches chunking {chunking!r} with {kind}: its {kind} index is "
              f"not built (add such a config to params.yaml and to run_configs, and `dvc repro` builds it)")
    with replaced_folder(Path(folder)) as tmp:
        write_json(tmp / UNUSED_FILE, {"built": False, "chunking": chunking, "index": kind, "reason": reason})
    return reason


def check_built(folder: Path, *, kind: str, config: str) -> None:
    """Raise ``UserError`` when ``folder`` is an unbuilt index (``write_unused``)."""
    marker = Path(folder) / UNUSED_FILE
    if marker.is_file():
        reason = read_json(marker).get("reason", "")
        raise UserError(f"config {config!r} searches the {kind} index {folder}, which was not built ({reason}); "
                        f"run `dvc repro index_plan {stage_target(kind)}` so the plan sees the config")
