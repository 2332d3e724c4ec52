from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from rag_ablation.core.config import StatsConfig
from rag_ablation.evaluation.judges import judge_eval
from rag_ablation.evaluation.judges.grades import Grade, answer_sha256
from rag_ablation.evaluation.judges.judge_eval import length_bias, self_preference
from rag_ablation.evaluation.report.judge_report import render_answers
from rag_ablation.evaluation.statistics.inference import wilson_interval

SETTINGS = StatsConfig(resamples=500, seed=0)
evaluate = partial(judge_eval.evaluate, crossfit_seeds=5, refit_resamples=20)
"""Few fold seeds and refit draws (the defaults, 50 and 200, take seconds a call); the repeated
cross-fit itself: test_refit.py and ``test_the_headline_kappa_is_the_median_over_fold_seeds``."""
FAST = StatsConfig(resamples=200, seed=0, ppi_splits=10)


def pair(x_pick, y_pick):
    agree = x_pick is not None and x_pick == y_pick
    return {"x_first_pick": x_pick, "y_first_pick": y_pick, "winner": x_pick if agree else "tie"}


def test_length_bias_counts_wins_only_when_both_orders_agree():
    pairs = [pair("long", "long"), pair("short", "long"), pair("long", "short"), pair(None, "long")]
    out = length_bias(pairs, 0.95)
    # slot A holds the short answer in the first order and the long one in the second
    a_picks = sum(p["x_first_pick"] == "short" for p in pairs) + sum(p["y_first_pick"] == "long" for p in pairs)
    valid = sum(p["x_first_pick"] is not None for p in pairs) + sum(p["y_first_pick"] is not None for p in pairs)
    ci = wilson_interval(a_picks, valid)
    assert (out["long_wins"], out["short_wins"], out["ties"]) == (1, 0, 3)
    assert out["consistency"] == 1 / 4 and out["valid_verdicts"] == 7
    assert out["first_slot"] == {"wins": a_picks, "n": valid, "rate": a_picks / valid, "low": ci.low, "high": ci.high}


def test_self_preference_is_never_a_number_with_one_model():
    assert self_preference(None) == {"status": "not measured", "reason": "needs two answer models"}
    sp = {"status": "ok", "models": {"first": {}, "second": {}},
          "pairs": {"first": [{"winner": "first"}, {"winner": "tie"}], "second": [{"winner": "first"}] * 2}}
    out = self_preference(sp)
    assert out["judges"]["first"] == {"pairs": 2, "own_wins": 1, "other_wins": 0, "ties": 1, "own_rate": 0.5}
    assert out["judges"]["second"]["own_wins"] == 0 and out["judges"]["second"]["other_wins"] == 2


def fixture(n=6, graded=4):
    """One config, ``n`` answers; the first ``graded`` hand-graded (correct when even); the
    contains judge says correct for every answer, so its false accepts are the odd graded ones."""
    ids = [f"q{i}" for i in range(n)]
    texts = {i: f"answer {i}" for i in ids}
    judgments = {"c": {"status": "ok", "reason": None,
                       "judges": {"contains": {"status": "ok"}, "llm": {"status": "unavailable", "reason": "none"}},
                       "verdicts": [{"id": i, "answer_sha256": answer_sha256(texts[i]),
                                     "contains": {"verdict": "correct", "detail": ""}} for i in ids]}}
    grades = [Grade(answer_sha256(texts[i]), "c", "t", i, "", "correct" if k % 2 == 0 else "incorrect")
              for k, i in enumerate(ids[:graded])]
    answer_rows = [{"config": "c", "id": i, "slice": "main" if k < n - 2 else "unanswerable", "answerable": int(k < n - 2),
                    "refusal": 0, "relevant_in_prompt": 1 if k < n - 2 else None} for k, i in enumerate(ids)]
    retrieval_rows = [{"config": "c", "id": i, "answerable": r["answerable"], "top_score": 0.5 + 0.1 * k}
                      for k, (i, r) in enumerate(zip(ids, answer_rows))]
    return answer_rows, retrieval_rows, judgments, grades


def test_evaluate_calibrates_each_judge_and_names_disagreements():
    answer_rows, retrieval_rows, judgments, grades = fixture()
    metrics, detail, verdicts, plot, _ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows,
                                               judgments=judgments, checks=None, grades=grades,
                                               judges=["llm", "contains"], settings=SETTINGS)
    cal = detail["calibration"]["contains"]
    assert cal["confusion"]["tp"] == 2 and cal["confusion"]["fp"] == 2 and cal["tnr"]["estimate"] == 0.0
    assert cal["disagreements"]["false_accepts"] == ["c/q1", "c/q3"]
    assert detail["calibration"]["llm"]["status"] == "unavailable"
    acc = detail["configs"]["c"]["accuracy"]
    assert acc["hand"]["estimate"] == 0.5 and acc["contains"]["judge"]["estimate"] == 1.0
    assert acc["contains"]["ppi"]["n_labeled"] == 4 and acc["contains"]["ppi"]["n_unlabeled"] == 2
    assert "llm" not in acc  # unavailable judges get no accuracy
    assert [v["hand"] for v in verdicts] == ["1", "0", "1", "0", "", ""]
    assert [v["llm"] for v in verdicts] == ["unavailable"] * 6
    # unanswerable questions score highest here: the sweep's best threshold answers nothing
    assert detail["configs"]["c"]["threshold"]["auc"] == 0.0 and plot
    assert metrics["configs"]["c"]["accuracy"]["hand"]["estimate"] == 0.5


def test_ppi_is_not_applicable_when_every_answer_is_graded():
    answer_rows, retrieval_rows, judgments, grades = fixture(n=6, graded=6)
    _, detail, _, _, _ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments,
                               checks=None, grades=grades, judges=["contains"], settings=SETTINGS)
    acc = detail["configs"]["c"]["accuracy"]["contains"]
    assert acc["ppi"] is None and "every answer is hand-graded" in acc["ppi_reason"]


