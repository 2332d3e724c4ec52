from __future__ import annotations

import pytest

from rag_ablation.core.config import LlmConfig
from rag_ablation.core.errors import UnknownName
from rag_ablation.evaluation.scoring.answer_measures import normalize_answer, token_f1
from rag_ablation.llm.client.llama_cpp import LlamaCppBackend
from rag_ablation.evaluation.judges.judging import (CANARY_EXPECTED, CANARY_KINDS, LLM_JUDGE_UNAVAILABLE, Item, PairResult,
                                      build_judges, canaries, compare_both_orders, contains_judge, f1_judge,
                                      judge_availability, llm_judge, padded, pair_messages, paraphrased,
                                      parse_choice, parse_verdict)
from rag_ablation.llm.client.prompt_cache import CachedLLM, PromptCache
from rag_ablation.llm.client.prompting import load_template

from conftest import ROOT


@pytest.mark.parametrize("reply, verdict", [
    ("CORRECT", True), ("INCORRECT", False), ("correct", True), ("Incorrect.", False), ("**CORRECT**", True),
    ("  CORRECT!\n", True), ('"INCORRECT"', False),
    ("CORRECT or INCORRECT.", None), ("The answer is CORRECT", None), ("", None), ("CORRECTLY", None),
    ("Yes", None), ("COR RECT", None),
])
def test_verdicts_are_parsed_strictly(reply, verdict):
    assert parse_verdict(reply) is verdict


@pytest.mark.parametrize("reply, choice", [("A", "A"), ("b.", "B"), ("**B**", "B"), ("A or B", None),
                                           ("Answer A", None), ("", None), ("C", None)])
def test_choices_are_parsed_strictly(reply, choice):
    assert parse_choice(reply) == choice


def test_token_f1_judge_threshold_is_inclusive():
    ref = "settlement runs nightly at two"
    half = Item("q", ref, "settlement runs")  # precision 1, recall 2/5: F1 = 2*(1*0.4)/(1.4)
    f1 = token_f1(half.answer, ref)
    assert f1 == pytest.approx(2 * 0.4 / 1.4)
    assert f1_judge(f1)([half])[0].verdict is True
    assert f1_judge(f1 + 1e-9)([half])[0].verdict is False
    assert f1_judge(0.5)([Item("q", ref, ref)])[0].detail == "1.0000"


def test_contains_judge_normalizes():
    out = contains_judge([Item("q", "The `settled` status.", "It ends with the settled status!"),
                          Item("q", "settled", "failed")])
    assert [v.verdict for v in out] == [True, False]


@pytest.mark.bad_input
def test_unknown_judge_lists_the_valid_ones():
    with pytest.raises(UnknownName, match="unknown judge 'bleu'; expected one of: contains, llm, token_f1"):
        build_judges(["bleu"], token_f1_threshold=0.5, llm=None)
    with pytest.raises(ValueError, match="needs an LLM backend"):
        build_judges(["llm"], token_f1_threshold=0.5, llm=None)


def test_canaries_are_wrong_or_carry_exactly_the_reference():
    q, ref = "Which statuses can the settlement job record?", "settled, skipped_unreconciled or failed"
    c = canaries(q, ref)
    assert tuple(c) == CANARY_KINDS and set(CANARY_EXPECTED) == set(CANARY_KINDS)
    assert c["empty"] == "" and c["question_repeated"] == q
    long = c["padded_reference"]
    assert 2.5 * len(ref) <= len(long) <= 8 * len(ref), "about three times as long (short references pad more)"
    assert normalize_answer(ref) in normalize_answer(long)
    assert normalize_answer(ref) in normalize_answer(c["paraphrased_reference"])
    # the padding adds no content word of its own beyond a fixed filler vocabulary
    filler = set(normalize_answer(padded("zz " * 100)).split()) - {"zz"}  # every filler sentence
    assert set(normalize_answer(long).split()) <= set(normalize_answer(ref).split()) | filler
    assert set(normalize_answer(paraphrased(ref)).split()) <= set(normalize_answer(ref).split()) | {"according", "to", "handbook"}


