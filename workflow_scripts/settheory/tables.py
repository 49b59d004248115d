"""C1-C6 shares with bootstrapped intervals, the paper's table layouts and the histogram plots.

Criteria (methods.md §2; "sim" is each measure, differences of distances negated, criteria.py):
- C1 (overlap A, B -> O): d1 = sim(A,O) - sim(A,B) >= eps1, d2 = sim(B,O) - sim(A,B) >= eps2.
- C3 (difference A, B -> D, after the cos(B,D) filter): d1 = sim(A,D) - sim(B,D) >= eps1,
  d2 = sim(A,B) - sim(B,D) >= eps2 (the paper's appendix A.5 and the reference code agree).
- C4 (difference): d = sim(A-B, D) - sim(A-B, B) >= delta.
  For C1 and C3 the shares of the four cases (T,T), (T,F), (F,T), (F,F) are averaged over a uniform
  grid of (eps1, eps2) in [lo1, hi1] x [lo2, hi2] (C4: delta in [lo, hi]). The reference code averages
  10 x 10 bins of sub-grids; in the limit of a fine grid, the share of grid points where d >= eps is
  P(d) = clip((d - lo) / (hi - lo), 0, 1), and for a product grid the (T,T) share of a sample is
  P(d1) P(d2), (T,F) P(d1)(1 - P(d2)), ... (a test shows the closed form equals a fine explicit grid).
  Bounds (`settheory.bounds`): by default the min and max of each difference over the model's own
  samples (`own`: a model's share depends on no other model, and on no affine rescaling of its
  similarities), or pooled over all samples and all models of the study as the reference code does
  (`pooled`: a model's share then depends on the other models and on its scale against theirs), or
  fixed bounds from the config (`fixed_bounds`, so that studies can be compared; "fixed"). The kind
  and the bounds are written in every row. lo == hi: P(d) = 1 where d >= lo, else 0.
- C2 (overlap): "in the middle" when |angle(A,B) - (angle(p,A) + angle(p,B))| < `middle_tolerance`
  degrees (1, absolute; the reference code's rule).
- C5 (difference): D's projection near A: angle(p,A) <= theta, theta normalised by angle(A,B)
  (`c5.unit: normalised`, the default: the paper plots angles normalised so that angle(A,B) = 1) or in
  degrees (`c5.unit: degrees`).
- C6 (union A, B -> U): case by r = ||A||/||B||: `a_larger` (r >= c6.ratio), `b_larger`
  (r <= 1/c6.ratio), `comparable` otherwise. Expected: near A (angle(p,A)/angle(A,B) <= c6.theta),
  near B (the same for B), in the middle (C2's rule). Shares per case and over all (`all`).
C2, C5 and C6 are geometric: one row per model, measure "projection".

Intervals: every share has a 95% percentile bootstrap interval (bootstrap.py's resampling counts):
the samples (windows) are resampled with all their operator samples (a window gives one overlap, two
union and up to six difference samples, which are not independent), `bootstrap_b` times, seeded by
the config seed and (sample set, criterion, measure) -- never the model (bootstrap.paired_rng) --
over every sample id among the operator's kept samples, sorted (the same for every model: the
filter's encoders are the study's), so replicate r draws the same samples for every model (a model's
undefined rows weigh 0); the four cases of a criterion share the resamples. The aggregate writes
each share's replicates per sample set to <results>/settheory/<set>/replicates.parquet (statistic
`<criterion>/<measure>/<case>`, bootstrap.write_replicates) for the paired differences tables. The bounds stay fixed within the bootstrap (they are the study's reference scale).
Operator samples whose value is undefined (a zero vector, no plane) are left out and counted
(n_undefined).

Outputs: settheory_shares.csv (long, machine-readable), settheory_c1.csv ... settheory_c6.csv in the
layouts of the paper's tables (models as rows, "share [ci_low, ci_high]" in percent),
settheory_histograms.csv, and per (sample set, model) a plot of the normalised-angle histograms of
C2, C5 and C6 and the histogram of ||A||/||B||. Every table names the generator and prompt of its
samples and the filter used.

Job: run_settheory_aggregate (rule settheory_aggregate, rules/settheory.smk).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl

from workflow_scripts.bootstrap import (LEVEL, bootstrap_rng, paired_rng, percentile_interval, replicate_rows,
                                        resample_counts, write_replicates)
from workflow_scripts.common import atomic_path, read_json, setup_logging
from workflow_scripts.figure_text import interval_text
from workflow_scripts.jobs import pair_entries
from workflow_scripts.settheory.criteria import MEASURES, sign

CASES = ("T,T", "T,F", "F,T", "F,F")
C6_CASES = ("a_larger", "comparable", "b_larger", "all")
DEFAULT_SETTINGS = {"measures": list(MEASURES), "fixed_bounds": {}, "bounds": "own", "middle_tolerance": 1.0,
                    "c5": {"theta": 0.25, "unit": "normalised"}, "c6": {"ratio": 1.5, "theta": 0.25},
                    "histogram_bins": 40, "bootstrap_b": 1000}
SHARE_SCHEMA = {"sampleset": pl.String, "model": pl.String, "criterion": pl.String, "measure": pl.String,
                "case": pl.String, "share": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64,
                "n_undefined": pl.Int64, "n_samples": pl.Int64, "bound1_low": pl.Float64, "bound1_high": pl.Float64,
                "bound2_low": pl.Float64, "bound2_high": pl.Float64, "bounds": pl.String, "setting": pl.String,
                "bootstrap_b": pl.Int64, "generator": pl.String, "prompt": pl.String, "filter": pl.String}
REPLICATE_BLOCK = 200


# ---- the closed form and the explicit grid --------------------------------------------------------

def grid_share(d: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Share of a uniform eps grid on [lo, hi] with d >= eps, in the limit of a fine grid."""
    d = np.asarray(d, dtype=np.float64)
    if not hi > lo:
        return (d >= lo).astype(np.float64)
    return np.clip((d - lo) / (hi - lo), 0.0, 1.0)


