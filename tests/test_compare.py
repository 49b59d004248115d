"""Paired model comparisons (issue 26): compared pairs, Holm's correction and the differences table,
checked against hand-computed values."""
import numpy as np
import polars as pl
import pytest

from workflow_scripts import compare
from workflow_scripts.bootstrap import replicate_rows, write_replicates
from workflow_scripts.differences import compared_pairs, holm

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
    -0.44, the 97.5th at rank 3.9 -> -0.2 + 0.9 x 0.03 = -0.173; all <= 0: p = 2 min(1, 0) = 0.
    m2 - bow is 0.1, -0.1, 0.2, 0.05, -0.05: p = 2 min(2/5, 3/5) = 0.8. m2 - m1 is 0.3, 0.1,
    0.55, 0.22, 0.4: p = 0. Holm over (0, 0.8, 0): 0, 0.8, 0. Lower overlap is better."""
    stat = "negation/overlap"
    bow = [0.7, 0.8, 0.75, 0.72, 0.9]
    m1 = [0.5, 0.6, 0.4, 0.55, 0.45]
    m2 = [0.8, 0.7, 0.95, 0.77, 0.85]
    files = [write(tmp_path / f"{m}.parquet", [replicate_rows("csc", "pc_en", stat, m, point, v)])
             for m, point, v in (("m1", 0.52, m1), ("bow", 0.76, bow), ("m2", 0.81, m2))]
    models = {"m1": ST, "m2": ST, "bow": BOW}
    out = tmp_path / "csc_differences.csv"
    compare.build("csc", files, models, {"against": "default"}, str(out))
    table = pl.read_csv(out)
    assert table.columns == ["probe", "dataset", "statistic", "model_a", "model_b", "value_a", "value_b", "difference",
                             "ci_low", "ci_high", "p_value", "p_holm", "significant", "better", "replicates"]
    assert table.select("model_a", "model_b").rows() == [("m1", "bow"), ("m2", "bow"), ("m2", "m1")]
    first = table.row(0, named=True)
    assert (first["probe"], first["dataset"], first["statistic"]) == ("csc", "pc_en", stat)
    assert (first["value_a"], first["value_b"]) == (0.52, 0.76)
    assert first["difference"] == pytest.approx(0.52 - 0.76)
    assert (first["ci_low"], first["ci_high"]) == pytest.approx((-0.44, -0.173))
    assert first["p_value"] == 0 and first["significant"] and first["better"] == "m1" and first["replicates"] == 5
    second = table.row(1, named=True)
    assert second["p_value"] == pytest.approx(0.8) and second["p_holm"] == pytest.approx(0.8)
    assert not second["significant"] and second["better"] == "bow"  # 0.81 > 0.76: higher overlap is worse
    third = table.row(2, named=True)
    assert third["p_value"] == 0 and third["better"] == "m1"


def test_an_identical_copy_differs_by_nothing_and_unknown_directions_name_no_model(tmp_path):
    reps = np.random.default_rng(0).uniform(0.3, 0.6, 50)
    parts = [replicate_rows("triplets", "d", stat, m, 0.5, reps) for m in ("minilm", "minilm_copy")
             for stat in ("accuracy", "mean_s_splus")]
    table = compare.build("triplets", [write(tmp_path / "r.parquet", parts)], {"minilm": ST, "minilm_copy": ST},
                          {"against": "all_pairs"}, str(tmp_path / "t.csv"))
    assert table["statistic"].to_list() == ["accuracy", "mean_s_splus"]
    assert table["difference"].to_list() == [0.0, 0.0] and table["ci_low"].to_list() == [0.0, 0.0]
    assert table["p_value"].to_list() == [1.0, 1.0] and not table["significant"].any()
    assert table["better"].to_list() == ["neither", None]  # the mean cosine has no direction


def test_mismatched_replicates_and_nothing_to_compare(tmp_path):
    parts = [replicate_rows("montague", "t", "single/AN/x", "a", 0.5, np.ones(4)),
             replicate_rows("montague", "t", "single/AN/x", "b", 0.5, np.ones(5))]
    with pytest.raises(ValueError, match="b has 5 replicates, a 4"):
        compare.build("montague", [write(tmp_path / "r.parquet", parts)], {"a": ST, "b": ST}, {}, str(tmp_path / "x.csv"))
    empty = compare.build("montague", [write(tmp_path / "e.parquet", [])], {"a": ST}, {}, str(tmp_path / "e.csv"))
    assert empty.height == 0 and pl.read_csv(tmp_path / "e.csv").columns == list(compare.SCHEMA)


def test_overview_marks_cells_not_significantly_better_than_the_baseline():
    from workflow_scripts.report_overview import not_better_than_baseline
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
    """report.md's block lists the rows of the probe's headline statistics, with Holm's verdict
    counted over the whole table."""
    from workflow_scripts.report import differences_block
    table = tmp_path / "csc_differences.csv"
    pl.DataFrame({"probe": ["csc"] * 3, "dataset": ["pc_en", "pc_en", "pc_nl"],
                  "statistic": ["negation/overlap", "fuzzing/overlap", "negation/overlap"],
                  "model_a": ["minilm"] * 3, "model_b": ["form_only"] * 3,
                  "value_a": [0.5, 0.6, 0.7], "value_b": [0.8, 0.6, 0.75], "difference": [-0.3, 0.0, -0.05],
                  "ci_low": [-0.4, -0.1, -0.2], "ci_high": [-0.2, 0.1, 0.1], "p_value": [0.0, 1.0, 0.4],
                  "p_holm": [0.0, 1.0, 0.8], "significant": [True, False, False],
                  "better": ["minilm", "neither", "minilm"], "replicates": [200] * 3}).write_csv(table)
    figures = [{"dataset": "pc_en", "statistic": "negation/overlap"},
               {"dataset": "pc_nl", "statistic": "negation/overlap"}, {"dataset": "x", "statistic": None}]
    lines = differences_block(str(table), figures)
    body = [line for line in lines if line.startswith("| pc_")]
    assert body == ["| pc_en | negation/overlap | minilm | form_only | -0.300 [-0.400, -0.200] | 0.000 | yes | minilm |",
                    "| pc_nl | negation/overlap | minilm | form_only | -0.050 [-0.200, 0.100] | 0.800 | no | minilm |"]
    assert any("all 3 comparisons" in line and "(1 significant)" in line for line in lines)
    assert differences_block(str(table), [{"dataset": "pc_en", "statistic": "other"}]) == []


def test_a_difference_without_spread_gets_no_verdict():
    """One item (every resample draws it): A - B is the same in every replicate; the percentile test
    would say p = 0, but a bootstrap without spread says nothing, so p is undefined and the row is
    not significant; identical models (0 in every replicate) keep p = 1."""
    from workflow_scripts.differences import paired_difference
    one = paired_difference(0.0, 0.634, np.zeros(200), np.full(200, 0.634))
    assert np.isnan(one["p_value"]) and one["ci_low"] == one["ci_high"] == pytest.approx(-0.634)
    same = paired_difference(0.5, 0.5, np.full(200, 0.5), np.full(200, 0.5))
    assert same["p_value"] == 1.0
    _, rejected = holm([one["p_value"], 0.001])
    assert rejected == [False, True]
