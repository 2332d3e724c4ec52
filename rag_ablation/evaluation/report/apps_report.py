"""The report's section on a team's own apps (``apps:`` in params.yaml): what their runs say
beyond the scores, from the score stage's ``metrics/apps.json``.

One row per app whose run is ok: the distinct passages it ranked and how many of them are
unlabelled (their document is not in the data set, or they have no text: never counted
relevant), the questions that got fewer than ``k`` passages and those that got none (their
missing ranks count as misses), the ties a TREC run had re-sorted (trec_eval's order: score
descending, then docno descending), the versions the app reported, and whether the rankings
changed since the last run of the same app (a live service that answers differently each time:
its numbers cannot be reproduced). Nothing when no app ran.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEADER = ("| app | passages ranked | unlabelled | questions with fewer than k | with none | ties re-sorted | "
          "versions | rankings since the last run |")


def render_apps(apps: Mapping[str, Mapping[str, Any]]) -> str:
    """The section as Markdown (module docstring); empty text for no apps."""
    if not apps:
        return ""
    lines = ["## Your apps", "",
             "Each app's passages are scored by the span labels on their own text (docs/own-app.md). A passage whose "
             "document is not in the data set, or that has no text, is unlabelled: counted here, never relevant.", "",
             HEADER, "|" + "---|" * HEADER.count(" | ") + "---|"]
    for name, a in sorted(apps.items()):
        changed = "changed: not reproducible" if a.get("changed") else "unchanged"
        lines.append(f"| {name} | {a.get('passages', 0)} | {a.get('unlabelled', 0)} | {a.get('short', 0)} | "
                     f"{a.get('missing', 0)} | {a.get('ties_resorted', 0)} | {', '.join(a.get('versions', [])) or '-'} | "
                     f"{changed} |")
    return "\n".join(lines) + "\n"