def explicit_grid_shares(d1, d2, b1, b2, bins: int = 10, points: int = 11) -> dict[str, float]:
    """The reference code's construction: (eps1, eps2) on `bins` x `bins` bins, each with a
    `points` x `points` linspace sub-grid (ends included); the four cases' shares averaged over all."""
    d1, d2 = np.asarray(d1, float)[:, None], np.asarray(d2, float)[:, None]
    edges1, edges2 = np.linspace(*b1, bins + 1), np.linspace(*b2, bins + 1)
    e1 = np.concatenate([np.linspace(lo, hi, points) for lo, hi in zip(edges1[:-1], edges1[1:])])
    e2 = np.concatenate([np.linspace(lo, hi, points) for lo, hi in zip(edges2[:-1], edges2[1:])])
    t1, t2 = (d1 >= e1[None, :]).mean(axis=1), (d2 >= e2[None, :]).mean(axis=1)  # per sample, per axis
    # the grid is a product of the two axes, so each sample's case shares factorise
    return {"T,T": float(np.mean(t1 * t2)), "T,F": float(np.mean(t1 * (1 - t2))),
            "F,T": float(np.mean((1 - t1) * t2)), "F,F": float(np.mean((1 - t1) * (1 - t2)))}


def case_values(d1, d2, b1, b2) -> dict[str, np.ndarray]:
    p1, p2 = grid_share(d1, *b1), grid_share(d2, *b2)
    return {"T,T": p1 * p2, "T,F": p1 * (1 - p2), "F,T": (1 - p1) * p2, "F,F": (1 - p1) * (1 - p2)}


# ---- differences per criterion -----------------------------------------------------------------

def differences(frame: pl.DataFrame, criterion: str, measure: str) -> list[np.ndarray]:
    """The criterion's differences (negated for distances) for the rows of `frame`."""
    s = sign(measure)
    col = lambda name: frame[f"{measure}_{name}"].to_numpy().astype(np.float64)
    if criterion == "c1":
        return [s * (col("at") - col("ab")), s * (col("bt") - col("ab"))]
    if criterion == "c3":
        return [s * (col("at") - col("bt")), s * (col("ab") - col("bt"))]
    if criterion == "c4":
        return [s * (col("dt") - col("db"))]
    raise ValueError(criterion)


OPERATOR_OF = {"c1": "overlap", "c2": "overlap", "c3": "difference", "c4": "difference", "c5": "difference",
               "c6": "union"}


def rows_of(frame: pl.DataFrame, criterion: str) -> pl.DataFrame:
    return frame.filter(pl.col("operator") == OPERATOR_OF[criterion])