def test_with_every_answer_graded_the_split_half_check_fills_the_ppi_rows():
    """The default's case: PPI++ has nothing to add, so it is run on half the grades and checked
    against the other half; the report's PPI++ row holds those numbers, labelled split-half."""
    from rag_ablation.evaluation.judges.ppi_check import split_half_check

    answer_rows, retrieval_rows, judgments, grades = fixture(n=6, graded=6)
    metrics, detail, _, _, _ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments,
                                     checks=None, grades=grades, judges=["contains"], settings=SETTINGS)
    check = detail["configs"]["c"]["accuracy"]["contains"]["ppi_check"]
    hand = {g.id: g.correct for g in grades}
    verdicts = {r["id"]: r["contains"]["verdict"] == "correct" for r in judgments["c"]["verdicts"]}
    expected, _ = split_half_check(hand, verdicts, seed=SETTINGS.seed, splits=SETTINGS.ppi_splits,
                                   confidence=SETTINGS.confidence)
    assert check == expected and (check["n_labeled"], check["n_heldout"]) == (3, 3)
    assert metrics["configs"]["c"]["accuracy"]["contains"]["ppi_check"]["coverage"] == check["coverage"]
    text = render_answers(detail, configs=["c"], judges=["contains"], confidence=0.95)
    assert "3 + 3 (split-half: 3 grades held back; every answer is hand-graded" in text
    assert f"{check['coverage']:.0%} vs {check['classical_coverage']:.0%}" in text


def test_a_grade_of_a_changed_answer_is_stale_and_unused():
    answer_rows, retrieval_rows, judgments, grades = fixture()
    judgments["c"]["verdicts"][0]["answer_sha256"] = answer_sha256("a different answer")
    _, detail, verdicts, _, _ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments,
                                      checks=None, grades=grades, judges=["contains"], settings=SETTINGS)
    assert detail["grades"] == {"matching": 3, "stale": 1, "unknown": 0, "answers": 6}
    assert verdicts[0]["hand"] == ""


def test_report_sections_render_from_the_detail():
    answer_rows, retrieval_rows, judgments, grades = fixture()
    _, detail, _, _, _ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments,
                               checks=None, grades=grades, judges=["llm", "contains"], settings=SETTINGS)
    text = render_answers(detail, configs=["c"], judges=["llm", "contains"], confidence=0.95)
    assert "4 hand grades" in text and "`c/q1`, `c/q3`" in text
    assert "| `contains` | 4 (0 invalid) |" in text
    assert render_answers({"configs": {}}, configs=["c"], judges=["contains"], confidence=0.95) == ""


@pytest.mark.bad_input
def test_a_grade_file_with_a_bad_verdict_names_the_line(tmp_path):
    from rag_ablation.core.errors import InvalidData
    from rag_ablation.evaluation.judges.grades import load_grades
    good = '{"answer_sha256": "%s", "config": "c", "grader": "t", "id": "q0", "note": "", "verdict": "correct"}' % ("a" * 64)
    bad = good.replace('"correct"', '"maybe"').replace("q0", "q1")
    (tmp_path / "g.jsonl").write_text(good + "\n" + bad + "\n" + good + "\n")
    with pytest.raises(InvalidData) as e:
        load_grades(tmp_path / "g.jsonl")
    msg = str(e.value)
    assert "line 2: verdict 'maybe' is not one of correct, incorrect" in msg
    assert "line 3: config 'c' question 'q0' is graded again for the same answer text (first on line 1)" in msg


def test_a_question_may_hold_grades_for_several_answer_texts(tmp_path):
    """Another answer model's text (or an earlier prompt's) keeps its own grade; the one whose
    hash is the current answer's is used, the other counts as stale."""
    from rag_ablation.evaluation.judges.grades import Grade, answer_sha256, load_grades, match_grades, write_grades
    small = Grade(answer_sha256("port 8080"), "c", "t", "q0", "", "correct")
    large = Grade(answer_sha256("the passages do not say"), "c", "t", "q0", "", "incorrect")
    write_grades(tmp_path / "g.jsonl", [small, large])
    grades = load_grades(tmp_path / "g.jsonl")
    assert sorted(grades, key=lambda g: g.slot) == sorted([small, large], key=lambda g: g.slot)
    m = match_grades(grades, {("c", "q0"): "the passages do not say"})
    assert (m.verdicts, m.stale, m.unknown) == ({("c", "q0"): False}, 1, 0)
    m = match_grades(grades, {("c", "q0"): "port 8080"})
    assert (m.verdicts, m.stale, m.unknown) == ({("c", "q0"): True}, 1, 0)


def test_the_primary_judge_is_the_one_that_agrees_best_with_the_hand_grades():
    from rag_ablation.evaluation.judges.judge_eval import primary_judge
    cal = {"llm": {"kappa": {"estimate": 0.0}}, "token_f1": {"kappa": {"estimate": 0.36}},
           "contains": {"kappa": {"estimate": 0.36}}, "other": {"status": "unavailable"}}
    assert primary_judge(["llm", "token_f1", "contains"], cal) == "token_f1"  # a tie keeps params order
    assert primary_judge(["contains", "token_f1"], cal) == "contains"
    assert primary_judge(["other", "llm"], cal) == "llm" and primary_judge(["other"], cal) == "other"
    assert primary_judge([], cal) is None


