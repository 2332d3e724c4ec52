"""params.yaml, read once and checked: one frozen dataclass per block.

Every stage reads its parameters only through ``load_config`` (or ``Params.from_params`` for a
dict already in memory). Each block's ``from_params`` fills the defaults (written here and
nowhere else, each once: a dataclass field default, read back with ``field_defaults``, or a
named constant below where a field cannot hold it), rejects unknown keys, wrong types and keys
that do not apply to the chosen method, and names the full key path in its message::

    retrieval.hybrid.rrf_k: expected a positive number, got -1

A key set to null means "use the default" where the key has one. Every problem raises
``ConfigError`` (a ``UserError``: one line, exit 2).

Names that select code (a chunking method, a fusion, a tokenizer, an LLM backend...) are checked
here against the tuples below, so a typo fails when params are read rather than at the first
question; ``tests/core/test_config.py`` keeps these tuples equal to the registries that dispatch them.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from rag_ablation.core.errors import UserError

CONFIG_NAME = re.compile(r"^[a-z0-9_]+$")

DATASETS = ("covidqa", "handbook")  # rag_ablation.datasets.registry.DATASETS
IMPORTED_DIR = Path("data/imported")
"""Where imported data sets live, one folder each (relative to the repository root, where DVC runs
stages): ``NAME/corpus/`` and ``NAME/questions.jsonl``, optionally ``NAME/audit.jsonl`` and
``NAME/grades.jsonl``. ``dataset: NAME`` selects one; nothing else needs editing."""
CHUNKING_METHODS = ("chars", "fixed", "sentences")
DEFAULT_CHUNKING_METHOD = "chars"  # not a field default: ChunkingConfig.size and .overlap, after it, have none
CHAR_OVERLAP_METHODS = ("chars", "fixed")  # chunking methods whose overlap is in characters
RETRIEVAL_METHODS = ("dense", "bm25", "hybrid")
APP_METHODS = ("file", "http", "python", "trec")  # rag_ablation.retrieval.external.app_run.METHODS
APP_CALLS = ("ask", "retrieve")  # what a python or http app is asked: passages, or an answer with its passages
DEFAULT_APP_BODY = {"question": "{question}", "qid": "{qid}", "k": "{k}"}
"""The JSON body an http app is sent when params give none: each ``{question}``, ``{qid}`` and ``{k}``
in a string is filled in (a string that is exactly ``{k}`` becomes the number)."""
DEFAULT_APP_FIELDS = {"text": "text", "doc": "doc", "id": "id", "score": "score"}
"""Where an http app's hit keeps each passage field, by the name the project uses."""
FUSIONS = ("append", "rrf")
# hybrid configs only (RetrievalConfig's fields stay None where they do not apply)
DEFAULT_FUSION = "rrf"
DEFAULT_RRF_K = 60.0  # with fusion rrf
DEFAULT_TIES = "dense"  # with fusion rrf
TOKENIZERS = ("regex", "whitespace")
BM25_IMPLS = ("bm25s", "rank_bm25")
FAISS_INDEXES = ("flat", "hnsw", "ivf")  # rag_ablation.retrieval.faiss_index.BUILDERS
# the query transform kind that searches with the question as written; also the name of the one
# transform of the default query_transforms block, and so the default retrieval query
NO_TRANSFORM = "none"
TRANSFORM_KINDS = ("hyde", NO_TRANSFORM, "rewrite")
NO_LLM = "none"  # the switch that runs everything needing no LLM and marks the rest unavailable
LLM_BACKENDS = ("llama_cpp", "ollama", "openai", NO_LLM)
# llm keys that apply to some backends only (the rest apply to all; threads and threads_batch are
# for llama_cpp but stay accepted with the others, and concurrency with none, so
# `-S llm.backend=...` works on shipped params)
LLM_KEY_BACKENDS = {"host": ("ollama",), "base_urls": ("openai",), "api_key_env": ("openai",),
                    "timeout": ("ollama", "openai"), "retries": ("ollama", "openai")}

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
# rag_ablation.retrieval.embeddings.BACKENDS: in-process sentence-transformers, or any
# OpenAI-compatible /v1/embeddings server (vLLM, TEI, Ollama, llama.cpp's server)
EMBEDDING_BACKENDS = ("openai", "sentence_transformers")
# where the texts the cache lacks are embedded: in the stage's process, or on a Ray cluster
# (rag_ablation.retrieval.ray_embedding; the optional extra `pip install -e .[ray]`)
EMBEDDING_ENGINES = ("local", "ray")
# embedding keys that apply to the openai backend only
EMBEDDING_KEY_BACKENDS = {"base_urls": ("openai",), "api_key_env": ("openai",), "concurrency": ("openai",),
                          "timeout": ("openai",), "retries": ("openai",)}
DEFAULT_REFUSAL_PHRASES = (
    "does not say", "doesn't say", "do not say", "don't say", "not mentioned", "no information",
    "cannot answer", "can't answer", "not provided", "i don't know", "not specified in the given passages",
    "not specified in the passages",
)

GRADE_ORDERS = ("active", "random")  # rag_ablation.evaluation.judges.active.ORDERS
DEFAULT_GRADE_ORDER = "random"  # `rag-ablation grade --order`, the workbench's grade mode (docs/judging.md)
# random: measured against active order with scores never fit on the grades estimated
# (benchmarks/active_grading.py, benchmarks/RESULTS.md), active order's interval covers too
# rarely at 20 grades or fewer when the accuracy is low (the example's 0.12), with every score
DEFAULT_GRADE_SCORE_JUDGE = "token_f1"  # `--score-judge`: the score active order draws by; every run has it
ACTIVE_UNIFORM_SHARE = 0.5  # active order: the share of each draw's probability spread uniformly

# How floats are written (docs/pipeline.md#numbers-in-the-output-files). The same inputs must give
# the same bytes on every machine, so every output writer rounds: float noise (BLAS and torch
# kernels that differ between CPUs, summation order) lives far below these digits.
OUTPUT_DECIMALS = 6
"""Decimal places of every float ``rag_ablation.core.io`` writes (JSON, JSON lines and the scores
CSVs): 1e-16 noise becomes 0.0, and a number's text never depends on the machine."""
P_VALUE_PREFIX = "p_"
"""A float under a key starting with this (``p_sign``, ``p_holm``...) is a p-value: it keeps
:data:`P_VALUE_DIGITS` significant digits instead of :data:`OUTPUT_DECIMALS` decimals, so a tiny p
never becomes 0."""
P_VALUE_DIGITS = 4
"""Significant digits of a written p-value."""
STAT_DECIMALS = 4
"""Decimal places of the summary statistics (``metrics/stats.json``, the gate, the sweep and their
plot data: ``rag_ablation.evaluation.statistics.comparison.rounded``): the report prints three."""
SCORE_DIGITS = 3
"""Significant digits of a retrieval score in the per-question scores (``top_score`` of
``metrics/scores/retrieval.csv``). Dense scores come out of float32 kernels that differ between
CPUs by about 1e-7 (measured: AVX-512 against AVX2, mean 1.2e-7, at most 4.8e-7); at six decimals
one score in ten changed, at three significant digits about one in ten thousand does."""


class ConfigError(UserError, ValueError):
    """params.yaml is missing, unparsable, or has a key that is unknown, missing or wrong."""


# --- reading the file -----------------------------------------------------------------------


def load_params(path: Path | str = Path("params.yaml")) -> dict[str, Any]:
    """The whole params file, parsed with ``yaml.safe_load`` (no arbitrary objects). A YAML
    syntax error names the line and column."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path} not found: run the command from the repository root") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"{path} is not valid YAML{where}: {problem}; fix the syntax there") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of keys, found {type(data).__name__}")
    return data


def load_config(path: Path | str = Path("params.yaml")) -> Params:
    """``Params.from_params(load_params(path))``."""
    return Params.from_params(load_params(path))


# --- checks: each takes (value, key path) and returns the value converted ------------------

Check = Callable[[Any, str], Any]


def _fail(where: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{where}: expected {expected}, got {value!r}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def positive_int(v: Any, where: str) -> int:
    if not _is_int(v) or v < 1:
        raise _fail(where, "a positive integer", v)
    return int(v)


def non_negative_int(v: Any, where: str) -> int:
    if not _is_int(v) or v < 0:
        raise _fail(where, "an integer >= 0", v)
    return int(v)


def integer(v: Any, where: str) -> int:
    if not _is_int(v):
        raise _fail(where, "an integer", v)
    return int(v)


def positive_number(v: Any, where: str) -> float:
    if not _is_number(v) or v <= 0:
        raise _fail(where, "a positive number", v)
    return float(v)


def non_negative_number(v: Any, where: str) -> float:
    if not _is_number(v) or v < 0:
        raise _fail(where, "a number >= 0", v)
    return float(v)


def unit_number(v: Any, where: str) -> float:
    if not _is_number(v) or not 0 <= v <= 1:
        raise _fail(where, "a number from 0 to 1 (inclusive)", v)
    return float(v)


def boolean(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise _fail(where, "true or false", v)
    return v


def text(v: Any, where: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise _fail(where, "a non-empty string", v)
    return v


def imported_datasets(root: Path | None = None) -> list[str]:
    """The names of the imported data sets under ``root / IMPORTED_DIR`` (default: the current
    directory's): folders holding ``corpus/`` and ``questions.jsonl``, sorted."""
    folder = (root or Path.cwd()) / IMPORTED_DIR
    if not folder.is_dir():
        return []
    return sorted(d.name for d in folder.iterdir()
                  if d.is_dir() and (d / "corpus").is_dir() and (d / "questions.jsonl").is_file())


def dataset_name(v: Any, where: str) -> str:
    """A built-in data set (:data:`DATASETS`) or an imported one (:func:`imported_datasets`)."""
    if v in DATASETS:
        return str(v)
    found = imported_datasets()
    if isinstance(v, str) and v in found:
        return v
    raise ConfigError(f"{where}: expected one of {', '.join(DATASETS)} or the name of an imported data set "
                      f"({IMPORTED_DIR.as_posix()}/NAME/ holding corpus/ and questions.jsonl; here: "
                      f"{', '.join(found) or 'none'}), got {v!r}; import one with `rag-ablation import squad FILE "
                      f"--corpus {IMPORTED_DIR.as_posix()}/NAME/corpus --questions "
                      f"{IMPORTED_DIR.as_posix()}/NAME/questions.jsonl`")


def one_of(*names: str) -> Check:
    def check(v: Any, where: str) -> str:
        if v not in names:
            raise _fail(where, f"one of {', '.join(names)}", v)
        return str(v)

    return check


def text_list(v: Any, where: str) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) and x.strip() for x in v):
        raise _fail(where, "a list of non-empty strings", v)
    return tuple(v)


