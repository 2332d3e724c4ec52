"""Metrics per retrieval config, overall and per slice, from stored run files.

The metrics file has one top-level key per config, in params order irrelevant (keys sorted):

    {"hybrid": {"recall_at_1": .., "recall_at_5": .., "recall_at_10": .., "mrr_at_10": ..,
                "n_questions": .., "n_unanswerable_excluded": ..,
                "by_slice": {"identifier": {...same measures...}, ...}}, ...}

so ``dvc metrics diff main`` shows rows such as ``hybrid.recall_at_5`` and
``hybrid.by_slice.identifier.recall_at_5``. A config that is unavailable (or ran with a
placeholder model) is ``{"available": 0}`` with no measures; its reason stays in its run file.
"""
from __future__ import annotations

from collections.abc import Mapping

from rag_ablation.metrics import summarize


def config_metrics(run: Mapping) -> dict:
    """Measures of one run file's questions (see the module docstring)."""
    if run.get("status") != "ok":
        return {"available": 0}
    records = [r for r in run["questions"] if r.get("answerable", True)]
    excluded = len(run["questions"]) - len(records)
    ranks = [r["first_relevant_rank"] for r in records]
    out = {"available": 1, **summarize(ranks), "n_unanswerable_excluded": excluded}
    slices: dict[str, list] = {}
    for r in records:
        slices.setdefault(r["slice"], []).append(r["first_relevant_rank"])
    out["by_slice"] = {s: summarize(v) for s, v in sorted(slices.items())}
    return out
