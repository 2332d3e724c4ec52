"""Which ``dvc.yaml`` file defines each stage, and the name ``dvc repro`` takes for it.

The pipeline is split over three ``dvc.yaml`` files because DVC keeps one ``dvc.lock`` per
``dvc.yaml`` and rewrites the whole of it (a round-trip YAML load and dump) after every stage it
runs: with all 60 stage instances in one file, each rewrite handled 187 KB (about a second), and
DVC's own work in a first run was 106 s; split, 66 s, side by side (benchmarks/RESULTS.md, "The
pipeline in three dvc.yaml files").

- ``dvc.yaml`` (the top folder): the data set, the question checks and split, the index plan,
  ``retrieve@`` and ``app@``, scoring, statistics, judge evaluation, the reports and the gate;
- ``index/dvc.yaml``: what ``retrieve@`` reads per chunking and query transform (``chunk@``,
  ``dense@``, ``bm25@``, ``labels@``, ``queries@``, ``query_vectors@``);
- ``answer/dvc.yaml``: the LLM's answers and their judging (``generate@``, ``judge@``,
  ``support@``, ``judge_checks``).

Every stage runs in the top folder (``wdir: ..``), so paths and ``params.yaml`` are the same in
all three (the other files read ``../params.yaml`` and repeat the top file's path ``vars`` they
use: inline ``vars``, because DVC would list a shared vars file's values as params in
``dvc exp show`` and ``dvc params diff``). A plain ``dvc repro`` (or ``dvc exp run``) in the top
folder runs them all, because the top file's stages depend on the others' outputs. A stage of
another file is named with its file: ``dvc repro index/dvc.yaml:labels@base`` (``dvc repro
labels@base`` looks only in ``./dvc.yaml``).
"""
from __future__ import annotations

TOP_FILE = "dvc.yaml"
STAGE_FILES: dict[str, str] = {
    "chunk": "index/dvc.yaml",
    "dense": "index/dvc.yaml",
    "bm25": "index/dvc.yaml",
    "labels": "index/dvc.yaml",
    "queries": "index/dvc.yaml",
    "query_vectors": "index/dvc.yaml",
    "generate": "answer/dvc.yaml",
    "judge": "answer/dvc.yaml",
    "support": "answer/dvc.yaml",
    "judge_checks": "answer/dvc.yaml",
}
"""Stage (the name before ``@``) -> the ``dvc.yaml`` defining it, for every stage outside the top
file (tests/core/test_pipeline_files.py checks this against the files)."""
PIPELINE_FILES: tuple[str, ...] = (TOP_FILE, *sorted(set(STAGE_FILES.values())))
"""Every ``dvc.yaml`` of the pipeline, repository-relative, the top one first."""


def stage_file(stage: str) -> str:
    """The ``dvc.yaml`` that defines ``stage`` (``labels@base``, ``generate``, or an addressed
    ``index/dvc.yaml:labels@base``): the file before ``:`` when given, else ``STAGE_FILES`` of
    the name before ``@``, else the top file (every other name, including one no file defines)."""
    if ":" in stage:
        return stage.rsplit(":", 1)[0]
    return STAGE_FILES.get(stage.split("@", 1)[0], TOP_FILE)


def stage_target(stage: str) -> str:
    """What ``dvc repro`` takes for ``stage`` from the top folder: the name itself for a stage of
    the top file (``retrieve@dense``, ``score``), ``FILE:NAME`` for the others
    (``index/dvc.yaml:labels@base``, ``answer/dvc.yaml:generate`` for every ``generate@``); an
    already addressed name is returned as it is."""
    if ":" in stage:
        return stage
    file = stage_file(stage)
    return stage if file == TOP_FILE else f"{file}:{stage}"


def stage_name(addressed: str) -> str:
    """The stage's name without its file, as DVC prints ``Running stage 'index/dvc.yaml:chunk@base'``
    -> ``chunk@base``; a name without a file is returned as it is."""
    return addressed.rsplit(":", 1)[-1]