def pooled_bounds(frames: dict[str, pl.DataFrame], criterion: str, measure: str) -> list[tuple[float, float]]:
    """[(lo, hi)] per difference of the criterion: min and max over every model's defined values."""
    pooled = None
    for frame in frames.values():
        diffs = differences(rows_of(frame, criterion), criterion, measure)
        pooled = diffs if pooled is None else [np.concatenate([p, d]) for p, d in zip(pooled, diffs)]
    out = []
    for d in pooled or []:
        finite = d[np.isfinite(d)]
        out.append((float(finite.min()), float(finite.max())) if len(finite) else (float("nan"), float("nan")))
    return out


# ---- bootstrap over samples ----------------------------------------------------------------------

def cluster_shares(values: dict[str, np.ndarray], groups: np.ndarray, replicates: int, seed: int, *names,
                   weights: dict[str, np.ndarray] | None = None, universe: np.ndarray | None = None,
                   rng: np.random.Generator | None = None,
                   keep: dict[str, np.ndarray] | None = None) -> dict[str, tuple[float, float, float]]:
    """{name: (share, ci_low, ci_high)}: share = sum(v * w) / sum(w) over rows (w = 1 unless given);
    rows are grouped by `groups` (sample ids), and groups are resampled with replacement, all
    statistics with the same resamples. `universe`: the sample ids resampled (default: those in
    `groups`), sorted; a sample without rows here draws weight 0. Give every model the same universe
    and `rng` stream (bootstrap.paired_rng) for resamples paired across models. `rng` overrides the
    stream of (seed, *names). `keep`: receives each statistic's B replicate values."""
    groups = np.asarray(groups)
    uniq = np.unique(groups if universe is None else np.asarray(universe))
    inverse = np.searchsorted(uniq, groups)
    if len(groups) and (not len(uniq) or not np.array_equal(uniq[np.minimum(inverse, len(uniq) - 1)], groups)):
        raise ValueError("sample ids outside the universe of the bootstrap")
    sums, dens = {}, {}
    for key, v in values.items():
        w = np.ones(len(v)) if weights is None else weights[key]
        sums[key] = np.bincount(inverse, weights=np.nan_to_num(v) * w, minlength=len(uniq))
        dens[key] = np.bincount(inverse, weights=w, minlength=len(uniq))
    rng = bootstrap_rng(seed, *names) if rng is None else rng
    reps = {key: [] for key in values}
    done = 0
    while done < replicates:
        block = min(REPLICATE_BLOCK, replicates - done)
        counts = resample_counts(rng, block, len(uniq)).astype(np.float64)
        for key in values:
            with np.errstate(invalid="ignore", divide="ignore"):
                reps[key].append((counts @ sums[key]) / (counts @ dens[key]))
        done += block
    out = {}
    for key in values:
        if keep is not None:
            keep[key] = np.concatenate(reps[key]) if reps[key] else np.zeros(0)
        total = dens[key].sum()
        est = float(sums[key].sum() / total) if total > 0 else float("nan")
        if replicates and total > 0:
            low, high, _ = percentile_interval(np.concatenate(reps[key]))
        else:
            low = high = float("nan")
        out[key] = (est, low, high)
    return out


# ---- per (sample set, model) ---------------------------------------------------------------------

def _row(base: dict, criterion: str, measure: str, case: str, stat: tuple, n: int, n_undefined: int,
         n_samples: int, bounds=None, bounds_kind: str = "", setting: str = "") -> dict:
    b = list(bounds or [])
    b1 = b[0] if len(b) > 0 else (None, None)
    b2 = b[1] if len(b) > 1 else (None, None)
    return {**base, "criterion": criterion, "measure": measure, "case": case, "share": stat[0], "ci_low": stat[1],
            "ci_high": stat[2], "n": n, "n_undefined": n_undefined, "n_samples": n_samples,
            "bound1_low": b1[0], "bound1_high": b1[1], "bound2_low": b2[0], "bound2_high": b2[1],
            "bounds": bounds_kind, "setting": setting}


