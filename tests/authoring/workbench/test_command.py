"""`rag-ablation label`'s command line: where it writes, where it listens."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from rag_ablation.commands.label import HANDBOOK, bind, build_parser, dataset_files, inside_data
from rag_ablation.commands.main import COMMANDS
from rag_ablation.core.errors import UserError


def test_registered_with_a_random_port_by_default():
    assert COMMANDS["label"].module == "rag_ablation.commands.label"
    args = build_parser("rag-ablation label").parse_args([])
    assert args.port == 0 and args.questions is None


def test_it_listens_on_127_0_0_1_only():
    sock = bind(0)
    try:
        host, port = sock.getsockname()
        assert host == "127.0.0.1" and port > 0
    finally:
        sock.close()


def test_the_data_sets_files():
    assert dataset_files("handbook") == HANDBOOK
    mine = dataset_files("mydocs")
    assert mine == {"corpus": Path("data/imported/mydocs/corpus"), "questions": Path("data/imported/mydocs/questions.jsonl"),
                    "audit": Path("data/imported/mydocs/audit.jsonl")}


@pytest.mark.bad_input
def test_it_refuses_to_write_outside_data_or_to_covidqa(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert inside_data(Path("data/questions/x.jsonl"), "--questions") == Path("data/questions/x.jsonl")
    for bad in (Path("../elsewhere.jsonl"), Path("data/../params.yaml"), Path("/etc/passwd")):
        with pytest.raises(UserError, match="is outside the project's data/ folder"):
            inside_data(bad, "--questions")
    with pytest.raises(UserError, match="'covidqa' is read in place and has no question file to write"):
        dataset_files("covidqa")


@pytest.mark.bad_input
def test_a_taken_port_is_one_message():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        with pytest.raises(UserError, match=rf"cannot listen on 127.0.0.1:{taken.getsockname()[1]} .*pass another --port"):
            bind(taken.getsockname()[1]).close()
    finally:
        taken.close()
