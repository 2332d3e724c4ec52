"""The config module: one checked dataclass per params block. For every block a wrong type, an
unknown key and a missing required key each give one message naming the key path; a stage exits
2 with that one line; a genuine bug keeps its traceback."""
from __future__ import annotations

import copy
import re
import subprocess
import sys

import pytest
import yaml

from conftest import FIXTURES, ROOT, pipeline_stages

from rag_ablation.core import config
from rag_ablation.core.config import ConfigError, Params, load_params

BASE = yaml.safe_load((ROOT / "params.yaml").read_text())
# the shipped params leave rerank configs out (no cross-encoder installs offline): the example of
# params.yaml's comment, added here so the rerank block is checked like the others
BASE["retrieval"]["dense_rerank"] = {"chunking": "base", "method": "dense",
                                     "rerank": {"model": "cross-encoder/ms-marco-MiniLM-L-6-v2"}, "query": "none"}


def with_change(path: str, value, *, delete: bool = False) -> dict:
    """A copy of the shipped params with ``path`` (dotted) set to ``value`` or deleted."""
    p = copy.deepcopy(BASE)
    node = p
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    if delete:
        del node[parts[-1]]
    else:
        node[parts[-1]] = value
    return p


def error_of(raw: dict) -> str:
    with pytest.raises(ConfigError) as e:
        Params.from_params(raw)
    return str(e.value)


def test_shipped_params_read_with_defaults_filled():
    p = Params.from_params(BASE)
    assert p.chunking("base").size == BASE["chunk_size"] and p.chunking("base").overlap == BASE["chunk_overlap"]
    assert p.chunking("c400").size == 400 and p.chunking("sentences").method == "sentences"
    hybrid = p.config("hybrid")
    assert hybrid.fusion == "rrf" and hybrid.rrf_k == 60.0 and hybrid.rerank is None
    assert p.config("dense").fusion is None and p.config("dense").rrf_k is None, "no fusion keys on a dense config"
    assert p.config("dense_rerank").rerank.depth == 20
    assert p.generation.configs == tuple(BASE["generation"]["configs"])
    assert p.transform("rewrite").prompt == "rewrite" and p.transform("none").prompt is None
    assert p.generation.sample == 80 and p.generation.stop == ()  # the hand-graded sample
    assert Params.from_params(with_change("generation.sample", 80)).generation.sample == 80
    Params.from_params(yaml.safe_load((FIXTURES / "params.yaml").read_text()))


def test_fixed_chunking_takes_the_base_overlap_and_refuses_sentence_overlap():
    p = Params.from_params(with_change("chunkings.f", {"method": "fixed", "size": None, "overlap": None}))
    assert (p.chunking("f").method, p.chunking("f").size, p.chunking("f").overlap) == (
        "fixed", BASE["chunk_size"], BASE["chunk_overlap"])
    assert "chunkings.f.overlap_sentences: does not apply here" in error_of(
        with_change("chunkings.f", {"method": "fixed", "overlap_sentences": 1}))


@pytest.mark.bad_input
def test_dataset_is_a_registered_name():
    assert Params.from_params(BASE).dataset == "handbook"
    assert Params.from_params(with_change("dataset", "covidqa")).dataset == "covidqa"
    message = error_of(with_change("dataset", "squad"))
    assert "params.yaml.dataset: expected one of covidqa, handbook or the name of an imported data set" in message
    assert "got 'squad'; import one with `rag-ablation import squad FILE --corpus data/imported/NAME/corpus" in message


def test_absent_blocks_take_their_defaults():
    raw = {k: BASE[k] for k in ("chunk_size", "chunk_overlap", "chunkings")}
    raw["retrieval"] = {"dense": {"chunking": "base", "method": "dense"}}
    p = Params.from_params(raw)
    assert p.labels == config.LabelsConfig() and p.bm25 == config.Bm25Config() and p.llm == config.LlmConfig()
    assert p.faiss == config.FaissConfig() and p.faiss.index == "flat"
    assert p.config("dense").k == 10 and p.config("dense").depth == 100 and p.config("dense").query == "none"
    assert p.generation.configs == ()


