"""TREC export: the file format, the checks, and agreement with ``ir_measures``.

The agreement tests score the exported run and qrels files with ``ir_measures`` (Success@1/5/10,
RR@10) and compare, question by question, with the project's own measures
(``rag_ablation.evaluation.scoring.measures``: hit@k, RR@10 of the stored ranking). Tied scores are
where the two can part: trec_eval and ``ir_measures`` ignore the rank column and the line order
and re-sort by score, breaking ties by docno (pytrec_eval descending, the msmarco provider used
for RR@10 ascending), while the project scores the stored order. Only strictly decreasing written
scores (``strict_scores=True``) make every reader see the stored order; ``test_ties_*`` shows
both the disagreement without them and the agreement with them.

The repository-data tests use the pipeline's own outputs (``data/build/runs/<config>.json`` and
``data/build/labels/<chunking>.json``, DVC outputs) and skip, saying so, when they are absent.
"""
from __future__ import annotations

import json
from itertools import pairwise

import ir_measures
import numpy as np
import pytest
from conftest import ROOT
from ir_measures import RR, Success

from rag_ablation.core.errors import InvalidData, UnknownName
from rag_ablation.evaluation.scoring.measures import MRR_K, RECALL_KS, first_relevant_rank, hit_at, rr_at
from rag_ablation.evaluation.scoring.trec import qrels_lines, rankings_from_run, run_lines, write_qrels, write_run

MEASURES = [*(Success @ k for k in RECALL_KS), RR @ MRR_K]


def project_measures(rankings, relevant) -> dict[str, dict[str, float]]:
    """Per question with a relevant set: the project's hit@k and RR@10 of the stored order."""
    out = {}
    for qid, rel in relevant.items():
        ranking = [x["chunk"] if isinstance(x, dict) else x[0] for x in rankings.get(qid, [])]
        rank = first_relevant_rank(ranking, rel)
        out[qid] = {**{str(Success @ k): hit_at(rank, k) for k in RECALL_KS}, str(RR @ MRR_K): rr_at(rank, MRR_K)}
    return out


def trec_measures(tmp_path, config, rankings, relevant, **kw) -> dict[str, dict[str, float]]:
    """The same measures, by ``ir_measures`` on the exported files."""
    write_run(tmp_path / "run.txt", config, rankings, **kw)
    write_qrels(tmp_path / "qrels.txt", relevant)
    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt")))
    run = list(ir_measures.read_trec_run(str(tmp_path / "run.txt")))
    out: dict[str, dict[str, float]] = {}
    for m in ir_measures.iter_calc(MEASURES, qrels, run):
        out.setdefault(m.query_id, {})[str(m.measure)] = m.value
    return out


def test_run_and_qrels_lines():
    rankings = {"q1": [{"chunk": "a.md#0", "score": 0.9}, {"chunk": "b.md#2", "score": 0.5}], "q2": [("c.md#1", 3)],
                "q3": []}
    assert run_lines("dense", rankings) == [
        "q1 Q0 a.md#0 1 0.9 dense",
        "q1 Q0 b.md#2 2 0.5 dense",
        "q2 Q0 c.md#1 1 3.0 dense",
    ]
    assert qrels_lines({"q1": ["b.md#2", "a.md#0"], "q2": []}) == ["q1 0 b.md#2 1", "q1 0 a.md#0 1"]


def test_strict_scores_break_ties_in_rank_order():
    ranking = {"q": [("b", 0.5), ("a", 0.5), ("c", 0.5), ("d", 0.7)]}  # a reranked head above a tail, say
    lines = [line.split() for line in run_lines("t", ranking)]
    assert [(x[2], x[3]) for x in lines] == [("b", "1"), ("a", "2"), ("c", "3"), ("d", "4")]
    scores = [float(x[4]) for x in lines]
    assert scores[0] == 0.5 and all(s > t for s, t in pairwise(scores))
    assert scores[1] == float(np.nextafter(np.float32(0.5), np.float32(0)))  # one 32-bit unit below
    assert all(np.float32(s) > np.float32(t) for s, t in pairwise(scores))  # distinct in trec_eval too
    assert [x[4] for x in map(str.split, run_lines("t", ranking, strict_scores=False))] == ["0.5", "0.5", "0.5", "0.7"]


