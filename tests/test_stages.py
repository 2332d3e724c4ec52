"""One smoke test per stage script, run as DVC would run it, on the fixture corpus in tmp_path."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import FIXTURES, ROOT


def stage(cwd, script, *args, ok=True):
    """Run a stage script in ``cwd`` with that folder's own cache (shared by the tests that
    use the module's ``built`` project, so a rerun there can hit the cache)."""
    env = {**os.environ, "RAG_ABLATION_CACHE": str(Path(cwd) / ".cache")}
    res = subprocess.run([sys.executable, str(ROOT / "stages" / script), *map(str, args)], cwd=cwd,
                         capture_output=True, text=True, env=env)
    if ok:
        assert res.returncode == 0, res.stderr
    return res


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Run the whole chain once on the fixture corpus; tests inspect the outputs."""
    d = tmp_path_factory.mktemp("proj")
    shutil.copytree(FIXTURES / "corpus", d / "corpus")
    shutil.copy(FIXTURES / "questions.jsonl", d / "questions.jsonl")
    shutil.copy(FIXTURES / "params.yaml", d / "params.yaml")
    shutil.copytree(ROOT / "prompts", d / "prompts")
    params = yaml.safe_load((d / "params.yaml").read_text())
    b = d / "build"
    stage(d, "questions.py", "--corpus", "corpus", "--questions", "questions.jsonl", "--out", b / "q.jsonl",
          "--metrics", d / "metrics/questions.json")
    for name in params["query_transforms"]:
        stage(d, "queries.py", "--name", name, "--questions", b / "q.jsonl", "--prompts", "prompts",
              "--out", b / f"queries/{name}.json", "--latency", d / f"metrics/latency/queries_{name}.json")
        stage(d, "query_vectors.py", "--name", name, "--questions", b / "q.jsonl", "--queries",
              b / f"queries/{name}.json", *vector_args(d, name, flag="--out"))
    stage(d, "index_plan.py", "--out", b / "plan", "--transforms", b / "plan_queries")
    for name in params["chunkings"]:
        stage(d, "chunk.py", "--name", name, "--corpus", "corpus", "--out", b / f"chunks/{name}.jsonl")
        stage(d, "dense_index.py", "--chunks", b / f"chunks/{name}.jsonl", "--out", b / f"dense/{name}",
              "--metrics", d / f"metrics/index/{name}.json", "--plan", b / f"plan/{name}.json")
        stage(d, "bm25_index.py", "--chunks", b / f"chunks/{name}.jsonl", "--out", b / f"bm25/{name}",
              "--plan", b / f"plan/{name}.json")
        stage(d, "labels.py", "--chunks", b / f"chunks/{name}.jsonl", "--questions", b / "q.jsonl",
              "--out", b / f"labels/{name}.json", "--metrics", d / f"metrics/labels/{name}.json")
    for name, cfg in params["retrieval"].items():
        c = cfg["chunking"]
        stage(d, "retrieve.py", "--name", name, "--questions", b / "q.jsonl", "--chunks", b / f"chunks/{c}.jsonl",
              "--dense", b / f"dense/{c}", "--bm25", b / f"bm25/{c}",
              "--queries", b / f"queries/{cfg['query']}.json", *vector_args(d, cfg["query"]),
              "--out", b / f"runs/{name}.json", "--latency", d / f"metrics/latency/{name}.json")
    for name in params["generation"]["configs"]:
        stage(d, "generate.py", *generate_args(d, name, b / f"answers/{name}.json"))
    stage(d, "score.py", *score_args(d, d / "metrics/scores/retrieval.csv", d / "metrics/scores/answers.csv"))
    stage(d, "evaluate.py", "--retrieval-scores", d / "metrics/scores/retrieval.csv", "--answer-scores",
          d / "metrics/scores/answers.csv", "--out", d / "metrics/retrieval.json")
    return d


def vector_args(d, transform, *, flag="--query-vectors"):
    """The query vectors folder and embedding times of ``transform`` in project ``d``: the
    arguments of ``retrieve.py`` (or, with ``flag="--out"``, of ``query_vectors.py``)."""
    times = "--query-times" if flag == "--query-vectors" else "--latency"
    return [flag, d / f"build/query_vectors/{transform}", times, d / f"metrics/latency/query_embed_{transform}.json"]


def score_args(d, retrieval_out, answers_out):
    b = d / "build"
    return ["--questions", b / "q.jsonl", "--runs", b / "runs", "--labels", b / "labels", "--answers", b / "answers",
            "--retrieval-out", retrieval_out, "--answers-out", answers_out, "--corpus", d / "corpus",
            "--audit", d / "audit.jsonl", "--audited-out", Path(retrieval_out).with_name("audited.csv")]


def generate_args(d, name, out):
    b = d / "build"
    return ["--name", name, "--run", b / f"runs/{name}.json", "--questions",
            b / "q.jsonl", "--prompts", "prompts", "--out", out, "--latency", d / f"metrics/latency/generate_{name}.json"]


def kill_after_cached(args, cwd, cache, n, *, limit=120):
    """Start ``args`` with its own prompt cache ``cache`` and SIGKILL it once the cache holds at
    least ``n`` generations; returns how many it held when polled last."""
    import signal
    import sqlite3
    import time

    proc = subprocess.Popen(args, cwd=cwd, env={**os.environ, "RAG_ABLATION_CACHE": str(cache)},
                            stderr=subprocess.DEVNULL)
    done = 0
    deadline = time.time() + limit
    while time.time() < deadline and done < n:
        time.sleep(0.1)
        if (cache / "prompts.sqlite").exists():
            try:
                with sqlite3.connect(cache / "prompts.sqlite") as db:
                    done = db.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
            except sqlite3.OperationalError:
                pass
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return done


def cached_count(cache):
    import sqlite3
    with sqlite3.connect(cache / "prompts.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM generations").fetchone()[0]


def load(path):
    return json.loads(path.read_text())


def test_questions_stage_reports_slices(built):
    m = load(built / "metrics/questions.json")
    assert m["by_slice"] == {"identifier": 3, "main": 3, "paraphrase": 1, "unanswerable": 1}
    assert set(m["lexical_overlap"]) == {"identifier", "main", "paraphrase"}


def test_chunk_stage_writes_offsets_into_the_source(built):
    for line in (built / "build/chunks/base.jsonl").read_text().splitlines():
        c = json.loads(line)
        src = (built / "corpus" / c["doc"]).read_text()
        assert c["body"] == src[c["start"] : c["end"]]
        assert len(c["body"]) <= 300


def test_dense_stage_reports_truncation(built):
    m = load(built / "metrics/index/base.json")
    assert m["max_seq_length"] == 256 and 0.0 <= m["truncated_share"] <= 1.0
    ids = load(built / "build/dense/base/chunk_ids.json")["chunk_ids"]
    assert len(ids) == m["n_chunks"]


def test_labels_stage_labels_every_answerable_question(built):
    lab = load(built / "build/labels/base.json")
    assert len(lab["relevant"]) == 7 and lab["unlabeled"] == []


def test_retrieve_stage_stores_rankings_and_resolved_config(built):
    run = load(built / "build/runs/bm25.json")
    assert run["status"] == "ok" and run["config"]["method"] == "bm25"
    assert run["config"]["k"] == 10 and run["config"]["fusion"] is None, "defaults filled in, keys that apply only"
    assert [r["id"] for r in run["questions"] if not r["answerable"]] == ["q-count"]
    assert all(set(r) == {"id", "slice", "answerable", "ranking"} for r in run["questions"]), "no labels in runs"
    ranked = {x["chunk"] for r in run["questions"] for x in r["ranking"]}
    chunks = {json.loads(line)["id"]: json.loads(line) for line in (built / "build/chunks/base.jsonl").read_text().splitlines()}
    assert set(run["passages"]) == ranked and all(run["passages"][c] == chunks[c]["body"] for c in ranked)
    assert all(len(r["ranking"]) <= 10 for r in run["questions"])
    lat = load(built / "metrics/latency/bm25.json")
    assert set(lat) == {"n_questions", "n_timed", "timing", "total", "bm25_search"} and lat["bm25_search"]["p50_ms"] > 0
    assert lat["timing"] == "warm" and lat["n_timed"] == lat["n_questions"], "every question timed, warm"
    lat = load(built / "metrics/latency/hybrid.json")
    assert {"query_embed", "faiss_search", "bm25_search", "fusion"} <= set(lat)


def test_dense_configs_are_charged_the_embedding_time_measured_once_per_transform(built):
    """query_vectors@none embeds the questions once and times each; every dense and hybrid config
    searching with `none` is charged those same times (so the same query_embed percentiles) and
    loads no embedding model: its peak memory stays far below the stage that loaded MiniLM."""
    times = load(built / "metrics/latency/query_embed_none.json")
    assert times["n_timed"] == times["n_questions"] == len(times["seconds"]) and times["timing"] == "warm"
    from rag_ablation.support.timing import percentiles_ms
    # the configs are charged the seconds as stored (6 decimals), so their percentiles are those of
    # the stored seconds exactly; the stage's own were computed before storing and may differ in the
    # third decimal of a millisecond by rounding
    stored = percentiles_ms(list(times["seconds"].values()))
    assert stored == pytest.approx(times["query_embed"], abs=1.5e-3)
    for name in ("dense", "hybrid"):
        assert load(built / f"metrics/latency/{name}.json")["query_embed"] == stored, name
    index = load(built / "build/query_vectors/none/index.json")
    assert index["status"] == "ok" and index["model"] == "all-MiniLM-L6-v2" and len(index["ids"]) == times["n_questions"]
    # torch and sentence-transformers made unimportable: the stage must not need them (a peak
    # memory figure cannot show it: a forked child's max RSS starts at the test worker's)
    poison = built / "no_torch"
    for module in ("torch", "sentence_transformers"):
        (poison / module).mkdir(parents=True, exist_ok=True)
        (poison / module / "__init__.py").write_text(f"raise ImportError('{module} must not be loaded here')\n")
    b = built / "build"
    env = {**os.environ, "RAG_ABLATION_CACHE": str(built / ".cache"),
           "PYTHONPATH": os.pathsep.join([str(poison), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, str(ROOT / "stages/retrieve.py"), "--name", "dense", "--questions",
                          b / "q.jsonl", "--chunks", b / "chunks/base.jsonl", "--dense", b / "dense/base", "--bm25",
                          b / "bm25/base", "--queries", b / "queries/none.json", *vector_args(built, "none"), "--out",
                          built / "again_dense.json", "--latency", built / "again_lat.json"],
                         cwd=built, capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert (built / "again_dense.json").read_bytes() == (b / "runs/dense.json").read_bytes()


def test_missing_reranker_is_unavailable_with_a_reason(built):
    run = load(built / "build/runs/hybrid_rerank.json")
    assert run["status"] == "unavailable" and run["questions"] == []
    assert "no-such-org/no-such-cross-encoder" in run["reason"] and "huggingface-cli download" in run["reason"]


def test_score_stage_writes_per_question_rows(built):
    from rag_ablation.evaluation.scoring.scores import read_scores

    rows = read_scores(built / "metrics/scores/retrieval.csv")
    by = {(r["config"], r["id"]): r for r in rows}
    assert {r["config"] for r in rows} == {"dense", "bm25", "hybrid", "rewrite"}, "unavailable configs have no rows"
    assert len(rows) == 4 * 8
    # identifier questions: BM25 must put the identifier's chunk first
    assert by[("bm25", "q-restore-flag")]["first_relevant_rank"] == 1
    assert by[("bm25", "q-rl413")]["hit_at_1"] == 1 and by[("bm25", "q-rl413")]["rr_at_10"] == 1.0
    count = by[("bm25", "q-count")]
    assert count["answerable"] == 0 and count["hit_at_5"] is None and count["top_score"] > 0
    for r in rows:
        if r["answerable"]:
            rank = r["first_relevant_rank"]
            assert r["hit_at_5"] == int(rank is not None and rank <= 5)
            assert r["rr_at_10"] == (1 / rank if rank is not None and rank <= 10 else 0.0)
            assert r["doc"] and r["n_relevant"] >= 1
    answers = read_scores(built / "metrics/scores/answers.csv")
    assert {r["config"] for r in answers} == {"bm25"} and len(answers) == 8
    assert all(r["relevant_in_prompt"] in (0, 1) for r in answers if r["answerable"])
    # lexical support: from the passages each prompt showed (the run file's texts), empty where undefined
    from rag_ablation.evaluation.scoring.grounding import lexical_support
    assert (built / "metrics/scores/answers.csv").read_text().splitlines()[0].endswith(",lexical_support")
    texts = load(built / "build/runs/bm25.json")["passages"]
    shown = {a["id"]: a for a in load(built / "build/answers/bm25.json")["answers"]}
    for r in answers:
        a = shown[r["id"]]
        defined = r["answerable"] and not r["refusal"]
        expected = lexical_support(a["answer"], [texts[p] for p in a["passages"]]) if defined else None
        assert r["lexical_support"] == (None if expected is None else round(expected, 6)), r["id"]
    assert any(r["lexical_support"] is not None for r in answers)


def test_evaluate_stage_has_every_config_and_slice(built):
    m = load(built / "metrics/retrieval.json")
    assert set(m) == {"dense", "bm25", "hybrid", "hybrid_rerank", "rewrite"}
    assert m["hybrid_rerank"] == {"available": 0, "answers": {"available": 0}}
    for name in ("dense", "bm25", "hybrid"):
        assert {"recall_at_1", "recall_at_5", "recall_at_10", "mrr_at_10"} <= set(m[name])
        assert set(m[name]["by_slice"]) == {"identifier", "main", "paraphrase"}
        assert m[name]["n_questions"] == 7 and m[name]["n_unanswerable_excluded"] == 1


def test_outputs_are_deterministic(built, tmp_path):
    """Rerunning a stage gives byte-identical output (DVC's early cutoff depends on it)."""
    b = built / "build"
    stage(built, "retrieve.py", "--name", "hybrid", "--questions", b / "q.jsonl", "--chunks", b / "chunks/heading.jsonl",
          "--dense", b / "dense/heading", "--bm25", b / "bm25/heading",
          "--queries", b / "queries/none.json", *vector_args(built, "none"), "--out", tmp_path / "again.json",
          "--latency", tmp_path / "lat.json")
    assert (tmp_path / "again.json").read_bytes() == (b / "runs/hybrid.json").read_bytes()
    stage(built, "score.py", *score_args(built, tmp_path / "r.csv", tmp_path / "a.csv"))
    assert (tmp_path / "r.csv").read_bytes() == (built / "metrics/scores/retrieval.csv").read_bytes()
    assert (tmp_path / "a.csv").read_bytes() == (built / "metrics/scores/answers.csv").read_bytes()


def test_bm25_mmap_stores_the_score_matrix_and_ranks_as_bm25s_from_tokens(built, tmp_path):
    """bm25.mmap: the bm25 stage stores bm25s' arrays instead of tokens; the retrieve stage then
    memory-maps them and writes the same run file as bm25s rebuilt from tokens."""
    b = built / "build"
    p = yaml.safe_load((built / "params.yaml").read_text())
    runs = {}
    for mmap in (False, True):
        d = tmp_path / f"mmap_{mmap}"
        d.mkdir()
        p["bm25"] = {**p["bm25"], "impl": "bm25s", "epsilon": 0, "mmap": mmap}
        (d / "params.yaml").write_text(yaml.safe_dump(p))
        stage(d, "bm25_index.py", "--chunks", b / "chunks/base.jsonl", "--out", d / "bm25")
        stage(d, "retrieve.py", "--name", "bm25", "--questions", b / "q.jsonl", "--chunks", b / "chunks/base.jsonl",
              "--dense", b / "dense/base", "--bm25", d / "bm25", "--queries", b / "queries/none.json",
              *vector_args(built, "none"), "--out", d / "run.json", "--latency", d / "lat.json")
        runs[mmap] = (d / "run.json").read_bytes()
        stored = sorted(f.name for f in (d / "bm25").iterdir())
        assert stored == (["bm25s", "chunk_ids.json"] if mmap else ["chunk_ids.json", "tokens.jsonl"])
    assert runs[True] == runs[False]
    assert sorted(f.name for f in (b / "bm25/base").iterdir()) == ["chunk_ids.json", "tokens.jsonl"], \
        "the default (mmap false) keeps the tokens"


@pytest.mark.bad_input
def test_stale_span_stops_the_questions_stage(built, tmp_path):
    shutil.copytree(built / "corpus", tmp_path / "corpus")
    doc = tmp_path / "corpus/ops/backups.md"
    doc.write_text(doc.read_text().replace("every night at 01:15 UTC", "each night at 01:15 UTC"))
    shutil.copy(built / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "split.jsonl").write_text('{"id": "q-backup-time", "side": "dev"}\n')
    res = stage(tmp_path, "questions.py", "--corpus", "corpus", "--questions", built / "questions.jsonl",
                "--out", tmp_path / "q.jsonl", "--metrics", tmp_path / "m.json", "--split", tmp_path / "split.jsonl",
                ok=False)
    assert res.returncode == 2
    assert "q-backup-time: stale: found on an earlier run, so the document changed since; not in the text of " \
           "ops/backups.md; nearest: " in res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "q.jsonl").exists() and not (tmp_path / "m.json").exists()


