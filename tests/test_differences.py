"""Paired model comparisons (issue 26): compared pairs, Holm's correction and the differences table,
checked against hand-computed values."""
import numpy as np
import polars as pl
import pytest

from workflow_scripts import differences
from workflow_scripts.bootstrap import replicate_rows, write_replicates
from workflow_scripts.paired_statistics import (adjust_families, b_too_small, benjamini_hochberg, bootstrap_p_value,
                                          compared_pairs, holm, paired_difference)

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
    """Five replicates per model; m1 - bow is -0.2, -0.2, -0.35, -0.17, -0.45 replicate by replicate:
    sorted -0.45, -0.35, -0.2, -0.2, -0.17, the 2.5th percentile at rank 0.1 -> -0.45 + 0.1 x 0.10 =
    -0.44, the 97.5th at rank 3.9 -> -0.2 + 0.9 x 0.03 = -0.173; all <= 0: k_le 5, k_ge 0,
    p = 2 (1 + 0) / (5 + 1) = 1/3, never 0. m2 - bow is 0.1, -0.1, 0.2, 0.05, -0.05: k_le 2, k_ge 3,
    p = min(1, 2 x 3/6) = 1. m2 - m1 is 0.3, 0.1, 0.55, 0.22, 0.4: p = 1/3. The two comparisons with
    the baseline on CSC's headline overlap are the confirmatory family (m = 2): Holm 2/3, 1, neither
    significant, and B = 5 cannot reach alpha/m = 0.025 (2/6 > 0.025). m2 - m1 is exploratory: BH q
    of a family of one is its p, and no verdict. Lower overlap is better."""
    stat = "negation/overlap"
    bow = [0.7, 0.8, 0.75, 0.72, 0.9]
    m1 = [0.5, 0.6, 0.4, 0.55, 0.45]
    m2 = [0.8, 0.7, 0.95, 0.77, 0.85]
    files = [write(tmp_path / f"{m}.parquet", [replicate_rows("csc", "pc_en", stat, m, point, v)])
             for m, point, v in (("m1", 0.52, m1), ("bow", 0.76, bow), ("m2", 0.81, m2))]
    models = {"m1": ST, "m2": ST, "bow": BOW}
    out = tmp_path / "csc_differences.csv"
    differences.build("csc", files, models, {"against": "default"}, str(out))
    table = pl.read_csv(out)
    assert table.columns == ["probe", "dataset", "statistic", "model_a", "model_b", "value_a", "value_b", "difference",
                             "ci_low", "ci_high", "p_value", "test", "discordant_b", "discordant_c", "family", "p_adjusted",
                             "method", "significant", "b_too_small", "better", "replicates"]
    assert table["test"].to_list() == ["bootstrap"] * 3  # no per-item files: the bootstrap decides
    assert table.select("model_a", "model_b").rows() == [("m1", "bow"), ("m2", "bow"), ("m2", "m1")]
    first = table.row(0, named=True)
    assert (first["probe"], first["dataset"], first["statistic"]) == ("csc", "pc_en", stat)
    assert (first["value_a"], first["value_b"]) == (0.52, 0.76)
    assert first["difference"] == pytest.approx(0.52 - 0.76)
    assert (first["ci_low"], first["ci_high"]) == pytest.approx((-0.44, -0.173))
    assert first["p_value"] == pytest.approx(1 / 3) and first["better"] == "m1" and first["replicates"] == 5
    assert (first["family"], first["method"], first["significant"], first["b_too_small"]) == (
        "confirmatory", "holm", False, True)
    assert first["p_adjusted"] == pytest.approx(2 / 3)
    second = table.row(1, named=True)
    assert second["p_value"] == pytest.approx(1.0) and second["p_adjusted"] == pytest.approx(1.0)
    assert not second["significant"] and second["better"] == "bow"  # 0.81 > 0.76: higher overlap is worse
    third = table.row(2, named=True)
    assert third["p_value"] == pytest.approx(1 / 3) and third["better"] == "m1"
    assert (third["family"], third["method"], third["significant"], third["b_too_small"]) == (
        "exploratory", "bh", None, None)
    assert third["p_adjusted"] == pytest.approx(1 / 3)


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
    assert table["better"].to_list() == ["neither", None]  # the mean cosine has no direction


