"""Stage `query_vectors@NAME`: the vectors of the texts query transform NAME sends to the dense
retriever, embedded once for every dense and hybrid config that uses NAME, and the warm
single-text embedding time of each timed question (rag_ablation/retrieval/query_vectors.py).

Writes the vectors folder (deterministic) and a latency file with the per-question seconds; the
retrieve stages read both, so none of them loads the embedding model. A transform that could not
run (no LLM) writes status `unavailable` with its reason and no vectors.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.core.io import read_json, read_jsonl, write_json
from rag_ablation.data.questions import Question
from rag_ablation.retrieval.query_vectors import (embed_transform, embedding_times, query_embedder, unavailable,
                                                  write_vectors)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--name", required=True, help="the query transform")
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True, help="queries@NAME output")
    ap.add_argument("--out", type=Path, required=True, help="the vectors folder")
    ap.add_argument("--latency", type=Path, required=True)
    args = ap.parse_args()

    params = load_config()
    questions = [Question(**d) for d in read_jsonl(args.questions)]
    transformed = read_json(args.queries)
    if transformed.get("status", "ok") != "ok":
        write_vectors(args.out, unavailable(transformed["reason"]))
        write_json(args.latency, embedding_times({}, len(questions)))
        print(f"query_vectors@{args.name}: unavailable: {transformed['reason']}", file=sys.stderr)
        return
    queries = transformed["queries"]
    ids = [q.id for q in questions]
    texts = [queries.get(q.id, q.question) for q in questions]
    qv, seconds = embed_transform(ids, texts, embedder=query_embedder(params.embedding))
    write_vectors(args.out, qv)
    write_json(args.latency, embedding_times(seconds, len(questions)))
    print(f"query_vectors@{args.name}: {len(ids)} question(s) embedded, {len(seconds)} timed one at a time",
          file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