# (block, wrong type, unknown key, missing required key): each a (path, value or DELETE, message)
DELETE = object()
CASES = [
    ("top level", ("chunk_size", "800", "params.yaml.chunk_size: expected a positive integer, got '800'"),
     ("chunk_sise", 800, "params.yaml: unknown top-level key(s) chunk_sise"),
     ("chunk_size", DELETE, "params.yaml.chunk_size: missing")),
    ("chunkings", ("chunkings.c400.size", -1, "chunkings.c400.size: expected a positive integer, got -1"),
     ("chunkings.c400.sise", 400, "chunkings.c400: unknown key(s) sise"),
     ("chunkings", DELETE, "chunkings: missing or empty")),
    ("labels", ("labels.window", "thirty", "labels.window: expected a positive integer, got 'thirty'"),
     ("labels.windw", 30, "labels: unknown key(s) windw"), None),
    ("embedding", ("embedding.threads", 0, "embedding.threads: expected a positive integer, got 0"),
     ("embedding.device", "cuda", "embedding: unknown key(s) device"), None),
    ("bm25", ("bm25.tokenizer", "words", "bm25.tokenizer: expected one of regex, whitespace, got 'words'"),
     ("bm25.k3", 1, "bm25: unknown key(s) k3"), None),
    ("faiss", ("faiss.nprobe", "16", "faiss.nprobe: expected a positive integer, got '16'"),
     ("faiss.ef", 64, "faiss: unknown key(s) ef"), None),
    ("retrieval", ("retrieval.hybrid.rrf_k", -1, "retrieval.hybrid.rrf_k: expected a positive number, got -1"),
     ("retrieval.hybrid.topk", 5, "retrieval.hybrid: unknown key(s) topk"),
     ("retrieval.hybrid.method", DELETE, "retrieval.hybrid.method: missing")),
    ("rerank", ("retrieval.dense_rerank.rerank.depth", "20", "retrieval.dense_rerank.rerank.depth: expected a positive integer"),
     ("retrieval.dense_rerank.rerank.batch", 8, "retrieval.dense_rerank.rerank: unknown key(s) batch"),
     ("retrieval.dense_rerank.rerank.model", DELETE, "retrieval.dense_rerank.rerank.model: missing")),
    ("query_transforms", ("query_transforms.rewrite.num_predict", 1.5,
                          "query_transforms.rewrite.num_predict: expected a positive integer, got 1.5"),
     ("query_transforms.rewrite.temperature", 0, "query_transforms.rewrite: unknown key(s) temperature"),
     ("query_transforms.rewrite.prompt", DELETE, "query_transforms.rewrite.prompt: missing")),
    ("llm", ("llm.temperature", "hot", "llm.temperature: expected a number >= 0, got 'hot'"),
     ("llm.top_p", 0.9, "llm: unknown key(s) top_p"), None),
    ("generation", ("generation.k", [5], "generation.k: expected a positive integer, got [5]"),
     ("generation.top_k", 5, "generation: unknown key(s) top_k"), None),
]


@pytest.mark.bad_input
@pytest.mark.parametrize("block,wrong,unknown,missing", CASES, ids=[c[0] for c in CASES])
def test_each_block_names_the_key_path(block, wrong, unknown, missing):
    for case in (wrong, unknown, missing):
        if case is None:
            continue
        path, value, message = case
        raw = with_change(path, None, delete=True) if value is DELETE else with_change(path, value)
        msg = error_of(raw)
        assert message in msg, msg
        assert "\n" not in msg, "one message, one line"


@pytest.mark.bad_input
def test_required_llm_model_for_ollama():
    raw = with_change("llm.backend", "ollama")
    assert "llm.model: missing" in error_of(raw)


@pytest.mark.bad_input
@pytest.mark.parametrize("path,value,message", [
    ("retrieval.dense.rrf_k", 60, "retrieval.dense.rrf_k: does not apply here; remove it (method dense)"),
    ("retrieval.bm25.fusion", "rrf", "retrieval.bm25.fusion: does not apply here; remove it (method bm25)"),
    ("retrieval.hybrid_append.rrf_k", 60, "retrieval.hybrid_append.rrf_k: does not apply here; remove it "
                                          "(method hybrid, fusion append)"),
    ("chunkings.sentences.overlap", 100, "chunkings.sentences.overlap: does not apply here"),
    ("query_transforms.none.prompt", "rewrite", "query_transforms.none.prompt: does not apply here"),
    ("llm.host", "http://127.0.0.1:1", "llm.host: does not apply here"),
])
def test_keys_that_do_not_apply_are_errors(path, value, message):
    assert message in error_of(with_change(path, value))