def test_mismatched_replicates_and_nothing_to_compare(tmp_path):
    parts = [replicate_rows("montague", "t", "single/AN/x", "a", 0.5, np.ones(4)),
             replicate_rows("montague", "t", "single/AN/x", "b", 0.5, np.ones(5))]
    with pytest.raises(ValueError, match="b has 5 replicates, a 4"):
        differences.build("montague", [write(tmp_path / "r.parquet", parts)], {"a": ST, "b": ST}, {}, str(tmp_path / "x.csv"))
    empty = differences.build("montague", [write(tmp_path / "e.parquet", [])], {"a": ST}, {}, str(tmp_path / "e.csv"))
    assert empty.height == 0 and pl.read_csv(tmp_path / "e.csv").columns == list(differences.SCHEMA)


def test_overview_marks_cells_not_significantly_better_than_the_baseline():
    from workflow_scripts.report.overview import not_better_than_baseline
    models = {"good": ST, "same": ST, "worse": ST, "bow": BOW, "alone": ST}
    diffs = pl.DataFrame([
        # good beats the baseline significantly; same does not (not significant); worse is significantly worse
        dict(probe="csc", dataset="c", statistic="negation/overlap", model_a=a, model_b="bow", significant=sig,
             better=better) for a, sig, better in (("good", True, "good"), ("same", False, "same"),
                                                   ("worse", True, "bow"))]
        # all_pairs order may put the baseline first: the same verdict
        + [dict(probe="csc", dataset="c", statistic="fuzz/overlap", model_a="bow", model_b="good", significant=True,
                better="good")])
    rows = [dict(probe="csc", dataset="c", statistic="negation/overlap", model=m, column="csc_c_negation")
            for m in ("good", "same", "worse", "bow", "alone")]
    rows += [dict(probe="csc", dataset="c", statistic="fuzz/overlap", model="good", column="csc_c_fuzz"),
             dict(probe="csc", model="same", column="no_statistic")]
    assert not_better_than_baseline(rows, diffs, models) == {("same", "csc_c_negation"), ("worse", "csc_c_negation")}
    assert not_better_than_baseline(rows, diffs, {m: ST for m in models}) == set()  # no baseline configured


def test_report_shows_the_paired_differences_of_the_headline_figures_only(tmp_path):
    """report.md's block lists the rows of the probe's headline statistics, with their family, the
    adjusted p and Holm's verdict on the confirmatory rows only; a family B cannot serve is named."""
    from workflow_scripts.report.markdown import differences_block
    table = tmp_path / "csc_differences.csv"
    pl.DataFrame({"probe": ["csc"] * 4, "dataset": ["pc_en", "pc_en", "pc_nl", "pc_nl"],
                  "statistic": ["negation/overlap", "fuzzing/overlap", "negation/overlap", "negation/overlap"],
                  "model_a": ["minilm", "minilm", "minilm", "mpnet"], "model_b": ["form_only"] * 3 + ["minilm"],
                  "value_a": [0.5, 0.6, 0.7, 0.6], "value_b": [0.8, 0.6, 0.75, 0.7],
                  "difference": [-0.3, 0.0, -0.05, -0.1],
                  "ci_low": [-0.4, -0.1, -0.2, -0.2], "ci_high": [-0.2, 0.1, 0.1, 0.0],
                  "p_value": [0.01, 1.0, 0.4, 0.04], "family": ["confirmatory"] * 3 + ["exploratory"],
                  "p_adjusted": [0.03, 1.0, 0.8, 0.04], "method": ["holm"] * 3 + ["bh"],
                  "significant": [True, False, False, None], "b_too_small": [True, True, True, None],
                  "better": ["minilm", "neither", "minilm", "mpnet"], "replicates": [200] * 4}).write_csv(table)
    figures = [{"dataset": "pc_en", "statistic": "negation/overlap"},
               {"dataset": "pc_nl", "statistic": "negation/overlap"}, {"dataset": "x", "statistic": None}]
    lines = differences_block(str(table), figures)
    body = [line for line in lines if line.startswith("| pc_")]
    assert body == [
        "| pc_en | negation/overlap | minilm | form_only | -0.300 [-0.400, -0.200] | 0.010 | confirmatory | 0.030 (holm) | yes | minilm |",
        "| pc_nl | negation/overlap | minilm | form_only | -0.050 [-0.200, 0.100] | 0.400 | confirmatory | 0.800 (holm) | no | minilm |",
        "| pc_nl | negation/overlap | mpnet | minilm | -0.100 [-0.200, 0.000] | 0.040 | exploratory | 0.040 (bh) |  | mpnet |"]
    assert any("3 comparisons, Holm" in line and "(1 significant)" in line and "(4 in all)" in line for line in lines)
    assert any(line.startswith("**B too small for this family**") and "m = 3" in line for line in lines)
    assert differences_block(str(table), [{"dataset": "pc_en", "statistic": "other"}]) == []