def test_answer_configs_are_compared_over_source_documents_with_stats_cluster():
    """With ``stats.cluster`` the paired interval resamples whole source documents (q0-q2 from
    a, q3-q4 from b): the cluster bootstrap of the same differences, as the retrieval
    comparisons do; without it, or with every compared question from one document, questions."""
    from dataclasses import replace

    from rag_ablation.evaluation.judges.judge_eval import answer_comparison
    from rag_ablation.evaluation.report.judge_report import comparison_section
    from rag_ablation.evaluation.statistics.inference import paired_bootstrap_ci
    dense = [1.0, 1.0, 1.0, 0.0, 0.0]
    hybrid = [1.0, 0.0, 0.0, 1.0, 1.0]
    hand = {**{("dense", f"q{i}"): bool(v) for i, v in enumerate(dense)},
            **{("hybrid", f"q{i}"): bool(v) for i, v in enumerate(hybrid)}}
    docs = {"q0": "a", "q1": "a", "q2": "a", "q3": "b", "q4": "b"}
    clustered = replace(SETTINGS, cluster=True)
    diff = answer_comparison(hand, ["dense", "hybrid"], clustered, docs)["configs"]["hybrid"]["difference"]
    ci = paired_bootstrap_ci(dense, hybrid, n_resamples=500, seed=0, clusters=[docs[f"q{i}"] for i in range(5)])
    assert diff == {"estimate": 0.0, "low": ci.low, "high": ci.high, "method": "cluster-percentile"}
    text = comparison_section({"comparison": answer_comparison(hand, ["dense", "hybrid"], clustered, docs)}, 0.95)
    assert "paired bootstrap interval (resampling whole source documents: `stats.cluster`)," in text
    plain = comparison_section({"comparison": answer_comparison(hand, ["dense", "hybrid"], SETTINGS, docs)}, 0.95)
    assert "paired bootstrap interval, the questions" in plain
    assert answer_comparison(hand, ["dense", "hybrid"], SETTINGS, docs)["configs"]["hybrid"]["difference"][
        "method"] == "percentile"
    one_doc = dict.fromkeys(docs, "a")
    assert answer_comparison(hand, ["dense", "hybrid"], clustered, one_doc)["configs"]["hybrid"]["difference"][
        "method"] == "percentile"


def test_answer_configs_are_compared_on_the_questions_graded_in_both():
    """dense right on q0-q2 of q0-q4, hybrid right on q0, q3, q4 (q5 graded for hybrid only):
    fixed q3, q4; broken q1, q2; the paired difference is (3 - 3) / 5 and McNemar is
    binomtest(2, 4, 0.5)."""
    from scipy.stats import binomtest

    from rag_ablation.evaluation.judges.judge_eval import answer_comparison
    from rag_ablation.evaluation.report.judge_report import comparison_section
    from rag_ablation.evaluation.statistics.inference import paired_bootstrap_ci
    dense = [True, True, True, False, False]
    hybrid = [True, False, False, True, True]
    hand = {**{("dense", f"q{i}"): v for i, v in enumerate(dense)},
            **{("hybrid", f"q{i}"): v for i, v in enumerate(hybrid)}, ("hybrid", "q5"): True}
    out = answer_comparison(hand, ["dense", "hybrid"], SETTINGS)
    e = out["configs"]["hybrid"]
    assert out["baseline"] == "dense" and e["n"] == 5
    assert (e["baseline_accuracy"], e["accuracy"]) == (sum(dense) / 5, sum(hybrid) / 5)
    assert (e["fixed"], e["broken"], e["both_right"], e["both_wrong"]) == (2, 2, 1, 0)
    assert e["fixed_ids"] == ["q3", "q4"] and e["broken_ids"] == ["q1", "q2"]
    assert e["p_mcnemar"] == pytest.approx(binomtest(2, 4, 0.5).pvalue)
    ci = paired_bootstrap_ci([float(x) for x in dense], [float(x) for x in hybrid], n_resamples=500, seed=0)
    assert e["difference"] == {"estimate": 0.0, "low": ci.low, "high": ci.high, "method": "percentile"}
    text = comparison_section({"comparison": out}, 0.95)
    assert "| `hybrid` | 5 | 60.0% | 60.0% |" in text and "| 2 / 2 |" in text
    assert "- `hybrid` fixed: `q3`, `q4`; broken: `q1`, `q2`" in text
    # the baseline falls back to the first answered config; one config has nothing to compare
    assert answer_comparison(hand, ["hybrid", "other"], SETTINGS)["baseline"] == "hybrid"
    assert answer_comparison(hand, ["dense"], SETTINGS) == {} and comparison_section({}, 0.95) == ""
    only = answer_comparison({("dense", "q0"): True, ("hybrid", "q0"): False}, ["dense", "hybrid"], SETTINGS)
    assert only["configs"]["hybrid"] == {"status": "unavailable",
                                         "reason": "1 question(s) hand-graded for both dense and hybrid"}


def scored_fixture(n=40):
    """One config, ``n`` answers all graded (correct when k % 3 != 0), two judges with scores:
    ``token_f1`` separates the grades perfectly, ``contains`` is 1 on every answer."""
    ids = [f"q{i:02d}" for i in range(n)]
    texts = {i: f"answer {i}" for i in ids}
    good = {i: k % 3 != 0 for k, i in enumerate(ids)}
    f1 = {i: (0.6 + 0.01 * k if good[i] else 0.1 + 0.01 * k) for k, i in enumerate(ids)}
    judgments = {"c": {"status": "ok", "reason": None,
                       "judges": {"contains": {"status": "ok"}, "token_f1": {"status": "ok"}},
                       "verdicts": [{"id": i, "answer_sha256": answer_sha256(texts[i]),
                                     "contains": {"verdict": "correct", "detail": "", "score": 1.0},
                                     "token_f1": {"verdict": "correct" if f1[i] >= 0.5 else "incorrect",
                                                  "detail": "", "score": f1[i]}} for i in ids]}}
    grades = [Grade(answer_sha256(texts[i]), "c", "t", i, "", "correct" if good[i] else "incorrect") for i in ids]
    answer_rows = [{"config": "c", "id": i, "slice": "main", "answerable": 1, "refusal": 0, "relevant_in_prompt": 1}
                   for i in ids]
    retrieval_rows = [{"config": "c", "id": i, "answerable": 1, "top_score": 0.5} for i in ids]
    return answer_rows, retrieval_rows, judgments, grades, f1


