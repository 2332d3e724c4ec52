"""Scoring every config of params.yaml from the pipeline's stored outputs: the loop of the
`score` stage. For each retrieval config (params order sorted by name) whose run is ``ok``, the
stored ranking is scored against its chunking's labels (read once per chunking) and against the
same labels widened by the label audit; each answered config's answers are scored against the
references and the labels. Configs whose run or answers are not ``ok`` get no rows, and one
line each says why. Only names from params are read, never a folder listing. With graded qrels
(a BEIR-style data set, ``rag_ablation.evaluation.scoring.graded``) the retrieval rows use them
instead of the span labels and carry nDCG@10 and recall@100; the audit then changes nothing (it
widens span labels, which such a data set does not use).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_ablation.core.config import Params
from rag_ablation.core.io import read_output
from rag_ablation.evaluation.scoring.audit import AuditSpan, audited_relevant
from rag_ablation.evaluation.scoring.graded import Qrel
from rag_ablation.evaluation.scoring.scores import score_answers, score_run
from rag_ablation.data.questions import Question


@dataclass
class Scores:
    retrieval: list[dict[str, Any]] = field(default_factory=list)
    audited: list[dict[str, Any]] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # one line per config without rows, saying why


def score_configs(params: Params, questions: Sequence[Question], audit: Sequence[AuditSpan], *,
                  runs: Path, labels: Path, answers: Path, qrels: Mapping[str, Qrel] | None = None) -> Scores:
    """Every row of the three score files (module docstring); ``runs``, ``labels`` and
    ``answers`` are the folders of the retrieve, labels and generate stages' outputs;
    ``qrels`` the data set's graded qrels (None or empty: span labels only)."""
    graded = qrels or None
    out = Scores()
    relevant: dict[str, dict] = {}
    for name in sorted(params.retrieval):
        chunking = params.config(name).chunking
        run = read_output(runs / f"{name}.json", f"retrieve@{name}")
        if run["status"] != "ok":
            out.notes.append(f"{name}: {run['status']}: {run['reason']}")
            continue
        if chunking not in relevant:
            relevant[chunking] = read_output(labels / f"{chunking}.json", f"labels@{chunking}")["relevant"]
        depth = params.config(name).k
        out.retrieval.extend(score_run(name, run["questions"], relevant[chunking], questions, qrels=graded,
                                       depth=depth))
        widened = audited_relevant(relevant[chunking], run["passages"], audit, window=params.labels.window)
        out.audited.extend(score_run(name, run["questions"], widened, questions, qrels=graded, depth=depth))
    for name in params.generation.configs:
        generated = read_output(answers / f"{name}.json", f"generate@{name}")
        if generated["status"] == "ok":
            rel = relevant.get(params.config(name).chunking, {})
            out.answers.extend(score_answers(name, generated["answers"], rel, questions,
                                             phrases=params.generation.refusal_phrases))
    return out