def paired_shares(base: dict, rows: pl.DataFrame, criterion: str, measure: str, values: dict, groups: np.ndarray,
                  replicates: int, seed: int, replicates_out: list | None, weights: dict | None = None) -> dict:
    """cluster_shares over the operator's samples, paired across models: the universe is every
    sample id of the operator's rows (the kept operator samples, the same for every model: the
    filter's encoders are the study's, not the model's), the stream the sample set's and the
    criterion's (bootstrap.paired_rng, never the model); a model's undefined rows weigh 0. The
    replicates of each case go to `replicates_out` (statistic `<criterion>/<measure>/<case>`)."""
    keep: dict = {}
    stats = cluster_shares(values, groups, replicates, seed, weights=weights,
                           universe=rows["sample_id"].to_numpy(), keep=keep,
                           rng=paired_rng(seed, "settheory", base["sampleset"], f"{criterion}/{measure}"))
    if replicates_out is not None:
        for case, (share, _, _) in stats.items():
            replicates_out.append(replicate_rows("settheory", base["sampleset"], f"{criterion}/{measure}/{case}",
                                                 base["model"], share, keep[case]))
    return stats


def epsilon_rows(base: dict, frame: pl.DataFrame, criterion: str, measure: str, bounds, bounds_kind: str,
                 replicates: int, seed: int, replicates_out: list | None = None) -> list[dict]:
    rows = rows_of(frame, criterion)
    diffs = differences(rows, criterion, measure)
    defined = np.logical_and.reduce([np.isfinite(d) for d in diffs]) if diffs else np.zeros(0, bool)
    groups = rows["sample_id"].to_numpy()[defined]
    n, n_undef, n_samples = int(defined.sum()), int((~defined).sum()), len(np.unique(groups))
    if criterion == "c4":
        values = {"T": grid_share(diffs[0][defined], *bounds[0])}
        stats = paired_shares(base, rows, criterion, measure, values, groups, replicates, seed, replicates_out)
        return [_row(base, criterion, measure, "T", stats["T"], n, n_undef, n_samples, bounds, bounds_kind,
                     "delta grid on [bound1_low, bound1_high]")]
    values = case_values(diffs[0][defined], diffs[1][defined], bounds[0], bounds[1])
    stats = paired_shares(base, rows, criterion, measure, values, groups, replicates, seed, replicates_out)
    return [_row(base, criterion, measure, case, stats[case], n, n_undef, n_samples, bounds, bounds_kind,
                 "eps grid on [bound1_low, bound1_high] x [bound2_low, bound2_high]") for case in CASES]


def normalised_angles(rows: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    ab = rows["angle_ab"].to_numpy().astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return rows["angle_pa"].to_numpy() / ab, rows["angle_pb"].to_numpy() / ab


def in_middle(rows: pl.DataFrame, tolerance: float) -> np.ndarray:
    """1.0 / 0.0 where the angles are defined, NaN elsewhere."""
    ab, pa, pb = (rows[c].to_numpy().astype(np.float64) for c in ("angle_ab", "angle_pa", "angle_pb"))
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(ab + pa + pb), (np.abs(ab - (pa + pb)) < tolerance).astype(float), np.nan)