def test_scores_give_auc_crossfitted_kappa_and_the_primary_judge():
    answer_rows, retrieval_rows, judgments, grades, f1 = scored_fixture()
    _, detail, verdicts, _, roc = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows,
                                           judgments=judgments, checks=None, grades=grades,
                                           judges=["token_f1", "contains"], settings=SETTINGS, threshold_folds=4)
    sc = detail["scores"]
    assert sc["judges"]["token_f1"]["auc"]["estimate"] == 1.0
    assert sc["judges"]["token_f1"]["crossfit"]["kappa"]["estimate"] == 1.0
    assert sc["judges"]["contains"]["auc"]["estimate"] == 0.5  # one score for every answer: chance
    assert sc["primary"] == "token_f1" and detail["configs"]["c"]["primary_judge"] == "token_f1"
    assert detail["configs"]["c"]["primary_rule"] == "cross-fitted threshold"
    assert sc["combined"]["status"] == "ok" and sc["combined"]["inputs"] == ["token_f1", "contains"]
    assert [v["token_f1_score"] for v in verdicts] == [f"{f1[v['id']]:.6f}" for v in verdicts]
    assert {r["judge"] for r in roc} == {"token_f1", "contains", "combined"}
    # PPI++ on the score: every answer graded, so the split-half check carries it
    by_score = detail["configs"]["c"]["score_accuracy"]
    assert by_score["token_f1"]["ppi"] is None and by_score["token_f1"]["ppi_check"]["n_labeled"] == 20
    assert by_score["combined"]["ppi_check"]["ppi"]["lam"] == 1.0  # cross-PPI: no power tuning
    text = render_answers(detail, configs=["c"], judges=["token_f1", "contains"], confidence=0.95)
    assert "## Judges by their scores" in text and "Primary judge" in text and "**`token_f1`**" in text


def test_the_headline_kappa_is_the_median_over_fold_seeds_with_a_refit_interval():
    """judge_detail.json's ``kappa`` per judge: the median of the cross-fitted kappa over
    ``crossfit_seeds`` fold seeds, with the refit interval; the one seed's stays in ``crossfit``;
    the combined judge's AUC is the median of its out-of-fold AUC; the report leads with them."""
    answer_rows, retrieval_rows, judgments, grades, f1 = scored_fixture()
    for k, r in enumerate(judgments["c"]["verdicts"]):  # blur token F1 so that fold seeds matter
        r["token_f1"]["score"] = round(min(1.0, f1[r["id"]] + (0.45 if k % 7 == 0 else 0.0)
                                           - (0.3 if k % 11 == 0 else 0.0)), 2)
    metrics, detail, _, _, _ = judge_eval.evaluate(
        answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments, checks=None, grades=grades,
        judges=["token_f1", "contains"], settings=FAST, threshold_folds=4, crossfit_seeds=7, refit_resamples=30)
    sc = detail["scores"]
    assert (sc["crossfit_seeds"], sc["refit_resamples"]) == (7, 30)
    t = sc["judges"]["token_f1"]
    assert t["kappa"]["seeds"] == 7 and len(set(t["kappa"]["by_seed"])) > 1  # the seeds disagree
    assert t["kappa"]["estimate"] == pytest.approx(float(np.median(t["kappa"]["by_seed"])))
    assert t["kappa"]["by_seed"][0] == pytest.approx(t["crossfit"]["kappa"]["estimate"])  # seed 0 = stats.seed
    assert t["kappa"]["low"] <= t["kappa"]["estimate"] <= t["kappa"]["high"] and t["crossfit"]["seed"] == 0
    c = sc["combined"]
    assert c["auc"]["seeds"] == 7 and c["crossfit"]["auc"]["estimate"] == pytest.approx(c["auc"]["by_seed"][0])
    assert "seeds" not in t["auc"]  # a judge's own score: nothing fitted, the plain bootstrap
    assert metrics["scores"]["judges"]["token_f1"]["kappa"]["estimate"] == t["kappa"]["estimate"]
    best = max(["token_f1", "contains", "combined"],
               key=lambda n: (sc["judges"].get(n) or sc["combined"])["kappa"]["estimate"])
    assert sc["primary"] == best
    text = render_answers(detail, configs=["c"], judges=["token_f1", "contains"], confidence=0.95)
    assert "| judge | AUC | kappa (median of 7 cross-fits, refit interval) | kappa (seed 0, thresholds held) |" in text
    a, med = t["auc"], t["kappa"]
    assert (f"| `token_f1` | {a['estimate']:.3f} ({a['low']:.3f} to {a['high']:.3f}) | {med['estimate']:.3f} "
            f"({med['low']:.3f} to {med['high']:.3f}); seeds {med['min']:.3f} to {med['max']:.3f} |") in text


def test_a_judge_without_scores_is_unscored_and_keeps_its_verdicts():
    answer_rows, retrieval_rows, judgments, grades, _ = scored_fixture(n=12)
    for r in judgments["c"]["verdicts"]:
        r["contains"]["score"] = None  # a backend that gave no probabilities
    _, detail, verdicts, _, _ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments,
                                         checks=None, grades=grades, judges=["token_f1", "contains"],
                                         settings=SETTINGS, threshold_folds=3)
    assert detail["scores"]["judges"]["contains"]["status"] == "unscored"
    assert detail["scores"]["combined"]["status"] == "unavailable"
    assert {v["contains_score"] for v in verdicts} == {""} and {v["contains"] for v in verdicts} == {"1"}


