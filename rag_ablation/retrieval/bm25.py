"""BM25 over chunks: two implementations behind a registry (the tokenizers are in
``rag_ablation.data.text``).

Implementations (``IMPLEMENTATIONS``):

- ``rank_bm25``: the reference, ``rank_bm25.BM25Okapi(k1, b, epsilon)``. Its idf is
  ``log((N - n + 0.5) / (n + 0.5))``; a term in more than half the chunks would get a negative idf
  and is floored at ``epsilon * mean idf``.
- ``bm25s``: the same formula through bm25s (``method="atire"`` scoring with
  ``idf_method="robertson"``), about two orders of magnitude faster. bm25s floors negative idf at
  0, so its scores equal ``rank_bm25``'s when ``epsilon = 0``.

The stored index is a folder (``save_bm25``, ``open_bm25``): ``chunk_ids.json`` (chunk ids and
tokenizer name; position i of the index is chunk ``chunk_ids[i]``) and either ``tokens.jsonl``
(line i: chunk i's tokens as a JSON list; by default the scorer is rebuilt from them at query time, which takes
milliseconds on the example and needs no pickle) or ``bm25s/``.

For corpora too large to rebuild and hold in RAM (``bm25.mmap: true``, impl ``bm25s``), the bm25
stage saves a bm25s index instead (``BM25sScorer.save``: bm25s' own ``save``, the score matrix
as three ``.npy`` arrays written without pickle, the vocabulary and parameters as JSON, no
corpus) and retrieval opens it memory-mapped (``load_bm25s``): a query then reads only the
columns of its own terms from disk, into page cache the OS may drop again. Its scores equal the in-memory scorer's exactly (same
arrays).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from rag_ablation.core.config import Bm25Config, ConfigError
from rag_ablation.core.errors import InvalidData, MissingInput, lookup
from rag_ablation.core.io import numbered_lines, read_json, replaced_folder, write_json, write_text

class Scorer:
    """Scores every chunk for a tokenized query: ``scores(tokens) -> array of len(chunks)``."""

    def scores(self, query_tokens: list[str]) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError


class RankBM25Scorer(Scorer):
    def __init__(self, corpus_tokens: Sequence[list[str]], *, k1: float, b: float, epsilon: float) -> None:
        from rank_bm25 import BM25Okapi

        self._bm25 = BM25Okapi(list(corpus_tokens), k1=k1, b=b, epsilon=epsilon)

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        return np.asarray(self._bm25.get_scores(query_tokens), dtype=np.float64)


class BM25sScorer(Scorer):
    def __init__(self, corpus_tokens: Sequence[list[str]], *, k1: float, b: float, epsilon: float = 0.0) -> None:
        import bm25s

        if epsilon != 0.0:
            raise ConfigError(
                f"the bm25s implementation floors negative idf at 0, found epsilon={epsilon}; "
                "set bm25.epsilon to 0 or use impl rank_bm25"
            )
        self._vocab: dict[str, int] = {}
        ids = [[self._vocab.setdefault(t, len(self._vocab)) for t in toks] for toks in corpus_tokens]
        self._n = len(ids)
        self._bm25 = bm25s.BM25(k1=k1, b=b, method="atire", idf_method="robertson")
        self._bm25.index(bm25s.tokenization.Tokenized(ids=ids, vocab=self._vocab), show_progress=False)

    @property
    def n_chunks(self) -> int:
        return self._n

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        known = [self._vocab[t] for t in query_tokens if t in self._vocab]
        if not known:
            return np.zeros(self._n, dtype=np.float64)
        return np.asarray(self._bm25.get_scores(known), dtype=np.float64)

    def save(self, folder: Path) -> None:
        """Write the index with bm25s' own ``save`` into ``folder``: ``data``/``indices``/``indptr``
        ``.csc.index.npy`` (numpy, ``allow_pickle=False``), ``vocab.index.json`` (token -> id, in
        first-seen order) and ``params.index.json`` (k1, b, method, number of chunks, bm25s
        version). No corpus text. The same tokens and parameters give byte-identical files."""
        self._bm25.save(str(folder), corpus=None, allow_pickle=False, show_progress=False)


def load_bm25s(folder: Path, *, k1: float, b: float, mmap: bool = True) -> BM25sScorer:
    """The scorer saved by ``BM25sScorer.save`` in ``folder``, with its score arrays
    memory-mapped (``mmap=True``, read-only: pages are read as queries touch them) or read into
    RAM. Scores equal those of the scorer that was saved. A missing folder raises
    ``MissingInput``; one built with another k1, b or scoring method (params changed since)
    raises ``InvalidData``; both messages say to rebuild it."""
    import bm25s

    folder = Path(folder)
    params_file = folder / "params.index.json"
    if not params_file.is_file():
        raise MissingInput(f"{folder}: no bm25s index (expected {params_file.name} and the .npy arrays "
                           f"BM25sScorer.save writes); rebuild it")
    stored = read_json(params_file)
    expected = {"k1": k1, "b": b, "method": "atire", "idf_method": "robertson"}
    found = {key: stored.get(key) for key in expected}
    if found != expected:
        raise InvalidData(f"{folder}: bm25s index built with {found}, expected {expected}; rebuild it")
    scorer = BM25sScorer.__new__(BM25sScorer)  # no corpus to index: the arrays come from disk
    scorer._bm25 = bm25s.BM25.load(str(folder), mmap=mmap, load_corpus=False)
    scorer._vocab = dict(scorer._bm25.vocab_dict)
    scorer._n = int(scorer._bm25.scores["num_docs"])
    return scorer


IMPLEMENTATIONS: dict[str, Callable[..., Scorer]] = {"rank_bm25": RankBM25Scorer, "bm25s": BM25sScorer}


def make_scorer(impl: str, corpus_tokens: Sequence[list[str]], *, k1: float, b: float, epsilon: float) -> Scorer:
    """Build the named implementation over tokenized chunks; unknown names list valid ones."""
    if not corpus_tokens:
        raise InvalidData("cannot build a BM25 index over zero chunks: the chunking produced none; check the corpus")
    cls = lookup(IMPLEMENTATIONS, impl, "BM25 implementation")
    return cls(corpus_tokens, k1=k1, b=b, epsilon=epsilon)


def save_bm25(folder: Path, *, chunk_ids: list[str], tokens: list[list[str]], tokenizer: str,
              bm25: Bm25Config) -> None:
    """Write the BM25 index folder, all or nothing (``replaced_folder``): ``chunk_ids.json``,
    then ``tokens.jsonl`` when ``bm25.mmap`` is false, or ``bm25s/`` (the bm25s index built over
    ``tokens`` with ``bm25.k1`` and ``bm25.b``, ``BM25sScorer.save``; the tokens are not kept)
    when it is true. The same inputs give the same bytes."""
    if len(chunk_ids) != len(tokens):
        raise ValueError(f"{len(chunk_ids)} chunk ids but {len(tokens)} token lists")
    scorer = make_scorer("bm25s", tokens, k1=bm25.k1, b=bm25.b, epsilon=0.0) if bm25.mmap else None
    with replaced_folder(folder) as tmp:
        write_json(tmp / "chunk_ids.json", {"chunk_ids": chunk_ids, "tokenizer": tokenizer})
        if isinstance(scorer, BM25sScorer):
            scorer.save(tmp / "bm25s")
        else:  # compact, one chunk per line: indented JSON took 12x the bytes and memory
            write_text(tmp / "tokens.jsonl", "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tokens))


def open_bm25(folder: Path, bm25: Bm25Config) -> tuple[Scorer, list[str]]:
    """(scorer, chunk ids) from ``save_bm25``'s folder, as ``bm25`` asks: rebuilt from
    ``tokens.jsonl`` with ``bm25.impl`` (``mmap`` false), or bm25s' arrays memory-mapped from
    ``bm25s/`` (``mmap`` true; ``load_bm25s`` checks they were built with this k1 and b).

    A folder written with the other ``mmap`` setting, or whose chunk ids do not match its
    index, raises an error that says to rerun the bm25 stage."""
    folder = Path(folder)
    meta_file = folder / "chunk_ids.json"
    if not meta_file.is_file():
        raise MissingInput(f"{folder}: no BM25 index (expected {meta_file.name}); run the bm25 stage "
                           "(dvc repro) to build it")
    ids = read_json(meta_file)["chunk_ids"]
    scorer: Scorer
    if bm25.mmap:
        mapped = load_bm25s(folder / "bm25s", k1=bm25.k1, b=bm25.b, mmap=True)
        scorer, n = mapped, mapped.n_chunks
    else:
        tokens_file = folder / "tokens.jsonl"
        if not tokens_file.is_file():
            raise InvalidData(f"{folder}: holds a memory-mapped bm25s index but no tokens, and bm25.mmap is "
                              "false; rerun the bm25 stage (dvc repro) or set bm25.mmap to true")
        tokens = []
        for number, line in numbered_lines(tokens_file):
            try:
                tokens.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise InvalidData(f"{tokens_file} line {number}: not valid JSON ({e.msg} at column {e.colno}), "
                                  "expected one JSON list of tokens per chunk; the index is damaged: rerun the "
                                  "bm25 stage (dvc repro)") from None
        n = len(tokens)
        scorer = make_scorer(bm25.impl, tokens, k1=bm25.k1, b=bm25.b, epsilon=bm25.epsilon)
    if n != len(ids):
        raise InvalidData(f"{folder}: the BM25 index has {n} chunks but {len(ids)} chunk ids; rerun the bm25 "
                          "stage (dvc repro)")
    return scorer, ids


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(index, score) of the ``k`` best scores, best first; ties broken by lower index, so the
    order is deterministic. ``k`` larger than the corpus returns every chunk. Only the
    candidates at or above the k-th best score are sorted (``np.partition``), not the corpus."""
    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return []
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        cand = np.flatnonzero(scores >= kth)
    else:
        cand = np.arange(n)
    order = cand[np.lexsort((cand, -scores[cand]))][:k]
    return [(int(i), float(scores[i])) for i in order]
