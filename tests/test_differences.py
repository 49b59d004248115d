"""Paired model comparisons (issue 26): compared pairs, Holm's correction and the differences table,
checked against hand-computed values."""
import numpy as np
import polars as pl
import pytest

from workflow_scripts import differences
from workflow_scripts.bootstrap import replicate_rows, write_replicates
from workflow_scripts.paired_statistics import adjust_families, benjamini_hochberg, compared_pairs, holm

ST, BOW = {"family": "sentence_transformers"}, {"family": "surface_form"}


@pytest.mark.parametrize("against,expected", [
    # each model against the baseline, then against the first listed non-baseline model
    ("default", [("a", "bow"), ("b", "bow"), ("c", "bow"), ("b", "a"), ("c", "a")]),
    ("all_pairs", [("a", "bow"), ("a", "b"), ("a", "c"), ("bow", "b"), ("bow", "c"), ("b", "c")]),
    ("b", [("a", "b"), ("bow", "b"), ("c", "b")]),
    ("nobody", []),
])
def test_compared_pairs(against, expected):
    models = {"a": ST, "bow": BOW, "b": ST, "c": {"family": "tfidf"}}
    assert compared_pairs(models, {"against": against}) == expected


def test_compared_pairs_without_a_baseline_and_with_two():
    assert compared_pairs({"a": ST, "b": ST, "c": ST}, None) == [("b", "a"), ("c", "a")]
    assert compared_pairs({"a": ST}, {}) == []
    two = {"bow": BOW, "a": ST, "bow2": BOW}
    assert compared_pairs(two, {"against": "default"}) == [("a", "bow"), ("a", "bow2")]


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04, 0.2 -> x4 0.04, x3 0.09, x2 0.08 (raised to the running 0.09), x1 0.2
    adjusted, rejected = holm([0.01, 0.04, 0.03, 0.2])
    assert adjusted == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert rejected == [True, False, False, False]
    # an undefined p-value is left out of the family: m = 2
    adjusted, rejected = holm([float("nan"), 0.01, 0.04])
    assert np.isnan(adjusted[0]) and adjusted[1:] == pytest.approx([0.02, 0.04])
    assert rejected == [False, True, True]
    adjusted, _ = holm([0.5, 0.6])
    assert adjusted == pytest.approx([1.0, 1.0])  # capped at 1


def write(path, parts):
    write_replicates(path, parts)
    return str(path)


def test_differences_table_by_hand(tmp_path):
    """Five replicates per model of CSC's headline, the within-sentence AUC (higher is better).
    m1 - bow is 0.20, 0.19, 0.21, 0.18, 0.22 replicate by replicate: sorted, the 2.5th percentile at
    rank 0.1 -> 0.18 + 0.1 x 0.01 = 0.181, the 97.5th at rank 3.9 -> 0.21 + 0.9 x 0.01 = 0.219; its
    standard error (ddof 1) 0.0158, so p = 2 Phi(-0.21/0.0158), the normal approximation (never the
    2/(B + 1) of a count of replicates). The two comparisons with the baseline are the confirmatory
    family (m = 2): Holm, then the verdict from the (1 - 0.05/2) interval and the margin 0.05. m2 - m1
    is exploratory: BH q of a family of one is its p, and no verdict."""
    from scipy.special import ndtr, ndtri
    stat = "negation/within_auc"
    bow = [0.50, 0.55, 0.52, 0.51, 0.56]
    m1 = [0.70, 0.74, 0.73, 0.69, 0.78]
    m2 = [0.52, 0.53, 0.57, 0.50, 0.55]
    files = [write(tmp_path / f"{m}.parquet", [replicate_rows("csc", "pc_en", stat, m, point, v, 40)])
             for m, point, v in (("m1", 0.74, m1), ("bow", 0.53, bow), ("m2", 0.54, m2))]
    models = {"m1": ST, "m2": ST, "bow": BOW}
    out = tmp_path / "csc_differences.csv"
    differences.build("csc", files, models, {"against": "default"}, str(out), ranks_out=str(tmp_path / "r.csv"))
    table = pl.read_csv(out)
    assert table.columns == list(differences.SCHEMA)
    assert table["test"].to_list() == ["bootstrap_z"] * 3  # no per-item files: the replicates decide
    assert table.select("model_a", "model_b").rows() == [("m1", "bow"), ("m2", "bow"), ("m2", "m1")]
    first = table.row(0, named=True)
    assert (first["probe"], first["dataset"], first["statistic"]) == ("csc", "pc_en", stat)
    assert (first["value_a"], first["value_b"]) == (0.74, 0.53)
    assert first["difference"] == pytest.approx(0.21)
    assert (first["ci_low"], first["ci_high"]) == pytest.approx((0.181, 0.219))
    se = np.std(np.subtract(m1, bow), ddof=1)
    assert first["se"] == pytest.approx(se) and first["units"] == 40
    assert first["p_value"] == pytest.approx(2 * ndtr(-0.21 / se), rel=1e-9)
    assert first["ahead"] == "m1" and first["replicates"] == 5
    assert (first["family"], first["method"], first["significant"]) == ("confirmatory", "holm", True)
    z = ndtri(1 - 0.05 / 4)
    assert (first["adjusted_low"], first["adjusted_high"]) == pytest.approx((0.21 - z * se, 0.21 + z * se))
    assert first["margin"] == 0.05 and first["verdict"] == "better"  # the whole interval above 0.05
    second = table.row(1, named=True)
    assert second["difference"] == pytest.approx(0.01) and second["significant"] is False
    assert second["verdict"] == "inconclusive" and second["mde"] > 0.01
    third = table.row(2, named=True)
    assert third["ahead"] == "m1"
    assert (third["family"], third["method"], third["significant"], third["verdict"]) == (
        "exploratory", "bh", None, None)
    assert third["p_adjusted"] == pytest.approx(third["p_value"])
    ranks = pl.read_csv(tmp_path / "r.csv")
    assert ranks["model"].to_list()[0] == "m1" and ranks["rank"].to_list()[0] == "1 of 3"