@pytest.mark.bad_input
@pytest.mark.parametrize("path,value,message", [
    ("retrieval.dense.chunking", "nope", "retrieval.dense.chunking: expected one of base, c400"),
    ("retrieval.dense.query", "hide", "retrieval.dense.query: expected one of none, rewrite, hyde, got 'hide'"),
    ("retrieval.dense.k", 5, "retrieval.dense.k: expected at least 10"),
    ("retrieval.dense.depth", 5, "retrieval.dense.depth: expected at least k (10), got 5"),
    ("chunkings.c400.overlap", 400, "chunkings.c400.overlap: expected fewer characters than the size (400)"),
    ("bm25.impl", "bm25s", "bm25.epsilon: expected 0 with impl bm25s"),
    ("bm25.mmap", True, "bm25.mmap: true needs impl bm25s (only bm25s stores a score matrix to map), got impl rank_bm25"),
    ("bm25.mmap", "yes", "bm25.mmap: expected true or false"),
    ("generation.configs", ["dense", "splade"], "generation.configs: 'splade' not a retrieval config"),
    ("retrieval.dense.weights", {"dense": 1}, "retrieval.dense.weights: does not apply here"),
    ("generation.sample", 0, 'generation.sample: expected a positive number of questions or "all", got 0'),
    ("generation.stop", "\n", "generation.stop: expected a list of non-empty strings"),
])
def test_cross_references_and_ranges(path, value, message):
    assert message in error_of(with_change(path, value))


@pytest.mark.bad_input
def test_config_names_must_suit_dvc():
    raw = with_change("retrieval.hybrid+rrf", {"chunking": "base", "method": "dense"})
    assert "retrieval: name(s) 'hybrid+rrf'" in error_of(raw)


@pytest.mark.bad_input
@pytest.mark.parametrize("key", ["stats.measure", "gate.measure"])
def test_an_answer_measure_for_the_stages_says_where_answers_are_compared(key):
    message = error_of(with_change(key, "token_f1"))
    assert message.startswith(f"{key}: expected one of auto, hit_at_1, hit_at_5, hit_at_10, rr_at_10, ndcg_at_10, "
                              "recall_at_100 (a retrieval column), got 'token_f1', an answer measure: ")
    assert "`rag-ablation diff REV --measure token_f1`" in message
    assert "`rag-ablation check --against main --measure token_f1`" in message
    assert "expected one of auto" in error_of(with_change(key, "f1"))  # any other name: the plain choice


@pytest.mark.bad_input
def test_yaml_syntax_error_names_line_and_column(tmp_path):
    (tmp_path / "params.yaml").write_text("chunk_size: 800\nlabels:\n  window: [30\n")
    with pytest.raises(ConfigError, match=r"is not valid YAML at line \d+, column \d+"):
        load_params(tmp_path / "params.yaml")


def test_name_tuples_match_the_registries():
    """config checks names early; the registries dispatch them: the two must agree."""
    from rag_ablation.datasets.registry import DATASETS
    from rag_ablation.llm.client.registry import BACKENDS
    from rag_ablation.llm.transforms import TRANSFORMS
    from rag_ablation.retrieval.bm25 import IMPLEMENTATIONS
    from rag_ablation.retrieval.chunking import CHUNKERS
    from rag_ablation.retrieval.faiss_index import BUILDERS
    from rag_ablation.retrieval.fusion import FUSIONS
    from rag_ablation.data.text import TOKENIZERS

    assert set(config.CHUNKING_METHODS) == set(CHUNKERS)
    assert set(config.DATASETS) == set(DATASETS)
    assert set(config.FUSIONS) == set(FUSIONS)
    assert set(config.TOKENIZERS) == set(TOKENIZERS)
    assert set(config.BM25_IMPLS) == set(IMPLEMENTATIONS)
    assert set(config.FAISS_INDEXES) == set(BUILDERS)
    assert set(config.TRANSFORM_KINDS) == set(TRANSFORMS)
    from rag_ablation.evaluation.statistics.comparison import ANSWER_MEASURES, JUDGE_SCORES
    assert set(JUDGE_SCORES) <= set(ANSWER_MEASURES) == set(config.ANSWER_COLUMNS)
    assert set(config.LLM_BACKENDS) - {config.NO_LLM} == set(BACKENDS)