def test_a_judge_accepting_a_canary_it_must_reject_is_flagged():
    from rag_ablation.evaluation.judges.judge_eval import canary_flags

    canaries = {"llm": {"dummy_yes": {"expected_accept": False, "accepted": 1.0, "accepted_count": 4, "n": 4},
                        "padded_reference": {"expected_accept": True, "accepted": 1.0, "accepted_count": 4, "n": 4}},
                "contains": {"dummy_yes": {"expected_accept": False, "accepted": 0.0, "accepted_count": 0, "n": 4}},
                "token_f1": {"status": "unavailable"}}
    assert canary_flags(canaries) == [{"judge": "llm", "kind": "dummy_yes", "accepted": 1.0, "accepted_count": 4, "n": 4}]


def two_config_fixture(n=24):
    """Configs ``dense`` and ``hybrid`` answering the same ``n`` questions, every answer graded
    (correct when k % 3 != 0, both configs); the ``llm`` judge's score separates the grades
    perfectly and is 0.1 higher on hybrid's answers, ``contains`` is 1 on every answer; each
    answer row has a token F1, 0.2 higher on hybrid's answers."""
    judgments, grades, answer_rows, retrieval_rows = {}, [], [], []
    for c, shift in (("dense", 0.0), ("hybrid", 0.1)):
        verdicts = []
        for k in range(n):
            i, good, text = f"q{k:02d}", k % 3 != 0, f"{c} answer {k}"
            score = (0.6 if good else 0.1) + 0.01 * k + shift
            verdicts.append({"id": i, "answer_sha256": answer_sha256(text),
                             "contains": {"verdict": "correct", "detail": "", "score": 1.0},
                             "llm": {"verdict": "correct", "detail": "", "score": score}})
            grades.append(Grade(answer_sha256(text), c, "t", i, "", "correct" if good else "incorrect"))
            answer_rows.append({"config": c, "id": i, "slice": "main", "doc": f"d{k % 4}", "answerable": 1,
                                "refusal": 0, "relevant_in_prompt": 1, "contains_reference": 1,
                                "token_f1": 0.1 + 0.01 * k + 2 * shift})
            retrieval_rows.append({"config": c, "id": i, "answerable": 1, "top_score": 0.5})
        judgments[c] = {"status": "ok", "reason": None,
                        "judges": {"contains": {"status": "ok"}, "llm": {"status": "ok"}}, "verdicts": verdicts}
    return answer_rows, retrieval_rows, judgments, grades


def test_without_hand_grades_the_report_says_so_once():
    """Answers judged, no hand grade (a data set whose grades.jsonl is empty, as a BEIR import):
    one paragraph says so, in place of a table of "no hand-graded answer" rows per judge, a scores
    table of "nothing to rank", PPI++ rows of "fewer than 2 hand grades" and a comparison by hand
    grades with no graded question; what needs no grade stays."""
    answer_rows, retrieval_rows, judgments, _ = two_config_fixture()
    _, detail, _, _, _ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments,
                                  checks=None, grades=[], judges=["llm", "contains"], settings=SETTINGS,
                                  threshold_folds=4)
    assert detail["grades"] == {"matching": 0, "stale": 0, "unknown": 0, "answers": 48}
    text = render_answers(detail, configs=["dense", "hybrid"], judges=["llm", "contains"], confidence=0.95)
    first = text.split("\n\n## ")[0].splitlines()
    assert first[0] == "## Judges against hand grades" and len(first) == 3  # heading, blank, one paragraph
    assert first[2].startswith("No hand grades: the data set's grades.jsonl") and "`rag-ablation grade`" in first[2]
    for gone in ("no hand-graded answer has this judge's verdict", "nothing to rank", "fewer than 2 hand grades",
                 "## Judges by their scores", "## Answer configs compared, by hand grades", "PPI++ accuracy",
                 "No split-half check"):
        assert gone not in text, gone
    assert "## Answer accuracy three ways" in text and "## Answer configs compared on every answer" in text
    assert "| `dense` | 24 answers, 0 graded | no grades |" in text


def test_answered_configs_are_compared_on_every_answer_by_token_f1_and_the_primary_judges_score():
    answer_rows, retrieval_rows, judgments, grades = two_config_fixture()
    metrics, detail, verdicts, _, _ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows,
                                               judgments=judgments, checks=None, grades=grades,
                                               judges=["llm", "contains"], settings=SETTINGS, threshold_folds=4)
    assert detail["scores"]["primary"] == "llm"
    mc = detail["measure_comparison"]
    assert mc["baseline"] == "dense" and list(mc["measures"]) == ["token_f1", "llm_score"]
    f1 = mc["measures"]["token_f1"]["configs"]["hybrid"]
    assert (f1["n"], f1["token_f1"]["delta"], f1["token_f1"]["better"], f1["token_f1"]["worse"]) == (24, 0.2, 24, 0)
    llm = mc["measures"]["llm_score"]["configs"]["hybrid"]["llm_score"]
    # the llm score is joined from the verdict rows, as `rag-ablation diff --measure llm_score` reads verdicts.csv
    by_key = {(v["config"], v["id"]): float(v["llm_score"]) for v in verdicts}
    expected = np.mean([by_key[("hybrid", f"q{k:02d}")] - by_key[("dense", f"q{k:02d}")] for k in range(24)])
    assert llm["delta"] == round(expected, 4) == 0.1 and llm["real"] == 1
    assert metrics["measure_comparison"]["measures"]["llm_score"]["configs"]["hybrid"]["llm_score"]["delta"] == 0.1
    text = render_answers(detail, configs=["dense", "hybrid"], judges=["llm", "contains"], confidence=0.95)
    assert "## Answer configs compared on every answer" in text
    assert "| LLM judge P(correct) | `hybrid` | 24 | " in text and "real gain" in text
    # every question better on both measures: the ids are listed under the table
    assert "- token F1, `hybrid` better: " + ", ".join(f"`q{k:02d}`" for k in range(24)) + "; worse: none" in text


