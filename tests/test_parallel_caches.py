"""Two experiments at once (`dvc queue start -j 2`) share the prompt and embedding caches: two
processes writing the same SQLite files concurrently lose nothing, duplicate nothing and never
stop with "database is locked"."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

from conftest import ROOT

from rag_ablation.llm.client.prompt_cache import PromptCache
from rag_ablation.retrieval.embeddings import EmbeddingCache

WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    from rag_ablation.llm.client.base import Generation
    from rag_ablation.llm.client.prompt_cache import PromptCache
    from rag_ablation.retrieval.embeddings import EmbeddingCache
    folder, me = sys.argv[1], int(sys.argv[2])
    prompts = PromptCache(f"{folder}/prompts.sqlite")
    vectors = EmbeddingCache(f"{folder}/embeddings.sqlite")
    for i in range(300):
        # keys 0-199 are written by both processes (the same prompt in two experiments), the rest by one
        key = f"shared{i}" if i < 200 else f"own{me}-{i}"
        prompts.put(key, Generation(text=f"answer {key}", prompt_tokens=i, completion_tokens=1, seconds=0.01))
        vectors.put_many("m", {key: np.full(8, i, dtype=np.float32)})
    prompts.close()
    vectors.close()
    print("done")
""")


def test_two_processes_share_the_caches_without_loss(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(me)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for me in (1, 2)]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0 and out.strip() == "done", err
        assert "locked" not in err
    keys = [f"shared{i}" for i in range(200)] + [f"own{me}-{i}" for me in (1, 2) for i in range(200, 300)]
    with PromptCache(tmp_path / "prompts.sqlite") as cache:
        assert len(cache) == len(keys) == 400, "every entry once: shared prompts are not duplicated"
        for key in keys:
            assert cache.get(key).text == f"answer {key}"
    vectors = EmbeddingCache(tmp_path / "embeddings.sqlite")
    got = vectors.get_many("m", keys)
    vectors.close()
    assert set(got) == set(keys)
    assert all(np.array_equal(got[f"shared{i}"], np.full(8, i, dtype=np.float32)) for i in range(200))
