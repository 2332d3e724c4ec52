"""Stage `labels@NAME`: which chunks of chunking NAME are relevant to each answerable question,
by the span rule (rag_ablation.evaluation.labels). Writes {question id: [chunk ids]} and the count of
questions whose span no chunk contains (possible only when a span crosses a section boundary)."""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation import cli
from rag_ablation.chunks import load_chunks
from rag_ablation.config import load_config
from rag_ablation.io import read_jsonl, write_json
from rag_ablation.evaluation.labels import relevant_chunks
from rag_ablation.questions import Question


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=Path, required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    lab = load_config().labels
    questions = [Question(**d) for d in read_jsonl(args.questions)]
    answerable = [q for q in questions if q.answerable]
    chunks = load_chunks(args.chunks)
    relevant = relevant_chunks(
        {q.id: q.span or "" for q in answerable},
        ((c.id, c.doc, c.body) for c in chunks),
        window=lab.window,
        span_docs={q.id: q.doc or "" for q in answerable} if lab.same_doc_only else None,
    )
    unlabeled = sorted(q for q, ids in relevant.items() if not ids)
    if unlabeled:
        print(f"warning: {len(unlabeled)} question(s) have no relevant chunk in this chunking: {', '.join(unlabeled)}",
              file=sys.stderr)
    write_json(args.out, {"relevant": relevant, "unlabeled": unlabeled, "window": lab.window,
                          "same_doc_only": lab.same_doc_only})


if __name__ == "__main__":
    cli.run(main)
