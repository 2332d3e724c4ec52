"""Stage `dataset`: write the data set named by `dataset` in params.yaml (handbook, covidqa, or an
imported set under data/imported/) to one folder that every later stage reads: corpus/,
questions.jsonl, audit.jsonl, grades.jsonl and qrels.jsonl (rag_ablation.datasets.registry). handbook comes
from the repository's data files given here; covidqa is read in place from
$RAG_ABLATION_DATASETS/covidqa and never copied into git; an imported set from
data/imported/NAME/. Each data set brings its own audit and hand grades, or none.

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
from rag_ablation.core.io import numbered_lines
from rag_ablation.datasets.registry import Sources, build_dataset, reading, write_dataset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", type=Path, required=True, help="the handbook's corpus (read only for dataset: handbook)")
    ap.add_argument("--questions", type=Path, required=True,
                    help="the handbook's question file (read only for dataset: handbook)")
    ap.add_argument("--audit", type=Path, required=True, help="the handbook's label audit (read only for dataset: handbook)")
    ap.add_argument("--grades", type=Path, required=True, help="the handbook's hand grades (read only for dataset: handbook)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    params = load_config()
    ds = build_dataset(params.dataset, Sources(args.corpus, args.questions, args.audit, args.grades),
                       min_span=params.labels.min_span)
    print(reading(params.dataset, ds), file=sys.stderr)
    write_dataset(ds, args.out)
    n = sum(1 for _ in numbered_lines(args.out / "questions.jsonl"))  # the lines later stages read
    print(f"dataset {params.dataset}: {len(ds.documents)} documents, {n} questions, {ds.audit_lines} audit lines, "
          f"{ds.grade_lines} hand grades" + (f", graded qrels for {ds.qrels_lines} questions" if ds.qrels_lines else ""),
          file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
