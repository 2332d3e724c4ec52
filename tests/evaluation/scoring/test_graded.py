"""Graded qrels (BEIR): document rankings from chunk rankings, nDCG@10 and recall@100 by their
formulas, the scores file's graded columns, and agreement with ``ir_measures`` (pytrec_eval's
``ndcg_cut`` and ``recall``) on the graded TREC export."""
from __future__ import annotations

import json
import math

import ir_measures
import numpy as np
import pytest
from ir_measures import R, nDCG

from rag_ablation.core.errors import InvalidData
from rag_ablation.data.questions import Question
from rag_ablation.evaluation.scoring.graded import (
    GRADED_COLUMNS,
    Qrel,
    document_ranking,
    dumps_qrels,
    graded_scores,
    ndcg_at,
    read_qrels,
    recall_at,
)
from rag_ablation.evaluation.scoring.scores import parse_scores, retrieval_fields, score_run, to_csv
from rag_ablation.evaluation.scoring.trec import document_rankings, graded_qrels_lines, run_lines


def test_document_ranking_keeps_each_document_at_its_first_chunk_and_drops_excluded():
    chunks = ["b.md#0", "a.md#2", "b.md#1", "c.md#0", "a.md#0"]
    assert document_ranking(chunks) == ["b.md", "a.md", "c.md"]
    assert document_ranking(chunks, frozenset({"a.md"})) == ["b.md", "c.md"]


def test_ndcg_by_its_formula():
    grades = {"a": 2, "b": 1, "c": 1}
    # ranks: b (gain 1) at 1, x (0) at 2, a (2) at 3
    dcg = 1 / math.log2(2) + 2 / math.log2(4)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(["b", "x", "a"], grades) == pytest.approx(dcg / ideal, abs=1e-15)
    assert ndcg_at(["a", "b", "c"], grades) == pytest.approx(1.0)
    assert ndcg_at(["x"] * 10 + ["a"], grades) == 0.0, "a document at rank 11 is past the cut"
    assert ndcg_at(["a"], {}) == 0.0, "nothing graded above 0: 0, as the project's other measures"


def test_ndcg_ideal_is_cut_at_k():
    grades = {f"d{i}": 1 for i in range(12)}
    ranking = [f"d{i}" for i in range(10)]
    assert ndcg_at(ranking, grades) == pytest.approx(1.0), "12 relevant, 10 found in the top 10: ideal"


def test_recall_at_k_by_its_formula():
    grades = {"a": 2, "b": 1, "c": 1}
    assert recall_at(["a", "x", "c"], grades, k=2) == pytest.approx(1 / 3)
    assert recall_at(["a", "x", "c"], grades, k=100) == pytest.approx(2 / 3)
    assert recall_at(["a"], {}) == 0.0


def test_recall_at_100_is_unavailable_for_a_shallow_ranking():
    q = Qrel({"a.md": 1})
    assert graded_scores(["a.md#0"], q, depth=10)["recall_at_100"] is None
    assert graded_scores(["a.md#0"], q, depth=100)["recall_at_100"] == 1.0


def test_qrels_file_round_trip(tmp_path):
    qrels = {"q1": Qrel({"a.md": 2, "b.md": 1, "z.md": 0}, frozenset({"q1.md"})), "q2": Qrel({"c.md": 1})}
    path = tmp_path / "qrels.jsonl"
    path.write_text(dumps_qrels(qrels))
    assert read_qrels(path) == qrels
    assert read_qrels(tmp_path / "absent.jsonl") == {}, "no file: a span-labelled data set"


@pytest.mark.bad_input
@pytest.mark.parametrize("line", ['{"id": "q", "gold": [{"doc": "a.md", "score": -1}]}',
                                  '{"id": "q", "gold": [{"doc": "a.md", "score": true}]}',
                                  '{"id": "q", "gold": [{"doc": "a.md", "score": 1}, {"doc": "a.md", "score": 2}]}',
                                  '{"id": "q"}', '[1, 2]', '{"id": "q", "gold": [], "exclude": "a.md"}'])
def test_a_malformed_qrels_line_is_refused_with_its_line(tmp_path, line):
    path = tmp_path / "qrels.jsonl"
    path.write_text('{"id": "ok", "gold": [{"doc": "a.md", "score": 1}]}\n' + line + "\n")
    with pytest.raises(InvalidData, match=r"qrels file .*qrels.jsonl: 1 problem\(s\).*\n  line 2"):
        read_qrels(path)


