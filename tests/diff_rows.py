"""Two versions of a tiny per-question scores file, for `rag-ablation diff` and its library
(tests/evaluation/statistics/test_revision_diff.py, tests/evaluation/report/test_diff_text.py,
tests/commands/test_diff.py): at the old revision and in the workspace, with configs and
questions on one side only."""
from __future__ import annotations

from score_rows import config_rows, hits_to_ranks

IDS = [f"q{i}" for i in range(10)]
SLICES = ["identifier"] * 5 + ["paraphrase"] * 5
OLD = {"dense": [1, 1, 1, 0, 0, 1, 1, 0, 1, 0], "bm25": [1, 1, 1, 1, 0, 0, 1, 1, 1, 0]}
NEW = {"dense": OLD["dense"], "bm25": [1, 0, 0, 1, 0, 1, 1, 1, 1, 0]}  # broken q1 q2 (identifier), fixed q5


def old_rows():
    rows = [r for name, hits in OLD.items()
            for r in config_rows(name, hits_to_ranks(hits) + [3], slices=SLICES + ["paraphrase"], ids=IDS + ["gone"])]
    return rows + config_rows("old_only", [1, 1], ids=["q0", "q1"])


def new_rows():
    rows = [r for name, hits in NEW.items()
            for r in config_rows(name, hits_to_ranks(hits) + [None], slices=SLICES + ["identifier"],
                                 ids=IDS + ["new1"])]
    return rows + config_rows("new_only", [1], ids=["q0"])