def test_an_identical_copy_differs_by_nothing_and_unknown_directions_name_no_model(tmp_path):
    reps = np.random.default_rng(0).uniform(0.3, 0.6, 50)
    parts = [replicate_rows("triplets", "d", stat, m, 0.5, reps) for m in ("minilm", "minilm_copy")
             for stat in ("accuracy", "mean_s_splus")]
    table = differences.build("triplets", [write(tmp_path / "r.parquet", parts)], {"minilm": ST, "minilm_copy": ST},
                          {"against": "all_pairs"}, str(tmp_path / "t.csv"))
    assert table["statistic"].to_list() == ["accuracy", "mean_s_splus"]
    assert table["difference"].to_list() == [0.0, 0.0] and table["ci_low"].to_list() == [0.0, 0.0]
    assert table["p_value"].to_list() == [1.0, 1.0] and not table["significant"].any()
    # no surface-form baseline: nothing is confirmatory, nothing decided
    assert table["family"].to_list() == ["exploratory"] * 2 and table["significant"].null_count() == 2
    assert table["ahead"].to_list() == ["neither", None]  # the mean cosine has no direction


def test_mismatched_replicates_and_nothing_to_compare(tmp_path):
    parts = [replicate_rows("montague", "t", "single/AN/x", "a", 0.5, np.ones(4)),
             replicate_rows("montague", "t", "single/AN/x", "b", 0.5, np.ones(5))]
    with pytest.raises(ValueError, match="b has 5 replicates, a 4"):
        differences.build("montague", [write(tmp_path / "r.parquet", parts)], {"a": ST, "b": ST}, {}, str(tmp_path / "x.csv"))
    empty = differences.build("montague", [write(tmp_path / "e.parquet", [])], {"a": ST}, {}, str(tmp_path / "e.csv"))
    assert empty.height == 0 and pl.read_csv(tmp_path / "e.csv").columns == list(differences.SCHEMA)


def test_overview_marks_cells_not_shown_better_than_the_baseline():
    """B where the cell's verdict is neither `better` nor `better, size unclear`; none on the
    baseline, on cells without a verdict, or without a baseline in the run."""
    from workflow_scripts.report.overview import not_better_than_baseline
    models = {"good": ST, "unclear": ST, "small": ST, "same": ST, "worse": ST, "bow": BOW, "alone": ST}
    verdicts = {(m, "c"): {"verdict": w} for m, w in (("good", "better"), ("unclear", "better, size unclear"),
                                                       ("small", "negligibly better"), ("same", "equivalent"),
                                                       ("worse", "worse"), ("bow", "no verdict"),
                                                       ("alone", "no verdict"))}
    rows = [dict(probe="csc", model=m, column="c") for m in models]
    assert not_better_than_baseline(rows, verdicts, models) == {("small", "c"), ("same", "c"), ("worse", "c")}
    assert not_better_than_baseline(rows, verdicts, {m: ST for m in models}) == set()  # no baseline configured
    wrong = [dict(probe="csc", model="good", column="c", wrong_direction=True)]
    assert not_better_than_baseline(wrong, verdicts, models) == {("good", "c")}


