"""Stage `dataset`: write the data set named by `dataset` in params.yaml (handbook, covidqa, or an
imported set under data/imported/) to one folder that every later stage reads: corpus/,
questions.jsonl, audit.jsonl, grades.jsonl and qrels.jsonl (rag_ablation.datasets.registry). handbook comes
from the repository's data files given here; covidqa is read in place from
$RAG_ABLATION_DATASETS/covidqa and never copied into git; an imported set from
data/imported/NAME/. Each data set brings its own audit and hand grades, or none.

A corpus folder is read by rag_ablation.datasets.sources.read_sources with the `documents` block of
params.yaml: PDF, Word, PowerPoint, HTML and reStructuredText converted to Markdown (through the
conversion cache, `documents.workers` processes), `documents.exclude` leaving files out,
`documents.on_problem` stopping on a file that cannot be read or skipping it. The metrics file
counts documents per format and pages, and lists every file excluded or skipped.

The paths on the command line are always the handbook's (dvc.yaml passes them, as dependencies,
whatever `dataset` selects), so the stage's first line names the data set selected and the files
it actually reads (`dataset msmarco: read data/imported/msmarco/corpus, ...`), and its last line
what it wrote.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from functools import partial

from tqdm import tqdm

from rag_ablation.core.io import default_cache_dir, numbered_lines, write_json
from rag_ablation.datasets.sources import CACHE_FILE, left_out_lines, read_sources
from rag_ablation.datasets.registry import Sources, build_dataset, reading, write_dataset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", type=Path, required=True, help="the handbook's corpus (read only for dataset: handbook)")
    ap.add_argument("--questions", type=Path, required=True,
                    help="the handbook's question file (read only for dataset: handbook)")
    ap.add_argument("--audit", type=Path, required=True, help="the handbook's label audit (read only for dataset: handbook)")
    ap.add_argument("--grades", type=Path, required=True, help="the handbook's hand grades (read only for dataset: handbook)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--metrics", type=Path, default=None,
                    help="documents per format, pages, and the files excluded or skipped (dvc.yaml passes it)")
    args = ap.parse_args()
    params = load_config()
    opts = params.documents
    reader = partial(read_sources, exclude=opts.exclude, on_problem=opts.on_problem, workers=opts.workers,
                     cache=default_cache_dir() / CACHE_FILE,
                     progress=lambda it: tqdm(it, desc="converting", unit="file", file=sys.stderr))
    ds = build_dataset(params.dataset, Sources(args.corpus, args.questions, args.audit, args.grades),
                       min_span=params.labels.min_span, reader=reader)
    print(reading(params.dataset, ds), file=sys.stderr)
    if ds.conversion_line:
        print(ds.conversion_line, file=sys.stderr)
    summary = ds.conversion or {"documents": len(ds.documents)}
    for line in left_out_lines(summary):
        print(line, file=sys.stderr)
    write_dataset(ds, args.out)
    if args.metrics is not None:
        write_json(args.metrics, summary)
    n = sum(1 for _ in numbered_lines(args.out / "questions.jsonl"))  # the lines later stages read
    print(f"dataset {params.dataset}: {len(ds.documents)} documents, {n} questions, {ds.audit_lines} audit lines, "
          f"{ds.grade_lines} hand grades" + (f", graded qrels for {ds.qrels_lines} questions" if ds.qrels_lines else ""),
          file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
