"""Values in Hydra's override grammar, which ``dvc exp run -S`` parses: the switches the BEIR
import prints (``rag_ablation.commands.import_data``) and the COVID-QA anchors' commands
(``rag_ablation.datasets.covidqa_anchors``). No stage imports it."""
from __future__ import annotations

import re


HYDRA_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*|-?[0-9]+(\.[0-9]+)?")
"""A value Hydra's override grammar reads back as written, unquoted (but :data:`HYDRA_WORDS`)."""
HYDRA_WORDS = ("true", "false", "null", "inf", "nan")
"""Words Hydra reads as a boolean, null or float: quoted when they are strings."""


def hydra_value(value: object) -> str:
    """``value`` (params: dicts, lists, strings, numbers, booleans, None) in Hydra's override
    grammar, which ``dvc exp run -S`` parses: ``{a: 1, b: {}}``, ``[x, y]``, ``null``; a string
    that is not a plain word or number is double-quoted with its double quotes and backslashes
    escaped (the shell quoting is ``shlex.quote``'s, around the whole switch)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {hydra_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(hydra_value(v) for v in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if isinstance(value, (int, float)) or (HYDRA_PLAIN.fullmatch(text) and text.lower() not in HYDRA_WORDS):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