def test_report_shows_the_paired_differences_of_the_headline_figures_only(tmp_path):
    """report.md's block lists the rows of the probe's headline statistics, with their family, the
    adjusted p and the verdict word with its margin on the confirmatory rows only."""
    from workflow_scripts.report.markdown import differences_block
    table = tmp_path / "csc_differences.csv"
    pl.DataFrame({"probe": ["csc"] * 4, "dataset": ["pc_en", "pc_en", "pc_nl", "pc_nl"],
                  "statistic": ["negation/within_auc", "fuzzing/overlap", "negation/within_auc",
                                "negation/within_auc"],
                  "model_a": ["minilm", "minilm", "minilm", "mpnet"], "model_b": ["form_only"] * 3 + ["minilm"],
                  "value_a": [0.8, 0.6, 0.55, 0.6], "value_b": [0.5, 0.6, 0.5, 0.55],
                  "difference": [0.3, 0.0, 0.05, 0.05],
                  "ci_low": [0.2, -0.1, -0.1, 0.0], "ci_high": [0.4, 0.1, 0.2, 0.1],
                  "p_value": [0.01, 1.0, 0.4, 0.04], "test": ["bootstrap_z"] * 4,
                  "family": ["confirmatory"] * 3 + ["exploratory"],
                  "p_adjusted": [0.03, 1.0, 0.8, 0.04], "method": ["holm"] * 3 + ["bh"],
                  "significant": [True, False, False, None], "margin": [0.05, None, 0.05, None],
                  "verdict": ["better", "inconclusive", "inconclusive", None], "reason": [None] * 4,
                  "ahead": ["minilm", "neither", "minilm", "mpnet"], "replicates": [200] * 4}).write_csv(table)
    figures = [{"dataset": "pc_en", "statistic": "negation/within_auc"},
               {"dataset": "pc_nl", "statistic": "negation/within_auc"}, {"dataset": "x", "statistic": None}]
    lines = differences_block(str(table), figures)
    body = [line for line in lines if line.startswith("| pc_")]
    assert body == [
        "| pc_en | negation/within_auc | minilm | form_only | 0.300 [0.200, 0.400] | 0.010 | confirmatory | 0.030 (holm) "
        "| better | 0.05 | minilm |",
        "| pc_nl | negation/within_auc | minilm | form_only | 0.050 [-0.100, 0.200] | 0.400 | confirmatory | 0.800 "
        "(holm) | inconclusive | 0.05 | minilm |",
        "| pc_nl | negation/within_auc | mpnet | minilm | 0.050 [0.000, 0.100] | 0.040 | exploratory | 0.040 (bh) |  |"
        "  | mpnet |"]
    assert any("3 comparisons, Holm" in line and "(1 significant)" in line and "(4 in all)" in line for line in lines)
    assert differences_block(str(table), [{"dataset": "pc_en", "statistic": "other"}]) == []


def test_a_difference_without_spread_gets_no_verdict():
    """One item (every resample draws it): A - B is the same in every replicate; a bootstrap without
    spread says nothing, so p is undefined and the row is not significant; identical models (0 in
    every replicate) keep p = 1."""
    one = differences.compare_pair("a", "b", (0.0, np.zeros(200), 1), (0.634, np.full(200, 0.634), 1), None)
    assert np.isnan(one["p_value"]) and one["ci_low"] == one["ci_high"] == pytest.approx(-0.634)
    same = differences.compare_pair("a", "b", (0.5, np.full(200, 0.5), 1), (0.5, np.full(200, 0.5), 1), None)
    assert same["p_value"] == 1.0
    _, rejected = holm([one["p_value"], 0.001])
    assert rejected == [False, True]


# ---- issue 32: p never 0, families, B large enough ---------------------------------------------------

def test_holm_within_a_four_row_confirmatory_family_by_hand():
    """Confirmatory p 0.01, 0.02, 0.03, 0.5 (m = 4): Holm's thresholds 0.05/4 = 0.0125, 0.05/3 =
    0.0167, ...: 0.01 <= 0.0125 is rejected, 0.02 > 0.0167 stops the step-down, so only the first
    row is significant; adjusted 4 x 0.01 = 0.04, 3 x 0.02 = 0.06, 2 x 0.03 = 0.06, 0.5. The
    exploratory rows do not enter the family: their p 0.001, 0.04, 0.2, 0.9 get BH q
    (m = 4: min over the larger ranks of p (4 / rank)) 0.004, 0.08, 0.2667, 0.9 and no verdict.
    Over the whole table (today) the exploratory 0.001 would take the family's first place and
    the confirmatory 0.01 would need 0.05/7."""
    p = [0.01, 0.001, 0.02, 0.04, 0.03, 0.2, 0.5, 0.9]
    families = ["confirmatory", "exploratory"] * 4
    adjusted, method, significant = adjust_families(p, families)
    assert significant == [True, None, False, None, False, None, False, None]
    assert method == ["holm", "bh"] * 4
    assert adjusted[0::2] == pytest.approx([0.04, 0.06, 0.06, 0.5])
    assert adjusted[1::2] == pytest.approx([0.004, 0.08, 0.8 / 3, 0.9])
    assert benjamini_hochberg([0.9, float("nan"), 0.001]) == pytest.approx([0.9, np.nan, 0.002], nan_ok=True)
    adjusted, method, _ = adjust_families(p, families, exploratory="none")
    assert method[1::2] == ["none"] * 4 and all(np.isnan(adjusted[1::2]))
    with pytest.raises(ValueError, match="compare.error_rate.exploratory"):
        adjust_families(p, families, exploratory="fdr")


