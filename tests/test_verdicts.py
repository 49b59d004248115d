"""Verdicts that hold at scale (issues 43 and 44): p-values without a B floor, margins and the verdict
words, equivalence (TOST), power, score intervals of shares, degenerate baselines and rank sets,
checked against hand-derived values and against statsmodels."""
import math

import numpy as np
import polars as pl
import pytest
from scipy.special import ndtr, ndtri

from workflow_scripts import verdicts as v
from workflow_scripts.bootstrap import replicate_rows
from workflow_scripts.differences import Declared, differences
from workflow_scripts.paired_statistics import (holm, newcombe_paired_interval, normal_p_value, wilson_interval)

ST, BOW = {"family": "sentence_transformers"}, {"family": "surface_form"}


def frame(parts):
    columns = {}
    for part in parts:
        for k, values in part.items():
            columns.setdefault(k, []).extend(values)
    return pl.DataFrame(columns, schema={"probe": pl.String, "dataset": pl.String, "statistic": pl.String,
                                         "model": pl.String, "point": pl.Float64, "replicate": pl.Int32,
                                         "value": pl.Float64, "units": pl.Int64})


# ---- p-values without a B floor -------------------------------------------------------------------

def test_normal_p_value_by_hand_and_without_spread():
    assert normal_p_value(0.2, 0.1) == pytest.approx(2 * ndtr(-2.0), rel=1e-12)  # z = 2: 0.0455
    assert normal_p_value(0.0, 0.0) == 1.0  # nothing differs: no evidence
    assert math.isnan(normal_p_value(0.3, 0.0))  # a fixed nonzero difference: a bootstrap cannot test it
    assert normal_p_value(1.0, 0.01) < 1e-200  # far below 2/(B + 1) at any affordable B
    assert 0 < normal_p_value(1.0, 0.001)  # z = 1000: the tail underflows, the p-value is never 0


def test_holm_rejects_a_family_of_100_large_effects_at_b_1000():
    """Fails on e572c58: there the bootstrap p was at least 2/(B + 1) = 0.002 at B = 1,000, so Holm's
    smallest adjusted p in a family of 100 was 0.2 and no model could be better, however large its
    effect. 100 models against the baseline on one headline figure, each 0.1 better with a replicate
    standard error of 0.01 (z = 10): every one is better, by at least the margin 0.05."""
    rng = np.random.default_rng(0)
    b = 1000
    parts = [replicate_rows("p", "d", "acc", "bow", 0.5, 0.5 + rng.normal(0, 0.01, b), 400)]
    base = parts[0]["value"]
    for i in range(100):
        parts.append(replicate_rows("p", "d", "acc", f"m{i}", 0.6, np.asarray(base) + 0.1 + rng.normal(0, 0.01, b),
                                    400))
    models = {"bow": BOW, **{f"m{i}": ST for i in range(100)}}
    table, _ = differences(frame(parts), "p", models, {"against": "bow"}, headline=("acc",),
                           declared=Declared(directions=(("acc", "higher"),), margins=(("acc", 0.05, "test"),)))
    confirmatory = table.filter(pl.col("family") == "confirmatory")
    assert confirmatory.height == 100
    assert confirmatory["significant"].all() and confirmatory["p_adjusted"].max() < 1e-10
    assert set(confirmatory["verdict"]) == {"better"}
    assert set(confirmatory["test"]) == {"bootstrap_z"}
    # the family-adjusted interval: level 1 - 0.05/100, z = 3.48
    row = confirmatory.row(0, named=True)
    z = ndtri(1 - 0.05 / 200)
    assert row["adjusted_low"] == pytest.approx(row["signed_difference"] - z * row["se"], rel=1e-9)


# ---- the verdict words -----------------------------------------------------------------------------

@pytest.mark.parametrize("significant,estimate,low,high,word", [
    (True, 0.12, 0.08, 0.16, "better"),                 # the whole interval above delta = 0.05
    (True, 0.06, 0.01, 0.11, "better, size unclear"),   # above 0, reaching below delta
    (True, 0.02, 0.01, 0.03, "negligibly better"),      # above 0, entirely below delta
    (False, 0.01, -0.02, 0.04, "equivalent"),           # inside -delta..+delta
    (False, 0.03, -0.04, 0.10, "inconclusive"),         # across 0, beyond the margin
    (True, -0.02, -0.03, -0.01, "negligibly worse"),
    (True, -0.06, -0.11, -0.01, "worse, size unclear"),
    (True, -0.12, -0.16, -0.08, "worse"),
    (False, 0.0, 0.0, 0.0, "inconclusive"),             # zero width never certifies equivalence
])
def test_each_verdict_word_by_hand(significant, estimate, low, high, word):
    assert v.word(significant, estimate, low, high, 0.05) == word


def test_no_word_without_a_decision():
    assert v.word(None, 0.1, 0.0, 0.2, 0.05) is None
    assert v.word(True, 0.0, -0.1, 0.1, 0.05) is None  # a tie
    assert v.word(True, 0.1, 0.05, 0.15, None) == "better"  # no margin declared: the sign alone


