"""The retrieval gate (rag_ablation.evaluation.gate, `rag-ablation check`, stages/gate.py) on the
example data: the committed per-question scores of 172 questions, and BM25 rerun here on the
example corpus. Reproduces the chapter's two regressions -- the default config reverted to dense
retrieval, and the BM25 tokenizer swapped for str.split() -- and checks the gate names exactly
the questions that went from hit to miss."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest
import yaml

from conftest import ROOT
from rag_ablation import config
from rag_ablation.config import ConfigError, GateConfig, Params, StatsConfig, load_config
from rag_ablation.errors import UserError
from rag_ablation.evaluation.gate import (ALL, EXIT_FAIL, Incomparable, accepted_rows, format_markdown, format_text,
                                          run_gate, summary_line, to_junit, to_metrics)
from rag_ablation.evaluation.measures import RECALL_KS
from rag_ablation.evaluation.scoring import RETRIEVAL_FIELDS, read_scores, write_scores

SCORES = ROOT / "metrics" / "scores" / "retrieval.csv"
GATED = "hybrid_heading"
SETTINGS = StatsConfig(resamples=1000)
RULES = GateConfig(configs=(GATED,), k=5, floor={"all": 0.80, "main": 0.85, "identifier": 0.80, "paraphrase": 0.60},
                   max_newly_failing=1, non_inferiority_margin=None, min_questions=20)


@pytest.fixture(scope="module")
def committed():
    """The committed per-question scores (15 configs in params, 172 questions each)."""
    return read_scores(SCORES)


def of(rows, name):
    return [r for r in rows if r["config"] == name]


def renamed(rows, name):
    return [{**r, "config": name} for r in rows]


def reverted_to_dense(rows):
    """The workspace after someone reverts the default config to dense retrieval by accident:
    the gated config's rows are dense's."""
    return [r for r in rows if r["config"] != GATED] + renamed(of(rows, "dense"), GATED)


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


def by_slice(result, name=GATED):
    return {s.slice: s for s in result.slices if s.config == name}


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
    from rag_ablation.corpus import load_corpus
    from rag_ablation.evaluation.labels import relevant_chunks
    from rag_ablation.evaluation.scoring import score_run
    from rag_ablation.questions import load_questions
    from rag_ablation.retrieval.bm25 import make_scorer
    from rag_ablation.retrieval.chunking import chunk_corpus, chunk_options
    from rag_ablation.retrieval.runner import Retrievers, run_config
    from rag_ablation.text import get_tokenizer

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


# ---------------------------------------------------------------- verdicts and forms


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


def test_junit_has_one_testcase_per_config_and_slice(committed):
    rules = replace(RULES, configs=(GATED, "bm25"), floor=None, min_questions=30)
    workspace = reverted_to_dense(committed)
    result = run_gate(committed, workspace, rules=rules, settings=SETTINGS, against="accepted")
    suite = ET.fromstring(to_junit(result))
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        (f"gate.{c}", s) for c in (GATED, "bm25") for s in (ALL, "identifier", "main", "paraphrase")]
    failed = {(c.get("classname"), c.get("name")): c.find("failure") for c in cases
              if c.find("failure") is not None}
    assert set(failed) == {(f"gate.{GATED}", s) for s in (ALL, "identifier", "main")}
    failed = {name: element for (_, name), element in failed.items()}
    assert "newly failing" in failed["identifier"].get("message")
    assert "identifier-" in failed["identifier"].text
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert [c.get("name") for c in skipped] == ["paraphrase", "paraphrase"]
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("8", "3", "2")
    assert to_junit(result) == to_junit(run_gate(committed, workspace, rules=rules, settings=SETTINGS,
                                                 against="accepted"))


def test_markdown_for_a_pull_request(committed):
    result = run_gate(of(committed, GATED), reverted_to_dense(committed), rules=RULES, settings=SETTINGS,
                      against="`main`")
    md = format_markdown(result)
    assert md.startswith("### Retrieval gate: FAIL\n")
    assert "| config | slice | n | recall@5 | baseline | change (95% interval) |" in md
    identifier = by_slice(result)["identifier"]
    assert f"- `hybrid_heading` identifier: newly failing `{identifier.newly_failing[0]}`" in md
    assert md.rstrip().splitlines()[-1].startswith("**FAIL**: 3 of 4 gated slice(s) failed")


def test_metrics_are_numbers_with_pass_flags(committed):
    result = run_gate(of(committed, GATED), reverted_to_dense(committed), rules=RULES, settings=SETTINGS,
                      against="accepted")
    m = to_metrics(result)
    identifier = m["configs"][GATED]["identifier"]
    assert (m["pass"], m["comparable"], m["gated"], m["failed"], m["too_small"]) == (0, 1, 4, 3, 0)
    assert identifier["pass"] == 0 and identifier["below_floor"] == 1 and identifier["too_many_newly_failing"] == 1
    assert identifier["baseline_hits"] == 34 and identifier["n"] == 40 and identifier["floor"] == 0.8
    assert m["configs"][GATED]["paraphrase"]["pass"] == 1

    def numbers(x):
        return all(numbers(v) for v in x.values()) if isinstance(x, dict) else isinstance(x, (int, float))
    assert numbers(m)


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


# --------------------------------------------------------------- command and stage


def project(tmp_path, rows, baseline_rows=None, **gate):
    """A folder with params.yaml (the shipped one, 1000 resamples, ``gate`` overrides), the
    workspace scores ``rows`` and, if given, the baseline file."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["stats"]["resamples"] = 1000
    params["gate"].update(gate)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    write_scores(tmp_path / "metrics/scores/retrieval.csv", rows, RETRIEVAL_FIELDS)
    if baseline_rows is not None:
        write_scores(tmp_path / "metrics/gate_baseline.csv", baseline_rows, RETRIEVAL_FIELDS)
    return tmp_path