def test_the_confirmatory_family_is_each_model_vs_the_baseline_on_the_headline_statistics(tmp_path):
    """Triplets: accuracy is the headline figure, the mean cosines are not. a beats the baseline in
    every one of 999 replicates, b does not; the family is (a, bow) and (b, bow) on accuracy: m = 2,
    Holm twice a's p, a significant. (b, a) on accuracy and every mean-cosine row are exploratory.
    `whole_table` puts every row in one family."""
    rng = np.random.default_rng(1)
    base = rng.uniform(0.4, 0.6, 999)
    reps = {"a": base + rng.uniform(0.05, 0.1, 999), "b": base + rng.normal(0, 0.05, 999), "bow": base}
    parts = [replicate_rows("triplets", "d", stat, m, float(v.mean()), v) for m, v in reps.items()
             for stat in ("accuracy", "mean_s_splus")]
    models = {"a": ST, "b": ST, "bow": BOW}
    path = write(tmp_path / "r.parquet", parts)
    table = differences.build("triplets", [path], models, {}, str(tmp_path / "t.csv"))
    rows = {(r["statistic"], r["model_a"], r["model_b"]): r for r in table.iter_rows(named=True)}
    assert {k for k, r in rows.items() if r["family"] == "confirmatory"} == {("accuracy", "a", "bow"),
                                                                           ("accuracy", "b", "bow")}
    first = rows[("accuracy", "a", "bow")]
    assert first["p_value"] < 1e-5 and first["p_adjusted"] == pytest.approx(2 * first["p_value"])
    assert first["significant"] and first["method"] == "holm"
    assert all(r["significant"] is None and r["method"] == "bh" for r in rows.values() if r["family"] == "exploratory")
    whole = differences.build("triplets", [path], models, {"family": "whole_table", "error_rate": {"exploratory": "none"}},
                          str(tmp_path / "w.csv"))
    assert set(whole["family"]) == {"confirmatory"} and set(whole["method"]) == {"holm"}


def test_headline_statistics_follow_the_declarations_and_options():
    from workflow_scripts.probes import headline_statistics
    assert headline_statistics("retrieval", {"retrieval_k": 10}) == ("accuracy@10", "ndcg@10")
    assert headline_statistics("settheory", {"settheory_measure": "dot"}) == ("c1/dot/T,T", "c3/dot/T,T")
    assert headline_statistics("triplets") == ("accuracy",)
    assert headline_statistics("domain_shift") == ()  # no declared better side: no confirmatory family
    assert "single/AN/intersective" in headline_statistics("montague")
    assert headline_statistics("csc") == ("*/within_auc",)  # the verdict's statistic, not the overlap


def test_only_the_confirmatory_family_decides_the_verdict():
    """An exploratory row that says `significant` (a table written with another family) is no verdict:
    the cell it alone compares with the baseline is `not compared`."""
    from workflow_scripts.report.overview import baseline_verdicts
    models = {"good": ST, "bow": BOW}
    diffs = pl.DataFrame([dict(probe="csc", dataset="c", statistic="negation/within_auc", model_a="good",
                               model_b="bow", family="exploratory", significant=True, ahead="good", verdict=None,
                               difference=0.2, value_b=0.5)])
    rows = [dict(probe="csc", dataset="c", statistic="negation/within_auc", model="good", column="csc_c_negation")]
    assert baseline_verdicts(rows, diffs, models)[("good", "csc_c_negation")]["reason"] == "not compared"
    confirmed = diffs.with_columns(pl.lit("confirmatory").alias("family"), pl.lit("better").alias("verdict"))
    assert baseline_verdicts(rows, confirmed, models)[("good", "csc_c_negation")]["verdict"] == "better"


# ---- exact tests for right/wrong items ----------------------------------------------------------------

