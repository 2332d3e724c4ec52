from __future__ import annotations

import pytest

from rag_ablation.retrieval.embeddings import minilm_path
from rag_ablation.retrieval.rerank import RerankerUnavailable, is_placeholder, load_reranker

pytestmark = pytest.mark.slow


@pytest.mark.bad_input
def test_missing_model_is_unavailable_with_how_to_get_it():
    with pytest.raises(RerankerUnavailable) as e:
        load_reranker("cross-encoder/ms-marco-MiniLM-L-6-v2")
    msg = str(e.value)
    assert "cross-encoder/ms-marco-MiniLM-L-6-v2" in msg and "huggingface-cli download" in msg


def test_a_bi_encoder_checkpoint_is_detected_as_a_placeholder():
    assert is_placeholder(minilm_path())
    with pytest.raises(RerankerUnavailable, match="no trained classification head"):
        load_reranker(minilm_path())


def test_placeholder_runs_for_plumbing_only():
    """Untrained head: the code path and its latency are real, the scores are not results."""
    r = load_reranker(minilm_path(), threads=1, allow_placeholder=True)
    assert r.placeholder
    s = r.scores("what is the fare cap?", ["the daily cap is three fares", "buses run late"])
    assert len(s) == 2 and all(isinstance(x, float) for x in s)
    assert r.scores("q", []) == []


def test_a_placeholder_config_is_marked_and_reports_no_numbers(tmp_path):
    from rag_ablation.data.text import regex_tokens
    from rag_ablation.retrieval.chunking import chunk_document
    from rag_ablation.core.config import Bm25Config, EmbeddingConfig, RetrievalConfig
    from rag_ablation.retrieval.bm25 import save_bm25
    from rag_ablation.retrieval.runner import open_retrievers, retrieve_one

    def parse_config(name, spec):
        return RetrievalConfig.from_params(name, spec, chunkings=("base",), transforms=("none",))

    chunks = chunk_document("# T\n\n## A\n\nSettlement runs nightly.\n\n## B\n\nBuses report positions.",
                            doc="t/d.md", track="t", method="chars", size=30, overlap=0)
    save_bm25(tmp_path / "b", chunk_ids=[c.id for c in chunks], tokens=[regex_tokens(c.text) for c in chunks],
              tokenizer="regex", bm25=Bm25Config())
    spec = {"chunking": "base", "method": "bm25", "depth": 10,
            "rerank": {"model": minilm_path(), "depth": 5, "allow_placeholder": True}}
    cfg = parse_config("p", spec)
    bm25 = Bm25Config()
    r, status, reason = open_retrievers(cfg, chunks=chunks, dense_dir=None, bm25_path=tmp_path / "b",
                                        embedding=EmbeddingConfig(), bm25=bm25)
    assert status == "placeholder" and "untrained head" in reason
    ranking, times = retrieve_one(cfg, "when does settlement run", r)
    assert ranking and "rerank" in times, "the code path and its latency are real"
    cfg_missing = parse_config("m", {**spec, "rerank": {"model": "no-org/no-model", "depth": 5}})
    r, status, reason = open_retrievers(cfg_missing, chunks=chunks, dense_dir=None, bm25_path=tmp_path / "b",
                                        embedding=EmbeddingConfig(), bm25=bm25)
    assert r is None and status == "unavailable" and "no-org/no-model" in reason
