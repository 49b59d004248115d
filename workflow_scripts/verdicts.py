"""Verdict words from an interval and a margin (issues 43, 44): what "better than the baseline" means
once millions of units make every difference significant.

Per confirmatory comparison (a model against the surface-form baseline, or against a declared
reference such as chance, on a headline statistic) the differences table (differences.py) computes,
once, what every screen shows:

- d: the direction-signed difference, s (model - baseline), s = +1 where higher is better, -1 where
  lower is better, so d > 0 always means "the model is better";
- its family-adjusted interval [l, u]: the (1 - alpha/m) interval of d, m the probe's confirmatory
  family (Bonferroni's level, which covers every comparison of the family at once: Holm's rejections
  are never outside it), from the replicates' standard error or an exact score interval;
- delta, the smallest effect of interest in the statistic's own units, declared by the probe with its
  reason (`Probe.margins`), overridable per study (`compare.margins`);
- the word (Lakens 2017; TOST: Schuirmann 1987), `significant` being Holm's decision on the p-value:

  better               significant, d > 0, l > delta: better by at least delta
  better, size unclear significant, d > 0, the interval reaching delta or below it
  negligibly better    significant, d > 0, u < delta: better, by less than delta
  equivalent           not significant, -delta < l and u < delta: within the margin either way
  inconclusive         not significant, the interval reaching beyond -delta or delta
  (and the mirror images for worse)

  A zero-width interval never certifies equivalence (two figures fixed by the design say nothing).
- power beside every word: the smallest effect detectable at this n with 80% power at the family's
  level, MDE = (z_{1 - alpha/(2m)} + z_{0.8}) se, and about how many units would detect delta,
  n (MDE / delta)^2.
- ranks among all models (rank_sets): simultaneous rank confidence sets from all pairwise
  comparisons of a figure with Holm over its M(M - 1)/2 pairs (Mogstad, Romano, Shaikh & Wilhelm,
  "Inference for Ranks", Review of Economic Studies 2024): model j ranks from 1 + #{k significantly
  better than j} to M - #{k significantly worse than j}.
"""
from __future__ import annotations

import fnmatch
import math

ALPHA = 0.05
POWER = 0.8

BETTER, BETTER_UNCLEAR, NEGLIGIBLY_BETTER = "better", "better, size unclear", "negligibly better"
WORSE, WORSE_UNCLEAR, NEGLIGIBLY_WORSE = "worse", "worse, size unclear", "negligibly worse"
EQUIVALENT, INCONCLUSIVE = "equivalent", "inconclusive"
WRONG_DIRECTION, NO_VERDICT = "wrong direction", "no verdict"
# the words in the order of the one-line summaries, each with its one-line meaning (the legend)
WORDS = {
    BETTER: "better by at least the margin delta (the whole family-adjusted interval of the difference above +delta)",
    BETTER_UNCLEAR: "significantly better, but the interval reaches below +delta: by how much is not yet clear",
    NEGLIGIBLY_BETTER: "significantly better, but by less than delta (the whole interval below +delta)",
    EQUIVALENT: "no difference that matters: the whole interval inside -delta..+delta",
    INCONCLUSIVE: "not significant and the interval reaches beyond the margin: the data cannot tell yet "
                  "(MDE beside it: the effect this n could detect)",
    NEGLIGIBLY_WORSE: "significantly worse, but by less than delta",
    WORSE_UNCLEAR: "significantly worse, by an amount not yet clear",
    WORSE: "worse by at least delta",
    WRONG_DIRECTION: "CSC: the negated variants are no farther from the original than the fuzzed ones (the "
                     "within-sentence AUC below 1/2 by the margin), so never better",
    NO_VERDICT: "none is possible, the reason beside it",
}
SHOWN_BETTER = (BETTER, BETTER_UNCLEAR)
# the one-line summary per model counts these groups
GROUPS = {"better": (BETTER, BETTER_UNCLEAR), "negligible": (NEGLIGIBLY_BETTER, NEGLIGIBLY_WORSE),
          "equivalent": (EQUIVALENT,), "inconclusive": (INCONCLUSIVE,),
          "worse": (WORSE, WORSE_UNCLEAR, WRONG_DIRECTION), "no verdict": (NO_VERDICT,)}


def _finite(*values) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def critical_z(alpha: float, m: int) -> float:
    """z_{1 - alpha/(2m)}: the two-sided critical value at the family-adjusted level alpha/m."""
    from scipy.special import ndtri
    return float(ndtri(1.0 - alpha / (2.0 * max(1, m))))


def adjusted_interval(estimate: float, se: float, alpha: float = ALPHA, m: int = 1) -> tuple[float, float]:
    """estimate -+ z_{1 - alpha/(2m)} se: the normal interval at the family-adjusted level."""
    if not _finite(estimate, se):
        return float("nan"), float("nan")
    z = critical_z(alpha, m)
    return estimate - z * se, estimate + z * se