def _mapping(spec: Any, where: str) -> Mapping[str, Any]:
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: expected a mapping of keys, got {spec!r}")
    return spec


def field_defaults(cls: type) -> dict[str, Any]:
    """The defaults written on the dataclass ``cls``'s fields, key -> value (a fresh value for a
    ``default_factory``); a field without one is absent. Every block's ``from_params`` takes its
    defaults from here, so each is written once, on its field."""
    out: dict[str, Any] = {}
    for f in fields(cls):
        if f.default is not MISSING:
            out[f.name] = f.default
        elif f.default_factory is not MISSING:
            out[f.name] = f.default_factory()
    return out


def read_block(
    spec: Any,
    where: str,
    schema: Mapping[str, Check],
    *,
    defaults: Mapping[str, Any],
    allowed: set[str] | None = None,
) -> dict[str, Any]:
    """Check one params block against ``schema`` (key -> check). A key absent or null takes
    its default; a key with no default is required. ``allowed`` (default: every schema key)
    is the set of keys that apply here; another schema key that is set raises, naming the key
    and why (the caller puts the reason in ``where``-independent text)."""
    spec = _mapping(spec, where)
    unknown = sorted(set(spec) - set(schema))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(map(str, unknown))}; expected some of {', '.join(schema)}"
        )
    out: dict[str, Any] = {}
    for key, check in schema.items():
        value = spec.get(key)
        if value is None:
            if key not in defaults:
                raise ConfigError(f"{where}.{key}: missing; it is required (expected {_describe(check)})")
            out[key] = defaults[key]
            continue
        if allowed is not None and key not in allowed:
            raise ConfigError(f"{where}.{key}: does not apply here; remove it")
        out[key] = check(value, f"{where}.{key}")
    return out


def _describe(check: Check) -> str:
    try:
        check(object(), "")
    except ConfigError as e:
        return str(e).split("expected ", 1)[1].rsplit(", got", 1)[0]
    return "a value"  # pragma: no cover


def check_names(section: Mapping[str, Any], where: str) -> None:
    """Config names must match ``[a-z0-9_]+``: a dot breaks DVC's params paths, a ``+`` or
    ``-`` breaks ``dvc exp run -S``."""
    bad = [k for k in section if not isinstance(k, str) or not CONFIG_NAME.match(k)]
    if bad:
        raise ConfigError(
            f"{where}: name(s) {', '.join(map(repr, bad))}; use only lowercase letters, digits and underscores"
        )


def _named(spec: Any, where: str) -> Mapping[str, Any]:
    section = _mapping(spec, where)
    check_names(section, where)
    return section


# --- the blocks -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkingConfig:
    """``chunkings.<name>``: ``method`` chars (recursive character splitting with ``overlap``
    characters), fixed (plain ``size``-character windows starting every ``size - overlap``
    characters, cut mid-word) or sentences (pysbd sentences with ``overlap_sentences``); ``size``
    and ``overlap`` null take ``chunk_size`` / ``chunk_overlap``; ``overlap < size``."""

    name: str
    method: str
    size: int
    overlap: int
    overlap_sentences: int = 0
    heading_line: bool = False
    table_headers: bool = False

    SCHEMA = {"method": one_of(*CHUNKING_METHODS), "size": positive_int, "overlap": non_negative_int,
              "overlap_sentences": non_negative_int, "heading_line": boolean, "table_headers": boolean}

    @classmethod
    def from_params(cls, name: str, spec: Any, *, base_size: int, base_overlap: int) -> ChunkingConfig:
        where = f"chunkings.{name}"
        method = _mapping(spec, where).get("method") or DEFAULT_CHUNKING_METHOD
        chars = method in CHAR_OVERLAP_METHODS
        allowed = set(cls.SCHEMA) - ({"overlap_sentences"} if chars else {"overlap"})
        v = read_block(spec, where, cls.SCHEMA, allowed=allowed, defaults={
            **field_defaults(cls), "method": DEFAULT_CHUNKING_METHOD, "size": base_size,
            "overlap": base_overlap if chars else 0})
        if v["overlap"] >= v["size"]:
            raise ConfigError(f"{where}.overlap: expected fewer characters than the size ({v['size']}), "
                              f"got {v['overlap']}; lower the overlap or raise the size")
        return cls(name=name, **v)


@dataclass(frozen=True)
class LabelsConfig:
    """``labels``: the span rule and the checks on spans.

    ``window``: a chunk is relevant if it contains the span or any ``window``-character piece of
    it. ``same_doc_only``: match only in the gold document (the question's ``doc``); chunks of any
    other document are never relevant (the COVID-QA protocol needs it: its short, common spans
    recur across papers). ``min_span``: the questions stage rejects a span shorter than this many
    characters (whitespace normalized), naming each question, since a short span ("3", "fever")
    matches unrelated chunks. ``max_relevant``: the labels stage flags (in its metrics file, and on
    stderr) every question with more than this many relevant chunks in a chunking, since a
    common span makes a hit easy and inflates recall."""

    window: int = 30
    same_doc_only: bool = False
    min_span: int = 20
    max_relevant: int = 10

    @classmethod
    def from_params(cls, spec: Any) -> LabelsConfig:
        return cls(**read_block(spec, "labels", {"window": positive_int, "same_doc_only": boolean,
                                                 "min_span": positive_int, "max_relevant": positive_int},
                                defaults=field_defaults(cls)))


@dataclass(frozen=True)
class EmbeddingConfig:
    """``embedding``: the model, batch size, torch/FAISS threads, where vectors come from
    (``backend``) and where the missing ones are computed (``engine``).

    ``backend``: ``sentence_transformers`` (default: the model loaded in the stage's process;
    ``model`` is a name of ``rag_ablation.retrieval.embeddings.MODELS``, a local folder or a
    model in the local Hugging Face cache) or ``openai`` (any OpenAI-compatible
    ``/v1/embeddings`` server; ``model`` is the server's model name, ``base_urls`` its API roots,
    required, ``api_key_env`` the environment variable holding the key, ``concurrency`` requests
    in flight, ``timeout`` seconds per request, ``retries`` extra attempts after a passing fault;
    these five apply to openai only). ``engine``: ``local`` (default) or ``ray`` (the texts the
    cache lacks are embedded by Ray Data on the cluster of ``ray.address``; sentence_transformers
    only). The engine never changes a vector, so it is not a DVC param of any stage."""

    model: str = DEFAULT_EMBEDDING_MODEL
    batch_size: int = 32
    threads: int = 1
    backend: str = "sentence_transformers"
    engine: str = "local"
    base_urls: tuple[str, ...] = ()
    api_key_env: str | None = None
    concurrency: int = 1
    timeout: float = 60.0
    retries: int = 3

    @classmethod
    def from_params(cls, spec: Any) -> EmbeddingConfig:
        defaults = field_defaults(cls)
        backend = _mapping(spec, "embedding").get("backend") or defaults["backend"]
        schema = {"model": text, "batch_size": positive_int, "threads": positive_int,
                  "backend": one_of(*EMBEDDING_BACKENDS), "engine": one_of(*EMBEDDING_ENGINES),
                  "base_urls": _base_urls, "api_key_env": _env_var_name, "concurrency": positive_int,
                  "timeout": positive_number, "retries": non_negative_int}
        if backend == "openai":
            del defaults["base_urls"]
        allowed = {k for k in schema if backend in EMBEDDING_KEY_BACKENDS.get(k, (backend,))}
        try:
            v = read_block(spec, "embedding", schema, defaults=defaults, allowed=allowed)
        except ConfigError as e:
            if backend in EMBEDDING_BACKENDS and "does not apply" in str(e):
                raise ConfigError(f"{e} (backend {backend})") from None
            raise
        if v["engine"] == "ray" and v["backend"] != "sentence_transformers":
            raise ConfigError(f"embedding.engine: ray runs the sentence-transformers model on Ray workers; backend "
                              f"{v['backend']} already sends its batches to servers: use engine local with it")
        return cls(**v)


