"""Everything ``metrics/report.html`` shows, gathered into one JSON-ready dict (:func:`page_data`).

The page (:mod:`rag_ablation.evaluation.report.html`) embeds this dict once and draws every
section from it in the browser, so nothing here is HTML and every text (questions, passages,
answers, notes) stays data. Numbers already in the metrics files are copied, never recomputed:
intervals and paired changes come from ``metrics/stats.json`` (the ``stats`` stage), the judge
panel and its support (groundedness) part from ``metrics/judge_detail.json`` (``judge_eval``).
Two things are computed here because no stage writes them:

- the *letters* (ranx style, :func:`config_letters`): every available config gets a letter in
  params order, and after its value of ``stats.measure`` stand the letters of the configs it
  significantly beats: the measure's paired test for every pair (exact sign tests on the
  questions each pair disagrees on for a 0/1 measure, sign-flip tests for a continuous one such
  as nDCG@10), Holm-adjusted over all pairs at level ``1 - stats.confidence``, a win when the
  adjusted p is below the level and its mean is higher (the sweep summary's procedure,
  :mod:`rag_ablation.evaluation.statistics.sweep`, on the questions answerable in every config);
- the *cost* points (:func:`cost_points`): recall of ``stats.measure`` against the P95
  retrieval latency per query (``total.p95_ms`` of ``metrics/latency/CONFIG.json``, read only
  from a file timed by the shared rule, ``metrics_view.retrieval_p95``), with the Pareto front
  (``sweep.pareto_front``), and answer accuracy (hand grades) against the median seconds per
  answer (``answer.p50_ms`` of ``metrics/latency/generate_CONFIG.json``).

``stats.measure: auto`` is read as the ``stats`` stage used it (``metrics_view.stats_settings``:
nDCG@10 on graded qrels); ``meta.measure``, its label and ``meta.test`` name it for the page.
The configs are those of this run (``Params.searched``); ``meta.not_run`` names the others
(left out by ``run_configs``), shown in one line rather than as unavailable rows.

Per question (:func:`question_entries`, :func:`grid`, :func:`rankings`): the question, its
spans and audit lines; its 0/1 value of the grid's column (:func:`grid_column`: ``stats.measure``,
or ``hit_at_10`` for a continuous measure) in every available config (``None``
for an unanswerable question); each config's top ``k`` passages (``k`` = the grid column's cut-off)
with rank, score and whether the chunking's labels count it relevant, the passage texts stored
once per chunking; each answered config's answer, its judges' verdicts and hand grade
(``metrics/scores/verdicts.csv``) and the failure kind from the hand grades; on a miss, where the
first relevant chunk ranked (:func:`deeper_relevant`); the text each query transform searched
with (:func:`searched_texts`). A question is *changed* when some config's value differs from the
baseline's. The sweep summary is shown only when it was made on params' data set
(:func:`sweep_entries`).

The metrics files are read through :mod:`rag_ablation.evaluation.report.metrics_view` (which
configs are available, their paired changes and verdicts, the judges, the answer comparison,
the sweep summary, the latency files), as the Markdown report reads them. The dict has no
timestamps and its lists follow params and the question file, so the same inputs give the same
page, byte for byte.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rag_ablation.core.config import Params, StatsConfig
from rag_ablation.core.errors import InvalidData
from rag_ablation.core.io import numbered_json_lines, read_output, string_record_problems
from rag_ablation.data.questions import Question, load_questions
from rag_ablation.evaluation.judges.failures import HAND_GRADES
from rag_ablation.evaluation.report.judge_report import FAILURE_LABELS, canary_judges, grades_text
from rag_ablation.evaluation.report.support_report import SCORER_WORDS
from rag_ablation.evaluation.scoring.foreign import foreign_relevant
from rag_ablation.evaluation.report.metrics_view import (answer_comparison as read_answer_comparison, available,
                                                         calibration, canary_results, change_of, change_verdict,
                                                         config_metrics, failure_table, hand_accuracy, is_calibrated,
                                                         is_judged, judged_entry, latency_value, length_bias,
                                                         length_bias_ran, measure_comparisons, not_judged_reason,
                                                         retrieval_p95, stats_settings, sweep_view, vs_baseline)
from rag_ablation.evaluation.report.plot_data import LABELS, test_text
from rag_ablation.data.chunks import load_chunks
from rag_ablation.data.provenance import Provenance, read_provenance, where_in
from rag_ablation.evaluation.scoring.audit import FIELDS as AUDIT_FIELDS
from rag_ablation.evaluation.scoring.scores import read_scores
from rag_ablation.evaluation.statistics.comparison import (GRADED_MEASURES, MEASURES, RECALL_OF, TESTS, count_keys,
                                                          counts_in, is_binary, measure_label)
from rag_ablation.evaluation.statistics.sweep import (COST_FLOOR_MS, COST_TOLERANCE, beats, candidate_matrix, letters, pairwise_p,
                                                      pairwise_wins, pareto_front)
from rag_ablation.support.latency_rule import WARM_RULE

Json = dict[str, Any]
Row = Mapping[str, Any]

VERDICT_VALUES = {"1": True, "0": False, "": None}
"""A cell of ``metrics/scores/verdicts.csv``: 1 correct, 0 incorrect, empty unknown or invalid."""


# --------------------------------------------------------------------------- reading inputs


def read_audit(path: Path) -> list[Json]:
    """The label audit lines (id, doc, span, note); an absent file is an empty audit. Every bad
    line is named in one message."""
    if not path.is_file():
        return []
    rows, problems = numbered_json_lines(path)
    out = []
    for n, obj in rows:
        bad = string_record_problems(obj, AUDIT_FIELDS)
        if bad:
            problems.extend(f"line {n}: {b}" for b in bad)
        else:
            out.append(dict(obj))  # type: ignore[call-overload]  # a dict: checked above
    if problems:
        raise InvalidData(f"{path}: {len(problems)} problem(s); regenerate it with `dvc repro dataset`:\n  "
                          + "\n  ".join(problems))
    return out


def read_verdicts(path: Path) -> list[Json]:
    """``metrics/scores/verdicts.csv`` rows, the hand grade and each judge as True / False /
    None; an absent file (no answered config) is no rows."""
    if not path.is_file():
        return []
    rows = []
    for n, r in enumerate(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))), start=2):
        if None in r or any(v is None for v in r.values()) or "config" not in r or "id" not in r:
            raise InvalidData(f"{path} line {n}: not a row of the verdicts file; regenerate it with "
                              "`dvc repro judge_eval`")
        rows.append({k: VERDICT_VALUES.get(v, v) if k not in ("config", "id", "slice", "answer_sha256") else v
                     for k, v in r.items()})
    return rows


@dataclass(frozen=True)
class Inputs:
    """What the page is built from, read (``read_inputs``). ``runs``, ``labels`` and ``answers``
    are keyed by config or chunking name; ``p95_ms`` and ``answer_s`` by config (None: unknown);
    ``queries`` by query transform, the ``queries@NAME`` outputs of the transforms other than
    ``none`` that some config uses."""

    stats: Json
    judge: Json
    rows: list[Json]
    questions: list[Question]
    audit: list[Json]
    runs: dict[str, Json]
    labels: dict[str, dict[str, list[str]]]
    answers: dict[str, Json]
    verdicts: list[Json]
    p95_ms: dict[str, float | None]
    answer_s: dict[str, float | None]
    sweep: Json | None
    queries: dict[str, Json] = field(default_factory=dict)
    provenance: dict[str, Provenance] = field(default_factory=dict)  # documents with pages or slides only
    chunk_spans: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # chunk -> (doc, start, end), those docs only


def view_of(params: Params, name: str) -> str:
    """The key of config ``name``'s passages and labels on the page: its chunking, or
    ``app:NAME`` for an app (whose passages are its own)."""
    return params.config(name).chunking or f"app:{name}"


def app_labels(params: Params, runs: Mapping[str, Json], questions: Sequence[Question],
               apps: Path | None) -> dict[str, dict[str, list[str]]]:
    """``app:NAME`` -> question id -> relevant passage ids, for each app whose run is ok: the span
    rule on its passages' text (``scoring.foreign``), less the passages the score stage found
    unlabelled (``apps``: its ``metrics/apps.json``; None or absent: none)."""
    info = read_output(apps, "score") if apps is not None and apps.is_file() else {}
    out = {}
    for name, run in runs.items():
        if not params.config(name).is_app or run.get("status") != "ok":
            continue
        rel, _ = foreign_relevant(run, questions, labels=params.labels, known_docs=None)
        unlabelled = set(info.get(name, {}).get("unlabelled_ids", []))
        out[f"app:{name}"] = {q: [p for p in ids if p not in unlabelled] for q, ids in rel.items()}
    return out


def read_inputs(params: Params, *, stats: Path, judge: Path, scores: Path, verdicts: Path, questions: Path,
                audit: Path, runs: Path, labels: Path, answers: Path, latency: Path,
                sweep: Path | None = None, queries: Path | None = None, apps: Path | None = None,
                documents: Path | None = None, chunks: Path | None = None) -> Inputs:
    """Read every input of the page for the configs of ``params`` (names from params, never a
    folder listing). ``sweep`` is optional: None, or a path that may not exist. ``queries`` is the
    folder of the ``queries@NAME`` outputs (None: the searched texts are not shown); ``apps`` the
    score stage's summary of the app configs (:func:`app_labels`). ``documents`` (the dataset
    stage's provenance file) and ``chunks`` (the folder of chunk files): where a document has
    pages or slides, the page of each of its chunks is shown (:func:`chunk_sources`)."""
    configs = list(params.searched())
    run_files = {c: read_output(runs / f"{c}.json", f"{'app' if params.config(c).is_app else 'retrieve'}@{c}")
                 for c in configs}
    chunkings = sorted({ch for c in configs if (ch := params.config(c).chunking) is not None})
    label_files = {ch: read_output(labels / f"{ch}.json", f"labels@{ch}") for ch in chunkings}
    checked = load_questions(questions, min_span=params.labels.min_span)
    relevant = {ch: dict(v.get("relevant", {})) for ch, v in label_files.items()}
    relevant.update(app_labels(params, run_files, checked, apps))
    answer_files = {c: read_output(answers / f"{c}.json", f"generate@{c}") for c in params.generation.configs}
    paged = {d: p for d, p in (read_provenance(documents) if documents is not None else {}).items() if p.pages}
    spans: dict[str, tuple[str, int, int]] = {}
    if paged and chunks is not None:
        spans = {c.id: (c.doc, c.start, c.end) for ch in chunkings for c in load_chunks(chunks / f"{ch}.jsonl")
                 if c.doc in paged}
    return Inputs(
        stats=read_output(stats, "stats"), judge=read_output(judge, "judge_eval"),
        rows=read_scores(scores), questions=checked,
        audit=read_audit(audit), runs=run_files,
        labels=relevant,
        answers=answer_files, verdicts=read_verdicts(verdicts),
        p95_ms={c: retrieval_p95(latency, c) for c in configs},
        answer_s={c: _seconds(latency_value(latency, f"generate_{c}", "answer", "p50_ms"))
                  for c in params.generation.configs},
        sweep=read_output(sweep, "sweep-report") if sweep is not None and sweep.is_file() else None,
        queries={} if queries is None else {t: read_output(queries / f"{t}.json", f"queries@{t}")
                                            for t in transforms_shown(params)},
        provenance=paged, chunk_spans=spans)


def chunk_sources(inputs: Inputs, passages: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Chunk -> where it lies in words (``page 12 of policies/retention.pdf``, ``pages 12-13 of
    ...``: ``provenance.where_in``), for every chunk the page shows whose document has pages or
    slides."""
    shown = sorted({c for texts in passages.values() for c in texts if c in inputs.chunk_spans})
    out = {}
    for c in shown:
        doc, start, end = inputs.chunk_spans[c]
        out[c] = where_in(doc, start, inputs.provenance.get(doc), end)
    return out


