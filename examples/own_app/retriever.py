"""The team's retriever: Markdown paragraphs of a corpus folder ranked by TF-IDF cosine.

Chunking: every ``*.md`` file under the corpus folder (sorted by path) is split at blank lines;
each block, stripped of surrounding whitespace, is one passage, so a passage's text is an exact
substring of its file. Headings (a block that is one line starting with ``#``) and blocks shorter
than ``min_paragraph_chars`` characters (rules, one-line captions) are left out.

Scoring: tokens are the lower-cased runs of letters, digits and underscores. A term's weight in
a passage is ``tf * idf`` with ``idf = ln((1 + N) / (1 + df)) + 1`` (N passages, df of them
holding the term) and ``tf`` the raw count, or ``1 + ln(count)`` when ``sublinear_tf`` is set;
every passage vector is scaled to unit length, and so is the question's, so a score is the
cosine of the two (0 to 1). Passages that share no term with the question are not returned;
the rest are ranked by score rounded to 6 decimals, ties in corpus order (file path, then
position), so the same corpus and question always give the same ranking.

Each hit is a LangChain ``Document`` with ``page_content`` the passage, ``id`` ``DOC#pN`` (the
N-th block of the file, from 0, counting the blocks left out too, so a paragraph keeps its id
whatever ``min_paragraph_chars`` is) and ``metadata`` ``{"doc": DOC, "score": s}``, ``DOC``
the file's path relative to the corpus folder (``guides/fare-capping.md``).
"""
from __future__ import annotations

import math
import re
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import PrivateAttr

from own_app import __version__

__all__ = ["Paragraph", "ParagraphTfidfRetriever", "TfidfIndex", "__version__", "get_retriever", "is_heading", "paragraphs",
           "retrieve", "tokens"]

TOKEN = re.compile(r"[a-z0-9_]+")
BLANK_LINE = re.compile(r"\n(?:[ \t]*\n)+")  # one or more blank (or whitespace-only) lines
SCORE_DECIMALS = 6


def tokens(text: str) -> list[str]:
    """The terms of ``text``: lower-cased runs of letters, digits and underscores, in order."""
    return TOKEN.findall(text.lower())


def is_heading(block: str) -> bool:
    """Whether a block is a Markdown heading alone: one line starting with ``#``."""
    return block.startswith("#") and "\n" not in block


@dataclass(frozen=True)
class Paragraph:
    """One passage: its document (path relative to the corpus folder), its id and its text."""

    doc: str
    id: str
    text: str


def paragraphs(corpus: Path, *, min_chars: int) -> list[Paragraph]:
    """Every paragraph (block between blank lines, stripped) of at least ``min_chars`` characters,
    headings left out, of the ``*.md`` files under ``corpus``: files in sorted path order,
    paragraphs in file order. Raises ``FileNotFoundError`` when ``corpus`` holds no Markdown file."""
    files = sorted(corpus.rglob("*.md"))
    if not files:
        raise FileNotFoundError(f"no *.md file under {corpus}")
    out: list[Paragraph] = []
    for path in files:
        doc = path.relative_to(corpus).as_posix()
        blocks = [b.strip() for b in BLANK_LINE.split(path.read_text(encoding="utf-8"))]
        out.extend(Paragraph(doc=doc, id=f"{doc}#p{n}", text=b) for n, b in enumerate(blocks)
                   if len(b) >= min_chars and not is_heading(b))
    return out


def _weights(counts: Counter[str], idf: dict[str, float], *, sublinear_tf: bool) -> dict[str, float]:
    """Unit-length TF-IDF weights of one text's term counts (terms unknown to ``idf`` dropped)."""
    raw = {t: (1.0 + math.log(c) if sublinear_tf else float(c)) * idf[t] for t, c in counts.items() if t in idf}
    norm = math.sqrt(sum(w * w for w in raw.values()))
    return {t: w / norm for t, w in raw.items()} if norm > 0 else {}


