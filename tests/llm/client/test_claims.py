"""Each prompt is answered once across processes: two processes missing the same prompts at
the same time send each to the LLM once (the claims of ``rag_ablation.llm.client.claims``), and an owner
killed mid-request does not block the other. The processes are real; the LLM is the stand-in
OpenAI-compatible server (``openai_stub``), because only it can count what it is asked, be made
slow on purpose, and keep answering while a client is killed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

from conftest import ROOT
from openai_stub import MODEL, StubServer, reply_for

from rag_ablation.llm.client.claims import Claims
from rag_ablation.llm.client.prompt_cache import PromptCache

# argv: cache file, server URL, concurrency, prompts as JSON; prints each (text, cached) as JSON
CLIENT = textwrap.dedent("""
    import json, sys
    from rag_ablation.llm.client.concurrent import chat_many
    from rag_ablation.llm.client.openai_compat import OpenAICompatBackend
    from rag_ablation.llm.client.prompt_cache import CachedLLM, PromptCache
    path, url, concurrency, prompts = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
    with PromptCache(path) as cache:
        llm = CachedLLM(OpenAICompatBackend(%r, url, timeout=60, retries=0), cache)
        conversations = [[{"role": "user", "content": p}] for p in prompts]
        print("started", flush=True)
        results = chat_many(llm, conversations, num_predict=8, concurrency=concurrency)
        print(json.dumps([[g.text, cached] for g, cached in results]), flush=True)
""" % MODEL)  # noqa: UP031  (a code template full of braces)
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def client(cache, url, concurrency, prompts):
    return subprocess.Popen([sys.executable, "-c", CLIENT, str(cache), url, str(concurrency), json.dumps(prompts)],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def results_of(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.splitlines()[-1])


def test_two_processes_ask_each_prompt_once(tmp_path):
    """One process answering one prompt at a time, the other four at once, both over the same
    12 prompts at the same moment (each answer takes 0.3 s): the server is asked each prompt
    exactly once, and both processes get every right answer, one asking, the other reading it."""
    prompts = [f"prompt {i}" for i in range(12)]
    go = threading.Event()
    with StubServer(delay=lambda body: (go.wait(60), 0.3)[1]) as stub:
        procs = [client(tmp_path / "prompts.sqlite", stub.url, n, prompts) for n in (1, 4)]
        for p in procs:
            assert p.stdout.readline().strip() == "started"
        time.sleep(0.3)  # both have looked at the cache and found nothing; the first requests wait on `go`
        go.set()
        a, b = (results_of(p) for p in procs)
        assert sorted(stub.answered) == sorted(prompts), "each prompt sent once, not once per process"
    for got in (a, b):
        assert [text for text, _ in got] == [reply_for([{"role": "user", "content": p}]) for p in prompts]
    assert [x[1] + y[1] for x, y in zip(a, b)] == [1] * 12, "each prompt asked by one process, read by the other"
    with PromptCache(tmp_path / "prompts.sqlite") as cache:
        assert len(cache) == 12


def test_a_killed_owner_does_not_block_the_other(tmp_path):
    """Process A claims a prompt and is killed (`kill -9`) while the server is still answering
    it; process B, which was waiting for A's answer, gets the claim at once and asks itself."""
    asked_at: list[float] = []

    def plan(n, body):
        asked_at.append(time.monotonic())
        return ("sleep", 30) if n == 1 else "ok"  # A's request hangs

    with StubServer(plan=plan) as stub:
        a = client(tmp_path / "prompts.sqlite", stub.url, 1, ["the question"])
        deadline = time.monotonic() + 60
        while not asked_at and time.monotonic() < deadline:
            time.sleep(0.02)
        assert asked_at, "A never asked"
        b = client(tmp_path / "prompts.sqlite", stub.url, 1, ["the question"])
        assert b.stdout.readline().strip() == "started"
        time.sleep(0.5)  # B is now waiting for A's claim
        assert len(asked_at) == 1, "B waits instead of asking a second time"
        killed = time.monotonic()
        a.send_signal(signal.SIGKILL)
        a.wait()
        [(text, cached)] = results_of(b)
        done = time.monotonic()
    assert (text, cached) == (reply_for([{"role": "user", "content": "the question"}]), False)
    assert len(asked_at) == 2 and asked_at[1] > killed, "B asked once A was dead"
    assert done - killed < 10, "no wait for a timeout or a stale claim"


def test_claims_exclude_other_processes_only_while_held(tmp_path):
    """A claim held here makes another process's ``try_claim`` fail; released, it succeeds."""
    probe = ("import sys; from rag_ablation.llm.client.claims import Claims; "
             "print(Claims(sys.argv[1]).try_claim(sys.argv[2]))")
    key = "ab" * 32

    def other_can_claim():
        out = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "c.claims"), key], env=ENV,
                             capture_output=True, text=True, check=True).stdout
        return out.strip() == "True"

    claims = Claims(tmp_path / "c.claims")
    assert claims.try_claim(key)
    assert not other_can_claim()
    claims.release(key)
    assert other_can_claim()
    claims.close()
