"""`rag-ablation export-trec`: the repository's dense run and its labels exported and read back by
``ir_measures``; options on a hand-built run; and a labels file of another chunking, stale
labels, a missing file as one ``error:`` line with exit status 2.

The repository-data test uses the pipeline's outputs (``data/build/runs/dense.json`` and
``data/build/labels/<its chunking>.json``, DVC outputs) and skips, saying so, when they are absent.
"""
from __future__ import annotations

import json
from pathlib import Path

import ir_measures
import pytest
from conftest import ROOT
from ir_measures import RR, Success

from rag_ablation.evaluation.scoring.measures import MRR_K, first_relevant_rank, hit_at, rr_at
from rag_ablation.commands.main import main


def export(tmp_path: Path, run: Path, labels: Path, *extra: str) -> tuple[list[list[str]], list[list[str]]]:
    out_run, out_qrels = tmp_path / "out" / "run.txt", tmp_path / "out" / "qrels.txt"
    main(["export-trec", "--run", str(run), "--labels", str(labels), "--out-run", str(out_run),
          "--out-qrels", str(out_qrels), *extra])
    return ([line.split(" ") for line in out_run.read_text().splitlines()],
            [line.split(" ") for line in out_qrels.read_text().splitlines()])


def test_repository_dense_run_exports_and_ir_measures_reads_it(tmp_path, capsys):
    run_path = ROOT / "data" / "build" / "runs" / "dense.json"
    if not run_path.is_file():
        pytest.skip(f"{run_path.relative_to(ROOT)} is absent (a DVC output: `dvc repro retrieve@dense` writes it)")
    run = json.loads(run_path.read_text())
    if run.get("status") != "ok":
        pytest.skip(f"run dense is {run.get('status')}: {run.get('reason')}")
    labels_path = ROOT / "data" / "build" / "labels" / f"{run['config']['chunking']}.json"
    if not labels_path.is_file():
        pytest.skip(f"{labels_path.relative_to(ROOT)} is absent (a DVC output of the labels stage)")
    relevant = json.loads(labels_path.read_text())["relevant"]

    run_rows, qrels_rows = export(tmp_path, run_path, labels_path)
    assert len(run_rows) == sum(len(q["ranking"]) for q in run["questions"])
    assert len(qrels_rows) == sum(len(v) for v in relevant.values())
    assert all(len(r) == 6 and r[1] == "Q0" and r[5] == "dense" for r in run_rows)
    assert all(len(r) == 4 and r[1] == "0" and r[3] == "1" for r in qrels_rows)
    err = capsys.readouterr().err
    assert f"wrote {len(run_rows):,} run line(s) for {len(run['questions'])} question(s)" in err

    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "out" / "qrels.txt")))
    trec_run = list(ir_measures.read_trec_run(str(tmp_path / "out" / "run.txt")))
    assert len(qrels) == len(qrels_rows) and len(trec_run) == len(run_rows)
    scored = {q: rel for q, rel in relevant.items() if rel}
    got = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc([Success @ 1, RR @ MRR_K], qrels,
                                                                                 trec_run)}
    rankings = {q["id"]: [x["chunk"] for x in q["ranking"]] for q in run["questions"]}
    want = {}
    for q, rel in scored.items():
        rank = first_relevant_rank(rankings[q], rel)
        want[(q, str(Success @ 1))], want[(q, str(RR @ MRR_K))] = hit_at(rank, 1), rr_at(rank, MRR_K)
    assert got == want  # the stored order, as the project scores it


def tiny(tmp_path: Path, chunking: str = "base", labels_name: str = "base",
         relevant: dict | None = None) -> tuple[Path, Path]:
    run = {"status": "ok", "reason": None, "passages": {},
           "config": {"name": "dense_x", "chunking": chunking},
           "questions": [
               {"id": "q1", "slice": "main", "answerable": True,
                "ranking": [{"chunk": "a.md#0", "score": 0.5}, {"chunk": "b.md#1", "score": 0.9}]},
               {"id": "q2", "slice": "unanswerable", "answerable": False,
                "ranking": [{"chunk": "c.md#2", "score": 0.3}]},
               {"id": "q3", "slice": "main", "answerable": True, "ranking": [{"chunk": "a.md#0", "score": 0.7}]},
           ]}
    (tmp_path / "runs").mkdir(exist_ok=True)
    (tmp_path / "labels").mkdir(exist_ok=True)
    run_path, labels_path = tmp_path / "runs" / "dense_x.json", tmp_path / "labels" / f"{labels_name}.json"
    run_path.write_text(json.dumps(run))
    rel = relevant if relevant is not None else {"q1": ["b.md#1"], "q3": []}
    labels_path.write_text(json.dumps({"relevant": rel, "unlabeled": [q for q, v in rel.items() if not v]}))
    return run_path, labels_path


