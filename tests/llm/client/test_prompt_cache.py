"""The prompt cache: keys, hit/miss counting, WAL mode and durability under SIGKILL."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rag_ablation.core.io import default_cache_dir

from conftest import ROOT
from rag_ablation.llm.client.prompt_cache import (
    CachedLLM,
    PromptCache,
    cache_key,
    default_cache_path,
)
from rag_ablation.llm.client.base import Generation
from rag_ablation.llm.client.llama_cpp import LlamaCppBackend

IDENTITY = {"backend": "llama_cpp", "model": "m.gguf", "digest": "a" * 64}
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]
OPTIONS = {"temperature": 0.0, "seed": 0, "num_predict": 16}


def test_key_is_64_hex_and_ignores_dict_order() -> None:
    key = cache_key(IDENTITY, MESSAGES, OPTIONS)
    assert len(key) == 64 and int(key, 16) >= 0
    reordered = cache_key(
        dict(reversed(list(IDENTITY.items()))),
        [dict(reversed(list(m.items()))) for m in MESSAGES],
        dict(reversed(list(OPTIONS.items()))),
    )
    assert reordered == key
    assert cache_key(dict(IDENTITY), [dict(m) for m in MESSAGES], dict(OPTIONS)) == key


@pytest.mark.parametrize(
    "identity, messages, options",
    [
        ({**IDENTITY, "digest": "b" * 64}, MESSAGES, OPTIONS),
        ({**IDENTITY, "backend": "ollama"}, MESSAGES, OPTIONS),
        (IDENTITY, [MESSAGES[0], {"role": "user", "content": "Hi!"}], OPTIONS),
        (IDENTITY, MESSAGES[::-1], OPTIONS),
        (IDENTITY, MESSAGES[1:], OPTIONS),
        (IDENTITY, MESSAGES, {**OPTIONS, "seed": 1}),
        (IDENTITY, MESSAGES, {**OPTIONS, "num_predict": 17}),
        (IDENTITY, MESSAGES, {**OPTIONS, "prompt_version": "v2"}),
    ],
)
def test_key_changes_with_any_part(identity: dict, messages: list, options: dict) -> None:
    assert cache_key(identity, messages, options) != cache_key(IDENTITY, MESSAGES, OPTIONS)


def test_put_get_roundtrip_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "prompts.sqlite"  # parent folders created
    gen = Generation(text="héllo\n", prompt_tokens=12, completion_tokens=3, seconds=0.25)
    with PromptCache(path) as cache:
        assert cache.get("k") is None
        cache.put("k", gen)
        assert cache.get("k") == gen
        assert len(cache) == 1 and "k" in cache
        assert cache.journal_mode() == "wal"
    with PromptCache(path) as again:
        assert again.get("k") == gen
    con = sqlite3.connect(path)  # the mode is stored in the file, seen by any connection
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_default_cache_dir_is_the_repository_being_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """One environment serving two clones: each clone's stages cache into that clone, found
    from the working directory (where DVC runs stages), never from the installed package."""
    monkeypatch.delenv("RAG_ABLATION_CACHE", raising=False)
    clones = [tmp_path / "clone1", tmp_path / "clone2"]
    for c in clones:
        (c / ".dvc").mkdir(parents=True)
        (c / "stages").mkdir()
    for c in clones:
        monkeypatch.chdir(c / "stages")
        assert default_cache_dir() == c.resolve() / ".cache"
    env = {k: v for k, v in os.environ.items() if k != "RAG_ABLATION_CACHE"}
    out = subprocess.run([sys.executable, "-c", "from rag_ablation.core.io import default_cache_dir; print(default_cache_dir())"],
                         cwd=clones[1], env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out) == clones[1].resolve() / ".cache" and not str(out).startswith(str(ROOT))
    monkeypatch.setenv("RAG_ABLATION_CACHE", str(tmp_path / "c"))
    assert default_cache_path() == tmp_path / "c" / "prompts.sqlite"
    with PromptCache() as cache:
        assert cache.path == tmp_path / "c" / "prompts.sqlite"
    assert cache.path.is_file()


@pytest.fixture(scope="module")
def smollm2() -> LlamaCppBackend:
    """The real embedded backend, shared by this module's tests (loaded on first chat)."""
    return LlamaCppBackend(n_threads=1)