def transforms_shown(params: Params) -> list[str]:
    """The query transforms other than kind ``none`` that some config of this run searches with,
    sorted: the ones whose searched text the question view shows."""
    return sorted({params.config(c).query for c in params.searched()
                   if params.transform(params.config(c).query).kind != "none"})


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000


# --------------------------------------------------------------------------- configs


def measure_k(measure: str) -> int:
    """The cut-off of a 0/1 measure: ``hit_at_5`` -> 5."""
    return int(measure.rsplit("_", 1)[-1])


def grid_column(measure: str) -> str:
    """The 0/1 column the question grid shows: ``measure`` itself, or ``hit_at_10`` (something
    relevant in the top 10) for a continuous measure."""
    return measure if is_binary(measure) else "hit_at_10"


def config_letters(rows: Sequence[Row], configs: Sequence[str], *, measure: str, alpha: float,
                   settings: StatsConfig | None = None) -> dict[str, Json]:
    """Config -> ``{"letter": its letter, "beats": the letters it significantly beats}`` for the
    ``configs`` that have rows (module docstring), letters in the order of ``configs``. With
    fewer than two such configs, or no question answerable in all of them, nobody beats anyone.
    ``settings`` (default: the defaults of ``stats``) gives a continuous measure's margin,
    resamples and seed."""
    settings = settings or StatsConfig()
    by_config: dict[str, list[Row]] = {}
    for r in rows:
        by_config.setdefault(str(r["config"]), []).append(r)
    names = [c for c in configs if c in by_config]
    labels = letters(len(names))
    out = {name: {"letter": labels[i], "beats": ""} for i, name in enumerate(names)}
    if len(names) < 2:
        return out
    shared = {r["id"] for r in by_config[names[0]] if r["answerable"]}
    for name in names[1:]:
        shared &= {r["id"] for r in by_config[name] if r["answerable"]}
    if not shared:
        return out
    matrix = candidate_matrix({n: by_config[n] for n in names}, measure)
    wins = pairwise_wins(matrix.values, 0.0 if is_binary(measure) else settings.margin)
    raw = pairwise_p(matrix.values, measure=measure, wins=wins, resamples=settings.resamples, seed=settings.seed)
    beaten, _ = beats(matrix.values.mean(axis=0), raw, alpha)
    for i, name in enumerate(names):
        out[name]["beats"] = "".join(labels[j] for j in beaten[i])
    return out


