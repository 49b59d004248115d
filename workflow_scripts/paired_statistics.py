"""Paired model comparisons (issues 26, 32, 43, 44): which pairs a study compares, the tests of a
difference A - B, Holm's and Benjamini-Hochberg's corrections, the families, and the score intervals
of shares.

The replicate files every probe writes (bootstrap.write_replicates) hold, per statistic, the B
replicate values of each model drawn from the same item resamples (bootstrap.paired_rng). The
difference of two models in replicate r is therefore the difference on the same items: its
percentile interval is the paired interval and its standard deviation the paired standard error,
from which the p-value is the normal approximation's (normal_p_value), not a count of replicates:
its smallest value does not depend on B. Where each item is right or wrong the exact tests need no
B at all (mcnemar_exact, sign_flip_exact). Verdict words from intervals and margins: verdicts.py.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from workflow_scripts.bootstrap import LEVEL
from workflow_scripts.encoders import is_baseline


def compared_pairs(models: dict[str, dict], compare: dict | None) -> list[tuple[str, str]]:
    """(A, B) pairs to compare, in a stable order, among `models` (name -> model entry, in config
    order; the models that ran the table in question).

    compare.against:
      - "default": every model against each surface-form baseline (family surface_form) and
        against the first listed model that is not a baseline;
      - "all_pairs": every unordered pair (config order: A before B);
      - a model name: every other model against that one.
    A pair never repeats, and a model is never compared with itself.
    """
    against = (compare or {}).get("against", "default")
    names = list(models)
    pairs: list[tuple[str, str]] = []

    def add(a: str, b: str) -> None:
        if a != b and (a, b) not in pairs and (b, a) not in pairs:
            pairs.append((a, b))

    if against == "all_pairs":
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                add(a, b)
        return pairs
    if against != "default":
        if against in models:
            for a in names:
                add(a, against)
        return pairs
    baselines = [n for n in names if is_baseline(models[n])]
    others = [n for n in names if n not in baselines]
    for base in baselines:
        for a in others:
            add(a, base)
    if others:
        first = others[0]
        for a in others[1:]:
            add(a, first)
    return pairs


def holm(p_values: list[float], alpha: float = 1.0 - LEVEL) -> tuple[list[float], list[bool]]:
    """Holm's step-down adjustment: (adjusted p-values, rejected at alpha), in the input order.
    NaN p-values are left out of the family (adjusted NaN, never rejected)."""
    p = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(len(p), np.nan)
    defined = np.flatnonzero(np.isfinite(p))
    m = len(defined)
    order = defined[np.argsort(p[defined], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    rejected = [bool(np.isfinite(x) and x <= alpha) for x in adjusted]
    return adjusted.tolist(), rejected


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """Benjamini-Hochberg q-values (false discovery rate), in the input order, by scipy's
    `false_discovery_control`. NaN p-values are left out (q NaN), as in `holm`."""
    from scipy.stats import false_discovery_control

    p = np.asarray(p_values, dtype=np.float64)
    q = np.full(len(p), np.nan)
    defined = np.isfinite(p)
    if defined.any():
        q[defined] = false_discovery_control(p[defined], method="bh")
    return q.tolist()


# --- Families (issue 32) ---------------------------------------------------------------------------
# A correction is only as meaningful as its family: the comparisons behind one decision. The
# decision the workflow makes (mark B on the first screen) is "is this model better than the
# surface-form baseline on this headline figure", so that is the confirmatory family, one per
# probe, corrected with Holm. Every other row (other statistics, every k, transformation, pairs
# between models) is exploratory: its raw p with a Benjamini-Hochberg q, never a verdict.
CONFIRMATORY, EXPLORATORY = "confirmatory", "exploratory"
FAMILIES = ("headline_vs_baseline", "whole_table")
CONFIRMATORY_RATES = ("holm",)
EXPLORATORY_RATES = ("bh", "none")


def is_baseline_pair(model_a: str, model_b: str, models: dict[str, dict]) -> bool:
    """Whether exactly one of the two models is a surface-form baseline (a model vs the baseline)."""
    base_a = is_baseline(models.get(model_a) or {})
    base_b = is_baseline(models.get(model_b) or {})
    return base_a != base_b


def is_headline(statistic: str, headline: tuple[str, ...]) -> bool:
    """Whether a replicates statistic is one of the probe's headline figures (fnmatch patterns,
    probes.headline_statistics)."""
    import fnmatch
    return any(fnmatch.fnmatchcase(statistic, pattern) for pattern in headline)


def family_of(statistic: str, model_a: str, model_b: str, models: dict[str, dict], headline: tuple[str, ...],
              family: str = "headline_vs_baseline") -> str:
    """CONFIRMATORY or EXPLORATORY for one compared pair on one statistic. `family`:
    "headline_vs_baseline" (a model against a surface-form baseline on a headline statistic is
    confirmatory) or "whole_table" (every row is; the strictest, as before issue 32)."""
    if family == "whole_table":
        return CONFIRMATORY
    if family != "headline_vs_baseline":
        raise ValueError(f"compare.family: {family!r} is not one of {', '.join(FAMILIES)}")
    confirmatory = is_headline(statistic, headline) and is_baseline_pair(model_a, model_b, models)
    return CONFIRMATORY if confirmatory else EXPLORATORY


def adjust_families(p_values: list[float], families: list[str], exploratory: str = "bh",
                    alpha: float = 1.0 - LEVEL) -> tuple[list[float], list[str], list[bool | None]]:
    """(p_adjusted, method, significant) per row: Holm within the confirmatory rows (significant
    True/False), and for the exploratory rows the BH q ("bh") or nothing ("none"), with no
    significance flag (None): exploratory rows are reported, not decided."""
    if exploratory not in EXPLORATORY_RATES:
        raise ValueError(f"compare.error_rate.exploratory: {exploratory!r} is not one of {', '.join(EXPLORATORY_RATES)}")
    n = len(p_values)
    adjusted: list[float] = [float("nan")] * n
    method: list[str] = [""] * n
    significant: list[bool | None] = [None] * n
    confirmatory = [i for i in range(n) if families[i] == CONFIRMATORY]
    held, rejected = holm([p_values[i] for i in confirmatory], alpha)
    for i, p, sig in zip(confirmatory, held, rejected):
        adjusted[i], method[i], significant[i] = p, "holm", sig
    rest = [i for i in range(n) if families[i] != CONFIRMATORY]
    q = benjamini_hochberg([p_values[i] for i in rest]) if exploratory == "bh" else [float("nan")] * len(rest)
    for i, qi in zip(rest, q):
        adjusted[i], method[i] = qi, exploratory
    return adjusted, method, significant


# --- Exact tests for right/wrong items (issue 32) ----------------------------------------------------
# Where each item is right or wrong (triplets, retrieval hits) the exact tests need no B: McNemar's
# on the discordant items for a paired difference (Dror et al. 2018), and its cluster version where
# items share a source.

def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: b items right under A and wrong under B, c the reverse; the
    binomial test of b successes in b + c trials at probability 1/2 (items both get right or both
    get wrong say nothing about the difference). 1.0 without discordant items."""
    from scipy.stats import binomtest
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0: b = {b}, c = {c}")
    if b + c == 0:
        return 1.0
    return float(binomtest(int(b), int(b + c), 0.5, alternative="two-sided").pvalue)