@dataclass(frozen=True)
class RayConfig:
    """``ray``: the cluster that ``embedding.engine: ray`` (and ``faiss.shards`` with it) runs on.
    ``address`` null (the default): a local Ray is started for the stage with ``embedding.threads``
    CPUs and stopped after it; otherwise the address of a running cluster (``auto``,
    ``HOST:PORT`` of its head, or ``ray://HOST:PORT``), attached to and left running."""

    address: str | None = None

    @classmethod
    def from_params(cls, spec: Any) -> RayConfig:
        return cls(**read_block(spec, "ray", {"address": _ray_address}, defaults=field_defaults(cls)))


def _ray_address(v: Any, where: str) -> str:
    if not isinstance(v, str) or not (v == "auto" or re.fullmatch(r"(ray://)?[A-Za-z0-9_.\-\[\]:]+:[0-9]+", v)):
        raise _fail(where, "auto, HOST:PORT of a Ray head, or ray://HOST:PORT", v)
    return v


@dataclass(frozen=True)
class Bm25Config:
    """``bm25``: tokenizer, implementation and BM25Okapi's k1, b and idf floor ``epsilon``.

    ``mmap`` (default false; impl ``bm25s`` only): the bm25 stage stores bm25s' score matrix
    instead of the tokens and retrieval opens it memory-mapped, so a query reads only its own
    terms' columns from disk and the corpus never has to fit in RAM (scores unchanged)."""

    tokenizer: str = "regex"
    impl: str = "rank_bm25"
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    mmap: bool = False

    def __post_init__(self) -> None:  # checked however the config is made, not only from params
        if self.impl == "bm25s" and self.epsilon != 0:
            raise ConfigError(f"bm25.epsilon: expected 0 with impl bm25s (it floors negative idf at 0), "
                              f"got {self.epsilon}; set bm25.epsilon to 0 or use impl rank_bm25")
        if self.mmap and self.impl != "bm25s":
            raise ConfigError(f"bm25.mmap: true needs impl bm25s (only bm25s stores a score matrix to map), "
                              f"got impl {self.impl}; set bm25.impl to bm25s and bm25.epsilon to 0, "
                              "or bm25.mmap to false")

    def scoring(self) -> dict[str, Any]:
        """The settings that decide scores, as run files record them: all but ``mmap``, which
        only changes how the index is stored, so flipping it leaves run files byte-identical."""
        return {k: v for k, v in asdict(self).items() if k != "mmap"}

    @classmethod
    def from_params(cls, spec: Any) -> Bm25Config:
        return cls(**read_block(spec, "bm25", {"tokenizer": one_of(*TOKENIZERS), "impl": one_of(*BM25_IMPLS),
                                               "k1": non_negative_number, "b": unit_number,
                                               "epsilon": non_negative_number, "mmap": boolean},
                                defaults=field_defaults(cls)))


@dataclass(frozen=True)
class FaissConfig:
    """``faiss``: the dense index type (``rag_ablation.retrieval.faiss_index``) and its settings.

    ``index``: ``flat`` (exact ``IndexFlatIP``, the default), ``ivf`` (``IndexIVFFlat``, inner
    product: ``nlist`` k-means lists trained with ``seed``, ``nprobe`` of them searched) or
    ``hnsw`` (``IndexHNSWFlat``, inner product: ``hnsw_m`` links per node, ``ef_construction``
    candidates while building, ``ef_search`` while searching). Every key is accepted whatever
    the index, so ``dvc exp run -S faiss.index=ivf`` works on the shipped params; each applies to
    its own index only. ``shards`` (default 1; above 1 needs ivf): the coarse quantizer is trained
    once on a seeded sample, each shard's inverted lists are filled in a process of its own and
    merged into one on-disk index that retrieval memory-maps. Build-time keys (index, nlist,
    hnsw_m, ef_construction, seed, shards) are read by
    the dense stage; search-time keys (nprobe, ef_search) by the retrieve stage, which sets them
    on the loaded index, so changing them never rebuilds an index. ``nprobe <= nlist``;
    ``hnsw_m >= 2``."""

    index: str = "flat"
    nlist: int = 256
    nprobe: int = 16
    hnsw_m: int = 32
    ef_construction: int = 200
    ef_search: int = 128
    seed: int = 0
    shards: int = 1

    @classmethod
    def from_params(cls, spec: Any) -> FaissConfig:
        v = read_block(spec, "faiss", {"index": one_of(*FAISS_INDEXES), "nlist": positive_int,
                                       "nprobe": positive_int, "hnsw_m": positive_int,
                                       "ef_construction": positive_int, "ef_search": positive_int,
                                       "seed": non_negative_int, "shards": positive_int},
                       defaults=field_defaults(cls))
        if v["shards"] > 1 and v["index"] != "ivf":
            raise ConfigError(f"faiss.shards: {v['shards']} shards need index ivf (one trained quantizer, inverted "
                              f"lists filled per shard and merged on disk), got index {v['index']}; set "
                              f"faiss.index to ivf or faiss.shards to 1")
        if v["nprobe"] > v["nlist"]:
            raise ConfigError(f"faiss.nprobe: expected at most faiss.nlist ({v['nlist']}), got {v['nprobe']}; "
                              f"nprobe = nlist already searches every list (exact)")
        if v["hnsw_m"] < 2:
            raise ConfigError(f"faiss.hnsw_m: expected an integer >= 2 (links per HNSW node), got {v['hnsw_m']}; "
                              f"use 16 to 64")
        return cls(**v)


@dataclass(frozen=True)
class RerankConfig:
    """``retrieval.<name>.rerank``: a cross-encoder re-scores the top ``depth`` candidates.
    ``allow_placeholder`` (tests only) lets an untrained head run for plumbing and latency."""

    model: str
    depth: int = 20
    allow_placeholder: bool = False

    @classmethod
    def from_params(cls, spec: Any, where: str) -> RerankConfig:
        return cls(**read_block(spec, where, {"model": text, "depth": positive_int, "allow_placeholder": boolean},
                                defaults=field_defaults(cls)))


@dataclass(frozen=True)
class RetrievalConfig:
    """``retrieval.<name>``: one retrieval configuration (see params.yaml for the keys).

    ``fusion`` applies to hybrid only; ``rrf_k``, ``weights`` and ``ties`` to hybrid with rrf
    only; a key that does not apply is an error. ``ties`` names the retriever whose list wins an
    RRF tie (equal fused scores: a chunk at rank r of one list only against a chunk at rank r of
    the other): ``dense`` (the default) or ``bm25``. ``k >= 10`` (recall@10 and MRR@10 need ten
    results) and ``depth >= k``."""

    name: str
    chunking: str | None
    method: str
    fusion: str | None = None
    rrf_k: float | None = None
    weights: Mapping[str, float] = field(default_factory=dict)
    ties: str | None = None
    depth: int = 100
    rerank: RerankConfig | None = None
    k: int = 10
    query: str = NO_TRANSFORM
    app: AppConfig | None = None

    @property
    def is_app(self) -> bool:
        """A team's own app (``apps:``): no chunking, no index; its passages come with their text."""
        return self.app is not None

    @classmethod
    def of_app(cls, name: str, app: AppConfig) -> RetrievalConfig:
        """The retrieval config of app ``name`` (``apps.<name>``): method the app's, no chunking."""
        return cls(name=name, chunking=None, method=app.method, depth=app.k, k=app.k, app=app)

    @property
    def uses_dense(self) -> bool:
        return self.method in ("dense", "hybrid")

    @property
    def uses_bm25(self) -> bool:
        return self.method in ("bm25", "hybrid")

    @classmethod
    def from_params(cls, name: str, spec: Any, *, chunkings: Any, transforms: Any) -> RetrievalConfig:
        where = f"retrieval.{name}"
        raw = _mapping(spec, where)
        method = raw.get("method")
        fusion = raw.get("fusion") or DEFAULT_FUSION
        allowed = {"chunking", "method", "depth", "rerank", "k", "query"}
        if method == "hybrid":
            allowed |= {"fusion"} | ({"rrf_k", "weights", "ties"} if fusion == "rrf" else set())
        schema: dict[str, Check] = {
            "chunking": one_of(*chunkings), "method": one_of(*RETRIEVAL_METHODS), "fusion": one_of(*FUSIONS),
            "rrf_k": positive_number, "weights": _weights, "ties": one_of("dense", "bm25"), "depth": positive_int,
            "rerank": lambda v, w: RerankConfig.from_params(v, w), "k": positive_int,
            "query": one_of(*transforms),
        }
        defaults = field_defaults(cls)
        if defaults["query"] not in transforms:
            defaults["query"] = None
        try:
            v = read_block(spec, where, schema, allowed=allowed, defaults=defaults)
        except ConfigError as e:
            if method in RETRIEVAL_METHODS and "does not apply" in str(e):
                raise ConfigError(f"{e} (method {method}{', fusion ' + fusion if method == 'hybrid' else ''})") from None
            raise
        if method == "hybrid":
            v["fusion"] = fusion
            if fusion == "rrf" and v["rrf_k"] is None:
                v["rrf_k"] = DEFAULT_RRF_K
            if fusion == "rrf" and v["ties"] is None:
                v["ties"] = DEFAULT_TIES
        if v["k"] < 10:
            raise _fail(f"{where}.k", "at least 10 (recall@10 and MRR@10 need ten results)", v["k"])
        if v["depth"] < v["k"]:
            raise _fail(f"{where}.depth", f"at least k ({v['k']})", v["depth"])
        return cls(name=name, **v)

    def resolved(self) -> dict[str, Any]:
        """The config with every default filled in, as JSON (stored in the run file); an app's
        is its name, method, ``k`` and ``app`` (:meth:`AppConfig.spec`); a built-in config has
        no ``app`` key."""
        if self.app is not None:
            return {"name": self.name, "method": self.method, "k": self.k, "app": self.app.spec()}
        out = asdict(self)
        del out["app"]
        return out


