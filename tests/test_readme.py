"""The commands of the README and of docs/, run exactly as written on the fixture data.

Every shell block of README.md or of a page docs/*.md preceded by a `<!-- readme-test: NAME -->`
line (NAME unique across them all) is run with bash (`set -euo pipefail`) in a git + DVC
repository of the fixture corpus, in a shell whose PATH does not hold the project's environment
(only the system's folders), so an edit that breaks a documented command fails CI. The daily
commands also run in their prefixed form (`.venv/bin/dvc ...`, without activating), and a stage
run where no `.venv` exists says in one line what to do.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from rag_ablation.core.pipeline_files import stage_name

from conftest import GIT_ENV, ROOT, VENV_BIN, copy_repo, lock_stages, ran_stages, run_in

pytestmark = pytest.mark.slow

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BLOCK = re.compile(r"<!-- readme-test: ([\w-]+) -->\n```bash\n(.*?)```", re.S)


def documented_files() -> list[Path]:
    """README.md, then the pages of docs/ in name order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def readme_blocks() -> dict[str, str]:
    """Every marked shell block of the README and docs/, by name; a name used twice fails."""
    blocks: dict[str, str] = {}
    where: dict[str, str] = {}
    for path in documented_files():
        page = path.relative_to(ROOT).as_posix()
        for name, script in BLOCK.findall(path.read_text(encoding="utf-8")):
            assert name not in blocks, f"readme-test block {name!r} appears in {where[name]} and {page}"
            blocks[name], where[name] = script, page
    assert {"daily", "remove-config", "review"} <= set(blocks), sorted(blocks)
    return blocks


def clean_env() -> dict[str, str]:
    """The environment of a fresh shell: the system PATH only, no active virtualenv."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    return {**env, **GIT_ENV, "PATH": SYSTEM_PATH}


def bash(cwd: Path, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], cwd=cwd, env=clean_env(),
                          capture_output=True, text=True)


def clone_of(built: Path, dest: Path) -> Path:
    """A copy of the built fixture pipeline as a clone after `make install` looks: a `.venv`
    (this environment), git-ignored with `.cache/`, committed."""
    if not Path("/usr/bin/python3").is_file():
        pytest.skip("no system python3 to stand for a fresh shell's")
    d = copy_repo(built, dest)
    (d / ".venv").symlink_to(VENV_BIN.parent)  # what `make install` leaves in a clone
    ignore = d / ".gitignore"
    ignore.write_text((ignore.read_text() if ignore.is_file() else "") + "/.venv\n/.cache/\n")
    run_in(d, "git", "add", "-A")
    run_in(d, "git", "commit", "-q", "-m", "a clone's environment, git-ignored")
    return d


@pytest.fixture(scope="module")
def repo(built_pipeline, tmp_path_factory):
    return clone_of(built_pipeline, tmp_path_factory.mktemp("readme") / "repo")  # built once (conftest)


def test_the_marked_blocks_are_found_once_each():
    """The README keeps the daily commands; every marked block has one name of its own."""
    blocks = readme_blocks()
    assert "daily" in dict(BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8")))
    assert all(script.strip() for script in blocks.values()), sorted(blocks)


def test_the_system_shell_has_no_project_environment(repo):
    res = bash(repo, "command -v dvc || python3 -c 'import dvc'")
    assert res.returncode != 0, "the test must run the README in a shell without the environment"


def test_daily_commands_as_written(repo):
    """The daily block ends with `dvc exp run -S chunk_size=400` (the fixture chunks at 300): the
    experiment runs in the workspace, so params.yaml holds the new size, the index has fewer,
    longer chunks and the retrieval metrics move."""
    import json

    def read(name: str) -> dict:
        return json.loads((repo / "metrics" / name).read_text())

    before, chunks_before = read("retrieval.json"), read("index/base.json")["n_chunks"]
    res = bash(repo, readme_blocks()["daily"])
    assert res.returncode == 0, res.stdout + res.stderr
    params = yaml.safe_load((repo / "params.yaml").read_text())
    assert params["chunk_size"] == 400, "the experiment ran in the workspace"
    assert 0 < read("index/base.json")["n_chunks"] < chunks_before
    assert read("retrieval.json") != before
    run_in(repo, "git", "checkout", "--", ".")
    run_in(repo, str(VENV_BIN / "dvc"), "checkout", "-q")


def test_daily_commands_prefixed_without_activating(repo):
    """`.venv/bin/dvc ...` in a fresh shell: DVC runs each stage with the system's python3, and
    the stage re-runs itself with the repository's .venv."""
    lines = [line for line in readme_blocks()["daily"].splitlines() if line.strip() and not line.startswith(". ")]
    script = "\n".join(f".venv/bin/{line}" for line in lines)
    (repo / "params.yaml").write_text((repo / "params.yaml").read_text().replace("window: 30", "window: 28"))
    res = bash(repo, script)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "labels@base" in ran_stages(out) and "ModuleNotFoundError" not in out
    run_in(repo, "git", "checkout", "--", ".")
    run_in(repo, str(VENV_BIN / "dvc"), "checkout", "-q")