def geometry_rows(base: dict, frame: pl.DataFrame, settings: dict, replicates: int, seed: int,
                  replicates_out: list | None = None) -> list[dict]:
    out = []
    tol = settings["middle_tolerance"]
    # C2
    rows = rows_of(frame, "c2")
    mid = in_middle(rows, tol)
    ok = np.isfinite(mid)
    groups = rows["sample_id"].to_numpy()[ok]
    stat = paired_shares(base, rows, "c2", "projection", {"middle": mid[ok]}, groups, replicates, seed,
                         replicates_out)["middle"]
    out.append(_row(base, "c2", "projection", "middle", stat, int(ok.sum()), int((~ok).sum()), len(np.unique(groups)),
                    setting=f"|angle(A,B) - (angle(p,A) + angle(p,B))| < {tol} degrees"))
    # C5
    rows = rows_of(frame, "c5")
    c5 = settings["c5"]
    if c5["unit"] == "normalised":
        near = normalised_angles(rows)[0]
        setting = f"angle(p,A) / angle(A,B) <= {c5['theta']}"
    else:
        near = rows["angle_pa"].to_numpy().astype(np.float64)
        setting = f"angle(p,A) <= {c5['theta']} degrees"
    ok = np.isfinite(near)
    value = (near[ok] <= c5["theta"]).astype(float)
    groups = rows["sample_id"].to_numpy()[ok]
    stat = paired_shares(base, rows, "c5", "projection", {"near_a": value}, groups, replicates, seed,
                         replicates_out)["near_a"]
    out.append(_row(base, "c5", "projection", "near_a", stat, int(ok.sum()), int((~ok).sum()), len(np.unique(groups)),
                    setting=setting))
    # C6
    rows = rows_of(frame, "c6")
    c6 = settings["c6"]
    na, nb = normalised_angles(rows)
    mid = in_middle(rows, tol)
    ratio = rows["norm_ratio"].to_numpy().astype(np.float64)
    ok = np.isfinite(na) & np.isfinite(nb) & np.isfinite(ratio)
    with np.errstate(invalid="ignore"):
        case = np.where(ratio >= c6["ratio"], 0, np.where(ratio <= 1.0 / c6["ratio"], 2, 1))
        met = np.where(case == 0, na <= c6["theta"], np.where(case == 2, nb <= c6["theta"], mid == 1.0)).astype(float)
    groups = rows["sample_id"].to_numpy()[ok]
    values = {name: met[ok] for name in C6_CASES}
    weights = {name: (case[ok] == i).astype(float) for i, name in enumerate(C6_CASES[:3])}
    weights["all"] = np.ones(int(ok.sum()))
    stats = paired_shares(base, rows, "c6", "projection", values, groups, replicates, seed, replicates_out,
                          weights=weights)
    setting = (f"a_larger: ||A||/||B|| >= {c6['ratio']}, expect angle(p,A)/angle(A,B) <= {c6['theta']}; b_larger: "
               f"<= 1/{c6['ratio']}, expect angle(p,B)/angle(A,B) <= {c6['theta']}; comparable: expect the middle "
               f"(< {tol} degrees)")
    for name in C6_CASES:
        n = int(weights[name].sum())
        out.append(_row(base, "c6", "projection", name, stats[name], n, int((~ok).sum()), len(np.unique(groups)),
                        setting=setting))
    return out


# ---- the study -------------------------------------------------------------------------------------

BOUNDS = ("own", "pooled")


def bounds_for(settings: dict, frames: dict, criterion: str, measure: str, model: str) -> tuple[list, str]:
    """The epsilon (delta) grid's bounds of one model: the config's fixed bounds; else `bounds: own`
    (the default), the min and max of the model's own differences, so that its share depends on no
    other model of the study and not on the scale of its similarities (an affine rescaling of them
    leaves it unchanged; issue 43, point 6); or `bounds: pooled`, the reference code's, the min and
    max over every model of the study (a model's share then moves with the other models)."""
    fixed = (settings.get("fixed_bounds") or {}).get(criterion, {}).get(measure)
    if fixed is not None:
        return ([tuple(fixed)] if criterion == "c4" else [tuple(b) for b in fixed]), "fixed"
    if settings.get("bounds", "own") == "pooled":
        return pooled_bounds(frames, criterion, measure), "pooled"
    return pooled_bounds({model: frames[model]}, criterion, measure), "own"


def study(entries: list[dict], settings: dict, seed: int, log, replicates_out: dict | None = None) -> pl.DataFrame:
    """The long shares table. entries: [{"sampleset", "model", "measures": path, "samples": path,
    "filter": path}] (the last two: the set's samples table and filter report). `replicates_out`:
    a dict that receives, per sample set, the replicate rows of every share of every model."""
    settings = {**DEFAULT_SETTINGS, **settings}
    replicates = settings["bootstrap_b"]
    rows = []
    for sampleset in dict.fromkeys(e["sampleset"] for e in entries):
        mine = [e for e in entries if e["sampleset"] == sampleset]
        frames = {e["model"]: pl.read_parquet(e["measures"]) for e in mine}
        meta = sample_meta(mine[0])
        if settings.get("bounds", "own") not in BOUNDS:
            raise ValueError(f"settheory.bounds: {settings['bounds']!r} is not one of {', '.join(BOUNDS)}")
        parts = [] if replicates_out is None else replicates_out.setdefault(sampleset, [])
        for e in mine:
            base = {"sampleset": sampleset, "model": e["model"], **meta}
            frame = frames[e["model"]]
            for criterion in ("c1", "c3", "c4"):
                for measure in settings["measures"]:
                    b, kind = bounds_for(settings, frames, criterion, measure, e["model"])
                    rows += epsilon_rows(base, frame, criterion, measure, b, kind, replicates, seed, parts)
            rows += geometry_rows(base, frame, settings, replicates, seed, parts)
            log.info("%s / %s: C1-C6 over %d operator samples", sampleset, e["model"], frame.height)
    table = pl.DataFrame([{**r, "bootstrap_b": replicates} for r in rows], schema=SHARE_SCHEMA, orient="row") \
        if rows else pl.DataFrame(schema=SHARE_SCHEMA)
    return table