def _weights(v: Any, where: str) -> dict[str, float]:
    if not isinstance(v, Mapping) or not set(v) <= {"dense", "bm25"}:
        raise _fail(where, "a mapping with keys dense and/or bm25", v)
    return {k: non_negative_number(w, f"{where}.{k}") for k, w in sorted(v.items())}


@dataclass(frozen=True)
class AppConfig:
    """``apps.<name>``: a team's own retriever or whole RAG app, measured as a retrieval config
    (docs/own-app.md; ``rag_ablation.retrieval.external``). ``method``:

    - ``python``: ``target`` ``package.module:function``, imported with ``path`` (folders, relative
      to the repository) first on ``sys.path``; called once per question with ``args`` as keyword
      arguments, or with ``batch`` questions at a time when ``batch`` is set;
    - ``http``: ``url`` is sent ``body`` (a JSON template, :data:`DEFAULT_APP_BODY` by default) by
      POST; the hits are the list at the dotted path ``hits`` of the reply, each hit's fields
      found under ``fields`` (:data:`DEFAULT_APP_FIELDS`); ``headers`` are sent as given, and the
      key of ``api_key_env`` (an environment variable's name) as a bearer token;
    - ``trec``: ``run`` (a 6-column TREC run file) with ``passages`` (JSON lines: id, doc, text);
    - ``file``: ``answers`` (JSON lines: id, answer, passages with doc and text): answers the app
      already wrote.

    ``call`` (python, http): ``retrieve`` (ranked passages) or ``ask`` (an answer with the passages
    it was written from; ``answer`` is the dotted path of the answer in an http reply). ``deps``
    is the one file or folder DVC tracks for the app (DVC's templating cannot put a list into a
    stage's deps): its content is also part of every cached call's key, so a change reruns the
    app and calls it afresh. ``k`` is the ranking length kept (at least 10); ``concurrency`` is the
    calls in flight (python, http); ``fresh`` calls the app even where the
    cache holds the answer; ``timeout`` (seconds per request) and ``retries`` apply to http only.
    ``version`` (http) is the dotted path of the version the reply reports, part of the cache key
    as a python target's ``version`` attribute or module ``__version__`` is."""

    method: str
    deps: str
    call: str = "retrieve"
    target: str | None = None
    path: tuple[str, ...] = ()
    args: Mapping[str, Any] = field(default_factory=dict)
    batch: int | None = None
    url: str | None = None
    body: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_APP_BODY))
    hits: str = "hits"
    answer: str = "answer"
    fields: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_APP_FIELDS))
    headers: Mapping[str, str] = field(default_factory=dict)
    api_key_env: str | None = None
    version: str | None = None
    run: str | None = None
    passages: str | None = None
    answers: str | None = None
    k: int = 10
    concurrency: int = 1
    timeout: float = 30.0
    retries: int = 2
    fresh: bool = False

    KEYS = {"python": {"target", "path", "args", "batch", "call"},
            "http": {"url", "body", "hits", "answer", "fields", "headers", "api_key_env", "version", "call", "args",
                     "timeout", "retries"},
            "trec": {"run", "passages"}, "file": {"answers"}}
    REQUIRED = {"python": ("target",), "http": ("url",), "trec": ("run", "passages"), "file": ("answers",)}
    CALLED = ("concurrency", "fresh")  # keys of the methods that call the app (python, http)

    @property
    def answers_questions(self) -> bool:
        """Whether the app gives answers (``call: ask``, or an answers file), not only passages."""
        return self.call == "ask" or self.method == "file"

    @classmethod
    def from_params(cls, name: str, spec: Any) -> AppConfig:
        where = f"apps.{name}"
        raw = _mapping(spec, where)
        method = raw.get("method")
        schema: dict[str, Check] = {
            "method": one_of(*APP_METHODS), "deps": text, "call": one_of(*APP_CALLS), "target": _target,
            "path": _paths, "args": _app_args, "batch": positive_int, "url": _url, "body": _app_body, "hits": text,
            "answer": text, "fields": _app_fields, "headers": _headers, "api_key_env": _env_var_name,
            "version": text, "run": text, "passages": text, "answers": text, "k": positive_int,
            "concurrency": positive_int, "timeout": positive_number, "retries": non_negative_int, "fresh": boolean,
        }
        defaults = field_defaults(cls)
        for key in cls.REQUIRED.get(str(method), ()):
            defaults.pop(key, None)
        called = method in ("python", "http")
        allowed = {"method", "deps", "k"} | cls.KEYS.get(str(method), set()) | (set(cls.CALLED) if called else set())
        try:
            v = read_block(spec, where, schema, defaults=defaults, allowed=allowed)
        except ConfigError as e:
            if method in APP_METHODS and "does not apply" in str(e):
                raise ConfigError(f"{e} (method {method})") from None
            raise
        if v["k"] < 10:
            raise _fail(f"{where}.k", "at least 10 (recall@10 and MRR@10 need ten results)", v["k"])
        if method == "http" and "concurrency" not in raw:
            v["concurrency"] = DEFAULT_HTTP_CONCURRENCY
        return cls(**v)

    def spec(self) -> dict[str, Any]:
        """The keys that apply to this method, as JSON (stored in the run file; ``headers``
        values are never stored, only their names, since they may hold credentials)."""
        keep = {"method", "deps", "k"} | self.KEYS[self.method] | (
            set(self.CALLED) if self.method in ("python", "http") else set())
        out = {k: v for k, v in asdict(self).items() if k in keep}
        if "headers" in out:
            out["headers"] = sorted(out["headers"])
        return out


DEFAULT_HTTP_CONCURRENCY = 4
"""Requests in flight at once to an http app when params give no ``concurrency``; a python app
is called one question at a time unless params say otherwise (its code may not be thread-safe)."""


def _target(v: Any, where: str) -> str:
    if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", v):
        raise _fail(where, "package.module:function (e.g. myapp.search:retrieve)", v)
    return v


def _paths(v: Any, where: str) -> tuple[str, ...]:
    items = [v] if isinstance(v, str) else v
    if not isinstance(items, list) or not all(isinstance(x, str) and x.strip() for x in items):
        raise _fail(where, "a folder or a list of folders to import from (relative to the repository)", v)
    return tuple(items)


def _app_args(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, Mapping) or not all(isinstance(k, str) and k.isidentifier() for k in v):
        raise _fail(where, "a mapping of keyword argument names to values", v)
    if any(k in ("qid", "k") for k in v):
        raise ConfigError(f"{where}: qid and k are passed by the project itself; rename the argument")
    return {k: v[k] for k in sorted(v)}


def _url(v: Any, where: str) -> str:
    if not isinstance(v, str) or not re.match(r"^https?://[^/\s]+", v):
        raise _fail(where, "an http:// or https:// URL (e.g. http://127.0.0.1:8000/search)", v)
    return v


def _app_body(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, Mapping):
        raise _fail(where, "a mapping: the JSON body, with {question}, {qid} and {k} where they go", v)
    return dict(v)


def _app_fields(v: Any, where: str) -> dict[str, str]:
    if not isinstance(v, Mapping) or not set(v) <= set(DEFAULT_APP_FIELDS) or not all(
            isinstance(x, str) and x for x in v.values()):
        raise _fail(where, f"a mapping of some of {', '.join(DEFAULT_APP_FIELDS)} to the hit's field names", v)
    return {**DEFAULT_APP_FIELDS, **v}


def _headers(v: Any, where: str) -> dict[str, str]:
    if not isinstance(v, Mapping) or not all(isinstance(k, str) and isinstance(x, str) for k, x in v.items()):
        raise _fail(where, "a mapping of header names to strings", v)
    return dict(v)