def test_lexical_support_is_compared_beside_token_f1_when_answers_have_it():
    """The same fixture with lexical support 0.5 on dense's answers and 0.75 on hybrid's, except
    q00 of dense (a refusal: none): compared on the 23 questions where both have one, between
    token F1 and the judge's score, and the report says where it is undefined and what it is not."""
    answer_rows, retrieval_rows, judgments, grades = two_config_fixture()
    for r in answer_rows:
        r["lexical_support"] = None if (r["config"], r["id"]) == ("dense", "q00") else (
            0.5 if r["config"] == "dense" else 0.75)
    _, detail, _, _, _ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments,
                                  checks=None, grades=grades, judges=["llm", "contains"], settings=SETTINGS,
                                  threshold_folds=4)
    mc = detail["measure_comparison"]
    assert mc["order"] == ["token_f1", "lexical_support", "llm_score"]
    support = mc["measures"]["lexical_support"]
    assert support["undefined"] == {"dense": 1, "hybrid": 0}
    hybrid = support["configs"]["hybrid"]
    assert (hybrid["n"], hybrid["only_config"], hybrid["lexical_support"]["delta"]) == (23, 1, 0.25)
    text = render_answers(detail, configs=["dense", "hybrid"], judges=["llm", "contains"], confidence=0.95)
    assert "| lexical support | `hybrid` | 23 | 0.500 / 0.750 | " in text
    assert ("lexical support is compared on the questions where both answers have one (`dense`: 1 answerable "
            "answer(s) without, `hybrid`: 0 answerable answer(s) without") in text
    assert "not whether they support it (how well it ranks hand grades of support: the Support section)" in text


def test_ppi_says_why_it_does_not_run():
    from rag_ablation.evaluation.judges.judge_eval import no_ppi_reason
    assert no_ppi_reason(80, 0) == "every answer is hand-graded: the judge has nothing to add"
    assert no_ppi_reason(79, 1) == "1 answer without a hand grade: PPI++ needs at least 2"
    assert no_ppi_reason(1, 50) == "fewer than 2 hand grades"
    assert no_ppi_reason(2, 2) is None


def restated_fixture(n=24):
    """One config, ``n`` questions "Which port does service X listen on?" (reference "Service X
    listens on port P."), every answer graded: correct ones say "It is port P." (k % 3 != 0), wrong
    ones name another port. Judges: the real ``token_f1`` and a stand-in ``llm`` whose score is 0.3
    for an answer naming a wrong port and 0.9 for anything else (as the 1.5B's P(CORRECT) is high
    for any answer that is not plainly wrong). Canaries for the first 6 questions, with the
    judge_checks rows (answer features included). The question repeated shares "port",
    "service", "X" and "on" with the reference: token F1 0.615, above every real answer's (0.4
    right, 0.2 wrong)."""
    from rag_ablation.evaluation.judges.judge_checks import canary_rows
    from rag_ablation.evaluation.judges.judging import CANARY_KINDS, Verdict, f1_judge, judge_answers

    questions = {f"q{k:02d}": {"question": f"Which port does service svc{k:02d} listen on?",
                               "answer": f"Service svc{k:02d} listens on port {8000 + k}."} for k in range(n)}
    good = {i: k % 3 != 0 for k, i in enumerate(questions)}
    records = [{"id": i, "answer": f"It is port {(8000 if good[i] else 9000) + k}."} for k, i in enumerate(questions)]

    def llm(items):
        return [Verdict(True, "", 0.3 if " 9" in it.answer else 0.9) for it in items]

    judges = {"llm": llm, "token_f1": f1_judge(0.5)}
    ok = {"llm": {"status": "ok"}, "token_f1": {"status": "ok"}}
    judgments = {"c": {"status": "ok", "reason": None, "judges": ok,
                       "verdicts": judge_answers(records, questions, judges).rows()}}
    grades = [Grade(answer_sha256(r["answer"]), "c", "t", r["id"], "", "correct" if good[r["id"]] else "incorrect")
              for r in records]
    answer_rows = [{"config": "c", "id": i, "slice": "main", "answerable": 1, "refusal": 0, "relevant_in_prompt": 1}
                   for i in questions]
    retrieval_rows = [{"config": "c", "id": i, "answerable": 1, "top_score": 0.5} for i in questions]
    canaried = sorted(questions)[:6]
    checks = {"judges": ok, "canaries": {"kinds": list(CANARY_KINDS), "questions": canaried,
                                         "items": canary_rows(canaried, questions, judges)},
              "length": {"status": "unavailable", "reason": "no llm"}, "self_preference": None}
    return answer_rows, retrieval_rows, judgments, grades, checks