def test_scores_equal_in_32_bits_count_as_ties():
    """trec_eval holds scores as 32-bit floats, where these two are equal."""
    lines = run_lines("t", {"q": [("a", 0.5), ("b", 0.5 - 1e-9), ("c", 0.25)]})
    assert [x.split()[4] for x in lines][::2] == ["0.5", "0.25"]  # a clear gap: unchanged
    assert np.float32(float(lines[1].split()[4])) < np.float32(0.5)


def test_order_by_score_then_chunk_id():
    ranking = {"q": [("b", 0.5), ("d", 0.7), ("a", 0.5), ("c", 0.1)]}
    assert [x.split()[2] for x in run_lines("t", ranking, order="score")] == ["d", "a", "b", "c"]
    assert [x.split()[3] for x in run_lines("t", ranking, order="score")] == ["1", "2", "3", "4"]


def test_ties_tiny_case_where_trec_tie_break_differs(tmp_path):
    """Chunks ``a`` (relevant) and ``b`` tie; the stored ranking puts ``a`` first. Written as is,
    pytrec_eval (trec_eval's rule: docno descending) puts ``b`` first, so Success@1 = 0, while the
    msmarco provider (docno ascending) gives RR@10 = 1 in the same call. Strict scores agree."""
    rankings, relevant = {"q": [("a", 0.5), ("b", 0.5)]}, {"q": ["a"]}
    ours = project_measures(rankings, relevant)
    assert ours["q"]["Success@1"] == 1.0
    loose = trec_measures(tmp_path, "t", rankings, relevant, strict_scores=False)
    assert loose["q"]["Success@1"] == 0.0 and loose["q"]["RR@10"] == 1.0
    assert trec_measures(tmp_path, "t", rankings, relevant) == ours


@pytest.mark.bad_input
@pytest.mark.parametrize("call, expected", [
    (lambda: run_lines("t", {"q": [("a", 1.0), ("b", 0.5), ("a", 0.2)]}), "chunk 'a' appears twice"),
    (lambda: qrels_lines({"q": ["a", "a"]}), "relevant chunk 'a' is listed twice"),
    (lambda: run_lines("t", {"q": [("my doc.md#0", 1.0)]}), "chunk id 'my doc.md#0' cannot be written"),
    (lambda: run_lines("my config", {"q": [("a", 1.0)]}), "run tag .* cannot be written"),
    (lambda: qrels_lines({"q 1": ["a"]}), "question id 'q 1' cannot be written"),
    (lambda: run_lines("t", {"q": [("a", float("nan"))]}), "needs finite scores"),
    (lambda: run_lines("t", {"q": [("a", 1e39)]}), "within 32-bit float range"),
    (lambda: rankings_from_run({"status": "unavailable", "reason": "no model", "questions": []}), "only an 'ok' run"),
    (lambda: rankings_from_run({"questions": [{"id": "q", "ranking": []}] * 2}), "names question 'q' twice"),
])
def test_bad_input(call, expected):
    with pytest.raises(InvalidData, match=expected):
        call()


@pytest.mark.bad_input
def test_unknown_order():
    with pytest.raises(UnknownName, match="expected one of: score, stored"):
        run_lines("t", {}, order="rank")


def repository_run(config: str):
    run_path = ROOT / "data" / "build" / "runs" / f"{config}.json"
    if not run_path.is_file():
        pytest.skip(f"{run_path.relative_to(ROOT)} is absent (a DVC output: `dvc repro retrieve@{config}` writes it)")
    run = json.loads(run_path.read_text())
    if run.get("status") != "ok":
        pytest.skip(f"run {config} is {run.get('status')}: {run.get('reason')}")
    labels_path = ROOT / "data" / "build" / "labels" / f"{run['config']['chunking']}.json"
    if not labels_path.is_file():
        pytest.skip(f"{labels_path.relative_to(ROOT)} is absent (a DVC output of the labels stage)")
    relevant = json.loads(labels_path.read_text())["relevant"]
    return rankings_from_run(run), relevant


