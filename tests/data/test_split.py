"""The dev/test split (rag_ablation.data.split) and its params block (core.config.SplitConfig)."""
from __future__ import annotations

import json
import random
from collections import defaultdict

import pytest

from rag_ablation.core.config import ConfigError, Params, SplitConfig, load_params
from rag_ablation.core.errors import InvalidData, MissingInput
from rag_ablation.core.io import write_jsonl
from rag_ablation.data.split import (
    NO_SIDE, SIDES, SplitError, assign_split, one_sided, update_split, group_of, group_order, merge_splits, no_split, read_split,
    slice_counts, stratum_of,
)

from conftest import ROOT


def q(qid, doc, slice_="main"):
    return {"id": qid, "doc": doc, "slice": slice_, "question": f"{qid}?", "track": "t"}


def corpus(main_docs=30, identifier_docs=20, unanswerable=10):
    """Single-slice documents, so each slice is one stratum: main doc i has 1 + i % 3 questions,
    identifier doc i has 1 + i % 2, and every unanswerable question is its own group."""
    out = [q(f"m{i:02d}-{j}", f"main/d{i:02d}.md") for i in range(main_docs) for j in range(1 + i % 3)]
    out += [q(f"i{i:02d}-{j}", f"ident/d{i:02d}.md", "identifier") for i in range(identifier_docs) for j in range(1 + i % 2)]
    out += [q(f"u{i:02d}", None, "unanswerable") for i in range(unanswerable)]
    return out


def sides(rows):
    return {r["id"]: r["side"] for r in rows}


def test_rows_are_one_per_question_sorted_by_id():
    qs = corpus()
    rows = assign_split(qs, {}, test_fraction=0.5, seed=0)
    assert [r["id"] for r in rows] == sorted(x["id"] for x in qs)
    assert all(set(r) == {"id", "side", "group", "slice"} and r["side"] in SIDES for r in rows)
    assert {r["id"]: r["group"] for r in rows} == {x["id"]: x["doc"] or x["id"] for x in qs}


def test_never_splits_a_document():
    qs = corpus()
    qs += [q("mixed-a", "mixed/d.md", "main"), q("mixed-b", "mixed/d.md", "paraphrase"),
           q("mixed-c", "mixed/d.md", "paraphrase"), q("para-2", "para/d.md", "paraphrase")]
    for seed in range(5):
        by_group = defaultdict(set)
        for r in assign_split(qs, {}, test_fraction=0.4, seed=seed):
            by_group[r["group"]].add(r["side"])
        assert all(len(s) == 1 for s in by_group.values())


@pytest.mark.parametrize("fraction", [0.5, 0.3, 0.25, 0.8])
def test_each_slice_is_stratified_to_the_fraction(fraction):
    """Each new group goes to the side nearer the target, so the test count of a stratum never
    strays from fraction * questions by more than max(f, 1 - f) * (the largest group)."""
    qs = corpus()
    rows = assign_split(qs, {}, test_fraction=fraction, seed=0)
    largest = {"main": 3, "identifier": 2, "unanswerable": 1}
    for slice_, counts in slice_counts(rows).items():
        n = counts.get("dev", 0) + counts.get("test", 0)
        assert abs(counts.get("test", 0) - fraction * n) <= max(fraction, 1 - fraction) * largest[slice_]


def test_a_group_counts_in_its_most_common_slice():
    assert stratum_of(["main", "paraphrase", "paraphrase"]) == "paraphrase"
    assert stratum_of(["main", "identifier"]) == "identifier", "a tie: the smallest name"


def test_an_exact_tie_goes_to_dev():
    """Alone in its stratum, a group is as far from 0.5 on either side: dev. The next group (in
    hash order) of the same size then brings the share to exactly 0.5 on test."""
    one = [q("a", "x/a.md"), q("b", "x/b.md")]
    first, second = sorted(["x/a.md", "x/b.md"], key=lambda g: group_order(0, g))
    rows = {r["group"]: r["side"] for r in assign_split(one, {}, test_fraction=0.5, seed=0)}
    assert rows == {first: "dev", second: "test"}


def test_independent_of_input_order():
    qs = corpus()
    expected = assign_split(qs, {}, test_fraction=0.3, seed=7)
    for k in range(3):
        shuffled = list(qs)
        random.Random(k).shuffle(shuffled)
        assert assign_split(shuffled, {}, test_fraction=0.3, seed=7) == expected
    assert assign_split(list(reversed(qs)), {}, test_fraction=0.3, seed=7) == expected


