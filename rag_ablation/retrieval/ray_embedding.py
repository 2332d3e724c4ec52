"""The ``embedding.engine: ray`` engine: the batches the embedding cache lacks, embedded by Ray Data.

:func:`engine` gives an :data:`rag_ablation.retrieval.embeddings.Engine`. Called with the batches,
it starts Ray (``ray.address`` null: a local Ray with ``embedding.threads`` CPUs, shut down
after; otherwise it attaches to the running cluster at that address and leaves it running),
makes a Ray dataset of one row per batch (its number and its texts) and maps it with a pool of
actors (:class:`BatchEncoder`), one row per call. Each actor loads the sentence-transformers
model once (``load_model(embedding.model, threads=embedding.threads)``) and takes
``embedding.threads`` Ray CPUs, so actors x threads never exceeds the cluster's CPUs; there are
as many actors as the CPUs hold (at most one per batch). Each actor encodes a row's texts with
``encode(model, texts, batch_size=embedding.batch_size)``, exactly as the local engine does and
with as many torch threads, so a vector is the local engine's bit for bit (torch's float sums
depend on the thread count: 1 and 2 threads differ by up to about 1e-7, which is why each actor
gets ``embedding.threads`` rather than one thread; tests/retrieval/test_ray_embedding.py checks
the bits). With ``embedding.threads: 1`` a cluster runs one single-threaded actor per CPU.
Results are yielded as they finish, in any order, so the caller commits each batch to the
cache at once and a run that stops for any reason keeps every finished batch.

Actors that die (a node lost) are restarted by Ray and their batches retried
(``max_restarts``/``max_task_retries`` unbounded, Ray Data's default): the stage finishes once
the cluster has a CPU for them again. Ray's own logs stay in its session folder
(``/tmp/ray/session_*/logs``), never on stdout (its notices, such as a node lost, go to stderr);
the run ends with one line on stderr saying how many batches ran on how many nodes.

Ray is the optional extra ``ray`` (``pip install -e .[ray]``); without it :func:`engine` raises
one :class:`RayUnavailable`. The workers must import this package (the model loader and
``encode`` reach them pickled by reference): on one machine they use the same environment; on a
cluster, install the project on every node.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import socket
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from rag_ablation.core.config import EmbeddingConfig, RayConfig
from rag_ablation.core.errors import UserError

CONNECT_TIMEOUT = 30.0
"""Seconds the cluster at ``ray.address`` has to answer (see :func:`connect_timeout`)."""


class RayUnavailable(UserError, RuntimeError):
    """``embedding.engine: ray`` without Ray installed, or a cluster that does not answer."""


def _import_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as e:
        raise RayUnavailable(
            f"embedding.engine: ray needs Ray, which is not installed ({e}); install the extra with "
            "`pip install -e .[ray]`, or set embedding.engine to local"
        ) from e
    return ray


def engine(cfg: EmbeddingConfig, ray_cfg: RayConfig, *, load_model: Callable[..., object],
           encode: Callable[..., np.ndarray]) -> Callable[..., Iterator[tuple[int, np.ndarray]]]:
    """The engine of ``cfg`` on the cluster of ``ray_cfg`` (see the module docstring). Ray is
    imported here (a missing extra fails before anything runs) but started only when the
    engine is called, i.e. only when some text is not in the cache.

    ``load_model`` and ``encode`` are the actors' ``load_model(name, threads=...)`` and
    ``encode(model, texts, batch_size=...)``, passed by ``rag_ablation.retrieval.embeddings``
    (the module that calls this one), so the two modules do not import each other. They reach
    the actors pickled by reference, so the workers import them from the same installed package."""
    _import_ray()
    return functools.partial(run, cfg=cfg, address=ray_cfg.address, load_model=load_model, encode=encode)


class BatchEncoder:
    """A Ray Data actor: the model loaded once, then one row (one batch) per call."""

    def __init__(self, model: str, batch_size: int, threads: int, load_model: Callable[..., object],
                 encode: Callable[..., np.ndarray]) -> None:
        import ray

        self.model = load_model(model, threads=threads)
        self.encode = encode
        self.batch_size = batch_size
        self.node = ray.get_runtime_context().get_node_id()

    def __call__(self, rows: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, list] = {"batch": [], "vectors": [], "n": [], "node": []}
        for number, texts in zip(rows["batch"], rows["texts"]):
            vecs = self.encode(self.model, [str(t) for t in texts], batch_size=self.batch_size)
            out["batch"].append(int(number))
            out["vectors"].append(np.ascontiguousarray(vecs, dtype=np.float32).tobytes())  # exact bytes
            out["n"].append(len(vecs))
            out["node"].append(self.node)
        return {"batch": np.array(out["batch"], dtype=np.int64), "vectors": np.array(out["vectors"], dtype=object),
                "n": np.array(out["n"], dtype=np.int64), "node": np.array(out["node"], dtype=object)}


def connect_timeout() -> float:
    """Seconds a cluster at ``ray.address`` has to answer: ``$RAG_ABLATION_RAY_CONNECT_TIMEOUT``, default 30."""
    try:
        return float(os.environ.get("RAG_ABLATION_RAY_CONNECT_TIMEOUT", CONNECT_TIMEOUT))
    except ValueError:
        return CONNECT_TIMEOUT


def _unreachable(address: str, why: str) -> str:
    return (f"ray.address {address}: no Ray cluster answers there ({why}); start one with "
            "`ray start --head --port PORT` and set ray.address to HOST:PORT of its head, or set ray.address "
            "to null for a local Ray")


def _check_reachable(address: str, timeout: float) -> None:
    """One clear error at once if ``HOST:PORT`` (or ``ray://HOST:PORT``) refuses a TCP connection or
    takes none within ``timeout`` seconds (``ray.init`` itself retries for minutes)."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return
    except OSError as e:
        why = f"no answer within {timeout:g} s" if isinstance(e, TimeoutError) else f"{type(e).__name__}: {e}"
        raise RayUnavailable(_unreachable(address, why)) from None


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[int]:
    """File descriptor 2 to /dev/null for the block (what Ray's C++ code prints there, too);
    yields a descriptor of the real stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield saved
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _attach(ray: Any, address: str, timeout: float, **kwargs: Any) -> None:
    """``ray.init(address=...)``, bounded: a TCP port that answers but is no Ray head makes
    ``ray.init`` wait forever, so past ``timeout`` seconds the process prints the one error line
    and exits 2 (nothing has been embedded yet; the caches hold every committed batch)."""
    _check_reachable(address, timeout)
    connected = threading.Event()
    with contextlib.redirect_stdout(sys.stderr), _stderr_silenced() as real_stderr:  # banners, C++ notices

        def give_up() -> None:
            if not connected.is_set():
                line = "error: " + _unreachable(address, f"it takes connections, but no Ray head answered within {timeout:g} s")
                os.write(real_stderr, ("\n" + line + "\n").encode())  # after the progress bar's line
                os._exit(2)

        timer = threading.Timer(timeout, give_up)
        timer.daemon = True
        timer.start()
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, TimeoutError, RuntimeError, ValueError) as e:
            raise RayUnavailable(_unreachable(address, f"{type(e).__name__}: {e}")) from None
        finally:
            connected.set()
            timer.cancel()


@contextlib.contextmanager
def _session(cfg: EmbeddingConfig, address: str | None) -> Iterator[Any]:
    """Ray for the block: a local Ray started (address None) and shut down after, or the cluster
    at ``address`` attached to (and only disconnected from after). A Ray session the process
    already holds (``ray.init`` by a test or a notebook) is used as it is and left open.
    Within the block stdout is stderr: Ray prints its notices (a node lost, an actor restarted)
    on stdout, which is a DVC stage's output."""
    ray = _import_ray()
    for name in ("ray", "ray.data"):
        logging.getLogger(name).setLevel(logging.ERROR)
    # the driver's C++ log: fatal lines only (else one line per actor says its constructor
    # arguments live in the object store, which is Ray Data's own doing)
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    common: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    with contextlib.redirect_stdout(sys.stderr):
        if ray.is_initialized():
            yield ray
            return
        if address is None:
            with _stderr_silenced():
                ray.init(address="local", num_cpus=cfg.threads, include_dashboard=False, **common)
        else:
            _attach(ray, address, connect_timeout(), **common)
        try:
            yield ray
        finally:
            ray.shutdown()  # a cluster attached to keeps running: this only disconnects


def actors_for(cpus: float, threads: int, n_batches: int) -> int:
    """How many actors of ``threads`` torch threads (and as many Ray CPUs) each: as many as the
    cluster's CPUs hold, at least one, at most one per batch."""
    return max(1, min(int(cpus) // threads, n_batches))


def run(batches: Sequence[Sequence[str]], load: Callable[[], object] | None = None, *, cfg: EmbeddingConfig,
        address: str | None, load_model: Callable[..., object],
        encode: Callable[..., np.ndarray]) -> Iterator[tuple[int, np.ndarray]]:
    """Embed ``batches`` on Ray; yields ``(batch number, vectors)`` as each batch finishes. ``load``
    (the caller's model loader) is not used: the actors load the model themselves."""
    if not batches:
        return
    with _session(cfg, address) as ray:
        from ray.data import ActorPoolStrategy, DataContext

        ctx = DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        ctx.execution_options.preserve_order = False  # a batch is yielded as soon as it is done
        threads = cfg.threads  # the local engine's torch threads: the same bits (see the module docstring)
        cpus = ray.cluster_resources().get("CPU", 0)
        if cpus < threads:
            raise RayUnavailable(f"the Ray cluster at {address} has {cpus:g} CPUs, fewer than embedding.threads "
                                 f"{threads} (each actor's torch threads): lower embedding.threads or add nodes")
        actors = actors_for(cpus, threads, len(batches))
        ds = ray.data.from_items([{"batch": i, "texts": list(b)} for i, b in enumerate(batches)],
                                 override_num_blocks=len(batches))
        out = ds.map_batches(BatchEncoder, batch_size=1, batch_format="numpy", num_cpus=threads,
                             compute=ActorPoolStrategy(size=actors, max_tasks_in_flight_per_actor=2),
                             udf_modifying_row_count=False,
                             fn_constructor_kwargs={"model": cfg.model, "batch_size": cfg.batch_size, "threads": threads,
                                                    "load_model": load_model, "encode": encode})
        nodes: Counter[str] = Counter()
        for row in out.iter_rows():
            vecs = np.frombuffer(row["vectors"], dtype=np.float32).reshape(int(row["n"]), -1)
            nodes[str(row["node"])] += 1
            yield int(row["batch"]), vecs
        from tqdm import tqdm  # its write() keeps the caller's progress bar, if any, on a line of its own

        tqdm.write(f"ray: embedded {sum(nodes.values())} batches with {actors} actors on {len(nodes)} nodes "
                   f"({', '.join(f'{node[:8]}: {n}' for node, n in sorted(nodes.items()))})", file=sys.stderr)