def _interval(d: Mapping[str, Any] | None) -> Json | None:
    if not d:
        return None
    return {"value": d["value"], "ci_low": d["ci_low"], "ci_high": d["ci_high"]}


def unavailable_reason(name: str, run: Mapping[str, Any] | None) -> str:
    """Why a config has no numbers: its run's reason, else that it has no scored rows."""
    if run is not None and run.get("status") != "ok":
        return f"{run.get('status', 'unavailable')}: {run.get('reason') or 'no reason recorded'}"
    return "no scored rows in metrics/scores/retrieval.csv (rerun `dvc repro score stats`)"


def change_entry(vs: Mapping[str, Any] | None, measure: str) -> Json | None:
    """The paired change of ``measure`` against the baseline, with its verdict after Holm, its
    counts named as ``metrics/stats.json`` names them for the measure (``comparison.count_keys``:
    ``fixed`` / ``broken`` for a 0/1 measure, ``better`` / ``worse`` for a continuous one)."""
    b = change_of(vs, measure)
    if not b:
        return None
    up, down = count_keys(measure)[:2]
    n_up, n_down = counts_in(b)
    return {"delta": b["delta"], "ci_low": b["ci_low"], "ci_high": b["ci_high"], "p_holm": b["p_holm"],
            up: n_up, down: n_down, "n": b["n"], "family": b["family"], "verdict": change_verdict(b)}


def page_settings(inputs: Inputs, params: Params) -> StatsConfig:
    """``params.stats`` with ``measure`` the column the ``stats`` stage used (``auto`` resolved)."""
    return stats_settings(params.stats, inputs.stats, list(params.searched()))