def test_tost_agrees_with_statsmodels_ttost_paired():
    from statsmodels.stats.weightstats import ttost_paired
    rng = np.random.default_rng(5)
    for shift in (0.0, 0.02, 0.08):
        a = rng.normal(0.5, 0.1, 60)
        b = a - shift + rng.normal(0, 0.05, 60)
        d = a - b
        expected = ttost_paired(a, b, -0.05, 0.05)[0]
        got = v.tost_p(d.mean(), d.std(ddof=1) / math.sqrt(len(d)), 0.05, df=len(d) - 1)
        assert got == pytest.approx(expected, rel=1e-9)


def test_equivalence_by_the_interval_is_tost_at_half_the_level():
    """The word `equivalent` (the (1 - alpha) interval inside the margin) is TOST at alpha/2 per side."""
    se, delta = 0.01, 0.05
    for estimate in (0.0, 0.02, 0.0299, 0.031):
        low, high = v.adjusted_interval(estimate, se, 0.05, 1)
        inside = -delta < low and high < delta
        assert inside == (v.tost_p(estimate, se, delta) < 0.025)


def test_power_by_hand():
    """MDE = (z_{1 - alpha/(2m)} + z_0.8) se: at m = 1, (1.960 + 0.842) 0.01 = 0.0280; the units that
    detect 0.014 (half the MDE): 4 times as many."""
    assert v.minimum_detectable(0.01, 0.05, 1) == pytest.approx((1.959964 + 0.841621) * 0.01, rel=1e-5)
    assert v.units_needed(100, 0.028, 0.014) == 400
    assert v.minimum_detectable(0.01, 0.05, 10) > v.minimum_detectable(0.01, 0.05, 1)  # a family costs power


def test_margins_from_the_declaration_and_the_study():
    declared = (("*/within_auc", 0.05, "AUC"), ("*", 0.1, "rest"))
    assert v.margin_of(declared, "negation/within_auc") == (0.05, "AUC")
    assert v.margin_of(declared, "negation/overlap") == (0.1, "rest")
    assert v.margin_of(declared, "negation/within_auc", {"*/within_auc": 0.02})[0] == 0.02
    assert v.margin_of((), "x") == (None, "")


def test_every_headline_statistic_of_every_probe_declares_a_margin_with_its_reason():
    from workflow_scripts.probes import declarations, headline_statistics
    for probe in declarations(stages=False):
        for pattern in headline_statistics(probe.name, {"retrieval_k": 5, "settheory_measure": "cosine"}):
            statistic = pattern.replace("*", "x")
            from workflow_scripts.differences import direction
            if direction(probe.directions, statistic) is None:
                continue  # no better side, no verdict (domain shift)
            delta, reason = v.margin_of(probe.margins, statistic)
            assert delta is not None and delta > 0 and len(reason) > 20, (probe.name, statistic)


# ---- score intervals of shares ------------------------------------------------------------------------

def test_wilson_agrees_with_statsmodels_and_is_monotone():
    """Fails on e572c58, which had no score interval: 1.000 of 34 got [0.897, 1] from Clopper-Pearson
    and 33 of 34 [0.912, 1] from the percentile bootstrap, a narrower interval for the lower share."""
    from statsmodels.stats.proportion import proportion_confint
    for k, n in ((0, 445), (33, 34), (34, 34), (5, 10), (17, 40)):
        assert wilson_interval(k / n, n) == pytest.approx(proportion_confint(k, n, method="wilson"), abs=1e-12)
    lows = [wilson_interval(k / 34, 34)[0] for k in range(35)]
    assert all(a < b for a, b in zip(lows, lows[1:]))
    assert wilson_interval(33 / 34, 34)[0] < wilson_interval(1.0, 34)[0]


def test_newcombe_paired_interval_by_hand():
    """Newcombe 1998, method 10, recomputed from its formula: 40 pairs, both right 20, A only 8, B only
    2, neither 10: p_A = 0.7, p_B = 0.55, phi from the table with its n/2 correction."""
    both, a_only, b_only, neither = 20, 8, 2, 10
    n = 40
    pa, pb = 28 / n, 22 / n
    l1, u1 = wilson_interval(pa, n)
    l2, u2 = wilson_interval(pb, n)
    num = max(both * neither - a_only * b_only - n / 2, 0)
    phi = num / math.sqrt(28 * 12 * 22 * 18)
    low = (pa - pb) - math.sqrt((pa - l1) ** 2 - 2 * phi * (pa - l1) * (u2 - pb) + (u2 - pb) ** 2)
    high = (pa - pb) + math.sqrt((u1 - pa) ** 2 - 2 * phi * (u1 - pa) * (pb - l2) + (pb - l2) ** 2)
    assert newcombe_paired_interval(both, a_only, b_only, neither) == pytest.approx((low, high), abs=1e-12)
    assert low < 0.15 < high
    # no discordant item among 500: not zero width, and narrow enough to show equivalence within 0.05
    lo, hi = newcombe_paired_interval(500, 0, 0, 0)
    assert 0 < hi < 0.01 and lo == pytest.approx(-hi)


