"""``method: trec`` and ``method: file``: what a team's app already wrote, read from files.

``trec``: a run file of six whitespace-separated columns ``qid Q0 docno rank score tag`` and a
passages file of JSON lines ``{"id": docno, "doc": ..., "text": ...}`` naming every docno of the
run. Each question's lines are ordered as trec_eval orders them, whatever the rank column and
the line order say: by score descending, a tie broken by docno descending; how many questions
had a tie so broken is reported. A docno repeated within one question, a non-number score, a
line with another column count and a docno missing from the passages file are refused, each
with its line number; so is a question id that is not in the question set (unless it is one of
the set's questions, nothing of the run can be scored).

``file``: one JSON line per question, ``{"id", "answer", "passages": [{"doc", "text", "id"?,
"score"?}, ...]}``: the answer the app gave and the passages it was given, in the order given.

Both return one reply per question id, as the called methods do: ``{"hits", "answer"}``.
"""
from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from rag_ablation.core.errors import InvalidData


def _lines(path: Path) -> list[tuple[int, str]]:
    if not path.is_file():
        raise InvalidData(f"{path}: no such file; write it, or fix the path in params.yaml (apps.<name>)")
    return [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]


def _json_lines(path: Path, expected: str) -> Iterator[tuple[int, str, Any]]:
    """(line number, line, parsed JSON) of each non-blank line of ``path``; a line that is not
    JSON raises ``InvalidData`` naming the file, the line and ``expected``."""
    for n, line in _lines(path):
        try:
            yield n, line, json.loads(line)
        except json.JSONDecodeError as e:
            raise InvalidData(f"{path}, line {n}: not JSON ({e.msg}); expected {expected}") from None


def read_passages(path: Path) -> dict[str, dict[str, Any]]:
    """docno -> ``{"doc", "text", "id"}`` from a passages JSON lines file."""
    out: dict[str, dict[str, Any]] = {}
    for n, line, obj in _json_lines(path, "{\"id\", \"doc\", \"text\"}"):
        if not isinstance(obj, dict) or not all(isinstance(obj.get(k), str) and obj.get(k) for k in ("id", "doc")) \
                or not isinstance(obj.get("text"), str):
            raise InvalidData(f"{path}, line {n}: got {line[:120]!r}; expected {{\"id\": docno, \"doc\": document, "
                              f"\"text\": passage text}} with non-empty id and doc")
        if obj["id"] in out:
            raise InvalidData(f"{path}, line {n}: id {obj['id']!r} appears twice; expected each passage once")
        out[obj["id"]] = {"id": obj["id"], "doc": obj["doc"], "text": obj["text"]}
    return out


def read_trec(run: Path, passages: Path, *, questions: Collection[str]) -> tuple[dict[str, dict[str, Any]], int]:
    """(question id -> ``{"hits", "answer": None}``, number of questions whose order had a tie
    broken by docno) from a TREC run and its passages (module docstring)."""
    texts = read_passages(passages)
    lines: dict[str, list[tuple[float, str]]] = {}
    seen: dict[tuple[str, str], int] = {}
    unknown: list[str] = []
    for n, line in _lines(run):
        cols = line.split()
        if len(cols) != 6:
            raise InvalidData(f"{run}, line {n}: {len(cols)} column(s) in {line[:120]!r}; expected six: "
                              f"qid Q0 docno rank score tag")
        qid, _, docno, _, score, _ = cols
        try:
            value = float(score)
        except ValueError:
            raise InvalidData(f"{run}, line {n}: score {score!r} is not a number") from None
        if (qid, docno) in seen:
            raise InvalidData(f"{run}, line {n}: docno {docno!r} repeated for question {qid} (first at line "
                              f"{seen[(qid, docno)]}); trec_eval would count it twice: keep one line per docno")
        seen[(qid, docno)] = n
        if docno not in texts:
            raise InvalidData(f"{run}, line {n}: docno {docno!r} is not in {passages}; add its id, doc and text there")
        if qid not in questions:
            unknown.append(qid)
            continue
        lines.setdefault(qid, []).append((value, docno))
    if unknown:
        names = sorted(set(unknown))
        raise InvalidData(f"{run}: {len(names)} question id(s) not in the question set ({', '.join(names[:10])}); "
                          f"expected the ids of the data set's questions: is the run of another question set?")
    out: dict[str, dict[str, Any]] = {}
    ties = 0
    for qid, rows in lines.items():
        # trec_eval's order: docno descending, then (a stable sort) score descending
        ordered = sorted(sorted(rows, key=lambda r: r[1], reverse=True), key=lambda r: -r[0])
        scores = [s for s, _ in ordered]
        ties += len(set(scores)) < len(scores)
        out[qid] = {"hits": [{**texts[d], "score": s} for s, d in ordered], "answer": None}
    return out, ties


def read_answers(path: Path, *, questions: Collection[str]) -> dict[str, dict[str, Any]]:
    """question id -> ``{"hits", "answer"}`` from an app's answers file (module docstring)."""
    out: dict[str, dict[str, Any]] = {}
    for n, line, obj in _json_lines(path, "{\"id\", \"answer\", \"passages\"}"):
        if not isinstance(obj, Mapping) or not isinstance(obj.get("id"), str) or not isinstance(obj.get("answer"), str) \
                or not isinstance(obj.get("passages"), list):
            raise InvalidData(f"{path}, line {n}: got {line[:120]!r}; expected {{\"id\": question id, \"answer\": "
                              f"text, \"passages\": [{{\"doc\", \"text\"}}, ...]}}")
        if obj["id"] not in questions:
            raise InvalidData(f"{path}, line {n}: question id {obj['id']!r} is not in the question set; expected "
                              f"the ids of the data set's questions")
        if obj["id"] in out:
            raise InvalidData(f"{path}, line {n}: question {obj['id']!r} answered twice; keep one line per question")
        out[obj["id"]] = {"hits": obj["passages"], "answer": obj["answer"]}
    return out