@pytest.mark.bad_input
def test_unknown_chunking_method_is_one_message(built, tmp_path):
    p = yaml.safe_load((built / "params.yaml").read_text())
    p["chunkings"]["base"]["method"] = "semantic"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
    res = stage(tmp_path, "chunk.py", "--name", "base", "--corpus", built / "corpus", "--out", tmp_path / "c.jsonl", ok=False)
    assert res.returncode == 2 and "chunkings.base.method: expected one of chars, fixed, sentences" in res.stderr
    assert not (tmp_path / "c.jsonl").exists()


def test_queries_stage_rewrites_with_the_llm(built):
    none = load(built / "build/queries/none.json")["queries"]
    rewritten = load(built / "build/queries/rewrite.json")["queries"]
    assert none["q-ack"] == "How fast must someone respond to a P1 page?"
    assert set(rewritten) == set(none) and rewritten != none
    lat = load(built / "metrics/latency/queries_rewrite.json")
    assert lat["calls"] == 8 and lat["hits"] + lat["misses"] == 8
    run = load(built / "build/runs/rewrite.json")
    assert run["config"]["query"] == "rewrite" and len(run["questions"]) == 8


def test_generate_stage_answers_every_question(built):
    out = load(built / "build/answers/bm25.json")
    assert out["status"] == "ok" and out["prompt"] == "answer_escape_hatch" and out["llm"]["backend"] == "llama_cpp"
    assert len(out["llm"]["digest"]) == 64
    assert [a["id"] for a in out["answers"]] == [json.loads(line)["id"]
                                                 for line in (built / "questions.jsonl").read_text().splitlines()]
    for a in out["answers"]:
        assert a["answer"] and len(a["passages"]) <= 3 and len(a["prompt_sha256"]) == 64
        assert 0 < a["completion_tokens"] <= 48
    run = load(built / "build/runs/bm25.json")
    top = {r["id"]: [x["chunk"] for x in r["ranking"][:3]] for r in run["questions"]}
    assert all(a["passages"] == top[a["id"]] for a in out["answers"])
    lat = load(built / "metrics/latency/generate_bm25.json")
    assert lat["calls"] == 8 and lat["misses"] + lat["hits"] == 8