@pytest.mark.slow
def test_cached_llm_counts_hits_and_misses(tmp_path: Path, smollm2: LlamaCppBackend) -> None:
    q1 = [{"role": "user", "content": "What is 2 + 2?"}]
    q2 = [{"role": "user", "content": "Say hello."}]
    with PromptCache(tmp_path / "p.sqlite") as cache:
        llm = CachedLLM(smollm2, cache, {"prompt_version": "v1"})
        g1, hit1 = llm.chat(q1, num_predict=8)
        g1_again, hit2 = llm.chat(q1, num_predict=8)
        _, hit3 = llm.chat(q2, num_predict=8)
        _, hit4 = llm.chat(q1, num_predict=9)  # another token budget is another call
        assert [hit1, hit2, hit3, hit4] == [False, True, False, False]
        assert g1_again == g1 and g1.text.strip()
        assert llm.stats() == {"calls": 4, "hits": 1, "misses": 3}
        assert (llm.calls, llm.hits, llm.misses) == (4, 1, 3)
        assert len(cache) == 3

        other_version = CachedLLM(smollm2, cache, {"prompt_version": "v2"})
        assert other_version.chat(q1, num_predict=8)[1] is False

    with PromptCache(tmp_path / "p.sqlite") as reopened:  # a later run reads it back
        later = CachedLLM(smollm2, reopened, {"prompt_version": "v1"})
        gen, hit = later.chat(q1, num_predict=8)
        assert hit and gen == g1
        assert later.stats() == {"calls": 1, "hits": 1, "misses": 0}


@pytest.mark.bad_input
def test_cached_llm_rejects_options_the_backend_owns(tmp_path: Path, smollm2: LlamaCppBackend) -> None:
    with PromptCache(tmp_path / "p.sqlite") as cache:
        for bad in ({"temperature": 0.7}, {"num_predict": 5}):
            with pytest.raises(ValueError, match=next(iter(bad))):
                CachedLLM(smollm2, cache, bad)


CHILD = textwrap.dedent(
    """
    import sys, time
    from rag_ablation.llm.client.prompt_cache import PromptCache
    from rag_ablation.llm.client.base import Generation

    cache = PromptCache(sys.argv[1])
    deadline = time.monotonic() + 60  # stops by itself if never killed
    i = 0
    while time.monotonic() < deadline:
        key = f"key-{i:06d}"
        cache.put(key, Generation(text="x" * 200 + str(i), prompt_tokens=i, completion_tokens=1, seconds=0.001))
        print(key, flush=True)
        i += 1
    """
)


def test_sigkill_keeps_every_put_that_returned(tmp_path: Path) -> None:
    path = tmp_path / "prompts.sqlite"
    n = 200
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    seen = []
    try:
        for line in child.stdout:
            seen.append(line.strip())
            if len(seen) == n:
                break
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL  # killed mid-run, not finished
    assert len(seen) == n

    with PromptCache(path) as cache:
        for i, key in enumerate(seen):
            gen = cache.get(key)
            assert gen is not None, key
            assert gen.prompt_tokens == i and gen.text.endswith(str(i))
        assert len(cache) >= n


OLD_SCHEMA = ("CREATE TABLE generations (key TEXT PRIMARY KEY, text TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,"
              " completion_tokens INTEGER NOT NULL, seconds REAL NOT NULL)")


def _old_cache(path: Path) -> None:
    """A cache as written before answers kept probabilities: no ``top_logprobs`` column."""
    conn = sqlite3.connect(path)
    conn.execute(OLD_SCHEMA)
    conn.execute("INSERT INTO generations VALUES ('k', 'old answer', 3, 1, 0.5)")
    conn.commit()
    conn.close()


def test_a_cache_from_before_probabilities_keeps_its_answers_and_gains_the_column(tmp_path: Path) -> None:
    path = tmp_path / "prompts.sqlite"
    _old_cache(path)
    with PromptCache(path) as cache:
        assert cache.get("k") == Generation(text="old answer", prompt_tokens=3, completion_tokens=1, seconds=0.5)
        cache.put("p", Generation(text="yes", prompt_tokens=1, completion_tokens=1, seconds=0.1,
                                  top_logprobs=(("yes", -0.25), ("no", -1.5))))
    with PromptCache(path) as cache:
        got = cache.get("p")
        assert got is not None and got.top_logprobs == (("yes", -0.25), ("no", -1.5))
        assert len(cache) == 2


OPENER = textwrap.dedent(
    """
    import os, sys, time
    from rag_ablation.llm.client.prompt_cache import PromptCache
    path, go = sys.argv[1], sys.argv[2]
    while not os.path.exists(go):
        time.sleep(0.001)
    with PromptCache(path) as cache:
        print(len(cache))
    """
)


@pytest.mark.parametrize("old", [False, True], ids=["new file", "old schema"])
def test_processes_opening_one_cache_at_once_all_open_it(tmp_path: Path, old: bool) -> None:
    """Two experiments started together (``dvc queue start -j 2``) open one cache file at the
    same moment; each must find one table with every column, none "duplicate column name"."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for attempt in range(3):  # the race is a matter of timing: three fresh files, six openers each
        path, go = tmp_path / f"prompts{attempt}.sqlite", tmp_path / f"go{attempt}"
        if old:
            _old_cache(path)
        procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(path), str(go)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
        time.sleep(0.5)  # let every opener start and wait on the signal
        go.touch()
        results = [p.communicate(timeout=120) for p in procs]
        for p, (out, err) in zip(procs, results):
            assert p.returncode == 0, err
            assert out.strip() == ("1" if old else "0")
        conn = sqlite3.connect(path)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(generations)")]
        conn.close()
        assert columns == ["key", "text", "prompt_tokens", "completion_tokens", "seconds", "top_logprobs"]