# ---- degenerate baselines ---------------------------------------------------------------------------

def montague_like(baseline_value: float, model_reps: np.ndarray, point: float):
    b = len(model_reps)
    return frame([replicate_rows("p", "d", "pair/pair/x", "bow", baseline_value, np.full(b, baseline_value), 12),
                  replicate_rows("p", "d", "pair/pair/x", "m", point, model_reps, 12)])


DECLARED = Declared(directions=(("*", "higher"),), margins=(("*", 0.10, "test"),),
                    references=(("pair/*", 0.5, "chance"),), shares=("*",))


def test_a_baseline_fixed_by_construction_gets_no_verdict_and_the_model_meets_chance_instead():
    """Fails on e572c58: the surface-form baseline's pair share is 0 whatever the data (its distances
    tie), so any model at chance was `better` than it. Here a model at 0.262 of 12 units, below
    chance: against the baseline it would be `better`; against chance it is worse."""
    rng = np.random.default_rng(2)
    reps = np.clip(0.262 + rng.normal(0, 0.08, 1000), 0, 1)
    table, _ = differences(montague_like(0.0, reps, 0.262), "p", {"bow": BOW, "m": ST}, {}, headline=("pair/*",),
                           declared=DECLARED)
    rows = {r["model_b"]: r for r in table.iter_rows(named=True)}
    assert rows["bow"]["baseline_degenerate"] is True and rows["bow"]["family"] == "exploratory"
    assert rows["bow"]["verdict"] is None and rows["bow"]["reason"] == "baseline degenerate"
    chance = rows["chance"]
    assert chance["family"] == "confirmatory" and chance["value_b"] == 0.5
    assert chance["difference"] == pytest.approx(0.262 - 0.5)
    # the interval against chance: Wilson's over the 12 units, at the family's level (m = 1)
    low, high = wilson_interval(0.262, 12)
    assert (chance["adjusted_low"], chance["adjusted_high"]) == pytest.approx((low - 0.5, high - 0.5))
    assert chance["verdict"] in ("worse", "worse, size unclear")


def test_a_baseline_with_spread_is_compared_as_before():
    rng = np.random.default_rng(3)
    frame_ = frame([replicate_rows("p", "d", "pair/pair/x", "bow", 0.3, 0.3 + rng.normal(0, 0.02, 500), 12),
                    replicate_rows("p", "d", "pair/pair/x", "m", 0.6, 0.6 + rng.normal(0, 0.02, 500), 12)])
    table, _ = differences(frame_, "p", {"bow": BOW, "m": ST}, {}, headline=("pair/*",), declared=DECLARED)
    assert table["model_b"].to_list() == ["bow"] and table["baseline_degenerate"].to_list() == [False]
    assert table["verdict"].to_list() == ["better"]


# ---- ranks ---------------------------------------------------------------------------------------------

def test_rank_sets_by_hand():
    """a beats b and c; b and c are not distinguishable; d beats nobody and loses to a: a is 1 of 4,
    b and c 2-4 (nobody but a is shown better, and they beat nobody), d 2-4."""
    beats = {("a", "b"), ("a", "c"), ("a", "d")}
    assert v.rank_sets(["a", "b", "c", "d"], beats) == {"a": (1, 1), "b": (2, 4), "c": (2, 4), "d": (2, 4)}
    beats |= {("b", "d"), ("c", "d")}
    assert v.rank_sets(["a", "b", "c", "d"], beats)["d"] == (4, 4)
    assert v.rank_text(2, 4, 4) == "2\u20134 of 4" and v.rank_text(1, 1, 4) == "1 of 4"


def test_the_rank_table_compares_every_pair_with_holm():
    """Three models 0.10 apart with standard errors of 0.01 and a baseline at the bottom: every pair
    is distinguishable, so every rank set is a single rank; two models 0.001 apart share theirs."""
    rng = np.random.default_rng(4)
    common = rng.normal(0, 0.01, 1000)
    parts = [replicate_rows("p", "d", "acc", m, x, x + common + rng.normal(0, 0.01, 1000), 200)
             for m, x in (("bow", 0.2), ("a", 0.5), ("b", 0.6), ("c", 0.601))]
    models = {"bow": BOW, "a": ST, "b": ST, "c": ST}
    table, ranks = differences(frame(parts), "p", models, {}, headline=("acc",),
                               declared=Declared(directions=(("acc", "higher"),), margins=(("acc", 0.05, "t"),)))
    got = {r["model"]: (r["rank_low"], r["rank_high"]) for r in ranks.iter_rows(named=True)}
    assert got == {"b": (1, 2), "c": (1, 2), "a": (3, 3), "bow": (4, 4)}
    assert ranks["model"].to_list()[-1] == "bow"  # best first
    row = table.filter((pl.col("model_a") == "a") & (pl.col("model_b") == "bow")).row(0, named=True)
    assert (row["rank_a"], row["rank_b"]) == ("3 of 4", "4 of 4")