def test_tag_order_and_questions_without_relevant_chunks(tmp_path, capsys):
    run_path, labels_path = tiny(tmp_path)
    run_rows, qrels_rows = export(tmp_path, run_path, labels_path)
    assert [(r[0], r[2], r[3], r[5]) for r in run_rows] == [
        ("q1", "a.md#0", "1", "dense_x"), ("q1", "b.md#1", "2", "dense_x"),  # stored order kept
        ("q2", "c.md#2", "1", "dense_x"), ("q3", "a.md#0", "1", "dense_x")]
    assert float(run_rows[1][4]) < float(run_rows[0][4])  # the written scores carry that order
    assert qrels_rows == [["q1", "0", "b.md#1", "1"]]
    err = capsys.readouterr().err
    assert "1 qrels line(s) for 1 question(s)" in err and "1 answerable question(s) have no relevant chunk" in err

    run_rows, _ = export(tmp_path, run_path, labels_path, "--tag", "mine", "--order", "score")
    assert [(r[0], r[2], r[3], r[4], r[5]) for r in run_rows[:2]] == [("q1", "b.md#1", "1", "0.9", "mine"),
                                                                       ("q1", "a.md#0", "2", "0.5", "mine")]


def error_of(capsys, run_path: Path, labels_path: Path, tmp_path: Path, *extra: str) -> str:
    with pytest.raises(SystemExit) as e:
        export(tmp_path, run_path, labels_path, *extra)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()  # nothing written
    return err


@pytest.mark.bad_input
def test_labels_of_another_chunking_name_both(tmp_path, capsys):
    run_path, labels_path = tiny(tmp_path, chunking="base", labels_name="c400")
    err = error_of(capsys, run_path, labels_path, tmp_path)
    assert "is for chunking 'c400'" in err and "uses chunking 'base'" in err
    assert str(labels_path.with_name("base.json")) in err


@pytest.mark.bad_input
def test_stale_labels_name_the_questions(tmp_path, capsys):
    run_path, labels_path = tiny(tmp_path, relevant={"q1": ["b.md#1"], "q9": ["a.md#0"]})
    err = error_of(capsys, run_path, labels_path, tmp_path)
    assert "1 answerable question(s) of the run have no labels (q3)" in err
    assert "1 labelled question(s) are not answerable questions of the run (q9)" in err


@pytest.mark.bad_input
def test_missing_run_file_is_one_line_and_exit_2(tmp_path, capsys):
    _, labels_path = tiny(tmp_path)
    err = error_of(capsys, tmp_path / "runs" / "nope.json", labels_path, tmp_path)
    assert f"run file {tmp_path / 'runs' / 'nope.json'} does not exist" in err


@pytest.mark.bad_input
def test_an_app_run_is_refused_with_where_its_scores_are(tmp_path, capsys):
    run_path, labels_path = tiny(tmp_path)
    run = json.loads(run_path.read_text())
    run_path.write_text(json.dumps({**run, "config": {"name": "myapp", "method": "python", "k": 10,
                                                        "app": {"method": "python"}}}))
    err = error_of(capsys, run_path, labels_path, tmp_path)
    assert "is the run of app 'myapp'" in err and "metrics/scores/retrieval.csv" in err


@pytest.mark.bad_input
def test_malformed_labels_and_failed_run(tmp_path, capsys):
    run_path, labels_path = tiny(tmp_path)
    labels_path.write_text('{"relevant": ["q1"]}')
    assert "is not a labels stage output" in error_of(capsys, run_path, labels_path, tmp_path)
    labels_path.write_text("{not json")
    assert "is not valid JSON" in error_of(capsys, run_path, labels_path, tmp_path)
    run_path, labels_path = tiny(tmp_path)
    run = json.loads(run_path.read_text())
    run_path.write_text(json.dumps({**run, "status": "skipped", "reason": "no index"}))
    assert "run status is 'skipped' (no index)" in error_of(capsys, run_path, labels_path, tmp_path)


@pytest.mark.bad_input
def test_outputs_must_not_overwrite_inputs(tmp_path, capsys):
    run_path, labels_path = tiny(tmp_path)
    before = run_path.read_text()
    with pytest.raises(SystemExit) as e:
        main(["export-trec", "--run", str(run_path), "--labels", str(labels_path), "--out-run", str(run_path),
              "--out-qrels", str(tmp_path / "q.txt")])
    assert e.value.code == 2 and run_path.read_text() == before
    err = capsys.readouterr().err
    assert err == f"error: output {run_path} is an input file; write the TREC files elsewhere\n"


