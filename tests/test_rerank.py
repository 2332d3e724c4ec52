from __future__ import annotations

import pytest

from rag_ablation.embeddings import minilm_path
from rag_ablation.rerank import RerankerUnavailable, is_placeholder, load_reranker

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