def _question(qid: str, doc: str) -> Question:
    return Question(id=qid, question=f"what about {qid}?", doc=doc, span="x" * 40, answer="-", slice="main", track="web")


def test_scores_of_a_graded_data_set_use_the_qrels():
    questions = [_question("q1", "a.md"), _question("q2", "c.md")]
    records = [{"id": "q1", "ranking": [{"chunk": "x.md#0", "score": 3.0}, {"chunk": "b.md#4", "score": 2.0},
                                        {"chunk": "a.md#1", "score": 1.0}]},
               {"id": "q2", "ranking": [{"chunk": "y.md#0", "score": 1.0}]}]
    qrels = {"q1": Qrel({"a.md": 2, "b.md": 1}), "q2": Qrel({"c.md": 1})}
    rows = score_run("dense", records, {"q1": ["a.md#1"], "q2": ["c.md#0"]}, questions, qrels=qrels, depth=10)
    r1, r2 = rows
    assert r1["first_relevant_rank"] == 2, "b.md is graded 1, so its chunk at rank 2 is relevant"
    assert r1["n_relevant"] == 2, "documents graded above 0"
    assert r1["ndcg_at_10"] == pytest.approx((1 / math.log2(3) + 2 / math.log2(4)) / (2 + 1 / math.log2(3)))
    assert r1["recall_at_100"] is None, "k = 10 < 100"
    assert (r2["hit_at_10"], r2["ndcg_at_10"]) == (0, 0.0)
    back = parse_scores(to_csv(rows, retrieval_fields(True)))
    assert back[0]["ndcg_at_10"] == pytest.approx(r1["ndcg_at_10"]) and back[0]["recall_at_100"] is None
    plain = score_run("dense", records, {"q1": ["a.md#1"], "q2": ["c.md#0"]}, questions)
    assert plain[0]["first_relevant_rank"] == 3 and not set(GRADED_COLUMNS) & set(plain[0])


def test_graded_export_equals_ir_measures_per_question(tmp_path):
    """Realistic BEIR shape: many judged documents per query, grades 1-2, several chunks per
    document, one excluded identical id; 60 queries; nDCG@10 and R@100 to 1e-9."""
    rng = np.random.default_rng(7)
    docs = [f"d{i}.md" for i in range(400)]
    rankings, qrels, ours = {}, {}, {}
    for n in range(60):
        qid = f"q{n}"
        judged = rng.choice(400, size=int(rng.integers(1, 40)), replace=False)
        grades = {docs[i]: int(rng.integers(1, 3)) for i in judged}
        exclude = frozenset({docs[int(rng.integers(400))]}) if n % 7 == 0 else frozenset()
        grades = {d: g for d, g in grades.items() if d not in exclude}
        if not grades:
            continue
        chunks = [f"{docs[int(i)]}#{int(rng.integers(3))}" for i in rng.integers(0, 400, size=150)]
        chunks = list(dict.fromkeys(chunks))
        scores = np.sort(rng.random(len(chunks)))[::-1]
        rankings[qid] = [{"chunk": c, "score": float(s)} for c, s in zip(chunks, scores)]
        qrels[qid] = Qrel(grades, exclude)
        ours[qid] = graded_scores(chunks, qrels[qid], depth=len(chunks))
    (tmp_path / "run.txt").write_text("\n".join(run_lines("dense", document_rankings(rankings, qrels))) + "\n")
    (tmp_path / "qrels.txt").write_text("\n".join(graded_qrels_lines(qrels)) + "\n")
    got: dict[str, dict[str, float]] = {}
    for m in ir_measures.iter_calc([nDCG @ 10, R @ 100], ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt")),
                                   ir_measures.read_trec_run(str(tmp_path / "run.txt"))):
        got.setdefault(m.query_id, {})[str(m.measure)] = m.value
    assert set(got) == set(ours) and len(ours) > 50
    for qid, mine in ours.items():
        assert got[qid]["nDCG@10"] == pytest.approx(mine["ndcg_at_10"], abs=1e-9), qid
        assert got[qid]["R@100"] == pytest.approx(mine["recall_at_100"], abs=1e-9), qid
    assert json.dumps(ours)  # plain floats