@dataclass(frozen=True)
class QueryTransformConfig:
    """``query_transforms.<name>``: ``kind`` none | rewrite | hyde; the LLM kinds need a
    ``prompt`` (a template under prompts/) and take ``num_predict`` (token budget)."""

    name: str
    kind: str = NO_TRANSFORM
    prompt: str | None = None
    num_predict: int = 128

    @classmethod
    def from_params(cls, name: str, spec: Any) -> QueryTransformConfig:
        where = f"query_transforms.{name}"
        defaults = field_defaults(cls)
        kind = _mapping(spec, where).get("kind") or defaults["kind"]
        llm = kind != NO_TRANSFORM
        if llm:  # an LLM kind needs its prompt
            del defaults["prompt"]
        v = read_block(spec, where, {"kind": one_of(*TRANSFORM_KINDS), "prompt": text, "num_predict": positive_int},
                       allowed={"kind"} | ({"prompt", "num_predict"} if llm else set()), defaults=defaults)
        return cls(name=name, **v)


@dataclass(frozen=True)
class LlmConfig:
    """``llm``: backend, model, decoding settings (seed, temperature, context) and, for
    llama_cpp, threads for decoding (``threads``) and for reading the prompt (``threads_batch``).
    ``model`` null means the packaged SmolLM2 for llama_cpp and is required for ollama and
    openai; ``host`` applies to ollama only; ``base_urls`` (required: API roots such as
    http://127.0.0.1:8000/v1) and ``api_key_env`` (the name of the environment variable holding
    the key) to openai only; ``concurrency`` is the requests in flight (for llama_cpp: that many
    copies of the model in the process, each answering one prompt at a time on ``threads`` /
    ``threads_batch`` threads); ``timeout`` (seconds per request) and ``retries`` (extra attempts
    after a passing fault) apply to ollama and openai only.
    ``backend: none`` is the switch for work without any LLM: every stage that needs one (LLM
    query transforms, the retrieval configs that search with them, answers) writes its output
    as unavailable, saying why, and everything else runs as usual."""

    backend: str = "llama_cpp"
    model: str | None = None
    host: str | None = None
    base_urls: tuple[str, ...] = ()
    api_key_env: str | None = None
    threads: int = 1
    threads_batch: int = 2
    seed: int = 0
    temperature: float = 0.0
    num_ctx: int = 4096
    concurrency: int = 1
    timeout: float = 120.0
    retries: int = 3

    @property
    def enabled(self) -> bool:
        """False for ``backend: none`` (no LLM is called)."""
        return self.backend != NO_LLM

    @classmethod
    def from_params(cls, spec: Any, where: str = "llm") -> LlmConfig:
        defaults = field_defaults(cls)
        backend = _mapping(spec, where).get("backend") or defaults["backend"]
        schema = {"backend": one_of(*LLM_BACKENDS), "model": text, "host": text, "base_urls": _base_urls,
                  "api_key_env": _env_var_name, "threads": positive_int, "threads_batch": positive_int,
                  "seed": integer, "temperature": non_negative_number, "num_ctx": positive_int,
                  "concurrency": positive_int, "timeout": positive_number, "retries": non_negative_int}
        if backend in ("ollama", "openai"):
            del defaults["model"]
        if backend == "openai":
            del defaults["base_urls"]
        allowed = {k for k in schema if backend in LLM_KEY_BACKENDS.get(k, (backend,))}
        try:
            return cls(**read_block(spec, where, schema, defaults=defaults, allowed=allowed))
        except ConfigError as e:
            if backend in LLM_BACKENDS and "does not apply" in str(e):
                raise ConfigError(f"{e} (backend {backend})") from None
            raise


def _base_urls(v: Any, where: str) -> tuple[str, ...]:
    urls = [v] if isinstance(v, str) else v
    if not isinstance(urls, list) or not urls or not all(
            isinstance(u, str) and re.match(r"^https?://[^/\s]+", u) for u in urls):
        raise _fail(where, "a list of http:// or https:// API roots (e.g. [http://127.0.0.1:8000/v1])", v)
    return tuple(urls)


def _env_var_name(v: Any, where: str) -> str:
    if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
        # the value is not echoed: it may be a pasted API key
        raise ConfigError(f"{where}: expected the name of the environment variable that holds the API key "
                          f"(e.g. OPENAI_API_KEY), not the key itself")
    return v


@dataclass(frozen=True)
class GenerationConfig:
    """``generation``: which retrieval configs get answers, on which questions (``sample``: a
    seeded sample of that many questions stratified by slice, the same for every config; None
    when params say "all"), passages per prompt (``k``), the prompt template, the token budget
    and stop strings, and the phrases that mark a refusal."""

    configs: tuple[str, ...] = ()
    sample: int | None = None
    seed: int = 0
    k: int = 5
    prompt: str = "answer_escape_hatch"
    num_predict: int = 64
    stop: tuple[str, ...] = ()
    refusal_phrases: tuple[str, ...] = DEFAULT_REFUSAL_PHRASES

    @classmethod
    def from_params(cls, spec: Any, *, retrieval: Any) -> GenerationConfig:
        v = read_block(spec, "generation", {"configs": _config_list, "sample": _sample_size, "seed": integer,
                                            "k": positive_int, "prompt": text, "num_predict": positive_int,
                                            "stop": _stop_list, "refusal_phrases": text_list},
                       defaults=field_defaults(cls))
        unknown = [c for c in v["configs"] if c not in retrieval]
        if unknown:
            raise ConfigError(f"generation.configs: {', '.join(map(repr, unknown))} not a retrieval config; "
                              f"expected some of: {', '.join(retrieval)}")
        if len(set(v["configs"])) != len(v["configs"]):
            raise _fail("generation.configs", "each config once", list(v["configs"]))
        if isinstance(retrieval, Mapping):  # the answer prompt takes the top k of a stored ranking
            short = [f"{c} stores {retrieval[c].k}" for c in v["configs"] if v["k"] > retrieval[c].k]
            if short:
                raise ConfigError(f"generation.k: {v['k']} passages asked, more than the ranking stores "
                                  f"({'; '.join(short)}); expected at most the config's `k`: lower "
                                  f"generation.k or raise retrieval.<config>.k")
        return cls(**v)


def _sample_size(v: Any, where: str) -> int | None:
    if v == "all":
        return None
    if not _is_int(v) or v < 1:
        raise _fail(where, 'a positive number of questions or "all"', v)
    return int(v)


def _stop_list(v: Any, where: str) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise _fail(where, "a list of non-empty strings (possibly empty)", v)
    return tuple(v)


def _config_list(v: Any, where: str) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _fail(where, "a list of retrieval config names", v)
    return tuple(v)


JUDGE_NAMES = ("llm", "token_f1", "contains")


@dataclass(frozen=True)
class JudgeConfig:
    """``judge``: the judges run on every answer (``judges``, names from ``JUDGE_NAMES``), the
    token-F1 judge's threshold (correct when F1 >= it), the grading and pairwise prompt
    templates under ``prompts/``, the verdict's token budget, the judge's model (``llm``: a
    block with the keys of ``llm:``; None = the answer model of ``llm:``), and the bias tests:
    ``bias_sample`` graded questions (seeded by ``bias_seed``) for the length pairs and
    self-preference, and ``second_llm`` (a block like ``llm:``, or None): a second answer model
    whose answers both models judge, for self-preference. ``canary_sample``: the canaries are
    made for a seeded sample (``bias_seed``) of that many graded answerable questions; None: for
    every one. ``top_logprobs``: how many alternatives of the first reply token the LLM judge
    asks for, to score each verdict by P(CORRECT) (0: the reply's word only, no score).
    ``threshold_folds``: the folds of the hand-graded answers (seeded by ``stats.seed``) over
    which each judge's threshold is cross-fitted (``evaluation.judges.thresholds``).
    ``crossfit_seeds``: the cross-fit repeated with this many fold seeds (from ``stats.seed``),
    the reported kappa (and the combined judge's AUC) their median; ``refit_resamples``: the
    bootstrap draws of its interval, each cross-fitted from scratch (``evaluation.judges.refit``)."""

    judges: tuple[str, ...] = JUDGE_NAMES
    token_f1_threshold: float = 0.5
    prompt: str = "judge_reference"
    pairwise_prompt: str = "judge_pairwise"
    num_predict: int = 8
    llm: LlmConfig | None = None
    bias_sample: int = 20
    bias_seed: int = 0
    second_llm: LlmConfig | None = None
    canary_sample: int | None = None
    top_logprobs: int = 20
    threshold_folds: int = 5
    crossfit_seeds: int = 50
    refit_resamples: int = 200

    @classmethod
    def from_params(cls, spec: Any) -> JudgeConfig:
        def folds(v: Any, where: str) -> int:
            if not _is_int(v) or v < 2:
                raise _fail(where, "an integer >= 2 (the folds of the hand grades)", v)
            return int(v)

        def judges(v: Any, where: str) -> tuple[str, ...]:
            if not isinstance(v, list) or not v or not all(x in JUDGE_NAMES for x in v) or len(set(v)) != len(v):
                raise _fail(where, f"a non-empty list of distinct judges from {', '.join(JUDGE_NAMES)}", v)
            return tuple(v)

        v = read_block(spec, "judge", {
            "judges": judges, "token_f1_threshold": unit_number, "prompt": text, "pairwise_prompt": text,
            "num_predict": positive_int, "llm": lambda x, w: LlmConfig.from_params(x, w),
            "bias_sample": positive_int, "bias_seed": integer, "canary_sample": positive_int,
            "second_llm": lambda x, w: LlmConfig.from_params(x, w), "top_logprobs": non_negative_int,
            "threshold_folds": folds, "crossfit_seeds": positive_int, "refit_resamples": positive_int},
            defaults=field_defaults(cls))
        return cls(**v)

    def judge_llm(self, answer_llm: LlmConfig) -> LlmConfig:
        """The judge's model: ``llm`` when set, else the answer model."""
        return self.llm or answer_llm