def test_mcnemar_exact_on_a_hand_made_table():
    """2 x 2 table of 40 items: both right 20, A right B wrong b = 9, A wrong B right c = 2, both wrong
    9. McNemar uses the 11 discordant items: P(X <= 2 or X >= 9), X ~ Bin(11, 1/2) =
    2 (1 + 11 + 55) / 2^11 = 134/2048 = 0.0654, scipy's exact binomial test."""
    from scipy.stats import binomtest

    from workflow_scripts.paired_statistics import mcnemar_exact
    assert mcnemar_exact(9, 2) == pytest.approx(134 / 2048)
    assert mcnemar_exact(9, 2) == pytest.approx(binomtest(9, 11, 0.5).pvalue)
    assert mcnemar_exact(2, 9) == mcnemar_exact(9, 2)
    # the case: 23 triplets, SmolLM2 right on all, word overlap on none: p = 2 x 2^-23 = 2^-22
    assert mcnemar_exact(23, 0) == pytest.approx(2.0 ** -22)
    assert mcnemar_exact(0, 0) == 1.0


# ---- McNemar decides the triplets' accuracy rows (issue 32, point 3) ------------------------------------

def write_outcomes(path, correct):
    """A per-item outcome file as triplets' scores.parquet holds it: `id` and `correct` (None: no verdict)."""
    pl.DataFrame({"id": pl.Series(range(len(correct)), dtype=pl.UInt64),
                  "correct": pl.Series(correct, dtype=pl.Boolean)}).write_parquet(path)
    return str(path)


def accuracy_replicates(dataset, model, correct, b=200):
    """The model's accuracy and paired bootstrap replicates of it (item resamples shared by the models)."""
    flags = np.array([bool(c) for c in correct if c is not None], dtype=np.float64)
    counts = np.random.default_rng(5).multinomial(len(correct), np.full(len(correct), 1 / len(correct)), size=b)
    defined = np.array([c is not None for c in correct], dtype=np.float64)
    values = np.array([bool(c) for c in correct], dtype=np.float64)
    reps = (counts @ values) / np.maximum(counts @ defined, 1)
    return replicate_rows("triplets", dataset, "accuracy", model, float(flags.mean()), reps)


@pytest.fixture
def binary_items(tmp_path):
    """Dataset `table`: 41 items, both right 20, a right and bow wrong b = 9, a wrong and bow right
    c = 2, both wrong 9, and one item bow cannot judge (null; a right) that McNemar leaves out.
    Dataset `fixed`: the issue's 23 triplets, a right on every one and the baseline on none, so the
    bootstrap difference is 1 in every replicate and gets no p. A third model `c` equals `a`."""
    a = [True] * 20 + [True] * 9 + [False] * 2 + [False] * 9 + [True]
    bow = [True] * 20 + [False] * 9 + [True] * 2 + [False] * 9 + [None]
    items = {("table", "a"): a, ("table", "bow"): bow, ("table", "c"): a,
             ("fixed", "a"): [True] * 23, ("fixed", "bow"): [False] * 23, ("fixed", "c"): [True] * 23}
    parts, outcomes = [], []
    for (dataset, model), correct in items.items():
        parts.append(accuracy_replicates(dataset, model, correct))
        outcomes.append({"dataset": dataset, "statistic": "accuracy", "model": model,
                         "path": write_outcomes(tmp_path / f"{dataset}-{model}.parquet", correct)})
    return write(tmp_path / "replicates.parquet", parts), outcomes


def test_mcnemar_decides_the_accuracy_rows_against_the_baseline(tmp_path, binary_items):
    """The confirmatory family: (a, bow) and (c, bow) on both datasets, m = 4. On `table` McNemar's
    p = 134/2048 (b = 9, c = 2); on `fixed` p = 2 x 2^-23 = 2^-22, where the bootstrap gives none.
    Holm: both 2^-22 rows adjust to 4 x 2^-22, significant; both 134/2048 rows to 2 x 134/2048 =
    0.131, not.
    (c, a) are exploratory but tested the same way: no discordant item, p = 1."""
    replicates, outcomes = binary_items
    models = {"a": ST, "bow": BOW, "c": ST}
    table = differences.build("triplets", [replicates], models, {}, str(tmp_path / "t.csv"), outcomes=outcomes)
    rows = {(r["dataset"], r["model_a"], r["model_b"]): r for r in table.iter_rows(named=True)}
    hand = rows[("table", "a", "bow")]
    assert (hand["test"], hand["discordant_b"], hand["discordant_c"]) == ("mcnemar", 9, 2)
    assert hand["p_value"] == pytest.approx(134 / 2048) and hand["family"] == "confirmatory"
    assert hand["p_adjusted"] == pytest.approx(2 * 134 / 2048) and hand["significant"] is False
    assert hand["verdict"] == "inconclusive"  # 0.175 apart, the score interval reaching below 0
    fixed = rows[("fixed", "a", "bow")]
    assert (fixed["test"], fixed["discordant_b"], fixed["discordant_c"]) == ("mcnemar", 23, 0)
    assert fixed["p_value"] == pytest.approx(2.0 ** -22) and fixed["difference"] == 1.0
    assert fixed["p_adjusted"] == pytest.approx(4 * 2.0 ** -22) and fixed["significant"] is True
    assert fixed["verdict"] == "better" and fixed["adjusted_low"] > 0.05
    assert rows[("fixed", "c", "bow")]["significant"] is True
    same = rows[("table", "c", "a")]
    assert (same["test"], same["discordant_b"], same["discordant_c"], same["p_value"]) == ("mcnemar", 0, 0, 1.0)
    assert same["family"] == "exploratory"
    # without the per-item files the same rows fall back on the bootstrap: `fixed` gets no p at all
    bootstrap = differences.build("triplets", [replicates], models, {}, str(tmp_path / "b.csv"))
    row = bootstrap.filter((pl.col("dataset") == "fixed") & (pl.col("model_a") == "a")).row(0, named=True)
    assert row["test"] == "bootstrap_z" and row["discordant_b"] is None and np.isnan(row["p_value"])
    assert not row["significant"]