class TfidfIndex:
    """An inverted index of unit-length TF-IDF passage vectors (module docstring): for each
    term, the passages holding it and the term's weight in each. Read-only once built, so one
    index serves any number of threads."""

    def __init__(self, items: list[Paragraph], *, sublinear_tf: bool) -> None:
        self.items = items
        self.sublinear_tf = sublinear_tf
        counts = [Counter(tokens(p.text)) for p in items]
        df: Counter[str] = Counter(t for c in counts for t in c)
        n = len(items)
        self.idf = {t: math.log((1 + n) / (1 + d)) + 1.0 for t, d in sorted(df.items())}
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for i, c in enumerate(counts):
            for t, w in _weights(c, self.idf, sublinear_tf=sublinear_tf).items():
                rows, ws = postings.setdefault(t, ([], []))
                rows.append(i)
                ws.append(w)
        self.postings = {t: (np.asarray(r, dtype=np.int64), np.asarray(w, dtype=np.float64))
                         for t, (r, w) in postings.items()}

    def search(self, question: str, top_n: int) -> list[tuple[Paragraph, float]]:
        """The ``top_n`` best passages for ``question`` with their cosine (rounded to
        :data:`SCORE_DECIMALS`), best first, ties in corpus order; only passages sharing a term."""
        query = _weights(Counter(tokens(question)), self.idf, sublinear_tf=self.sublinear_tf)
        scores = np.zeros(len(self.items), dtype=np.float64)
        touched = np.zeros(len(self.items), dtype=bool)
        for t in sorted(query):  # a fixed order of additions: the same floats on every run
            rows, ws = self.postings[t]
            scores[rows] += query[t] * ws
            touched[rows] = True
        rounded = np.round(scores, SCORE_DECIMALS)
        candidates = np.flatnonzero(touched)
        order = candidates[np.lexsort((candidates, -rounded[candidates]))][:top_n]
        return [(self.items[i], float(rounded[i])) for i in order]


class ParagraphTfidfRetriever(BaseRetriever):
    """A LangChain retriever over the Markdown paragraphs of ``corpus`` (module docstring);
    ``invoke(question)`` returns at most ``top_n`` Documents, best first. The index is built
    when the retriever is made."""

    corpus: str
    top_n: int = 10
    min_paragraph_chars: int = 40
    sublinear_tf: bool = True

    _index: TfidfIndex = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        items = paragraphs(Path(self.corpus), min_chars=self.min_paragraph_chars)
        self._index = TfidfIndex(items, sublinear_tf=self.sublinear_tf)

    @property
    def n_passages(self) -> int:
        """How many passages the index holds."""
        return len(self._index.items)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content=p.text, id=p.id, metadata={"doc": p.doc, "score": s})
                for p, s in self._index.search(query, self.top_n)]


_RETRIEVERS: dict[tuple[str, int, int, bool], ParagraphTfidfRetriever] = {}
_LOCK = threading.Lock()


def get_retriever(corpus: str = "data/corpus", *, top_n: int = 10, min_paragraph_chars: int = 40,
                  sublinear_tf: bool = True) -> ParagraphTfidfRetriever:
    """The retriever of these settings, built on first use and kept for the life of the process
    (one per settings: a sweep over them in one process builds each once)."""
    key = (str(Path(corpus).resolve()), top_n, min_paragraph_chars, sublinear_tf)
    with _LOCK:
        if key not in _RETRIEVERS:
            _RETRIEVERS[key] = ParagraphTfidfRetriever(corpus=corpus, top_n=top_n,
                                                       min_paragraph_chars=min_paragraph_chars,
                                                       sublinear_tf=sublinear_tf)
        return _RETRIEVERS[key]


def retrieve(question: str, *, qid: str, k: int, top_n: int = 10, corpus: str = "data/corpus",
             min_paragraph_chars: int = 40, sublinear_tf: bool = True) -> list[Document]:
    """rag-ablation's ``method: python`` contract: the ``k`` best passages for ``question``
    (``qid`` is its id, unused here) as LangChain Documents, best first; at most ``top_n`` of
    them, whatever ``k`` is. ``corpus`` is relative to the working directory (the repository
    when DVC runs the stage)."""
    del qid
    retriever = get_retriever(corpus, top_n=top_n, min_paragraph_chars=min_paragraph_chars, sublinear_tf=sublinear_tf)
    return retriever.invoke(question)[:k]