def test_the_combined_judge_is_canary_tested_and_rejects_a_restated_question():
    import copy

    from rag_ablation.evaluation.judges.judge_eval import canary_file

    answer_rows, retrieval_rows, judgments, grades, checks = restated_fixture()
    repeated = next(it for it in checks["canaries"]["items"] if it["kind"] == "question_repeated")
    assert repeated["score_token_f1"] == pytest.approx(8 / 13) and repeated["score_llm"] == 0.9
    assert (repeated["new_f1"], repeated["question_overlap"]) == (0.0, 1.0)

    def run(judgments, checks):
        return evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments, checks=checks,
                        grades=grades, judges=["llm", "token_f1"], settings=FAST, threshold_folds=4)[1]

    def accepted(detail):
        return {k: v["accepted_count"] for k, v in detail["canaries"]["combined"].items()}

    # the old combined judge: judge files and canaries without answer features, the scores alone
    old_j, old_c = copy.deepcopy(judgments), copy.deepcopy(checks)
    for r in old_j["c"]["verdicts"]:
        del r["features"]
    for it in old_c["canaries"]["items"]:
        del it["new_f1"], it["question_overlap"]
    old = run(old_j, old_c)
    assert old["scores"]["combined"]["inputs"] == ["llm", "token_f1"]
    assert old["scores"]["combined"]["features_note"].startswith("no answer features on 24 of 24 answers")
    assert old["scores"]["combined"]["crossfit"]["kappa"]["estimate"] == 1.0  # it agrees with every grade...
    assert accepted(old) == {"dummy_yes": 6, "dummy_sure": 6, "question_repeated": 6, "empty": 6,
                             "padded_reference": 6, "paraphrased_reference": 6}  # ...and accepts every echo
    assert {"judge": "combined", "kind": "question_repeated", "accepted": 1.0, "accepted_count": 6,
            "n": 6} in old["canary_flags"]

    new = run(judgments, checks)
    c = new["scores"]["combined"]
    assert c["inputs"] == ["llm", "token_f1", "new_f1", "question_overlap"] and c["veto"] == "question_overlap"
    assert "features_note" not in c and c["crossfit"]["kappa"]["estimate"] == 1.0
    assert accepted(new) == {"dummy_yes": 6, "dummy_sure": 6, "question_repeated": 0, "empty": 0,
                             "padded_reference": 6, "paraphrased_reference": 6}
    assert new["canaries"]["combined"]["question_repeated"]["n"] == 6
    # the flags name every judge, combined included: the stand-in llm still lifts "Yes." over the line
    assert [(f["judge"], f["kind"]) for f in new["canary_flags"]] == [
        ("llm", "dummy_yes"), ("llm", "dummy_sure"), ("llm", "question_repeated"), ("llm", "empty"),
        ("token_f1", "question_repeated"), ("combined", "dummy_yes"), ("combined", "dummy_sure")]
    text = render_answers(new, configs=["c"], judges=["llm", "token_f1"], confidence=0.95)
    assert "| `combined` | question_repeated | reject | 0.0%" in text
    assert "**Warning:** `combined` accepts `dummy_yes` canaries (6 of 6, 100.0%)" in text
    # PPI++ usefulness (Mani et al.): 24 grades, the split-half check labels 12, level 1/sqrt(10)
    acc = new["configs"]["c"]["accuracy"]
    assert acc["llm"]["usefulness"]["words"] == ("no: the judge's prediction (or the grades) never varies on the "
                                                 "graded answers")  # its one word accepts all 24
    by_score = new["configs"]["c"]["score_accuracy"]
    assert by_score["llm"]["usefulness"]["correlation"] == pytest.approx(1.0)  # 0.9 exactly for the correct ones
    assert by_score["llm"]["usefulness"]["words"] == "yes: |r| 1.00 > 1/sqrt(n-2) = 0.32 at n = 12"
    assert by_score["combined"]["usefulness"]["n"] == 12
    assert "| `c` | `llm` |" in text and "never varies on the graded answers |" in text
    assert "arXiv:2505.20178" in text
    rows, columns = canary_file(checks)
    assert columns[-2:] == ["new_f1", "question_overlap"]
    assert (rows[2]["kind"], rows[2]["new_f1"], rows[2]["question_overlap"]) == ("question_repeated", "0.000000",
                                                                                 "1.000000")


def test_calibration_uses_the_adjudicated_grade_and_the_report_shows_the_graders_beside_the_judges():
    """q1 is graded incorrect by t, correct by a second grader, and adjudicated correct: the judge
    (correct everywhere) is calibrated against the adjudicated grade, so q1 is no false accept."""
    answer_rows, retrieval_rows, judgments, grades = fixture()
    q1 = next(g for g in grades if g.id == "q1")
    second = [Grade(g.answer_sha256, "c", "bo", g.id, "", "correct") for g in grades]
    adjudicated = Grade(q1.answer_sha256, "c", "dee", "q1", "settled", "correct", role="adjudicated")
    run = partial(evaluate, answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments, checks=None,
                  judges=["contains"], settings=SETTINGS)
    _, before, *_ = run(grades=[*grades, *second])
    assert before["calibration"]["contains"]["disagreements"]["false_accepts"] == ["c/q1", "c/q3"]
    metrics, detail, *_ = run(grades=[*grades, *second, adjudicated])
    assert detail["calibration"]["contains"]["disagreements"]["false_accepts"] == ["c/q3"]
    assert detail["grades"]["matching"] == 4
    g = detail["graders"]
    assert g["overall"]["n"] == 4 and g["overall"]["table"] == {"both_correct": 2, "first_only": 0, "second_only": 2,
                                                               "both_incorrect": 0}
    assert [(r["id"], r["adjudicated"]) for r in g["disagreements"]] == [("q1", "correct"), ("q3", None)]
    assert metrics["graders"]["overall"]["n"] == 4
    text = render_answers(detail, configs=["c"], judges=["contains"], confidence=0.95)
    assert "| second grader (the ceiling) | 4 graded by both |" in text and "| 2 / 2 / 0 / 0 |" in text
    assert "### A second grader: the ceiling" in text and "4 answers are graded blind by two graders (bo, t)" in text
    assert "Disagreements to adjudicate (1 of 2 settled" in text
    assert "| `c` | `q3` | incorrect by t | correct by bo | not yet |" in text


