"""Reading params.yaml safely, with errors that name the missing or wrong key."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

CONFIG_KEY = re.compile(r"^[a-z0-9_]+$")


class ParamsError(ValueError):
    """params.yaml is missing, unparsable, or lacks a key a stage needs."""


def load_params(path: Path = Path("params.yaml")) -> dict[str, Any]:
    """The whole params file, parsed with ``yaml.safe_load`` (no arbitrary objects)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ParamsError(f"{path} not found: run the stage from the repository root") from None
    except yaml.YAMLError as e:
        raise ParamsError(f"{path} is not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ParamsError(f"{path} must hold a mapping of keys, found {type(data).__name__}")
    return data


def get(params: dict[str, Any], dotted: str) -> Any:
    """``params["a"]["b"]`` for ``"a.b"``; a missing key names the full dotted path."""
    node: Any = params
    for i, part in enumerate(dotted.split(".")):
        if not isinstance(node, dict) or part not in node:
            where = ".".join(dotted.split(".")[:i]) or "the top level"
            raise ParamsError(f"params.yaml: key {dotted!r} is missing (no {part!r} under {where})")
        node = node[part]
    return node


def check_config_keys(section: dict[str, Any], name: str) -> None:
    """Config names must match ``[a-z0-9_]+``: a dot breaks DVC's params paths, a ``+`` or ``-``
    breaks ``dvc exp run -S``."""
    bad = [k for k in section if not isinstance(k, str) or not CONFIG_KEY.match(k)]
    if bad:
        raise ParamsError(
            f"params.yaml: {name} has key(s) {', '.join(map(repr, bad))}; "
            "use only lowercase letters, digits and underscores"
        )
