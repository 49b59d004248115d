"""Paired model comparisons (issue 26): which pairs a study compares, the paired bootstrap interval
of a difference A - B, and Holm's step-down correction over the comparisons of one table.

The replicate files every probe writes (bootstrap.write_replicates) hold, per statistic, the B
replicate values of each model drawn from the same item resamples (bootstrap.paired_rng). The
difference of two models in replicate r is therefore the difference on the same items, and its
percentile interval is the paired interval.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from workflow_scripts.bootstrap import LEVEL, percentile_interval

SURFACE_FAMILY = "surface_form"


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
    baselines = [n for n in names if models[n].get("family") == SURFACE_FAMILY]
    others = [n for n in names if n not in baselines]
    for base in baselines:
        for a in others:
            add(a, base)
    if others:
        first = others[0]
        for a in others[1:]:
            add(a, first)
    return pairs


def bootstrap_p_value(differences: np.ndarray) -> float:
    """Two-sided bootstrap p-value of "no difference" from B replicate differences (NaN ignored):
    min(1, 2 * min((1 + k_le) / (B + 1), (1 + k_ge) / (B + 1))), k_le and k_ge the replicates <= 0
    and >= 0 (Davison & Hinkley 1997; Phipson & Smyth 2010). The observed sample counts as one of
    the B + 1 draws, so p is never 0: with every replicate on one side it is 2 / (B + 1), the
    smallest p a family can reach with B replicates."""
    d = np.asarray(differences, dtype=np.float64)
    d = d[np.isfinite(d)]
    if not len(d):
        return float("nan")
    b = len(d)
    tail = min(1 + int(np.sum(d <= 0)), 1 + int(np.sum(d >= 0))) / (b + 1)
    return float(min(1.0, 2.0 * tail))


def smallest_p_value(replicates: int) -> float:
    """The smallest p-value `bootstrap_p_value` can give with this many replicates: 2 / (B + 1)."""
    return 2.0 / (replicates + 1) if replicates > 0 else float("nan")


def paired_difference(point_a: float, point_b: float, reps_a: np.ndarray, reps_b: np.ndarray,
                      level: float = LEVEL) -> dict:
    """A - B with its paired percentile interval and a two-sided bootstrap p-value.

    reps_a[r] and reps_b[r] must come from the same item resample r. The p-value is
    `bootstrap_p_value` of the replicate differences: never 0, at least 2 / (B + 1). A difference
    that is the same nonzero value in every replicate (a single item) gets no p-value: a bootstrap
    without spread cannot tell a real difference from one item's.
    """
    a = np.asarray(reps_a, dtype=np.float64)
    b = np.asarray(reps_b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired replicates differ in number: {a.shape} vs {b.shape}")
    diff = a - b
    low, high, valid = percentile_interval(diff, level)
    finite = diff[np.isfinite(diff)]
    if valid == 0 or not np.isfinite(low):
        p = float("nan")
    elif np.ptp(finite) == 0 and finite[0] != 0:
        # every resample gives the same nonzero difference (one item, or items that never vary): the
        # bootstrap has no spread to test against, so no verdict (not "significant" with p = 0)
        p = float("nan")
    else:
        p = bootstrap_p_value(finite)
    return {"difference": float(point_a - point_b), "ci_low": low, "ci_high": high,
            "replicates": int(valid), "p_value": p}


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
    base_a = (models.get(model_a) or {}).get("family") == SURFACE_FAMILY
    base_b = (models.get(model_b) or {}).get("family") == SURFACE_FAMILY
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


def b_too_small(replicates: int, family_size: int, alpha: float = 1.0 - LEVEL) -> bool:
    """Whether B replicates cannot reach Holm's first threshold alpha / m in a family of m: the
    smallest p, 2 / (B + 1), is above it, so no row of the family can be significant."""
    return family_size > 0 and smallest_p_value(replicates) > alpha / family_size


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
# Where each item is right or wrong (triplets, retrieval hits, Montague shares) the exact tests need
# no B: McNemar's on the discordant items for a paired difference (Dror et al. 2018), and the
# Clopper-Pearson interval for a share, which stays informative at 0 or 1 where a bootstrap interval
# has zero width.

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


def discordant_counts(correct_a, correct_b) -> tuple[int, int]:
    """(b, c) of two models' right/wrong verdicts on the same items, aligned: b the items A gets
    right and B wrong, c the reverse. The caller leaves out items either model has no verdict on."""
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"paired verdicts differ in number: {a.shape} vs {b.shape}")
    return int(np.sum(a & ~b)), int(np.sum(~a & b))


def clopper_pearson(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a share of k right out of n; (NaN, NaN) for n = 0."""
    from scipy.stats import binomtest
    if n == 0:
        return float("nan"), float("nan")
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def share_interval(k: int, n: int, bootstrap: tuple[float, float], level: float = LEVEL) -> tuple[float, float, str]:
    """(low, high, method) of a share of k right out of n: the bootstrap percentile interval, except
    at 0 or 1 (k = 0 or k = n), where every resample gives the same share and that interval has zero
    width; there the exact Clopper-Pearson interval (0 of 445: [0, 0.0083]). Method "percentile" or
    "clopper_pearson"; n = 0 keeps the (undefined) bootstrap bounds."""
    if n > 0 and k in (0, n):
        low, high = clopper_pearson(k, n, level)
        return low, high, "clopper_pearson"
    return float(bootstrap[0]), float(bootstrap[1]), "percentile"


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