def word(significant: bool | None, estimate: float, low: float, high: float, delta: float | None) -> str | None:
    """The verdict word of a direction-signed difference (see the module docstring); None where the
    comparison has no decision (no p, an undefined difference)."""
    if significant is None or not _finite(estimate):
        return None
    if significant:
        if estimate == 0:
            return None  # significant, yet neither side better: a tie
        up = estimate > 0
        if delta is None or not _finite(low, high):
            return BETTER if up else WORSE
        lo, hi = (low, high) if up else (-high, -low)  # mirrored: the worse words are the better ones of -d
        if lo > delta:
            return BETTER if up else WORSE
        if hi < delta:
            return NEGLIGIBLY_BETTER if up else NEGLIGIBLY_WORSE
        return BETTER_UNCLEAR if up else WORSE_UNCLEAR
    if delta is not None and _finite(low, high) and high > low and -delta < low and high < delta:
        return EQUIVALENT
    return INCONCLUSIVE


def tost_p(estimate: float, se: float, delta: float, df: float | None = None) -> float:
    """The p-value of the two one-sided tests of equivalence within -delta..+delta (Schuirmann 1987):
    the larger of the p of H0 d <= -delta and of H0 d >= +delta, normal (df None) or Student's t with
    df degrees of freedom (statsmodels' ttost_paired for a paired mean: se = sd/sqrt(n), df = n - 1).
    Equivalence at level a <=> the (1 - 2a) interval lies inside the margin."""
    from scipy import stats
    if not _finite(estimate, se, delta) or se <= 0:
        return float("nan")
    dist = stats.norm if df is None else stats.t(df)
    p_low = dist.sf((estimate + delta) / se)   # H0: d <= -delta
    p_high = dist.cdf((estimate - delta) / se)  # H0: d >= +delta
    return float(max(p_low, p_high))


def minimum_detectable(se: float, alpha: float = ALPHA, m: int = 1, power: float = POWER) -> float:
    """The smallest effect detectable with `power` at the family-adjusted level alpha/m (two-sided):
    (z_{1 - alpha/(2m)} + z_power) se."""
    from scipy.special import ndtri
    if not _finite(se):
        return float("nan")
    return (critical_z(alpha, m) + float(ndtri(power))) * se


def units_needed(n: int | None, mde: float, delta: float | None) -> int | None:
    """About how many units would detect delta: n (MDE/delta)^2 (the standard error falls as 1/sqrt(n))."""
    if n is None or delta is None or not _finite(mde) or delta <= 0 or n <= 0:
        return None
    return int(math.ceil(n * (mde / delta) ** 2))


def separation(point: float, low: float, high: float, chance: float, delta: float) -> str | None:
    """Which way a statistic with a chance level separates, from its 95% interval and the margin:
    `right` (the interval above chance and the estimate at least delta above it), `wrong` (the
    interval below chance and the estimate at least delta below it), `none` (the interval inside
    chance -+ delta: no separation either way), `unclear` otherwise. None where undefined."""
    if not _finite(point, low, high):
        return None
    if high < chance and point <= chance - delta:
        return "wrong"
    if low > chance and point >= chance + delta:
        return "right"
    if chance - delta < low and high < chance + delta:
        return "none"
    return "unclear"


def declared(entries: tuple, statistic: str):
    """The first (pattern, *values) entry whose fnmatch pattern matches the statistic, without the
    pattern; None where none does."""
    for entry in entries:
        if fnmatch.fnmatchcase(statistic, entry[0]):
            return entry[1:]
    return None


def margin_of(margins: tuple, statistic: str, overrides: dict | None = None) -> tuple[float | None, str]:
    """(delta, reason) for a statistic: the study's `compare.margins.<probe>` override (a pattern ->
    delta mapping, first match in its order) or the probe's declaration ((pattern, delta, reason)
    entries); (None, "") where neither names one."""
    for pattern, delta in (overrides or {}).items():
        if fnmatch.fnmatchcase(statistic, pattern):
            return float(delta), "set by the study (compare.margins)"
    found = declared(margins, statistic)
    return (float(found[0]), found[1]) if found else (None, "")


def rank_sets(models: list[str], beats: set[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """Simultaneous rank confidence sets (Mogstad et al. 2024) of M models from the pairs (winner,
    loser) that the all-pairs comparisons show significantly different (Holm over the M(M - 1)/2
    pairs): rank 1 is the best; model j from 1 + #{k beating j} to M - #{k j beats}."""
    m = len(models)
    return {j: (1 + sum(1 for k in models if (k, j) in beats), m - sum(1 for k in models if (j, k) in beats))
            for j in models}


def rank_text(low: int | None, high: int | None, of: int | None) -> str:
    """`1-2 of 5`, `3 of 5`; empty where unknown."""
    if low is None or high is None or not of:
        return ""
    return f"{low} of {of}" if low == high else f"{low}\u2013{high} of {of}"