def config_entries(inputs: Inputs, params: Params) -> list[Json]:
    """One entry per config of this run (``Params.searched``), in params order (module docstring)."""
    settings = page_settings(inputs, params)
    recall = RECALL_OF[settings.measure]
    marks = config_letters(inputs.rows, list(params.searched()), measure=settings.measure,
                           alpha=1 - settings.confidence, settings=settings)
    out = []
    for name in params.searched():
        entry: Json = {"name": name, "baseline": name == settings.baseline,
                       "chunking": view_of(params, name), "answered": name in params.generation.configs,
                       "query": params.config(name).query,
                       "p95_ms": inputs.p95_ms.get(name)}
        m = config_metrics(inputs.stats, name)
        if not available(inputs.stats, name) or name not in marks:
            entry.update(available=False, reason=unavailable_reason(name, inputs.runs.get(name)))
            out.append(entry)
            continue
        entry.update(available=True, n=m.get("n"), letter=marks[name]["letter"], beats=marks[name]["beats"],
                     measures={k: _interval(m.get(k)) for k in [*MEASURES, *(g for g in GRADED_MEASURES if g in m)]},
                     by_slice={s: {**(_interval(g.get(recall)) or {}), "n": g.get("n"),
                                   "too_small": bool(g.get("too_small"))}
                               for s, g in sorted(m.get("by_slice", {}).items())},
                     change=None if entry["baseline"] else change_entry(vs_baseline(inputs.stats, name),
                                                                        settings.measure))
        out.append(entry)
    return out


def forest_rows(configs: Sequence[Json]) -> list[Json]:
    """The forest plot: each compared config's change, sorted by change (largest first, then name)."""
    rows = [{"config": c["name"], **c["change"]} for c in configs if c.get("available") and c.get("change")]
    return sorted(rows, key=lambda r: (-r["delta"], r["config"]))


def cost_points(configs: Sequence[Json], measure: str) -> list[Json]:
    """Recall of ``measure`` against P95 retrieval latency per available config, ``front`` True
    on the Pareto front (``sweep.pareto_front``: latencies within ``COST_TOLERANCE`` or
    ``COST_FLOOR_MS`` count as the
    same cost); a config without a latency timed by the shared rule (``metrics_view.retrieval_p95``)
    is left out of the chart (:func:`cost_missing` names it)."""
    recall = RECALL_OF[measure]
    have = [c for c in configs if c.get("available") and c.get("p95_ms") is not None and c["measures"].get(recall)]
    front = pareto_front([c["measures"][recall]["value"] for c in have], [c["p95_ms"] for c in have])
    return [{"config": c["name"], "p95_ms": c["p95_ms"], "value": c["measures"][recall]["value"],
             "ci_low": c["measures"][recall]["ci_low"], "ci_high": c["measures"][recall]["ci_high"],
             "front": bool(f)} for c, f in zip(have, front)]


def cost_missing(configs: Sequence[Json]) -> list[str]:
    """The available configs left out of the cost chart: no latency file timed by the shared rule
    (missing, unreadable, or written by an older rule: rerun their ``retrieve@CONFIG``)."""
    return [c["name"] for c in configs if c.get("available") and c.get("p95_ms") is None]


def answer_points(inputs: Inputs, params: Params) -> list[Json]:
    """Hand-graded answer accuracy (Wilson interval) against median seconds per answer, per
    answered config that has both."""
    out = []
    for name in params.generation.configs:
        hand = hand_accuracy(inputs.judge, name)
        seconds = inputs.answer_s.get(name)
        if hand and seconds is not None:
            out.append({"config": name, "seconds": seconds, "value": hand["estimate"], "ci_low": hand["low"],
                        "ci_high": hand["high"], "n": hand["n"]})
    return out


# --------------------------------------------------------------------------- questions


def question_entries(inputs: Inputs) -> list[Json]:
    """The questions in file order: id, text, slice, doc, reference answer, spans, audit lines."""
    audit: dict[str, list[Json]] = {}
    for a in inputs.audit:
        audit.setdefault(a["id"], []).append({"doc": a["doc"], "span": a["span"], "note": a["note"]})
    return [{"id": q.id, "question": q.question, "slice": q.slice, "doc": q.doc, "answer": q.answer,
             "answerable": q.answerable, "spans": list(q.relevant_spans), "audit": audit.get(q.id, [])}
            for q in inputs.questions]


def grid(inputs: Inputs, configs: Sequence[Json], measure: str) -> dict[str, list[int | None]]:
    """Available config -> its 0/1 ``measure`` per question (file order); None where the
    question is unanswerable or the config has no row for it."""
    values: dict[tuple[str, str], int | None] = {(str(r["config"]), str(r["id"])): r[measure] for r in inputs.rows}
    return {c["name"]: [values.get((c["name"], q.id)) for q in inputs.questions]
            for c in configs if c.get("available")}


def changed(grid_values: Mapping[str, Sequence[int | None]], baseline: str) -> list[bool]:
    """Per question: some config's value differs from the baseline's (both known)."""
    base = grid_values.get(baseline)
    if base is None:
        return [False] * len(next(iter(grid_values.values()), []))
    return [any(v[i] is not None and base[i] is not None and v[i] != base[i] for v in grid_values.values())
            for i in range(len(base))]


def rankings(inputs: Inputs, params: Params, configs: Sequence[Json], k: int) -> tuple[Json, Json, Json]:
    """(config -> per question (file order) its top ``k`` as ``[chunk, score, relevant 0/1]``,
    chunking -> chunk -> text of every chunk shown, config -> :func:`deeper_relevant` per
    question). A config whose run is not ok has none."""
    shown: dict[str, dict[str, str]] = {}
    out: Json = {}
    deeper: Json = {}
    for c in configs:
        run = inputs.runs.get(c["name"], {})
        if run.get("status") != "ok":
            continue
        chunking = view_of(params, c["name"])
        texts = shown.setdefault(chunking, {})
        relevant = inputs.labels.get(chunking, {})
        try:
            out[c["name"]] = _top_k(run, inputs.questions, relevant, k, texts)
            deeper[c["name"]] = deeper_relevant(run, inputs.questions, relevant, k, texts)
        except (KeyError, TypeError, AttributeError):
            raise InvalidData(f"the run file of {c['name']!r} is not a run the retrieve stage writes (questions "
                              f"with id and ranking, passages): regenerate it with `dvc repro -f retrieve@{c['name']}`"
                              ) from None
    return out, {ch: dict(sorted(t.items())) for ch, t in sorted(shown.items())}, deeper