def run_stage(tmp_path, params: dict, *args):
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return subprocess.run([sys.executable, str(ROOT / "stages" / "chunk.py"), "--name", "base", "--corpus",
                           str(FIXTURES / "corpus"), "--out", str(tmp_path / "out.jsonl"), *args],
                          cwd=tmp_path, capture_output=True, text=True)


@pytest.mark.bad_input
def test_a_stage_prints_one_line_and_exits_2(tmp_path):
    res = run_stage(tmp_path, with_change("retrieval.hybrid.rrf_k", -1))
    assert res.returncode == 2
    assert res.stderr.strip() == "error: retrieval.hybrid.rrf_k: expected a positive number, got -1"
    assert not (tmp_path / "out.jsonl").exists(), "no half-written output"


def test_a_genuine_bug_keeps_its_traceback(tmp_path):
    """An exception that is not a UserError (here a ValueError raised inside the chunker by a
    deliberately broken registry) is a bug: Python's traceback, exit 1, not the one-liner."""
    (tmp_path / "sitecustomize.py").write_text(
        "import rag_ablation.retrieval.chunking as c\n"
        "def broken(*a, **k):\n    raise ValueError('deliberate bug')\n"
        "c.CHUNKERS['chars'] = broken\n")
    import os

    env = {**os.environ, "PYTHONPATH": str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))
    res = subprocess.run([sys.executable, str(ROOT / "stages" / "chunk.py"), "--name", "base", "--corpus",
                          str(FIXTURES / "corpus"), "--out", str(tmp_path / "out.jsonl")],
                         cwd=tmp_path, capture_output=True, text=True, env=env)
    assert res.returncode == 1
    assert "Traceback (most recent call last)" in res.stderr and "ValueError: deliberate bug" in res.stderr


def test_judge_block_defaults_and_its_own_model():
    p = Params.from_params(BASE)
    assert p.judge.judges == ("llm", "token_f1", "contains") and p.judge.llm is None
    assert p.judge.judge_llm(p.llm) is p.llm, "no judge model: the answer model judges"
    other = Params.from_params(with_change("judge.llm", {"backend": "ollama", "model": "qwen2.5:7b"}))
    assert other.judge.judge_llm(other.llm).model == "qwen2.5:7b" and other.judge.judge_llm(other.llm).backend == "ollama"


@pytest.mark.bad_input
def test_judge_block_errors_name_the_key_and_the_choices():
    msg = error_of(with_change("judge.judges", ["llm", "bleu"]))
    assert msg.startswith("judge.judges:") and "llm, token_f1, contains" in msg
    assert error_of(with_change("judge.token_f1_threshold", 1.5)).startswith("judge.token_f1_threshold:")
    msg = error_of(with_change("judge.llm", {"backend": "ollama"}))
    assert msg.startswith("judge.llm.model: missing"), msg
    assert "judge.second_llm.timeout" in error_of(with_change("judge.second_llm", {"backend": "ollama", "model": "m",
                                                                                    "timeout": -1}))
    assert error_of(with_change("judge.canary_sample", 0)).startswith("judge.canary_sample: expected a positive")
    assert Params.from_params(with_change("judge.canary_sample", 36)).judge.canary_sample == 36
    assert Params.from_params(with_change("judge.canary_sample", None, delete=True)).judge.canary_sample is None


def test_rrf_ties_default_to_dense_and_apply_to_rrf_only():
    p = Params.from_params(BASE)
    assert p.config("hybrid").ties == "dense"
    assert Params.from_params(with_change("retrieval.hybrid.ties", "bm25")).config("hybrid").ties == "bm25"
    assert p.config("dense").ties is None
    assert "does not apply" in error_of(with_change("retrieval.dense.ties", "bm25"))
    assert error_of(with_change("retrieval.hybrid.ties", "splade")).startswith("retrieval.hybrid.ties:")


@pytest.mark.bad_input
def test_generation_k_above_a_stored_ranking_is_refused():
    """Asking the answer prompt for more passages than an answered config's ranking stores would
    silently give fewer; it stops at the params check, naming the config and both numbers."""
    msg = error_of(with_change("generation.k", 11))
    assert "generation.k: 11 passages asked, more than the ranking stores (dense stores 10;" in msg
    assert "lower generation.k or raise retrieval.<config>.k" in msg
    assert Params.from_params(with_change("generation.k", 10)).generation.k == 10


