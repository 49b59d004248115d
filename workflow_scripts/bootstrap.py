"""Shared statistics: seeded bootstrap intervals for any probe.

Every probe resamples its own items (sentences, triplets, questions, phrases) with replacement and
reports the 95% percentile interval of its statistic. The random stream is derived from the config
seed and the names involved (corpus, model, condition, ...), so a rerun with the same config gives
the same interval, and two tables never share a stream by accident. pearson_with_interval: a
correlation over points (models, transformations) with a bootstrap interval of Pearson's r, for
the probes' correlation tables (retrieval, domain shift).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from workflow_scripts.common import stable_id

LEVEL = 0.95


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


REPLICATE_COLUMNS = ("probe", "dataset", "statistic", "model", "point", "replicate", "value")


def replicate_rows(probe: str, dataset: str, statistic: str, model: str, point: float,
                   values: np.ndarray) -> dict[str, list]:
    """Column lists of one statistic's bootstrap replicates for one model (replicate = 0..B-1, in
    the order the paired stream drew them), ready for `write_replicates`. `statistic` names the
    table row without the model (e.g. "pc_en/negation/overlap"): rows with the same probe, dataset
    and statistic are paired across models."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    return {"probe": [probe] * n, "dataset": [dataset] * n, "statistic": [statistic] * n,
            "model": [model] * n, "point": [float(point)] * n, "replicate": list(range(n)),
            "value": values.tolist()}


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
                        ("value", pa.float64())])
    table = pa.table(columns, schema=schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
