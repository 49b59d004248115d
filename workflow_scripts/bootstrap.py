"""Shared statistics: seeded bootstrap intervals for any probe.

Every probe resamples its own items (sentences, triplets, questions, phrases) with replacement and
reports the 95% percentile interval of its statistic. The random stream is derived from the config
seed and the names involved (corpus, model, condition, ...), so a rerun with the same config gives
the same interval, and two tables never share a stream by accident. Where the estimator is biased
(a KDE overlap, whose bootstrap replicates sit off the estimate) a probe declares the BCa interval
instead (Probe.intervals; interval_method, bca_interval): bias-corrected by the share of replicates
below the estimate, accelerated by a jackknife over the resampling units -- a grouped jackknife
(jackknife_weights: JACKKNIFE_BLOCKS blocks of units left out in turn) so that it costs a few
replicates more, not one per unit. pearson_with_interval: a
correlation over points (models, transformations) with a bootstrap interval of Pearson's r, for
the probes' correlation tables (retrieval, domain shift).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from workflow_scripts.common import stable_id

LEVEL = 0.95
INTERVAL_METHODS = ("percentile", "bca")
# blocks of the grouped jackknife behind BCa's acceleration: leave-one-out over 1,000 sentence groups
# would cost 1,000 KDE overlaps per condition, 20 blocks cost 20 (a tenth of B = 200)
JACKKNIFE_BLOCKS = 20


def bootstrap_rng(seed: int, *names: object) -> np.random.Generator:
    """Generator seeded by the config seed and the names of what is being resampled."""
    key = stable_id("bootstrap", seed, *names)
    return np.random.default_rng(np.random.SeedSequence([seed, key & 0xFFFFFFFF, key >> 32]))


def resample_counts(rng: np.random.Generator, replicates: int, items: int) -> np.ndarray:
    """(replicates, items) multinomial counts: how often each item is drawn in each bootstrap
    resample of `items` draws with replacement (the classic bootstrap, as integer weights)."""
    if items == 0:
        return np.zeros((replicates, 0), dtype=np.int64)
    return rng.multinomial(items, np.full(items, 1.0 / items), size=replicates)


def percentile_interval(replicates: np.ndarray, level: float = LEVEL) -> tuple[float, float, int]:
    """(low, high, valid): percentile interval of the finite replicate values. NaN bounds when
    fewer than half the replicates are defined (the statistic is then not worth an interval)."""
    values = np.asarray(replicates, dtype=np.float64)
    finite = values[np.isfinite(values)]
    if not len(values) or len(finite) < 0.5 * len(values):
        return float("nan"), float("nan"), int(len(finite))
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high), int(len(finite))


def interval_method(intervals: tuple, statistic: str) -> str:
    """The interval method a probe declares for a statistic: `intervals` are (fnmatch pattern,
    method) pairs (Probe.intervals), first match wins; "percentile" where none matches."""
    import fnmatch
    for pattern, method in intervals:
        if fnmatch.fnmatchcase(statistic, pattern):
            if method not in INTERVAL_METHODS:
                raise ValueError(f"interval method {method!r} for {pattern!r}: expected one of {', '.join(INTERVAL_METHODS)}")
            return method
    return "percentile"


def jackknife_weights(units: int, blocks: int = JACKKNIFE_BLOCKS) -> np.ndarray:
    """(J, units) weights of a grouped jackknife: unit i belongs to block i % J (the units in a
    model-independent order), and row j leaves block j out (weight 0) and keeps every other unit
    once. J = min(blocks, units): with as many blocks as units, the leave-one-out jackknife."""
    count = min(blocks, units)
    return (np.arange(units)[None, :] % max(count, 1) != np.arange(count)[:, None]).astype(np.float64)


def bca_constants(replicates: np.ndarray, estimate: float, jackknife: np.ndarray) -> tuple[float, float]:
    """(z0, a) of the BCa interval (Efron & Tibshirani 1993, 14.3; as scipy.stats.bootstrap):
    z0 = Phi^-1 of the share of finite replicates below the estimate (ties count half); a =
    sum(d^3) / (6 sum(d^2)^1.5), d the jackknife values' mean minus each (leave-one-out or grouped:
    the same formula); a = 0 where the jackknife values do not differ."""
    from scipy.special import ndtri
    values = np.asarray(replicates, dtype=np.float64)
    values = values[np.isfinite(values)]
    share = (np.sum(values < estimate) + np.sum(values <= estimate)) / (2.0 * len(values))
    jack = np.asarray(jackknife, dtype=np.float64)
    d = jack.mean() - jack
    # values equal up to rounding have no spread (their mean's rounding would make up a skew)
    still = np.ptp(jack) <= 1e-12 * max(1.0, float(np.abs(jack).max()))
    a = 0.0 if still else float(np.sum(d ** 3) / (6.0 * np.sum(d ** 2) ** 1.5))
    return float(ndtri(share)), a


def bca_interval(replicates: np.ndarray, estimate: float, jackknife: np.ndarray,
                 level: float = LEVEL) -> tuple[float, float, int]:
    """(low, high, valid): the BCa interval, the percentiles Phi(z0 + (z0 + z) / (1 - a (z0 + z)))
    at z = the normal quantiles of the percentile interval's tails, of the finite replicates. NaN
    bounds where the percentile interval has them, where the estimate or a jackknife value is not
    finite, or where every replicate lies on one side of the estimate (z0 infinite): the caller
    then falls back to the percentile interval (bootstrap_interval)."""
    from scipy.special import ndtr, ndtri
    values = np.asarray(replicates, dtype=np.float64)
    finite = values[np.isfinite(values)]
    low, high, valid = percentile_interval(values, level)
    jack = np.asarray(jackknife, dtype=np.float64)
    if not np.isfinite(low) or not np.isfinite(estimate) or len(jack) < 2 or not np.isfinite(jack).all():
        return float("nan"), float("nan"), valid
    z0, a = bca_constants(finite, estimate, jack)
    if not np.isfinite(z0):
        return float("nan"), float("nan"), valid
    tails = []
    for z in (ndtri((1.0 - level) / 2.0), ndtri((1.0 + level) / 2.0)):
        tails.append(float(ndtr(z0 + (z0 + z) / (1.0 - a * (z0 + z)))))
    low, high = np.percentile(finite, [100.0 * tails[0], 100.0 * tails[1]])
    return float(low), float(high), valid


def bootstrap_interval(method: str, replicates: np.ndarray, estimate: float | None = None,
                       jackknife: np.ndarray | None = None, level: float = LEVEL) -> tuple[float, float, int, str]:
    """(low, high, valid, method used): the interval a statistic's declared method asks for (see
    interval_method). "bca" needs the estimate and the jackknife values; where BCa is undefined
    (bca_interval) the percentile interval stands in, and the method used says so."""
    if method == "bca" and estimate is not None and jackknife is not None:
        low, high, valid = bca_interval(replicates, estimate, jackknife, level)
        if np.isfinite(low):
            return low, high, valid, "bca"
    elif method not in INTERVAL_METHODS:
        raise ValueError(f"interval method {method!r}: expected one of {', '.join(INTERVAL_METHODS)}")
    return (*percentile_interval(replicates, level), "percentile")


def bootstrap_statistic(values: np.ndarray, statistic: Callable[[np.ndarray, np.ndarray], float], replicates: int,
                        seed: int, *names: object, level: float = LEVEL) -> tuple[float, float, int]:
    """Interval of `statistic(values, weights)` over item resamples; `weights` are the integer draw
    counts of each item (row) of `values`. For a mean: `lambda v, w: np.average(v, weights=w)`."""
    values = np.asarray(values)
    counts = resample_counts(bootstrap_rng(seed, *names), replicates, len(values))
    stats = np.array([statistic(values, w) if w.sum() else np.nan for w in counts])
    return percentile_interval(stats, level)


def bootstrap_mean(values: np.ndarray, replicates: int, seed: int, *names: object,
                   level: float = LEVEL) -> tuple[float, float, int]:
    """Interval of the mean of per-item values (accuracies as 0/1, similarities, ...), vectorised."""
    values = np.asarray(values, dtype=np.float64)
    if not len(values):
        return float("nan"), float("nan"), 0
    counts = resample_counts(bootstrap_rng(seed, *names), replicates, len(values))
    return percentile_interval(counts @ values / len(values), level)


def pearson_with_interval(x: np.ndarray, y: np.ndarray, replicates: int, seed: int, *names) -> dict:
    """Pearson r and Spearman rho over the points, with a bootstrap interval of r over the points
    (resampled with replacement); NaN with fewer than 3 points or no spread."""
    from scipy.stats import spearmanr
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    out = {"n_points": int(len(x)), "pearson": float("nan"), "pearson_ci_low": float("nan"),
           "pearson_ci_high": float("nan"), "spearman": float("nan")}
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    out["pearson"] = float(np.corrcoef(x, y)[0, 1])
    out["spearman"] = float(spearmanr(x, y).statistic)

    def weighted_r(values, w):
        xs, ys = np.repeat(values[:, 0], w), np.repeat(values[:, 1], w)
        return float(np.corrcoef(xs, ys)[0, 1]) if np.ptp(xs) > 0 and np.ptp(ys) > 0 else float("nan")
    lo, hi, _ = bootstrap_statistic(np.column_stack([x, y]), weighted_r, replicates, seed, *names)
    out["pearson_ci_low"], out["pearson_ci_high"] = lo, hi
    return out


# --- Paired resampling across models (issue 26) -------------------------------------------------
# A replicate must draw the same items for every model, so that model A's and model B's statistics
# can be subtracted replicate by replicate. The stream is therefore seeded by the config seed, the
# probe, the dataset and the statistic only -- never by the model -- and the items must be in a
# model-independent order (sorted by their stable ids) before the counts are applied.

def paired_rng(seed: int, probe: str, dataset: str, statistic: str, *more: object) -> np.random.Generator:
    """The stream behind one statistic of one dataset of one probe, shared by every model.
    `more` may name further model-independent parts (a condition, a language, a k); never a model."""
    return bootstrap_rng(seed, "paired", probe, dataset, statistic, *more)


REPLICATE_COLUMNS = ("probe", "dataset", "statistic", "model", "point", "replicate", "value", "units")


def replicate_rows(probe: str, dataset: str, statistic: str, model: str, point: float,
                   values: np.ndarray, units: int | None = None) -> dict[str, list]:
    """Column lists of one statistic's bootstrap replicates for one model (replicate = 0..B-1, in
    the order the paired stream drew them), ready for `write_replicates`. `statistic` names the
    table row without the model (e.g. "pc_en/negation/overlap"): rows with the same probe, dataset
    and statistic are paired across models. `units`: the independent units behind the figure (what
    its n counts), for the power of the comparisons (verdicts.units_needed)."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    return {"probe": [probe] * n, "dataset": [dataset] * n, "statistic": [statistic] * n,
            "model": [model] * n, "point": [float(point)] * n, "replicate": list(range(n)),
            "value": values.tolist(), "units": [None if units is None else int(units)] * n}


def write_replicates(path, parts: list[dict[str, list]]) -> None:
    """Write replicate rows (from `replicate_rows`) to one Parquet file, atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from workflow_scripts.common import atomic_path
    columns: dict[str, list] = {c: [] for c in REPLICATE_COLUMNS}
    for part in parts:
        for c in REPLICATE_COLUMNS:
            columns[c].extend(part[c])
    schema = pa.schema([("probe", pa.string()), ("dataset", pa.string()), ("statistic", pa.string()),
                        ("model", pa.string()), ("point", pa.float64()), ("replicate", pa.int32()),
                        ("value", pa.float64()), ("units", pa.int64())])
    table = pa.table(columns, schema=schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
