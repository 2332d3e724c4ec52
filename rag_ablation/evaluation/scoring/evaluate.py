"""The metrics file: per-question scores aggregated per config, overall and per slice.

The file has one top-level key per config (keys sorted)::

    {"hybrid": {"recall_at_1": .., "recall_at_5": .., "recall_at_10": .., "mrr_at_10": ..,
                "n_questions": .., "n_unanswerable_excluded": ..,
                "by_slice": {"identifier": {...same measures...}, ...},
                "answers": {...}}, ...}

so ``dvc metrics diff main`` shows rows such as ``hybrid.recall_at_5`` and
``hybrid.by_slice.identifier.recall_at_5``. A config that is unavailable (or ran with a
placeholder model) is ``{"available": 0}`` with no measures; its reason stays in its run file.
A data set with graded qrels adds ``ndcg_at_10`` and ``recall_at_100`` (means of their
per-question columns; ``recall_at_100`` only where every answerable row has it,
``rag_ablation.evaluation.scoring.graded``), overall and per slice.
Everything here is computed from the rows of ``rag_ablation.evaluation.scoring.scores``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from rag_ablation.evaluation.scoring.answer_measures import answer_measures
from rag_ablation.evaluation.scoring.graded import graded_columns
from rag_ablation.evaluation.scoring.measures import summarize


def _summary(scored: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``summarize`` of the first-relevant ranks, then the mean of each graded column every row holds."""
    out = summarize([r["first_relevant_rank"] for r in scored])
    for column in graded_columns(scored):
        out[column] = float(np.mean([r[column] for r in scored]))
    return out


def config_metrics(rows: Sequence[Mapping[str, Any]]) -> dict:
    """Measures of one available config from its retrieval rows (module docstring)."""
    scored = [r for r in rows if r["answerable"]]
    out: dict[str, Any] = {"available": 1, **_summary(scored), "n_unanswerable_excluded": len(rows) - len(scored)}
    slices: dict[str, list] = {}
    for r in scored:
        slices.setdefault(r["slice"], []).append(r)
    out["by_slice"] = {s: _summary(v) for s, v in sorted(slices.items())}
    return out


def metrics_file(
    *,
    configs: Iterable[str],
    status: Mapping[str, str],
    retrieval_rows: Sequence[Mapping[str, Any]],
    answered: Mapping[str, str],
    answer_rows: Sequence[Mapping[str, Any]],
) -> dict:
    """The whole metrics file for the named configs (``status``: config -> run status;
    ``answered``: config -> status of its answers file, for the configs that get answers).
    Only the names given are reported, never a folder listing, so a removed config cannot
    linger."""
    by_config: dict[str, list] = {}
    for r in retrieval_rows:
        by_config.setdefault(r["config"], []).append(r)
    answers: dict[str, list] = {}
    for r in answer_rows:
        answers.setdefault(r["config"], []).append(r)
    metrics: dict[str, dict] = {}
    for name in sorted(configs):
        metrics[name] = config_metrics(by_config.get(name, [])) if status[name] == "ok" else {"available": 0}
    for name, st in answered.items():
        metrics[name]["answers"] = answer_measures(answers.get(name, [])) if st == "ok" else {"available": 0}
    return metrics
