"""Per-question scores: rankings joined with labels, answers with references, CSV round trip."""
from __future__ import annotations

from collections import Counter

import pytest

from rag_ablation.core.config import OUTPUT_DECIMALS, SCORE_DIGITS
from rag_ablation.core.errors import UserError
from rag_ablation.core.io import round_decimals, round_significant
from rag_ablation.evaluation.scoring.scores import (ANSWER_FIELDS, RETRIEVAL_FIELDS, parse_scores, score_answers,
                                             score_run, to_csv)
from rag_ablation.data.questions import Question


def q(id, slice="main", doc="t/a.md", answer="ref"):
    answerable = slice != "unanswerable"
    return Question(id=id, question=f"{id}?", doc=doc if answerable else None, span="x" * 20 if answerable else None,
                    answer=answer, slice=slice, track="t")


QUESTIONS = [q("a"), q("b", "identifier", "t/b.md"), q("c"), q("u", "unanswerable")]
RUN = [{"id": i, "ranking": [{"chunk": f"c{n}", "score": 1.0 / (n + 1)} for n in range(10)]} for i in "abcu"]
RELEVANT = {"a": ["c0"], "b": ["c3", "c7"], "c": ["z9"]}


def test_rows_join_rankings_with_labels():
    rows = score_run("dense", RUN, RELEVANT, QUESTIONS)
    assert [r["id"] for r in rows] == ["a", "b", "c", "u"]
    a, b, c, u = rows
    assert (a["first_relevant_rank"], a["hit_at_1"], a["rr_at_10"], a["n_relevant"]) == (1, 1, 1.0, 1)
    # b: first relevant chunk c3 is at rank 4
    assert (b["first_relevant_rank"], b["hit_at_1"], b["hit_at_5"], b["rr_at_10"]) == (4, 0, 1, pytest.approx(1 / 4))
    assert b["doc"] == "t/b.md" and b["slice"] == "identifier" and b["n_relevant"] == 2
    # c: its relevant chunk was never ranked
    assert (c["first_relevant_rank"], c["hit_at_10"], c["rr_at_10"]) == (None, 0, 0.0)
    assert u["answerable"] == 0 and u["hit_at_5"] is None and u["top_score"] == 1.0


def test_an_empty_ranking_scores_zero():
    rows = score_run("x", [{"id": "a", "ranking": []}], RELEVANT, [QUESTIONS[0]])
    assert rows[0]["first_relevant_rank"] is None and rows[0]["rr_at_10"] == 0.0 and rows[0]["top_score"] is None


def test_csv_round_trip_keeps_types_and_values():
    rows = score_run("dense", RUN, RELEVANT, QUESTIONS)
    text = to_csv(rows, RETRIEVAL_FIELDS)
    assert text.splitlines()[0] == ",".join(RETRIEVAL_FIELDS)
    back = parse_scores(text)
    for r, s in zip(rows, back):
        assert {k: r.get(k) for k in RETRIEVAL_FIELDS} == s


def test_the_top_score_is_kept_to_score_digits_and_the_csv_rounds_every_float():
    """A dense score carries float32 noise from the CPU's kernels (about 1e-7): the row keeps
    SCORE_DIGITS significant digits, so two machines write the same text; every other float of
    the CSV is written to OUTPUT_DECIMALS decimals, -0.0 as 0.0."""
    noisy = [{"id": "a", "ranking": [{"chunk": "c0", "score": s}, {"chunk": "c1", "score": 0.1}]}
             for s in (0.61234567, 0.61234567 + 1.2e-7)]
    a, b = (score_run("dense", [run], RELEVANT, [QUESTIONS[0]])[0] for run in noisy)
    assert a["top_score"] == b["top_score"] == round_significant(0.61234567, SCORE_DIGITS) == 0.612
    assert to_csv([a], RETRIEVAL_FIELDS) == to_csv([b], RETRIEVAL_FIELDS)
    bm25 = score_run("bm25", [{"id": "a", "ranking": [{"chunk": "c0", "score": 27.010662}]}], RELEVANT, [QUESTIONS[0]])
    assert bm25[0]["top_score"] == round_significant(27.010662, SCORE_DIGITS) == 27.0
    rows = [{"config": "x", "id": "a", "token_f1": 1 / 3, "rr_at_10": -0.0, "top_score": 0.1 + 0.2}]
    back = parse_scores(to_csv(rows, ["config", "id", "token_f1", "rr_at_10", "top_score"]))[0]
    assert back == {"config": "x", "id": "a", "token_f1": round_decimals(1 / 3, OUTPUT_DECIMALS), "rr_at_10": 0.0,
                    "top_score": 0.3}
    assert to_csv(rows, ["token_f1", "rr_at_10", "top_score"]).splitlines()[1] == \
        f"{round_decimals(1 / 3, OUTPUT_DECIMALS)!r},0.0,0.3"


def test_answer_rows_say_whether_a_relevant_passage_was_in_the_prompt():
    answers = [{"id": "a", "answer": "ref", "passages": ["c0", "c1"]},
               {"id": "b", "answer": "the passages don't say", "passages": ["c0", "c1"]},
               {"id": "u", "answer": "no information here", "passages": ["c0"]}]
    rows = score_answers("dense", answers, RELEVANT, QUESTIONS, phrases=["don't say", "no information"],
                         texts={"c0": "The ref is here.", "c1": "Nothing else."})
    assert [r["id"] for r in rows] == ["a", "b", "u"], "only answered questions, in question order"
    a, b, u = rows
    assert (a["relevant_in_prompt"], a["contains_reference"], a["token_f1"], a["refusal"]) == (1, 1, 1.0, 0)
    assert (b["relevant_in_prompt"], b["refusal"]) == (0, 1)
    assert u["relevant_in_prompt"] is None and u["refusal"] == 1 and u["token_f1"] is None
    assert parse_scores(to_csv(rows, ANSWER_FIELDS))[2]["token_f1"] is None


def test_answer_rows_carry_lexical_support_and_count_why_it_is_undefined():
    """``lexical_support`` is the last answer column; a (its one content word "ref" in c0) has 1,
    the refusal b and the unanswerable u none; passages without text are counted, not skipped."""
    assert ANSWER_FIELDS[-1] == "lexical_support"
    answers = [{"id": "a", "answer": "ref", "passages": ["c0", "c1"]},
               {"id": "b", "answer": "the passages don't say", "passages": ["c0"]},
               {"id": "c", "answer": "ref", "passages": ["c0", "gone"]},
               {"id": "u", "answer": "ref", "passages": ["c0"]}]
    undefined: Counter[str] = Counter()
    rows = score_answers("dense", answers, RELEVANT, QUESTIONS, phrases=["don't say"],
                         texts={"c0": "The ref is here.", "c1": "Nothing else."}, undefined=undefined)
    assert [r["lexical_support"] for r in rows] == [1.0, None, None, None]
    assert undefined == {"refusal": 1, "passage text missing": 1, "unanswerable": 1}
    back = parse_scores(to_csv(rows, ANSWER_FIELDS))
    assert [r["lexical_support"] for r in back] == [1.0, None, None, None]
    assert to_csv(rows, ANSWER_FIELDS).splitlines()[2].endswith(",0,")  # b: relevant_in_prompt 0, then an empty cell


@pytest.mark.bad_input
def test_a_stale_run_is_one_clear_error():
    with pytest.raises(UserError, match=r"no ranking for 1 question\(s\) \(u\).*dvc repro retrieve@dense"):
        score_run("dense", RUN[:3], RELEVANT, QUESTIONS)