def sample_meta(entry: dict) -> dict:
    """generator, prompt and filter of a sample set, as the tables name them."""
    samples = pl.read_parquet(entry["samples"], columns=["generator", "prompt"])
    generators = sorted(set(samples["generator"].to_list()))
    prompts = sorted(set(samples["prompt"].to_list()))
    prompt = prompts[0] if len(prompts) == 1 else "; ".join(prompts)
    try:  # a prompt is stored as JSON: name it by a short digest, the full text is in the samples
        json.loads(prompt)
        import hashlib
        prompt = "prompt@" + hashlib.sha256(prompt.encode()).hexdigest()[:12]
    except (json.JSONDecodeError, TypeError):
        pass
    filt = read_json(entry["filter"])["filter"]
    described = (f"cos(B,D) < {filt['threshold']} under {filt['rule']} of {', '.join(filt['encoders'])}"
                 if filt["active"] else "off (no filter encoders)")
    return {"generator": "; ".join(generators) or "none", "prompt": prompt if prompts else "none",
            "filter": described}


# ---- tables ---------------------------------------------------------------------------------------

def fmt(share, low, high) -> str:
    """'97.42% [96.9, 97.8]', as the paper prints a share."""
    return interval_text(share, low, high, digits=2, bound_digits=1, scale=100, suffix="%")


def _ordered(table: pl.DataFrame, models: list[str]) -> pl.DataFrame:
    rank = {m: i for i, m in enumerate(models)}
    return table.with_columns(pl.col("model").replace_strict(rank, default=len(rank), return_dtype=pl.Int64)
                              .alias("_m"))


def paper_tables(table: pl.DataFrame, models: list[str], measures: list[str]) -> dict[str, pl.DataFrame]:
    t = _ordered(table, models)
    mrank = {m: i for i, m in enumerate(measures)}
    out = {}
    for criterion in ("c1", "c3"):
        rows = []
        part = t.filter(pl.col("criterion") == criterion).with_columns(
            pl.col("measure").replace_strict(mrank, default=99, return_dtype=pl.Int64).alias("_k"))
        for (sampleset, measure, _, model), g in part.sort("sampleset", "_k", "_m").group_by(
                ["sampleset", "measure", "_m", "model"], maintain_order=True):
            r = {c: g.row(0, named=True)[c] for c in g.columns}
            cells = {row["case"]: fmt(row["share"], row["ci_low"], row["ci_high"]) for row in g.iter_rows(named=True)}
            rows.append({"sampleset": sampleset, "model": model, "measure": measure, **{c: cells.get(c, "") for c in CASES},
                         "n": r["n"], "n_undefined": r["n_undefined"], "eps1_low": r["bound1_low"],
                         "eps1_high": r["bound1_high"], "eps2_low": r["bound2_low"], "eps2_high": r["bound2_high"],
                         "bounds": r["bounds"], "filter": r["filter"], "generator": r["generator"],
                         "prompt": r["prompt"]})
        out[criterion] = pl.DataFrame(rows, orient="row") if rows else pl.DataFrame()
    rows = []
    part = t.filter(pl.col("criterion") == "c4")
    for (sampleset, _, model), g in part.sort("sampleset", "_m").group_by(["sampleset", "_m", "model"],
                                                                         maintain_order=True):
        by = {row["measure"]: row for row in g.iter_rows(named=True)}
        first = g.row(0, named=True)
        rows.append({"sampleset": sampleset, "model": model,
                     **{m: fmt(by[m]["share"], by[m]["ci_low"], by[m]["ci_high"]) if m in by else "" for m in measures},
                     "n": first["n"],
                     "delta_bounds": "; ".join(f"{m} [{by[m]['bound1_low']:.4g}, {by[m]['bound1_high']:.4g}] "
                                               f"({by[m]['bounds']})" for m in measures if m in by),
                     "filter": first["filter"], "generator": first["generator"], "prompt": first["prompt"]})
    out["c4"] = pl.DataFrame(rows, orient="row") if rows else pl.DataFrame()
    for criterion, case in (("c2", "middle"), ("c5", "near_a")):
        rows = []
        for r in t.filter(pl.col("criterion") == criterion).sort("sampleset", "_m").iter_rows(named=True):
            rows.append({"sampleset": r["sampleset"], "model": r["model"],
                         case: fmt(r["share"], r["ci_low"], r["ci_high"]), "n": r["n"], "n_undefined": r["n_undefined"],
                         "rule": r["setting"], "filter": r["filter"], "generator": r["generator"],
                         "prompt": r["prompt"]})
        out[criterion] = pl.DataFrame(rows, orient="row") if rows else pl.DataFrame()
    rows = []
    part = t.filter(pl.col("criterion") == "c6")
    for (sampleset, _, model), g in part.sort("sampleset", "_m").group_by(["sampleset", "_m", "model"],
                                                                         maintain_order=True):
        by = {row["case"]: row for row in g.iter_rows(named=True)}
        first = g.row(0, named=True)
        rows.append({"sampleset": sampleset, "model": model,
                     **{c: fmt(by[c]["share"], by[c]["ci_low"], by[c]["ci_high"]) for c in C6_CASES},
                     **{f"n_{c}": by[c]["n"] for c in C6_CASES}, "n_undefined": first["n_undefined"],
                     "rule": first["setting"], "generator": first["generator"], "prompt": first["prompt"]})
    out["c6"] = pl.DataFrame(rows, orient="row") if rows else pl.DataFrame()
    return out


