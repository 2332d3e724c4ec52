"""The COVID-QA anchors' chunkings and retrieval configs (``shared/notes/anchors-covidqa.md``),
and the ``dvc exp run`` commands that run them on the COVID-QA release or beside the handbook
example's configs.

They are not in the shipped ``params.yaml``: every config and chunking there is a DVC stage
instance (``retrieve@NAME``; ``chunk@``, ``dense@``, ``bm25@``, ``labels@`` per chunking) that
``dvc repro`` runs and records in ``dvc.lock`` even when ``run_configs`` leaves it out. On the
handbook example these six configs and two chunkings were 14 of 74 stage instances and cost the
first run 48 s of DVC's own work (benchmarks/RESULTS.md). The commands add them with Hydra's
``++key=value`` (add the key, or replace it if the file has it); the COVID-QA one runs only them,
the handbook one runs them beside every config of params.yaml.

``CHUNKINGS`` and ``CONFIGS`` are written as ``params.yaml`` would hold them: fixed windows of
1,000 characters (overlap 200) and 500 (overlap 100); BM25 (rank-bm25), MiniLM and RRF (k = 60)
over the top 100 of each, RRF ties given to BM25's chunk as the reference numbers do.
``SETTINGS`` are the anchors' protocol: COVID-QA, no LLM, relevance only in the gold document.
No stage imports this module, so editing it reruns nothing.
"""
from __future__ import annotations

import shlex
from typing import Any

from rag_ablation.support.hydra import hydra_value

CHUNKINGS: dict[str, dict[str, Any]] = {
    "fixed1000": {"method": "fixed", "size": 1000, "overlap": 200},
    "fixed500": {"method": "fixed", "size": 500, "overlap": 100},
}
CONFIGS: dict[str, dict[str, Any]] = {
    "bm25_fixed1000": {"chunking": "fixed1000", "method": "bm25", "query": "none"},
    "dense_fixed1000": {"chunking": "fixed1000", "method": "dense", "query": "none"},
    "hybrid_fixed1000": {"chunking": "fixed1000", "method": "hybrid", "ties": "bm25", "query": "none"},
    "bm25_fixed500": {"chunking": "fixed500", "method": "bm25", "query": "none"},
    "dense_fixed500": {"chunking": "fixed500", "method": "dense", "query": "none"},
    "hybrid_fixed500": {"chunking": "fixed500", "method": "hybrid", "ties": "bm25", "query": "none"},
}
SETTINGS = ("dataset=covidqa", "llm.backend=none", "labels.same_doc_only=true")


def additions() -> list[str]:
    """The ``-S`` values that add the two chunkings and six configs (``++chunkings.NAME={...}``,
    ``++retrieval.NAME={...}``), after everything params.yaml already holds."""
    return [*(f"++chunkings.{name}={hydra_value(c)}" for name, c in CHUNKINGS.items()),
            *(f"++retrieval.{name}={hydra_value(c)}" for name, c in CONFIGS.items())]


def overrides() -> list[str]:
    """The ``-S`` values of the COVID-QA run, in order: the settings, the :func:`additions`, and
    ``run_configs`` naming the six configs, so no other config is searched and no other chunking
    embedded (``index_plan``), with the first of them (``bm25_fixed1000``) as ``stats.baseline``,
    which must be one that runs."""
    first = next(iter(CONFIGS))
    return [*SETTINGS, *additions(), f"run_configs={hydra_value(list(CONFIGS))}", f"stats.baseline={first}"]


def handbook_overrides() -> list[str]:
    """The ``-S`` values that search the handbook example with the anchors' configs beside every
    config of params.yaml (``run_configs=all``): how results/all-configs was made."""
    return [*additions(), "run_configs=all"]


def command(values: list[str] | None = None) -> str:
    """The whole ``dvc exp run`` command of ``values`` (default :func:`overrides`), one ``-S``
    per line (shell line continuations), each value quoted by ``shlex.quote`` where the shell
    needs it."""
    return " \\\n  ".join(["dvc exp run", *(f"-S {shlex.quote(v)}" for v in (overrides() if values is None else values))])
