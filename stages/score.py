"""Stage `score`: per-question scores of every retrieval config and every answered config.

Joins each config's stored ranking (`retrieve@NAME`) with the span labels of its chunking
(`labels@CHUNKING`), and each answered config's answers (`generate@NAME`) with the reference
answers, and writes one row per config and question (rag_ablation.evaluation.scoring.scores). The label
audit (`data/labels/audit.jsonl`, checked against the corpus) re-scores the same stored rankings
with its extra acceptable passages into a third file; a team's app (`app@NAME`) is scored by
the text of its own passages (rag_ablation.evaluation.scoring.foreign), and what its run
summary and its unlabelled passages say goes to `--apps-out`; nothing is searched again, so adding an
audit line reruns only scoring and what reads the scores. A data set with graded qrels
(`<data>/qrels.jsonl`, from a BEIR import) is scored by them, with nDCG@10 and recall@100 as
extra columns (rag_ablation.evaluation.scoring.graded). The CSV files are committed to git, so any
revision has them: statistics, label audits and the gate
compare questions against `main` without searching again. Loops over params.yaml, never over a
folder listing, so a removed config leaves no rows.
"""
from __future__ import annotations

import _env  # noqa: F401  (first: the project's environment, or one line saying how)

import argparse
import sys
from pathlib import Path

from rag_ablation.core import runner
from rag_ablation.core.config import load_config
from rag_ablation.data.corpus import load_corpus
from rag_ablation.evaluation.scoring.audit import load_audit
from rag_ablation.evaluation.scoring.graded import read_qrels
from rag_ablation.evaluation.scoring.score import score_configs
from rag_ablation.evaluation.scoring.scores import ANSWER_FIELDS, retrieval_fields, write_scores
from rag_ablation.core.io import read_jsonl, write_json
from rag_ablation.data.questions import Question


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--runs", type=Path, required=True, help="folder of retrieve@NAME outputs, NAME.json")
    ap.add_argument("--labels", type=Path, required=True, help="folder of labels@CHUNKING outputs, CHUNKING.json")
    ap.add_argument("--answers", type=Path, required=True, help="folder of generate@NAME outputs, NAME.json")
    ap.add_argument("--retrieval-out", type=Path, required=True)
    ap.add_argument("--answers-out", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, required=True, help="the corpus the audit spans are checked against")
    ap.add_argument("--audit", type=Path, required=True, help="the label audit (JSON lines; absent = no audit)")
    ap.add_argument("--audited-out", type=Path, required=True)
    ap.add_argument("--apps-out", type=Path, default=None,
                    help="per app config: its run's summary and unlabelled passages (JSON)")
    ap.add_argument("--qrels", type=Path, default=None,
                    help="the data set's graded qrels (JSON lines; absent or empty = span labels only)")
    args = ap.parse_args()
    params = load_config()
    questions = [Question(**d) for d in read_jsonl(args.questions)]
    corpus = load_corpus(args.corpus)
    audit = load_audit(args.audit, questions, corpus) if args.audit.is_file() else []
    qrels = read_qrels(args.qrels) if args.qrels is not None else {}
    scores = score_configs(params, questions, audit, runs=args.runs, labels=args.labels, answers=args.answers,
                           qrels=qrels, known_docs={d.doc for d in corpus})
    fields = retrieval_fields(bool(qrels))
    for line in scores.notes:
        print(line, file=sys.stderr)
    write_scores(args.retrieval_out, scores.retrieval, fields)
    write_scores(args.answers_out, scores.answers, ANSWER_FIELDS)
    write_scores(args.audited_out, scores.audited, fields)
    if args.apps_out is not None:
        write_json(args.apps_out, scores.apps)
    if qrels:
        print(f"score: graded qrels for {len(qrels)} question(s): relevance by document, nDCG@10 and recall@100",
              file=sys.stderr)
    if audit:
        print(f"score: {len(audit)} audit span(s) for {len({a.id for a in audit})} question(s) applied", file=sys.stderr)


if __name__ == "__main__":
    runner.run(main)
