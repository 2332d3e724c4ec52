"""The Markdown report rendered from the statistics metrics (rag_ablation.evaluation.report.markdown);
the verdict rule is tested in tests/evaluation/statistics/test_comparison.py."""
from __future__ import annotations

from score_rows import answer_row, config_rows, hits_to_ranks

from rag_ablation.core.config import StatsConfig
from rag_ablation.evaluation.statistics.stats import analyze, audit_entry, to_metrics
from rag_ablation.evaluation.report.formatting import p_value, points, signed, table
from rag_ablation.evaluation.report.markdown import render

SETTINGS = StatsConfig(resamples=1000, seed=0, min_slice=10, subsample_sizes=(10, None), subsample_draws=100)
CONFIGS = ["dense", "rerank", "hybrid", "noisy"]
# 24 questions: slice big (q0..q15) and tiny (q16..q23).
SLICES = ["big"] * 16 + ["tiny"] * 8
DENSE = [0] * 14 + [1] * 10
HYBRID = [1] * 24  # fixes 14, breaks none: a real gain
NOISY = [1, 0] + [0] * 12 + [1] * 9 + [0]  # fixes 1, breaks 1


def metrics():
    rows = [r for name, hits in (("dense", DENSE), ("hybrid", HYBRID), ("noisy", NOISY))
            for r in config_rows(name, hits_to_ranks(hits), slices=SLICES, unanswerable=2)]
    answers = [answer_row("dense", f"q{i}", int(i < 7)) for i in range(20)]
    result = analyze(rows, answers, configs=CONFIGS, answered=["dense", "hybrid"], settings=SETTINGS)
    return to_metrics(result)


def report(settings=SETTINGS):
    return render(metrics(), configs=CONFIGS, answered=["dense", "hybrid"], settings=settings)


def section(text, heading):
    start = text.index(heading)
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def table_row(text, first_cell):
    return next(line for line in text.splitlines() if line.startswith(f"| {first_cell} "))


def test_configs_table_has_every_config_in_params_order_with_intervals():
    part = section(report(), "## Configs")
    names = [line.split(" | ")[0][2:] for line in part.splitlines() if line.startswith("| `")]
    assert names == ["`dense` (baseline)", "`rerank`", "`hybrid`", "`noisy`"]
    m = metrics()["dense"]["recall_at_5"]
    assert f"{m['value']:.3f} ({m['ci_low']:.3f} to {m['ci_high']:.3f})" in table_row(part, "`dense` (baseline)")
    assert "| `rerank` | unavailable |" in part


def test_slice_table_marks_small_slices():
    part = section(report(), "## recall@5 by slice")
    assert "big (n=16)" in part and "tiny (n=8, too small)" in part


def test_paired_table_prints_counts_holm_family_mde_and_verdict():
    text = report()
    part = section(text, "## Paired changes")
    hybrid = table_row(part, "`hybrid`").split(" | ")
    vs = metrics()["hybrid"]["vs_baseline"]["hit_at_5"]
    assert hybrid[1:5] == ["24", "14", "0", signed(14 / 24)]
    assert hybrid[6] == p_value(2 * 0.5**14) == "<0.001"
    assert hybrid[8] == points(vs["mde"]) and hybrid[9].startswith("real gain")
    assert "Holm p (family of 2)" in part
    # the test named in the words report.html's notes use too (plot_data.TEST_TEXTS, passed in the page data)
    assert ("compared with the exact sign test (0/1 measure: the questions fixed against those broken), "
            "Holm-adjusted") in part
    assert table_row(part, "`noisy`").endswith("within the noise |")
    assert "`rerank`" not in part  # unavailable configs are not compared


def test_subsampling_and_answers_sections_show_their_sample_sizes():
    text = report()
    sub = section(text, "## How many questions")
    assert "10 questions" in sub and "24 questions (all)" in sub and "`hybrid`: a gain on all questions; gone or reversed" in sub
    answers = section(text, "## Answers (judge-free proxy)")
    assert "judge" in answers and table_row(answers, "`dense`").endswith(" | 20 |")
    assert "| `hybrid` | unavailable |" in answers
    assert "lexical support" not in answers  # no answer row has one: no column of empty cells