def test_generate_rerun_is_served_from_the_cache(built, tmp_path):
    res = stage(built, "generate.py", *generate_args(built, "bm25", tmp_path / "again.json"))
    assert "cache hits 8, misses 0" in res.stderr
    assert (tmp_path / "again.json").read_bytes() == (built / "build/answers/bm25.json").read_bytes()


def test_generate_for_an_unavailable_config_writes_no_answers(built):
    out = load(built / "build/answers/hybrid_rerank.json")
    assert out["status"] == "unavailable" and out["answers"] == [] and "no-such-org" in out["reason"]
    m = load(built / "metrics/retrieval.json")
    assert m["hybrid_rerank"]["answers"] == {"available": 0}


def test_answer_measures_in_the_metrics_file(built):
    a = load(built / "metrics/retrieval.json")["bm25"]["answers"]
    assert a["n_answers"] == 8
    for key in ("refusal_rate", "contains_reference", "token_f1", "unanswerable_refusal_rate"):
        assert 0.0 <= a[key] <= 1.0


@pytest.mark.slow
def test_kill_minus_9_loses_no_finished_answer(built, tmp_path):
    """SIGKILL a generate run once some answers are in the cache; the rerun takes those from
    the cache, asks the LLM only for the rest, and writes a complete, identical output."""
    cache = tmp_path / "cache"
    args = [sys.executable, str(ROOT / "stages" / "generate.py"), *map(str, generate_args(built, "bm25", tmp_path / "a.json"))]
    done = kill_after_cached(args, built, cache, 3)
    assert 3 <= done < 8, f"expected to kill mid-run, found {done} answers"
    assert not (tmp_path / "a.json").exists(), "no half-written output"
    kept = cached_count(cache)
    res = subprocess.run(args, cwd=built, env={**os.environ, "RAG_ABLATION_CACHE": str(cache)},
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert f"cache hits {kept}, misses {8 - kept}" in res.stderr
    assert (tmp_path / "a.json").read_bytes() == (built / "build/answers/bm25.json").read_bytes()


@pytest.mark.bad_input
def test_generation_config_must_be_a_retrieval_config(built, tmp_path):
    p = yaml.safe_load((built / "params.yaml").read_text())
    p["generation"]["configs"].append("bm25_typo")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
    res = stage(tmp_path, "score.py", *score_args(built, tmp_path / "r.csv", tmp_path / "a.csv"), ok=False)
    assert res.returncode == 2 and "generation.configs: 'bm25_typo' not a retrieval config" in res.stderr
    assert not (tmp_path / "r.csv").exists() and not (tmp_path / "a.csv").exists()


def test_dense_stage_reports_truncation_without_the_indexing_errors_warning(tmp_path):
    """A chunk longer than the model's 256 wordpieces is embedded truncated, on purpose: the
    stage reports the share in one line of its own, and transformers' warning that such a
    sequence "will result in indexing errors" is not printed. Rerun with every text in the
    embedding cache, it reports the same without loading the model."""
    long_body = " ".join(f"word{i} settles ledger entries nightly" for i in range(120))
    chunk = {"id": "t/a.md#0", "doc": "t/a.md", "track": "t", "start": 0, "end": len(long_body),
             "heading_path": ["A"], "heading": "", "body": long_body}
    (tmp_path / "chunks.jsonl").write_text(json.dumps(chunk) + "\n")
    shutil.copy(FIXTURES / "params.yaml", tmp_path / "params.yaml")
    res = stage(tmp_path, "dense_index.py", "--chunks", tmp_path / "chunks.jsonl", "--out", tmp_path / "dense",
                "--metrics", tmp_path / "m.json")
    assert "100.0% of chunks exceed 256 wordpieces and are embedded truncated" in res.stderr
    assert "indexing errors" not in res.stderr and "Token indices sequence length" not in res.stderr
    assert load(tmp_path / "m.json")["truncated_share"] == 1.0
    # again with every text cached: the same figures, counted without loading the model (a
    # sentence_transformers or torch that fails to import ahead on the path would stop it)
    blocker = tmp_path / "no_model"
    blocker.mkdir()
    for name in ("sentence_transformers", "torch"):
        (blocker / f"{name}.py").write_text("raise ImportError('the model was loaded')\n")
    env = {**os.environ, "RAG_ABLATION_CACHE": str(tmp_path / ".cache"), "PYTHONPATH": str(blocker)}
    again = subprocess.run([sys.executable, str(ROOT / "stages/dense_index.py"), "--chunks", str(tmp_path / "chunks.jsonl"),
                            "--out", str(tmp_path / "dense2"), "--metrics", str(tmp_path / "m2.json")],
                           cwd=tmp_path, capture_output=True, text=True, env=env)
    assert again.returncode == 0, again.stderr
    assert "100.0% of chunks exceed 256 wordpieces" in again.stderr
    assert load(tmp_path / "m2.json") == load(tmp_path / "m.json")


def test_one_switch_skips_every_llm_stage_and_runs_the_rest(built, tmp_path):
    """`llm.backend: none`: the LLM transforms, the configs that search with them and the answers
    are marked unavailable with the reason, without loading any model; the rest runs as usual."""
    p = yaml.safe_load((built / "params.yaml").read_text())
    p["llm"]["backend"] = "none"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
    b = built / "build"
    res = stage(tmp_path, "queries.py", "--name", "rewrite", "--questions", b / "q.jsonl", "--prompts", ROOT / "prompts",
                "--out", tmp_path / "rewrite.json", "--latency", tmp_path / "lat.json")
    out = load(tmp_path / "rewrite.json")
    assert out["status"] == "unavailable" and "llm.backend is none" in out["reason"] and out["queries"] == {}
    assert load(tmp_path / "lat.json")["calls"] == 0
    stage(tmp_path, "queries.py", "--name", "none", "--questions", b / "q.jsonl", "--prompts", ROOT / "prompts",
          "--out", tmp_path / "none.json", "--latency", tmp_path / "lat_none.json")
    assert load(tmp_path / "none.json")["status"] == "ok" and load(tmp_path / "none.json")["queries"]
    res = stage(tmp_path, "retrieve.py", "--name", "rewrite", "--questions", b / "q.jsonl", "--chunks",
                b / "chunks/base.jsonl", "--dense", b / "dense/base", "--bm25", b / "bm25/base",
                "--queries", tmp_path / "rewrite.json", *vector_args(tmp_path, "rewrite"), "--out", tmp_path / "run.json",
                "--latency", tmp_path / "l.json")
    run = load(tmp_path / "run.json")
    assert run["status"] == "unavailable" and "llm.backend is none" in run["reason"] and run["questions"] == []
    res = stage(tmp_path, "generate.py", "--name", "bm25", "--run", b / "runs/bm25.json", "--questions",
                b / "q.jsonl", "--prompts", ROOT / "prompts", "--out", tmp_path / "answers.json",
                "--latency", tmp_path / "gl.json")
    answers = load(tmp_path / "answers.json")
    assert answers["status"] == "unavailable" and answers["answers"] == [] and answers["llm"] is None
    assert "generate@bm25: unavailable: answers need an LLM, and llm.backend is none" in res.stderr


# ------------------------------------------------------------------ judging answers
GRADED = ["q-ack", "q-backup-time", "q-count", "q-rate", "q-restore-flag"]


def judge_args(d, name, out):
    b = d / "build"
    return ["--name", name, "--answers", b / f"answers/{name}.json", "--questions", b / "q.jsonl", "--prompts",
            "prompts", "--out", out, "--latency", d / f"metrics/latency/judge_{name}.json"]


def judge_eval_args(d):
    m = d / "metrics"
    return ["--answer-scores", m / "scores/answers.csv", "--retrieval-scores", m / "scores/retrieval.csv",
            "--judgments", d / "build/judgments", "--checks", d / "build/checks.json", "--grades", d / "grades.jsonl",
            "--support", d / "build/support", "--out", m / "judge.json", "--detail", m / "judge_detail.json",
            "--verdicts", m / "scores/verdicts.csv", "--plot", m / "plots/coverage.json",
            "--canaries", m / "scores/canaries.csv", "--roc", m / "plots/roc.json"]


@pytest.fixture(scope="module")
def judged(built):
    """Hand grades for five of bm25's answers (correct for every other one, by position; the first
    three also graded for support: supported, partly, not), one stale grade and one for a config
    without answers; then judge@, support@, judge_checks, judge_eval, stats and report."""
    from rag_ablation.evaluation.judges.grades import Grade, answer_sha256, write_grades
    d, b = built, built / "build"
    answers = {a["id"]: a["answer"] for a in load(b / "answers/bm25.json")["answers"]}
    levels = ("supported", "partly", "not")
    grades = [Grade(answer_sha256(answers[i]), "bm25", "tester", i, "", "correct" if k % 2 == 0 else "incorrect",
                    support=levels[k] if k < len(levels) else None)
              for k, i in enumerate(GRADED)]
    grades += [Grade("0" * 64, "bm25", "tester", "q-rl413", "graded an older answer", "correct"),
               Grade("0" * 64, "dense", "tester", "q-ack", "no such answers", "correct")]
    write_grades(d / "grades.jsonl", grades)
    for name in ("bm25", "hybrid_rerank"):
        stage(d, "judge.py", *judge_args(d, name, b / f"judgments/{name}.json"))
        stage(d, "support.py", "--name", name, "--answers", b / f"answers/{name}.json", "--run",
              b / f"runs/{name}.json", "--questions", b / "q.jsonl", "--prompts", "prompts", "--out",
              b / f"support/{name}.json", "--latency", d / f"metrics/latency/support_{name}.json")
    stage(d, "judge_checks.py", "--questions", b / "q.jsonl", "--grades", d / "grades.jsonl", "--answers",
          b / "answers", "--runs", b / "runs", "--prompts", "prompts", "--out", b / "checks.json")
    stage(d, "judge_eval.py", *judge_eval_args(d))
    stage(d, "stats.py", "--retrieval-scores", d / "metrics/scores/retrieval.csv", "--answer-scores",
          d / "metrics/scores/answers.csv", "--out", d / "metrics/stats.json", "--plots", d / "metrics/plots",
          "--audited-scores", d / "metrics/scores/audited.csv")
    stage(d, "report.py", "--stats", d / "metrics/stats.json", "--judge", d / "metrics/judge_detail.json",
          "--out", d / "metrics/report.md")
    return d


def test_judge_stage_gives_every_answer_a_verdict_of_every_judge(judged):
    from rag_ablation.evaluation.scoring.answer_measures import token_f1
    from rag_ablation.evaluation.judges.grades import answer_sha256
    out = load(judged / "build/judgments/bm25.json")
    answers = load(judged / "build/answers/bm25.json")["answers"]
    refs = {json.loads(line)["id"]: json.loads(line)["answer"] for line in (judged / "build/q.jsonl").read_text().splitlines()}
    assert out["status"] == "ok" and set(out["judges"]) == {"llm", "token_f1", "contains"}
    assert out["judges"]["llm"]["llm"]["backend"] == "llama_cpp" and out["judges"]["token_f1"]["threshold"] == 0.5
    assert [v["id"] for v in out["verdicts"]] == [a["id"] for a in answers]
    for v, a in zip(out["verdicts"], answers):
        assert v["answer_sha256"] == answer_sha256(a["answer"])
        assert v["llm"]["verdict"] in ("correct", "incorrect", "invalid")
        f1 = token_f1(a["answer"], refs[a["id"]])
        assert v["token_f1"] == {"verdict": "correct" if f1 >= 0.5 else "incorrect", "detail": f"{f1:.4f}",
                                 "score": round(f1, 6)}  # the score as written (6 decimals)
        # the embedded model gives token probabilities: every LLM verdict is scored, P(CORRECT) in [0, 1]
        assert v["llm"]["score"] is None or 0.0 <= v["llm"]["score"] <= 1.0
    invalid = sum(v["llm"]["verdict"] == "invalid" for v in out["verdicts"])
    assert out["judges"]["llm"]["invalid"] == invalid
    assert load(judged / "build/judgments/hybrid_rerank.json")["status"] == "unavailable"


def test_judge_rerun_is_served_from_the_cache_and_identical(judged, tmp_path):
    res = stage(judged, "judge.py", *judge_args(judged, "bm25", tmp_path / "again.json"))
    lat = load(judged / "metrics/latency/judge_bm25.json")
    assert lat == {"calls": 8, "hits": 8, "misses": 0}, res.stderr
    assert (tmp_path / "again.json").read_bytes() == (judged / "build/judgments/bm25.json").read_bytes()


def test_canary_sample_makes_canaries_for_a_seeded_sample_of_the_graded_questions(judged, tmp_path):
    from rag_ablation.evaluation.judges.judge_checks import bias_sample
    params = yaml.safe_load((judged / "params.yaml").read_text())
    params["judge"]["canary_sample"] = 2
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copytree(judged / "prompts", tmp_path / "prompts")
    b = judged / "build"
    res = subprocess.run([sys.executable, str(ROOT / "stages/judge_checks.py"), "--questions", str(b / "q.jsonl"),
                          "--grades", str(judged / "grades.jsonl"), "--answers", str(b / "answers"),
                          "--runs", str(b / "runs"), "--prompts", "prompts", "--out", str(tmp_path / "checks.json")],
                         cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "RAG_ABLATION_CACHE": str(judged / ".cache")})  # the verdicts are cached
    assert res.returncode == 0, res.stderr
    out, full = load(tmp_path / "checks.json"), load(judged / "build/checks.json")
    graded = full["canaries"]["questions"]
    assert out["canaries"]["questions"] == bias_sample(graded, 2, params["judge"]["bias_seed"])
    assert [it for it in full["canaries"]["items"] if it["id"] in out["canaries"]["questions"]] == out["canaries"]["items"]
    assert out["length"] == full["length"]  # the length pairs still come from every graded question
    assert "12 canaries over 2 of" in res.stderr


