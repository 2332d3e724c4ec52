"""Folders replaced whole (rag_ablation.core.io.replaced_folder), JSON-lines files read by
``\\n`` only (``numbered_lines``, the one reader of every JSON-lines file), and the rounding of
every float the writers write (``rounded_floats``)."""
from __future__ import annotations

import json
import math
import re
from decimal import ROUND_HALF_EVEN, Decimal

import pytest

from rag_ablation.core.config import OUTPUT_DECIMALS, P_VALUE_DIGITS, P_VALUE_PREFIX
from rag_ablation.core.errors import InvalidData, MissingInput, UserError
from rag_ablation.core.io import (dumps, numbered_json_lines, numbered_lines, read_json, read_jsonl, read_output,
                                  replaced_folder, round_decimals, round_significant, rounded_floats, write_json,
                                  write_jsonl)
from rag_ablation.core.stage_costs import read_costs
from rag_ablation.data.chunks import Chunk, load_chunks

RAW = ["\x85", "\u2028", "\u2029"]
"""Line breaks to ``str.splitlines`` that JSON allows raw inside strings, and that
``json.dumps(..., ensure_ascii=False)`` (``write_jsonl``) writes raw."""
CONTROL = ["\x0b", "\x0c", "\x1c"]
"""Line breaks to ``str.splitlines`` too; ``json.dumps`` escapes them and JSON forbids them raw."""