def test_the_seed_changes_the_assignment():
    qs = corpus()
    assert len({tuple(sides(assign_split(qs, {}, test_fraction=0.5, seed=s)).items()) for s in range(4)}) > 1


def test_stable_when_questions_are_appended():
    qs = corpus()
    before = assign_split(qs, {}, test_fraction=0.5, seed=0)
    previous = sides(before) | {"gone": "test"}  # an id no longer in the question set
    old_doc = "main/d00.md"
    added = [q("new-in-old-doc", old_doc)] + [q(f"new{i}", f"main/new{i}.md") for i in range(6)]
    after = assign_split(qs + added, previous, test_fraction=0.5, seed=0)
    got = sides(after)
    assert {i: got[i] for i in sides(before)} == sides(before), "old questions never move"
    assert "gone" not in got, "ids no longer in the question set are dropped"
    assert got["new-in-old-doc"] == got["m00-0"], f"a new question of {old_doc} takes its side"
    assert {got[f"new{i}"] for i in range(6)} == set(SIDES), "new documents are assigned to both sides"
    # old documents counted: the grown stratum is still within the bound of the fraction
    main = slice_counts(after)["main"]
    assert abs(main["test"] - 0.5 * (main["dev"] + main["test"])) <= 0.5 * 3


def test_a_file_written_with_the_split_off_assigns_nothing():
    qs = corpus()
    assert assign_split(qs, {x["id"]: NO_SIDE for x in qs}, test_fraction=0.5, seed=0) == \
        assign_split(qs, {}, test_fraction=0.5, seed=0)


def test_disabled_split_puts_every_question_on_all():
    qs = corpus()
    rows = no_split(qs)
    assert {r["side"] for r in rows} == {NO_SIDE}
    enabled = assign_split(qs, {}, test_fraction=0.5, seed=0)
    assert [{k: v for k, v in r.items() if k != "side"} for r in rows] == \
        [{k: v for k, v in r.items() if k != "side"} for r in enabled]


def test_a_question_without_a_doc_is_its_own_group():
    assert group_of({"id": "u1", "doc": None}) == "u1" == group_of({"id": "u1", "doc": ""}) == group_of({"id": "u1"})
    assert group_of({"id": "q", "doc": "t/d.md"}) == "t/d.md"


def test_read_split_reads_what_the_stage_writes(tmp_path):
    rows = assign_split(corpus(), {}, test_fraction=0.5, seed=0)
    write_jsonl(tmp_path / "s.jsonl", rows)
    assert read_split(tmp_path / "s.jsonl") == sides(rows)
    (tmp_path / "off.jsonl").write_text('{"id": "a", "side": "all"}\n\n')
    assert read_split(tmp_path / "off.jsonl") == {"a": "all"}


# --- params ---------------------------------------------------------------------------------


def test_the_split_block_and_none():
    assert SplitConfig.from_params({"test_fraction": 0.25, "seed": 3}) == SplitConfig(0.25, 3, True)
    assert SplitConfig.from_params(None) == SplitConfig() == SplitConfig.from_params({})
    assert SplitConfig() == SplitConfig(test_fraction=0.5, seed=0, enabled=True)
    assert SplitConfig.from_params("none").enabled is False
    shipped = Params.from_params(load_params(ROOT / "params.yaml")).split
    assert shipped == SplitConfig(test_fraction=0.5, seed=0, enabled=True)


@pytest.mark.bad_input
@pytest.mark.parametrize("value", [0, 1, 1.5, "0.5", True])
def test_test_fraction_strictly_between_0_and_1(value):
    with pytest.raises(ConfigError) as e:
        SplitConfig.from_params({"test_fraction": value})
    assert str(e.value) == (f"split.test_fraction: expected a share of the questions strictly between 0 and 1, "
                            f"got {value!r}; set it to e.g. 0.5 (half on test), or set split: none for no split")


@pytest.mark.bad_input
@pytest.mark.parametrize("value", [False, "off", [0.5]])
def test_split_is_a_block_or_none(value):
    with pytest.raises(ConfigError) as e:
        SplitConfig.from_params(value)
    assert str(e.value) == (f"split: expected a block such as {{test_fraction: 0.5, seed: 0}} or none (no split), "
                            f"got {value!r}; write the block, or split: none to turn it off")
    with pytest.raises(ConfigError, match=r"split: unknown key\(s\) enabled"):
        SplitConfig.from_params({"enabled": False})


