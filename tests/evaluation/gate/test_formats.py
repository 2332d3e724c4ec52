"""The retrieval gate's forms (rag_ablation.evaluation.gate.formats): JUnit XML, Markdown for a pull
request and the numbers of metrics/gate.json, on the committed per-question scores."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

from gate_rows import GATED, RULES, SETTINGS, by_slice, committed, of, reverted_to_dense  # noqa: F401  (committed is a fixture)

from rag_ablation.evaluation.gate.formats import format_markdown, to_junit, to_metrics
from rag_ablation.evaluation.gate.rules import ALL, run_gate


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
