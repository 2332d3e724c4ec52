"""``method: python``: a team's retriever (or whole app) as a Python function.

``target`` is ``package.module:function`` (a dotted attribute path after the colon is followed,
so ``module:Class.method`` of a class works too). It is imported with each folder of ``path``
(relative to the repository) put first on ``sys.path``; only a target that the user's own params
name is ever imported. The function is called as

- ``call: retrieve``: ``fn(question, *, qid=..., k=..., **args)`` -> hits (``hits.CONTRACT``);
- ``call: ask``: ``fn(question, *, qid=..., **args)`` -> ``{"answer": str, "passages": hits}``;
- with ``batch: N``: ``fn(questions, *, qids=[...], k=..., **args)`` -> one reply per question,
  in order (N questions per call at most).

The version the app reports is the function's ``version`` attribute, else its module's
``__version__`` (None when neither exists); it is part of every cached call's key.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rag_ablation.core.config import AppConfig
from rag_ablation.core.errors import UserError


class TargetNotFound(UserError):
    """A python app's target cannot be imported or is not callable."""


def load_target(target: str, *, roots: Sequence[str], base: Path) -> tuple[Callable[..., Any], str | None]:
    """The function named by ``target`` and the version it reports. Raises ``TargetNotFound``
    naming the module, the import roots searched and the error."""
    module_name, _, attr = target.partition(":")
    folders = [str((base / r).resolve()) for r in roots]
    for folder in reversed(folders):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    searched = ", ".join(folders) if folders else "none besides the environment's"
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001  (any failure of the team's import is reported the same way)
        raise TargetNotFound(
            f"app target {target!r}: module {module_name!r} cannot be imported ({type(e).__name__}: {e}); import "
            f"roots of `path`: {searched}; fix `target` or `path` in params.yaml, or install the module") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TargetNotFound(f"app target {target!r}: module {module_name!r} has no attribute {attr!r}; "
                                 f"name a function of {module.__file__}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TargetNotFound(f"app target {target!r} is a {type(obj).__name__}, not a function; name a function")
    version = getattr(obj, "version", None) or getattr(module, "__version__", None)
    return obj, None if version is None else str(version)


class PythonCaller:
    """Calls one python app (module docstring); ``batch`` questions per call (1: one each)."""

    def __init__(self, app: AppConfig, *, base: Path) -> None:
        assert app.target is not None
        self.app = app
        self.fn, self.version = load_target(app.target, roots=app.path, base=base)
        self.batch = app.batch or 1

    def identity(self) -> dict[str, Any]:
        a = self.app
        return {"method": "python", "target": a.target, "call": a.call, "args": dict(a.args), "k": a.k,
                "version": self.version}

    def __call__(self, questions: Sequence[tuple[str, str]]) -> list[Any]:
        """The raw replies to ``questions`` ((qid, text) pairs), one each, in order."""
        a = self.app
        if a.batch:
            kwargs: dict[str, Any] = {"qids": [q for q, _ in questions], **a.args}
            if a.call == "retrieve":
                kwargs["k"] = a.k
            replies = self.fn([t for _, t in questions], **kwargs)
            if not isinstance(replies, list) or len(replies) != len(questions):
                got = f"a list of {len(replies)}" if isinstance(replies, list) else type(replies).__name__
                raise UserError(f"app target {a.target!r} (batch): asked {len(questions)} question(s), got {got}; "
                                f"expected one reply per question, in order")
            return replies
        out = []
        for qid, text in questions:
            if a.call == "retrieve":
                out.append(self.fn(text, qid=qid, k=a.k, **a.args))
            else:
                out.append(self.fn(text, qid=qid, **a.args))
        return out