def _top_k(run: Mapping[str, Any], questions: Sequence[Question], relevant: Mapping[str, Sequence[str]], k: int,
           texts: dict[str, str]) -> list[list[list[Any]]]:
    """One run's top ``k`` per question, ``[chunk, score, relevant 0/1]``; adds the texts shown."""
    by_id = {r["id"]: r for r in run["questions"]}
    passages = run["passages"]
    per_question = []
    for q in questions:
        rel = set(relevant.get(q.id, []))
        top = by_id.get(q.id, {}).get("ranking", [])[:k]
        per_question.append([[str(x["chunk"]), float(x["score"]), int(x["chunk"] in rel)] for x in top])
        for x in top:
            texts.setdefault(x["chunk"], str(passages.get(x["chunk"], "")))
    return per_question


def deeper_relevant(run: Mapping[str, Any], questions: Sequence[Question], relevant: Mapping[str, Sequence[str]],
                    k: int, texts: dict[str, str]) -> list[Json | None]:
    """Per question (file order), for a miss (no relevant chunk in the top ``k``) of an answerable
    question: ``{"rank": the 1-based rank of the first relevant chunk in the stored ranking,
    "chunk", "score"}``; or ``{"rank": None, "stored": the stored ranking's length}`` when none of
    the stored chunks is relevant (the relevant chunk is not in the stored top ``stored``: it
    ranked below, or was not retrieved), with ``"labelled": False`` when the chunking labels no
    chunk relevant to the question at all. None for a hit, an unanswerable question, or a
    question the run did not rank. Adds the text of a chunk it names to ``texts``."""
    by_id = {r["id"]: r for r in run["questions"]}
    out: list[Json | None] = []
    for q in questions:
        ranking = by_id.get(q.id, {}).get("ranking")
        rel = set(relevant.get(q.id, []))
        if not q.answerable or not ranking or any(x["chunk"] in rel for x in ranking[:k]):
            out.append(None)
            continue
        found = next(((r, x) for r, x in enumerate(ranking, start=1) if x["chunk"] in rel), None)
        if found is None:
            out.append({"rank": None, "stored": len(ranking), **({} if rel else {"labelled": False})})
            continue
        rank, x = found
        texts.setdefault(x["chunk"], str(run["passages"].get(x["chunk"], "")))
        out.append({"rank": rank, "chunk": str(x["chunk"]), "score": float(x["score"])})
    return out


def searched_texts(inputs: Inputs) -> dict[str, list[str | None]]:
    """Query transform -> per question (file order) the text its configs searched with, None
    where it is the question itself (or the transform's output has none for it)."""
    out: dict[str, list[str | None]] = {}
    for name, transformed in sorted(inputs.queries.items()):
        texts = transformed.get("queries") or {}
        out[name] = [None if texts.get(q.id) in (None, q.question) else str(texts[q.id]) for q in inputs.questions]
    return out


def failure_kinds(judge: Mapping[str, Any], config: str) -> dict[str, str]:
    """Question id -> what happened to its answer, by the hand grades (judge_eval's failures)."""
    table = failure_table(judge, config, "hand")
    out = {}
    for category, cell in table.items():
        if isinstance(cell, Mapping):
            for qid in cell.get("ids", []):
                out[qid] = FAILURE_LABELS.get(category, category)
    return out


def answer_entries(inputs: Inputs, params: Params) -> Json:
    """Answered config -> question id -> answer text, hand grade, judges' verdicts, failure kind;
    a config whose answers are not ok -> ``{"reason": ...}``."""
    judges = list(params.judge.judges)
    verdicts = {(v["config"], v["id"]): v for v in inputs.verdicts}
    out: Json = {}
    for name in params.generation.configs:
        generated = inputs.answers.get(name, {})
        if generated.get("status") != "ok":
            out[name] = {"reason": f"{generated.get('status')}: {generated.get('reason')}"}
            continue
        kinds = failure_kinds(inputs.judge, name)
        answers = {}
        for a in generated.get("answers", []):
            v = verdicts.get((name, a["id"]), {})
            answers[a["id"]] = {"answer": a["answer"], "hand": v.get("hand"),
                                "verdicts": {j: v.get(j) for j in judges}, "failure": kinds.get(a["id"])}
        out[name] = {"answers": dict(sorted(answers.items()))}
    return out


# --------------------------------------------------------------------------- judges and sweep


def not_judged_text(judge: Mapping[str, Any], answered: Sequence[str]) -> str | None:
    """The one line the judge panel shows instead of its cards when no answered config's answers
    were judged (a retrieval-only run): why, the configs that share a reason named together;
    None when some config was judged."""
    if any(is_judged(judge, c) for c in answered):
        return None
    if not answered:
        return "No answered config (generation.configs is empty): no answers to judge."
    by_reason: dict[str, list[str]] = {}
    for c in answered:
        entry = judged_entry(judge, c)
        why = (f"{entry.get('status') or 'unavailable'}: {not_judged_reason(judge, c) or 'no reason recorded'}"
               if entry else "not judged (rerun `dvc repro judge_eval`)")
        by_reason.setdefault(why, []).append(c)
    return "No answers were judged: " + "; ".join(f"{', '.join(names)}: {why}" for why, names in by_reason.items()) + "."