# ---- histograms and plots ---------------------------------------------------------------------------

def histograms(frame: pl.DataFrame, bins: int) -> dict[str, tuple[np.ndarray, np.ndarray, int]]:
    """{name: (counts, edges, outside)}: normalised angles of C2, C5, C6 on [0, 2] and ||A||/||B||
    of C6 on [0, 3]; `outside` counts defined values beyond the range."""
    out = {}
    for criterion in ("c2", "c5", "c6"):
        na, nb = normalised_angles(rows_of(frame, criterion))
        for label, v in (("angle(p,A)/angle(A,B)", na), ("angle(p,B)/angle(A,B)", nb)):
            v = v[np.isfinite(v)]
            counts, edges = np.histogram(v, bins=bins, range=(0.0, 2.0))
            out[f"{criterion}|{label}"] = (counts, edges, int(len(v) - counts.sum()))
    ratio = rows_of(frame, "c6")["norm_ratio"].to_numpy().astype(np.float64)
    ratio = ratio[np.isfinite(ratio)]
    counts, edges = np.histogram(ratio, bins=bins, range=(0.0, 3.0))
    out["c6|norm(A)/norm(B)"] = (counts, edges, int(len(ratio) - counts.sum()))
    return out


def histogram_table(hists: dict, sampleset: str, model: str) -> list[dict]:
    rows = []
    for key, (counts, edges, outside) in hists.items():
        criterion, quantity = key.split("|")
        for c, lo, hi in zip(counts, edges[:-1], edges[1:]):
            rows.append({"sampleset": sampleset, "model": model, "criterion": criterion, "quantity": quantity,
                         "bin_low": float(lo), "bin_high": float(hi), "count": int(c), "outside_range": outside})
    return rows