def test_graded_qrels_export_documents_and_grades(tmp_path, capsys):
    from rag_ablation.evaluation.scoring.graded import Qrel, dumps_qrels, graded_scores

    run = {"status": "ok", "config": {"name": "bm25", "chunking": "base"}, "questions": [
        {"id": "q1", "answerable": True, "ranking": [{"chunk": "w/b.md#1", "score": 5.0},
                                                     {"chunk": "w/b.md#0", "score": 4.0},
                                                     {"chunk": "w/q1.md#0", "score": 3.5},
                                                     {"chunk": "w/a.md#2", "score": 3.0}]}]}
    (tmp_path / "run.json").write_text(json.dumps(run))
    qrel = Qrel({"w/a.md": 2, "w/b.md": 1, "w/c.md": 1}, frozenset({"w/q1.md"}))
    (tmp_path / "qrels.jsonl").write_text(dumps_qrels({"q1": qrel}))
    out_run, out_qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    main(["export-trec", "--run", str(tmp_path / "run.json"), "--qrels", str(tmp_path / "qrels.jsonl"),
          "--out-run", str(out_run), "--out-qrels", str(out_qrels)])
    assert [line.split()[2:4] for line in out_run.read_text().splitlines()] == [["w/b.md", "1"], ["w/a.md", "2"]]
    assert out_qrels.read_text().splitlines() == ["q1 0 w/a.md 2", "q1 0 w/b.md 1", "q1 0 w/c.md 1"]
    (m,) = ir_measures.iter_calc([ir_measures.nDCG @ 10], ir_measures.read_trec_qrels(str(out_qrels)),
                                 ir_measures.read_trec_run(str(out_run)))
    ours = graded_scores([x["chunk"] for x in run["questions"][0]["ranking"]], qrel, depth=100)["ndcg_at_10"]
    assert m.value == pytest.approx(ours, abs=1e-9)
    assert "2 document run line(s)" in capsys.readouterr().err


@pytest.mark.bad_input
def test_an_empty_qrels_file_points_to_the_labels(tmp_path, capsys):
    run = {"status": "ok", "config": {"name": "bm25", "chunking": "base"},
           "questions": [{"id": "q1", "answerable": True, "ranking": []}]}
    (tmp_path / "run.json").write_text(json.dumps(run))
    (tmp_path / "qrels.jsonl").write_text("")
    with pytest.raises(SystemExit) as e:
        main(["export-trec", "--run", str(tmp_path / "run.json"), "--qrels", str(tmp_path / "qrels.jsonl"),
              "--out-run", str(tmp_path / "r.txt"), "--out-qrels", str(tmp_path / "q.txt")])
    assert e.value.code == 2
    assert "the data set has span labels, not graded qrels" in capsys.readouterr().err
    assert not (tmp_path / "r.txt").exists()


# ---------------------------------------------------------------------------------------------
# a tiny imported BEIR set: the data set's own ids, the run's depth, --min-depth

BEIR_DOCS = {"doc:1/A": "Vitamin D levels were measured in four hundred adults over the winter months.",
             "PMC:2": "Zinc lozenges shortened the common cold by about two days in three trials.",
             "d3": "An unjudged distractor document about the weather in spring and autumn."}


def imported_beir(tmp_path: Path, monkeypatch) -> tuple[Path, dict[str, str]]:
    """``tiny`` imported into ``tmp_path/data/imported/tiny/`` and selected in a params.yaml
    there (the cwd); returns the qrels file (the gold file, as the dataset stage copies it)
    and the id map."""
    from rag_ablation.datasets.beir import import_beir

    src = tmp_path / "src"
    (src / "qrels").mkdir(parents=True)
    (src / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n"
                                              for d, t in BEIR_DOCS.items()))
    (src / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "Does vitamin D help?"}) + "\n"
                                       + json.dumps({"_id": "q2", "text": "Does zinc help?"}) + "\n")
    (src / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tdoc:1/A\t2\nq1\tPMC:2\t1\n"
                                            "q2\tPMC:2\t1\n")
    folder = tmp_path / "data" / "imported" / "tiny"
    import_beir(src, folder / "corpus", folder / "questions.jsonl", track="tiny")
    params = (ROOT / "params.yaml").read_text()
    assert "\ndataset: handbook\n" in params
    (tmp_path / "params.yaml").write_text(params.replace("\ndataset: handbook\n", "\ndataset: tiny\n"))
    monkeypatch.chdir(tmp_path)
    ids = json.loads((folder / "questions.doc_ids.json").read_text())
    return folder / "questions.gold.jsonl", ids