def test_the_job_takes_the_outcome_files(tmp_path, binary_items, capsys):
    from workflow_scripts.jobs import make_job
    replicates, outcomes = binary_items
    out = tmp_path / "triplets_differences.csv"
    differences.run_probe_differences(make_job(
        input={"replicates": [replicates], "outcomes": [e["path"] for e in outcomes]},
        output={"differences": str(out), "ranks": str(tmp_path / "ranks.csv")},
        params={"models": {"a": {"family": "sentence_transformers"}, "bow": {"family": "surface_form"}},
                "compare": {}, "headline_options": {}, "outcomes": outcomes},
        wildcards={"probe": "triplets"}))
    table = pl.read_csv(out)
    assert table.columns[12:16] == ["p_value", "test", "discordant_b", "discordant_c"]
    row = table.filter(pl.col("dataset") == "table").row(0, named=True)
    assert (row["model_a"], row["test"], row["p_value"]) == ("a", "mcnemar", pytest.approx(134 / 2048))
    # the log's line: a and c (in the replicates, not in params.models) each vs bow on both datasets
    # (confirmatory; Holm rejects the two `fixed` rows, 4 x 2^-22), c vs a exploratory; all by McNemar
    assert capsys.readouterr().out == ("triplets: 6 comparisons; confirmatory family 4 (2 significant, Holm, "
                                       "alpha 0.05), 2 exploratory; verdicts: 2 inconclusive, 2 better; 6 by "
                                       "McNemar's exact test (per-item right/wrong)\n")
    # every model ranked on each figure: a and c (the same items) share the top on `fixed`
    ranks = pl.read_csv(tmp_path / "ranks.csv").filter(pl.col("dataset") == "fixed")
    assert dict(zip(ranks["model"], ranks["rank"])) == {"a": "1\u20132 of 3", "c": "1\u20132 of 3", "bow": "3 of 3"}


def test_the_triplets_plan_hands_each_models_verdicts_to_the_differences_table():
    from workflow_scripts import probes
    from workflow_scripts.config import validate
    from workflow_scripts.study import Study
    config = validate({"seed": 1, "embedding_partitions": 2,
                       "sources": {"s": {"format": "lines", "path": "s.txt", "languages": ["en"]}},
                       "corpora": {"c": {"source": "s", "language": "en"}},
                       "models": {"a": {"family": "hashing", "dim": 8}, "bow": {"family": "surface_form"}},
                       "triplets": {"datasets": {"one": {"file": "one.tsv"}}}})
    study = Study(config, "res")
    plans = {p.name: p.planner()(study, p) for p in probes.declarations()}
    assert plans["triplets"].outcome_entries() == [
        {"dataset": "one", "statistic": "accuracy", "model": m, "path": f"res/triplets/one/{m}/scores.parquet",
         "cluster": "cluster"} for m in ("a", "bow")]
    assert plans["triplets"].outcome_files() == ["res/triplets/one/a/scores.parquet",
                                                 "res/triplets/one/bow/scores.parquet"]
    assert plans["csc"].outcome_entries() == []  # no per-item shares: the bootstrap decides


