"""The retrieval gate's rules (rag_ablation.evaluation.gate.rules) and its stage (stages/gate.py) on the
example data: the committed per-question scores of 172 questions, and BM25 rerun here on the
example corpus. Reproduces the chapter's two regressions -- the default config reverted to dense
retrieval, and the BM25 tokenizer swapped for str.split() -- and checks the gate names exactly
the questions that went from hit to miss. The forms are tested in test_formats.py, the command
(`rag-ablation check`) in tests/commands/test_check.py."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from dataclasses import replace

import pytest
import yaml
from gate_rows import GATED, RULES, SETTINGS, by_slice, committed, of, project, reverted_to_dense  # noqa: F401  (committed is a fixture)

from conftest import ROOT
from rag_ablation.core import config
from rag_ablation.core.config import ConfigError, GateConfig, Params, load_config
from rag_ablation.core.errors import UserError
from rag_ablation.evaluation.gate.formats import format_text, summary_line, to_metrics
from rag_ablation.evaluation.gate.rules import ALL, EXIT_FAIL, Incomparable, run_gate
from rag_ablation.evaluation.scoring.measures import RECALL_KS


def expected_changes(base_rows, new_rows, k=5):
    """Per slice (and all): ids hit at k in the baseline and missed now, and the reverse."""
    col = f"hit_at_{k}"
    new = {r["id"]: r for r in new_rows}
    out = {}
    for b in base_rows:
        if not b["answerable"]:
            continue
        a = new[b["id"]]
        for s in (ALL, b["slice"]):
            failing, passing = out.setdefault(s, (set(), set()))
            if b[col] and not a[col]:
                failing.add(b["id"])
            if a[col] and not b[col]:
                passing.add(b["id"])
    return {s: (tuple(sorted(f)), tuple(sorted(p))) for s, (f, p) in out.items()}


# --------------------------------------------------------------- regression 1: dense


def test_reverting_the_default_config_to_dense_fails_naming_the_questions(committed):
    baseline = of(committed, GATED)
    workspace = reverted_to_dense(committed)
    result = run_gate(baseline, workspace, rules=RULES, settings=SETTINGS, against="accepted")
    assert not result.passed and result.exit_status == EXIT_FAIL
    expected = expected_changes(baseline, of(committed, "dense"))
    slices = by_slice(result)
    assert list(slices) == [ALL, "identifier", "main", "paraphrase"]
    for name, s in slices.items():
        assert (s.newly_failing, s.newly_passing) == expected[name], name
    identifier = slices["identifier"]
    assert identifier.newly_failing and all(i.startswith("identifier-") for i in identifier.newly_failing)
    dense_hits = sum(r["hit_at_5"] for r in of(committed, "dense") if r["slice"] == "identifier")
    assert (identifier.hits, identifier.baseline_hits, identifier.n) == (dense_hits, 34, 40)
    assert identifier.status == "FAIL"
    assert f"{len(identifier.newly_failing)} newly failing, at most 1 allowed" in identifier.failures
    assert any("below the floor 0.800" in f for f in identifier.failures)
    assert identifier.change.high < 0, "a loss of this size is outside the noise"
    text = format_text(result)
    line = (f"hybrid_heading identifier: recall@5 = {dense_hits / 40:.3f} ({dense_hits}/40), "
            f"newly failing {list(identifier.newly_failing)}, newly passing {list(identifier.newly_passing)}")
    assert line in text.splitlines()
    assert text.rstrip().splitlines()[-1].startswith("FAIL: ") and "hybrid_heading/identifier" in text


def test_the_margin_rule_fails_only_a_loss_its_interval_excludes(committed):
    baseline, workspace = of(committed, GATED), reverted_to_dense(committed)
    lenient = replace(RULES, floor=None, max_newly_failing=100)
    assert run_gate(baseline, workspace, rules=lenient, settings=SETTINGS, against="accepted").passed
    strict = replace(lenient, non_inferiority_margin=0.05)
    slices = by_slice(run_gate(baseline, workspace, rules=strict, settings=SETTINGS, against="accepted"))
    identifier = slices["identifier"]
    assert identifier.change.high < -0.05
    assert [f for f in identifier.failures if "lies below -0.05" in f]
    assert not slices["paraphrase"].failures, "dense gains on paraphrases: no margin failure"
    wide = replace(lenient, non_inferiority_margin=0.5)
    assert run_gate(baseline, workspace, rules=wide, settings=SETTINGS, against="accepted").passed


# ----------------------------------------------------------- regression 2: tokenizer


def bm25_rows(tokenizer: str):
    """Config `bm25` of params.yaml, searched here on the example corpus with ``tokenizer``
    and scored against the span labels, exactly as the chunk, bm25, labels, retrieve and score
    stages do (no embeddings needed)."""
    from rag_ablation.data.corpus import load_corpus
    from rag_ablation.evaluation.scoring.labels import relevant_chunks
    from rag_ablation.evaluation.scoring.scores import score_run
    from rag_ablation.data.questions import load_questions
    from rag_ablation.retrieval.bm25 import make_scorer
    from rag_ablation.retrieval.chunking import chunk_corpus, chunk_options
    from rag_ablation.retrieval.runner import Retrievers, run_config
    from rag_ablation.data.text import get_tokenizer

    params = load_config(ROOT / "params.yaml")
    cfg = params.config("bm25")
    documents = load_corpus(ROOT / "data" / "corpus")
    questions = load_questions(ROOT / "data" / "questions" / "handbook.jsonl")
    chunks = chunk_corpus(((d.doc, d.track, d.text) for d in documents), **chunk_options(params.chunking(cfg.chunking)))
    answerable = [q for q in questions if q.answerable]
    relevant = relevant_chunks({q.id: q.span or "" for q in answerable}, ((c.id, c.doc, c.body) for c in chunks),
                               window=params.labels.window)
    tokenize = get_tokenizer(tokenizer)
    b = params.bm25
    scorer = make_scorer(b.impl, [tokenize(c.text) for c in chunks], k1=b.k1, b=b.b, epsilon=b.epsilon)
    records, _ = run_config(cfg, questions, Retrievers(bm25=scorer, bm25_ids=[c.id for c in chunks],
                                                       tokenizer=tokenizer))
    return score_run("bm25", records, relevant, questions)


@pytest.fixture(scope="module")
def tokenizer_runs():
    return bm25_rows("regex"), bm25_rows("whitespace")


def test_swapping_the_tokenizer_for_str_split_fails_on_identifiers(tokenizer_runs):
    regex, whitespace = tokenizer_runs
    rules = replace(RULES, configs=("bm25",), floor=None)  # the chapter's per-question rule only
    result = run_gate(regex, whitespace, rules=rules, settings=SETTINGS, against="accepted")
    assert not result.passed
    slices = by_slice(result, "bm25")
    expected = expected_changes(regex, whitespace)
    for name, s in slices.items():
        assert (s.newly_failing, s.newly_passing) == expected[name], name
    identifier = slices["identifier"]
    assert identifier.status == "FAIL" and len(identifier.newly_failing) >= 10
    assert all(i.startswith("identifier-") for i in identifier.newly_failing)
    # `pfcount?` no longer matches `pfcount`: identifiers lose most, and the loss is no noise
    assert identifier.change.estimate == min(s.change.estimate for s in slices.values())
    assert identifier.change.high < 0
    assert summary_line(identifier) in format_text(result)


# --------------------------------------------------------------------------- verdicts


def test_unchanged_workspace_passes(committed):
    result = run_gate(of(committed, GATED), committed, rules=RULES, settings=SETTINGS, against="accepted")
    assert result.passed and result.exit_status == 0 and not result.failed
    for s in result.slices:
        assert s.status == "PASS" and not s.newly_failing and not s.newly_passing and s.change.estimate == 0
    assert "hybrid_heading identifier: recall@5 = 0.850 (34/40), newly failing [], newly passing []" in \
        format_text(result)
    assert format_text(result).rstrip().endswith("PASS: all 4 gated slice(s) passed")


def test_a_small_slice_is_not_gated_and_named(committed):
    rules = replace(RULES, min_questions=30)  # paraphrase has 24 questions
    result = run_gate(of(committed, GATED), reverted_to_dense(committed), rules=rules, settings=SETTINGS,
                      against="accepted")
    paraphrase = by_slice(result)["paraphrase"]
    assert paraphrase.too_small and not paraphrase.passed and not paraphrase.failures
    assert paraphrase.status == "TOO SMALL"
    assert "not gated (too small): hybrid_heading/paraphrase (24 questions)" in result.reason
    assert "  TOO SMALL: 24 questions, fewer than 30 (gate.min_questions): not gated (" in format_text(result)
    unchanged = run_gate(of(committed, GATED), committed, rules=rules, settings=SETTINGS, against="accepted")
    assert unchanged.passed and "hybrid_heading/paraphrase (24 questions)" in unchanged.reason


def test_every_slice_too_small_fails_with_that_reason(committed):
    rules = replace(RULES, min_questions=1000)
    result = run_gate(of(committed, GATED), committed, rules=rules, settings=SETTINGS, against="accepted")
    assert not result.passed and not result.failed and len(result.not_gated) == 4
    assert "nothing was gated" in result.reason
    assert json.loads(json.dumps(to_metrics(result)))["pass"] == 0


# --------------------------------------------------------------- not comparable: exit 2


@pytest.mark.bad_input
def test_a_removed_question_cannot_be_compared(committed):
    workspace = [r for r in committed if r["id"] != "identifier-architecture-02"]
    with pytest.raises(Incomparable) as e:
        run_gate(of(committed, GATED), workspace, rules=RULES, settings=SETTINGS, against="accepted")
    message = str(e.value)
    assert "1 question(s) only in accepted: identifier-architecture-02" in message and "\n" not in message
    assert "rag-ablation check --accept" in message


@pytest.mark.bad_input
def test_a_changed_span_cannot_be_compared(committed):
    workspace = [{**r, "doc": "elsewhere.md"} if r["id"] == "main-architecture-01" and r["config"] == GATED else
                 {**r, "n_relevant": 7} if r["id"] == "main-architecture-02" and r["config"] == GATED else r
                 for r in committed]
    with pytest.raises(Incomparable) as e:
        run_gate(of(committed, GATED), workspace, rules=RULES, settings=SETTINGS, against="accepted")
    message = str(e.value)
    assert "doc changed for 1 question(s)" in message
    assert "main-architecture-01 ('architecture/quillgate-gateway.md' -> 'elsewhere.md')" in message
    assert "n_relevant changed for 1 question(s)" in message and "main-architecture-02 (2 -> 7)" in message


@pytest.mark.bad_input
def test_a_gated_config_missing_on_a_side_cannot_be_compared(committed):
    with pytest.raises(Incomparable, match="gated config 'hybrid_heading' has no rows in accepted"):
        run_gate(of(committed, "dense"), committed, rules=RULES, settings=SETTINGS, against="accepted")
    with pytest.raises(Incomparable, match="gated config 'hybrid_heading' has no rows in the workspace scores"):
        run_gate(of(committed, GATED), of(committed, "dense"), rules=RULES, settings=SETTINGS, against="accepted")


@pytest.mark.bad_input
def test_a_floor_for_an_unknown_slice_is_an_error(committed):
    rules = replace(RULES, floor={"identifer": 0.8})
    with pytest.raises(UserError, match="gate.floor: no slice named 'identifer'.*slices are: all, identifier"):
        run_gate(of(committed, GATED), committed, rules=rules, settings=SETTINGS, against="accepted")


# ------------------------------------------------------------------- params block


def test_gate_params_and_defaults():
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert config.GATE_KS == RECALL_KS
    shipped = Params.from_params(base).gate
    assert shipped.configs == (GATED,) and shipped.floor_for("identifier") == 0.8
    raw = copy.deepcopy(base)
    del raw["gate"]
    default = Params.from_params(raw).gate
    assert default.configs == tuple(base["generation"]["configs"]) and default.floor is None
    assert default.k == 5 and default.max_newly_failing == 1 and default.min_questions == 20
    assert GateConfig.from_params({"floor": 0.7}, retrieval=("a", "b")).floor_for("anything") == 0.7
    assert GateConfig.from_params(None, retrieval=("a", "b")).configs == ("a",)


@pytest.mark.bad_input
@pytest.mark.parametrize("key,value,message", [
    ("k", 3, "gate.k: expected one of 1, 5, 10, got 3"),
    ("configs", ["nope"], "gate.configs: 'nope' not a retrieval config"),
    ("configs", [], "gate.configs: expected a non-empty list of retrieval config names"),
    ("floor", 1.5, "gate.floor: expected a number from 0 to 1, or a mapping"),
    ("floor", {"identifier": -0.1}, "gate.floor.identifier: expected a number from 0 to 1"),
    ("max_newly_failing", -1, "gate.max_newly_failing: expected an integer >= 0"),
    ("min_questions", 0, "gate.min_questions: expected a positive integer"),
    ("threshold", 1, "gate: unknown key(s) threshold"),
])
def test_bad_gate_params_name_the_key(key, value, message):
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["gate"][key] = value
    with pytest.raises(ConfigError) as e:
        Params.from_params(raw)
    assert str(e.value).startswith(message)


# -------------------------------------------------------------------------- the stage


def stage(cwd, baseline="metrics/gate_baseline.csv"):
    return subprocess.run([sys.executable, str(ROOT / "stages" / "gate.py"), "--scores",
                           "metrics/scores/retrieval.csv", "--baseline", baseline, "--out", "metrics/gate.json"],
                          cwd=cwd, capture_output=True, text=True)


def test_stage_records_a_fail_without_failing(tmp_path, committed):
    d = project(tmp_path, reverted_to_dense(committed), of(committed, GATED))
    res = stage(d)
    assert res.returncode == 0, res.stderr
    first = (d / "metrics/gate.json").read_bytes()
    m = json.loads(first)
    assert m["pass"] == 0 and m["configs"][GATED]["identifier"]["pass"] == 0
    assert "FAIL: 3 of 4 gated slice(s) failed" in res.stderr
    assert stage(d).returncode == 0 and (d / "metrics/gate.json").read_bytes() == first, "deterministic"


def test_stage_records_incomparable_sides(tmp_path, committed):
    d = project(tmp_path, committed, [r for r in of(committed, GATED) if r["id"] != "main-guides-10"])
    res = stage(d)
    assert res.returncode == 0, res.stderr
    assert json.loads((d / "metrics/gate.json").read_text()) == {"comparable": 0, "pass": 0}
    assert "gate: not compared: cannot compare 'hybrid_heading'" in res.stderr


@pytest.mark.bad_input
def test_stage_without_a_baseline_is_one_line_and_exit_2(tmp_path, committed):
    d = project(tmp_path, committed)
    res = stage(d)
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert res.stderr.startswith("error: no accepted baseline metrics/gate_baseline.csv")
    assert not (d / "metrics/gate.json").exists()


@pytest.mark.bad_input
def test_a_baseline_of_another_data_set_is_one_line_saying_how_to_accept(committed):
    """After `dataset:` switches, the accepted baseline holds none of the new questions: one
    NoBaseline (an Incomparable) naming the data set and the accept command, not a line per config."""
    from rag_ablation.evaluation.gate.rules import NoBaseline

    other = [{**r, "id": f"covid-{r['id']}"} for r in committed]
    with pytest.raises(NoBaseline) as e:
        run_gate(committed, other, rules=RULES, settings=SETTINGS, against="metrics/gate_baseline.csv",
                 dataset="covidqa")
    n = len({r["id"] for r in other})
    assert str(e.value) == (f"no accepted baseline for data set 'covidqa': metrics/gate_baseline.csv holds none of "
                            f"its {n} questions (it was accepted on another question set); review the scores, then "
                            "accept them with `rag-ablation check --accept` and commit metrics/gate_baseline.csv")
    assert isinstance(e.value, Incomparable)
