"""Paired model comparisons (issue 26): which pairs a study compares, the paired bootstrap interval
of a difference A - B, and Holm's step-down correction over the comparisons of one table.

The replicate files every probe writes (bootstrap.write_replicates) hold, per statistic, the B
replicate values of each model drawn from the same item resamples (bootstrap.paired_rng). The
difference of two models in replicate r is therefore the difference on the same items, and its
percentile interval is the paired interval.
"""
from __future__ import annotations

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


def paired_difference(point_a: float, point_b: float, reps_a: np.ndarray, reps_b: np.ndarray,
                      level: float = LEVEL) -> dict:
    """A - B with its paired percentile interval and a two-sided bootstrap p-value.

    reps_a[r] and reps_b[r] must come from the same item resample r. The p-value is
    min(1, 2 * min(share of replicate differences <= 0, share >= 0)), the percentile-bootstrap test
    whose rejection at alpha matches the (1 - alpha) percentile interval excluding 0. A difference
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
        p = float(min(1.0, 2.0 * min(np.mean(finite <= 0), np.mean(finite >= 0))))
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
