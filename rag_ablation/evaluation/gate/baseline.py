"""The accepted baseline of the retrieval gate: the per-question scores of the gated configs,
committed as ``metrics/gate_baseline.csv`` after a review (``rag-ablation check --accept``).

The file has the format of the per-question retrieval scores
(``rag_ablation.evaluation.scoring.scores``). Accepting writes exactly the workspace rows of the
gated configs; accepting a loss resets what counts as newly failing, never the floors.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_ablation.core.errors import UserError
from rag_ablation.evaluation.scoring.scores import RETRIEVAL_FIELDS, read_scores, write_scores

BASELINE = Path("metrics/gate_baseline.csv")
"""The accepted per-question scores of the gated configs (``--accept`` writes it; committed)."""

Row = Mapping[str, Any]


def accepted_rows(new_rows: Iterable[Row], configs: Sequence[str]) -> list[Row]:
    """The workspace rows of ``configs`` (in the file's order), the whole of a new baseline; a
    config without rows is a ``UserError``."""
    if not configs:
        raise UserError("no config to accept: set gate.configs in params.yaml or pass --config NAME")
    rows = list(new_rows)
    present = {r["config"] for r in rows}
    missing = [c for c in configs if c not in present]
    if missing:
        raise UserError(f"cannot accept: no workspace rows for {', '.join(map(repr, missing))} (scored configs: "
                        f"{', '.join(sorted(present)) or 'none'}); run `dvc repro score` first")
    return [r for r in rows if r["config"] in configs]


def write_baseline(path: Path, rows: Sequence[Row]) -> None:
    """Write accepted rows in the per-question scores format (``read_scores`` reads it back)."""
    write_scores(path, rows, RETRIEVAL_FIELDS)


def read_baseline(path: Path) -> list[dict[str, Any]]:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"no accepted baseline {path}: review the workspace scores, then run "
                        f"`rag-ablation check --accept` and commit {path} (or compare with a revision: --against main)")
    return read_scores(path)