def judge_panel(judge: Mapping[str, Any], judges: Sequence[str], answered: Sequence[str] = ()) -> Json:
    """Per judge: confusion against the hand grades, kappa and accuracy with intervals, canary
    acceptance; the position-consistency test (judge_eval's length pairs); the hand grades' counts
    in words (``judge_report.grades_text``: what stale and unknown grades are), and whether any
    matches (``no_grades``: then a judge's card gives no reason of its own, the one line says it);
    ``not_judged``: :func:`not_judged_text` of the answered configs (``generation.configs``);
    ``support``: :func:`support_panel` (groundedness on the hand support grades). After
    ``judges``, a card for every other judge judge_eval canary-tested (the combined judge: its
    canaries, and where its agreement is shown, as it has no fixed-threshold calibration)."""
    no_grades = not (judge.get("grades") or {}).get("matching")
    panel = []
    for j in canary_judges(judge, judges):
        c = calibration(judge, j)
        entry: Json = {"judge": j}
        if j not in judges:
            entry["reason"] = "a model over the judges' scores: its agreement is under Judges by their scores"
        elif is_calibrated(c):
            entry.update(confusion={k: c["confusion"].get(k) for k in ("tp", "fp", "fn", "tn", "invalid", "n")},
                         kappa=_estimate(c.get("kappa")), accuracy=_estimate(c.get("accuracy")))
        elif not no_grades:
            entry["reason"] = c.get("reason") or "not calibrated (no hand grades)"
        canaries = canary_results(judge, j) or {}
        entry["canaries"] = [{"kind": kind, "expected_accept": bool(r.get("expected_accept")),
                              "accepted": r.get("accepted"), "low": r.get("low"), "high": r.get("high"),
                              "n": r.get("n"), "invalid": r.get("invalid")}
                             for kind, r in sorted(canaries.items()) if isinstance(r, Mapping) and "accepted" in r]
        panel.append(entry)
    length = length_bias(judge)
    position = ({k: length.get(k) for k in ("pairs", "consistent", "consistency", "ties", "long_wins", "short_wins")}
                if length_bias_ran(length) else {"reason": length.get("reason") or length.get("status") or "not run"})
    grades = dict(judge.get("grades", {}))
    return {"judges": panel, "position": position, "grades": grades, "grades_text": grades_text(grades),
            "no_grades": no_grades, "not_judged": not_judged_text(judge, answered), "graders": graders_panel(judge),
            "comparison": answer_comparison(judge), "measures": measure_panel(judge),
            "support": support_panel(judge, answered), **score_panel(judge, judges)}


def graders_panel(judge: Mapping[str, Any]) -> Json | None:
    """Two graders' agreement (judge_eval's ``graders``) for the judges' panel: with a second
    grader, ``n``, ``graders``, ``kappa`` and ``accuracy`` (estimate and interval), ``table``
    (both_correct, first_only, second_only, both_incorrect) and the ``disagreements`` to
    adjudicate; without one, ``line``: the one line saying how to add one (as report.md); None
    for a detail file from before it existed."""
    g = judge.get("graders")
    if not isinstance(g, Mapping):
        return None
    if g.get("status") != "ok":
        return {"line": f"Second grader: {g.get('reason')}."}
    o = g["overall"]
    return {"n": o["n"], "graders": list(g["graders"]), "kappa": _estimate(o["kappa"]),
            "accuracy": _estimate(o["accuracy"]), "table": dict(o["table"]),
            "disagreements": [{"config": r["config"], "id": r["id"], "first": dict(r["first"]),
                               "second": dict(r["second"]), "adjudicated": r["adjudicated"]}
                              for r in g["disagreements"]]}


NO_SUPPORT_GRADES = ("Support (groundedness): no hand support grades match the current answers, so no answer is "
                     "called supported or unsupported; rag-ablation grade --support (or the workbench's Grade answers "
                     "tab) adds them, beside correct: supported, partly or not.")
"""The judges panel's one support line when judge_eval's ``support`` block has no grades."""


