from __future__ import annotations

from collections import Counter

from conftest import Q

from rag_ablation.support.sampling import allocation, stratified_sample

# the handbook's shape: 90 main, 40 identifier, 24 paraphrase, 18 unanswerable (172)
SET = ([Q(f"m{i}", "", "main") for i in range(90)] + [Q(f"i{i}", "", "identifier") for i in range(40)]
       + [Q(f"p{i}", "", "paraphrase") for i in range(24)] + [Q(f"u{i}", "", "unanswerable", False) for i in range(18)])


def test_allocation_is_proportional_by_largest_remainder():
    counts = {"main": 90, "identifier": 40, "paraphrase": 24, "unanswerable": 18}
    # exact shares of 80: 41.86, 18.60, 11.16, 8.37 -> floors 41, 18, 11, 8 (78); the two largest
    # remainders (.86 main, .60 identifier) take the last two
    assert allocation(counts, 80) == {"main": 42, "identifier": 19, "paraphrase": 11, "unanswerable": 8}
    assert sum(allocation(counts, 7).values()) == 7
    assert allocation(counts, 500) == counts


def test_sample_is_stratified_seeded_and_in_question_order():
    s = stratified_sample(SET, 80, seed=0)
    assert len(s) == 80 and Counter(q.slice for q in s) == {"main": 42, "identifier": 19, "paraphrase": 11,
                                                             "unanswerable": 8}
    assert [q.id for q in s] == [q.id for q in SET if q in s], "question order is kept"
    assert [q.id for q in stratified_sample(SET, 80, seed=0)] == [q.id for q in s], "same seed, same sample"
    assert [q.id for q in stratified_sample(SET, 80, seed=1)] != [q.id for q in s]
    assert [q.id for q in stratified_sample(list(reversed(SET)), 80, seed=0)][::-1] == [q.id for q in s], \
        "the sample does not depend on file order"


def test_all_or_a_size_beyond_the_set_keeps_every_question():
    assert stratified_sample(SET, None, seed=0) == SET
    assert stratified_sample(SET, 1000, seed=0) == SET