def test_a_finished_block_replaces_the_folder_and_leaves_nothing_beside_it(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "stale.txt").write_text("old")
    with replaced_folder(tmp_path / "out") as tmp:
        (tmp / "new.txt").write_text("new")
        assert not (tmp_path / "out" / "new.txt").exists(), "nothing is visible before the end"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_failed_block_leaves_the_old_folder_and_no_staging(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "kept.txt").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with replaced_folder(tmp_path / "out") as tmp:
            (tmp / "half.txt").write_text("half")
            raise KeyboardInterrupt
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["kept.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_lines_end_at_newline_only(tmp_path):
    p = tmp_path / "f.txt"
    odd = "".join(RAW + CONTROL) + "\x1d\x1e"
    p.write_bytes(f"a{odd}b\r\n\n  \r\nc{odd}\ne".encode())
    assert list(numbered_lines(p)) == [(1, f"a{odd}b"), (4, f"c{odd}"), (5, "e")]
    assert list(numbered_lines(p, skip_blank=False)) == [(1, f"a{odd}b"), (2, ""), (3, "  "), (4, f"c{odd}"),
                                                         (5, "e")]


def test_a_chunks_file_round_trips_with_every_line_break_character(tmp_path):
    """Chunks are written raw (ensure_ascii=False): text holding U+0085, U+2028 or U+2029 (web
    text often does) must come back whole, on its own line number."""
    chunks = [Chunk(id=f"t/d.md#{i}", doc="t/d.md", track="t", start=10 * i, end=10 * i + 9,
                    heading_path=(f"Head{c}ing",), heading="", body=f"one{c}two {c}three")
              for i, c in enumerate(RAW + CONTROL)]
    path = tmp_path / "chunks.jsonl"
    write_jsonl(path, [c.to_json() for c in chunks])
    assert all(c in path.read_text(encoding="utf-8") for c in RAW), "written raw, as the chunk stage writes"
    assert read_jsonl(path) == [c.to_json() for c in chunks]
    assert load_chunks(path) == chunks
    rows, problems = numbered_json_lines(path)
    assert [n for n, _ in rows] == list(range(1, len(chunks) + 1)) and problems == []


@pytest.mark.bad_input
@pytest.mark.parametrize("char", RAW)
def test_a_bad_line_after_a_raw_line_break_is_named_with_its_file_and_line(tmp_path, char):
    path = tmp_path / "chunks.jsonl"
    path.write_text(json.dumps({"body": f"a{char}b"}, ensure_ascii=False) + "\n\n" + '{"body": "cut sh\n',
                    encoding="utf-8")
    with pytest.raises(InvalidData) as e:
        read_jsonl(path)
    assert str(e.value) == (
        f"{path}: 1 line(s) not valid JSON, expected one JSON object per line; rerun the stage that writes "
        "the file (dvc repro) or fix the line(s):\n  line 3: not valid JSON (Unterminated string starting at "
        "at column 10)")
    assert isinstance(e.value, UserError)


@pytest.mark.bad_input
@pytest.mark.parametrize("char", CONTROL)
def test_a_raw_control_character_is_one_bad_line_with_its_own_number(tmp_path, char):
    path = tmp_path / "q.jsonl"
    path.write_text(f'{{"a": 1}}\n{{"a": "x{char}y"}}\n{{"a": 2}}\n{{"a": \n', encoding="utf-8")
    rows, problems = numbered_json_lines(path)
    assert [n for n, _ in rows] == [1, 3]
    assert problems == ["line 2: not valid JSON (Invalid control character at at column 9)",
                        "line 4: not valid JSON (Expecting value at column 7)"]
    with pytest.raises(InvalidData, match=r"q\.jsonl: 2 line\(s\) not valid JSON.*\n  line 2: .*\n  line 4: "):
        read_jsonl(path)


@pytest.mark.bad_input
def test_a_line_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    for read in (read_jsonl, numbered_json_lines, lambda p: list(numbered_lines(p))):
        with pytest.raises(InvalidData) as e:
            read(path)
        assert str(e.value) == (f"{path} line 2: not valid UTF-8 (invalid start byte at byte 8 of the line); "
                                "expected UTF-8 text: re-save the file as UTF-8")


@pytest.mark.bad_input
def test_the_cost_log_keeps_raw_line_breaks_inside_a_record(tmp_path):
    path = tmp_path / "stage_costs.jsonl"
    record = {"stage": "chunk@a", "started": 1.0, "wall_s": 1.0, "cpu_s": 1.0, "peak_mb": 1.0, "ok": True}
    path.write_text("".join(json.dumps({**record, "stage": f"chunk@{c}"}, ensure_ascii=False) + "\n" for c in RAW)
                    + "\n{broken\n", encoding="utf-8")
    with pytest.raises(UserError, match="^" + re.escape(f"{path}:5: not a stage cost record")):
        read_costs(path)
    path.write_text("".join(json.dumps({**record, "stage": f"chunk@{c}"}, ensure_ascii=False) + "\r\n" for c in RAW),
                    encoding="utf-8")  # a CRLF log
    assert [c.stage for c in read_costs(path)] == [f"chunk@{c}" for c in RAW]


@pytest.mark.bad_input
def test_a_damaged_bm25_token_file_is_named_and_raw_tokens_read_back(tmp_path):
    """The BM25 index's tokens.jsonl is read by ``numbered_lines`` too: raw separators inside a
    token stay in it, and a damaged line is an error naming the file and line, not a traceback."""
    from rag_ablation.core.config import Bm25Config
    from rag_ablation.retrieval.bm25 import open_bm25, save_bm25

    cfg = Bm25Config()
    tokens = [[f"a{c}b", "zinc"] for c in RAW] + [["cold"]]
    save_bm25(tmp_path / "i", chunk_ids=["c0", "c1", "c2", "c3"], tokens=tokens, tokenizer="regex", bm25=cfg)
    tokens_file = tmp_path / "i" / "tokens.jsonl"
    assert all(c in tokens_file.read_text(encoding="utf-8") for c in RAW)
    _, ids = open_bm25(tmp_path / "i", cfg)
    assert ids == ["c0", "c1", "c2", "c3"]
    tokens_file.write_text(tokens_file.read_text(encoding="utf-8")[:-5], encoding="utf-8")  # a copy cut short
    with pytest.raises(InvalidData) as e:
        open_bm25(tmp_path / "i", cfg)
    assert str(e.value) == (f"{tokens_file} line 4: not valid JSON (Unterminated string starting at at column 2), "
                            "expected one JSON list of tokens per chunk; the index is damaged: rerun the bm25 stage "
                            "(dvc repro)")


def test_a_queued_experiments_copy_shares_the_users_caches_and_data_sets(tmp_path, monkeypatch):
    """DVC runs a queued experiment in REPO/.dvc/tmp/exps/<run>/<copy>/, itself a DVC repository:
    caches and data sets are still found from REPO, so a sweep reuses the user's embeddings."""
    from rag_ablation.core.io import datasets_dir, default_cache_dir, home_repo, repo_root

    repo = tmp_path / "repo"
    copy = repo / ".dvc" / "tmp" / "exps" / "run" / "tmpab12"
    (copy / ".dvc").mkdir(parents=True)
    (copy / "stages").mkdir()
    monkeypatch.delenv("RAG_ABLATION_CACHE", raising=False)
    monkeypatch.delenv("RAG_ABLATION_DATASETS", raising=False)
    monkeypatch.chdir(copy / "stages")
    assert repo_root() == copy.resolve()
    assert home_repo() == repo.resolve()
    assert default_cache_dir() == repo.resolve() / ".cache"
    assert datasets_dir() == tmp_path.resolve() / "shared" / "datasets"
    monkeypatch.chdir(repo)
    (repo / ".dvc").mkdir(exist_ok=True)
    assert home_repo() == repo_root() == repo.resolve()


def test_read_output(tmp_path):
    good, bad, listed = tmp_path / "good.json", tmp_path / "bad.json", tmp_path / "list.json"
    good.write_text('{"a": 1}', encoding="utf-8")
    bad.write_text("{\n oops", encoding="utf-8")
    listed.write_text("[1]", encoding="utf-8")
    assert read_output(good, "stats") == {"a": 1}
    with pytest.raises(MissingInput, match="run `dvc repro stats`"):
        read_output(tmp_path / "none.json", "stats")
    with pytest.raises(InvalidData, match=r"is not valid JSON \(line 2\): regenerate it with `dvc repro stats`"):
        read_output(bad, "stats")
    with pytest.raises(InvalidData, match="must hold a JSON object"):
        read_output(listed, "stats")
    # a stage of another dvc.yaml is named as `dvc repro` takes it from the top folder
    with pytest.raises(MissingInput, match=r"run `dvc repro index/dvc.yaml:labels@base`"):
        read_output(tmp_path / "none.json", "labels@base")


def exact_decimals(x: float, places: int) -> float:
    """``x``'s exact binary value rounded half to even at ``places`` decimals, by ``decimal``."""
    return float(Decimal(x).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)) + 0.0