def test_a_run_file_records_the_bm25_settings_that_decide_scores_not_mmap():
    from rag_ablation.core.config import Bm25Config

    plain = Bm25Config(impl="bm25s", epsilon=0.0)
    mapped = Bm25Config(impl="bm25s", epsilon=0.0, mmap=True)
    assert plain.scoring() == mapped.scoring() == {"tokenizer": "regex", "impl": "bm25s", "k1": 1.5, "b": 0.75,
                                                    "epsilon": 0.0}


def test_absent_keys_take_the_dataclass_defaults():
    """Each default is written once, on its field (read back by field_defaults) or as a named
    constant: a config that sets only its required keys resolves to exactly those."""
    C = config
    chunking = C.ChunkingConfig.from_params("c", {}, base_size=800, base_overlap=100)
    assert chunking == C.ChunkingConfig(name="c", method=C.DEFAULT_CHUNKING_METHOD, size=800, overlap=100)
    kw = {"chunkings": ("base",), "transforms": (C.NO_TRANSFORM,)}
    dense = C.RetrievalConfig.from_params("d", {"chunking": "base", "method": "dense"}, **kw)
    assert dense == C.RetrievalConfig(name="d", chunking="base", method="dense")
    hybrid = C.RetrievalConfig.from_params("h", {"chunking": "base", "method": "hybrid"}, **kw)
    assert (hybrid.fusion, hybrid.rrf_k, hybrid.ties) == (C.DEFAULT_FUSION, C.DEFAULT_RRF_K, C.DEFAULT_TIES)
    assert hybrid.depth == dense.depth == C.field_defaults(C.RetrievalConfig)["depth"]
    rerank = C.RerankConfig.from_params({"model": "m"}, "r")
    assert rerank == C.RerankConfig(model="m")
    assert C.QueryTransformConfig.from_params("none", {}) == C.QueryTransformConfig(name="none")
    rewrite = C.QueryTransformConfig.from_params("rw", {"kind": "rewrite", "prompt": "rewrite"})
    assert rewrite.num_predict == C.QueryTransformConfig.num_predict
    no_none = C.RetrievalConfig.from_params("d", {"chunking": "base", "method": "dense"}, chunkings=("base",),
                                            transforms=("rewrite",))
    assert no_none.query is None, "no `none` transform: the query is left unset, as before"
    assert C.StatsConfig.from_params(None, retrieval=("bm25", "dense")).baseline == C.StatsConfig.baseline
    assert C.StatsConfig.from_params(None, retrieval=("bm25", "hybrid")).baseline == "bm25"
    raw = {k: BASE[k] for k in ("chunk_size", "chunk_overlap", "chunkings")}
    assert Params.from_params({**raw, "retrieval": {"d": {"chunking": "base", "method": "dense"}}}).dataset == Params.dataset


# keys dvc.yaml reads from a foreach item (`${item.chunking}`): DVC's templating has no defaults
ITEM_KEYS = re.compile(r"\$\{item\.([a-z_]+)\}")


def test_every_config_has_the_keys_dvc_yaml_reads():
    stages = pipeline_stages()
    reads = {}
    for stage in stages.values():
        if "foreach" in stage:
            section = stage["foreach"].strip("${}")
            reads.setdefault(section, set()).update(ITEM_KEYS.findall(yaml.safe_dump(stage["do"])))
    assert reads["retrieval"] >= {"chunking", "query"}
    for params in (BASE, yaml.safe_load((FIXTURES / "params.yaml").read_text())):
        for section, keys in reads.items():
            entries = params
            for part in section.split("."):
                entries = entries[part]
            if not keys:
                continue
            missing = [f"{section}.{name}.{k}" for name, e in entries.items() for k in sorted(keys) if k not in e]
            assert not missing, f"dvc.yaml reads these, params.yaml must set them: {missing}"


