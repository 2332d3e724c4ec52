"""`rag-ablation import squad|beir`: a tiny hand-built SQuAD v2.0 file and BEIR folder through the
command, its outputs, the report on stderr (dropped counts per reason) and in JSON, and bad input
as one ``error:`` line with exit status 2."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rag_ablation.commands.main import main
from rag_ablation.data.questions import load_questions

from conftest import ROOT

CTX = ("Super Bowl 50 was an American football game. The Denver Broncos defeated the Carolina Panthers "
       "24 to 10 to earn their third title. It was played at Levi's Stadium.")
LONG = "defeated the Carolina Panthers 24 to 10"  # 39 characters: kept with --span answer
SHORT = "Levi's Stadium"  # 14 characters: dropped with --span answer, kept with --span sentence
RAG_ABLATION = Path(sys.executable).parent / "rag-ablation"


def _qa(qid, question, answers=(), impossible=False):
    return {"id": qid, "question": question, "is_impossible": impossible,
            "answers": [{"text": t, "answer_start": CTX.index(t)} for t in answers]}


def squad_file(tmp_path: Path) -> Path:
    data = {"version": "v2.0", "data": [{"title": "Super_Bowl_50", "paragraphs": [{"context": CTX, "qas": [
        _qa("a1", "Who did the Broncos beat?", [LONG]),
        _qa("a2", "Where was it played?", [SHORT]),
        _qa("a3", "Who won Super Bowl 51?", impossible=True),
        _qa("a1", "The same id again?", [LONG]),  # duplicate id
        _qa("a4", "Who coached the Panthers?"),  # possible, no answers
    ]}]}]}
    path = tmp_path / "dev-v2.0.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _rows(*objs) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


def beir_folder(tmp_path: Path) -> Path:
    f = tmp_path / "scifact"
    (f / "qrels").mkdir(parents=True)
    (f / "corpus.jsonl").write_text(_rows(
        {"_id": "d1", "title": "Vitamin D", "text": "Low vitamin D levels were associated with more infections."},
        {"_id": "d2", "title": "Zinc", "text": "Zinc lozenges shortened the common cold by about two days."},
        {"_id": "q3", "title": "Self", "text": "Question three is also a document in this corpus."},
    ), encoding="utf-8")
    (f / "queries.jsonl").write_text(_rows(
        {"_id": "q1", "text": "Does vitamin D protect against infections?"},
        {"_id": "q2", "text": "Is this query judged in another split only?"},
        {"_id": "q3", "text": "Is question three its own document?"},
    ), encoding="utf-8")
    (f / "qrels" / "test.tsv").write_text("\n".join([
        "query-id\tcorpus-id\tscore",
        "q1\td1\t1",
        "q1\td9\t1",  # unknown document
        "q3\tq3\t1",  # judged against itself: ignored unless --keep-identical-ids
        "q3\td2\t1",
    ]) + "\n", encoding="utf-8")
    return f


def test_import_squad_writes_outputs_and_reports_drops(tmp_path, capsys):
    corpus, questions, report = tmp_path / "corpus", tmp_path / "q" / "squad.jsonl", tmp_path / "report.json"
    main(["import", "squad", str(squad_file(tmp_path)), "--corpus", str(corpus), "--questions", str(questions),
          "--report", str(report)])
    err = capsys.readouterr().err
    assert (corpus / "squad" / "Super_Bowl_50.md").is_file()
    assert [q.id for q in load_questions(questions)] == ["a1", "a3"]
    assert "wrote 1 document(s) and 2 question(s) (1 unanswerable)" in err
    assert "dropped questions: 3 of 5" in err
    assert "1 duplicate_id:" in err and "1 no_answers:" in err and "1 span_too_short:" in err and "(e.g. a2)" in err
    saved = json.loads(report.read_text())
    assert saved["dropped"] == {"duplicate_id": 1, "no_answers": 1, "span_too_short": 1}
    assert saved["outputs"] == {"corpus": str(corpus / "squad"), "questions": str(questions)}


def test_import_squad_sentence_spans_track_and_overwrite(tmp_path, capsys):
    src, corpus, questions = squad_file(tmp_path), tmp_path / "corpus", tmp_path / "squad.jsonl"
    args = ["import", "squad", str(src), "--corpus", str(corpus), "--questions", str(questions),
            "--span", "sentence", "--track", "sb"]
    main(args)
    assert (corpus / "sb" / "Super_Bowl_50.md").is_file()
    qs = {q.id: q for q in load_questions(questions)}
    assert sorted(qs) == ["a1", "a2", "a3"] and qs["a2"].span == "It was played at Levi's Stadium."
    assert "span_too_short" not in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # outputs exist: refused without --overwrite
        main(args)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "already exist" in err and err.count("\n") == 1
    main([*args, "--overwrite"])
    assert "wrote 1 document(s) and 3 question(s)" in capsys.readouterr().err


def test_import_beir_writes_outputs_gold_and_reports_drops(tmp_path, capsys):
    corpus, questions, gold = tmp_path / "corpus", tmp_path / "beir.jsonl", tmp_path / "gold" / "g.jsonl"
    report = tmp_path / "report.json"
    main(["import", "beir", str(beir_folder(tmp_path)), "--corpus", str(corpus), "--questions", str(questions),
          "--gold", str(gold), "--report", str(report)])
    err = capsys.readouterr().err
    assert sorted(p.name for p in (corpus / "scifact").iterdir()) == ["d1.md", "d2.md", "q3.md"]
    assert [q.id for q in load_questions(questions)] == ["q1", "q3"]
    assert [json.loads(line)["id"] for line in gold.read_text().splitlines()] == ["q1", "q3"]
    assert "wrote 3 document(s) and 2 question(s)" in err
    # queries and qrels rows counted apart: 3 queries - 2 questions, 4 rows - 2 used
    assert "dropped queries: 1 of 3\n  1 no_qrels:" in err
    assert "dropped qrels rows: 2 of 4\n  1 qrels_identical_ids:" in err and "1 qrels_unknown_document:" in err
    assert "qrels/test.tsv began with the header line" in err
    saved = json.loads(report.read_text())
    assert saved["dropped"] == {"no_qrels": 1, "qrels_identical_ids": 1, "qrels_unknown_document": 1}
    assert saved["dropped_by_kind"] == {"queries": {"no_qrels": 1},
                                        "qrels rows": {"qrels_identical_ids": 1, "qrels_unknown_document": 1}}
    assert saved["dropped_totals"] == {"queries": 3 - 2, "qrels rows": 4 - 2}
    assert saved["reading"] == ["qrels/test.tsv began with the header line 'query-id\\tcorpus-id\\tscore', skipped"]
    assert saved["outputs"]["gold"] == str(gold)


def test_import_beir_reads_a_qrels_file_without_header(tmp_path, capsys):
    folder = beir_folder(tmp_path)
    qrels = folder / "qrels" / "test.tsv"
    qrels.write_text("".join(qrels.read_text().splitlines(keepends=True)[1:]), encoding="utf-8")
    report = tmp_path / "report.json"
    main(["import", "beir", str(folder), "--corpus", str(tmp_path / "corpus"), "--questions",
          str(tmp_path / "beir.jsonl"), "--report", str(report)])
    err = capsys.readouterr().err
    assert "qrels/test.tsv had no header line; its first line was read as data" in err
    assert [q.id for q in load_questions(tmp_path / "beir.jsonl")] == ["q1", "q3"]
    saved = json.loads(report.read_text())
    assert saved["read"]["qrels rows"] == 4 and saved["dropped_totals"] == {"queries": 1, "qrels rows": 2}
    assert saved["reading"] == ["qrels/test.tsv had no header line; its first line was read as data"]


@pytest.mark.bad_input
def test_a_malformed_first_qrels_line_is_an_error_and_exit_2(tmp_path, capsys):
    folder = beir_folder(tmp_path)
    (folder / "qrels" / "test.tsv").write_text("q1 d1 1\nq1\td1\t1\n", encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        main(["import", "beir", str(folder), "--corpus", str(tmp_path / "c"), "--questions", str(tmp_path / "q.jsonl")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "1 problem(s)" in err
    assert "qrels/test.tsv line 1: expected the header 'query-id\\tcorpus-id\\tscore' or a first row" in err
    assert not (tmp_path / "c").exists()


def test_import_beir_keep_identical_ids_split_and_track(tmp_path, capsys):
    folder = beir_folder(tmp_path)
    (folder / "qrels" / "test.tsv").rename(folder / "qrels" / "dev.tsv")
    corpus, questions = tmp_path / "corpus", tmp_path / "beir.jsonl"
    main(["import", "beir", str(folder), "--corpus", str(corpus), "--questions", str(questions), "--split", "dev",
          "--track", "sf", "--keep-identical-ids"])
    err = capsys.readouterr().err
    assert "BEIR scifact (dev)" in err and "qrels_identical_ids" not in err
    assert (corpus / "sf").is_dir() and (tmp_path / "beir.gold.jsonl").is_file()  # gold beside the questions
    gold = {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / "beir.gold.jsonl").read_text().splitlines()}
    assert [g["doc"] for g in gold["q3"]["gold"]] == ["sf/q3.md", "sf/d2.md"]


def _one_error_line(capsys, argv) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.bad_input
def test_missing_squad_file_is_one_line_and_exit_2(tmp_path):
    """Through the installed console script, as a user runs it."""
    res = subprocess.run([str(RAG_ABLATION), "import", "squad", str(tmp_path / "nope.json"), "--corpus",
                          str(tmp_path / "corpus"), "--questions", str(tmp_path / "q.jsonl")],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith(f"error: SQuAD file {tmp_path / 'nope.json'} does not exist")
    assert res.stderr.count("\n") == 1
    assert not (tmp_path / "corpus").exists() and not (tmp_path / "q.jsonl").exists()


@pytest.mark.bad_input
def test_missing_beir_folder_and_split_are_one_line_and_exit_2(tmp_path, capsys):
    out = ["--corpus", str(tmp_path / "corpus"), "--questions", str(tmp_path / "q.jsonl")]
    err = _one_error_line(capsys, ["import", "beir", str(tmp_path / "nope"), *out])
    assert f"BEIR folder {tmp_path / 'nope'} does not exist" in err
    err = _one_error_line(capsys, ["import", "beir", str(beir_folder(tmp_path)), "--split", "train", *out])
    assert "has no qrels/train.tsv; splits found: test" in err
    assert not (tmp_path / "corpus").exists()


@pytest.mark.bad_input
def test_min_span_below_the_format_minimum_is_refused(tmp_path, capsys):
    err = _one_error_line(capsys, ["import", "squad", str(squad_file(tmp_path)), "--corpus", str(tmp_path / "c"),
                                   "--questions", str(tmp_path / "q.jsonl"), "--min-span", "5"])
    assert "--min-span 5 is below the question format's minimum of 20" in err
    assert not (tmp_path / "c").exists()


@pytest.mark.bad_input
def test_unknown_format_lists_the_formats(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["import", "msmarco", "x", "--corpus", "c", "--questions", "q"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'msmarco'" in err and "'squad'" in err and "'beir'" in err


def test_import_squad_sample_doc_paragraph_and_report(tmp_path, capsys):
    corpus, questions, report = tmp_path / "corpus", tmp_path / "q.jsonl", tmp_path / "report.json"
    args = ["import", "squad", str(squad_file(tmp_path)), "--corpus", str(corpus), "--questions", str(questions),
            "--span", "sentence", "--doc", "paragraph", "--report", str(report)]
    main([*args, "--sample", "2", "--seed", "4"])
    err = capsys.readouterr().err
    assert sorted(p.name for p in (corpus / "squad").iterdir()) == ["Super_Bowl_50.p0000.md"]
    qs = load_questions(questions)
    assert len(qs) == 2 and {q.doc for q in qs if q.answerable} <= {"squad/Super_Bowl_50.p0000.md"}
    assert "sample: 2 of the 3 question(s) left after dropping (seed 4, stratified by article)" in err
    assert "dropped questions: 2 of 5" in err  # the drops are the whole file's
    saved = json.loads(report.read_text())
    assert saved["sample"] == {"requested": 2, "available": 3, "written": 2, "seed": 4, "stratified_by": "article"}
    first = questions.read_bytes()
    main([*args, "--sample", "2", "--seed", "4", "--overwrite"])
    assert questions.read_bytes() == first  # the same seed, the same sample
    main([*args, "--sample", "99", "--overwrite"])
    assert "asked for 99 question(s), 3 left after dropping: all 3 written (no sampling)" in capsys.readouterr().err
    assert len(load_questions(questions)) == 3


def test_import_beir_sample_keeps_every_document(tmp_path, capsys):
    corpus, questions = tmp_path / "corpus", tmp_path / "beir.jsonl"
    main(["import", "beir", str(beir_folder(tmp_path)), "--corpus", str(corpus), "--questions", str(questions),
          "--sample", "1"])
    err = capsys.readouterr().err
    assert sorted(p.name for p in (corpus / "scifact").iterdir()) == ["d1.md", "d2.md", "q3.md"]
    assert len(load_questions(questions)) == 1 and len((tmp_path / "beir.gold.jsonl").read_text().splitlines()) == 1
    assert "sample: 1 of the 2 question(s) left after dropping (seed 0, stratified by document)" in err


def test_sentence_hint_shown_only_with_answer_spans(tmp_path, capsys):
    src = squad_file(tmp_path)
    out = ["--corpus", str(tmp_path / "c"), "--questions", str(tmp_path / "q.jsonl"), "--overwrite"]
    main(["import", "squad", str(src), *out])
    err = capsys.readouterr().err
    assert "1 span_too_short:" in err and "--span sentence keeps more" in err
    main(["import", "squad", str(src), *out, "--span", "sentence", "--min-span", "35"])
    err = capsys.readouterr().err
    assert "1 span_too_short:" in err and "fewer than 35 characters" in err and "keeps more" not in err


@pytest.mark.bad_input
@pytest.mark.parametrize("fmt", ["squad", "beir"])
@pytest.mark.parametrize("size", ["0", "-2"])
def test_sample_below_one_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, fmt, size):
    src = squad_file(tmp_path) if fmt == "squad" else beir_folder(tmp_path)
    err = _one_error_line(capsys, ["import", fmt, str(src), "--corpus", str(tmp_path / "c"), "--questions",
                                   str(tmp_path / "q.jsonl"), "--sample", size])
    assert f"error: sample size {size} is not a positive whole number: --sample N" in err
    assert "pass --sample 1 or more, or leave --sample out" in err
    assert not (tmp_path / "c").exists() and not (tmp_path / "q.jsonl").exists()


@pytest.mark.bad_input
def test_seed_without_sample_is_refused(tmp_path, capsys):
    err = _one_error_line(capsys, ["import", "squad", str(squad_file(tmp_path)), "--corpus", str(tmp_path / "c"),
                                   "--questions", str(tmp_path / "q.jsonl"), "--seed", "3"])
    assert "--seed 3 has no effect without --sample N" in err and "add --sample N, or drop --seed" in err
    assert not (tmp_path / "c").exists()


def test_the_import_prints_the_commands_that_run_it(tmp_path, capsys, monkeypatch):
    """Imported into data/imported/NAME/, the set is selected by `dataset=NAME` alone (BEIR adds
    the same-document rule): the import prints the commit of data/imported/NAME, then the
    experiment, each on a line of its own under `run it:`; imported elsewhere, the message says
    where to put it and to commit it. tests/test_dvc_import.py runs the printed lines."""
    monkeypatch.chdir(tmp_path)
    src = squad_file(tmp_path)
    main(["import", "squad", str(src), "--corpus", "data/imported/mysquad/corpus", "--questions",
          "data/imported/mysquad/questions.jsonl"])
    err = capsys.readouterr().err
    assert ("run it: commit the import, then run the experiment (an experiment would otherwise copy the "
            "uncommitted corpus into its own commit, and a queued one would not see it)\n"
            "  git add data/imported/mysquad && git commit -m 'import mysquad' -- data/imported/mysquad\n"
            "  dvc exp run -S dataset=mysquad -S llm.backend=none\n"
            "(or set `dataset: mysquad` in params.yaml and `dvc repro`)\n") in err
    from rag_ablation.core.config import imported_datasets
    assert imported_datasets() == ["mysquad"]
    main(["import", "beir", str(beir_folder(tmp_path)), "--corpus", "data/imported/sf/corpus", "--questions",
          "data/imported/sf/questions.jsonl"])
    assert ("\n  git add data/imported/sf && git commit -m 'import sf' -- data/imported/sf\n"
            "  dvc exp run -S dataset=sf -S labels.same_doc_only=true -S llm.backend=none "
            "-S 'run_configs=[dense,bm25,hybrid]' -S '++retrieval.dense.k=100' -S '++retrieval.bm25.k=100' "
            "-S '++retrieval.hybrid.k=100'\n(or set") in capsys.readouterr().err, "no params.yaml here: the plain switches"
    main(["import", "squad", str(src), "--corpus", "elsewhere/c", "--questions", "elsewhere/q.jsonl"])
    assert ("to run it with one switch, import into data/imported/NAME/corpus and data/imported/NAME/questions.jsonl, "
            "commit it (git add data/imported/NAME && git commit -m 'import NAME' -- data/imported/NAME), then: "
            "dvc exp run -S dataset=NAME -S llm.backend=none") in capsys.readouterr().err


def apply_switches(params: Path, switches: str) -> dict:
    """``params`` as ``dvc exp run`` leaves it after ``switches`` (DVC's own Hydra override code)."""
    import shlex

    from dvc.utils.hydra import apply_overrides

    words = shlex.split(switches)
    assert words[::2] == ["-S"] * (len(words) // 2)
    apply_overrides(params, words[1::2])
    return yaml.safe_load(params.read_text())


def test_the_beir_command_runs_only_the_first_run_configs(tmp_path, monkeypatch):
    """Applied by DVC's own override code to the shipped params.yaml, the printed switches leave a
    valid params file holding only dense, bm25 and hybrid, each k = 100, the one chunking and
    query transform they use, and answered / gated configs among them: DVC's foreach then makes
    no stage instance for any other config or chunking."""
    from rag_ablation.commands.import_data import beir_switches
    from rag_ablation.core.config import GRADED_DEPTH, load_config

    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    shipped = yaml.safe_load((tmp_path / "params.yaml").read_text())
    after = apply_switches(tmp_path / "params.yaml", beir_switches())
    assert after["retrieval"] == {n: {**shipped["retrieval"][n], "k": GRADED_DEPTH} for n in ("dense", "bm25", "hybrid")}
    assert after["chunkings"] == {"base": {}} and after["query_transforms"] == {"none": {}}
    assert after["generation"]["configs"] == ["dense"] and after["gate"]["configs"] == ["hybrid"]
    unchanged = set(shipped) - {"retrieval", "chunkings", "query_transforms", "generation", "gate"}
    assert {k: after[k] for k in unchanged} == {k: shipped[k] for k in unchanged}
    params = load_config(tmp_path / "params.yaml")
    assert list(params.searched()) == ["dense", "bm25", "hybrid"]


def test_the_beir_command_quotes_what_it_copies_and_falls_back_to_plain_switches(tmp_path, monkeypatch):
    """A config's values that Hydra would misread (a space, a quote, a word like null) come back
    as written; params without a config's chunking, or unreadable, get the plain switches
    (run_configs and k = 100 per config) naming those of the three that params.yaml has."""
    from rag_ablation.commands.import_data import beir_switches

    monkeypatch.chdir(tmp_path)
    params = tmp_path / "params.yaml"
    odd = {"chunking": "base", "method": "dense", "query": "none", "note": "it's \"odd\" null", "w": "null",
           "rerank": None, "weights": {"dense": 1.5}, "flag": True}
    params.write_text(yaml.safe_dump({"retrieval": {"dense": odd, "other": {"chunking": "c2", "query": "none"}},
                                      "chunkings": {"base": {"size": 300}, "c2": {}},
                                      "query_transforms": {"none": {}, "rewrite": {"kind": "rewrite"}},
                                      "run_configs": ["dense"], "gate": {"configs": ["dense"]}}))
    after = apply_switches(params, beir_switches())
    assert after["retrieval"] == {"dense": {**odd, "k": 100}}
    assert after["chunkings"] == {"base": {"size": 300}} and after["run_configs"] == "all"
    assert after["gate"] == {"configs": ["dense"]} and after["generation"] == {"configs": ["dense"]}
    params.write_text("retrieval:\n  bm25: {}\n  dense: {}\n  other: {}\n")
    assert beir_switches() == " -S 'run_configs=[dense,bm25]' -S '++retrieval.dense.k=100' -S '++retrieval.bm25.k=100'"
    params.write_text("retrieval:\n  dense: not a block\n  bm25: {chunking: base, query: none}\n"
                      "chunkings: {base: {}}\nquery_transforms: {none: {}}\n")
    assert beir_switches() == " -S 'run_configs=[dense,bm25]' -S '++retrieval.dense.k=100' -S '++retrieval.bm25.k=100'"
    params.write_text("retrieval: [unclosed\n")
    assert beir_switches().startswith(" -S 'run_configs=[dense,bm25,hybrid]'")


def test_printed_commands_are_the_indented_lines_after_run_it():
    from rag_ablation.commands.import_data import printed_commands, run_hint

    hint = run_hint("squad", Path("data/imported/sq/corpus"), Path("data/imported/sq/questions.jsonl"))
    assert printed_commands("imported 3 documents\n" + hint) == [
        "git add data/imported/sq && git commit -m 'import sq' -- data/imported/sq",
        "dvc exp run -S dataset=sq -S llm.backend=none"]
    assert printed_commands("no hint here") == []