def support_panel(judge: Mapping[str, Any], answered: Sequence[str] = ()) -> Json | None:
    """Support (groundedness) for the judges' panel, from judge_eval's ``support`` block
    (``judges.support_eval``) and each answered config's ``support`` entry; only copies numbers.
    None for a detail file from before support was measured; ``{"line": NO_SUPPORT_GRADES}``
    when no hand support grade matches. Otherwise ``levels`` (the hand grades per level);
    ``scorers``: per scorer ``n`` (graded answers it scored), ``unscored``, and ``auc``,
    ``kappa`` (the median cross-fitted kappa with its refit interval, ``seeds_min`` and
    ``seeds_max`` the range over fold seeds) and ``threshold``, or ``reason`` when it is not
    calibrated, and ``what`` it is; ``primary`` and ``source`` (where support verdicts come
    from); ``canaries``: ``rows`` per scorer and kind (``expected_accept``, ``accepted`` with
    ``low`` and ``high``, ``n``, ``invalid``) and ``flags`` (``scorer``, ``kind``, ``against``,
    ``n``, ``expected_accept``), or ``reason``; ``configs``: per judged answered config its
    ``hand`` and ``judged`` supported shares (``value``, ``ci_low``, ``ci_high``, ``supported``,
    ``n``; None when empty) and ``splits``: per source of correctness verdicts (``key``) its
    ``source`` (``hand grades``, or the failure tables' judge: ``two_by_two.KEY.source``), the
    ``retrieved`` and ``missed`` rows of cells ``correct_supported``, ``correct_unsupported``,
    ``correct_support_unknown``, ``wrong``, and ``unknown`` (answers with no correctness verdict,
    left out)."""
    block = judge.get("support")
    if not isinstance(block, Mapping):
        return None
    if block.get("status") != "ok":
        return {"line": NO_SUPPORT_GRADES}
    scorers = []
    for name, c in (block.get("calibration") or {}).items():
        row: Json = {"scorer": name, "n": c.get("n"), "unscored": c.get("unscored") or 0,
                     "what": SCORER_WORDS.get(name, "")}
        if c.get("status") != "ok":
            row["reason"] = c.get("reason") or c.get("status") or "not calibrated"
        else:
            k = c.get("kappa") or {}
            kappa = _estimate(k)
            if kappa is not None:
                kappa.update(seeds_min=k.get("min"), seeds_max=k.get("max"), seeds=k.get("seeds"))
            row.update(auc=_estimate(c.get("auc")), kappa=kappa, threshold=c.get("threshold"))
        scorers.append(row)
    can = block.get("canaries") or {}
    if can.get("status") == "ok":
        canaries: Json = {
            "rows": [{"scorer": name, "kind": kind, "expected_accept": bool(r.get("expected_accept")),
                      "accepted": r.get("accepted"), "low": r.get("low"), "high": r.get("high"), "n": r.get("n"),
                      "invalid": r.get("invalid") or 0}
                     for name, kinds in (can.get("scorers") or {}).items() for kind, r in kinds.items()],
            "flags": [{k: f.get(k) for k in ("scorer", "kind", "against", "n", "expected_accept")}
                      for f in can.get("flags") or []]}
    else:
        canaries = {"reason": can.get("reason") or "no support canaries"}
    configs = []
    for name in answered:
        if not is_judged(judge, name):
            continue
        entry = judged_entry(judge, name)
        s = entry.get("support") or {}
        if not s:
            continue
        tables = entry.get("two_by_two") or {}
        splits = [{"key": key, "source": _split_source(tables, key), "retrieved": dict(split["retrieved"]),
                   "missed": dict(split["missed"]), "unknown": split.get("unknown", 0)}
                  for key, split in (s.get("split") or {}).items()]
        configs.append({"config": name, "hand": _share(s.get("hand")), "judged": _share(s.get("judged")),
                        "splits": splits})
    return {"levels": dict(block.get("levels") or {}), "scorers": scorers, "primary": block.get("primary"),
            "source": block.get("source"), "canaries": canaries, "configs": configs}


def _split_source(tables: Mapping[str, Any], key: str) -> str:
    """Where a split table's correctness verdicts came from: the source of the config's
    retrieved-by-correct table of the same key (judge_eval writes both from one source), else
    ``hand grades`` for ``hand`` and the key itself otherwise."""
    source = (tables.get(key) or {}).get("source")
    return str(source) if source else HAND_GRADES if key == "hand" else key


def _share(d: Mapping[str, Any] | None) -> Json | None:
    est = _estimate(d)
    return None if est is None or d is None else {**est, "supported": d.get("supported")}


def score_panel(judge: Mapping[str, Any], judges: Sequence[str]) -> Json:
    """Every judge by its score (judge_eval's ``scores``): per judge (and the combined judge) its
    AUC and cross-fitted kappa with intervals, or why it has none; the ROC points for the chart;
    the primary judge; and the canaries a judge accepted that a sound judge rejects. Empty lists
    and None for a detail file from before judges kept scores.

    ``kappa`` (and the combined judge's ``auc``) is the headline of ``scored``: the median over
    ``crossfit_seeds`` fold seeds with the refit bootstrap's interval (``seeds``: how many;
    ``kappa_seed``: the one seed's kappa with its thresholds held fixed, whose TPR and TNR are
    ``tpr`` and ``tnr``); a detail file from before the repeated cross-fit gives that one seed's
    kappa as ``kappa``, and ``seeds`` None."""
    sc = judge.get("scores") or {}
    rows, roc = [], []
    for name in [*judges, "combined"]:
        e = (sc.get("judges") or {}).get(name) if name != "combined" else sc.get("combined")
        if not e:
            continue
        if e.get("status") != "ok":
            rows.append({"judge": name, "reason": e.get("reason")})
            continue
        repeated = e.get("kappa") if isinstance(e.get("kappa"), Mapping) and "seeds" in e["kappa"] else None
        rows.append({"judge": name, "auc": _estimate(e.get("auc")),
                     "kappa": _estimate(repeated or e["crossfit"].get("kappa")),
                     "kappa_seed": _estimate(e["crossfit"].get("kappa")),
                     "seeds": repeated["seeds"] if repeated else None,
                     "tpr": _estimate(e["crossfit"].get("tpr")), "tnr": _estimate(e["crossfit"].get("tnr"))})
        roc += [{"judge": name, "fpr": p["fpr"], "tpr": p["tpr"]} for p in e.get("roc", [])]
    return {"scores": rows, "roc": roc, "primary": sc.get("primary"),
            "canary_flags": [dict(f) for f in judge.get("canary_flags") or []]}