def test_without_a_second_grader_the_report_says_how_to_add_one_in_one_line():
    answer_rows, retrieval_rows, judgments, grades = fixture()
    _, detail, *_ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments, checks=None,
                             grades=grades, judges=["contains"], settings=SETTINGS)
    text = render_answers(detail, configs=["c"], judges=["contains"], confidence=0.95)
    lines = [line for line in text.splitlines() if "second grader" in line.lower()]
    assert lines == ["Second grader: no answer is graded by a second grader: a second person grades blind with "
                     "`rag-ablation grade --second-pass --grader NAME` (or the workbench's Second grader form), and "
                     "the report then shows how far two graders agree, the ceiling of every judge's kappa."]
    assert "the ceiling |" not in text


def test_support_is_calibrated_on_hand_support_grades_and_splits_the_two_by_two():
    """The two-config fixture with hand support grades (supported when k is even; partly or not
    otherwise), a lexical support that separates them and a P(SUPPORTED) that does not (0.5
    everywhere), one P(SUPPORTED) for an older answer text (not used), and two canaries per config:
    support is calibrated on the 48 grades, lexical support is the primary scorer, it rejects the
    unrelated copies and accepts the shown ones, and the retrieved-by-correct table splits the
    correct answers by support."""
    from dataclasses import replace

    answer_rows, retrieval_rows, judgments, grades = two_config_fixture()
    grades = [replace(g, support="supported" if int(g.id[1:]) % 2 == 0 else "partly" if int(g.id[1:]) % 4 == 1
                      else "not") for g in grades]
    for r in answer_rows:
        k = int(r["id"][1:])
        r["lexical_support"] = (0.9 if k % 2 == 0 else 0.3) + k / 1000
    support = {c: {"status": "ok", "answers": [{"id": v["id"], "p_supported": 0.5,
                                                "answer_sha256": "0" * 64 if v["id"] == "q05" else v["answer_sha256"]}
                                               for v in judgments[c]["verdicts"]],
                   "canaries": [{"kind": "unrelated_copy", "lexical_support": 0.1, "p_supported": 0.5},
                                {"kind": "shown_copy", "lexical_support": 1.0, "p_supported": 0.5}]}
               for c in judgments}
    metrics, detail, _, _, _ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments,
                                        checks=None, grades=grades, judges=["llm", "contains"], settings=SETTINGS,
                                        threshold_folds=4, support=support)
    s = detail["support"]
    assert s["status"] == "ok" and s["levels"] == {"supported": 24, "partly": 12, "not": 12}
    lexical, llm = s["calibration"]["lexical_support"], s["calibration"]["llm_support"]
    assert (lexical["n"], lexical["auc"]["estimate"], lexical["kappa"]["estimate"]) == (48, 1.0, 1.0)
    assert (llm["n"], llm["unscored"], llm["auc"]["estimate"]) == (46, 2, 0.5), "q05's score is for another text"
    assert s["primary"] == "lexical_support" and s["source"] == "hand grades, else lexical_support"
    rates = s["canaries"]["scorers"]["lexical_support"]
    assert (rates["unrelated_copy"]["accepted_count"], rates["shown_copy"]["accepted_count"]) == (0, 2)
    assert not [f for f in s["canaries"]["flags"] if f["scorer"] == "lexical_support"]
    dense = detail["configs"]["dense"]["support"]
    assert dense["hand"]["estimate"] == 0.5 and dense["hand"]["n"] == 24
    split = dense["split"]["hand"]
    assert split["retrieved"] == {"correct_supported": sum(k % 3 != 0 and k % 2 == 0 for k in range(24)),
                                  "correct_unsupported": sum(k % 3 != 0 and k % 2 == 1 for k in range(24)),
                                  "correct_support_unknown": 0, "wrong": sum(k % 3 == 0 for k in range(24))}
    assert metrics["support"]["calibration"]["lexical_support"]["auc"]["estimate"] == 1.0
    text = render_answers(detail, configs=["dense", "hybrid"], judges=["llm", "contains"], confidence=0.95)
    assert "## Support (groundedness)" in text and "24 supported, 12 partly, 12 not" in text
    assert "| yes | 8 | 8 | 0 | 8 |" in text and "support from hand grades, else lexical_support" in text


def test_without_support_grades_the_support_section_is_one_paragraph():
    answer_rows, retrieval_rows, judgments, grades = two_config_fixture()
    _, detail, _, _, _ = evaluate(answer_rows=answer_rows, retrieval_rows=retrieval_rows, judgments=judgments,
                                  checks=None, grades=grades, judges=["llm", "contains"], settings=SETTINGS,
                                  threshold_folds=4)
    assert detail["support"]["status"] == "no grades" and detail["support"]["primary"] is None
    text = render_answers(detail, configs=["dense", "hybrid"], judges=["llm", "contains"], confidence=0.95)
    section = text.split("## Support (groundedness)")[1].split("\n## ")[0].strip()
    assert section.startswith("No hand support grades") and "\n" not in section
    assert "`rag-ablation grade --support`" in section


def test_a_support_model_not_asked_is_named_with_its_reason_not_counted():
    """``calibration_rows``: a scorer never scored (the model was not asked) reads "none" graded
    answers scored and its reason; one with some scores keeps its counts."""
    from rag_ablation.evaluation.report.support_report import calibration_rows

    block = {"calibration": {"llm_support": {"status": "unavailable", "reason": "support.ask_llm is false",
                                             "n": 0, "unscored": 154},
                             "lexical_support": {"status": "unavailable", "reason": "3 scored support grade(s), "
                                                 "fewer than 10", "n": 3, "unscored": 2}}}
    assert calibration_rows(block) == [["`llm_support`", "none", "n/a", "n/a", "", "support.ask_llm is false"],
                                       ["`lexical_support`", "3 (2 without a score)", "n/a", "n/a", "",
                                        "3 scored support grade(s), fewer than 10"]]
