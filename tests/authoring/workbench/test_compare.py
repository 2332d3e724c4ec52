"""compare: hand-written against model-drafted questions, from the files (`rag-ablation label --compare`).

The expected numbers are written as the formulas they come from: shares of counts, means of
per-question values, Wilson bounds from ``wilson_interval``; the intervals' own correctness is
``rag_ablation.evaluation.statistics``'s tests' business.
"""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from rag_ablation.authoring.workbench.compare import (SETS, compare_sets, default_pair, overlaps, split_rows,
                                                      verdict_counts)
from rag_ablation.commands.label import build_parser, run
from rag_ablation.core.errors import UserError
from rag_ablation.data.corpus import load_corpus
from rag_ablation.data.question_stats import content_words
from rag_ablation.data.questions import Question
from rag_ablation.evaluation.scoring.scores import RETRIEVAL_FIELDS, write_scores
from rag_ablation.evaluation.statistics.inference import wilson_interval

FERRY = "ferries/operations.md"


def question(i, text, span, slice_="main"):
    return Question(id=f"{slice_}-ferries-{i:02d}", question=text, doc=FERRY, span=span, answer="x", slice=slice_,
                    track="ferries")


HAND = [question(1, "harbour ferry leaves north pier", "The harbour ferry leaves the north pier every forty minutes"),
        question(2, "bicycles board ramp zebra", "Passengers with\nbicycles board first")]
"""Overlaps 4/4 and 3/4 ("zebra" is not in the passage): content words minus stopwords."""
GENERATED = [question(3, "At what gust is a sailing called off?", "the skipper may cancel a crossing", "generated")]
"""Overlap 0/3: of its content words "gust", "sailing", "called", none is in the passage."""


def row(config, q_id, slice_, hit):
    return {"config": config, "id": q_id, "slice": slice_, "doc": FERRY, "answerable": 1,
            "first_relevant_rank": 1 if hit else None, "hit_at_1": hit, "hit_at_5": hit, "hit_at_10": hit,
            "rr_at_10": float(hit), "n_relevant": 1, "top_score": 1.0}


def rows_for(hits):
    """Score rows from {config: {set: [0/1, ...]}}: ids main-NN on the hand-written set,
    generated-NN on the generated one."""
    out = []
    for config, sets in hits.items():
        for s, values in sets.items():
            slice_ = "generated" if s == SETS[1] else "main"
            out += [row(config, f"{slice_}-{n:02d}", slice_, h) for n, h in enumerate(values)]
    return out


def events(*verdicts):
    return [{"kind": "draft", "passage": f"p{i}", "verdict": v} for i, v in enumerate(verdicts)]


def test_verdicts_count_the_last_of_each_passage():
    log = [*events("answerable", "not_answered", "partly"), {"kind": "draft", "passage": "p1", "verdict": "answerable"},
           {"kind": "question", "passage": "p9", "verdict": "answerable"}, {"kind": "draft", "passage": "p7"}]
    assert verdict_counts(log) == {"answerable": 2, "partly": 1, "not_answered": 0}


def test_the_comparison_numbers(project):
    proj, params = project
    docs = load_corpus(proj.corpus)
    settings = replace(params.stats, resamples=500)
    assert [len(content_words(q.question)) for q in HAND + GENERATED] == [5, 4, 3]
    assert overlaps(HAND, docs) == [1.0, 3 / 4] and overlaps(GENERATED, docs) == [0.0]
    hits = {"bm25": {SETS[0]: [1, 1, 1, 0], SETS[1]: [0, 0, 1]}, "dense": {SETS[0]: [1, 0, 0, 0], SETS[1]: [1, 1, 1]},
            "hybrid": {SETS[0]: [1, 1, 1, 1], SETS[1]: []}}
    rows = rows_for(hits)
    assert {s: len(r) for s, r in split_rows(rows).items()} == {SETS[0]: 12, SETS[1]: 6}
    result = compare_sets(hand=HAND, generated=GENERATED, documents=docs,
                          events=events("answerable", "answerable", "answerable", "partly", "not_answered"),
                          rows=rows, settings=settings, pair=("bm25", "dense"))
    assert result.verdicts == {"answerable": 3, "partly": 1, "not_answered": 1}
    assert result.answerable == wilson_interval(3, 3 + 1 + 1, confidence=settings.confidence)
    assert result.overlap[SETS[0]].estimate == pytest.approx((1 + 3 / 4) / 2) and result.overlap[SETS[0]].n == 2
    assert result.overlap[SETS[1]].estimate == 0.0
    for config, sets in hits.items():
        for s, values in sets.items():
            got = result.recall[config][s]
            if values:
                assert got.estimate == pytest.approx(sum(values) / len(values)) and got.n == len(values)
                assert got.low <= got.estimate <= got.high
            else:
                assert got is None
    hand, gen = result.ordering
    assert hand.delta == pytest.approx(1 / 4 - 3 / 4) and gen.delta == pytest.approx(3 / 3 - 1 / 3)
    assert (hand.change.binary.counts.fixed, hand.change.binary.counts.broken) == (0, 2)
    assert hand.change.binary.family == 2, "the two sets' sign tests are one Holm family"
    assert result.ordering_flips is True and result.verdict_flips is False, "4 and 3 questions decide nothing"
    text = "\n".join(result.lines())
    assert "answerable 3 = 60%" in text and "the ordering flips between the sets; the verdict does not flip" in text
    assert "hybrid" in text and "no questions" in text


