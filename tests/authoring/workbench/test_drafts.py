"""drafts: model-drafted questions per sampled passage, judged, fixed and saved in their own slice.

The model is ``FixedDrafts`` (tiny_project.py) behind the real prompt cache: it fixes the drafts'
text so the tests know what was drafted; everything after the model is the workbench's own code.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from starlette.testclient import TestClient

from rag_ablation.data.passages import sample_passages
from rag_ablation.authoring.workbench.app import create_app, own_hosts
from rag_ablation.authoring.workbench.drafts import NO_LLM, DraftMode, parse_draft
from rag_ablation.authoring.workbench.session import Refused, Workbench, WorkbenchError, WriteMode, passage_key
from rag_ablation.authoring.workbench.store import log_path
from rag_ablation.core.errors import UserError
from rag_ablation.data.corpus import load_corpus
from rag_ablation.data.questions import check_spans, load_questions

from workbench_tiny_project import ROOT, FixedDrafts, reply

Q0, S0 = "How often is there a boat from the northern dock?", "every forty minutes between six in the morning and midnight"
S1_BAD = "the skipper will always cancel"
Q2, S2 = "Where are reserve vehicles kept for the rush hour?", "The depot keeps two spare trams ready for the morning peak"


@pytest.fixture
def sample(project):
    proj, params = project
    passages, _ = sample_passages(proj.corpus, per_track=params.workbench.per_track, seed=params.workbench.seed)
    return passages


@pytest.fixture
def replies(sample):
    """The fixed drafts: passage 0 exact, 1 a span the passage does not hold, 2 a span whose line
    break the model wrote as a space, 3 no draft at all."""
    return {sample[0].text: reply(Q0, S0), sample[1].text: reply("When is a crossing called off?", S1_BAD),
            sample[2].text: f"**Question:** {Q2}\n**Span:** \"{S2}\""}


def form(shown, **over):
    d = shown["draft"]
    return {"passage": shown["passage"]["index"], "question": d["question"], "span": d["span"],
            "span_start": d["span_start"], "answer": "Every forty minutes.", "id": shown["passage"]["suggested_id"],
            **over}


def test_parse_draft_reads_the_two_lines_and_finds_the_span_in_the_passage():
    passage = "The depot keeps\ntwo spare trams ready for the morning peak, fuelled and cleaned."
    d = parse_draft("Question: Where wait the spare trams?\nSpan: two spare trams ready\n", passage)
    assert (d.question, d.span, d.span_start, d.problems) == ("Where wait the spare trams?", "two spare trams ready",
                                                              passage.index("two spare"), ())
    loose = parse_draft("**Question**: Which trams?\n**Span:** \u201cThe depot keeps two spare trams\u201d", passage)
    assert loose.span == "The depot keeps\ntwo spare trams" and loose.span_start == 0, "the passage's own text of it"
    assert loose.question == "Which trams?" and loose.problems == ()
    off = parse_draft("Question: Which trams?\nSpan: three spare buses", passage)
    assert off.span_start is None and any("the model's span is not in the passage" in p for p in off.problems)
    none = parse_draft("Sure! Here is a question.", passage)
    assert (none.question, none.span) == ("", "") and len(none.problems) == 2


def test_drafts_are_judged_fixed_saved_in_their_own_slice_and_resumed(project, sample, replies, tmp_path):
    proj, params = project
    cache = tmp_path / "cache/prompts.sqlite"
    model = FixedDrafts(replies)
    drafts = DraftMode(Workbench(proj, params), model, cache=cache)
    shown = drafts.next()
    assert (shown["total"], shown["done"], shown["passage"]["text"]) == (4, 0, sample[0].text)
    assert shown["draft"] == {"question": Q0, "span": S0, "raw": reply(Q0, S0), "span_start": sample[0].text.index(S0),
                              "problems": []}
    assert shown["passage"]["suggested_id"] == "generated-ferries-01"
    assert shown["model"] == {"backend": "fixed", "model": "fixed-drafts"}
    saved = drafts.save({**form(shown), "verdict": "answerable"})
    line = json.loads(proj.drafts.read_text(encoding="utf-8"))
    assert line == {"id": "generated-ferries-01", "question": Q0, "doc": "ferries/operations.md", "span": S0,
                    "answer": "Every forty minutes.", "slice": "generated", "track": "ferries"}
    assert saved == {**line, "verdict": "answerable"}
    assert proj.drafts == proj.questions.with_name("generated.jsonl") and not proj.questions.exists(), \
        "never mixed into the hand-written file"

    shown = drafts.next()  # the tracks interleaved: the first trams passage comes second
    assert (shown["done"], shown["passage"]["text"]) == (1, sample[2].text)
    assert shown["draft"]["span"] == sample[2].text[sample[2].text.index("The depot"):][:len(S2)]
    assert drafts.save({"passage": shown["passage"]["index"], "verdict": "not_answered"}) == \
        {"ok": True, "verdict": "not_answered", "id": None}

    model2 = FixedDrafts(replies)  # a restart: new session, same prompt cache
    again = DraftMode(Workbench(proj, params), model2, cache=cache)
    shown = again.next()
    assert (shown["done"], shown["passage"]["text"]) == (2, sample[1].text) and shown["draft"]["span_start"] is None
    with pytest.raises(Refused, match="is not in the passage: select the answering span with the mouse"):
        again.save({**form(shown), "verdict": "partly"})
    fix = "the skipper may cancel a crossing"
    again.save({**form(shown, span=fix, span_start=sample[1].text.index(fix), answer="Above forty knots."),
                "verdict": "partly"})
    assert len(model.prompts) == 2 and len(model2.prompts) == 1, "the restart asked the model for passage 1 only"
    shown = again.next()
    assert shown["passage"]["text"] == sample[3].text
    assert shown["draft"]["question"] == "" and len(shown["draft"]["problems"]) == 2

    lines = [json.loads(x) for x in proj.drafts.read_text(encoding="utf-8").splitlines()]
    assert [x["id"] for x in lines] == ["generated-ferries-01", "generated-ferries-02"] and len(lines) == 2, \
        "a draft not answered by its passage is not written"
    log = [json.loads(x) for x in log_path(proj.drafts).read_text(encoding="utf-8").splitlines()]
    assert [(e["kind"], e["verdict"], e["id"]) for e in log] == [
        ("draft", "answerable", "generated-ferries-01"), ("draft", "not_answered", None),
        ("draft", "partly", "generated-ferries-02")]
    assert log[0]["passage"] == passage_key(sample[0]) and log[0]["fixed"] == {"question": False, "span": False}
    assert log[2]["draft"] == {"question": "When is a crossing called off?", "span": S1_BAD}
    assert log[2]["fixed"] == {"question": False, "span": True} and log[1]["fixed"] is None
    assert all(e["prompt"] == "draft_question" and e["model"]["model"] == "fixed-drafts" for e in log)
    assert again.counts() == {"answerable": 1, "partly": 1, "not_answered": 1}
    assert not proj.log.exists(), "nothing went to the hand-written file's session log"


def test_saved_drafts_pass_the_questions_stage_beside_the_hand_written_set(project, replies, tmp_path):
    proj, params = project
    bench = Workbench(proj, params)
    p = WriteMode(bench).next()["passage"]
    span = "the limit of twelve bicycles per\ncrossing"
    WriteMode(bench).save({"passage": p["index"], "question": "How many bikes fit on one sailing?", "span": span,
                           "span_start": p["text"].find(span), "answer": "Twelve.", "slice": "main",
                           "id": p["suggested_ids"]["main"]})
    drafts = DraftMode(bench, FixedDrafts(replies), cache=tmp_path / "p.sqlite")
    drafts.save({**form(drafts.next()), "verdict": "answerable"})
    both = tmp_path / "data/questions/compare.jsonl"
    both.write_text(proj.questions.read_text(encoding="utf-8") + proj.drafts.read_text(encoding="utf-8"),
                    encoding="utf-8")
    check_spans(load_questions(both, min_span=params.labels.min_span), load_corpus(proj.corpus))
    res = subprocess.run([sys.executable, str(ROOT / "stages" / "questions.py"), "--corpus", str(proj.corpus),
                          "--questions", str(both), "--out", "build/q.jsonl", "--metrics", "build/m.json"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    metrics = json.loads((tmp_path / "build/m.json").read_text())
    assert metrics["n_questions"] == 2 and "generated" in json.dumps(metrics)


@pytest.mark.bad_input
def test_without_an_llm_the_mode_says_so_in_one_message(project):
    proj, params = project
    params = replace(params, llm=replace(params.llm, backend="none"))
    bench = Workbench(proj, params)
    with pytest.raises(WorkbenchError) as e:
        DraftMode(bench).next()
    assert str(e.value) == NO_LLM
    client = TestClient(create_app(bench, hosts=own_hosts(8765)), base_url="http://127.0.0.1:8765",
                        headers={"Origin": "http://127.0.0.1:8765", "X-Workbench": "1"})
    r = client.post("/api/drafts/next", json={})
    assert r.status_code == 422 and r.json()["problems"] == [NO_LLM]
    assert "llm.backend is none" in NO_LLM and not proj.drafts.exists()


@pytest.mark.bad_input
def test_drafts_and_hand_written_questions_keep_their_slices_and_ids_apart(project, replies, tmp_path):
    proj, params = project
    bench = Workbench(proj, params)
    write = WriteMode(bench)
    p = write.next()["passage"]
    span = "the limit of twelve bicycles per\ncrossing"
    hand = {"passage": p["index"], "question": "How many bikes fit on one sailing?", "span": span,
            "span_start": p["text"].find(span), "answer": "Twelve.", "slice": "generated", "id": "main-ferries-01"}
    with pytest.raises(Refused, match="slice generated is for model-drafted questions"):
        write.save(hand)
    write.save({**hand, "slice": "main"})
    drafts = DraftMode(bench, FixedDrafts(replies), cache=tmp_path / "p.sqlite")
    shown = drafts.next()
    with pytest.raises(Refused, match=r"id 'main-ferries-01' is already used in .*tiny.jsonl"):
        drafts.save({**form(shown, id="main-ferries-01"), "verdict": "answerable"})
    with pytest.raises(UserError, match="unknown verdict 'maybe'; expected one of: answerable, not_answered, partly"):
        drafts.save({**form(shown), "verdict": "maybe"})
    with pytest.raises(Refused, match="select the answering span with the mouse in the passage"):
        drafts.save({**form(shown, span=""), "verdict": "answerable"})
    assert not proj.drafts.exists() and not log_path(proj.drafts).exists(), "nothing refused was written or logged"


@pytest.mark.bad_input
def test_a_missing_prompt_template_names_the_folder(project, replies, tmp_path):
    proj, params = project
    (tmp_path / "empty").mkdir()
    bench = Workbench(replace(proj, prompts=tmp_path / "empty"), params)
    with pytest.raises(UserError, match=r"prompt template .*draft_question.txt not found"):
        DraftMode(bench, FixedDrafts(replies), cache=tmp_path / "p.sqlite").next()