def test_report_block_names_mcnemar_and_never_shows_a_tiny_p_as_zero(tmp_path, binary_items):
    from workflow_scripts.report.markdown import differences_block
    replicates, outcomes = binary_items
    out = tmp_path / "triplets_differences.csv"
    differences.build("triplets", [replicates], {"a": ST, "bow": BOW, "c": ST}, {}, str(out), outcomes=outcomes)
    lines = differences_block(str(out), [{"dataset": "fixed", "statistic": "accuracy"}])
    body = [line for line in lines if line.startswith("| fixed")]
    # p = 2^-22 = 2.4e-07, Holm x 4 = 9.5e-07 (today's block printed 0.000)
    assert body[0] == ("| fixed | accuracy | a | bow | 1.000 [1.000, 1.000] | 2.4e-07 (McNemar, b = 23, c = 0) | "
                       "confirmatory | 9.5e-07 (holm) | better | 0.05 | a |")
    assert any("McNemar's exact test" in line for line in lines)


def test_the_b_mark_follows_mcnemar_and_tables_without_it_still_combine(tmp_path, binary_items):
    """The issue's case on the first screen: a right on all 23 `fixed` triplets, the baseline on
    none. McNemar (p = 2^-22) makes a significantly better: no mark B; by the bootstrap alone (no p)
    it was marked. A CSC table (bootstrap rows only, empty discordant counts) reads beside it."""
    from workflow_scripts.report.overview import baseline_verdicts, not_better_than_baseline, read_differences
    replicates, outcomes = binary_items
    models = {"a": ST, "bow": BOW, "c": ST}
    exact = differences.build("triplets", [replicates], models, {}, str(tmp_path / "t.csv"), outcomes=outcomes)
    differences.build("triplets", [replicates], models, {}, str(tmp_path / "b.csv"))
    csc = write(tmp_path / "csc.parquet", [replicate_rows("csc", "pc", "negation/overlap", m, 0.5, np.linspace(0, 1, 9))
                                           for m in ("a", "bow")])
    differences.build("csc", [csc], models, {}, str(tmp_path / "c.csv"))
    both = read_differences([str(tmp_path / "c.csv"), str(tmp_path / "t.csv")])
    assert both.height == exact.height + 1 and both["discordant_b"].dtype == pl.Int64
    rows = [dict(probe="triplets", dataset="fixed", statistic="accuracy", model="a", column="triplets_fixed")]
    assert not_better_than_baseline(rows, baseline_verdicts(rows, both, models), models) == set()
    bootstrap_only = read_differences([str(tmp_path / "b.csv")])
    # by the bootstrap alone the difference has no spread and no p: no verdict, so no B either
    verdicts = baseline_verdicts(rows, bootstrap_only, models)
    assert verdicts[("a", "triplets_fixed")]["reason"] == "no p"


def test_23_of_23_against_0_of_23_is_better_on_the_first_screen(tmp_path, binary_items):
    """Issue 32's case: a model right on all 23 fixed-point-reorder triplets, the word-overlap
    baseline on none. McNemar: b = 23, c = 0, p = 2 x 2^-23 = 2^-22 (the bootstrap has no spread and
    gives none); Holm over the family of 4 keeps it far below 0.05, and the first screen's verdict
    is `better` (it was `no difference`, mark B, with the bootstrap's undefined p)."""
    from workflow_scripts.report import overview as O
    replicates, outcomes = binary_items
    models = {"a": ST, "bow": BOW, "c": ST}
    out = tmp_path / "triplets_differences.csv"
    differences.build("triplets", [replicates], models, {}, str(out), outcomes=outcomes)
    diffs = O.read_differences([str(out)])
    fixed = diffs.filter((pl.col("dataset") == "fixed") & (pl.col("model_a") == "a")).row(0, named=True)
    assert fixed["p_value"] == pytest.approx(2.0 ** -22, rel=1e-12)
    cell = {"model": "a", "column": "triplets_fixed", "label": "triplets fixed accuracy", "value": 1.0,
            "ci_low": 0.85, "ci_high": 1.0, "n": 23, "unit": "triplets", "probe": "triplets", "dataset": "fixed",
            "statistic": "accuracy", "lower_is_better": False, "bounds": [0.0, 1.0]}
    verdicts = O.baseline_verdicts([cell, {**cell, "model": "bow", "value": 0.0}], diffs, models)
    assert verdicts[("a", "triplets_fixed")]["verdict"] == "better"
    assert verdicts[("bow", "triplets_fixed")]["verdict"] == "no verdict"


# ---- triplets sharing an original: the exact cluster sign-flip test (issue 32, point 2) -------------