def test_a_difference_without_spread_gets_no_verdict():
    """One item (every resample draws it): A - B is the same in every replicate; the percentile test
    would say p = 0, but a bootstrap without spread says nothing, so p is undefined and the row is
    not significant; identical models (0 in every replicate) keep p = 1."""
    from workflow_scripts.paired_statistics import paired_difference
    one = paired_difference(0.0, 0.634, np.zeros(200), np.full(200, 0.634))
    assert np.isnan(one["p_value"]) and one["ci_low"] == one["ci_high"] == pytest.approx(-0.634)
    same = paired_difference(0.5, 0.5, np.full(200, 0.5), np.full(200, 0.5))
    assert same["p_value"] == 1.0
    _, rejected = holm([one["p_value"], 0.001])
    assert rejected == [False, True]


# ---- issue 32: p never 0, families, B large enough ---------------------------------------------------

def test_the_bootstrap_p_value_is_never_zero():
    """B = 999 replicate differences, all > 0: k_le = 0, k_ge = 999, so
    p = 2 min(1, 1000) / 1000 = 2/1000, the smallest p with B = 999 (today: 0)."""
    diff = np.linspace(0.01, 0.5, 999)
    assert bootstrap_p_value(diff) == pytest.approx(2 / 1000)
    d = paired_difference(0.7, 0.2, diff + 0.2, np.full(999, 0.2))
    assert d["p_value"] == pytest.approx(2 / 1000) and d["replicates"] == 999
    # 9 replicates, one <= 0 and eight > 0: 2 min(1 + 1, 1 + 8) / 10 = 0.4; NaN replicates do not count
    mixed = np.array([-0.1, *np.linspace(0.1, 0.8, 8), np.nan])
    assert bootstrap_p_value(mixed) == pytest.approx(0.4)
    assert bootstrap_p_value(np.zeros(10)) == 1.0  # no difference at all: capped at 1


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
    every one of 999 replicates (p = 2/1000), b does not; the family is (a, bow) and (b, bow) on
    accuracy: m = 2, Holm 0.004 <= 0.05, a significant. (b, a) on accuracy and every mean-cosine
    row are exploratory. `whole_table` puts every row in one family."""
    rng = np.random.default_rng(1)
    base = rng.uniform(0.4, 0.6, 999)
    reps = {"a": base + rng.uniform(0.01, 0.1, 999), "b": base + rng.normal(0, 0.05, 999), "bow": base}
    parts = [replicate_rows("triplets", "d", stat, m, float(v.mean()), v) for m, v in reps.items()
             for stat in ("accuracy", "mean_s_splus")]
    models = {"a": ST, "b": ST, "bow": BOW}
    path = write(tmp_path / "r.parquet", parts)
    table = differences.build("triplets", [path], models, {}, str(tmp_path / "t.csv"))
    rows = {(r["statistic"], r["model_a"], r["model_b"]): r for r in table.iter_rows(named=True)}
    assert {k for k, r in rows.items() if r["family"] == "confirmatory"} == {("accuracy", "a", "bow"),
                                                                           ("accuracy", "b", "bow")}
    first = rows[("accuracy", "a", "bow")]
    assert first["p_value"] == pytest.approx(2 / 1000) and first["p_adjusted"] == pytest.approx(4 / 1000)
    assert first["significant"] and first["b_too_small"] is False and first["method"] == "holm"
    assert all(r["significant"] is None and r["method"] == "bh" for r in rows.values() if r["family"] == "exploratory")
    whole = differences.build("triplets", [path], models, {"family": "whole_table", "error_rate": {"exploratory": "none"}},
                          str(tmp_path / "w.csv"))
    assert set(whole["family"]) == {"confirmatory"} and set(whole["method"]) == {"holm"}


def test_b_too_small_for_the_family():
    """Smallest p 2/(B + 1) against Holm's first threshold alpha/m: at B = 200 it is 0.00995, so a
    family of 5 (0.01) can be served, one of 6 (0.0083) cannot; B = 2m/alpha - 1 is the least."""
    assert not b_too_small(200, 5) and b_too_small(200, 6)
    assert not b_too_small(2 * 40 / 0.05 - 1, 40) and b_too_small(2 * 40 / 0.05 - 2, 40)
    assert not b_too_small(200, 0)


def test_headline_statistics_follow_the_declarations_and_options():
    from workflow_scripts.probes import headline_statistics
    assert headline_statistics("retrieval", {"retrieval_k": 10}) == ("accuracy@10", "ndcg@10")
    assert headline_statistics("settheory", {"settheory_measure": "dot"}) == ("c1/dot/T,T", "c3/dot/T,T")
    assert headline_statistics("triplets") == ("accuracy",)
    assert headline_statistics("domain_shift") == ()  # no declared better side: no confirmatory family
    assert "single/AN/intersective" in headline_statistics("montague")
    assert headline_statistics("csc") == ("*/overlap",)  # no declaration: the statistics with a direction


def test_only_the_confirmatory_family_decides_the_b_mark():
    """An exploratory row that says `significant` (a table written with another family) is no verdict:
    the cell it alone compares with the baseline is marked B."""
    from workflow_scripts.report.overview import not_better_than_baseline
    models = {"good": ST, "bow": BOW}
    diffs = pl.DataFrame([dict(probe="csc", dataset="c", statistic="negation/overlap", model_a="good", model_b="bow",
                               family="exploratory", significant=True, better="good")])
    rows = [dict(probe="csc", dataset="c", statistic="negation/overlap", model="good", column="csc_c_negation")]
    assert not_better_than_baseline(rows, diffs, models) == {("good", "csc_c_negation")}
    confirmed = diffs.with_columns(pl.lit("confirmatory").alias("family"))
    assert not_better_than_baseline(rows, confirmed, models) == set()


def test_the_default_b_reaches_holms_threshold_for_the_default_families():
    """The default run's confirmatory families (each model vs form_only on the headline figures):
    CSC 3 models (tfidf, tfidf_paper, minilm) x 7 overlaps (negation on 5 corpora, grammatical
    negation on the 2 English ones) = 21, so B >= 2 x 21 / 0.05 - 1 = 839; domain shift 2 models
    (tfidf, minilm; the adapt recipes are resources/adapt/study.yaml's) x 1 dataset = 2, B >= 79.
    At B = 200 CSC's is not reachable."""
    import yaml

    from workflow_scripts.probes import get
    root = get("csc").schema_path.parents[2]
    config = yaml.safe_load((root / "config.yaml").read_text(encoding="utf-8"))

    def runs(spec: dict, probe: str) -> bool:
        return spec.get("family") != "surface_form" and probe in spec.get("probes", [probe])
    models = dict(config["models"], **config.get("adapt", {}).get("recipes", {}))
    csc_models = [m for m, s in config["models"].items() if runs(s, "csc")]
    english = [c for c, s in config["corpora"].items() if s["language"] in config["csc"]["perturb"]["grammatical_negation"]["languages"]]
    m_csc = len(csc_models) * (len(config["corpora"]) + len(english))
    m_domain = len([m for m, s in models.items() if runs(s, "domain_shift")]) * len(config["domain_shift"]["datasets"])
    assert (m_csc, m_domain) == (21, 2)
    for probe, m in (("csc", m_csc), ("domain_shift", m_domain)):
        schema = yaml.safe_load(get(probe).schema_path.read_text(encoding="utf-8"))
        assert not b_too_small(config[probe]["bootstrap_b"], m), probe
        assert not b_too_small(schema["properties"]["bootstrap_b"]["default"], m), probe


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


def test_clopper_pearson_at_the_bounds():
    from workflow_scripts.paired_statistics import clopper_pearson
    low, high = clopper_pearson(0, 445)
    assert (round(low, 4), round(high, 4)) == (0.0, 0.0083)
    low, high = clopper_pearson(445, 445)
    assert (round(low, 4), round(high, 4)) == (0.9917, 1.0)
    low, high = clopper_pearson(5, 10)
    assert low == pytest.approx(0.187086, abs=1e-6) and high == pytest.approx(0.812914, abs=1e-6)


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
    assert hand["b_too_small"] is False  # an exact test needs no B
    fixed = rows[("fixed", "a", "bow")]
    assert (fixed["test"], fixed["discordant_b"], fixed["discordant_c"]) == ("mcnemar", 23, 0)
    assert fixed["p_value"] == pytest.approx(2.0 ** -22) and fixed["difference"] == 1.0
    assert fixed["p_adjusted"] == pytest.approx(4 * 2.0 ** -22) and fixed["significant"] is True
    assert rows[("fixed", "c", "bow")]["significant"] is True
    same = rows[("table", "c", "a")]
    assert (same["test"], same["discordant_b"], same["discordant_c"], same["p_value"]) == ("mcnemar", 0, 0, 1.0)
    assert same["family"] == "exploratory"
    # without the per-item files the same rows fall back on the bootstrap: `fixed` gets no p at all
    bootstrap = differences.build("triplets", [replicates], models, {}, str(tmp_path / "b.csv"))
    row = bootstrap.filter((pl.col("dataset") == "fixed") & (pl.col("model_a") == "a")).row(0, named=True)
    assert row["test"] == "bootstrap" and row["discordant_b"] is None and np.isnan(row["p_value"])
    assert not row["significant"]


def test_the_job_takes_the_outcome_files(tmp_path, binary_items, capsys):
    from workflow_scripts.jobs import make_job
    replicates, outcomes = binary_items
    out = tmp_path / "triplets_differences.csv"
    differences.run_probe_differences(make_job(
        input={"replicates": [replicates], "outcomes": [e["path"] for e in outcomes]}, output=[str(out)],
        params={"models": {"a": {"family": "sentence_transformers"}, "bow": {"family": "surface_form"}},
                "compare": {}, "headline_options": {}, "outcomes": outcomes},
        wildcards={"probe": "triplets"}))
    table = pl.read_csv(out)
    assert table.columns[10:14] == ["p_value", "test", "discordant_b", "discordant_c"]
    row = table.filter(pl.col("dataset") == "table").row(0, named=True)
    assert (row["model_a"], row["test"], row["p_value"]) == ("a", "mcnemar", pytest.approx(134 / 2048))
    # the log's line: a and c (in the replicates, not in params.models) each vs bow on both datasets
    # (confirmatory; Holm rejects the two `fixed` rows, 4 x 2^-22), c vs a exploratory; all by McNemar
    assert capsys.readouterr().out == ("triplets: 6 comparisons; confirmatory family 4 (2 significant, Holm, "
                                       "alpha 0.05), 2 exploratory; 6 by McNemar's exact test (per-item right/wrong)\n")


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
         "cluster": "original"} for m in ("a", "bow")]
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
                       "confirmatory | 9.5e-07 (holm) | yes | a |")
    assert any("McNemar's exact test" in line for line in lines)


def test_the_b_mark_follows_mcnemar_and_tables_without_it_still_combine(tmp_path, binary_items):
    """The issue's case on the first screen: a right on all 23 `fixed` triplets, the baseline on
    none. McNemar (p = 2^-22) makes a significantly better: no mark B; by the bootstrap alone (no p)
    it was marked. A CSC table (bootstrap rows only, empty discordant counts) reads beside it."""
    from workflow_scripts.report.overview import not_better_than_baseline, read_differences
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
    assert not_better_than_baseline(rows, both, models) == set()
    bootstrap_only = read_differences([str(tmp_path / "b.csv")])
    assert not_better_than_baseline(rows, bootstrap_only, models) == {("a", "triplets_fixed")}


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
    assert shared["p_value"] == 0.75 and shared["b_too_small"] is False
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