def cluster_differences(correct_a, correct_b, cluster) -> np.ndarray:
    """d_c per cluster: the sum over the cluster's items of (A right) - (B right), clusters in the
    sorted order of their labels. The caller leaves out items either model has no verdict on."""
    a = np.asarray(correct_a, dtype=np.int64)
    b = np.asarray(correct_b, dtype=np.int64)
    labels = np.asarray(cluster)
    if not a.shape == b.shape == labels.shape:
        raise ValueError(f"paired verdicts and clusters differ in number: {a.shape}, {b.shape}, {labels.shape}")
    if not len(labels):
        return np.zeros(0, dtype=np.int64)
    index = np.unique(labels, return_inverse=True)[1].ravel()
    return np.bincount(index, weights=a - b).round().astype(np.int64)


def sign_flip_exact(cluster_diffs) -> float:
    """Two-sided exact cluster sign-flip p-value of "no difference" for paired right/wrong items
    grouped in clusters (items sharing a source are not independent; the clusters are).

    d_c = sum over cluster c's items of (A right) - (B right). Under H0 the two models are
    exchangeable within every cluster, so each d_c is as likely +d_c as -d_c, independently across
    clusters: p = P(|sum_c e_c d_c| >= |sum_c d_c|), e_c = +-1, over all 2^K sign patterns. The
    distribution of the sum is built exactly by convolving the clusters' two-point distributions on
    the integers (counts as Python integers: no enumeration, no rounding), so p is exact and never
    0 (the observed pattern is one of them). Clusters with d_c = 0 weigh nothing either way. With
    one item per cluster this is McNemar's exact test (mcnemar_exact(b, c)): d_c = +-1, the sum of
    K = b + c signs is 2 Bin(b + c, 1/2) - (b + c). 1.0 without a nonzero d_c."""
    d = np.abs(np.asarray(cluster_diffs, dtype=np.int64))
    d = d[d != 0]
    if not len(d):
        return 1.0
    observed = abs(int(np.sum(np.asarray(cluster_diffs, dtype=np.int64))))
    total = int(d.sum())
    # counts[s + total]: the sign patterns so far whose sum is s
    counts = np.zeros(2 * total + 1, dtype=object)
    counts[total] = 1
    for x in d.tolist():
        shifted = np.zeros_like(counts)
        shifted[x:] += counts[:len(counts) - x]  # +x
        shifted[:len(counts) - x] += counts[x:]  # -x
        counts = shifted
    sums = np.arange(-total, total + 1)
    extreme = sum(counts[np.abs(sums) >= observed].tolist())
    # an exact ratio of integers; its float is > 0 unless 2^K is beyond float range
    p = float(Fraction(int(extreme), 2 ** len(d)))
    return min(1.0, max(p, np.nextafter(0.0, 1.0)))


