"""Interval methods per statistic (issue 32): BCa where the estimator is biased, percentile elsewhere."""
import numpy as np
import pytest
from scipy.stats import bootstrap as scipy_bootstrap
from scipy.stats import norm

from workflow_scripts.bootstrap import (bca_constants, bca_interval, bootstrap_interval, interval_method,
                                        jackknife_weights, percentile_interval, resample_counts)


def plug_in_variance(x, axis=-1):
    """The variance with divisor n: biased low, and its resamples lower still."""
    return np.var(x, axis=axis)


def leave_one_out(x, statistic):
    return np.array([statistic(np.delete(x, i)) for i in range(len(x))])


def test_bca_on_scipys_own_replicates_gives_scipys_interval():
    """Same data, same statistic, same replicates: scipy.stats.bootstrap(method='BCa') hands back its
    bootstrap distribution, so the two intervals must agree to rounding (no Monte-Carlo error)."""
    x = np.random.default_rng(5).exponential(1.0, 40)
    res = scipy_bootstrap((x,), plug_in_variance, method="BCa", n_resamples=2000, confidence_level=0.95,
                          random_state=np.random.default_rng(7))
    low, high, valid = bca_interval(res.bootstrap_distribution, plug_in_variance(x), leave_one_out(x, plug_in_variance))
    assert valid == 2000
    assert (low, high) == pytest.approx((res.confidence_interval.low, res.confidence_interval.high), rel=1e-10)


def test_bca_constants_follow_the_formulas_on_a_fixed_replicate_set():
    """z0 from the share below the estimate (ties half), a from the jackknife's third and second
    moments, computed by hand on numbers small enough to check."""
    z0, a = bca_constants(np.array([1.0, 2.0, 3.0, 4.0]), 3.0, np.array([0.0, 0.0, 3.0]))
    assert z0 == pytest.approx(norm.ppf((2 + 3) / 8))  # 2 below, 1 tie: 2.5 of 4
    d = np.array([1.0, 1.0, -2.0])  # the jackknife mean 1 minus each value
    assert a == pytest.approx(np.sum(d ** 3) / (6 * np.sum(d ** 2) ** 1.5))  # -6 / (6 * 6^1.5)
    assert bca_constants(np.array([1.0, 2.0]), 1.5, np.array([0.2, 0.2, 0.2]))[1] == 0.0  # no jackknife spread


def test_with_no_bias_and_no_skew_bca_is_the_percentile_interval():
    reps = np.linspace(-1.0, 1.0, 1001)  # symmetric about the estimate 0: z0 = 0
    low, high, _ = bca_interval(reps, 0.0, np.array([-1.0, 0.0, 1.0]))  # symmetric jackknife: a = 0
    assert (low, high) == pytest.approx(percentile_interval(reps)[:2], abs=1e-12)


def test_a_biased_statistic_moves_bca_above_the_percentile_interval():
    """The plug-in variance's resamples sit below it (E[var*] = (n-1)/n var), and it is skewed right:
    z0 > 0 and a > 0, so BCa takes higher percentiles than 2.5 and 97.5 -- both ends move up, the
    upper one more."""
    x = np.random.default_rng(3).exponential(1.0, 30)
    counts = resample_counts(np.random.default_rng(11), 2000, len(x))
    reps = np.array([np.average((x - np.average(x, weights=w)) ** 2, weights=w) for w in counts])
    estimate = plug_in_variance(x)
    z0, a = bca_constants(reps, estimate, leave_one_out(x, plug_in_variance))
    assert z0 > 0 and a > 0
    p_low, p_high, _ = percentile_interval(reps)
    low, high, _, method = bootstrap_interval("bca", reps, estimate, leave_one_out(x, plug_in_variance))
    assert method == "bca" and low > p_low and high > p_high and high - p_high > low - p_low


def test_grouped_jackknife_leaves_each_block_out_once():
    w = jackknife_weights(7, blocks=3)
    assert w.tolist() == [[0, 1, 1, 0, 1, 1, 0], [1, 0, 1, 1, 0, 1, 1], [1, 1, 0, 1, 1, 0, 1]]
    assert jackknife_weights(2, blocks=20).tolist() == [[0, 1], [1, 0]]  # fewer units: leave-one-out


def test_grouped_jackknife_acceleration_estimates_the_leave_one_out_one():
    """20 blocks of a skewed sample's mean give about the acceleration of all 400 leave-one-outs."""
    x = np.random.default_rng(2).exponential(1.0, 400)
    weights = jackknife_weights(len(x), blocks=20)
    grouped = weights @ x / weights.sum(axis=1)
    _, a_grouped = bca_constants(np.array([0.0, 2.0]), 1.0, grouped)
    _, a_full = bca_constants(np.array([0.0, 2.0]), 1.0, leave_one_out(x, np.mean))
    assert a_full > 0 and a_grouped == pytest.approx(a_full, rel=0.5)


def test_bca_undefined_falls_back_to_percentile_and_says_so():
    reps = np.array([2.0, 3.0, 4.0])  # every replicate above the estimate: z0 = -inf
    assert bootstrap_interval("bca", reps, 1.0, np.array([0.0, 1.0]))[3] == "percentile"
    assert bootstrap_interval("percentile", reps)[3] == "percentile"
    with pytest.raises(ValueError, match="interval method"):
        bootstrap_interval("studentized", reps)


def test_probes_declare_the_interval_method_per_statistic():
    from workflow_scripts.probes import get
    csc = get("csc").intervals
    assert interval_method(csc, "negation/overlap") == "bca"
    assert interval_method(csc, "negation/gap") == "percentile" and interval_method(csc, "negation/auc") == "percentile"
    assert interval_method(get("triplets").intervals, "accuracy") == "percentile"
