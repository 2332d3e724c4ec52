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

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from rag_ablation.answers import answer_measures
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


def _read(path: Path, what: str, stage: str) -> dict:
    if not path.is_file():
        raise FileNotFoundError(f"no {what} file {path}: run `dvc repro {stage}`")
    return json.loads(path.read_text(encoding="utf-8"))


def metrics_file(
    *,
    retrieval: Iterable[str],
    generation: Sequence[str],
    runs: Path,
    answers: Path,
    references: Mapping[str, str],
    refusal_phrases: Sequence[str],
) -> tuple[dict, list[str]]:
    """The whole metrics file for the named configs (``runs/NAME.json`` and
    ``answers/NAME.json``), and one line per config that has no numbers, saying why. Only the
    names given are read, never a folder listing, so a removed config cannot linger."""
    metrics: dict[str, dict] = {}
    why: list[str] = []
    for name in sorted(retrieval):
        run = _read(runs / f"{name}.json", "run", f"retrieve@{name}")
        metrics[name] = config_metrics(run)
        if run["status"] != "ok":
            why.append(f"{name}: {run['status']}: {run['reason']}")
    for name in generation:
        if name not in metrics:
            raise ValueError(f"generation.configs names {name!r}, which is not a retrieval config; "
                             f"expected some of: {', '.join(sorted(metrics))}")
        out = _read(answers / f"{name}.json", "answers", f"generate@{name}")
        metrics[name]["answers"] = (answer_measures(out["answers"], references, refusal_phrases)
                                    if out["status"] == "ok" else {"available": 0})
    return metrics, why