def test_a_win_needs_both_orders_to_agree():
    assert PairResult("A", "B", "A", "B").winner == "x"  # x first: A (x); y first: B (x)
    assert PairResult("B", "A", "B", "A").winner == "y"
    assert PairResult("A", "A", "A", "A").winner == "tie"  # always the first slot: position decides
    assert PairResult("A", None, "A", "maybe").winner == "tie"
    assert PairResult("A", "A", "A", "A").picks == ("x", "y")


def test_swapping_swaps_both_texts_and_what_a_and_b_name():
    template = load_template(ROOT / "prompts", "judge_pairwise", needs=["question", "a", "b"])
    first = pair_messages(template, "Q?", "short one", "long one")[0]["content"]
    second = pair_messages(template, "Q?", "long one", "short one")[0]["content"]
    assert first.index("Answer A:\nshort one") < first.index("Answer B:\nlong one")
    assert second.index("Answer A:\nlong one") < second.index("Answer B:\nshort one")


@pytest.mark.slow
def test_both_orders_reach_the_real_model_and_the_cache(tmp_path):
    """SmolLM2 through llama.cpp compares a pair twice: both orders are separate prompts (both in
    the prompt cache afterwards), and the grading judge's replies are parsed or counted invalid."""
    llm = CachedLLM(LlamaCppBackend(n_threads=1), PromptCache(tmp_path / "p.sqlite"))
    template = load_template(ROOT / "prompts", "judge_pairwise", needs=["question", "a", "b"])
    pairs = [("When does settlement run?", "At 02:30 UTC.", "Settlement runs every night at 02:30 UTC, after taps close.")]
    (res,) = compare_both_orders(llm, template, pairs, num_predict=8)
    assert llm.stats() == {"calls": 2, "hits": 0, "misses": 2}
    for a, b in (("At 02:30 UTC.", pairs[0][2]), (pairs[0][2], "At 02:30 UTC.")):
        assert llm.key(pair_messages(template, pairs[0][0], a, b), num_predict=8, stop=("\n",)) in llm.cache
    assert res.winner in ("x", "y", "tie") and res.x_first_choice in ("A", "B", None)
    grading = load_template(ROOT / "prompts", "judge_reference", needs=["question", "reference", "answer"])
    out = llm_judge(llm, grading, num_predict=8)([Item(pairs[0][0], "At 02:30 UTC.", "The passages don't say.")])
    assert out[0].verdict is parse_verdict(out[0].detail)


def test_judge_availability_with_an_llm_runs_every_judge():
    available = judge_availability(judges=("llm", "token_f1", "contains"), judge_llm=LlmConfig())
    assert available.runnable == ["llm", "token_f1", "contains"] and available.uses_llm
    assert available.statuses() == {n: {"status": "ok", "reason": None} for n in ("llm", "token_f1", "contains")}
    assert list(available.statuses()) == ["llm", "token_f1", "contains"]


def test_judge_availability_without_an_llm_keeps_the_judge_free_judges():
    available = judge_availability(judges=("token_f1", "llm", "contains"), judge_llm=LlmConfig(backend="none"))
    assert available.runnable == ["token_f1", "contains"] and not available.uses_llm
    statuses = available.statuses()
    assert list(statuses) == ["token_f1", "llm", "contains"]
    assert statuses["llm"] == {"status": "unavailable",
                               "reason": "the llm judge needs an LLM, and its backend is none"} \
        == {"status": "unavailable", "reason": LLM_JUDGE_UNAVAILABLE}
    assert statuses["token_f1"] == statuses["contains"] == {"status": "ok", "reason": None}
    statuses["token_f1"]["threshold"] = 0.5  # each call gives new records for the stage to extend
    assert "threshold" not in available.statuses()["token_f1"]


def test_judge_availability_without_the_llm_judge_needs_no_llm():
    for cfg in (LlmConfig(), LlmConfig(backend="none")):
        available = judge_availability(judges=["contains"], judge_llm=cfg)
        assert available.runnable == ["contains"] and not available.uses_llm
        assert available.statuses() == {"contains": {"status": "ok", "reason": None}}


