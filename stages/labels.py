"""Stage `labels@NAME`: which chunks of chunking NAME are relevant to each answerable question,
by the span rule (rag_ablation.evaluation.scoring.labels; a question with `spans` takes the union). Writes
{question id: [chunk ids]} and the questions whose span no chunk contains (possible only when a
span crosses a section boundary), and a metrics file flagging the questions with more than
`labels.max_relevant` relevant chunks (a common span inflates recall)."""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.data.chunks import load_chunks
from rag_ablation.core.config import load_config
from rag_ablation.core.io import read_jsonl, write_json
from rag_ablation.evaluation.scoring.labels import relevant_chunks
from rag_ablation.data.questions import Question


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=Path, required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--metrics", type=Path, required=True)
    args = ap.parse_args()
    lab = load_config().labels
    questions = [Question(**d) for d in read_jsonl(args.questions)]
    answerable = [q for q in questions if q.answerable]
    chunks = load_chunks(args.chunks)
    relevant = relevant_chunks(
        {q.id: q.spans if q.spans is not None else q.span or "" for q in answerable},
        ((c.id, c.doc, c.body) for c in chunks),
        window=lab.window,
        span_docs={q.id: q.doc or "" for q in answerable} if lab.same_doc_only else None,
    )
    unlabeled = sorted(q for q, ids in relevant.items() if not ids)
    if unlabeled:
        print(f"warning: {len(unlabeled)} question(s) have no relevant chunk in this chunking: {', '.join(unlabeled)}",
              file=sys.stderr)
    over = {q: len(ids) for q, ids in sorted(relevant.items()) if len(ids) > lab.max_relevant}
    if over:
        print(f"warning: {len(over)} question(s) have more than {lab.max_relevant} relevant chunks "
              f"(labels.max_relevant; a common span makes a hit easy): "
              + ", ".join(f"{q} ({n})" for q, n in over.items()), file=sys.stderr)
    write_json(args.out, {"relevant": relevant, "unlabeled": unlabeled, "window": lab.window,
                          "same_doc_only": lab.same_doc_only})
    counts = [len(ids) for ids in relevant.values()]
    write_json(args.metrics, {
        "n_questions": len(relevant),
        "n_unlabeled": len(unlabeled),
        "max_n_relevant": max(counts, default=0),
        "mean_n_relevant": round(sum(counts) / len(counts), 4) if counts else 0.0,
        "max_relevant": lab.max_relevant,
        "n_over_max_relevant": len(over),
        "over_max_relevant": over,
    })


if __name__ == "__main__":
    runner.run(main)
