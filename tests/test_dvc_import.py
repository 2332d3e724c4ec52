"""`rag-ablation import squad` on a fresh git + DVC repository, then the commands it printed under
`run it:`, parsed from its output and run as printed: the import is committed in a commit of its
own before the experiment, the experiment runs on the imported set (the `dataset` stage names it
and the files it read, not the handbook's), and the experiment's commit carries none of the
corpus."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import GIT_ENV, VENV_BIN, make_fixture_repo, run_in

from rag_ablation.commands.import_data import printed_commands

pytestmark = pytest.mark.slow

NAME = "tiny"
FOLDER = f"data/imported/{NAME}"
LIGHTHOUSE = ("The Bell Rock Lighthouse stands on a reef off the coast of Angus in Scotland. It was built between "
              "1807 and 1810 by Robert Stevenson, and it is the oldest surviving sea-washed lighthouse in the world.")
GLACIER = ("The Aletsch Glacier is the largest glacier in the Alps, about 20 kilometres long. It has retreated by "
           "more than three kilometres since 1870, and its ice is up to 900 metres thick near Konkordiaplatz.")


def tiny_squad() -> dict:
    """Two articles, two answerable questions each whose answers are long enough for the
    question format (20 characters), and one unanswerable question."""
    def qa(qid: str, question: str, answer: str, context: str) -> dict:
        return {"id": qid, "question": question, "is_impossible": not answer,
                "answers": [{"text": answer, "answer_start": context.index(answer)}] if answer else []}
    return {"version": "v2.0", "data": [
        {"title": "Bell_Rock_Lighthouse", "paragraphs": [{"context": LIGHTHOUSE, "qas": [
            qa("l1", "When and by whom was the Bell Rock Lighthouse built?", "between 1807 and 1810 by Robert Stevenson",
               LIGHTHOUSE),
            qa("l2", "What is the Bell Rock Lighthouse the oldest of?",
               "the oldest surviving sea-washed lighthouse", LIGHTHOUSE),
            qa("l3", "How tall is the Bell Rock Lighthouse?", "", LIGHTHOUSE)]}]},
        {"title": "Aletsch_Glacier", "paragraphs": [{"context": GLACIER, "qas": [
            qa("g1", "How far has the Aletsch Glacier retreated?", "more than three kilometres since 1870", GLACIER),
            qa("g2", "How thick is the ice of the Aletsch Glacier?", "up to 900 metres thick", GLACIER)]}]},
    ]}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def test_the_printed_commands_commit_the_import_before_the_experiment(tmp_path):
    (tmp_path / "repo").mkdir()
    repo = make_fixture_repo(tmp_path / "repo")
    run_in(repo, "git", "add", "-A")
    run_in(repo, "git", "commit", "-q", "-m", "the pipeline")
    before = git(repo, "rev-parse", "HEAD").strip()
    source = tmp_path / "tiny-v2.0.json"  # outside the repository, as a download would be
    source.write_text(json.dumps(tiny_squad()), encoding="utf-8")

    out = run_in(repo, "rag-ablation", "import", "squad", str(source), "--corpus", f"{FOLDER}/corpus",
                 "--questions", f"{FOLDER}/questions.jsonl")
    commands = printed_commands(out)
    assert [c.split()[:2] for c in commands] == [["git", "add"], ["dvc", "exp"]], out
    assert "-S llm.backend=none" in commands[-1] and f"-S dataset={NAME}" in commands[-1]

    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", **GIT_ENV}
    ran = ""
    for command in commands:  # as printed, one at a time, from the repository root
        res = subprocess.run(["bash", "-c", "set -euo pipefail\n" + command], cwd=repo, env=env,
                             capture_output=True, text=True)
        assert res.returncode == 0, f"{command}\n{res.stdout}\n{res.stderr}"
        ran += res.stdout + res.stderr

    # the import, committed on its own on top of the pipeline: every file of data/imported/tiny
    imported = sorted(p.relative_to(repo).as_posix() for p in (repo / FOLDER).rglob("*") if p.is_file())
    assert f"{FOLDER}/corpus/squad/Bell_Rock_Lighthouse.md" in imported and f"{FOLDER}/questions.jsonl" in imported
    head = git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "log", "-1", "--format=%s %P", head).split() == ["import", NAME, before]
    assert sorted(git(repo, "show", "--name-only", "--format=", head).split()) == imported
    assert sorted(git(repo, "ls-files", FOLDER).split()) == imported
    assert git(repo, "status", "--porcelain", "--untracked-files=all", "data/imported") == ""

    # the experiment: based on that commit, its own commit holds none of the corpus
    refs = [r for r in git(repo, "for-each-ref", "--format=%(refname)", "refs/exps").split() if "/exec/" not in r]
    assert len(refs) == 1, refs
    experiment = git(repo, "rev-parse", refs[0]).strip()
    assert git(repo, "log", "-1", "--format=%P", experiment).split() == [head]
    changed = git(repo, "diff", "--name-only", head, experiment).split()
    assert changed and not [p for p in changed if p.startswith("data/imported/")], changed
    assert yaml.safe_load(git(repo, "show", f"{experiment}:params.yaml"))["dataset"] == NAME

    # the dataset stage named the data set it read, not the handbook's paths DVC echoes
    assert (f"dataset {NAME}: read {FOLDER}/corpus, {FOLDER}/questions.jsonl; not the handbook's files named on "
            f"the command line") in ran, ran
    assert f"dataset {NAME}: 2 documents, 5 questions" in ran, ran
    retrieval = json.loads((repo / "metrics" / "retrieval.json").read_text())
    assert retrieval["bm25"]["available"] == 1, retrieval["bm25"]