def test_judge_answers_gives_one_row_per_record_and_counts_invalid_verdicts():
    from rag_ablation.evaluation.judges.grades import answer_sha256
    from rag_ablation.evaluation.judges.judging import Verdict, judge_answers
    questions = {"q1": {"question": "When?", "answer": "At noon."}, "q2": {"question": "Where?", "answer": "Oslo."}}
    records = [{"id": "q2", "answer": "In Oslo."}, {"id": "q1", "answer": "Never."}]
    seen = []

    def fake(items):
        seen.extend(items)
        return [Verdict(True, "ok"), Verdict(None, "maybe")]

    judged = judge_answers(records, questions, {"fake": fake, "contains": contains_judge})
    assert seen == [Item("Where?", "Oslo.", "In Oslo."), Item("When?", "At noon.", "Never.")]
    assert judged.rows() == [
        {"id": "q2", "answer_sha256": answer_sha256("In Oslo."),
         "fake": {"verdict": "correct", "detail": "ok", "score": None},
         "contains": {"verdict": "correct", "detail": "", "score": 1.0},
         # "in oslo" against "oslo", none of it in "where": P 1/2, R 1
         "features": {"new_f1": 2 / 3, "question_overlap": 0.0}},
        {"id": "q1", "answer_sha256": answer_sha256("Never."),
         "fake": {"verdict": "invalid", "detail": "maybe", "score": None},
         "contains": {"verdict": "incorrect", "detail": "", "score": 0.0},
         "features": {"new_f1": 0.0, "question_overlap": 0.0}},
    ]
    assert judged.invalid() == {"fake": 1, "contains": 0}
    assert judged.unscored() == {"fake": 2, "contains": 0}
    assert judged.summary() == "fake: 1/2 correct, 1 invalid, contains: 1/2 correct, 0 invalid"
    empty = judge_answers([], questions, {"contains": contains_judge})
    assert empty.rows() == [] and empty.invalid() == {"contains": 0}


def test_label_probability_sums_the_tokens_that_begin_each_label():
    import math

    from rag_ablation.evaluation.judges.judging import label_probability

    alts = [("CORRECT", math.log(0.5)), (" Cor", math.log(0.1)), ("IN", math.log(0.2)), ("**", math.log(0.1)),
            ("Paris", math.log(0.05))]
    # CORRECT: 0.5 + 0.1; INCORRECT: 0.2 ("**" trims to nothing, "Paris" begins neither)
    assert label_probability(alts, yes="CORRECT", no="INCORRECT") == pytest.approx(0.6 / 0.8)
    assert label_probability([("Paris", -0.1)], yes="CORRECT", no="INCORRECT") is None
    assert label_probability(None, yes="CORRECT", no="INCORRECT") is None
    assert label_probability([("B", math.log(0.3)), ("A", math.log(0.6))], yes="A", no="B") == pytest.approx(2 / 3)


def test_every_judge_gives_a_score_beside_its_verdict():
    from rag_ablation.evaluation.judges.judging import Item, contains_judge, f1_judge
    from rag_ablation.evaluation.scoring.answer_measures import token_f1

    items = [Item("q", "the blue fox", "a blue fox"), Item("q", "the blue fox", "no idea")]
    f1 = f1_judge(0.5)(items)
    assert [v.score for v in f1] == [token_f1(it.answer, it.reference) for it in items]
    assert [v.score for v in contains_judge(items)] == [1.0, 0.0]


def test_answer_features_score_what_the_answer_adds_to_the_question():
    from rag_ablation.evaluation.judges.answer_features import answer_features
    question = "How many retries does the payment worker make?"
    reference = "The payment worker retries 3 times."
    # the question repeated: every token is the question's, so nothing new and full overlap,
    # although plain token F1 against the reference is 0.5 ("payment", "worker" shared)
    assert answer_features(question, reference, question) == {"new_f1": 0.0, "question_overlap": 1.0}
    assert answer_features(question, reference, "") == {"new_f1": 0.0, "question_overlap": 1.0}
    # answer tokens (article dropped): payment worker makes 3 retries; payment, worker and retries
    # are the question's, so the new ones are makes, 3; the reference's new ones are 3, times:
    # one shared, P 1/2, R 1/2
    f = answer_features(question, reference, "The payment worker makes 3 retries.")
    assert f == {"new_f1": 0.5, "question_overlap": 3 / 5}
    assert answer_features(question, reference, "Yes.") == {"new_f1": 0.0, "question_overlap": 0.0}