def check(cwd, *args):
    return subprocess.run([sys.executable, "-m", "rag_ablation.main", "check", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True)


def test_check_exit_status_and_files(tmp_path, committed):
    d = project(tmp_path, reverted_to_dense(committed), of(committed, GATED))
    res = check(d, "--md", "gate.md", "--junit", "gate.xml", "--json", "gate.json")
    assert res.returncode == 1, res.stderr
    assert "hybrid_heading identifier: recall@5 = " in res.stdout and res.stdout.rstrip().endswith(
        "hybrid_heading/all, hybrid_heading/identifier, hybrid_heading/main")
    assert (d / "gate.md").read_text().startswith("### Retrieval gate: FAIL")
    assert len(ET.parse(d / "gate.xml").getroot().findall("testcase")) == 4
    assert json.loads((d / "gate.json").read_text())["pass"] == 0


@pytest.fixture
def check_here(monkeypatch, capsys):
    """`rag-ablation check ARGS` in-process (through the command registry) in a folder: (exit
    status, stdout); a UserError is status 2 with its message, as `rag_ablation.cli` makes it."""
    from rag_ablation.main import dispatch

    def call(cwd, *args):
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            dispatch(["check", *map(str, args)])
        except SystemExit as e:
            return e.code, capsys.readouterr().out
        except UserError as e:
            return 2, str(e)
        return 0, capsys.readouterr().out
    return call


def test_accept_round_trip(tmp_path, committed, check_here):
    d = project(tmp_path, committed)
    code, out = check_here(d, "--accept")
    assert code == 0 and "accepted: 172 rows of hybrid_heading written to metrics/gate_baseline.csv" in out
    assert read_scores(d / "metrics/gate_baseline.csv") == of(committed, GATED) == accepted_rows(committed, [GATED])
    code, out = check_here(d)
    assert code == 0 and out.rstrip().endswith("PASS: all 4 gated slice(s) passed")
    write_scores(d / "metrics/scores/retrieval.csv", reverted_to_dense(committed), RETRIEVAL_FIELDS)
    assert check_here(d)[0] == EXIT_FAIL
    code, out = check_here(d, "--accept")  # a review accepted the change: shown, then written
    assert code == 0 and "FAIL: 3 of 4" in out and "accepted: 172 rows" in out
    code, out = check_here(d)  # nothing is newly failing any more, but accepting never lowers the floors
    assert code == EXIT_FAIL and "newly failing, at most" not in out
    assert "FAIL: recall@5 0.625 is below the floor 0.800 (" in out


@pytest.mark.bad_input
def test_accept_refuses_a_revision_and_missing_configs(tmp_path, committed, check_here):
    d = project(tmp_path, of(committed, "dense"))
    code, message = check_here(d, "--accept", "--against", "main")
    assert code == 2 and message.startswith("--accept writes the baseline file, not a git revision")
    code, message = check_here(d, "--accept")
    assert code == 2 and message.startswith("cannot accept: no workspace rows for 'hybrid_heading'")
    assert not (d / "metrics/gate_baseline.csv").exists()


def git(repo, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def test_check_against_a_revision(tmp_path, committed, check_here):
    d = project(tmp_path, committed, floor=None)
    git(d, "init", "-q", "-b", "main")
    git(d, "add", "metrics")
    git(d, "commit", "-q", "-m", "scores")
    write_scores(d / "metrics/scores/retrieval.csv", reverted_to_dense(committed), RETRIEVAL_FIELDS)
    code, out = check_here(d, "--against", "main")
    assert code == EXIT_FAIL and "against main (" in out and "hybrid_heading identifier: recall@5 = " in out
    assert check_here(d, "--against", "main", "--config", "dense")[0] == 0, "dense itself did not change"
    code, message = check_here(d, "--against", "no-such-branch")
    assert code == 2 and message.startswith("unknown revision 'no-such-branch'")


@pytest.mark.bad_input
def test_check_incomparable_is_one_line_and_exit_2(tmp_path, committed):
    d = project(tmp_path, [r for r in committed if r["id"] != "main-guides-10"], of(committed, GATED))
    res = check(d)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("error: cannot compare 'hybrid_heading' with metrics/gate_baseline.csv: "
                                 "1 question(s) only in metrics/gate_baseline.csv: main-guides-10")
    assert res.stderr.count("\n") == 1
    (d / "metrics/gate_baseline.csv").unlink()
    res = check(d)
    assert res.returncode == 2 and "no accepted baseline metrics/gate_baseline.csv" in res.stderr


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


def test_help_lists_the_command():
    res = subprocess.run([sys.executable, "-m", "rag_ablation.main", "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "\n  check " in res.stdout