def test_the_answers_table_shows_lexical_support_only_when_an_answered_config_has_it():
    """dense: 20 answers, 18 with lexical support (0.5 each), 2 without; hybrid has no answers:
    its row leaves the support cells empty."""
    rows = [r for name, hits in (("dense", DENSE), ("hybrid", HYBRID))
            for r in config_rows(name, hits_to_ranks(hits), slices=SLICES, unanswerable=2)]
    answers = [{**answer_row("dense", f"q{i}", int(i < 7)), "lexical_support": None if i < 2 else 0.5}
               for i in range(20)]
    m = to_metrics(analyze(rows, answers, configs=CONFIGS, answered=["dense", "hybrid"], settings=SETTINGS))
    part = section(render(m, configs=CONFIGS, answered=["dense", "hybrid"], settings=SETTINGS),
                   "## Answers (judge-free proxy)")
    assert "| config | contains reference | 95% Wilson interval | n | lexical support | 95% bootstrap interval " \
           "| n (without) |" in part
    assert table_row(part, "`dense`").endswith(" | 20 | 0.500 | 0.500 to 0.500 | 18 (2 without) |")
    assert "| `hybrid` | unavailable |  |  |  |  |  |" in part
    assert "no supported / unsupported verdict" in part and "Support (groundedness)" in part
    assert "faithful" not in part


def test_the_subsampling_table_words_a_loss_as_a_loss():
    """``worse`` breaks 6 of dense's 10 hits and fixes none: a clear loss. Its row counts the draws
    where the loss would have gone or turned into a gain (0% with all questions), never "gain gone
    or reversed 100%"; the gain and the no-change rows say what they count too."""
    worse = [0] * 14 + [1] * 4 + [0] * 6
    rows = [r for name, hits in (("dense", DENSE), ("hybrid", HYBRID), ("noisy", NOISY), ("worse", worse))
            for r in config_rows(name, hits_to_ranks(hits), slices=SLICES)]
    configs = ["dense", "hybrid", "noisy", "worse"]
    metrics = to_metrics(analyze(rows, [], configs=configs, answered=[], settings=SETTINGS))
    sub = section(render(metrics, configs=configs, answered=[], settings=SETTINGS), "## How many questions")
    loss = table_row(sub, "`worse`: a loss on all questions; gone or reversed").split(" | ")
    ten = metrics["worse"]["subsample"]["n_10"]
    assert loss[1:] == [f"{100 * (1 - ten['reversed_share']):.0f}%", "0% |"]
    assert metrics["worse"]["subsample"]["all"]["lost_share"] == 1.0  # what the old row printed as 100%
    assert table_row(sub, "`hybrid`: a gain on all questions; gone or reversed").endswith(" | 0% |")
    assert table_row(sub, "`noisy`: no change on all questions; looked like a gain or a loss").endswith(" | 0% |")
    assert "gain gone" not in sub and "With all questions every share is 0%" in sub


