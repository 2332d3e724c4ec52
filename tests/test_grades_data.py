"""The committed hand grades (data/labels/grades.jsonl) cover the answers the default pipeline
produces: at least 150 of them match the text of a current answer, stratified over both answer
configs and every slice. The committed per-question verdicts (metrics/scores/verdicts.csv, from
`dvc repro`) hold the sha256 of every current answer, so this runs on a fresh clone; where the
answers themselves are built (data/build/answers), they are checked directly too."""
from __future__ import annotations

import csv
import json
from collections import Counter

import pytest

from conftest import ROOT
from rag_ablation.core.config import load_config
from rag_ablation.evaluation.judges.grades import load_grades, match_grades, match_hashes

MIN_MATCHING = 150


def committed_hashes() -> dict[tuple[str, str], str]:
    with open(ROOT / "metrics/scores/verdicts.csv", newline="", encoding="utf-8") as f:
        return {(r["config"], r["id"]): r["answer_sha256"] for r in csv.DictReader(f)}


def test_enough_grades_match_the_committed_answers():
    grades = load_grades(ROOT / "data/labels/grades.jsonl")
    matched = match_hashes(grades, committed_hashes())
    assert len(matched.verdicts) >= MIN_MATCHING, (
        f"only {len(matched.verdicts)} hand grades match current answers ({matched.stale} stale): "
        "grade the changed answers with `rag-grade`")
    configs = load_config(ROOT / "params.yaml").generation.configs
    slices = {json.loads(line)["id"]: json.loads(line)["slice"]
              for line in (ROOT / "data/questions/handbook.jsonl").read_text().splitlines()}
    per = Counter((c, slices[i]) for c, i in matched.verdicts)
    for c in configs:
        for s in set(slices.values()):
            assert per[(c, s)] >= 5, f"config {c} slice {s}: {per[(c, s)]} grades"


def test_grades_match_the_built_answers_when_present():
    folder = ROOT / "data/build/answers"
    configs = load_config(ROOT / "params.yaml").generation.configs
    if not all((folder / f"{c}.json").is_file() for c in configs):
        pytest.skip("answers are not built here (run `make run`)")
    texts = {(c, a["id"]): a["answer"] for c in configs
             for a in json.loads((folder / f"{c}.json").read_text())["answers"]}
    grades = load_grades(ROOT / "data/labels/grades.jsonl")
    assert match_grades(grades, texts).verdicts == match_hashes(grades, committed_hashes()).verdicts