@dataclass(frozen=True)
class SupportConfig:
    """``support``: the answer model's probability that an answer is supported by the passages
    its prompt showed (``support@CONFIG``, ``evaluation.judges.support``). ``ask_llm``: False
    leaves the answer model unasked (the stage writes ``unavailable`` with the reason; lexical
    support is still calibrated in judge_eval), saving about five minutes per answered config
    of a cold run with SmolLM2 on 2 cores. ``prompt``: the
    template under ``prompts/`` ({question}, {passages}, {answer}; reply SUPPORTED or
    UNSUPPORTED). ``canaries``: the canary answers (an unrelated passage's sentences, a shown
    passage's sentences) are made for a seeded selection (``seed``) of up to this many answers
    per config, two each; 0: none. ``top_logprobs``: the alternatives of the first reply token
    the score P(SUPPORTED) is read from (0: the reply's word only, no score). ``num_predict``:
    tokens for the reply (SmolLM2 spells UNSUPPORTED in 5 tokens, SUPPORTED in 4; the score reads
    the first token only, the verdict needs the whole word)."""

    ask_llm: bool = True
    prompt: str = "support"
    canaries: int = 20
    seed: int = 0
    top_logprobs: int = 20
    num_predict: int = 6

    @classmethod
    def from_params(cls, spec: Any) -> SupportConfig:
        return cls(**read_block(spec, "support", {
            "ask_llm": boolean, "prompt": text, "canaries": non_negative_int, "seed": integer,
            "top_logprobs": non_negative_int,
            "num_predict": positive_int}, defaults=field_defaults(cls)))


INTERVAL_METHODS = ("bca", "percentile")
BINARY_MEASURES = ("hit_at_1", "hit_at_5", "hit_at_10")
"""The 0/1 per-question columns: compared with the exact sign test on fixed and broken questions."""
CONTINUOUS_MEASURES = ("rr_at_10", "ndcg_at_10", "recall_at_100")
"""The continuous per-question columns (RR@10 of every data set; nDCG@10 and recall@100 of a data
set with graded qrels): compared with the paired sign-flip test, better / worse by more than
``stats.margin``."""
AUTO_MEASURE = "auto"
"""The measure meaning "the data set's own": ``ndcg_at_10`` where the scores carry it (graded
qrels), else ``hit_at_5`` (``rag_ablation.evaluation.statistics.comparison.resolve_measure``)."""
PAIRED_MEASURES = (*BINARY_MEASURES, *CONTINUOUS_MEASURES)
"""Every per-question column of ``metrics/scores/retrieval.csv`` a verdict can be given on."""
MEASURE_CHOICES = (AUTO_MEASURE, *PAIRED_MEASURES)
"""What ``stats.measure``, ``gate.measure`` and every ``--measure`` accept."""
ANSWER_COLUMNS = ("contains_reference", "token_f1", "llm_score", "combined_score")
"""The per-answer columns (``rag_ablation.evaluation.statistics.comparison.ANSWER_MEASURES``):
``--measure`` of ``diff``, ``sweep-report`` and ``check`` takes them; ``stats.measure`` and
``gate.measure`` do not (:func:`retrieval_measure` says where they are compared instead)."""


def retrieval_measure(v: Any, where: str) -> str:
    """``stats.measure`` / ``gate.measure``: one of :data:`MEASURE_CHOICES`. An answer column is
    refused with where answers are compared: judge_eval between the answered configs, and the
    commands across revisions, experiments and in the gate."""
    if v in ANSWER_COLUMNS:
        raise ConfigError(
            f"{where}: expected one of {', '.join(MEASURE_CHOICES)} (a retrieval column), got {v!r}, an answer "
            "measure: the answered configs are compared on token F1 and the primary judge's score by judge_eval "
            "(the report's \"Answer configs compared on every answer\"); across revisions with "
            f"`rag-ablation diff REV --measure {v}`, across experiments with `rag-ablation sweep-report --measure "
            f"{v}`, and gated with `rag-ablation check --against main --measure {v}`")
    return one_of(*MEASURE_CHOICES)(v, where)


@dataclass(frozen=True)
class StatsConfig:
    """``stats``: intervals and paired tests over per-question scores. ``baseline`` is the
    retrieval config every other is compared with; ``measure`` the per-question column the
    verdicts use (any of :data:`PAIRED_MEASURES`, or ``auto``: nDCG@10 on a data set with graded
    qrels, else hit@5; RR@10 is always compared too): a 0/1 column counts fixed and broken
    questions with the exact sign test, a continuous one counts questions better or worse by
    more than ``margin`` with the paired sign-flip test; ``method`` the bootstrap
    interval (percentile or BCa) with ``resamples`` draws from ``seed`` at ``confidence``;
    ``cluster`` resamples source documents instead of questions; ``baseline`` defaults to
    ``dense``, or to the first config of ``run_configs`` when dense does not run (a baseline
    named that does not run is refused); a slice with fewer than
    ``min_slice`` questions is reported as too small to decide on; ``subsample_sizes`` (None
    for "all") and ``subsample_draws`` drive the subsampling table; ``ppi_splits`` seeded splits
    of the hand grades check PPI++ against grades it did not see
    (``rag_ablation.evaluation.judges.ppi_check``)."""

    baseline: str = "dense"
    measure: str = AUTO_MEASURE
    margin: float = 0.01
    method: str = "percentile"
    cluster: bool = False
    resamples: int = 10_000
    seed: int = 0
    confidence: float = 0.95
    min_slice: int = 20
    subsample_sizes: tuple[int | None, ...] = (20, 40, 60, 100, None)
    subsample_draws: int = 1000
    ppi_splits: int = 200

    @classmethod
    def from_params(cls, spec: Any, *, retrieval: Any, selected: Any = None) -> StatsConfig:
        selected = tuple(retrieval if selected is None else selected)
        defaults = field_defaults(cls)
        if defaults["baseline"] not in selected:  # the default baseline, else the first config that runs
            defaults["baseline"] = selected[0]
        v = read_block(spec, "stats", {
            "baseline": one_of(*retrieval), "measure": retrieval_measure,
            "margin": unit_number, "method": one_of(*INTERVAL_METHODS), "cluster": boolean,
            "resamples": positive_int, "seed": integer,
            "confidence": _open_unit, "min_slice": positive_int, "subsample_sizes": _sizes,
            "subsample_draws": positive_int, "ppi_splits": positive_int}, defaults=defaults)
        _check_selected((v["baseline"],), selected, "stats.baseline")
        return cls(**v)


def _open_unit(v: Any, where: str) -> float:
    if not _is_number(v) or not 0 < v < 1:
        raise _fail(where, "a number between 0 and 1 (exclusive)", v)
    return float(v)


def _sizes(v: Any, where: str) -> tuple[int | None, ...]:
    if not isinstance(v, list) or not v:
        raise _fail(where, 'a non-empty list of question counts or "all"', v)
    return tuple(_sample_size(x, f"{where}[{i}]") for i, x in enumerate(v))


GATE_KS = (1, 5, 10)
"""The k of recall@k the gate can check: the ``hit_at_k`` columns of the per-question scores."""


@dataclass(frozen=True)
class GateConfig:
    """``gate``: the retrieval regression gate (``rag-ablation check``, stage ``gate``).

    ``configs``: the retrieval configs gated (default: those of ``generation.configs`` in
    ``run_configs``, the pipelines in use, else the first config that runs). A config named here
    that ``run_configs`` leaves out is not refused: the ``gate`` stage records "not compared"
    with the reason, as for any config without scores. Per config and per slice of answerable questions
    (and ``all``), recall@``k`` (k in 1, 5, 10) against the accepted baseline must stay at or
    above ``floor`` (one number for every slice, or a mapping slice -> number where only the
    named slices have one; null: no floor), at most ``max_newly_failing`` questions may go from
    hit to miss, and with ``non_inferiority_margin`` set the upper end of the paired interval of
    the change must not lie below ``-margin``. A slice with fewer than ``min_questions``
    questions is reported too small and not gated.

    ``measure`` (``auto`` by default) names the per-question column gated instead of
    recall@``k``: ``auto`` is nDCG@10 on a data set with graded qrels, else ``hit_at_<k>``; any
    column of ``PAIRED_MEASURES`` may be named. For a continuous column the floor applies to its
    mean and a question is newly failing when it dropped by more than ``stats.margin``."""

    configs: tuple[str, ...] = ()
    measure: str = AUTO_MEASURE
    k: int = 5
    floor: float | Mapping[str, float] | None = None
    max_newly_failing: int = 1
    non_inferiority_margin: float | None = None
    min_questions: int = 20

    def floor_for(self, slice_name: str) -> float | None:
        """The floor of ``slice_name`` (``all`` for every answerable question), or None."""
        if self.floor is None or isinstance(self.floor, float):
            return self.floor
        return self.floor.get(slice_name)

    @classmethod
    def from_params(cls, spec: Any, *, retrieval: Any, answered: Any = (), selected: Any = None) -> GateConfig:
        selected = tuple(retrieval if selected is None else selected)
        defaults = field_defaults(cls)
        defaults["configs"] = tuple(c for c in answered if c in selected) or selected[:1]
        v = read_block(spec, "gate", {
            "configs": _config_names(retrieval, "a non-empty list of retrieval config names"),
            "measure": retrieval_measure, "k": _gate_k, "floor": _floor,
            "max_newly_failing": non_negative_int, "non_inferiority_margin": unit_number,
            "min_questions": positive_int}, defaults=defaults)
        return cls(**v)