def test_without_an_llm_the_judge_free_judges_still_run(judged, tmp_path):
    params = yaml.safe_load((judged / "params.yaml").read_text())
    params["llm"] = {"backend": "none"}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copytree(judged / "prompts", tmp_path / "prompts")
    b = judged / "build"
    stage(tmp_path, "judge.py", "--name", "bm25", "--answers", b / "answers/bm25.json", "--questions", b / "q.jsonl",
          "--prompts", "prompts", "--out", tmp_path / "j.json", "--latency", tmp_path / "lat.json")
    out = load(tmp_path / "j.json")
    assert out["judges"]["llm"]["status"] == "unavailable" and "backend is none" in out["judges"]["llm"]["reason"]
    assert all("llm" not in v and v["token_f1"]["verdict"] in ("correct", "incorrect") for v in out["verdicts"])


# ------------------------------------------------------------------ support (groundedness)
def support_run(built, tmp_path, name, *, llm=None, out="s.json", latency="lat.json", ask_llm=True):
    """support@NAME on the built project's answers and run, with params of its own in ``tmp_path``
    (two canary answers; ``llm`` replaces the llm block) and the prompt cache in ``tmp_path``."""
    params = yaml.safe_load((built / "params.yaml").read_text())
    params["support"] = {"canaries": 2, "ask_llm": ask_llm}
    if llm is not None:
        params["llm"] = llm
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    b = built / "build"
    res = stage(tmp_path, "support.py", "--name", name, "--answers", b / f"answers/{name}.json", "--run",
                b / f"runs/{name}.json", "--questions", b / "q.jsonl", "--prompts", ROOT / "prompts",
                "--out", tmp_path / out, "--latency", tmp_path / latency)
    return load(tmp_path / out), load(tmp_path / latency), res


