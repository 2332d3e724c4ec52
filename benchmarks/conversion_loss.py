"""What document conversion loses, measured on the handbook.

The 45 handbook documents (``data/corpus``) are rendered into PDF, DOCX and HTML
(``benchmarks/renditions.py``: PDF is Chromium's print of pandoc's HTML), each rendition is
converted back to text with ``rag_ablation.data.conversion.formats.convert``, and the converted
corpus is compared with the Markdown original in two ways.

(a) Span survival. Each span of ``data/questions/handbook.jsonl`` (a question's ``span``, or each
item of its ``spans``: 154 in all; unanswerable questions have none) survives a format when its
``match_text`` form occurs in the ``match_text`` form of the question's converted document: the
pipeline's span rule (``rag_ablation.data.text.match_text``, the form in which span labels
compare a span with chunk text: ``clean``, i.e. ligatures spelled out, soft hyphens and
zero-widths removed, line-end hyphenation before a lower-case letter joined; then backticks,
``**``, ``__`` and table pipes removed; then hyphens between two letters removed; then whitespace
collapsed). A lost span is listed with the nearest text of the converted document (difflib over
windows of the span's length in the ``match_text`` forms, an excerpt of that form) and a one-word
reason, the first that applies of (each a further transformation applied to both sides after
undoing the converter's escapes and before ``match_text``, cumulative in this order):

- ``escape``: the converter escaped a character (``\\_``, ``\\*``);
- ``quotes``: straight quotes became typographic ones (or the reverse);
- ``hyphenation``: a word broken after a hyphen at a line end before an upper-case letter or a
  digit (``TW-`` / ``E09``), which the line-end rule of ``clean`` does not join (it joins only
  before a lower-case letter) and which is not a hyphen between two letters once the line break
  is a space;
- ``spacing``: the same characters with spaces added or removed (a word split at a line end,
  two words run together);
- else where the span sits in the Markdown source: ``table`` (a pipe-table row; in a PDF,
  pdfminer reads a table's cells column by column or box by box, not row by row), ``code`` (a
  fenced code block), ``heading``, ``link`` (link text), ``list``; else ``other``.

(b) Retrieval. The configs ``dense``, ``bm25`` and ``hybrid`` of params.yaml (``retrieval:``; their
chunking, ``base``, from ``chunkings:``) are run on the original corpus and on each converted
corpus with the project's own code: ``chunking.chunk_corpus``, the embedding cache
(``embeddings.embed_cached``; torch on ``--threads`` threads), ``faiss_index.build_index``,
``bm25.make_scorer``, ``runner.run_config`` (fusion included), labels by
``scoring.labels.relevant_chunks`` with ``labels.window`` of params, per-question rows by
``scoring.scores.score_run`` and paired intervals by ``statistics.inference.paired_bootstrap_ci``
with the ``stats:`` settings of params (percentile, 10,000 resamples, seed 0, 95%). The documents
of a converted corpus keep their original ids (``<track>/<name>.md``), so chunks, labels and
questions line up; a converted document is chunked like a Markdown one (headings only where the
converter wrote Markdown headings).

Labels are the pipeline's, computed as ``stages/labels.py`` computes them: the question's
``spans`` (or ``span``) as written, passed to ``relevant_chunks``, which compares them with chunk
bodies in ``match_text`` form (a chunk is relevant when it holds the span or any
``labels.window``-character piece of it). Both sides of a comparison use the same rule.

Output: a Markdown report printed and written to ``benchmarks/results/conversion_loss.md``, and
``conversion_loss.json`` beside it, deterministic (keys sorted, no times). Times (rendering,
conversion with PDF pages per second, embedding, retrieval) are printed only.

Usage:  .venv/bin/python benchmarks/conversion_loss.py [--formats pdf,docx,html] [--keep DIR]
            [--threads 1] [--workers 2] [--no-retrieval] [--results benchmarks/results]
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import difflib  # noqa: E402
import functools  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Iterable, Mapping, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import renditions  # noqa: E402

from rag_ablation.core.config import Params, load_config  # noqa: E402
from rag_ablation.core.io import write_json, write_text  # noqa: E402
from rag_ablation.data.chunks import Chunk  # noqa: E402
from rag_ablation.data.corpus import load_corpus  # noqa: E402
from rag_ablation.data.questions import Question, load_questions  # noqa: E402
from rag_ablation.data.text import match_text, normalize  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "data" / "corpus"
QUESTIONS = REPO / "data" / "questions" / "handbook.jsonl"
RESULTS = REPO / "benchmarks" / "results"
FORMATS = ("pdf", "docx", "html")
CONFIGS = ("dense", "bm25", "hybrid")
MEASURES = {"recall@5": "hit_at_5", "MRR@10": "rr_at_10"}
GOAL_SURVIVAL = 0.95
GOAL_RECALL_LOSS = 0.02
EXCERPT = 160
_HEADING = re.compile(r"^#{1,6} ", re.MULTILINE)


# ---------------------------------------------------------------------------------- span survival


@dataclass(frozen=True)
class SpanResult:
    qid: str
    doc: str
    n: int  # which item of the question's spans (0 for ``span``)
    span: str
    survived: bool
    reason: str = ""
    where: str = ""
    nearest: str = ""
    similarity: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"id": self.qid, "doc": self.doc, "n": self.n, "span": self.span, "reason": self.reason,
                "where": self.where, "nearest": self.nearest, "similarity": round(self.similarity, 3)}


def spans_of(questions: Iterable[Question]) -> list[tuple[str, str, int, str]]:
    """(question id, doc, item number, span) for every span of every answerable question."""
    return [(q.id, q.doc or "", i, s) for q in questions if q.answerable for i, s in enumerate(q.relevant_spans)]


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_HYPHEN = re.compile(r"(?<=\w)-\s?(?=\w)")
_ESCAPE = re.compile(r"\\(?=[\\`*_{}\[\]()#+\-.!<>|~])")

# transformation applied to both the span and the document, in the order tried (module docstring);
# each includes the previous ones and ``match_text``
MECHANISMS: tuple[tuple[str, Any], ...] = (
    ("escape", lambda t: match_text(_ESCAPE.sub("", t))),
    ("quotes", lambda t: match_text(_ESCAPE.sub("", t)).translate(_QUOTES)),
    ("hyphenation", lambda t: _HYPHEN.sub("", match_text(_ESCAPE.sub("", t)).translate(_QUOTES))),
    ("spacing", lambda t: re.sub(r"\s+", "", _HYPHEN.sub("", match_text(_ESCAPE.sub("", t)).translate(_QUOTES)))),
)


def source_context(span: str, source: str) -> str:
    """Where ``span`` sits in the Markdown ``source``: table, code, heading, link, list or text
    (``other`` when it cannot be found)."""
    words = normalize(span).split(" ")
    m = re.search(r"\s+".join(re.escape(w) for w in words), source)
    if m is None:
        return "other"
    first = source.rfind("\n", 0, m.start()) + 1
    last = source.find("\n", m.end())
    lines = source[first: len(source) if last < 0 else last].splitlines()
    fences = sum(1 for line in source[:first].splitlines() if line.lstrip().startswith("```"))
    if fences % 2 == 1:
        return "code"
    if any(line.lstrip().startswith("|") for line in lines):
        return "table"
    if any(line.lstrip().startswith("#") for line in lines):
        return "heading"
    region = source[max(0, m.start() - 1): m.end() + 2]
    if "](" in region or re.search(r"\[[^\]]*$", source[first: m.start()]):
        return "link"
    if any(re.match(r"\s*(?:[-*+]|\d+[.)])\s", line) for line in lines):
        return "list"
    return "text"


def nearest_text(span: str, doc: str) -> tuple[str, float]:
    """The window of ``doc`` (both in ``match_text`` form) most like ``span`` by difflib's ratio, as an excerpt
    of at most :data:`EXCERPT` characters, and that ratio: windows of the span's length every
    eighth of it, then every character around the best."""
    n = len(span)
    if not doc or not n:
        return "", 0.0
    sm = difflib.SequenceMatcher(autojunk=False)
    sm.set_seq2(span)

    def best_of(starts: Iterable[int], best: tuple[float, int]) -> tuple[float, int]:
        for i in starts:
            sm.set_seq1(doc[i: i + n])
            if sm.real_quick_ratio() > best[0] and sm.quick_ratio() > best[0]:
                r = sm.ratio()
                if r > best[0]:
                    best = (r, i)
        return best

    last = max(0, len(doc) - n)
    step = max(1, n // 8)
    ratio, at = best_of(range(0, last + 1, step), (-1.0, 0))
    ratio, at = best_of(range(max(0, at - step), min(last, at + step) + 1), (ratio, at))
    excerpt = doc[at: at + n]
    if len(excerpt) > EXCERPT:
        excerpt = excerpt[: EXCERPT - 3] + "..."
    return excerpt, max(0.0, ratio)


def survival(spans: Sequence[tuple[str, str, int, str]], texts: Mapping[str, str],
             sources: Mapping[str, str] | None = None) -> list[SpanResult]:
    """Whether each span's ``match_text`` form occurs in the ``match_text`` form of its document
    (``texts``: doc id -> converted text; a document missing from it survives nothing): the
    pipeline's span rule. A lost span gets its reason (module docstring; ``sources``: doc id ->
    Markdown, for the context) and where it sits in the Markdown source, and its nearest text."""
    normal = {doc: match_text(t) for doc, t in texts.items()}
    out = []
    for qid, doc, n, span in spans:
        s, d = match_text(span), normal.get(doc, "")
        if s in d:
            out.append(SpanResult(qid, doc, n, span, True))
            continue
        where = source_context(span, sources[doc]) if sources and doc in sources else "other"
        reason = next((name for name, f in MECHANISMS if d and f(span) in f(texts[doc])), "")
        if not reason:
            reason = "other" if where == "text" else where
        nearest, ratio = nearest_text(s, d)
        out.append(SpanResult(qid, doc, n, span, False, reason, where, nearest, ratio))
    return out


# ------------------------------------------------------------------------------------ conversion


def convert_renditions(folder: Path, fmt: str, docs: Sequence[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """``convert`` of each rendition ``folder/<track>/<name>.<fmt>`` of ``docs`` (original ids):
    (doc id -> Converted, doc id -> error message for those that failed)."""
    from rag_ablation.data.conversion.formats import convert

    out: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for doc in docs:
        path = folder / Path(doc).with_suffix(f".{fmt}")
        try:
            out[doc] = convert(path.read_bytes(), f".{fmt}")
        except Exception as e:  # noqa: BLE001 - a failed document is reported, not fatal
            errors[doc] = f"{type(e).__name__}: {e}"
    return out, errors


# ------------------------------------------------------------------------------------- retrieval


@dataclass
class Corpus:
    """One corpus indexed for the baseline chunking: chunks, the retrievers, and what it cost."""

    name: str
    chunks: list[Chunk]
    retrievers: Any
    embedded: int = 0
    cached: int = 0
    embed_seconds: float = 0.0
    times: dict[str, float] = field(default_factory=dict)


def index_corpus(name: str, documents: Iterable[tuple[str, str, str]], params: Params, chunking: str, *,
                 load, cache) -> Corpus:
    """Chunk ``documents`` (doc id, track, text) with ``chunking`` of params, embed the chunks
    through the embedding cache, and open in memory what ``runner.open_retrievers`` opens from
    disk: the FAISS index of ``faiss:`` and the BM25 scorer of ``bm25:``."""
    from rag_ablation.retrieval.bm25 import make_scorer
    from rag_ablation.retrieval.chunking import chunk_corpus, chunk_options
    from rag_ablation.retrieval.embeddings import cache_name, embed_cached, encode
    from rag_ablation.retrieval.faiss_index import build_index, set_search_params
    from rag_ablation.retrieval.query_vectors import embed_queries
    from rag_ablation.retrieval.runner import Retrievers
    from rag_ablation.data.text import get_tokenizer

    emb = params.embedding
    chunks = chunk_corpus(documents, **chunk_options(params.chunking(chunking)))
    texts = [c.text for c in chunks]
    ids = [c.id for c in chunks]
    t0 = time.perf_counter()
    vectors, stats = embed_cached(texts, model_name=cache_name(emb), cache=cache, load=load,
                                  batch_size=emb.batch_size, progress=False)
    seconds = time.perf_counter() - t0
    index = build_index(vectors, params.faiss, threads=emb.threads)
    set_search_params(index, params.faiss)
    tokenize = get_tokenizer(params.bm25.tokenizer)
    scorer = make_scorer(params.bm25.impl, [tokenize(t) for t in texts], k1=params.bm25.k1, b=params.bm25.b,
                         epsilon=params.bm25.epsilon)
    r = Retrievers(dense_index=index, dense_ids=ids, embed_query=lambda t: encode(load(), [t])[0],
                   embed_many=lambda qs: embed_queries(qs, model_name=cache_name(emb), load=load,
                                                       batch_size=emb.batch_size, cache=cache),
                   bm25=scorer, bm25_ids=ids, tokenizer=params.bm25.tokenizer,
                   chunk_text=dict(zip(ids, texts)))
    return Corpus(name, chunks, r, stats["computed"], stats["cached"], seconds)


def score_corpus(corpus: Corpus, params: Params, questions: Sequence[Question],
                 configs: Sequence[str]) -> dict[str, list[dict]]:
    """config -> per-question rows (``score_run``) of every config on ``corpus``, with the
    pipeline's labels (``relevant_chunks`` called as ``stages/labels.py`` calls it)."""
    from rag_ablation.evaluation.scoring.labels import relevant_chunks
    from rag_ablation.evaluation.scoring.scores import score_run
    from rag_ablation.retrieval.runner import run_config

    runs = {}
    for name in configs:
        t0 = time.perf_counter()
        runs[name], _ = run_config(params.config(name), questions, corpus.retrievers)
        corpus.times[name] = time.perf_counter() - t0
    lab = params.labels
    answerable = [q for q in questions if q.answerable]
    relevant = relevant_chunks({q.id: q.spans if q.spans is not None else q.span or "" for q in answerable},
                               ((c.id, c.doc, c.body) for c in corpus.chunks), window=lab.window,
                               span_docs={q.id: q.doc or "" for q in answerable} if lab.same_doc_only else None)
    return {name: score_run(name, runs[name], relevant, questions) for name in configs}


