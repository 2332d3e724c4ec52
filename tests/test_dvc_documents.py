"""A corpus as a team has it, under DVC: Markdown, PDF, Word, PowerPoint, HTML and reStructuredText
files (a page at the corpus root, an image left out by `documents.exclude`) as an imported data
set of a copy of the built fixture pipeline. `dvc repro` converts each file once, keeps the PDF's
pages and the deck's slides, scores questions whose spans are in the converted texts, and the
report's drill-down (in Chromium) and the workbench say "page 2 of manuals/ops.pdf". A second
`dvc repro` runs nothing; changing the PDF converts that file only."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from chromium_cdp import CHROMIUM, Chromium
from document_files import make_pdf, pandoc_file
from pptx import Presentation
from pptx.util import Inches

from conftest import copy_repo, ran_stages as ran, run_in

from rag_ablation.authoring.workbench.session import Project, Workbench, WriteMode
from rag_ablation.core.config import load_config
from rag_ablation.data.passages import Passage

pytestmark = pytest.mark.slow

DVC = str(Path(sys.executable).parent / "dvc")

FILLER = ["Every section of this manual names the owner of each step and the channel to ask in.",
          "Steps are run in order; a step that fails is reported before the next one starts.",
          "Commands are shown as typed, with the host they run on and the account they need.",
          "Times are in UTC throughout, and durations are given for a cluster of ten nodes."]
PDF_PAGES = [["Operations manual", "Contents: backups, restores.", *FILLER],
             ["Backups", "The nightly backup window opens at 01:15 UTC on every node.", *FILLER],
             ["Restores", "A restore from cold storage takes about forty minutes per terabyte.", *FILLER]]
SPANS = {  # question id -> (document, span), each span in the text the document converts to
    "q-pdf-backup": ("manuals/ops.pdf", "The nightly backup window opens at 01:15 UTC"),
    "q-pdf-restore": ("manuals/ops.pdf", "takes about forty minutes per terabyte"),
    "q-docx": ("policies/retention.docx", "Audit logs are kept for 400 days"),
    "q-pptx": ("talks/intro.pptx", "The on-call rotation changes every Tuesday"),
    "q-html": ("web/faq.html", "Password resets expire after 15 minutes"),
    "q-rst": ("README.rst", "The staging cluster is rebuilt every Sunday"),
    "q-md": ("guides/setup.md", "Run the installer twice on a fresh machine"),
}


def deck(path: Path) -> None:
    prs = Presentation()
    for title, body in [("Welcome", "A tour of the team's services."),
                        ("On call", "The on-call rotation changes every Tuesday at noon.")]:
        slide = prs.slides.add_slide(prs.slide_layouts[5])
        slide.shapes.title.text = title
        slide.shapes.add_textbox(Inches(1), Inches(2), Inches(6), Inches(1)).text_frame.text = body
    prs.save(str(path))


def write_corpus(root: Path) -> None:
    for sub in ("manuals", "policies", "talks", "web", "guides", "img"):
        (root / sub).mkdir(parents=True)
    (root / "manuals/ops.pdf").write_bytes(make_pdf(PDF_PAGES))
    (root / "policies/retention.docx").write_bytes(pandoc_file(
        "# Retention\n\nAudit logs are kept for 400 days in the archive bucket.\n", "docx"))
    deck(root / "talks/intro.pptx")
    (root / "web/faq.html").write_bytes(pandoc_file(
        "# FAQ\n\nPassword resets expire after 15 minutes; ask again after that.\n", "html"))
    (root / "README.rst").write_bytes(pandoc_file(
        "# Staging\n\nThe staging cluster is rebuilt every Sunday from the main branch.\n", "rst"))
    (root / "guides/setup.md").write_text("# Setup\n\nRun the installer twice on a fresh machine, then reboot.\n")
    (root / "img/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")


def questions() -> str:
    rows = [{"id": qid, "question": f"{span}?", "doc": doc, "span": span, "answer": span, "slice": "main",
             "track": doc.split("/")[0] if "/" in doc else "_root"} for qid, (doc, span) in SPANS.items()]
    rows.append({"id": "q-none", "question": "Who founded the company?", "doc": None, "span": None,
                 "answer": "Not in the documents.", "slice": "unanswerable", "track": "web"})
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture(scope="module")
def repo(built_pipeline, tmp_path_factory):
    d = copy_repo(built_pipeline, tmp_path_factory.mktemp("documents") / "repo")
    folder = d / "data/imported/mixed"
    write_corpus(folder / "corpus")
    (folder / "questions.jsonl").write_text(questions())
    params = yaml.safe_load((d / "params.yaml").read_text())
    params["dataset"] = "mixed"
    params["documents"] = {"exclude": ["*.png"], "on_problem": "stop", "workers": 2}
    params["llm"]["backend"] = "none"  # retrieval and the reports; answers are not what this test is about
    (d / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "RAG_ABLATION_CACHE": str(tmp_path_factory.mktemp("documents-cache")),
           "PATH": f"{Path(DVC).parent}{os.pathsep}{os.environ['PATH']}"}
    out = run_in(d, DVC, "repro", env=env)
    assert "converted 5 file(s), 0 from the conversion cache" in out, out
    run_in(d, "git", "add", "-A")
    run_in(d, "git", "commit", "-q", "-m", "mixed-format data set")
    return d, env


def test_every_format_is_converted_counted_and_scored(repo):
    d, _ = repo
    corpus = json.loads((d / "metrics/corpus.json").read_text())
    assert corpus["by_format"] == {"docx": 1, "html": 1, "md": 1, "pdf": 1, "pptx": 1, "rst": 1}
    assert corpus["pages"] == 3 + 2 and corpus["excluded"] == {"count": 1, "files": ["img/logo.png"]}
    assert corpus["skipped"] == {"count": 0, "files": []}
    prov = {json.loads(x)["doc"]: json.loads(x) for x in (d / "data/build/dataset/documents.jsonl").read_text().split("\n")
            if x.strip()}
    assert [label for _, label in prov["manuals/ops.pdf"]["pages"]] == ["1", "2", "3"]
    assert prov["manuals/ops.pdf"]["converter"].startswith("pdfminer.six ")
    assert prov["README.rst"]["converter"].startswith("pandoc ")
    # the converted text sits under the source's own name; the root page is a track of its own
    assert "01:15 UTC" in (d / "data/build/dataset/corpus/manuals/ops.pdf").read_text()
    with open(d / "metrics/scores/retrieval.csv") as f:
        import csv

        rows = [r for r in csv.DictReader(f) if r["config"] == "bm25" and r["id"] in SPANS]
    assert len(rows) == len(SPANS) and all(int(r["n_relevant"]) >= 1 for r in rows), rows  # every span labelled
    report = (d / "metrics/report.md").read_text()
    assert "## Documents" in report and "| pdf | 1 | pdfminer.six " in report and "- `img/logo.png`" in report


def test_second_repro_runs_nothing(repo):
    d, env = repo
    assert ran(run_in(d, DVC, "repro", env=env)) == set()


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_the_drill_down_names_the_page_and_the_slide(repo, tmp_path):
    d, _ = repo
    with Chromium(CHROMIUM, tmp_path / "profile") as browser:
        browser.open((d / "metrics/report.html").as_uri())
        browser.wait_for("document.body && document.body.getAttribute('data-ready') === '1'", timeout=90)
        heads = {}
        for qid in ("q-pdf-backup", "q-pptx"):
            browser.evaluate(f"document.querySelector('#grid-table tr.qrow[data-q=\"{qid}\"] "
                             f"td.cell[data-config=\"bm25\"] a').click()")
            browser.wait_for(f"document.getElementById('question').getAttribute('data-q') === '{qid}'")
            heads[qid] = browser.evaluate("Array.from(document.querySelectorAll("
                                          "'#question details[data-config=\"bm25\"] .passage.relevant .head'))"
                                          ".map(h => h.textContent)")
    assert any("(page 2 of manuals/ops.pdf)" in h for h in heads["q-pdf-backup"]), heads
    assert any("(slide 2 of talks/intro.pptx)" in h for h in heads["q-pptx"]), heads


def test_the_workbench_shows_the_converted_text_with_its_page(repo):
    d, env = repo
    os.environ.setdefault("RAG_ABLATION_CACHE", env["RAG_ABLATION_CACHE"])
    cwd = os.getcwd()
    os.chdir(d)
    try:
        folder = d / "data/imported/mixed"
        bench = Workbench(Project(corpus=folder / "corpus", questions=folder / "questions.jsonl",
                                  audit=folder / "audit.jsonl", runs=d / "data/build/runs",
                                  scores=d / "metrics/scores/retrieval.csv", build=d / "data/build"),
                          load_config(d / "params.yaml"))
    finally:
        os.chdir(cwd)
    assert sorted(bench.provenance) == ["README.rst", "guides/setup.md", "manuals/ops.pdf", "policies/retention.docx",
                                        "talks/intro.pptx", "web/faq.html"]
    text = {doc.doc: doc.text for doc in bench.documents}["manuals/ops.pdf"]
    assert "01:15 UTC" in text, "the workbench shows the converted text, the one spans are copied from"
    start = text.index("The nightly backup")
    write = WriteMode(bench)
    # the sampler needs passages of 400+ characters, which these tiny files lack: show one by hand
    write.__dict__["passages"] = [Passage("manuals/ops.pdf", "manuals", start, start + 40, text[start:start + 40])]
    assert write.show(0, ["main"])["source"] == "page 2 of manuals/ops.pdf"


def test_changing_the_pdf_converts_that_file_only(repo, tmp_path):
    d0, env = repo
    d = copy_repo(d0, tmp_path / "repo")
    pages = [list(p) for p in PDF_PAGES]
    pages[2][1] = "A restore from cold storage takes about forty minutes per terabyte, less when warm."
    (d / "data/imported/mixed/corpus/manuals/ops.pdf").write_bytes(make_pdf(pages))
    out = run_in(d, DVC, "repro", "dataset", env=env)
    assert "converted 1 file(s), 4 from the conversion cache" in out, out
    assert "less when warm" in (d / "data/build/dataset/corpus/manuals/ops.pdf").read_text()
