from __future__ import annotations

import numpy as np
import pytest

from rag_ablation.retrieval.embeddings import (
    EmbeddingCache,
    ModelUnavailable,
    embed_cached,
    encode,
    folder_tokenizer,
    l2_normalize,
    load_model,
    minilm_path,
    truncated_share,
    truncation,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model():
    return load_model("all-MiniLM-L6-v2", threads=1)


def test_minilm_loads_offline_and_embeds_normalized(model):
    v = encode(model, ["fare capping", "daily fare cap", "vehicle positions"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2]


def test_cache_embeds_each_text_once(tmp_path, model):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    loads = []

    def load():
        loads.append(1)
        return model

    texts = ["alpha", "beta", "alpha"]
    v1, s1 = embed_cached(texts, model_name="m", cache=cache, load=load, progress=False)
    assert s1 == {"texts": 3, "cached": 0, "computed": 2}
    v2, s2 = embed_cached(["beta", "alpha"], model_name="m", cache=cache, load=load, progress=False)
    assert s2 == {"texts": 2, "cached": 2, "computed": 0} and len(loads) == 1
    np.testing.assert_array_equal(v2, v1[[1, 0]])
    np.testing.assert_allclose(v1[0], encode(model, ["alpha"])[0], rtol=1e-5, atol=1e-6)
    _, s3 = embed_cached(["alpha"], model_name="other", cache=cache, load=load, progress=False)
    assert s3["computed"] == 1, "the cache is keyed by model as well as text"


def test_truncated_share_counts_long_texts(model):
    assert truncated_share(model, ["short text", "word " * 400]) == pytest.approx(1 / 2)
    assert truncated_share(model, []) == 0.0


def test_truncation_reports_the_limit_and_share_or_unknown(model):
    figures, sentence = truncation(model, ["short text", "word " * 400, "a", "b"])
    assert figures == {"max_seq_length": model.max_seq_length, "truncated_share": round(1 / 4, 4)}
    assert sentence == f"25.0% of chunks exceed {model.max_seq_length} wordpieces and are embedded truncated"
    served = type("Served", (), {"tokenizer": None, "max_seq_length": None})()  # no local tokenizer
    figures, sentence = truncation(served, ["word " * 400])
    assert figures == {"max_seq_length": None, "truncated_share": None} and "unknown" in sentence


def test_the_folder_tokenizer_counts_as_the_loaded_model_does(model):
    """Read from the model folder's files without torch, the tokenizer gives every text the
    loaded model's wordpiece count (special tokens included; case, accents, CJK, emoji, markup,
    whitespace runs and texts past the 128-token truncation stored in tokenizer.json), the same
    max_seq_length and so the same truncation figures; served models, hub names and other
    folders get none (the stage loads those)."""
    from conftest import ROOT
    from rag_ablation.core.config import EmbeddingConfig

    texts = ["", "short text", "UPPER Case and Ünïcödé façade", "数据 检索 增强", "emoji 🙂 and tabs\t\tand\n\nlines",
             "`code_block()` | a | table |", "word " * 300, "x" * 3000]
    texts += [p.read_text() for p in sorted((ROOT / "data/corpus").rglob("*.md"))[:20]]
    light = folder_tokenizer(EmbeddingConfig())
    assert light is not None and light.max_seq_length == model.max_seq_length == 256
    counts = [len(x) for x in light.tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]]
    assert counts == [len(x) for x in model.tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]]
    assert max(counts) > 256 and min(counts) == 2  # past the limit, and "" is [CLS] [SEP]
    assert truncation(light, texts) == truncation(model, texts)
    with pytest.raises(ValueError, match="truncation=False"):
        light.tokenizer(texts, add_special_tokens=True, truncation=True)
    assert folder_tokenizer(EmbeddingConfig(backend="openai", model="m", base_urls=("http://127.0.0.1:1/v1",))) is None
    assert folder_tokenizer(EmbeddingConfig(model="sentence-transformers/some-hub-name")) is None
    assert folder_tokenizer(EmbeddingConfig(model=minilm_path())) is None  # a folder: its own settings may differ


def test_l2_normalize_leaves_zero_rows():
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


@pytest.mark.bad_input
def test_missing_model_says_which_and_how(tmp_path):
    with pytest.raises(ModelUnavailable) as e:
        load_model(str(tmp_path / "no-model-here"))
    assert "no-model-here" in str(e.value) and "huggingface-cli download" in str(e.value)