def test_support_stage_scores_every_answer_and_the_canaries(built, tmp_path):
    from rag_ablation.evaluation.judges.grades import answer_sha256
    out, latency, _ = support_run(built, tmp_path, "bm25")
    answers = load(built / "build/answers/bm25.json")["answers"]
    assert set(out) == {"config", "status", "reason", "llm", "prompt", "answers", "canaries", "unscored", "invalid"}
    assert out["status"] == "ok" and out["reason"] is None and out["prompt"] == "support"
    assert out["llm"]["backend"] == "llama_cpp" and out["llm"]["top_logprobs"] == 20
    assert [(r["id"], r["answer_sha256"]) for r in out["answers"]] == [(a["id"], answer_sha256(a["answer"]))
                                                                       for a in answers]
    rows = out["answers"] + out["canaries"]
    for row in rows:
        assert row["p_supported"] is None or 0.0 <= row["p_supported"] <= 1.0
        assert row["verdict"] in ("supported", "unsupported", "invalid")
    assert out["unscored"] == sum(r["p_supported"] is None for r in out["answers"])
    assert out["invalid"] == sum(r["verdict"] == "invalid" for r in out["answers"])
    texts = load(built / "build/runs/bm25.json")["passages"]
    shown = {a["id"]: a["passages"] for a in answers}
    assert sorted(c["kind"] for c in out["canaries"]) == ["shown_copy", "shown_copy", "unrelated_copy", "unrelated_copy"]
    for c in out["canaries"]:
        assert set(c) == {"id", "kind", "text", "source", "p_supported", "lexical_support", "reply", "verdict"}
        assert (c["source"] in shown[c["id"]]) is (c["kind"] == "shown_copy") and c["text"]
        assert c["source"] in texts
        assert c["lexical_support"] is None or 0.0 <= c["lexical_support"] <= 1.0
        if c["kind"] == "shown_copy":  # copied from a shown passage: every word is in it
            assert c["lexical_support"] in (1.0, None)
    assert latency["calls"] == len(answers) + 4 and latency["misses"] == latency["calls"]
    again, latency, _ = support_run(built, tmp_path, "bm25", out="again.json", latency="lat2.json")
    assert latency == {"calls": len(answers) + 4, "hits": len(answers) + 4, "misses": 0}
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "s.json").read_bytes()


def test_support_stage_is_unavailable_without_answers_or_an_llm(built, tmp_path):
    """No LLM, or support.ask_llm false: unavailable with the reason and no call, but the same
    canaries as an asked run, scored lexically only (judge_eval still checks lexical support
    against them). No answers: unavailable, no canary."""
    asked, _, _ = support_run(built, tmp_path, "bm25", out="asked.json", latency="al.json")
    lexical_only = [{k: c[k] for k in ("id", "kind", "text", "source", "lexical_support")} | {"p_supported": None}
                    for c in asked["canaries"]]
    assert len(lexical_only) == 4
    out, latency, res = support_run(built, tmp_path, "bm25", llm={"backend": "none"})
    assert out["status"] == "unavailable" and "llm.backend is none" in out["reason"]
    assert out["answers"] == [] and out["canaries"] == lexical_only and out["llm"] is None and latency["calls"] == 0
    assert "support@bm25: unavailable" in res.stderr
    out, latency, _ = support_run(built, tmp_path, "hybrid_rerank", out="h.json", latency="hl.json")
    assert out["status"] == "unavailable" and out["reason"] and out["answers"] == [] and latency["calls"] == 0
    assert out["canaries"] == []
    out, latency, _ = support_run(built, tmp_path, "bm25", out="n.json", latency="nl.json", ask_llm=False)
    assert out["status"] == "unavailable" and "support.ask_llm is false" in out["reason"] and latency["calls"] == 0
    assert out["canaries"] == lexical_only


def test_judge_checks_make_canaries_for_graded_questions_and_pairs_both_ways(judged):
    out = load(judged / "build/checks.json")
    answerable_graded = sorted(set(GRADED) - {"q-count"} | {"q-rl413"})  # stale grades still name a graded question
    assert out["canaries"]["questions"] == answerable_graded
    items = out["canaries"]["items"]
    assert len(items) == 6 * len(answerable_graded)
    assert {it["kind"] for it in items} == set(out["canaries"]["kinds"])
    assert all(it[f"verdict_{j}"] in ("correct", "incorrect", "invalid") for it in items for j in ("llm", "token_f1"))
    pairs = out["length"]["pairs"]
    assert len(pairs) == 3  # judge.bias_sample in the fixture params
    for p in pairs:
        assert p["x_first_pick"] in ("short", "long", None) and p["y_first_pick"] in ("short", "long", None)
        agree = p["x_first_pick"] is not None and p["x_first_pick"] == p["y_first_pick"]
        assert p["winner"] == (p["x_first_pick"] if agree else "tie")
    assert out["self_preference"]["status"] == "not measured"


def test_judge_eval_matches_grades_by_answer_text_and_calibrates(judged):
    detail = load(judged / "metrics/judge_detail.json")
    assert detail["grades"] == {"matching": 5, "stale": 1, "unknown": 1, "answers": 8}
    cal = detail["calibration"]["token_f1"]
    cm = cal["confusion"]
    assert cm["tp"] + cm["fp"] + cm["fn"] + cm["tn"] == 5 and cal["n"] == 5
    e = detail["configs"]["bm25"]
    assert e["graded"] == 5 and e["accuracy"]["hand"]["estimate"] == pytest.approx(3 / 5)
    ppi = e["accuracy"]["token_f1"]["ppi"]
    assert ppi["n_labeled"] == 5 and ppi["n_unlabeled"] == 3
    assert detail["configs"]["hybrid_rerank"]["status"] == "unavailable"
    verdicts = (judged / "metrics/scores/verdicts.csv").read_text().splitlines()
    assert verdicts[0] == ("config,id,slice,answer_sha256,hand,llm,llm_score,token_f1,token_f1_score,contains,"
                           "contains_score,combined,combined_score") and len(verdicts) == 1 + 8
    hand = {line.split(",")[1]: line.split(",")[4] for line in verdicts[1:]}
    assert hand == {i: ("" if i not in GRADED else "1" if GRADED.index(i) % 2 == 0 else "0") for i in hand}

    def numbers_only(v):
        if isinstance(v, dict):
            return all(numbers_only(x) for x in v.values())
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    assert numbers_only(load(judged / "metrics/judge.json"))
    # support: three hand support grades (fewer than support_eval.MIN_LABELS: no scorer calibrated),
    # bm25's P(SUPPORTED) read from support@bm25 for the answer texts it scored
    s = detail["support"]
    assert s["status"] == "ok" and s["levels"] == {"supported": 1, "partly": 1, "not": 1}
    assert all(c["status"] == "unavailable" and "fewer than" in c["reason"] for c in s["calibration"].values())
    assert s["calibration"]["llm_support"]["n"] == 3 and s["primary"] is None
    shares = e["support"]
    assert shares["hand"]["n"] == 3 and shares["hand"]["estimate"] == pytest.approx(1 / 3)
    assert set(e["support"]["split"]) == set(e["two_by_two"])