def plot_model(hists: dict, shares: pl.DataFrame, title: str, out_png: str, out_svg: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "settheory-plot"
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    label = {"c2": "C2 overlap: O projected", "c5": "C5 difference: D projected", "c6": "C6 union: U projected"}
    share_of = {(r["criterion"], r["case"]): r for r in shares.iter_rows(named=True)}

    def stat(criterion, case):
        r = share_of.get((criterion, case))
        return fmt(r["share"], r["ci_low"], r["ci_high"]) if r else "undefined"

    subtitle = {"c2": f"in the middle: {stat('c2', 'middle')}", "c5": f"near A: {stat('c5', 'near_a')}",
                "c6": f"as expected: {stat('c6', 'all')}"}
    for ax, criterion in zip(axes.flat, ("c2", "c5", "c6")):
        for i, quantity in enumerate(("angle(p,A)/angle(A,B)", "angle(p,B)/angle(A,B)")):
            counts, edges, outside = hists[f"{criterion}|{quantity}"]
            ax.stairs(counts, edges, fill=True, alpha=0.45, color=f"C{i}",
                      label=quantity + (f" ({outside} beyond 2)" if outside else ""))
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("angle, normalised so that angle(A,B) = 1")
        ax.set_ylabel("operator samples")
        ax.set_title(f"{label[criterion]} — {subtitle[criterion]}", fontsize=9)
        ax.legend(fontsize=7)
    counts, edges, outside = hists["c6|norm(A)/norm(B)"]
    ax = axes.flat[3]
    ax.stairs(counts, edges, fill=True, alpha=0.6, color="C2")
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("||A|| / ||B||" + (f" ({outside} beyond 3)" if outside else ""))
    ax.set_ylabel("union samples")
    ax.set_title("C6: norm ratio of the inputs", fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    for path in (out_png, out_svg):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix[1:], dpi=110,
                        metadata={"Date": None} if str(path).endswith(".svg") else None)
    plt.close(fig)


def write_outputs(entries: list[dict], settings: dict, seed: int, tables_dir: str, plots_dir: str, log,
                  replicates: dict[str, str] | None = None) -> pl.DataFrame:
    """The tables and plots; `replicates`: sample set -> its replicates file (every share's paired
    bootstrap replicates, all models)."""
    settings = {**DEFAULT_SETTINGS, **settings}
    parts: dict = {}
    table = study(entries, settings, seed, log, parts)
    for sampleset, path in (replicates or {}).items():
        if sampleset not in parts:
            raise ValueError(f"replicates file {path} for sample set {sampleset!r}, which no entry scores")
        write_replicates(path, parts[sampleset])
    models = list(dict.fromkeys(e["model"] for e in entries))
    tables_dir = Path(tables_dir)
    with atomic_path(tables_dir / "settheory_shares.csv") as tmp:
        table.write_csv(tmp)
    for criterion, frame in paper_tables(table, models, settings["measures"]).items():
        with atomic_path(tables_dir / f"settheory_{criterion}.csv") as tmp:
            frame.write_csv(tmp)
    hist_rows = []
    for e in entries:
        frame = pl.read_parquet(e["measures"])
        hists = histograms(frame, settings["histogram_bins"])
        hist_rows += histogram_table(hists, e["sampleset"], e["model"])
        shares = table.filter((pl.col("sampleset") == e["sampleset"]) & (pl.col("model") == e["model"]))
        n = shares.filter(pl.col("criterion") == "c2")["n"].to_list()
        title = (f"{e['sampleset']} / {e['model']} — projections onto the plane of A and B"
                 f" — {n[0] if n else 0} overlap samples — {int(100 * LEVEL)}% bootstrap CI (B={settings['bootstrap_b']})")
        base = Path(plots_dir) / e["sampleset"] / e["model"]
        plot_model(hists, shares, title, f"{base}.png", f"{base}.svg")
    hist = pl.DataFrame(hist_rows, orient="row") if hist_rows else pl.DataFrame()
    with atomic_path(tables_dir / "settheory_histograms.csv") as tmp:
        hist.write_csv(tmp)
    log.info("%d share rows -> %s; paper tables settheory_c1..c6.csv; plots in %s", table.height, tables_dir, plots_dir)
    return table


# ---- the jobs of rules/settheory.smk (workflow_scripts/jobs.py) ----
def run_settheory_aggregate(job) -> None:
    """The study's tables, plots and replicates. params: pairs ([{sampleset, model}], in the order of
    input.measures_<i>, samples_<i>, filter_<i>), settings (the settheory section's criterion
    settings), seed. Tables go beside output.shares, plots under <plots>/<set>/<model>.png."""
    entries = pair_entries(job.params.pairs, job.input)
    plots = list(job.output.plots)
    # <plots>/<set>/<model>.png: the folder above the sample sets' (no pair: no plot is written)
    plots_dir = os.path.dirname(os.path.dirname(plots[0])) if plots else ""
    write_outputs(entries, job.params.settings, job.params.seed, os.path.dirname(job.output.shares), plots_dir,
                  setup_logging(name="settheory"), {Path(p).parent.name: p for p in job.output.replicates})