def answer_comparison(judge: Mapping[str, Any]) -> Json | None:
    """judge_eval's ``comparison``: each answered config against the baseline on the questions
    hand-graded for both, paired by question. Per config the two accuracies, the difference with
    its paired bootstrap interval (``delta``, ``ci_low``, ``ci_high``, ``method``: ``cluster-...``
    when it resampled source documents, ``stats.cluster``), the ids it fixed (wrong in
    the baseline, right here) and broke, and the exact McNemar p on those; or ``reason`` when
    judge_eval could not compare it. None with fewer than two answered configs
    (``metrics_view.answer_comparison``, as JSON)."""
    comp = read_answer_comparison(judge)
    if comp is None:
        return None
    rows: list[Json] = []
    for r in comp.rows:
        d = r.difference
        if d is None:
            rows.append({"config": r.config, "reason": r.reason or r.status or "not compared"})
            continue
        rows.append({"config": r.config, "n": d.n, "baseline_accuracy": d.baseline_accuracy,
                     "accuracy": d.accuracy, "delta": d.delta, "ci_low": d.ci_low, "ci_high": d.ci_high,
                     "method": d.method, "fixed": list(d.fixed_ids), "broken": list(d.broken_ids),
                     "p_mcnemar": d.p_mcnemar})
    return {"baseline": comp.baseline, "rows": rows}


def measure_panel(judge: Mapping[str, Any]) -> list[Json]:
    """judge_eval's ``measure_comparison``: per measure (``measure``, ``label``, ``test``,
    ``baseline``) its rows, each config's paired ``n``, both means, the change with its interval,
    ``better`` / ``worse`` (by more than ``margin``) with their ids (``better_ids``,
    ``worse_ids``), ``p``, ``p_holm`` and ``verdict``, or ``reason``; a measure not compared has
    ``reason`` and no rows (``metrics_view.measure_comparisons``, as JSON). Empty without the
    block."""
    return [{"measure": m.measure, "label": m.label, "test": m.test, "baseline": m.baseline, "reason": m.reason,
             "rows": [{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(r).items() if v is not None}
                      for r in m.rows]}
            for m in measure_comparisons(judge)]


def _estimate(d: Mapping[str, Any] | None) -> Json | None:
    if not d or d.get("estimate") is None:
        return None
    return {"value": d["estimate"], "ci_low": d.get("low"), "ci_high": d.get("high"), "n": d.get("n")}


def sweep_entries(sweep: Mapping[str, Any] | None, dataset: str) -> Json | None:
    """The sweep summary's ranking, best rank first (then name), and its headline, when it was made
    on ``dataset`` (its ``dataset`` key, written by ``sweep-report``); ``{"reason": ...}`` when it
    was made on another data set or does not say on which (made before it was recorded); None
    without one (``metrics_view.sweep_view``, as JSON)."""
    view = sweep_view(sweep)
    if view is None or sweep is None:
        return None
    made_on = sweep.get("dataset")
    if made_on != dataset:
        said = (f"was made on the data set {made_on!r}" if made_on else
                "does not record its data set (written before sweep-report recorded it)")
        return {"reason": f"metrics/sweep.json {said}, and this report is on {dataset!r}: its sweep section is "
                          "not shown; run `rag-ablation sweep-report` on sides of this data set to get one"}
    measure = view.measure if view.measure in RECALL_OF else None
    return {"rows": [dict(r) for r in view.rows], "measure": view.measure, "baseline": view.baseline,
            "measure_label": measure_label(measure) if measure else "value",
            "test": TESTS[measure] if measure else None, "test_text": test_text(measure) if measure else None,
            "chosen_on": view.chosen_on, "questions": view.questions, "winner": view.winner,
            "tie_set_size": view.tie_set_size, "dataset": made_on}


# --------------------------------------------------------------------------- the whole page


def page_data(inputs: Inputs, params: Params) -> Json:
    """Everything the page shows (module docstring), as one JSON-ready dict."""
    settings = page_settings(inputs, params)
    k = measure_k(grid_column(settings.measure))
    configs = config_entries(inputs, params)
    values = grid(inputs, configs, grid_column(settings.measure))
    ranked, passages, deeper = rankings(inputs, params, configs, k)
    base = next((c for c in configs if c["baseline"]), None)
    return {
        "meta": {"baseline": settings.baseline, "baseline_available": bool(base and base.get("available")),
                 "measure": settings.measure, "measure_label": LABELS[RECALL_OF[settings.measure]], "k": k,
                 "grid_label": measure_label(grid_column(settings.measure)),
                 "test": TESTS[settings.measure], "test_text": test_text(settings.measure),
                 "confidence": settings.confidence, "method": settings.method, "resamples": settings.resamples,
                 "n_questions": len(inputs.questions), "n_answerable": sum(q.answerable for q in inputs.questions),
                 "n_baseline": base.get("n") if base else None, "alpha": round(1 - settings.confidence, 10),
                 "judges": list(params.judge.judges), "dataset": params.dataset,
                 "latency_rule": WARM_RULE, "cost_tolerance": COST_TOLERANCE,
                 "cost_floor_ms": COST_FLOOR_MS,
                 "not_run": params.not_searched()},
        "configs": configs,
        "forest": forest_rows(configs),
        "cost": cost_points(configs, settings.measure),
        "cost_missing": cost_missing(configs),
        "answer_cost": answer_points(inputs, params),
        "questions": question_entries(inputs),
        "grid": values,
        "changed": changed(values, settings.baseline),
        "rankings": ranked,
        "deeper": deeper,
        "searched": searched_texts(inputs),
        "passages": passages,
        "sources": chunk_sources(inputs, passages),
        "answers": answer_entries(inputs, params),
        "judge": judge_panel(inputs.judge, list(params.judge.judges), list(params.generation.configs)),
        "sweep": sweep_entries(inputs.sweep, params.dataset),
    }