def test_report_has_the_graded_answer_sections(judged):
    text = (judged / "metrics/report.md").read_text()
    for heading in ("## Judges against hand grades", "## Answer accuracy three ways", "## Canaries",
                    "## What the judge prefers", "## Where answers fail", "## Support (groundedness)",
                    "## Unanswerable questions"):
        assert heading in text
    assert "Self-preference: not measured: needs two answer models" in text
    assert ("5 hand grades (the data set's grades.jsonl; the handbook's is data/labels/grades.jsonl) match the "
            "current text of 8 answers; 1 graded another text of a current answer") in text


def test_a_second_answer_model_measures_self_preference_end_to_end(judged, tmp_path):
    """Self-preference with two answer models: SmolLM2 (llama.cpp, real) and a second model
    served by the stand-in Ollama server (tests/ollama_stub.py: no Ollama server can run here).
    The stand-in answers with a marker and, as a judge, always picks the answer holding its
    marker, in either slot: a judge that prefers itself, which the figures must show."""
    from ollama_stub import MODEL, serving

    def reply(messages):
        text = messages[-1]["content"]
        if "Which answer is better" in text:
            a = text.split("Answer A:", 1)[1].split("Answer B:", 1)[0]
            return "A" if "[second]" in a else "B"
        return "[second] The answer, as the second model writes it."

    with serving(reply) as state:
        params = yaml.safe_load((judged / "params.yaml").read_text())
        params["judge"]["second_llm"] = {"backend": "ollama", "model": MODEL, "host": state.url}
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        shutil.copytree(judged / "prompts", tmp_path / "prompts")
        b = judged / "build"
        env_cache = judged  # the module's cache: SmolLM2's verdicts on the length pairs are already there
        res = subprocess.run([sys.executable, str(ROOT / "stages/judge_checks.py"), "--questions", str(b / "q.jsonl"),
                              "--grades", str(judged / "grades.jsonl"), "--answers", str(b / "answers"),
                              "--runs", str(b / "runs"), "--prompts", "prompts", "--out",
                              str(tmp_path / "checks.json")], cwd=tmp_path, capture_output=True, text=True,
                             env={**os.environ, "RAG_ABLATION_CACHE": str(env_cache / ".cache")})
        assert res.returncode == 0, res.stderr
    checks = load(tmp_path / "checks.json")
    sp = checks["self_preference"]
    assert sp["status"] == "ok" and sp["models"]["second"]["backend"] == "ollama"
    n = len(checks["length"]["pairs"])
    assert len(sp["second_answers"]) == n and all(a["answer"].startswith("[second]") for a in sp["second_answers"])
    assert [p["winner"] for p in sp["pairs"]["second"]] == ["second"] * n  # it always picked itself, both orders
    from rag_ablation.evaluation.judges.judge_eval import self_preference
    figures = self_preference(sp)
    assert figures["judges"]["second"] == {"pairs": n, "own_wins": n, "other_wins": 0, "ties": 0, "own_rate": 1.0}
    assert figures["judges"]["first"]["pairs"] == n
    pairwise = [body for _, path, body in state.requests if path == "/api/chat"
                and "Which answer is better" in body["messages"][-1]["content"]]
    assert len(pairwise) == 2 * n, "every pair judged by the second model in both orders"


def test_a_second_judge_model_served_by_ollama_judges_every_answer(judged, tmp_path):
    """`judge.llm` names another model than the answer model: here one served by the stand-in
    Ollama server (tests/ollama_stub.py; no Ollama server can run here), which replies CORRECT
    when the answer shares a word with the reference and something that is not a verdict
    otherwise. Its verdicts, its identity and its invalid count reach the judgment file."""
    from ollama_stub import MODEL, serving

    def reply(messages):
        text = messages[-1]["content"]
        ref = text.split("Reference answer:", 1)[1].split("\n", 1)[0].lower().split()
        ans = text.split("Answer to grade:", 1)[1].rsplit("Does the answer to grade give", 1)[0].lower().split()
        return "CORRECT" if set(ref) & set(ans) else "I cannot tell."

    with serving(reply) as state:
        params = yaml.safe_load((judged / "params.yaml").read_text())
        params["judge"]["llm"] = {"backend": "ollama", "model": MODEL, "host": state.url}
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        shutil.copytree(judged / "prompts", tmp_path / "prompts")
        b = judged / "build"
        stage(tmp_path, "judge.py", "--name", "bm25", "--answers", b / "answers/bm25.json", "--questions",
              b / "q.jsonl", "--prompts", "prompts", "--out", tmp_path / "j.json", "--latency", tmp_path / "lat.json")
    out = load(tmp_path / "j.json")
    assert out["judges"]["llm"]["llm"]["backend"] == "ollama" and out["judges"]["llm"]["llm"]["model"] == MODEL
    answers = {a["id"]: a["answer"] for a in load(b / "answers/bm25.json")["answers"]}
    refs = {json.loads(line)["id"]: json.loads(line)["answer"] for line in (b / "q.jsonl").read_text().splitlines()}
    for v in out["verdicts"]:
        shared = set(refs[v["id"]].lower().split()) & set(answers[v["id"]].lower().split())
        # the stand-in server sends no token probabilities: verdicts from the reply, with no score
        assert v["llm"] == ({"verdict": "correct", "detail": "CORRECT", "score": None} if shared
                            else {"verdict": "invalid", "detail": "I cannot tell.", "score": None})
    assert "returned no token probabilities" in out["judges"]["llm"]["score_note"]
    assert out["judges"]["llm"]["invalid"] == sum(v["llm"]["verdict"] == "invalid" for v in out["verdicts"])
    assert len([r for r in state.requests if r[1] == "/api/chat"]) == len(answers)


