"""Answer many chat requests through the prompt cache with several requests in flight.

``chat_many(llm, conversations, num_predict=..., concurrency=N)`` returns, for each
conversation in input order, ``(Generation, cached)`` exactly as ``N == 1`` (a plain loop of
``CachedLLM.chat``) would: the same answers in the same order, the same cache keys, the same
``calls``/``hits``/``misses`` counters (a conversation repeated in the list is sent once and
counts as a hit afterwards, as it does in a loop).

How the cache is used from several threads: it is not. SQLite connections belong to the thread
that opened them (``PromptCache`` keeps the default ``check_same_thread``), so the calling
thread alone computes every key, reads the cache, and writes each answer; worker threads only
run ``backend.chat`` (HTTP requests; the server-backed backends are thread-safe). The calling
thread waits on the finished requests (``as_completed``) and stores each answer the moment it
arrives, one committed ``put`` per answer, so a crash or a kill loses no answer that had
returned. Other processes may share the same cache file as before (SQLite locks it).

Across processes each prompt is still asked once (``claims.py``): the calling thread claims each
key before sending it, without waiting; a key another process holds is left to the end, when this
process has stored its own answers and released its claims, and is then waited for one at a time
and read from the cache (asked here only if its owner died or failed).

When a request fails, the requests not yet started are cancelled, the ones in flight are waited
for and their answers stored, and the first error is raised. On Ctrl-C (``KeyboardInterrupt``)
the answers already returned are stored and the error is raised at once; the process then exits
when the requests in flight end (at most ``timeout`` seconds; a second Ctrl-C does not wait).

Concurrency 1 is today's loop, unchanged. Concurrency above 1 needs a backend that answers
requests in parallel from several threads: the served ones, and the embedded ``llama_cpp``
backend with as many copies of the model (``LlamaCppBackend(copies=N)``, ``llm.concurrency``).
Every backend here does, so no backend is refused a concurrency above 1.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, cast

from rag_ablation.llm.client.base import Generation
from rag_ablation.llm.client.prompt_cache import request_options

Messages = list[dict[str, Any]]


class _Sized:
    """An iterator with a length, so that progress bars (tqdm) know the total."""

    def __init__(self, it: Iterator[Any], n: int) -> None:
        self._it, self._n = it, n

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Any]:
        return self._it


def check_concurrency(concurrency: Any) -> int:
    """``concurrency`` as a positive int; ``ValueError`` otherwise (0, negatives, floats, bools)."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
    return concurrency


def chat_many(
    llm: Any,
    conversations: Sequence[Messages],
    *,
    num_predict: int,
    stop: Sequence[str] = (),
    concurrency: int = 1,
    progress: Callable[[Any], Any] = lambda it: it,
    top_logprobs: int = 0,
) -> list[tuple[Generation, bool]]:
    """``[llm.chat(m, num_predict=num_predict, stop=stop) for m in conversations]`` with up to
    ``concurrency`` backend requests in flight (see the module docstring).

    ``llm`` is a ``CachedLLM`` (or an object with its ``key``, ``chat``, ``cache``, ``backend``
    and counters). ``progress`` wraps an iterable with one item per finished answer (e.g.
    ``tqdm``); with concurrency 1 it wraps the conversations themselves, as before.
    ``top_logprobs`` > 0 asks each call for the first reply token's alternatives
    (``Backend.chat``); it is part of the cache key only then."""
    check_concurrency(concurrency)
    conversations = list(conversations)
    request = request_options(num_predict=num_predict, stop=stop, top_logprobs=top_logprobs)
    if concurrency == 1:
        return [llm.chat(m, **request) for m in progress(conversations)]
    results: list[tuple[Generation, bool] | None] = [None] * len(conversations)
    for _ in progress(_Sized(_answer(llm, conversations, results, request=request,
                                     concurrency=concurrency), len(conversations))):
        pass
    # every slot is filled when _answer ends
    return cast(list[tuple[Generation, bool]], results)