@pytest.mark.bad_input
def test_no_environment_at_all_is_one_line(tmp_path):
    """A stage started by a python3 that cannot import the project, in a folder with no .venv:
    one line saying how to set it up, exit 2, no traceback."""
    (tmp_path / ".dvc").mkdir()
    res = subprocess.run(["/usr/bin/python3", str(ROOT / "stages" / "chunk.py"), "--name", "base"],
                         cwd=tmp_path, env=clean_env(), capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "make install" in res.stderr and ". .venv/bin/activate" in res.stderr
    assert "Traceback" not in res.stderr


def test_review_commands_as_written(repo):
    res = bash(repo, ". .venv/bin/activate\n" + readme_blocks()["review"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "bm25" in res.stdout


def test_removing_a_config_leaves_no_tracked_file_of_it(repo):
    """The steps of docs/pipeline.md after deleting a config from params.yaml: no file of it
    stays tracked or in the build folder, its lock entry goes, the other configs' files
    stay, and the stages that hash the whole runs folder hash it without the removed run, as a
    clean checkout does."""
    params = yaml.safe_load((repo / "params.yaml").read_text())
    del params["retrieval"]["hybrid"]
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert "metrics/latency/hybrid.json" in run_in(repo, "git", "ls-files")
    res = bash(repo, ". .venv/bin/activate\n" + readme_blocks()["remove-config"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "metrics/latency/hybrid.json" in res.stdout, "the dry run lists what it would remove"
    assert "data/build/runs/hybrid.json (build output, not committed)" in res.stdout
    assert not (repo / "data/build/runs/hybrid.json").exists()
    assert (repo / "data/build/runs/dense.json").is_file()
    tracked = run_in(repo, "git", "ls-files").split()
    assert "metrics/latency/hybrid.json" not in tracked
    assert {"metrics/latency/hybrid_rerank.json", "metrics/latency/dense.json"} <= set(tracked)
    lock = lock_stages(repo)
    assert "retrieve@hybrid" not in lock and "retrieve@dense" in lock
    assert "Running stage" not in run_in(repo, str(VENV_BIN / "dvc"), "repro"), "the pipeline stays up to date"
    assert "hybrid" not in yaml.safe_load((repo / "metrics/retrieval.json").read_text())
    runs_dep = next(d for d in lock["score"]["deps"] if d["path"] == "data/build/runs")
    assert runs_dep["nfiles"] == sum(p.is_file() for p in (repo / "data/build/runs").iterdir())
    run_in(repo, "git", "reset", "-q", "--hard")
    run_in(repo, str(VENV_BIN / "dvc"), "checkout", "-q")


def sweep_clone(built: Path, dest: Path) -> Path:
    """A clone of the fixture pipeline cut to what the README's sweep ranks: the configs dense,
    bm25 and hybrid on the one chunking `base`, no query transform, no answered config. Brought
    up to date as docs/pipeline.md says (`rag-ablation prune --apply` for the removed stages'
    files and lock entries, then `dvc repro`) and committed, as a user's pipeline is before a
    sweep."""
    d = clone_of(built, dest)
    params = yaml.safe_load((d / "params.yaml").read_text())
    params["chunkings"] = {"base": {}}
    params["retrieval"] = {name: {**params["retrieval"][name], "chunking": "base"} for name in ("dense", "bm25", "hybrid")}
    params["query_transforms"] = {"none": {}}
    params["generation"]["configs"] = []
    (d / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    dvc = str(VENV_BIN / "dvc")
    run_in(d, str(VENV_BIN / "rag-ablation"), "prune", "--apply")
    run_in(d, dvc, "repro")
    run_in(d, "git", "add", "-A")
    run_in(d, "git", "commit", "-q", "-m", "the three configs a sweep ranks")
    assert sorted(lock_stages(d)) == sorted(
        stage_name(line.split()[0]) for line in run_in(d, dvc, "stage", "list", "--all").splitlines() if line.strip())
    assert "up to date" in run_in(d, dvc, "status")
    return d


def test_own_data_commands_as_written(repo):
    """The README's "Your own data": a small SQuAD v2.0 file imported under data/imported/squad (one
    question keeps a span long enough), the import committed, then one `dvc exp run -S
    dataset=squad`: the pipeline runs on it, with none of the fixture's audit or hand grades, and
    the gate says in one line that this data set has no baseline. The block's last two lines are
    the commands the import printed (tests/test_dvc_import.py runs the printed ones)."""
    import json
    import shutil
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "datasets"))
    from test_imported_run import squad_sample

    (repo / "dev-v2.0.json").write_text(json.dumps(squad_sample()))
    head = run_in(repo, "git", "rev-parse", "HEAD").strip()
    block = readme_blocks()["own-data"]
    res = bash(repo, ". .venv/bin/activate\n" + block)
    out = res.stdout + res.stderr
    try:
        assert res.returncode == 0, out
        printed = out.split("\nrun it:", 1)[1].splitlines()[1:3]
        assert [line.removeprefix("  ") for line in printed] == block.splitlines()[1:], out
        assert run_in(repo, "git", "log", "-1", "--format=%s", "HEAD").strip() == "import squad"
        assert "dataset squad: read data/imported/squad/corpus, data/imported/squad/questions.jsonl;" in out
        assert "dataset squad: 2 documents, 1 questions, 0 audit lines, 0 hand grades" in out
        assert "no accepted baseline for data set 'squad'" in out
        retrieval = json.loads((repo / "metrics" / "retrieval.json").read_text())
        assert retrieval["bm25"]["available"] == 1, retrieval["bm25"]
    finally:
        (repo / "dev-v2.0.json").unlink()
        run_in(repo, "git", "reset", "-q", "--hard", head)  # the import's commit undone, params.yaml back
        shutil.rmtree(repo / "data" / "imported" / "squad", ignore_errors=True)
        run_in(repo, str(VENV_BIN / "dvc"), "checkout", "-q")


IMPORTED = "tiny"
"""The imported data set the README's sweep runs on in :func:`test_sweep_commands_on_an_imported_data_set`."""


def tiny_squad() -> dict:
    """Two articles, two answerable questions and one unanswerable each: the smallest SQuAD v2.0
    file whose split (test fraction 0.5, seed 0) puts each slice, main and unanswerable, on both
    sides (a document's questions on one side; an unanswerable question is a group of its own)."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "datasets"))
    from test_imported_run import squad_sample

    sample = squad_sample()
    sample["data"][1]["paragraphs"][0]["qas"].append(
        {"id": "o3", "question": "Who designed the Oslo city hall?", "is_impossible": True, "answers": []})
    return sample


@pytest.mark.slow_dvc
def test_sweep_commands_on_an_imported_data_set(built_pipeline, tmp_path):
    """The README's five sweep commands, the queue line with `-S dataset=tiny` added as the README
    says for your own data (and a split: the fixture's params have `split: none`), in a clone whose
    workspace stays on the handbook without a split: six queued experiments run one by one (the
    3 x 2 grid), the summary ranks 18 candidates on tiny's questions, chosen on tiny's dev half and
    confirmed on its test half (the split file each experiment committed), never the workspace's;
    its baseline is `stats.baseline` on the experiment DVC ran first (the grid's first point),
    `dvc exp show` prints the winner and the curse column, and the summary is committed.

    One run covers the block as written and on an imported set: each queued experiment reruns the
    pipeline from its data, so a second sweep would double the README tests' time. It runs on the
    fixture cut to the three configs the summary ranks (:func:`sweep_clone`); `run_configs` on the
    queue line keeps it that way on the full example."""
    import json

    repo = sweep_clone(built_pipeline, tmp_path / "repo")
    (repo / "tiny.json").write_text(json.dumps(tiny_squad()))
    folder = f"data/imported/{IMPORTED}"
    run_in(repo, str(VENV_BIN / "rag-ablation"), "import", "squad", "tiny.json", "--span", "sentence",
           "--corpus", f"{folder}/corpus", "--questions", f"{folder}/questions.jsonl")
    (repo / "tiny.json").unlink()
    run_in(repo, "git", "add", "-A")
    run_in(repo, "git", "commit", "-q", "-m", "an imported data set")
    queue, *rest = readme_blocks()["sweep"].splitlines()
    assert queue.startswith("dvc exp run --queue "), queue
    script = "\n".join([f"{queue} -S dataset={IMPORTED} -S 'split={{test_fraction:0.5,seed:0}}'", *rest])
    res = bash(repo, ". .venv/bin/activate\n" + script)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out

    data = json.loads((repo / "metrics" / "sweep.json").read_text())
    assert yaml.safe_load((repo / "params.yaml").read_text())["split"] == "none", "the workspace has no split"
    experiment = data["baseline"].split("@")[1]
    exps = {line.split()[1]: line.split()[0] for line in run_in(
        repo, "git", "for-each-ref", "--format=%(objectname) %(refname:lstrip=-1)", "refs/exps").splitlines()}
    split = [json.loads(line) for line in run_in(
        repo, "git", "show", f"{exps[experiment]}:data/split/{IMPORTED}.jsonl").splitlines() if line.strip()]
    questions = [json.loads(line) for line in (repo / folder / "questions.jsonl").read_text().splitlines()]
    answerable = {q["id"] for q in questions if q["slice"] != "unanswerable"}
    halves = {side: sorted(r["id"] for r in split if r["side"] == side and r["id"] in answerable)
              for side in ("dev", "test")}
    assert halves["dev"] and halves["test"], halves
    ranked = data["candidates"] + sum(len(r["aliases"]) for r in data["ranking"].values())
    assert data["dataset"] == IMPORTED and data["chosen_on"] == "dev" and ranked == 3 * 6
    assert (data["questions"], data["test_questions"]) == (len(halves["dev"]), len(halves["test"]))
    assert data["sides"][experiment]["chunk_size"] == 400 and data["sides"][experiment]["retrieval.hybrid.rrf_k"] == 20
    assert data["baseline"] == f"dense@{experiment}"
    grid = [p for p in data["sides"].values() if p.get("retrieval.hybrid.rrf_k") is not None]
    assert sorted((p["chunk_size"], p["retrieval.hybrid.rrf_k"]) for p in grid) == [
        (c, k) for c in (400, 800, 1200) for k in (20, 60)]
    assert data["winner"]["name"].split("@")[0] in {"dense", "bm25", "hybrid"}
    assert "winner.name" in res.stdout and "tie_set_size" in res.stdout
    assert "sweep summary" in run_in(repo, "git", "log", "-1", "--format=%s")
    md = (repo / "metrics" / "sweep.md").read_text()
    assert f"Data set `{IMPORTED}` (each side's params.yaml); dev/test: each side's own `data/split/{IMPORTED}.jsonl`." in md
    assert "the first experiment of `--all-exps`, which are taken in the order DVC ran them" in md
    assert "winner.winners_curse.value" in res.stdout and "winner.test.value" in res.stdout, res.stdout