def compare_rows(base: Sequence[Mapping], new: Sequence[Mapping], params: Params) -> dict[str, Any]:
    """Per measure: the means on both sides, the paired difference's mean and bootstrap interval
    (``stats:`` settings), and the questions that changed."""
    from rag_ablation.evaluation.statistics.comparison import bootstrap_options, column_values, pair
    from rag_ablation.evaluation.statistics.inference import paired_bootstrap_ci

    p = pair(base, new)
    ids = [r["id"] for r in p.new]
    out: dict[str, Any] = {"n_questions": len(ids),
                           "unlabeled": sorted(r["id"] for r in p.new if not r["n_relevant"]),
                           "unlabeled_original": sorted(r["id"] for r in p.base if not r["n_relevant"])}
    for label, column in MEASURES.items():
        before, after = column_values(p.base, column), column_values(p.new, column)
        ci = paired_bootstrap_ci(before, after, **bootstrap_options(params.stats))
        out[label] = {"original": float(before.mean()), "converted": float(after.mean()),
                      "delta": ci.estimate, "low": ci.low, "high": ci.high,
                      "worse": sorted(i for i, b, a in zip(ids, before, after) if a < b),
                      "better": sorted(i for i, b, a in zip(ids, before, after) if a > b)}
    return out


# ---------------------------------------------------------------------------------------- report


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.1f}%)" if n else "0/0"