@pytest.mark.slow
def test_kill_minus_9_while_judging_loses_no_finished_verdict(judged, tmp_path):
    """SIGKILL a judge run once some verdicts are in the prompt cache (its own, empty at the
    start); the rerun takes those from the cache, asks the judge model only for the rest, and
    writes the same file as an uninterrupted run."""
    cache = tmp_path / "cache"
    args = [sys.executable, str(ROOT / "stages" / "judge.py"), *map(str, judge_args(judged, "bm25", tmp_path / "j.json"))]
    args[args.index("--latency") + 1] = str(tmp_path / "lat.json")
    done = kill_after_cached(args, judged, cache, 2)
    assert 2 <= done < 8, f"expected to kill mid-run, found {done} verdicts"
    assert not (tmp_path / "j.json").exists(), "no half-written output"
    kept = cached_count(cache)
    res = subprocess.run(args, cwd=judged, env={**os.environ, "RAG_ABLATION_CACHE": str(cache)},
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert load(tmp_path / "lat.json") == {"calls": 8, "hits": kept, "misses": 8 - kept}
    assert (tmp_path / "j.json").read_bytes() == (judged / "build/judgments/bm25.json").read_bytes()


def _numbered_chunks(path, n):
    """``n`` short, distinct chunks of one made-up document, as the chunk stage writes them."""
    words = "ledger settles refunds nightly queue retries invoices audits replicas restores pages alerts".split()
    with open(path, "w") as f:
        for i in range(n):
            body = f"Entry {i}: " + " ".join(words[(i * 7 + j) % len(words)] for j in range(4 + i % 9))
            f.write(json.dumps({"id": f"t/a.md#{i}", "doc": "t/a.md", "track": "t", "start": 0, "end": len(body),
                                "heading_path": ["A"], "heading": "", "body": body}) + "\n")
    return [json.loads(line) for line in open(path)]


def embedded_count(cache):
    import sqlite3
    with sqlite3.connect(cache / "embeddings.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]


@pytest.mark.slow
def test_kill_minus_9_during_embedding_keeps_finished_batches(tmp_path):
    """SIGKILL the dense stage once the embedding cache holds some batches: no index folder is
    left behind, every batch committed before the kill is kept (whole batches only), the rerun
    embeds exactly the missing texts, and its outputs are byte for byte those of an
    uninterrupted run with a cache of its own (started alongside, to save time)."""
    import signal
    import sqlite3
    import time

    n, batch = 192, 16  # batch: the fixture params' embedding.batch_size
    _numbered_chunks(tmp_path / "chunks.jsonl", n)
    shutil.copy(FIXTURES / "params.yaml", tmp_path / "params.yaml")

    def args(out):
        return [sys.executable, str(ROOT / "stages" / "dense_index.py"), "--chunks", str(tmp_path / "chunks.jsonl"),
                "--out", str(out / "dense"), "--metrics", str(out / "m.json")]

    cache, out, whole = tmp_path / "cache", tmp_path / "killed", tmp_path / "whole"
    env = {**os.environ, "RAG_ABLATION_CACHE": str(cache)}
    uninterrupted = subprocess.Popen(args(whole), cwd=tmp_path, env={**os.environ, "RAG_ABLATION_CACHE": str(tmp_path / "c2")},
                                     stderr=subprocess.PIPE, text=True)
    proc = subprocess.Popen(args(out), cwd=tmp_path, env=env, stderr=subprocess.DEVNULL)
    seen, deadline = 0, time.time() + 120
    while seen < 2 * batch and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
        try:
            seen = embedded_count(cache)
        except sqlite3.OperationalError:  # not created yet
            pass
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = embedded_count(cache)
    assert 2 * batch <= kept < n, f"expected to kill mid-embedding, found {kept} of {n} vectors"
    assert kept % batch == 0, "the cache holds whole batches only"
    assert not out.exists(), "no half-written output"

    res = subprocess.run(args(out), cwd=tmp_path, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert f"embedded {n - kept} new texts, {kept} from the cache" in res.stderr
    assert embedded_count(cache) == n
    assert sorted(p.name for p in out.iterdir()) == ["dense", "m.json"], "no temporary folder left"
    assert uninterrupted.wait(timeout=120) == 0, uninterrupted.stderr.read()
    assert f"embedded {n} new texts, 0 from the cache" in uninterrupted.stderr.read()
    for name in ("dense/index.faiss", "dense/chunk_ids.json", "m.json"):
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name


@pytest.mark.slow
def test_chunk_stage_takes_a_5_mb_document(tmp_path):
    """One 5 MB document (about 20,000 chunks) is chunked like a small one: every chunk is its
    source's text at its offsets, no longer than chunk_size, in order, to the end of the file.
    (Measured: 5 MB in 1.8 s; 50 MB in 17 s and 550 MB of memory, 201,620 chunks; the cost is
    linear, and embedding so many chunks, not chunking them, is what takes long.)"""
    words = "ledger settles refunds nightly queue retries invoices audits replicas restores pages alerts".split()
    parts, i = ["# Big\n"], 0
    while sum(map(len, parts)) < 5_000_000:
        parts.append(f"\n## Section {i // 20}\n\n" if i % 20 == 0 else
                     " ".join(words[(i * 7 + j) % len(words)] for j in range(60)) + f" ({i}).\n\n")
        i += 1
    src = "".join(parts)
    (tmp_path / "corpus/ops").mkdir(parents=True)
    (tmp_path / "corpus/ops/big.md").write_text(src)
    shutil.copy(FIXTURES / "params.yaml", tmp_path / "params.yaml")
    stage(tmp_path, "chunk.py", "--name", "base", "--corpus", "corpus", "--out", tmp_path / "chunks.jsonl")
    chunks = [json.loads(line) for line in (tmp_path / "chunks.jsonl").read_text().splitlines()]
    assert len(chunks) > 5_000_000 // 300
    assert all(c["body"] == src[c["start"]:c["end"]] and len(c["body"]) <= 300 for c in chunks)
    assert [c["start"] for c in chunks] == sorted(c["start"] for c in chunks)
    assert chunks[-1]["end"] == len(src.rstrip())


def _split_project(d, docs, params_split):
    """A tiny corpus in ``d`` with one main and one identifier question per document (span: its
    first sentence, the second), two unanswerable questions, and the fixture params with
    ``split: params_split``."""
    questions = []
    for name in docs:
        first, second = f"The {name} service restarts every night at 02:00 UTC.", f"Its flag is --{name}-restart-now."
        (d / "corpus/ops").mkdir(parents=True, exist_ok=True)
        (d / f"corpus/ops/{name}.md").write_text(f"# {name}\n\n{first} {second}\n")
        questions += [
            {"id": f"q-{name}-when", "question": f"When does {name} restart?", "doc": f"ops/{name}.md",
             "span": first, "answer": "02:00 UTC.", "slice": "main", "track": "ops"},
            {"id": f"q-{name}-flag", "question": f"Which flag restarts {name}?", "doc": f"ops/{name}.md",
             "span": second, "answer": f"--{name}-restart-now", "slice": "identifier", "track": "ops"}]
    questions += [{"id": f"q-none-{i}", "question": f"Unknown {i}?", "doc": None, "span": None, "answer": "n/a",
                   "slice": "unanswerable", "track": "ops"} for i in range(2)]
    (d / "questions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in questions))
    params = yaml.safe_load((FIXTURES / "params.yaml").read_text())
    (d / "params.yaml").write_text(yaml.safe_dump({**params, "split": params_split}, sort_keys=False))


def _run_split(d, ok=True):
    stage(d, "questions.py", "--corpus", "corpus", "--questions", "questions.jsonl", "--out", d / "build/q.jsonl",
          "--metrics", d / "metrics/questions.json")
    return stage(d, "split.py", "--questions", d / "build/q.jsonl", "--out", d / "data/split/handbook.jsonl", ok=ok)


def test_split_stage_assigns_and_keeps_old_assignments_when_questions_are_appended(tmp_path):
    _split_project(tmp_path, ["alpha", "beta", "gamma", "delta"], {"test_fraction": 0.5, "seed": 0})
    res = _run_split(tmp_path)
    out = tmp_path / "data/split/handbook.jsonl"
    text = out.read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows) and len(rows) == 4 * 2 + 2
    assert text == "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), "sorted keys, one object a line"
    assert {r["side"] for r in rows} == {"dev", "test"}
    for doc in ("alpha", "beta", "gamma", "delta"):
        assert len({r["side"] for r in rows if r["group"] == f"ops/{doc}.md"}) == 1, "a document stays on one side"
    line = [x for x in res.stderr.splitlines() if x.startswith("split (")]
    assert len(line) == 1 and "dev 5, test 5" in line[0], res.stderr
    assert "identifier 2/2, main 2/2, unanswerable 1/1" in line[0] and "0 kept, 10 newly assigned, 0 dropped" in line[0]

    _run_split(tmp_path)
    assert out.read_text() == text, "an unchanged rerun gives the same bytes"

    # append a document (and drop nothing): the old questions keep their sides
    _split_project(tmp_path, ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"], {"test_fraction": 0.5, "seed": 0})
    res = _run_split(tmp_path)
    again = {r["id"]: r["side"] for r in map(json.loads, out.read_text().splitlines())}
    assert {r["id"]: again[r["id"]] for r in rows} == {r["id"]: r["side"] for r in rows}
    assert {"q-epsilon-when", "q-zeta-flag"} <= set(again) and len(again) == 6 * 2 + 2
    assert "10 kept, 4 newly assigned, 0 dropped" in res.stderr

    # split: none: every question on side all
    _split_project(tmp_path, ["alpha", "beta", "gamma", "delta"], "none")
    res = _run_split(tmp_path)
    assert {json.loads(x)["side"] for x in out.read_text().splitlines()} == {"all"}
    assert "all 10 questions on side all (4 dropped from the previous file)" in res.stderr


def test_split_stage_warns_on_a_slice_with_one_document(tmp_path):
    """A first small question set (one document) is not blocked: the split is written and the
    stage warns, naming the slices a sweep cannot be confirmed on."""
    _split_project(tmp_path, ["alpha"], {"test_fraction": 0.5, "seed": 0})
    res = _run_split(tmp_path)
    assert "warning: the split leaves 2 slice(s) with no question on one side: identifier (dev 1, test 0), " \
           "main (dev 1, test 0)" in res.stderr
    rows = [json.loads(x) for x in (tmp_path / "data/split/handbook.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and {r["side"] for r in rows if r["group"] == "ops/alpha.md"} == {"dev"}


def test_an_index_no_config_searches_is_not_built(built, tmp_path):
    """A plan that says "no dense" makes the dense stage write only the unbuilt marker, loading no
    model (no embedding cache is opened); a dense config would then be refused in one line."""
    b = built / "build"
    shutil.copy(built / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "plan.json").write_text('{"bm25": true, "dense": false}\n')
    res = stage(tmp_path, "dense_index.py", "--chunks", b / "chunks/base.jsonl", "--out", tmp_path / "dense",
                "--metrics", tmp_path / "m.json", "--plan", tmp_path / "plan.json")
    assert [p.name for p in (tmp_path / "dense").iterdir()] == ["unused.json"]
    assert load(tmp_path / "m.json")["built"] == 0 and "is not built" in res.stderr
    assert not (tmp_path / ".cache").exists(), "nothing embedded, no cache opened"
    res = stage(tmp_path, "retrieve.py", "--name", "dense", "--questions", b / "q.jsonl", "--chunks",
                b / "chunks/base.jsonl", "--dense", tmp_path / "dense", "--bm25", b / "bm25/base",
                "--queries", b / "queries/none.json", *vector_args(built, "none"), "--out", tmp_path / "run.json",
                "--latency", tmp_path / "lat.json", ok=False)
    assert res.returncode == 2 and "which was not built" in res.stderr and not (tmp_path / "run.json").exists()


def test_configs_left_out_of_run_configs_build_nothing_and_run_unavailable(built, tmp_path):
    """``run_configs: [bm25]``: the plan asks for no dense index anywhere and no index at all on
    `heading`; the dense config writes an unavailable ranking naming run_configs (no index opened),
    the listed one runs as before; a gated config left out makes the gate stage record "not
    compared" with the reason."""
    b = built / "build"
    params = yaml.safe_load((built / "params.yaml").read_text())
    params["run_configs"] = ["bm25"]
    params["gate"]["configs"] = ["dense"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    res = stage(tmp_path, "index_plan.py", "--out", tmp_path / "plan", "--transforms", tmp_path / "plan_queries")
    assert load(tmp_path / "plan/base.json") == {"bm25": True, "dense": False}
    assert load(tmp_path / "plan/heading.json") == {"bm25": False, "dense": False}
    # the rewrite config is left out, so its transform asks the LLM nothing
    assert load(tmp_path / "plan_queries/none.json") == {"used": True, "reason": None}
    unused = load(tmp_path / "plan_queries/rewrite.json")
    assert unused["used"] is False and "rewrite is left out of this run" in unused["reason"]
    assert "index_plan: query transform rewrite not run" in res.stderr
    res = stage(tmp_path, "queries.py", "--name", "rewrite", "--questions", b / "q.jsonl", "--prompts", ROOT / "prompts",
                "--plan", tmp_path / "plan_queries/rewrite.json", "--out", tmp_path / "rewrite.json",
                "--latency", tmp_path / "lat_rewrite.json")
    out = load(tmp_path / "rewrite.json")
    assert out["status"] == "unavailable" and out["reason"] == unused["reason"] and out["queries"] == {}
    assert load(tmp_path / "lat_rewrite.json")["calls"] == 0

    def retrieve(name):
        return stage(tmp_path, "retrieve.py", "--name", name, "--questions", b / "q.jsonl", "--chunks",
                     b / "chunks/base.jsonl", "--dense", tmp_path / "no-such-index", "--bm25", b / "bm25/base",
                     "--queries", b / "queries/none.json", *vector_args(built, "none"), "--out",
                     tmp_path / f"{name}.json", "--latency", tmp_path / f"lat_{name}.json")

    res = retrieve("dense")
    run = load(tmp_path / "dense.json")
    assert run["status"] == "unavailable" and run["questions"] == []
    assert run["reason"] == ("config 'dense' is not in run_configs (bm25), so it does not run; add it to "
                             "run_configs or run every config: dvc exp run -S run_configs=all")
    assert "retrieve@dense: unavailable: config 'dense' is not in run_configs" in res.stderr
    retrieve("bm25")
    assert load(tmp_path / "bm25.json")["questions"] == load(b / "runs/bm25.json")["questions"]

    (tmp_path / "gate_baseline.csv").write_text((built / "metrics/scores/retrieval.csv").read_text())
    res = stage(tmp_path, "gate.py", "--scores", built / "metrics/scores/retrieval.csv", "--baseline",
                tmp_path / "gate_baseline.csv", "--out", tmp_path / "gate.json")
    assert "gate: not compared: config 'dense' is not in run_configs (bm25)" in res.stderr
    assert load(tmp_path / "gate.json") == load_incomparable()


def load_incomparable():
    from rag_ablation.evaluation.gate.formats import INCOMPARABLE_METRICS

    return json.loads(json.dumps(INCOMPARABLE_METRICS))


def app_project(built, tmp_path, apps):
    """A folder with the built project's params plus ``apps``, the fixture's own_app code and the
    built question file: where the app stage runs."""
    shutil.copytree(FIXTURES / "own_app", tmp_path / "own")
    params = yaml.safe_load((built / "params.yaml").read_text())
    params["apps"] = apps
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    shutil.copytree(built / "corpus", tmp_path / "corpus")
    return tmp_path


def app_args(d, built, name):
    return ["--name", name, "--questions", built / "build/q.jsonl", "--out", d / f"runs/{name}.json",
            "--latency", d / f"latency/{name}.json"]


def test_app_stage_runs_a_team_app_as_a_retrieval_run(built, tmp_path):
    params = yaml.safe_load((built / "params.yaml").read_text())
    d = app_project(built, tmp_path, {"ownbm25": {
        "method": "python", "target": "bm25_app:retrieve", "path": ["own"], "deps": "own",
        "args": {"corpus": "corpus", "size": params["chunk_size"], "overlap": params["chunk_overlap"]}}})
    res = stage(d, "app.py", *app_args(d, built, "ownbm25"))
    assert "8 call(s) to the app, 0 from the cache" in res.stderr
    run, builtin = load(d / "runs/ownbm25.json"), load(built / "build/runs/bm25.json")
    assert run["status"] == "ok" and run["config"]["app"]["target"] == "bm25_app:retrieve"
    # the same rankings as retrieve@bm25 (the wrapper returns the chunk ids; chunking base is the bm25 config's)
    assert [r["ranking"] for r in run["questions"]] == [r["ranking"][:10] for r in builtin["questions"]]
    assert run["app"]["missing"] == 0 and run["app"]["changed"] is False
    lat = load(d / "latency/ownbm25.json")
    assert lat["calls"] == 8 and lat["n_timed"] == 8 and lat["total"]["p50_ms"] > 0
    again = stage(d, "app.py", *app_args(d, built, "ownbm25"))
    assert "0 call(s) to the app, 8 from the cache" in again.stderr


@pytest.mark.bad_input
def test_app_stage_with_a_target_that_cannot_be_imported_writes_nothing(built, tmp_path):
    d = app_project(built, tmp_path, {"broken": {"method": "python", "target": "no_module_here:retrieve",
                                                 "path": ["own"], "deps": "own"}})
    res = stage(d, "app.py", *app_args(d, built, "broken"), ok=False)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1].startswith("error: app target 'no_module_here:retrieve': module "
                                                         "'no_module_here' cannot be imported")
    assert not (d / "runs/broken.json").exists() and not (d / "latency/broken.json").exists()


def test_generate_keeps_the_answers_of_an_app_that_answers(built, tmp_path):
    d = app_project(built, tmp_path, {"asker": {"method": "file", "answers": "answers.jsonl", "deps": "answers.jsonl"}})
    qs = [json.loads(line) for line in (built / "build/q.jsonl").read_text().splitlines()]
    (d / "answers.jsonl").write_text("".join(json.dumps({"id": q["id"], "answer": f"answer {n}", "passages": [
        {"doc": q["doc"] or "x.md", "text": "what the app read"}]}) + "\n" for n, q in enumerate(qs)))
    stage(d, "app.py", *app_args(d, built, "asker"))
    params = yaml.safe_load((d / "params.yaml").read_text())
    params["generation"]["configs"] = ["asker"]
    params["generation"]["k"] = 1
    (d / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    shutil.copytree(ROOT / "prompts", d / "prompts")
    res = stage(d, "generate.py", "--name", "asker", "--run", d / "runs/asker.json", "--questions",
                built / "build/q.jsonl", "--prompts", "prompts", "--out", d / "answers/asker.json",
                "--latency", d / "latency/generate_asker.json")
    assert "answer(s) of the app itself" in res.stderr
    out = load(d / "answers/asker.json")
    run = load(d / "runs/asker.json")
    assert out["status"] == "ok" and out["llm"] == {"app": "asker"}
    assert {a["answer"] for a in out["answers"]} <= {f"answer {n}" for n in range(len(qs))}
    for a in out["answers"]:
        assert [run["passages"][p] for p in a["passages"]] == ["what the app read"]
