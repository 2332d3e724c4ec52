"""The index plan: which chunking needs which index, the unbuilt-index folder, and the error when
a config would search one."""
from __future__ import annotations

import json

import pytest

from rag_ablation.core.config import RetrievalConfig
from rag_ablation.core.errors import MissingInput, UserError
from rag_ablation.retrieval.plan import (UNUSED_FILE, check_built, index_needs, needed, transform_needs, transform_unused,
                                         unbuilt_lines, write_plan, write_transform_plan, write_unused)


def cfg(name: str, chunking: str, method: str) -> RetrievalConfig:
    return RetrievalConfig(name=name, chunking=chunking, method=method)


def test_each_chunking_needs_the_indexes_its_configs_search():
    retrieval = {"d": cfg("d", "a", "dense"), "b": cfg("b", "b", "bm25"), "h": cfg("h", "c", "hybrid"),
                 "b2": cfg("b2", "a", "bm25")}
    assert index_needs(retrieval, ["a", "b", "c", "unused"]) == {
        "a": {"bm25": True, "dense": True},
        "b": {"bm25": True, "dense": False},
        "c": {"bm25": True, "dense": True},
        "unused": {"bm25": False, "dense": False},
    }
    assert unbuilt_lines(index_needs(retrieval, ["a", "b", "c", "unused"])) == [
        "index_plan: no dense index for b, unused (no config of run_configs searches them with dense)",
        "index_plan: no bm25 index for unused (no config of run_configs searches them with bm25)",
    ]


def test_plan_files_are_one_per_chunking_and_deterministic(tmp_path):
    needs = index_needs({"b": cfg("b", "a", "bm25")}, ["a", "z"])
    write_plan(tmp_path / "plan", needs)
    first = {p.name: p.read_bytes() for p in (tmp_path / "plan").iterdir()}
    write_plan(tmp_path / "plan", needs)
    assert {p.name: p.read_bytes() for p in (tmp_path / "plan").iterdir()} == first
    assert json.loads(first["a.json"]) == {"bm25": True, "dense": False}
    assert needed(tmp_path / "plan/a.json", "bm25") and not needed(tmp_path / "plan/a.json", "dense")


def test_an_unbuilt_index_refuses_a_config_that_searches_it(tmp_path):
    reason = write_unused(tmp_path / "dense", kind="dense", chunking="a")
    assert [p.name for p in (tmp_path / "dense").iterdir()] == [UNUSED_FILE]
    assert "no retrieval config that runs searches chunking 'a' with dense" in reason
    with pytest.raises(UserError, match="config 'x' searches the dense index .* which was not built"):
        check_built(tmp_path / "dense", kind="dense", config="x")
    check_built(tmp_path / "elsewhere", kind="dense", config="x")  # a built index (no marker) passes


@pytest.mark.bad_input
def test_a_missing_or_malformed_plan_is_one_message(tmp_path):
    with pytest.raises(MissingInput, match="run `dvc repro index_plan`"):
        needed(tmp_path / "absent.json", "dense")
    (tmp_path / "bad.json").write_text('{"dense": "yes"}')
    with pytest.raises(UserError, match="has no true/false 'dense'"):
        needed(tmp_path / "bad.json", "dense")


def test_a_transform_is_used_only_when_a_config_that_runs_searches_with_it(tmp_path):
    """used: some config of the run searches with it; else the reason names the left-out configs
    that would (one or several), or says that no config names it."""
    def q(name, query):
        return RetrievalConfig(name=name, chunking="a", method="dense", query=query)

    retrieval = {"d": q("d", "none"), "hy": q("hy", "hyde"), "rw": q("rw", "rewrite"), "rw2": q("rw2", "rewrite")}
    needs = transform_needs({"d": retrieval["d"], "hy": retrieval["hy"]}, retrieval, ["none", "hyde", "rewrite", "idle"])
    assert needs["none"] == {"used": True, "reason": None} and needs["hyde"] == {"used": True, "reason": None}
    assert needs["rewrite"]["used"] is False
    assert needs["rewrite"]["reason"] == ("no retrieval config that runs searches with query transform 'rewrite': rw, rw2 "
                                          "are left out of this run (run every config: dvc exp run -S run_configs=all)")
    assert needs["idle"]["reason"] == ("no retrieval config that runs searches with query transform 'idle': no "
                                       "retrieval config names it (query: idle)")
    write_transform_plan(tmp_path / "tp", needs)
    assert sorted(p.name for p in (tmp_path / "tp").iterdir()) == ["hyde.json", "idle.json", "none.json", "rewrite.json"]
    assert transform_unused(tmp_path / "tp/hyde.json") is None
    assert transform_unused(tmp_path / "tp/rewrite.json") == needs["rewrite"]["reason"]


@pytest.mark.bad_input
def test_a_missing_or_damaged_transform_plan_says_how_to_regenerate_it(tmp_path):
    with pytest.raises(MissingInput, match="dvc repro index_plan"):
        transform_unused(tmp_path / "none.json")
    (tmp_path / "none.json").write_text(json.dumps({"used": "yes"}))
    with pytest.raises(UserError, match="no true/false 'used'"):
        transform_unused(tmp_path / "none.json")