def test_sign_flip_exact_by_hand_and_equal_to_mcnemar_with_one_item_per_cluster():
    """d = [2, 1, -1]: observed sum 2; the 8 sign patterns +-2 +-1 +-1 sum to 4, 2, 2, 0, 0, -2, -2,
    -4, of which 6 reach |2|: p = 6/8. d = [3, 1]: sums 4, 2, -2, -4, two reach 4: p = 1/2. A zero
    d_c weighs nothing; no nonzero d_c: p = 1. One item per cluster: d_c = +-1, McNemar's test
    (b = 23, c = 0: 2 x 2^-23 = 2^-22; b = 9, c = 2: 134/2048)."""
    from workflow_scripts.paired_statistics import mcnemar_exact, sign_flip_exact
    assert sign_flip_exact([2, 1, -1]) == 0.75
    assert sign_flip_exact([3, 1]) == 0.5
    assert sign_flip_exact([3, 0, 1, 0]) == 0.5
    assert sign_flip_exact([0, 0]) == 1.0 and sign_flip_exact([]) == 1.0
    assert sign_flip_exact([1] * 23) == 2.0 ** -22 == pytest.approx(mcnemar_exact(23, 0))
    assert sign_flip_exact([1] * 9 + [-1] * 2) == pytest.approx(134 / 2048)
    for b, c in ((0, 5), (7, 7), (12, 3), (30, 18)):
        assert sign_flip_exact([1] * b + [-1] * c) == pytest.approx(mcnemar_exact(b, c), rel=1e-12)
    # exact, never 0: 1,100 clusters all one way is 2^-1099, below the smallest float; the floor is > 0
    assert 0 < sign_flip_exact([1] * 1100) < 1e-300


def test_cluster_differences_sum_each_clusters_items():
    from workflow_scripts.paired_statistics import cluster_differences
    # clusters x: (1-0) + (1-1) = 1; y: (0-1) = -1; z: (1-0) + (1-0) = 2 (sorted labels x, y, z)
    d = cluster_differences([1, 1, 0, 1, 1], [0, 1, 1, 0, 0], ["x", "x", "y", "z", "z"])
    assert d.tolist() == [1, -1, 2]


def write_clustered_outcomes(path, correct, originals):
    pl.DataFrame({"id": pl.Series(range(len(correct)), dtype=pl.UInt64),
                  "correct": pl.Series(correct, dtype=pl.Boolean),
                  "original": pl.Series(originals, dtype=pl.String)}).write_parquet(path)
    return str(path)


def test_triplets_sharing_an_original_are_tested_by_the_cluster_sign_flip(tmp_path):
    """Dataset `shared`: 4 triplets from 3 originals P, Q, R; a right on P's two and on R, bow on Q:
    d = [2, -1, 1] (P, Q, R), observed 2, p = 6/8 by hand (as [2, 1, -1]); McNemar over the 4
    triplets as if independent (b = 3, c = 1) would say 5/8. Dataset `alone`: each triplet its own
    original, so McNemar's test as before (b = 3, c = 1: p = 10/16)."""
    a, bow = [True, True, False, True], [False, False, True, False]
    parts, outcomes = [], []
    for dataset, originals in (("shared", ["P", "P", "Q", "R"]), ("alone", ["P", "Q", "R", "S"])):
        for model, correct in (("a", a), ("bow", bow)):
            parts.append(accuracy_replicates(dataset, model, correct))
            outcomes.append({"dataset": dataset, "statistic": "accuracy", "model": model, "cluster": "original",
                             "path": write_clustered_outcomes(tmp_path / f"{dataset}-{model}.parquet", correct,
                                                              originals)})
    table = differences.build("triplets", [write(tmp_path / "r.parquet", parts)], {"a": ST, "bow": BOW}, {},
                          str(tmp_path / "t.csv"), outcomes=outcomes)
    rows = {r["dataset"]: r for r in table.iter_rows(named=True)}
    shared = rows["shared"]
    assert (shared["test"], shared["discordant_b"], shared["discordant_c"]) == ("sign_flip_exact", 3, 1)
    assert shared["p_value"] == 0.75
    assert (rows["alone"]["test"], rows["alone"]["p_value"]) == ("mcnemar", pytest.approx(10 / 16))
    assert "exact cluster sign-flip" in differences.summary("triplets", table)
    from workflow_scripts.report.markdown import differences_block
    lines = differences_block(str(tmp_path / "t.csv"), [{"dataset": "shared", "statistic": "accuracy"}])
    assert any("| 0.750 (sign flip, b = 3, c = 1) |" in line for line in lines)
    assert any("cluster sign-flip test" in line for line in lines)
    # the same files without the entry's `cluster`: every triplet alone, McNemar (5/8 for `shared`)
    plain = differences.build("triplets", [write(tmp_path / "r.parquet", parts)], {"a": ST, "bow": BOW}, {},
                          str(tmp_path / "p.csv"), outcomes=[{k: v for k, v in e.items() if k != "cluster"}
                                                             for e in outcomes])
    assert plain.filter(pl.col("dataset") == "shared")["test"].to_list() == ["mcnemar"]
    assert plain.filter(pl.col("dataset") == "shared")["p_value"][0] == pytest.approx(10 / 16)