def test_a_real_difference_on_each_set_in_opposite_directions_flips_the_verdict(project):
    proj, params = project
    settings = replace(params.stats, resamples=500)
    hits = {"bm25": {SETS[0]: [0] * 30, SETS[1]: [1] * 30}, "dense": {SETS[0]: [1] * 30, SETS[1]: [0] * 30}}
    result = compare_sets(hand=[], generated=[], documents=[], events=[], rows=rows_for(hits), settings=settings,
                          pair=("bm25", "dense"))
    assert [o.delta for o in result.ordering] == [1.0, -1.0] and all(o.real for o in result.ordering)
    assert result.ordering_flips and result.verdict_flips
    assert result.answerable is None and result.overlap == {SETS[0]: None, SETS[1]: None}
    text = "\n".join(result.lines())
    assert "dense ahead (a real difference)" in text and "bm25 ahead (a real difference)" in text
    assert "drafts judged: none yet" in text


def test_without_generated_scores_the_recall_part_says_why(project):
    proj, params = project
    rows = rows_for({"bm25": {SETS[0]: [1, 0]}, "dense": {SETS[0]: [1, 1]}})
    result = compare_sets(hand=HAND, generated=GENERATED, documents=load_corpus(proj.corpus), events=events("partly"),
                          rows=rows, settings=replace(params.stats, resamples=100), pair=("bm25", "dense"))
    assert result.ordering[1].change is None and result.ordering_flips is None
    text = "\n".join(result.lines())
    assert "no generated question is scored: run the pipeline on a question file holding both sets" in text
    assert "the ordering cannot be compared" in text


def test_the_default_pair_is_the_first_plain_bm25_config_and_the_dense_baseline(project):
    _, params = project
    assert default_pair(params) == ("bm25", "dense")


def test_label_compare_prints_it_from_the_files(project, capsys):
    proj, params = project
    for q in HAND:
        proj.questions.open("a", encoding="utf-8").write(json.dumps(q.to_json()) + "\n")
    proj.drafts.write_text(json.dumps(GENERATED[0].to_json()) + "\n", encoding="utf-8")
    proj.drafts.with_suffix(".workbench-log").write_text(
        "".join(json.dumps(e) + "\n" for e in events("answerable", "not_answered")), encoding="utf-8")
    write_scores(proj.scores, rows_for({"bm25": {SETS[0]: [1, 1], SETS[1]: [0]}, "dense": {SETS[0]: [0, 1], SETS[1]: [1]}}),
                 RETRIEVAL_FIELDS)
    args = build_parser("rag-ablation label").parse_args(
        ["--compare", "--corpus", str(proj.corpus), "--questions", "data/questions/tiny.jsonl", "--audit",
         "data/labels/audit.jsonl", "--scores", str(proj.scores)])
    run(args)
    out = capsys.readouterr().out
    assert "drafts: data/questions/generated.jsonl" in out
    assert "answerable 1 = 50%" in out and "not answered by their passage 1" in out
    assert "dense against bm25" in out and "the ordering flips between the sets" in out


@pytest.mark.bad_input
def test_label_compare_refuses_what_it_cannot_compare(project):
    proj, params = project
    base = ["--compare", "--corpus", str(proj.corpus), "--questions", "data/questions/tiny.jsonl", "--audit",
            "data/labels/audit.jsonl"]
    parse = build_parser("rag-ablation label").parse_args
    with pytest.raises(UserError, match="no scores file .*: run `dvc repro` on a question file holding both sets"):
        run(parse([*base, "--scores", "metrics/none.csv"]))
    write_scores(proj.scores, rows_for({"bm25": {SETS[0]: [1]}}), RETRIEVAL_FIELDS)
    with pytest.raises(UserError, match="--pair: 'nope' not a retrieval config; expected some of:"):
        run(parse([*base, "--scores", str(proj.scores), "--pair", "bm25", "nope"]))
    with pytest.raises(UserError, match="is the hand-written question file: model-drafted questions go to a file"):
        run(parse([*base, "--generated", "data/questions/tiny.jsonl"]))
    retrieval = {n: c for n, c in params.retrieval.items() if c.method != "bm25"}
    with pytest.raises(UserError, match="the ordering needs a BM25 and a dense retrieval config"):
        default_pair(replace(params, retrieval=retrieval))