def test_configs_in_params_restate_no_default():
    """A chunking, retrieval config, rerank block or query transform lists only what differs from
    the defaults, so a default is written once, in config.py (chunking and query stay on every
    retrieval config: dvc.yaml reads them)."""
    C = config
    rrf = {"fusion": C.DEFAULT_FUSION, "rrf_k": C.DEFAULT_RRF_K, "ties": C.DEFAULT_TIES}
    for params in (BASE, yaml.safe_load((FIXTURES / "params.yaml").read_text())):
        restated = []
        for section, cls, extra, keep in [
                ("chunkings", C.ChunkingConfig, {"method": C.DEFAULT_CHUNKING_METHOD, "size": None, "overlap": None}, ()),
                ("retrieval", C.RetrievalConfig, rrf, ("chunking", "query")),
                ("query_transforms", C.QueryTransformConfig, {}, ())]:
            defaults = {**C.field_defaults(cls), **extra}
            for name, entry in params[section].items():
                restated += [f"{section}.{name}.{k}: {v!r}" for k, v in (entry or {}).items()
                             if k not in keep and (v is None or  # null: "use the default"
                                                   k in defaults and _same(v, defaults[k]))]
                rerank = (entry or {}).get("rerank") if section == "retrieval" else None
                restated += [f"{section}.{name}.rerank.{k}: {v!r}" for k, v in (rerank or {}).items()
                             if k in C.field_defaults(C.RerankConfig) and _same(v, C.field_defaults(C.RerankConfig)[k])]
        assert not restated, restated


def _same(value, default) -> bool:
    """Equal as params values: 60 is 60.0, but false is not 0."""
    if isinstance(value, bool) or isinstance(default, bool):
        return type(value) is type(default) and value == default
    return value == default


def with_changes(*changes: tuple[str, object]) -> dict:
    """The shipped params with several dotted paths set (a missing block is created)."""
    p = copy.deepcopy(BASE)
    for path, value in changes:
        node = p
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return p


def test_served_embeddings_and_ray_read_with_defaults():
    p = Params.from_params(with_changes(("embedding.backend", "openai"), ("embedding.model", "bge-small"),
                                        ("embedding.base_urls", ["http://127.0.0.1:8080/v1"])))
    assert (p.embedding.backend, p.embedding.base_urls, p.embedding.concurrency) == (
        "openai", ("http://127.0.0.1:8080/v1",), config.EmbeddingConfig().concurrency)
    assert p.ray == config.RayConfig() and p.ray.address is None
    p = Params.from_params(with_changes(("embedding.engine", "ray"), ("ray.address", "127.0.0.1:6379")))
    assert (p.embedding.engine, p.ray.address) == ("ray", "127.0.0.1:6379")
    p = Params.from_params(with_changes(("faiss.index", "ivf"), ("faiss.shards", 4)))
    assert p.faiss.shards == 4 and Params.from_params(BASE).faiss.shards == 1


@pytest.mark.bad_input
@pytest.mark.parametrize("changes,message", [
    ((("embedding.backend", "openai"),), "embedding.base_urls: missing"),
    ((("embedding.backend", "tei"),), "embedding.backend: expected one of openai, sentence_transformers, got 'tei'"),
    ((("embedding.concurrency", 4),), "embedding.concurrency: does not apply"),
    ((("embedding.backend", "openai"), ("embedding.base_urls", ["http://a:1/v1"]), ("embedding.api_key_env", "sk-abc123")),
     "expected the name of the environment variable that holds the API key"),
    ((("embedding.backend", "openai"), ("embedding.base_urls", ["http://a:1/v1"]), ("embedding.engine", "ray")),
     "embedding.engine: ray runs the sentence-transformers model on Ray workers"),
    ((("ray.address", "not an address"),), "ray.address: expected auto, HOST:PORT of a Ray head, or ray://HOST:PORT"),
    ((("ray.nodes", 2),), "ray: unknown key(s) nodes"),
    ((("faiss.shards", 4),), "faiss.shards: 4 shards need index ivf"),
    ((("faiss.index", "ivf"), ("faiss.shards", 0)), "faiss.shards: expected a positive integer, got 0"),
], ids=["openai-without-urls", "unknown-backend", "openai-key-on-st", "pasted-key", "ray-with-openai", "ray-address",
        "ray-unknown-key", "shards-without-ivf", "zero-shards"])
def test_embedding_ray_and_shard_settings_fail_with_their_key(changes, message):
    msg = error_of(with_changes(*changes))
    assert message in msg, msg
    assert "\n" not in msg and "sk-abc123" not in msg