def _delta(c: Mapping[str, float]) -> str:
    return f"{c['delta']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"


def report_markdown(result: Mapping[str, Any]) -> str:
    fmts = list(result["formats"])
    lines = ["# Conversion loss on the handbook", "",
             f"{result['n_documents']} documents, {result['n_spans']} spans of {result['n_questions']} answerable "
             f"questions. Renditions: {result['renditions']}. Converted back with "
             "`rag_ablation.data.conversion.formats.convert`; spans and texts compared in the pipeline's `match_text` "
             "form (backticks, `**`, `__`, table pipes and hyphens between letters dropped, line-end hyphenation "
             "joined, whitespace collapsed). The Markdown "
             f"originals hold {result['original_survived']} of the spans and {result['original_headings']} headings.", "",
             "## Span survival", "",
             f"Goal: at least {GOAL_SURVIVAL:.0%} of spans survive each format.", "",
             "| format | converter | pages | Markdown headings | spans survived | goal | lost by reason |",
             "|---|---|---:|---:|---:|---|---|"]
    for fmt in fmts:
        f = result["formats"][fmt]
        reasons = ", ".join(f"{r} {n}" for r, n in sorted(f["lost_by_reason"].items(), key=lambda x: (-x[1], x[0])))
        met = "met" if f["survived"] / f["n_spans"] >= GOAL_SURVIVAL else "missed"
        pages = str(f["pages"]) if f.get("pages") is not None else ""
        lines.append(f"| {fmt} | {', '.join(f['converters'])} | {pages} | {f['headings']} "
                     f"| {_pct(f['survived'], f['n_spans'])} | {met} | {reasons or '-'} |")
        if f["errors"]:
            lines.append(f"| | failed: {', '.join(sorted(f['errors']))} | | | | | |")
    if result.get("retrieval"):
        ret = result["retrieval"]
        lines += ["", "## Retrieval: converted corpus against the Markdown original", "",
                  f"Chunking `{ret['chunking']}`; paired difference converted minus original per answerable question "
                  f"({ret['n_questions']}), mean and 95% bootstrap interval ({ret['bootstrap']}). Goal: no config loses "
                  f"more than {GOAL_RECALL_LOSS} recall@5 on the PDF rendition. Chunks: "
                  + ", ".join(f"{k} {v}" for k, v in ret["chunks"].items()) + " (a converted text is cut at its "
                  "Markdown headings only; see the headings column above). Labels: the pipeline's "
                  "(`relevant_chunks`, spans as written compared in `match_text` form).", "",
                  "| format | config | recall@5 original | recall@5 converted | delta [95% CI] | MRR@10 original "
                  "| MRR@10 converted | delta [95% CI] | hit@5 lost / gained | no relevant chunk |",
                  "|---|---|---:|---:|---|---:|---:|---|---:|---:|"]
        for fmt in fmts:
            for cfg in ret["configs"]:
                c = ret["formats"][fmt][cfg]
                r5, mrr = c["recall@5"], c["MRR@10"]
                lines.append(f"| {fmt} | {cfg} | {r5['original']:.3f} | {r5['converted']:.3f} | {_delta(r5)} "
                             f"| {mrr['original']:.3f} | {mrr['converted']:.3f} | {_delta(mrr)} "
                             f"| {len(r5['worse'])} / {len(r5['better'])} "
                             f"| {len(c['unlabeled'])} (original {len(c['unlabeled_original'])}) |")
        lines.append("")
        if "pdf" in ret["formats"]:
            pdf = ret["formats"]["pdf"]
            worst = min(ret["configs"], key=lambda c: (pdf[c]["recall@5"]["delta"], c))
            d = pdf[worst]["recall@5"]
            verdict = ("met by the mean and by the interval" if d["low"] >= -GOAL_RECALL_LOSS
                       else "met by the mean, not by the interval" if d["delta"] >= -GOAL_RECALL_LOSS else "missed")
            lines += [f"- PDF recall@5 goal: {verdict} (worst config `{worst}`: {_delta(d)}; the mean is the "
                      f"point estimate, the interval's lower end must also be at least {-GOAL_RECALL_LOSS:+.2f} "
                      "for the goal to hold with 95% confidence).", ""]
    if lines[-1]:
        lines.append("")
    lines += ["## Lost spans", ""]
    for fmt in fmts:
        lost = result["formats"][fmt]["lost"]
        lines += [f"### {fmt}: {len(lost)} lost", ""]
        if not lost:
            continue
        lines += ["| reason | in the source | question | span | nearest converted text, `match_text` form "
                  "(similarity) |",
                  "|---|---|---|---|---|"]
        for x in sorted(lost, key=lambda x: (x["reason"], x["id"], x["n"])):
            lines.append(f"| {x['reason']} | {x['where']} | {x['id']} | {_cell(x['span'])} | {_cell(x['nearest'])} "
                         f"({x['similarity']:.2f}) |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


# ------------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--formats", default=",".join(FORMATS), help="comma-separated, of pdf, docx, html")
    ap.add_argument("--keep", type=Path, default=None,
                    help="render into this folder and keep it (and the converted texts, as <doc>.<fmt>.txt)")
    ap.add_argument("--threads", type=int, default=1, help="torch and FAISS threads (default 1)")
    ap.add_argument("--workers", type=int, default=2, help="documents rendered at a time (default 2)")
    ap.add_argument("--no-retrieval", action="store_true", help="span survival only")
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder for conversion_loss.md and .json")
    args = ap.parse_args(argv)
    fmts = [f.strip() for f in args.formats.split(",") if f.strip()]
    bad = [f for f in fmts if f not in FORMATS]
    if bad:
        ap.error(f"unknown format(s) {', '.join(bad)}; expected some of {', '.join(FORMATS)}")

    params = load_config(REPO / "params.yaml")
    params = dataclasses.replace(params, embedding=dataclasses.replace(params.embedding, threads=args.threads))
    documents = load_corpus(CORPUS)
    sources = {d.doc: d.text for d in documents}
    tracks = {d.doc: d.track for d in documents}
    questions = load_questions(QUESTIONS)
    spans = spans_of(questions)
    timings: list[str] = [f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start"]

    result: dict[str, Any] = {"n_documents": len(documents), "n_questions": sum(q.answerable for q in questions),
                              "n_spans": len(spans), "formats": {},
                              "renditions": "benchmarks/renditions.py (pandoc gfm -> html5 / docx; PDF: Chromium's "
                                            "print of the HTML)"}
    base_check = survival(spans, sources)
    lost_in_source = [s.qid for s in base_check if not s.survived]
    if lost_in_source:
        print(f"warning: {len(lost_in_source)} span(s) not found in their own Markdown document: {lost_in_source}",
              file=sys.stderr)
    result["original_survived"] = len(spans) - len(lost_in_source)
    result["original_headings"] = sum(len(_HEADING.findall(t)) for t in sources.values())

    tmp = None
    if args.keep is None:
        tmp = tempfile.TemporaryDirectory(prefix="conversion-loss-")
        out_root = Path(tmp.name)
    else:
        out_root = args.keep
    converted_texts: dict[str, dict[str, str]] = {}
    try:
        for fmt in fmts:
            folder = out_root / fmt
            t0 = time.perf_counter()
            renditions.render(CORPUS, folder, fmt, workers=args.workers)
            render_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            conv, errors = convert_renditions(folder, fmt, [d.doc for d in documents])
            convert_s = time.perf_counter() - t0
            texts = {doc: c.text for doc, c in conv.items()}
            converted_texts[fmt] = texts
            if args.keep is not None:
                for doc, text in texts.items():
                    write_text(folder / f"{doc}.{fmt}.txt", text)
            pages = sum(len(c.pages) for c in conv.values()) if fmt == "pdf" else None
            counted = (sum(renditions.count_pdf_pages(folder / Path(d.doc).with_suffix(".pdf")) for d in documents)
                       if fmt == "pdf" else None)
            res = survival(spans, texts, sources)
            lost = [r for r in res if not r.survived]
            result["formats"][fmt] = {
                "n_spans": len(res), "survived": len(res) - len(lost),
                "share": round((len(res) - len(lost)) / len(res), 4),
                "lost_by_reason": dict(sorted(Counter(r.reason for r in lost).items())),
                "lost": [r.to_json() for r in lost],
                "converters": sorted({c.converter for c in conv.values()}),
                "errors": errors, "pages": counted, "pages_converted": pages,
                "characters": sum(len(t) for t in texts.values()),
                "headings": sum(len(_HEADING.findall(t)) for t in texts.values()),
            }
            rate = f", {counted} pages, {counted / convert_s:.1f} pages/s" if counted else ""
            timings.append(f"{fmt}: rendering {render_s:.1f} s ({len(documents)} documents), conversion "
                           f"{convert_s:.1f} s{rate}")
            print(f"{fmt}: {len(res) - len(lost)}/{len(res)} spans survive", file=sys.stderr, flush=True)

        if not args.no_retrieval:
            from rag_ablation.retrieval.embeddings import EmbeddingCache, open_backend

            configs = [c for c in CONFIGS if c in params.retrieval]
            chunkings = {params.config(c).chunking for c in configs}
            if len(chunkings) != 1:
                raise SystemExit(f"configs {configs} use several chunkings ({sorted(chunkings)}); expected one")
            chunking = chunkings.pop()
            load = functools.cache(lambda: open_backend(params.embedding))
            cache = EmbeddingCache()
            try:
                t0 = time.perf_counter()
                original = index_corpus("original", ((d.doc, d.track, d.text) for d in documents), params, chunking,
                                        load=load, cache=cache)
                base_scores = score_corpus(original, params, questions, configs)
                timings.append(f"original: {len(original.chunks)} chunks, embedded {original.embedded} "
                               f"({original.cached} cached) in {original.embed_seconds:.1f} s; whole corpus "
                               f"{time.perf_counter() - t0:.1f} s")
                ret: dict[str, Any] = {"chunking": chunking, "configs": configs, "formats": {},
                                       "chunks": {"original": len(original.chunks)},
                                       "bootstrap": f"{params.stats.method}, {params.stats.resamples} resamples, "
                                                    f"seed {params.stats.seed}"}
                for fmt in fmts:
                    t0 = time.perf_counter()
                    texts = converted_texts[fmt]
                    corpus = index_corpus(fmt, ((doc, tracks[doc], texts[doc]) for doc in sorted(texts)
                                                if texts[doc].strip()), params, chunking, load=load, cache=cache)
                    scores = score_corpus(corpus, params, questions, configs)
                    ret["chunks"][fmt] = len(corpus.chunks)
                    ret["formats"][fmt] = {c: compare_rows(base_scores[c], scores[c], params) for c in configs}
                    timings.append(f"{fmt} corpus: {len(corpus.chunks)} chunks, embedded {corpus.embedded} "
                                   f"({corpus.cached} cached) in {corpus.embed_seconds:.1f} s; retrieval "
                                   + ", ".join(f"{c} {s:.1f} s" for c, s in corpus.times.items())
                                   + f"; whole corpus {time.perf_counter() - t0:.1f} s")
                    print(f"{fmt}: retrieval done", file=sys.stderr, flush=True)
                ret["n_questions"] = next(iter(ret["formats"].values()))[configs[0]]["n_questions"]
                result["retrieval"] = ret
            finally:
                cache.close()
    finally:
        if tmp is not None:
            tmp.cleanup()

    report = report_markdown(result)
    args.results.mkdir(parents=True, exist_ok=True)
    write_text(args.results / "conversion_loss.md", report)
    write_json(args.results / "conversion_loss.json", result)
    print(report)
    print("Times (not in the result files):")
    for line in timings:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
