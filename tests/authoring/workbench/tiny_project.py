"""A tiny project for the workbench's tests: two tracks of two passages each, the repository's
params.yaml with a small ``workbench`` block, and nothing built. ``make_project(root)`` writes it
and returns the ``Project`` (paths relative to ``root``, which the tests make the current folder)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import json

import yaml

from rag_ablation.authoring.workbench.session import DRAFT_PROMPTS, Project
from rag_ablation.core.config import Params
from rag_ablation.core.io import write_json
from rag_ablation.data.corpus import load_corpus
from rag_ablation.evaluation.scoring.scores import RETRIEVAL_FIELDS, write_scores
from rag_ablation.llm.client.base import Backend, Generation

ROOT = Path(__file__).resolve().parents[3]

FERRIES = """# Ferry operations

## Schedules

The harbour ferry leaves the north pier every forty minutes between six in the morning and midnight, and the
last crossing of the night waits up to ten minutes for the final tram from the city centre. Passengers with
bicycles board first, through the side ramp, and the crew counts them against the limit of twelve bicycles per
crossing. On public holidays the timetable of Sunday applies, and the ticket office opens an hour later.

## Weather

When the wind at the harbour mouth exceeds forty knots the skipper may cancel a crossing, and the control room
posts the cancellation on the pier displays within five minutes. Cancelled crossings are not made up later in
the day; passengers are sent to the coastal bus, whose drivers accept ferry tickets for the rest of the service
day. The kiosk page once printed <script>alert('kiosk')</script> in its footer, which is why the displays show
plain text only.
"""

TRAMS = """# Tram maintenance

## Depots

Every tram returns to the Eastgate depot after its last run, where the night crew checks the pantograph, the
brake pads and the door sensors before half past four in the morning. A tram that fails the door check is
parked on siding nine and may not leave the depot until an engineer signs the repair card. The depot keeps
two spare trams ready for the morning peak, fuelled and cleaned, so a failed check never cancels a departure.

## Wheels

Wheels are turned on the lathe at Eastgate once every sixty thousand kilometres, or sooner when a driver
reports a flat spot, and the lathe log records the diameter before and after each cut. A wheel thinner than
six hundred and forty millimetres is scrapped rather than turned again, and the pair is replaced on the same
night. The maintenance planner orders replacement wheel sets three months ahead of the forecast date.
"""

WORKBENCH = {"seed": 8, "per_track": 2, "overlap_warn": 0.6, "audit_k": 2, "pool_depth": 3,
             "pool_configs": ["dense", "bm25"]}


def params_raw(**workbench: object) -> dict:
    """The repository's params.yaml with the tiny ``workbench`` block (``workbench`` overrides)."""
    raw = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    raw["workbench"] = {**WORKBENCH, **workbench}
    return raw


def make_project(root: Path, **workbench: object) -> tuple[Project, Params]:
    """Write the tiny project under ``root`` (module docstring)."""
    corpus = root / "data" / "corpus"
    (corpus / "ferries").mkdir(parents=True)
    (corpus / "trams").mkdir(parents=True)
    (corpus / "ferries" / "operations.md").write_text(FERRIES, encoding="utf-8")
    (corpus / "trams" / "maintenance.md").write_text(TRAMS, encoding="utf-8")
    (root / "data" / "questions").mkdir(parents=True)
    (root / "data" / "labels").mkdir(parents=True)
    raw = params_raw(**workbench)
    (root / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    project = Project(corpus=root / "data/corpus", questions=root / "data/questions/tiny.jsonl",
                      audit=root / "data/labels/audit.jsonl", runs=root / "data/build/runs",
                      scores=root / "metrics/scores/retrieval.csv", build=root / "data/build",
                      prompts=DRAFT_PROMPTS)
    return project, Params.from_params(raw)


def audit_project(proj, params, config="dense"):
    """A run file and scores in which ``config`` missed one question of two at audit_k."""
    docs = {d.doc: d.text for d in load_corpus(proj.corpus)}
    trams = docs["trams/maintenance.md"]
    rows = [
        {"id": "main-trams-01", "question": "Where do spare vehicles wait for the morning rush?",
         "doc": "trams/maintenance.md", "span": "The depot keeps two spare trams ready for the morning peak",
         "answer": "At Eastgate depot.", "slice": "main", "track": "trams"},
        {"id": "main-ferries-01", "question": "How many bikes may ride one crossing?", "doc": "ferries/operations.md",
         "span": "the limit of twelve bicycles per crossing", "answer": "Twelve.", "slice": "main", "track": "ferries"},
    ]
    proj.questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    passages = {"trams/maintenance.md#1": trams[475:898], "ferries/operations.md#0": docs["ferries/operations.md"][:460],
                "trams/maintenance.md#0": trams[:462]}
    write_json(proj.runs / f"{config}.json", {"config": config, "status": "ok", "reason": None, "passages": passages,
               "questions": [{"id": "main-trams-01", "slice": "main", "answerable": True,
                              "ranking": [{"chunk": "trams/maintenance.md#1", "score": 0.9},
                                          {"chunk": "ferries/operations.md#0", "score": 0.8},
                                          {"chunk": "trams/maintenance.md#0", "score": 0.7}]},
                             {"id": "main-ferries-01", "slice": "main", "answerable": True,
                              "ranking": [{"chunk": "ferries/operations.md#0", "score": 0.9}]}]})
    score = {"config": config, "slice": "main", "answerable": 1, "hit_at_1": 0, "hit_at_5": 0, "hit_at_10": 1,
             "rr_at_10": 1 / 3, "n_relevant": 1, "top_score": 0.9}
    write_scores(proj.scores, [{**score, "id": "main-trams-01", "doc": "trams/maintenance.md", "first_relevant_rank": 3},
                               {**score, "id": "main-ferries-01", "doc": "ferries/operations.md", "first_relevant_rank": 1,
                                "hit_at_1": 1, "hit_at_5": 1, "rr_at_10": 1.0}], RETRIEVAL_FIELDS)
    return passages


class FixedDrafts(Backend):
    """A test double of an LLM backend: it stands in for the real model only to fix the drafts'
    text, so that tests know what the model "wrote". ``replies`` maps a passage's text to the reply
    given to a prompt holding it ("Question: ...\nSpan: ..."); a prompt holding none gets
    ``DEFAULT_REPLY``. ``prompts`` keeps every prompt it was asked, to count the calls that reached
    the model (the prompt cache answers the rest)."""

    name = "fixed"
    DEFAULT_REPLY = "I cannot think of a question."

    def __init__(self, replies: Mapping[str, str]) -> None:
        self.replies = dict(replies)
        self.prompts: list[str] = []

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": "fixed-drafts", "digest": "0" * 16}

    def settings(self) -> dict[str, Any]:
        return {"temperature": 0.0, "seed": 0}

    def chat(self, messages: list[dict[str, Any]], *, num_predict: int, stop: Sequence[str] = ()) -> Generation:
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        reply = next((r for text, r in self.replies.items() if text in prompt), self.DEFAULT_REPLY)
        return Generation(text=reply, prompt_tokens=len(prompt.split()), completion_tokens=len(reply.split()),
                          seconds=0.01)


def reply(question: str, span: str) -> str:
    """A reply in the form the drafting prompt asks for."""
    return f"Question: {question}\nSpan: {span}\n"