def test_run_configs_default_all_or_a_list_in_params_order():
    """``run_configs`` left out or ``default`` is every retrieval config not marked
    ``optional: true``; ``all`` is every one; a list keeps params.yaml's order whatever order it
    is written in, and only the listed configs are searched."""
    everything = tuple(BASE["retrieval"])
    optional = tuple(n for n, c in BASE["retrieval"].items() if c.get("optional"))
    assert optional  # params.yaml marks some (the anchors' configs, rewrite and hyde)
    default = tuple(n for n in everything if n not in optional)
    assert Params.from_params(BASE).run_configs == default
    assert Params.from_params(BASE).optional_configs == optional
    assert Params.from_params(with_change("run_configs", "all")).run_configs == everything
    # the gate's configs set in params stay (the gate stage says they were not compared)
    assert Params.from_params(with_change("run_configs", ["dense", "bm25"])).gate.configs == ("hybrid_heading",)
    assert Params.from_params(with_change("run_configs", None, delete=True)).run_configs == default
    p = Params.from_params(with_change("run_configs", ["hybrid", "dense", "bm25"]))
    assert p.run_configs == tuple(n for n in everything if n in {"hybrid", "dense", "bm25"})
    assert list(p.searched()) == list(p.run_configs)
    assert p.not_searched() == [n for n in everything if n not in {"hybrid", "dense", "bm25"}]
    assert p.left_out("dense") is None
    reason = p.left_out("dense_c400")
    assert "'dense_c400' is not in run_configs (dense, bm25, hybrid)" in reason and "run_configs=all" in reason
    # a list may name an optional config; the default run says why it left one out
    assert "hyde" in Params.from_params(with_change("run_configs", ["dense", "hyde"])).run_configs
    reason = Params.from_params(BASE).left_out("hyde")
    assert "'hyde' is optional" in reason and "-S run_configs=all" in reason


def test_optional_is_not_recorded_in_the_config():
    """``optional`` decides only whether a config runs: the resolved config (what a run file
    records) is the same with and without it, so marking a config changes none of its runs."""
    marked = Params.from_params(BASE).config("hyde").resolved()
    raw = with_change("run_configs", "all")
    raw["retrieval"]["hyde"] = {k: v for k, v in raw["retrieval"]["hyde"].items() if k != "optional"}
    assert Params.from_params(raw).config("hyde").resolved() == marked
    assert "optional" not in marked


@pytest.mark.bad_input
def test_a_default_run_with_every_config_optional_says_how_to_run_them():
    raw = with_change("run_configs", "default")
    raw["retrieval"] = {n: {**c, "optional": True} for n, c in raw["retrieval"].items()}
    msg = error_of(raw)
    assert msg.startswith("run_configs: default runs every retrieval config not marked optional: true")
    assert "set run_configs: all" in msg and "\n" not in msg
    raw["run_configs"] = "all"
    assert Params.from_params(raw).run_configs == tuple(raw["retrieval"])


@pytest.mark.bad_input
def test_optional_must_be_true_or_false():
    raw = with_change("run_configs", "all")
    raw["retrieval"]["hyde"] = {**raw["retrieval"]["hyde"], "optional": "yes"}
    msg = error_of(raw)
    assert "retrieval.hyde.optional" in msg and "true" in msg and "'yes'" in msg, msg


def test_run_configs_move_the_default_baseline_and_gate():
    """Left out, the default baseline (dense) and the answered configs give way to the first
    listed config; listed, they stay."""
    raw = with_change("run_configs", ["bm25", "hybrid"])
    del raw["stats"]["baseline"], raw["gate"]["configs"]
    p = Params.from_params(raw)
    assert p.stats.baseline == "bm25" and p.gate.configs == ("bm25",)
    raw = with_change("run_configs", ["dense", "hybrid_heading", "bm25"])
    p = Params.from_params(raw)
    assert p.stats.baseline == "dense"
    assert p.gate.configs == tuple(BASE["gate"]["configs"])  # hybrid_heading, set in params and listed


@pytest.mark.bad_input
@pytest.mark.parametrize("value, message", [
    (["dense", "nope"], "run_configs: 'nope' not a retrieval config; expected some of: dense,"),
    (["dense", "dense"], "run_configs: expected each config once"),
    ([], "run_configs: expected default, all or a non-empty list of retrieval config names"),
    ("dense", "run_configs: expected default, all or a non-empty list of retrieval config names"),
])
def test_run_configs_refuses_what_names_no_config(value, message):
    assert message in error_of(with_change("run_configs", value))


@pytest.mark.bad_input
def test_a_baseline_left_out_of_run_configs_is_refused():
    raw = with_change("run_configs", ["bm25", "hybrid"])
    raw["stats"] = {**raw["stats"], "baseline": "dense"}
    assert error_of(raw) == ("stats.baseline: 'dense' not in run_configs (bm25, hybrid); add it to run_configs, "
                             "or name a config that runs")