NOISY = [0.1 + 0.2, 1 - 1e-16, 2.5e-17, -2.5e-17, -0.0, 0.123456789, -0.9999996, 27.0106624, 1 / 3, 2 / 3, 1e6 + 0.1]
"""Floats whose text differs by the last bits: what another CPU's kernels make of the same sum."""


@pytest.mark.parametrize("x", NOISY)
def test_a_float_is_written_to_output_decimals_and_never_as_minus_zero(x):
    r = round_decimals(x, OUTPUT_DECIMALS)
    assert r == exact_decimals(x, OUTPUT_DECIMALS) and abs(r - x) <= 0.5 * 10 ** -OUTPUT_DECIMALS
    assert r != 0 or math.copysign(1, r) == 1, "a rounded zero is written 0.0, never -0.0"
    assert round_decimals(r, OUTPUT_DECIMALS) == r, "rounding twice changes nothing"
    assert len(repr(r).split(".")[1]) <= OUTPUT_DECIMALS


def test_noise_below_the_written_digits_gives_the_same_text():
    for a, b in [(0.1 + 0.2, 0.3), (1 - 1e-16, 1.0), (2.5e-17, -2.5e-17), (-0.0, 0.0), (0.5 + 3e-12, 0.5 - 3e-12)]:
        assert dumps({"x": a}) == dumps({"x": b}), (a, b)
    assert dumps({"x": -0.0}) == '{\n  "x": 0.0\n}\n'


@pytest.mark.parametrize("p", [3.14159e-9, 1e-300, 0.049996, 0.123456, 1.0, 0.0])
def test_a_p_value_keeps_its_significant_digits(p):
    r = round_significant(p, P_VALUE_DIGITS)
    assert r == (0.0 if p == 0 else float(Decimal(repr(p)).quantize(
        Decimal(1).scaleb(math.floor(math.log10(p)) - P_VALUE_DIGITS + 1), rounding=ROUND_HALF_EVEN)))
    assert (r > 0) == (p > 0), "a tiny p never becomes 0"


def test_rounded_floats_rounds_every_float_and_p_values_by_their_key():
    p_key = P_VALUE_PREFIX + "holm"
    obj = {"a": 1 / 3, "n": 7, "ok": True, "name": "x", "none": None,
           "nested": [{"b": -1e-17, p_key: 1.23456e-9}, (0.1 + 0.2, 2)],
           p_key: [2.0 / 3, 5e-20], "p95_ms": 12.3456789}
    assert rounded_floats(obj) == {
        "a": round_decimals(1 / 3, OUTPUT_DECIMALS), "n": 7, "ok": True, "name": "x", "none": None,
        "nested": [{"b": 0.0, p_key: round_significant(1.23456e-9, P_VALUE_DIGITS)}, [0.3, 2]],
        p_key: [round_significant(2 / 3, P_VALUE_DIGITS), round_significant(5e-20, P_VALUE_DIGITS)],
        "p95_ms": round_decimals(12.3456789, OUTPUT_DECIMALS)}
    assert rounded_floats(rounded_floats(obj)) == rounded_floats(obj)
    assert rounded_floats(obj)["ok"] is True and rounded_floats(obj)["n"] == 7


def test_write_json_and_write_jsonl_round_what_they_write(tmp_path):
    obj = {"estimate": 0.9999999999999999, "low": -1e-16, "p_sign": 3.0e-12, "rows": [{"x": 1 / 7}]}
    write_json(tmp_path / "a.json", obj)
    write_jsonl(tmp_path / "a.jsonl", obj["rows"])
    assert read_json(tmp_path / "a.json") == rounded_floats(obj) == {
        "estimate": 1.0, "low": 0.0, "p_sign": 3.0e-12, "rows": [{"x": round_decimals(1 / 7, OUTPUT_DECIMALS)}]}
    assert read_jsonl(tmp_path / "a.jsonl") == rounded_floats(obj["rows"])