# --- Tests and intervals whose resolution does not depend on B (issues 43, 44) -----------------------
# A bootstrap p of the form 2(1 + k)/(B + 1) cannot go below 2/(B + 1), so a family of m comparisons
# could never reach Holm's alpha/m at a B one can afford at corpus scale (m = 63 at B = 1,000: the
# smallest adjusted p 0.126). The replicates give the standard error of the paired difference; the
# p-value is the normal approximation's, and the interval of a share is a score interval over the
# independent units, not the resamples' percentiles.

def replicate_se(values) -> float:
    """The bootstrap standard error: the standard deviation (ddof 1) of the finite replicate values;
    NaN with fewer than two."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(np.std(v, ddof=1)) if len(v) > 1 else float("nan")


def replicate_skew(values) -> float:
    """The skewness of the finite replicate values (the normal approximation's check: near 0 where the
    replicates are near normal); NaN without spread."""
    from scipy.stats import skew
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(skew(v)) if len(v) > 2 and np.ptp(v) > 0 else float("nan")


def normal_p_value(estimate: float, se: float) -> float:
    """Two-sided p of "no difference" from the normal approximation of the paired replicates,
    2 Phi(-|estimate / se|) (the replicates' standard error; Efron & Tibshirani 1993, 16.4). Its
    smallest value does not depend on B. A zero estimate without spread is no evidence (p = 1); a
    nonzero one without spread has no p (a bootstrap without spread cannot test it: one item, or a
    figure fixed by the design)."""
    from scipy.special import ndtr
    if not (np.isfinite(estimate) and np.isfinite(se)):
        return float("nan")
    if se == 0:
        return 1.0 if estimate == 0 else float("nan")
    # beyond |z| ~ 38 the tail underflows to 0.0; a p-value is never 0, so the smallest float stands in
    return float(min(1.0, max(2.0 * ndtr(-abs(estimate) / se), np.nextafter(0.0, 1.0))))


def wilson_interval(share: float, n: float, level: float = LEVEL) -> tuple[float, float]:
    """The score (Wilson 1927) interval of a share observed over n independent units, n real (an
    effective n). Monotone in the share at fixed n, and never of zero width: at 0 of 445 it is
    [0, 0.0086], at 34 of 34 [0.898, 1]. (NaN, NaN) for n <= 0 or an undefined share."""
    from scipy.special import ndtri
    if not (n > 0 and np.isfinite(share)):
        return float("nan"), float("nan")
    z = float(ndtri(0.5 + level / 2.0))
    p = min(1.0, max(0.0, float(share)))
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    # at the bounds the score interval's end is the bound itself (rounding would leave 1e-17)
    return (0.0 if p == 0 else float(low)), (1.0 if p == 1 else float(high))


def newcombe_paired_interval(both: float, only_a: float, only_b: float, neither: float,
                             level: float = LEVEL) -> tuple[float, float]:
    """The score interval of a paired difference of shares p_a - p_b (Newcombe 1998, method 10: the
    two Wilson intervals combined with the phi correlation of the 2 x 2 table, its numerator
    corrected by n/2 where positive). Counts may be real (an effective n: counts scaled down to the
    independent units). Never of zero width: no discordant pair among 500 items gives
    [-0.0076, 0.0076] (all right, or all wrong), so agreement on many items can show equivalence where the bootstrap says
    nothing. (NaN, NaN) without items."""
    n = both + only_a + only_b + neither
    if not n > 0:
        return float("nan"), float("nan")
    p_a, p_b = (both + only_a) / n, (both + only_b) / n
    l1, u1 = wilson_interval(p_a, n, level)
    l2, u2 = wilson_interval(p_b, n, level)
    numerator = both * neither - only_a * only_b
    if numerator > 0:
        numerator = max(numerator - n / 2.0, 0.0)
    denominator = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = numerator / np.sqrt(denominator) if denominator > 0 else 0.0
    d = p_a - p_b
    low = d - np.sqrt(max(0.0, (p_a - l1) ** 2 - 2 * phi * (p_a - l1) * (u2 - p_b) + (u2 - p_b) ** 2))
    high = d + np.sqrt(max(0.0, (u1 - p_a) ** 2 - 2 * phi * (u1 - p_a) * (p_b - l2) + (p_b - l2) ** 2))
    return float(max(-1.0, low)), float(min(1.0, high))
