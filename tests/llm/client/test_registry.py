"""The backend registry (rag_ablation.llm.client.registry): every backend by name, an unknown name
listing the valid ones, and no import order that breaks it."""
from __future__ import annotations

import subprocess
import sys

import pytest

from rag_ablation.llm.client.llama_cpp import LlamaCppBackend
from rag_ablation.llm.client.ollama import OllamaBackend
from rag_ablation.llm.client.openai_compat import OpenAICompatBackend
from rag_ablation.llm.client.registry import BACKENDS, make_backend

from conftest import ROOT


def test_registry() -> None:
    assert BACKENDS == {"llama_cpp": LlamaCppBackend, "ollama": OllamaBackend, "openai": OpenAICompatBackend}


@pytest.mark.bad_input
def test_unknown_backend_lists_valid_names() -> None:
    with pytest.raises(ValueError) as err:
        make_backend("vllm")
    assert "'vllm'" in str(err.value)
    assert "llama_cpp" in str(err.value) and "ollama" in str(err.value)


def test_registry_and_both_import_orders() -> None:
    assert BACKENDS["openai"] is OpenAICompatBackend
    for first in ("rag_ablation.llm.client.openai_compat", "rag_ablation.llm.client.registry"):
        code = (f"import {first}\nfrom rag_ablation.llm.client.registry import BACKENDS\n"
                f"from rag_ablation.llm.client.openai_compat import OpenAICompatBackend\n"
                f"assert sorted(BACKENDS) == ['llama_cpp', 'ollama', 'openai']\n"
                f"assert BACKENDS['openai'] is OpenAICompatBackend")
        res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
