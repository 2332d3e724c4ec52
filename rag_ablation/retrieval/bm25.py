"""BM25 over chunks: two implementations behind a registry (the tokenizers are in
``rag_ablation.text``).

Implementations (``IMPLEMENTATIONS``):

- ``rank_bm25``: the reference, ``rank_bm25.BM25Okapi(k1, b, epsilon)``. Its idf is
  ``log((N - n + 0.5) / (n + 0.5))``; a term in more than half the chunks would get a negative idf
  and is floored at ``epsilon * mean idf``.
- ``bm25s``: the same formula through bm25s (``method="atire"`` scoring with
  ``idf_method="robertson"``), about two orders of magnitude faster. bm25s floors negative idf at
  0, so its scores equal ``rank_bm25``'s when ``epsilon = 0``.

The stored index is JSON (chunk ids, token lists, parameters); the scorer is rebuilt from it at
query time, which takes milliseconds and needs no pickle.

For corpora too large to rebuild and hold in RAM, a ``bm25s`` scorer can also be saved as a
bm25s index folder (``BM25sScorer.save``: bm25s' own ``save``, the score matrix as three ``.npy``
arrays written without pickle, the vocabulary and parameters as JSON, no corpus) and opened
memory-mapped (``load_bm25s``): a query then reads only the columns of its own terms from disk.
Its scores equal the in-memory scorer's exactly (same arrays). The pipeline's stages do not use
it yet (the bm25 stage still stores tokens; see ``load_bm25s``).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rag_ablation.config import ConfigError
from rag_ablation.errors import InvalidData, MissingInput, lookup

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
    stored = json.loads(params_file.read_text(encoding="utf-8"))
    expected = {"k1": k1, "b": b, "method": "atire", "idf_method": "robertson"}
    found = {key: stored.get(key) for key in expected}
    if found != expected:
        raise InvalidData(f"{folder}: bm25s index built with {found}, expected {expected}; rebuild it")
    scorer = BM25sScorer.__new__(BM25sScorer)  # no corpus to index: the arrays come from disk
    scorer._bm25 = bm25s.BM25.load(str(folder), mmap=mmap, load_corpus=False)
    scorer._vocab = dict(scorer._bm25.vocab_dict)
    scorer._n = int(scorer._bm25.scores["num_docs"])
    return scorer


IMPLEMENTATIONS: dict[str, type[Scorer]] = {"rank_bm25": RankBM25Scorer, "bm25s": BM25sScorer}


def make_scorer(impl: str, corpus_tokens: Sequence[list[str]], *, k1: float, b: float, epsilon: float) -> Scorer:
    """Build the named implementation over tokenized chunks; unknown names list valid ones."""
    if not corpus_tokens:
        raise InvalidData("cannot build a BM25 index over zero chunks: the chunking produced none; check the corpus")
    cls = lookup(IMPLEMENTATIONS, impl, "BM25 implementation")
    return cls(corpus_tokens, k1=k1, b=b, epsilon=epsilon)


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