def _config_names(retrieval: Any, expected: str) -> Check:
    """A check of a non-empty list of names of ``retrieval``, each once (``expected`` says what
    else was expected when the value is not such a list)."""
    def check(v: Any, where: str) -> tuple[str, ...]:
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            raise _fail(where, expected, v)
        unknown = [c for c in v if c not in retrieval]
        if unknown:
            raise ConfigError(f"{where}: {', '.join(map(repr, unknown))} not a retrieval config; "
                              f"expected some of: {', '.join(retrieval)}")
        if len(set(v)) != len(v):
            raise _fail(where, "each config once", v)
        return tuple(v)

    return check


def _gate_k(v: Any, where: str) -> int:
    if not _is_int(v) or v not in GATE_KS:
        raise _fail(where, f"one of {', '.join(map(str, GATE_KS))}", v)
    return int(v)


_FLOOR = "a number from 0 to 1, or a mapping of slice names (or all) to such numbers"


def _floor(v: Any, where: str) -> float | dict[str, float]:
    if isinstance(v, Mapping):
        if not v or not all(isinstance(k, str) and k for k in v):
            raise _fail(where, _FLOOR, v)
        return {k: unit_number(x, f"{where}.{k}") for k, x in sorted(v.items())}
    if not _is_number(v) or not 0 <= v <= 1:
        raise _fail(where, _FLOOR, v)
    return float(v)


RUN_ALL = "all"
"""The value of ``run_configs`` that searches with every retrieval config, optional ones too."""
RUN_DEFAULT = "default"
"""The value of ``run_configs`` that searches with every retrieval config not marked
``optional: true`` (the default)."""
OPTIONAL_KEY = "optional"
"""The key of a ``retrieval.NAME`` block that leaves the config out of the default run."""


def run_configs_of(spec: Any, retrieval: Mapping[str, Any], optional: Iterable[str] = ()) -> tuple[str, ...]:
    """``run_configs``: the retrieval configs this run searches with, in ``retrieval``'s order.
    ``default`` (or the key left out, or null) is every config but those of ``optional`` (marked
    ``optional: true``); ``all`` is every config; a list names some, each once, optional or not.
    A config left out writes an unavailable ranking with the reason (stage ``retrieve@NAME``),
    needs no index (stage ``index_plan``) and no query transform of its own, so a first run (or
    a data set of short passages) pays only for what it compares."""
    if spec is None or spec == RUN_DEFAULT:
        skipped = set(optional)
        selected = tuple(c for c in retrieval if c not in skipped)
        if not selected:
            raise ConfigError(f"run_configs: default runs every retrieval config not marked optional: true, and all "
                              f"{len(retrieval)} are marked; set run_configs: {RUN_ALL} (or list the configs to run), "
                              f"or remove optional from one")
        return selected
    if spec == RUN_ALL:
        return tuple(retrieval)
    names = _config_names(retrieval, f"{RUN_DEFAULT}, {RUN_ALL} or a non-empty list of retrieval config names "
                                     "such as [dense, bm25, hybrid]")(spec, "run_configs")
    return tuple(c for c in retrieval if c in names)