# --- bad input ------------------------------------------------------------------------------


def test_a_slice_left_empty_on_one_side_is_a_warning_not_an_error():
    qs = corpus() + [q("p1", "para/one.md", "paraphrase")]
    rows = assign_split(qs, {}, test_fraction=0.5, seed=0)
    assert {r["id"]: r["side"] for r in rows}["p1"] == "dev"
    assert one_sided(rows, 0.5) == (
        "warning: the split leaves 1 slice(s) with no question on one side: paraphrase (dev 1, test 0); a sweep "
        "cannot be confirmed on such a slice until it has questions on both sides: add questions of that slice about "
        "other documents, try another split.test_fraction (now 0.5), or set split: none")
    assert one_sided(assign_split(corpus(), {}, test_fraction=0.5, seed=0), 0.5) is None
    rows2, line = update_split(qs, {}, enabled=True, test_fraction=0.5, seed=0)
    assert rows2 == rows and line.endswith(one_sided(rows, 0.5))


@pytest.mark.bad_input
def test_a_previous_file_that_straddles_a_document_is_refused():
    qs = corpus() + [q("x1", "x/d.md"), q("x2", "x/d.md"), q("x3", "x/d.md")]
    previous = sides(assign_split(corpus(), {}, test_fraction=0.5, seed=0)) | {"x1": "dev", "x2": "test", "x3": "dev"}
    with pytest.raises(SplitError) as e:
        assign_split(qs, previous, test_fraction=0.5, seed=0)
    assert str(e.value).startswith("the previous split puts the questions of 1 document(s) on both sides: "
                                   "x/d.md (dev: x1, x3; test: x2); a document's questions must share one side")


@pytest.mark.bad_input
def test_a_malformed_split_file_names_file_and_lines(tmp_path):
    path = tmp_path / "split.jsonl"
    lines = [{"id": "a", "side": "dev"}, "{not json", {"id": "b", "side": "train"}, [1], {"side": "dev"},
             {"id": "a", "side": "test"}]
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    with pytest.raises(InvalidData, match=r"^data/split/x\.jsonl at experiment e1: 5 bad line\(s\)"):
        read_split(path, where="data/split/x.jsonl at experiment e1")  # a committed file's copy names the original
    with pytest.raises(InvalidData) as e:
        read_split(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: 5 bad line(s) in the split file, expected one JSON object per line with an id "
                          "and a side (dev, test or all)")
    assert msg.index("line 2: not valid JSON") < msg.index("line 3: unknown side 'train' of question 'b', "
                                                             "expected one of dev, test, all")
    assert "line 4: expected a JSON object with an id and a side, found list" in msg
    assert "line 5: field 'id' must be a non-empty string, found None" in msg
    assert "line 6: duplicate id 'a' (first on line 1)" in msg


@pytest.mark.bad_input
def test_a_missing_split_file_says_which_stage_writes_it(tmp_path):
    with pytest.raises(MissingInput, match="does not exist: expected the JSON lines the split stage writes; run the "
                                           r"split stage \(`dvc repro split`\)"):
        read_split(tmp_path / "nope.jsonl")


def test_merged_splits_are_the_union_of_files_that_agree():
    """An older side's file lacks the questions added since (the split only extends): the union."""
    old = {"a": "dev", "b": "test"}
    new = {"a": "dev", "b": "test", "c": "test"}
    assert merge_splits({"s1": old, "s2": new}) == {"a": "dev", "b": "test", "c": "test"}
    assert list(merge_splits({"s2": new, "s1": old})) == ["a", "b", "c"]
    assert merge_splits({}) == {}


@pytest.mark.bad_input
def test_merged_splits_that_give_a_question_two_sides_name_it_and_each_file():
    with pytest.raises(SplitError) as e:
        merge_splits({"s1": {"a": "dev", "b": "test", "c": "dev"}, "s2": {"a": "test", "b": "test", "c": "all"}})
    assert str(e.value).startswith("the split files of the sides disagree on 2 question(s): a (dev at s1, test at s2), "
                                   "c (dev at s1, all at s2); a sweep chooses and confirms on one split")