def _answer(llm: Any, conversations: list[Messages], results: list[Any], *, request: dict[str, Any],
            concurrency: int) -> Iterator[int]:
    """Fill ``results`` and yield each index as its answer is known. Runs in the calling thread;
    only ``backend.chat`` runs in the workers. ``request``: ``request_options``."""
    keys = [llm.key(m, **request) for m in conversations]
    later: dict[str, list[int]] = {}  # key -> indices of repeats of an earlier conversation
    to_send: list[int] = []

    def settle(i: int, gen: Generation, cached: bool) -> None:
        results[i] = (gen, cached)
        if cached:
            llm.hits += 1
        else:
            llm.misses += 1
        llm.calls += 1

    ready: list[int] = []
    for i, key in enumerate(keys):
        if key in later:
            later[key].append(i)
            continue
        later[key] = []
        gen = llm.cache.get(key)
        if gen is None:
            to_send.append(i)
        else:
            settle(i, gen, True)
            ready.append(i)

    def answered(i: int) -> Iterator[int]:
        yield i
        for j in later[keys[i]]:
            settle(j, results[i][0], True)
            yield j

    for i in ready:
        yield from answered(i)
    if not to_send:
        return

    # Claim each key to send (never waiting): the keys another process is asking about are
    # left for the end, when this process holds no claim and can wait for them safely.
    claims = llm.cache.claims
    mine: list[int] = []
    others: list[int] = []
    try:
        for i in to_send:
            if not claims.try_claim(keys[i]):
                others.append(i)
                continue
            gen = llm.cache.get(keys[i])  # answered by another process since the first look?
            if gen is None:
                mine.append(i)
            else:
                claims.release(keys[i])
                settle(i, gen, True)
                yield from answered(i)
        if mine:
            yield from _send(llm, conversations, keys, mine, settle, answered, request=request,
                             concurrency=concurrency)
    finally:
        claims.release_all()
    for i in others:  # holding no claim now: wait for each owner in turn, then read its answer
        with claims.claimed(keys[i]):
            gen = llm.cache.get(keys[i])
            cached = gen is not None
            if not cached:  # its owner died or failed: ask ourselves
                gen = llm.backend.chat(conversations[i], **request)
                llm.cache.put(keys[i], gen)
        settle(i, gen, cached)
        yield from answered(i)


def _send(llm: Any, conversations: list[Messages], keys: list[str], to_send: list[int],
          settle: Callable[[int, Generation, bool], None], answered: Callable[[int], Iterator[int]], *,
          request: dict[str, Any], concurrency: int) -> Iterator[int]:
    """Ask the backend for ``to_send`` (claimed keys) with up to ``concurrency`` requests in
    flight; store each answer, release its claim, and yield the indices it answers."""
    pool = ThreadPoolExecutor(max_workers=min(concurrency, len(to_send)), thread_name_prefix="llm-request")
    futures: dict[Future[Generation], int] = {
        pool.submit(llm.backend.chat, conversations[i], **request): i for i in to_send
    }
    stored: set[Future[Generation]] = set()

    def store(fut: Future[Generation]) -> int:
        """Put a finished request's answer in the cache (raises the request's error)."""
        i = futures[fut]
        gen = fut.result()
        llm.cache.put(keys[i], gen)
        llm.cache.claims.release(keys[i])
        stored.add(fut)
        settle(i, gen, False)
        return i

    def store_finished() -> None:
        for fut in futures:
            if fut.done() and fut not in stored and not fut.cancelled() and fut.exception() is None:
                store(fut)

    not_done = set(futures)
    try:
        while not_done:
            done, not_done = wait(not_done, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=futures.__getitem__):
                yield from answered(store(fut))
    except Exception:
        for fut in not_done:
            fut.cancel()
        wait(not_done)  # requests in flight: keep what they bring
        store_finished()
        raise
    except BaseException:  # KeyboardInterrupt, GeneratorExit: keep what has arrived, wait for nothing
        for fut in not_done:
            fut.cancel()
        store_finished()
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