@pytest.mark.parametrize("config", ["dense", "hybrid"])
def test_repository_runs_score_the_same_with_ir_measures(tmp_path, config):
    """The committed pipeline's run, exported, scores per question exactly as the project scores
    it. ``hybrid`` (RRF) has real ties: 25 of 172 questions held equal fused scores when this was
    written, which RRF orders by best rank; written without strict scores, 8 of the 154 scored
    questions then got other measures from ``ir_measures``. Only strict scores carry the order."""
    rankings, relevant = repository_run(config)
    scored = {q: rel for q, rel in relevant.items() if rel}  # a question with no relevant chunk has no qrels
    ours = project_measures(rankings, scored)
    assert len(ours) > 100
    assert trec_measures(tmp_path, config, rankings, scored) == ours


def test_ties_on_repository_data(tmp_path):
    """Every score of the dense run rounded to one decimal: many ties, the stored order kept.
    Written unchanged, ``ir_measures`` re-sorts the ties by docno and disagrees with the project
    on some questions; with strict scores it agrees on all."""
    rankings, relevant = repository_run("dense")
    tied = {q: [{"chunk": x["chunk"], "score": round(x["score"], 1)} for x in r] for q, r in rankings.items()}
    assert sum(len({x["score"] for x in r}) < len(r) for r in tied.values()) > 50  # ties in most questions
    scored = {q: rel for q, rel in relevant.items() if rel}
    ours = project_measures(tied, scored)
    loose = trec_measures(tmp_path, "dense", tied, scored, strict_scores=False)
    assert sum(loose[q] != ours[q] for q in ours) > 0
    assert trec_measures(tmp_path, "dense", tied, scored) == ours


# ---------------------------------------------------------------------------------------------
# graded export: grade-0 rows kept, original ids, the run's depth


def test_graded_qrels_keep_grade_0_rows_and_ir_measures_agrees(tmp_path):
    from rag_ablation.evaluation.scoring.graded import Qrel, ndcg_at
    from rag_ablation.evaluation.scoring.trec import document_rankings, graded_qrels_lines, original_ids

    qrels = {"q1": Qrel({"t/a_b-1.md": 2, "t/c.md": 0, "t/d.md": 1}), "q2": Qrel({"t/c.md": 1, "t/d.md": 0})}
    rankings = {"q1": [("t/c.md#0", 3.0), ("t/d.md#1", 2.0), ("t/a_b-1.md#0", 1.0)],
                "q2": [("t/d.md#0", 2.0), ("t/c.md#2", 1.0)]}
    ids = {"t/a_b-1.md": "a/b:1", "t/c.md": "C", "t/d.md": "D"}
    docs, renamed = original_ids(document_rankings(rankings, qrels), qrels, ids)
    lines = graded_qrels_lines(renamed)
    assert lines == ["q1 0 a/b:1 2", "q1 0 D 1", "q1 0 C 0", "q2 0 C 1", "q2 0 D 0"]  # grade 0 kept
    write_run(tmp_path / "run.txt", "t", docs)
    (tmp_path / "qrels.txt").write_text("".join(line + "\n" for line in lines))
    got = {m.query_id: m.value for m in ir_measures.iter_calc(
        [ir_measures.nDCG @ 10], ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt")),
        ir_measures.read_trec_run(str(tmp_path / "run.txt")))}
    ours = {q: ndcg_at([x["chunk"] for x in d], renamed[q].grades) for q, d in docs.items()}
    assert got == pytest.approx(ours, abs=1e-9) and 0 < ours["q1"] < 1


@pytest.mark.bad_input
def test_original_ids_name_the_documents_the_map_lacks():
    from rag_ablation.evaluation.scoring.graded import Qrel
    from rag_ablation.evaluation.scoring.trec import original_ids

    with pytest.raises(InvalidData, match=r"2 document\(s\) of the run or qrels have no original id in the map "
                                          r"\(t/x.md, t/y.md\)"):
        original_ids({"q": [{"chunk": "t/x.md", "score": 1.0}]}, {"q": Qrel({"t/y.md": 1})}, {})


def test_run_depth_is_the_configs_k_else_the_longest_ranking():
    from rag_ablation.evaluation.scoring.trec import run_depth

    assert run_depth({"k": 10}, {"q": [("a", 1.0)]}) == 10
    assert run_depth({}, {"q": [("a", 1.0), ("b", 0.5)], "r": []}) == 2
    assert run_depth({"k": True}, {}) == 0