def graded_run(tmp_path: Path, ids: dict[str, str], k: int) -> Path:
    path_of = {v: p for p, v in ids.items()}
    run = {"status": "ok", "config": {"name": "bm25", "chunking": "base", "k": k}, "questions": [
        {"id": "q1", "answerable": True, "ranking": [{"chunk": f"{path_of['PMC:2']}#0", "score": 2.0},
                                                     {"chunk": f"{path_of['d3']}#0", "score": 1.5},
                                                     {"chunk": f"{path_of['doc:1/A']}#0", "score": 1.0}]},
        {"id": "q2", "answerable": True, "ranking": [{"chunk": f"{path_of['PMC:2']}#0", "score": 3.0}]}]}
    (tmp_path / "run.json").write_text(json.dumps(run))
    return tmp_path / "run.json"


def test_an_imported_beir_set_exports_its_own_ids(tmp_path, monkeypatch, capsys):
    """The id map a BEIR import writes turns the mangled file names back into ``_id``s, in the
    run and the qrels alike, and ir_measures' nDCG@10 on them is the project's."""
    from rag_ablation.evaluation.scoring.graded import graded_scores, read_qrels

    qrels_path, ids = imported_beir(tmp_path, monkeypatch)
    assert sorted(ids.values()) == sorted(BEIR_DOCS) and all(p.startswith("tiny/") for p in ids)
    run_path = graded_run(tmp_path, ids, k=3)
    out_run, out_qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    main(["export-trec", "--run", str(run_path), "--qrels", str(qrels_path), "--out-run", str(out_run),
          "--out-qrels", str(out_qrels)])
    assert [line.split(" ")[:4] for line in out_run.read_text().splitlines()] == [
        ["q1", "Q0", "PMC:2", "1"], ["q1", "Q0", "d3", "2"], ["q1", "Q0", "doc:1/A", "3"], ["q2", "Q0", "PMC:2", "1"]]
    assert out_qrels.read_text().splitlines() == ["q1 0 doc:1/A 2", "q1 0 PMC:2 1", "q2 0 PMC:2 1"]
    err = capsys.readouterr().err
    assert "docnos: the original ids of data set 'tiny'" in err
    assert "run depth: 3 documents per question at most" in err and "R@100 needs k >= 100" in err
    qrels = read_qrels(qrels_path)
    got = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nDCG @ 10],
                                                               ir_measures.read_trec_qrels(str(out_qrels)),
                                                               ir_measures.read_trec_run(str(out_run)))}
    run = json.loads(run_path.read_text())
    ours = {q["id"]: graded_scores([x["chunk"] for x in q["ranking"]], qrels[q["id"]], depth=3)["ndcg_at_10"]
            for q in run["questions"]}
    assert got == pytest.approx(ours, abs=1e-9)


@pytest.mark.bad_input
def test_min_depth_refuses_a_shallower_run_and_writes_nothing(tmp_path, monkeypatch, capsys):
    qrels_path, ids = imported_beir(tmp_path, monkeypatch)
    run_path = graded_run(tmp_path, ids, k=10)
    with pytest.raises(SystemExit) as e:
        main(["export-trec", "--run", str(run_path), "--qrels", str(qrels_path), "--out-run", "out/r.txt",
              "--out-qrels", "out/q.txt", "--min-depth", "100"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "it kept 10 chunk(s) per question (the config's k) but --min-depth asks for 100" in err
    assert "set retrieval.bm25.k to 100 or more" in err
    assert not (tmp_path / "out").exists()
    main(["export-trec", "--run", str(run_path), "--qrels", str(qrels_path), "--out-run", "out/r.txt",
          "--out-qrels", "out/q.txt", "--min-depth", "10"])
    assert "run depth: 10 documents per question at most" in capsys.readouterr().err


@pytest.mark.bad_input
def test_a_stale_id_map_is_one_error(tmp_path, monkeypatch, capsys):
    qrels_path, ids = imported_beir(tmp_path, monkeypatch)
    run_path = graded_run(tmp_path, ids, k=3)
    map_path = tmp_path / "data" / "imported" / "tiny" / "questions.doc_ids.json"
    map_path.write_text(json.dumps({p: v for p, v in ids.items() if v != "d3"}))
    with pytest.raises(SystemExit) as e:
        main(["export-trec", "--run", str(run_path), "--qrels", str(qrels_path), "--out-run", "out/r.txt",
              "--out-qrels", "out/q.txt"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1 document(s) of the run or qrels have no original id in the map" in err
    assert not (tmp_path / "out").exists()


def test_the_handbook_keeps_the_project_names_and_prints_the_depth(tmp_path, capsys):
    run_path, labels_path = tiny(tmp_path)
    export(tmp_path, run_path, labels_path)
    assert "run depth: 2 chunks per question (the config's k)" in capsys.readouterr().err