def optional_configs(raw_retrieval: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Split ``optional`` off the ``retrieval`` blocks: the blocks without the key (what
    :meth:`RetrievalConfig.from_params` reads, so a run file never records it) and the names of
    the configs marked ``optional: true``. A value other than true or false is refused."""
    blocks, optional = {}, []
    for name, spec in raw_retrieval.items():
        if isinstance(spec, Mapping) and OPTIONAL_KEY in spec:
            flag = spec[OPTIONAL_KEY]
            if not isinstance(flag, bool):
                raise _fail(f"retrieval.{name}.{OPTIONAL_KEY}", "true (left out unless run_configs names it or is "
                            f"{RUN_ALL}) or false", flag)
            if flag:
                optional.append(name)
            spec = {k: v for k, v in spec.items() if k != OPTIONAL_KEY}
        blocks[name] = spec
    return blocks, tuple(optional)


def _check_selected(names: tuple[str, ...], selected: tuple[str, ...], where: str) -> None:
    """Raise when a config ``where`` names explicitly is not searched in this run."""
    left_out = [c for c in names if c not in selected]
    if left_out:
        raise ConfigError(f"{where}: {', '.join(map(repr, left_out))} not in run_configs "
                          f"({', '.join(selected)}); add it to run_configs, or name a config that runs")


FIRST_RUN_CONFIGS = ("dense", "bm25", "hybrid")
"""The configs the command printed after a BEIR import runs (``run_configs``), when params.yaml has them."""
GRADED_DEPTH = 100
"""The ranking length (``retrieval.NAME.k``) that command gives them: BEIR's recall@100 needs 100."""


NO_SPLIT = "none"
"""The value of ``split`` that turns the dev/test split off (the YAML string, as in ``query: none``)."""


@dataclass(frozen=True)
class SplitConfig:
    """``split``: the seeded dev/test split of the question set (``rag_ablation.data.split``,
    stage ``split``). A sweep picks its winner on the dev questions and confirms it on the test
    questions; the per-config report and the gate still use every question.

    ``split: none`` (the string ``NO_SPLIT``) turns it off: ``enabled`` is false and the stage
    writes side ``all`` for every question. A block (or the key left out, or null: the defaults)
    turns it on. ``test_fraction``: the share of questions a new document group is steered
    towards on the test side, strictly between 0 and 1; ``seed``: the seed of the order in which
    new groups are assigned. ``enabled`` is not a key of the block: only ``split: none`` sets it."""

    test_fraction: float = 0.5
    seed: int = 0
    enabled: bool = True

    @classmethod
    def from_params(cls, spec: Any) -> SplitConfig:
        if spec == NO_SPLIT:
            return cls(enabled=False)
        if spec is not None and not isinstance(spec, Mapping):
            raise ConfigError(f"split: expected a block such as {{test_fraction: 0.5, seed: 0}} or {NO_SPLIT} "
                              f"(no split), got {spec!r}; write the block, or split: {NO_SPLIT} to turn it off")
        return cls(**read_block(spec, "split", {"test_fraction": _test_fraction, "seed": integer},
                                defaults=field_defaults(cls)))


def _test_fraction(v: Any, where: str) -> float:
    if not _is_number(v) or not 0 < v < 1:
        raise ConfigError(f"{where}: expected a share of the questions strictly between 0 and 1, got {v!r}; "
                          f"set it to e.g. 0.5 (half on test), or set split: {NO_SPLIT} for no split")
    return float(v)


ON_PROBLEM = ("stop", "skip")
"""``documents.on_problem``: a file that cannot be read stops the run, or is skipped (listed)."""


@dataclass(frozen=True)
class DocumentsConfig:
    """``documents``: how the ``dataset`` stage reads a corpus folder
    (``rag_ablation.datasets.sources``). ``exclude``: globs of files left out (``*.png``,
    ``_build/*``), each counted and listed. ``on_problem``: ``stop`` (one message lists every file
    that cannot be read: unsupported suffix, encrypted or damaged, no text layer, empty) or
    ``skip`` (run without them; the stage's output and the report list each). ``workers``:
    processes converting files that are not in the conversion cache."""

    exclude: tuple[str, ...] = ()
    on_problem: str = "stop"
    workers: int = 2

    @classmethod
    def from_params(cls, spec: Any) -> DocumentsConfig:
        return cls(**read_block(spec, "documents", {"exclude": text_list, "on_problem": one_of(*ON_PROBLEM),
                                                    "workers": positive_int},
                                defaults=field_defaults(cls)))


@dataclass(frozen=True)
class WorkbenchConfig:
    """``workbench``: ``rag-ablation label``, the local web workbench for writing and labelling
    questions (``rag_ablation.authoring.workbench``).

    Write mode samples passages as the chapter does (``rag_ablation.data.passages``):
    ``per_track`` passages per track in the order seeded by ``seed``. ``overlap_warn``: a
    question whose content-word overlap with its passage (the statistic the questions stage
    reports) is above this share is warned about (it favours BM25). Audit mode shows, for each
    question a config missed at ``audit_k``, its top ``audit_k`` passages. Label-queries mode
    pools the top ``pool_depth`` passages of each of ``pool_configs`` (retrieval configs
    searching with the question as written; empty: the mode asks for them). ``max_body_bytes``:
    the largest request body the web server accepts (a larger one is refused with 413 before it
    is read whole; a queries file loaded on the page is one request)."""

    seed: int = 8
    per_track: int = 15
    overlap_warn: float = 0.6
    audit_k: int = 5
    pool_depth: int = 10
    pool_configs: tuple[str, ...] = ()
    max_body_bytes: int = 1_000_000

    def pool_problems(self, retrieval: Mapping[str, RetrievalConfig]) -> str | None:
        """Why ``pool_configs`` cannot be pooled against ``retrieval`` (one message), or None."""
        where = "workbench.pool_configs"
        unknown = [c for c in self.pool_configs if c not in retrieval]
        if unknown:
            return (f"{where}: {', '.join(map(repr, unknown))} not a retrieval config; "
                    f"expected some of: {', '.join(retrieval)}")
        apps = [c for c in self.pool_configs if retrieval[c].chunking is None]
        if apps:
            return (f"{where}: {', '.join(map(repr, apps))} an app of apps:; expected built-in configs (pooling "
                    f"searches the project's own indexes live)")
        transformed = [c for c in self.pool_configs if retrieval[c].query != NO_TRANSFORM]
        if transformed:
            return (f"{where}: {', '.join(map(repr, transformed))} search with an LLM query transform; expected "
                    f"configs whose query is {NO_TRANSFORM} (pooling searches live, without the LLM)")
        return None

    @classmethod
    def from_params(cls, spec: Any) -> WorkbenchConfig:
        # Only the shape is checked here: every stage loads params.yaml, and no stage reads this
        # block, so a config removed from `retrieval` must not stop the pipeline. The names are
        # checked when the workbench pools (``pool_problems``).
        def pool(v: Any, where: str) -> tuple[str, ...]:
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise _fail(where, "a list of retrieval config names", v)
            if len(set(v)) != len(v):
                raise _fail(where, "each config once", v)
            return tuple(v)

        return cls(**read_block(spec, "workbench", {
            "seed": integer, "per_track": positive_int, "overlap_warn": unit_number, "audit_k": positive_int,
            "pool_depth": positive_int, "pool_configs": pool, "max_body_bytes": positive_int},
            defaults=field_defaults(cls)))


@dataclass(frozen=True)
class Params:
    """The whole of params.yaml, checked. ``dataset`` names what the pipeline runs on
    (``rag_ablation.datasets.registry``: handbook, the default, covidqa, or an imported set
    under :data:`IMPORTED_DIR`); ``run_configs`` the retrieval configs this run searches with
    (:func:`run_configs_of`: every one not marked ``optional: true`` unless params name some);
    ``optional_configs`` those marked ``optional: true``."""

    chunk_size: int
    chunk_overlap: int
    labels: LabelsConfig
    embedding: EmbeddingConfig
    bm25: Bm25Config
    faiss: FaissConfig
    chunkings: Mapping[str, ChunkingConfig]
    retrieval: Mapping[str, RetrievalConfig]
    query_transforms: Mapping[str, QueryTransformConfig]
    llm: LlmConfig
    generation: GenerationConfig
    stats: StatsConfig
    judge: JudgeConfig
    gate: GateConfig
    split: SplitConfig = field(default_factory=SplitConfig)
    dataset: str = "handbook"
    workbench: WorkbenchConfig = field(default_factory=WorkbenchConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    documents: DocumentsConfig = field(default_factory=DocumentsConfig)
    support: SupportConfig = field(default_factory=SupportConfig)
    run_configs: tuple[str, ...] = ()
    optional_configs: tuple[str, ...] = ()

    BLOCKS = ("dataset", "documents", "chunk_size", "chunk_overlap", "labels", "embedding", "bm25", "faiss", "chunkings",
              "retrieval", "apps", "run_configs", "query_transforms", "llm", "generation", "stats", "judge", "support", "gate",
              "split", "workbench", "ray")

    @classmethod
    def from_params(cls, raw: Mapping[str, Any]) -> Params:
        unknown = sorted(set(raw) - set(cls.BLOCKS))
        if unknown:
            raise ConfigError(f"params.yaml: unknown top-level key(s) {', '.join(map(str, unknown))}; "
                              f"expected some of {', '.join(cls.BLOCKS)}")
        top = read_block({k: raw.get(k) for k in ("dataset", "chunk_size", "chunk_overlap")}, "params.yaml",
                         {"dataset": dataset_name, "chunk_size": positive_int, "chunk_overlap": non_negative_int},
                         defaults=field_defaults(cls))
        chunkings = {n: ChunkingConfig.from_params(n, s, base_size=top["chunk_size"], base_overlap=top["chunk_overlap"])
                     for n, s in _named(raw.get("chunkings"), "chunkings").items()}
        if not chunkings:
            raise ConfigError("chunkings: missing or empty; name at least one chunking")
        transforms_raw = raw.get("query_transforms")
        if transforms_raw is None:  # the default block: the question as written
            transforms_raw = {NO_TRANSFORM: {"kind": NO_TRANSFORM}}
        transforms = {n: QueryTransformConfig.from_params(n, s)
                      for n, s in _named(transforms_raw, "query_transforms").items()}
        retrieval_raw, optional = optional_configs(_named(raw.get("retrieval"), "retrieval"))
        retrieval = {n: RetrievalConfig.from_params(n, s, chunkings=tuple(chunkings), transforms=tuple(transforms))
                     for n, s in retrieval_raw.items()}
        if not retrieval:
            raise ConfigError("retrieval: missing or empty; name at least one retrieval config")
        apps = {n: AppConfig.from_params(n, s) for n, s in _named(raw.get("apps"), "apps").items()}
        clash = sorted(set(apps) & set(retrieval))
        if clash:
            raise ConfigError(f"apps: {', '.join(map(repr, clash))} also named under retrieval; an app's name must "
                              f"differ from every retrieval config's (both write runs/NAME.json)")
        retrieval.update({n: RetrievalConfig.of_app(n, a) for n, a in apps.items()})
        selected = run_configs_of(raw.get("run_configs"), retrieval, optional)
        return cls(
            labels=LabelsConfig.from_params(raw.get("labels")),
            embedding=EmbeddingConfig.from_params(raw.get("embedding")),
            bm25=Bm25Config.from_params(raw.get("bm25")),
            faiss=FaissConfig.from_params(raw.get("faiss")),
            chunkings=chunkings, retrieval=retrieval, query_transforms=transforms,
            llm=LlmConfig.from_params(raw.get("llm")),
            generation=GenerationConfig.from_params(raw.get("generation"), retrieval=retrieval),
            stats=StatsConfig.from_params(raw.get("stats"), retrieval=tuple(retrieval), selected=selected),
            judge=JudgeConfig.from_params(raw.get("judge")),
            support=SupportConfig.from_params(raw.get("support")),
            gate=GateConfig.from_params(raw.get("gate"), retrieval=tuple(retrieval), selected=selected,
                                        answered=_mapping(raw.get("generation"), "generation").get("configs") or ()),
            run_configs=selected,
            optional_configs=optional,
            split=SplitConfig.from_params(raw.get("split")),
            workbench=WorkbenchConfig.from_params(raw.get("workbench")),
            ray=RayConfig.from_params(raw.get("ray")),
            documents=DocumentsConfig.from_params(raw.get("documents")),
            **top,
        )

    def chunking(self, name: str) -> ChunkingConfig:
        return _get(self.chunkings, name, "chunkings")

    def config(self, name: str) -> RetrievalConfig:
        return _get(self.retrieval, name, "retrieval")

    def searched(self) -> dict[str, RetrievalConfig]:
        """The retrieval configs of ``run_configs`` (every non-optional one by default), by name."""
        return {n: c for n, c in self.retrieval.items() if n in self.run_configs}

    def not_searched(self) -> list[str]:
        """The retrieval configs ``run_configs`` leaves out, in params order (the reports name them
        in one line)."""
        return [n for n in self.retrieval if n not in self.run_configs]

    def left_out(self, name: str) -> str | None:
        """Why retrieval config ``name`` does not run (one line), or None when it runs."""
        if name in self.run_configs:
            return None
        if name in self.optional_configs and self.run_configs == run_configs_of(RUN_DEFAULT, self.retrieval,
                                                                                   self.optional_configs):
            return (f"config {name!r} is optional (optional: true in params.yaml), so the default run leaves it out; "
                    f"run it with every other config: dvc exp run -S run_configs={RUN_ALL}")
        return (f"config {name!r} is not in run_configs ({', '.join(self.run_configs)}), so it does not run; add it "
                f"to run_configs or run every config: dvc exp run -S run_configs={RUN_ALL}")

    def transform(self, name: str) -> QueryTransformConfig:
        return _get(self.query_transforms, name, "query_transforms")


def _get(section: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in section:
        raise ConfigError(f"{where}: no entry named {name!r}; expected one of: {', '.join(section)}")
    return section[name]