def test_a_retrieval_only_run_shows_no_empty_audit_or_answers_table():
    """A retrieval-only run (answered configs listed, nothing answered) whose audit changed no
    question (an empty audit.jsonl, as on a BEIR import): no "Label audit" table of equal columns,
    and one line for the answers, not a table of "unavailable"."""
    rows = [r for name, hits in (("dense", DENSE), ("hybrid", HYBRID)) for r in config_rows(name, hits_to_ranks(hits),
                                                                                           slices=SLICES)]
    configs = ["dense", "hybrid"]
    result = analyze(rows, [], configs=configs, answered=configs, settings=SETTINGS)
    metrics = to_metrics(result)
    by_config = {c: [r for r in rows if r["config"] == c] for c in configs}
    for c in configs:  # the audit re-scored the same rankings with the same labels
        metrics[c]["audited"] = audit_entry(by_config[c], by_config[c], result.settings)
        assert (metrics[c]["audited"]["changed"], metrics[c]["audited"]["newly_found"]) == (0, 0)
    text = render(metrics, configs=configs, answered=configs, settings=SETTINGS)
    assert "Label audit" not in text and "unavailable" not in text
    answers = section(text, "## Answers (judge-free proxy)")
    assert "|" not in answers and len(answers.strip().splitlines()) == 3  # the heading, a blank line, one line
    assert "none of the answered configs (`dense`, `hybrid`) has an answer" in answers
    # an audit that found a hit keeps its table
    widened = [{**r, "hit_at_5": 1, "first_relevant_rank": 1} if r["id"] == "q0" else r for r in by_config["dense"]]
    metrics["dense"]["audited"] = audit_entry(by_config["dense"], widened, result.settings)
    audit = section(render(metrics, configs=configs, answered=configs, settings=SETTINGS), "## Label audit")
    assert "1 miss(es) turn out to be hits" in audit and table_row(audit, "`dense` (baseline)")


def test_how_to_read_states_the_rule_for_a_real_difference():
    part = section(report(), "## How to read this")
    assert "interval excludes 0" in part and "Holm-adjusted p-value is below 0.05" in part


def test_report_is_deterministic_and_ends_with_a_newline():
    first, second = report(), report()
    assert first == second and first.endswith("|\n")


def test_cluster_setting_adds_the_design_effect_column():
    cluster = StatsConfig(**{**SETTINGS.__dict__, "cluster": True})
    text = render(to_metrics(analyze(config_rows("dense", hits_to_ranks(DENSE), slices=SLICES), [],
                                     configs=["dense"], answered=[], settings=cluster)),
                  configs=["dense"], answered=[], settings=cluster)
    assert "design effect (recall@5)" in text and "source documents (cluster bootstrap)" in text


def test_no_baseline_says_so():
    text = render({"dense": {"available": 0}}, configs=["dense"], answered=[], settings=SETTINGS)
    assert "unavailable (no scored rows): no paired comparisons" in text


def test_table_escapes_pipes():
    assert table(["a"], [["x|y"]]).splitlines()[-1] == "| x\\|y |"


def test_the_config_table_shows_ndcg_for_a_graded_data_set():
    dense = config_rows("dense", hits_to_ranks([1, 0, 1, 1]))
    for r, v in zip(dense, [0.9, 0.1, 0.8, 0.7]):
        r.update(ndcg_at_10=v, recall_at_100=None)
    metrics = to_metrics(analyze(dense, [], configs=["dense"], answered=[],
                                 settings=StatsConfig(**{**SETTINGS.__dict__, "baseline": "dense"})))
    text = render(metrics, configs=["dense"], answered=[], settings=StatsConfig(**{**SETTINGS.__dict__,
                                                                                "baseline": "dense"}))
    header = next(line for line in text.splitlines() if line.startswith("| config"))
    assert "nDCG@10" in header and "recall@100" not in header
    assert "0.625" in text, "the mean nDCG@10, (0.9 + 0.1 + 0.8 + 0.7) / 4"


def test_configs_not_run_are_one_line_not_rows():
    """Configs left out by ``run_configs`` are named once in the intro, with the command that runs
    them, and get no row in any table; without any, the line is absent."""
    text = render(metrics(), configs=["dense", "hybrid", "noisy"], answered=["dense", "hybrid"], settings=SETTINGS,
                  not_run=["rerank", "hyde"])
    line = next(x for x in text.splitlines() if x.startswith("Not run:"))
    assert line == ("Not run: `rerank`, `hyde` (left out by `run_configs`; `dvc exp run -S run_configs=all` "
                    "runs every config).")
    assert text.count("`rerank`") == 1 and "| `rerank` |" not in text
    assert "Not run:" not in report()
