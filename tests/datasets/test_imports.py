"""What every importer shares (rag_ablation.datasets.imports): portable file names that never
collide. The all-or-nothing writes are tested through each importer (test_squad, test_beir)."""
from __future__ import annotations

import pytest

from rag_ablation.core.errors import InvalidData
from rag_ablation.datasets import imports
from rag_ablation.datasets.imports import safe_file_name, safe_file_names


def test_safe_file_names():
    assert safe_file_name("Super_Bowl_50") == "Super_Bowl_50"
    assert safe_file_name("Beyoncé").startswith("Beyonce-")
    assert safe_file_name("a b") != safe_file_name("a_b") == "a_b"
    assert not safe_file_name(".hidden").startswith(".")
    assert "/" not in safe_file_name("AC/DC")
    assert len(safe_file_name("x" * 500)) <= imports.MAX_NAME + 9


@pytest.mark.bad_input
def test_case_insensitive_collision_is_refused():
    with pytest.raises(InvalidData, match="same file name"):
        safe_file_names(["Apple", "apple"])


# ---------------------------------------------------------------------------------------------
# the sample (draw_sample): largest-remainder allocation, seeded, in input order


def largest_remainder(counts: dict[str, int], size: int) -> dict[str, int]:
    """The documented rule restated: exact share rounded down, one more to the strata with the
    largest remainders (the counts used here have no equal remainders, so no tie to break)."""
    total = sum(counts.values())
    floors = {s: size * c // total for s, c in counts.items()}
    top = sorted(counts, key=lambda s: -(size * counts[s] % total))[: size - sum(floors.values())]
    return {s: floors[s] + (s in top) for s in counts}


@pytest.mark.parametrize("size, expected", [(1, {"a": 1, "b": 0, "c": 0}), (4, {"a": 3, "b": 1, "c": 0}),
                                            (7, {"a": 5, "b": 1, "c": 1}), (9, {"a": 6, "b": 2, "c": 1})])
def test_allocation_is_the_largest_remainder_rule(size, expected):
    counts = {"a": 7, "b": 2, "c": 1}
    got = imports.allocate(counts, size, seed=0)
    assert got == expected == largest_remainder(counts, size)
    for s, c in counts.items():  # every stratum gets its exact share rounded down or up
        assert size * c // 10 <= got[s] <= -(-size * c // 10)
    assert imports.allocate(counts, 10, seed=0) == imports.allocate(counts, 99, seed=0) == counts


def test_equal_remainders_are_broken_by_the_seed_not_by_name():
    counts = {f"d{i}": 1 for i in range(20)}  # BEIR-like: one question per document, every remainder equal
    picks = {frozenset(s for s, n in imports.allocate(counts, 5, seed=seed).items() if n) for seed in range(10)}
    assert all(len(p) == 5 for p in picks) and len(picks) > 1
    assert imports.allocate(counts, 5, seed=3) == imports.allocate(counts, 5, seed=3)


def test_sample_positions_are_seeded_stratified_and_in_input_order():
    strata = ["a", "b", "a", "a", "c", "a", "b", "a", "a", "a"]  # a: 7, b: 2, c: 1
    kept = imports.sample_positions(strata, 4, seed=0)
    assert kept == sorted(kept) and len(kept) == 4
    assert [strata[i] for i in kept].count("a") == 3 and [strata[i] for i in kept].count("b") == 1
    assert imports.sample_positions(strata, 4, seed=0) == kept
    assert len({tuple(imports.sample_positions(strata, 4, seed=s)) for s in range(10)}) > 1
    assert imports.sample_positions(strata, 10, seed=0) == imports.sample_positions(strata, 50, seed=1) == list(range(10))


def test_draw_sample_records_the_sample_in_the_report():
    report = imports.ImportReport(source="x")
    assert imports.draw_sample(["a", "b", "a"], None, seed=0, by="article", report=report) == [0, 1, 2]
    assert report.sample is None
    assert len(imports.draw_sample(["a", "b", "a"], 2, seed=0, by="article", report=report)) == 2
    assert report.sample == imports.ImportSample(requested=2, available=3, written=2, seed=0, by="article")
    assert "sample: 2 of the 3 question(s) left after dropping (seed 0, stratified by article)" in report.summary()
    assert report.to_json()["sample"] == {"requested": 2, "available": 3, "written": 2, "seed": 0,
                                          "stratified_by": "article"}
    imports.draw_sample(["a", "b", "a"], 5, seed=0, by="document", report=report)
    assert "asked for 5 question(s), 3 left after dropping: all 3 written (no sampling)" in report.summary()


@pytest.mark.bad_input
@pytest.mark.parametrize("size", [0, -3, True, 2.5])
def test_a_sample_below_one_is_refused(size):
    with pytest.raises(imports.DatasetImportError, match=r"is not a positive whole number: --sample N .* pass "
                                                         r"--sample 1 or more, or leave --sample out"):
        imports.check_sample(size)
