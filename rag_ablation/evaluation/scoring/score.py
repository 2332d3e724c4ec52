"""Scoring every config of params.yaml from the pipeline's stored outputs: the loop of the
`score` stage. For each retrieval config (params order sorted by name) whose run is ``ok``, the
stored ranking is scored against its chunking's labels (read once per chunking) and against the
same labels widened by the label audit; each answered config's answers are scored against the
references and the labels, and by the text of the passages each prompt showed (the run file's
``passages``: lexical support); the answers whose passages are unknown are counted, one line per
config. Configs whose run or answers are not ``ok`` get no rows, and one
line each says why. Only names from params are read, never a folder listing; a listing only
finds the output files of configs no longer in params.yaml (``leftover_outputs``), one line per
folder. With graded qrels
(a BEIR-style data set, ``rag_ablation.evaluation.scoring.graded``) the retrieval rows use them
instead of the span labels and carry nDCG@10 and recall@100; the audit then changes nothing (it
widens span labels, which such a data set does not use).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_ablation.core.config import Params
from rag_ablation.core.io import read_output
from rag_ablation.evaluation.scoring.audit import AuditSpan, audited_relevant
from rag_ablation.evaluation.scoring.foreign import foreign_relevant
from rag_ablation.evaluation.scoring.graded import Qrel
from rag_ablation.evaluation.scoring.grounding import MISSING_PASSAGES
from rag_ablation.evaluation.scoring.scores import score_answers, score_run
from rag_ablation.data.questions import Question


@dataclass
class Scores:
    retrieval: list[dict[str, Any]] = field(default_factory=list)
    audited: list[dict[str, Any]] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # one line per config without rows or not fully scored, saying why
    apps: dict[str, Any] = field(default_factory=dict)  # per app config: its run's summary and unlabelled counts


def leftover_outputs(folder: Path, names: Collection[str]) -> list[str]:
    """The names NAME of the ``NAME.json`` files directly in ``folder`` that are not in ``names``,
    sorted (none when the folder is missing): outputs of configs removed from params.yaml, which
    DVC leaves in place. They are never scored, but a stage that depends on the whole folder
    hashes them, so its dvc.lock entry differs from a clean checkout's."""
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json") if p.is_file() and p.stem not in names)


def score_configs(params: Params, questions: Sequence[Question], audit: Sequence[AuditSpan], *,
                  runs: Path, labels: Path, answers: Path, qrels: Mapping[str, Qrel] | None = None,
                  known_docs: Collection[str] | None = None) -> Scores:
    """Every row of the three score files (module docstring); ``runs``, ``labels`` and
    ``answers`` are the folders of the retrieve, labels and generate stages' outputs;
    ``qrels`` the data set's graded qrels (None or empty: span labels only); ``known_docs`` the
    data set's documents, against which an app's passages are labelled (``foreign``: a passage
    of another document is unlabelled; None: every document counts as known)."""
    graded = qrels or None
    out = Scores()
    relevant: dict[str, dict] = {}
    by_config: dict[str, dict] = {}
    texts: dict[str, dict[str, str]] = {}
    for name in sorted(params.retrieval):
        cfg = params.config(name)
        run = read_output(runs / f"{name}.json", f"{'app' if cfg.is_app else 'retrieve'}@{name}")
        if run["status"] != "ok":
            out.notes.append(f"{name}: {run['status']}: {run['reason']}")
            continue
        if cfg.chunking is None:  # an app: its passages are labelled by their text
            rel, counts = foreign_relevant(run, questions, labels=params.labels, known_docs=known_docs)
            out.apps[name] = {**run.get("app", {}), **counts}
            if counts["unlabelled"]:
                out.notes.append(f"{name}: {counts['unlabelled']} of {counts['passages']} passage(s) unlabelled "
                                 f"(document not in the data set, or no text): never counted relevant")
        else:
            if cfg.chunking not in relevant:
                relevant[cfg.chunking] = read_output(labels / f"{cfg.chunking}.json", f"labels@{cfg.chunking}")["relevant"]
            rel = relevant[cfg.chunking]
        by_config[name] = rel
        texts[name] = run["passages"]
        depth = cfg.k
        counted = cfg.chunking is not None
        stage = "retrieve" if counted else "app"
        out.retrieval.extend(score_run(name, run["questions"], rel, questions, qrels=graded, depth=depth,
                                       count_relevant=counted, stage=stage))
        widened = audited_relevant(rel, run["passages"], audit, window=params.labels.window)
        out.audited.extend(score_run(name, run["questions"], widened, questions, qrels=graded, depth=depth,
                                     count_relevant=counted, stage=stage))
    for name in params.generation.configs:
        generated = read_output(answers / f"{name}.json", f"generate@{name}")
        if generated["status"] == "ok":
            rel = by_config.get(name, {})
            undefined: Counter[str] = Counter()
            out.answers.extend(score_answers(name, generated["answers"], rel, questions,
                                             phrases=params.generation.refusal_phrases,
                                             texts=texts.get(name, {}), undefined=undefined))
            missing = {r: undefined[r] for r in MISSING_PASSAGES if undefined[r]}
            if missing:
                out.notes.append(f"{name}: lexical support undefined for {sum(missing.values())} answer(s), "
                                 "the passages shown unknown: "
                                 + ", ".join(f"{r} ({n})" for r, n in missing.items()))
    for folder, names in ((runs, params.retrieval), (answers, params.generation.configs)):
        left = leftover_outputs(folder, names)
        if left:
            out.notes.append(f"{folder}: {len(left)} file(s) of configs not in params.yaml, not scored: "
                             f"{', '.join(left)}; DVC leaves a removed config's outputs in place, and the "
                             f"stages reading this folder hash them: delete them (`rag-ablation prune "
                             f"--apply` does, while dvc.lock still records their stages), then `dvc repro`")
    return out
