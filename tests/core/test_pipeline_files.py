"""The registry of which dvc.yaml defines each stage, against the files themselves."""
from __future__ import annotations

from pathlib import Path

import yaml

from rag_ablation.core.pipeline_files import (PIPELINE_FILES, STAGE_FILES, TOP_FILE, stage_file, stage_name,
                                              stage_target)

ROOT = Path(__file__).resolve().parents[2]


def defined() -> dict[str, str]:
    """Stage (group) name -> the dvc.yaml defining it, read from every ``*/dvc.yaml`` and the top one."""
    files = [ROOT / TOP_FILE, *sorted(p for p in ROOT.glob("*/dvc.yaml"))]
    out: dict[str, str] = {}
    for f in files:
        rel = f.relative_to(ROOT).as_posix()
        for name in yaml.safe_load(f.read_text(encoding="utf-8"))["stages"]:
            assert name not in out, f"{name} is defined in {out[name]} and {rel}"
            out[name] = rel
    return out


def test_registry_matches_the_files():
    found = defined()
    assert {n: f for n, f in found.items() if f != TOP_FILE} == STAGE_FILES
    assert sorted(set(found.values())) == sorted(PIPELINE_FILES)
    assert PIPELINE_FILES[0] == TOP_FILE


def test_every_stage_of_a_sub_file_runs_in_the_top_folder():
    """``wdir: ..`` on every stage below the top folder (paths and params.yaml are the top
    folder's); each sub file reads ``../params.yaml`` and repeats exactly the top file's path
    ``vars`` it uses, with the same values."""
    [top_vars] = yaml.safe_load((ROOT / TOP_FILE).read_text(encoding="utf-8"))["vars"]
    for rel in PIPELINE_FILES[1:]:
        text = (ROOT / rel).read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        up = "/".join([".."] * rel.count("/"))
        params, own = data["vars"]
        assert params == f"{up}/params.yaml", rel
        assert own == {k: top_vars[k] for k in own}, rel
        used = {k for k in top_vars if "${" + k + "}" in text}
        assert set(own) == used, f"{rel}: vars {sorted(own)}, uses {sorted(used)}"
        for name, stage in data["stages"].items():
            body = stage.get("do", stage)
            assert body.get("wdir") == up, f"{rel}: {name}"


def test_targets_and_names():
    assert stage_target("retrieve@dense") == "retrieve@dense" and stage_target("score") == "score"
    assert stage_target("labels@base") == "index/dvc.yaml:labels@base"
    assert stage_target("generate") == "answer/dvc.yaml:generate"
    assert stage_target("judge_checks") == "answer/dvc.yaml:judge_checks"
    assert stage_target("index/dvc.yaml:chunk@c400") == "index/dvc.yaml:chunk@c400"
    assert stage_file("query_vectors@none") == "index/dvc.yaml" and stage_file("gate") == TOP_FILE
    assert stage_file("answer/dvc.yaml:judge@bm25") == "answer/dvc.yaml"
    assert stage_name("index/dvc.yaml:chunk@base") == "chunk@base" and stage_name("score") == "score"
