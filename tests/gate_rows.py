"""The committed per-question scores as the retrieval gate's tests use them: the gated config,
rules and settings, the chapter's first regression (the default config reverted to dense
retrieval) and a project folder for the command and the stage (tests/evaluation/gate,
tests/commands/test_check.py)."""
from __future__ import annotations

import pytest
import yaml

from conftest import ROOT
from rag_ablation.core.config import GateConfig, StatsConfig
from rag_ablation.evaluation.scoring.scores import RETRIEVAL_FIELDS, read_scores, write_scores

SCORES = ROOT / "metrics" / "scores" / "retrieval.csv"
GATED = "hybrid_heading"
SETTINGS = StatsConfig(resamples=1000)
RULES = GateConfig(configs=(GATED,), k=5, floor={"all": 0.80, "main": 0.85, "identifier": 0.80, "paraphrase": 0.60},
                   max_newly_failing=1, non_inferiority_margin=None, min_questions=20)


@pytest.fixture(scope="module")
def committed():
    """The committed per-question scores (15 configs in params, 172 questions each)."""
    return read_scores(SCORES)


def of(rows, name):
    return [r for r in rows if r["config"] == name]


def renamed(rows, name):
    return [{**r, "config": name} for r in rows]


def reverted_to_dense(rows):
    """The workspace after someone reverts the default config to dense retrieval by accident:
    the gated config's rows are dense's."""
    return [r for r in rows if r["config"] != GATED] + renamed(of(rows, "dense"), GATED)


def by_slice(result, name=GATED):
    return {s.slice: s for s in result.slices if s.config == name}


def project(tmp_path, rows, baseline_rows=None, **gate):
    """A folder with params.yaml (the shipped one, 1000 resamples, ``gate`` overrides), the
    workspace scores ``rows`` and, if given, the baseline file."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["stats"]["resamples"] = 1000
    params["gate"].update(gate)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    write_scores(tmp_path / "metrics/scores/retrieval.csv", rows, RETRIEVAL_FIELDS)
    if baseline_rows is not None:
        write_scores(tmp_path / "metrics/gate_baseline.csv", baseline_rows, RETRIEVAL_FIELDS)
    return tmp_path
