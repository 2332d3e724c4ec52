"""The `workbench` block of params.yaml, as rag_ablation.core.config reads it."""
from __future__ import annotations

import pytest

from rag_ablation.core.config import ConfigError, Params, WorkbenchConfig, field_defaults

from workbench_tiny_project import params_raw


def test_defaults_and_the_shipped_block():
    raw = params_raw()
    del raw["workbench"]
    assert Params.from_params(raw).workbench == WorkbenchConfig()
    assert field_defaults(WorkbenchConfig) == {"seed": 8, "per_track": 15, "overlap_warn": 0.6, "audit_k": 5,
                                               "pool_depth": 10, "pool_configs": (),
                                               "max_body_bytes": 1_000_000}
    shipped = Params.from_params({**params_raw(), "workbench": None})
    assert shipped.workbench.pool_configs == ()


@pytest.mark.bad_input
@pytest.mark.parametrize("block, message", [
    ({"pool_configs": ["bm25", "bm25"]}, "workbench.pool_configs: expected each config once"),
    ({"pool_configs": "dense"}, "workbench.pool_configs: expected a list of retrieval config names"),
    ({"overlap_warn": 1.5}, "workbench.overlap_warn: expected a number from 0 to 1 (inclusive), got 1.5"),
    ({"pool_depth": 0}, "workbench.pool_depth: expected a positive integer, got 0"),
    ({"depth": 3}, "workbench: unknown key(s) depth"),
    ({"max_body_bytes": 0}, "workbench.max_body_bytes: expected a positive integer, got 0"),
])
def test_bad_values_name_the_key(block, message):
    raw = params_raw()
    raw["workbench"] = block
    with pytest.raises(ConfigError) as e:
        Params.from_params(raw)
    assert message in str(e.value)


@pytest.mark.bad_input
@pytest.mark.parametrize("names, message", [
    (("dense", "nope"), "workbench.pool_configs: 'nope' not a retrieval config; expected some of:"),
    (("rewrite",), "workbench.pool_configs: 'rewrite' search with an LLM query transform"),
])
def test_pool_names_are_checked_when_pooling_not_when_a_stage_loads_params(names, message):
    raw = params_raw()
    raw["workbench"] = {"pool_configs": list(names)}
    params = Params.from_params(raw)  # a stage loading params.yaml is not stopped by the workbench block
    assert message in params.workbench.pool_problems(params.retrieval)
    assert params.workbench.pool_problems({}) is not None
