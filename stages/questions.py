"""Stage `questions`: validate the question set against the corpus before anything is scored.

Fails (exit 2, nothing written) if any line is malformed or any span is missing from its
document, naming every offending line or question id. Otherwise writes the validated questions
and a metrics file with the count per slice, the lexical overlap per slice, and the number of
spans that occur in more than one chunk-sized region (listed on stderr).
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.data.corpus import load_corpus
from rag_ablation.core.io import write_json, write_jsonl
from rag_ablation.core.config import load_config
from rag_ablation.data.question_stats import ambiguous_spans, overlap_by_slice
from rag_ablation.data.questions import check_spans, load_questions, slice_counts
from rag_ablation.data.split import read_split


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--metrics", type=Path, required=True)
    ap.add_argument("--split", type=Path, default=None,
                    help="the committed split file: its ids are questions an earlier run accepted, so a span of theirs "
                         "not found is called stale (read for that wording only; not a dependency: the split stage "
                         "writes it after this one)")
    args = ap.parse_args()
    params = load_config()
    region = params.chunk_size

    documents = load_corpus(args.corpus)
    questions = load_questions(args.questions, min_span=params.labels.min_span)
    seen = read_split(args.split) if args.split is not None and args.split.is_file() else {}
    check_spans(questions, documents, seen=seen.keys())
    ambiguous = ambiguous_spans(questions, documents, region=region)
    if ambiguous:
        print(f"note: {len(ambiguous)} span(s) occur in more than one {region}-character region "
              f"(a label audit may find more answers): {', '.join(ambiguous)}", file=sys.stderr)
    write_jsonl(args.out, [q.to_json() for q in questions])
    write_json(args.metrics, {
        "n_questions": len(questions),
        "by_slice": slice_counts(questions),
        "lexical_overlap": overlap_by_slice(questions, documents),
        "ambiguous_spans": len(ambiguous),
        "n_documents": len(documents),
        "corpus_chars": sum(len(d.text) for d in documents),
    })
    print(f"{len(questions)} questions valid: {slice_counts(questions)}", file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
