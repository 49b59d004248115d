"""Probe: Concept Separation Curves (methods.md §1; seed paper 000): the job of rule csc_score, one
(corpus, model)'s similarities, curves, overlaps, directions and their bootstrap intervals
(similarities.parquet, curves.parquet, summary.json, replicates.parquet). Its plot is the job of
plots.py, the tables of every pair tables.py; what the three share is in conditions.py.

Score: cos(original, variant) for every variant, from the vector stores (each original's vector is
read once per shard); zero-norm vectors give NaN, which is dropped from the densities and counted.

Density (workflow_scripts/density.py): the Gaussian KDE with covariance factor 0.2 (kernel sd = 0.2 x sample sd) evaluated at
the points of the grid -1..1 (step `grid_step`, 0.001 = 2001 points in the paper). Up to
`exact_max_n` similarities per curve it is scipy's `gaussian_kde`; above that a binned estimator:
linear binning on a fine grid aligned with the output grid, with at least NODES_PER_BANDWIDTH nodes
per kernel bandwidth whatever the bandwidth, then FFT convolution with the same kernel and the
values read at the grid points. Each density is divided by its sum over the grid (equation 1);
overlap = sum over the grid of min(fuzz, neg) (equation 2).

A curve is undefined (overlap NaN, reason in `note`) with fewer than 2 similarities, zero spread,
or a bandwidth below grid_step x RESOLVABLE, where the grid no longer represents the curve.

Uncertainty: original sentences are resampled with replacement (all their variants move
together), B times, seeded by the config seed and (corpus, model, condition). At corpus scale the
originals are hashed into at most `bootstrap_groups` groups and the groups are resampled: every
statistic here is a function of per-group histograms and moments, so one pass builds them and each
replicate is a weighted sum of groups (with as many groups as sentences this is the plain
bootstrap). Each replicate recomputes its bandwidths, densities and overlap. The KDE overlap is a
biased estimator (its replicates do not centre on it), so its 95% interval is BCa (the probe declares
it: csc/probe.py `intervals`; bootstrap.bca_interval): bias-corrected by the share of replicates below
the overlap, accelerated by a grouped jackknife over the same units -- JACKKNIFE_BLOCKS (20) blocks of
sentences (groups), each left out in turn, 20 more overlaps per condition rather than one per
sentence. The bias correction compares the replicates with the overlap of the same (binned)
estimator on the full sample. Where BCa is undefined (every replicate on one side) the percentile
interval stands in; `interval_method` says which a row has. Gap and AUC keep percentile intervals.

Direction (issue 32): the overlap is unsigned, so a model whose negated variants stay *closer* to the
original than the fuzzed ones can separate the curves as well as one that pushes the negations
away. Beside it: the signed gap, mean(fuzzed) - mean(negated similarity) (exact, from the group
moments), and AUC = P(fuzzed similarity > negated similarity), ties counted 1/2 (the Mann-Whitney U
over n_fuzzed x n_negated: scipy's `mannwhitneyu` where the similarities are held, else from the
fine-grid histograms, see auc_of_masses), each with its interval over the same resamples as the
overlap; `direction_ok` is false where the gap is <= 0 (the first screen marks it W).
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from workflow_scripts.bootstrap import (bootstrap_interval, interval_method, jackknife_weights, paired_rng,
                                        percentile_interval, replicate_rows, resample_counts, write_replicates)
from workflow_scripts.common import atomic_path, read_json, setup_logging, write_json
from workflow_scripts.csc.conditions import CURVE_NAMES, KINDS, NEGATIVE_CONDITIONS, fuzz_curve
from workflow_scripts.csc.probe import PROBE
from workflow_scripts.density import (COVARIANCE_FACTOR, PAPER_GRID_STEP, Moments, Window, bandwidth, exact_density, make_grid,
                                      normalise, overlap, undefined_reason)
from workflow_scripts.encoders import family_of
from workflow_scripts.shards import read_parquet
from workflow_scripts.vector_store import VectorStore, spec_digest

GROUP_CELLS = 1 << 24  # per-group histogram cells per kind (128 MB): caps the groups for fine grids
SIM_SCHEMA = pa.schema([("original_id", pa.uint64()), ("variant_id", pa.uint64()),
                        ("kind", pa.string()), ("similarity", pa.float64())])
READ_BATCH = 2_000_000


# ---- scoring ---------------------------------------------------------------------------------

DOT_BLOCK = 65_536  # rows per block of cosine_to_originals' dot products (16 MB of float32 at 64 dims)


def cosine_to_originals(store: VectorStore, original_keys: np.ndarray, variant_keys: np.ndarray) -> np.ndarray:
    """cos(original, variant) per row; each distinct original is looked up once. NaN for a zero norm."""
    uniq, inverse = np.unique(original_keys, return_inverse=True)
    vo, no = store.lookup(uniq)
    vv, nv = store.lookup(variant_keys)
    if store.sparse:
        dots = np.asarray(vo[inverse].multiply(vv).sum(axis=1), dtype=np.float64).ravel()
    else:
        # block by block through one buffer: each row's dot product is the same computation as on
        # the whole array (identical floats), without a shard-sized copy of the originals' rows
        dots = np.empty(len(vv), dtype=np.float64)
        buffer = np.empty((min(len(vv), DOT_BLOCK), vo.shape[1]), dtype=vo.dtype)
        for lo in range(0, len(vv), DOT_BLOCK):
            block = buffer[:min(DOT_BLOCK, len(vv) - lo)]
            np.take(vo, inverse[lo:lo + len(block)], axis=0, out=block)
            np.einsum("ij,ij->i", block, vv[lo:lo + len(block)], dtype=np.float64, out=dots[lo:lo + len(block)])
    denom = no[inverse].astype(np.float64) * nv.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(denom > 0, dots / denom, np.nan)
    return np.clip(cos, -1.0, 1.0)  # rounding can leave |cos| a hair above 1; the grid is [-1, 1]


def model_settings(spec: dict | None) -> str:
    """What a table row's model was run with, where variants of one family differ in meaning."""
    if not spec:
        return ""
    label = family_of(spec).settings_label
    if label is not None:
        return label(spec)
    return f"{spec['family']} {spec.get('precision', 'fp32')}"


def distinct(ids: np.ndarray) -> np.ndarray:
    """Sorted distinct values (sort-based: numpy's hash-based unique is 5x slower on 64-bit ids)."""
    ids = np.sort(ids)
    return ids[np.concatenate([[True], ids[1:] != ids[:-1]])] if len(ids) else ids


class Groups:
    """Bootstrap units: each original sentence is its own group when there are at most `limit`;
    otherwise originals are hashed into `limit` groups (their ids are uniform 64-bit hashes)."""

    def __init__(self, original_ids: np.ndarray, limit: int):
        self.ids = distinct(original_ids)
        self.per_sentence = len(self.ids) <= limit
        self.count = max(1, len(self.ids) if self.per_sentence else limit)
        self.base = self.count  # groups of the first pass; `fold` may merge them later

    def of(self, original_ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(original_ids, dtype=np.uint64)
        g = np.searchsorted(self.ids, ids) if self.per_sentence else ids % np.uint64(self.base)
        g = g.astype(np.int64)
        return g % self.count if self.count != self.base else g


def _curve_plan(moments: dict, curves: dict, weights: dict, grid_step: float, factor: float) -> dict:
    """Per curve: its bandwidth on the full sample and in each replicate of its condition (the
    overlap's resamples and, behind a BCa interval, the jackknife rows), and the smallest and
    largest bandwidth its fine grid must serve."""
    plan = {}
    for name, (kind, cond) in curves.items():
        m = moments[name]
        n, _, m2 = m.total()
        entry = {"n": n, "m2": m2, "reason": undefined_reason(n, m2, grid_step, "csc.grid_step"),
                 "bw": bandwidth(n, m2, factor)}
        bws = [entry["bw"]] if entry["reason"] is None else []
        rn, _, rm2 = m.weighted(weights[cond])
        rbw = np.array([bandwidth(a, b, factor) for a, b in zip(rn, rm2)])
        ok = np.array([undefined_reason(a, b, grid_step) is None for a, b in zip(rn, rm2)], dtype=bool)
        entry["replicates"] = {"n": rn, "bw": rbw, "ok": ok}
        bws += list(rbw[ok])
        entry["bw_min"], entry["bw_max"] = (min(bws), max(bws)) if bws else (None, None)
        plan[name] = entry
    return plan


def auc_of_masses(pos_fuzz: np.ndarray, mass_fuzz: np.ndarray, pos_neg: np.ndarray,
                  mass_neg: np.ndarray) -> np.ndarray:
    """P(fuzzed > negated), ties counted 1/2, of point masses: `pos_*` ascending positions (values
    or fine-grid nodes), `mass_*` (replicates, positions) weights. With unit masses at the raw
    similarities it is scipy's mannwhitneyu U / (n_fuzzed n_negated) (tested); with resample counts
    it is that of the resample; with linear-binning weights at the fine-grid nodes it differs from
    the exact AUC only where the two samples lie within a node spacing of each other."""
    mass_fuzz, mass_neg = np.atleast_2d(mass_fuzz), np.atleast_2d(mass_neg)
    cum = np.concatenate([np.zeros((len(mass_neg), 1)), np.cumsum(mass_neg, axis=1)], axis=1)
    left, right = np.searchsorted(pos_neg, pos_fuzz, "left"), np.searchsorted(pos_neg, pos_fuzz, "right")
    below, tied = cum[:, left], cum[:, right] - cum[:, left]
    total = mass_fuzz.sum(axis=1) * mass_neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (mass_fuzz * (below + 0.5 * tied)).sum(axis=1) / total, np.nan)


AUC_CHUNK_CELLS = 1 << 23  # replicates x similarities per chunk of resampled AUCs (64 MB of float64)


def _exact_auc(fuzz: np.ndarray, fuzz_groups: np.ndarray, neg: np.ndarray, neg_groups: np.ndarray,
               weights: np.ndarray | None) -> tuple[float, np.ndarray]:
    """The AUC of the held similarities (scipy's Mann-Whitney U) and of each resample (rows of
    `weights`: draw counts per group, so every similarity weighs its sentence's count)."""
    from scipy.stats import mannwhitneyu
    point = float(mannwhitneyu(fuzz, neg, method="asymptotic").statistic / (len(fuzz) * len(neg)))
    if weights is None or not len(weights):
        return point, np.empty(0)
    order_f, order_n = np.argsort(fuzz, kind="stable"), np.argsort(neg, kind="stable")
    fuzz, fuzz_groups, neg, neg_groups = fuzz[order_f], fuzz_groups[order_f], neg[order_n], neg_groups[order_n]
    chunk = max(1, AUC_CHUNK_CELLS // (len(fuzz) + len(neg)))
    reps = [auc_of_masses(fuzz, weights[lo:lo + chunk][:, fuzz_groups].astype(np.float64), neg,
                          weights[lo:lo + chunk][:, neg_groups].astype(np.float64))
            for lo in range(0, len(weights), chunk)]
    return point, np.concatenate(reps)


def _binned_auc(fuzz_window: "Window", fuzz_hists: np.ndarray, neg_window: "Window",
                neg_hists: np.ndarray) -> np.ndarray:
    """AUC of fine-grid histograms (rows: the full sample or the replicates); the two windows' nodes
    placed on one integer lattice (both are multiples of grid_step / lcm of the refinements), so
    that nodes at the same place tie exactly."""
    lattice = math.lcm(fuzz_window.refine, neg_window.refine)

    def nodes(w: "Window") -> np.ndarray:
        return w.lo * lattice + np.arange(w.nodes, dtype=np.int64) * (lattice // w.refine)
    return auc_of_masses(nodes(fuzz_window), fuzz_hists, nodes(neg_window), neg_hists)


def _batches(sims_path, columns):
    return pq.ParquetFile(sims_path).iter_batches(READ_BATCH, columns=columns)


def _kind_mask(batch, kind: str) -> np.ndarray:
    return pc.equal(batch.column("kind"), kind).to_numpy(zero_copy_only=False)


def _member(ids: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """Whether each id is in the sorted array (searchsorted: no hash set of 64-bit ids)."""
    if not len(sorted_ids):
        return np.zeros(len(ids), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return sorted_ids[at] == ids


def _units(sims_path, limit: int) -> tuple[Groups, dict, dict]:
    """Pass 0: the bootstrap units (every original of the file, whatever its similarities: the same
    for every model, so resamples are paired), per kind the sorted originals with a finite
    similarity, and per kind the NaN similarities dropped."""
    all_ids, finite_ids = [], {k: [] for k in KINDS}
    dropped = {k: 0 for k in KINDS}
    for batch in _batches(sims_path, ["original_id", "kind", "similarity"]):
        ids = batch.column("original_id").to_numpy()
        sims = batch.column("similarity").to_numpy()
        all_ids.append(distinct(ids))
        for k in KINDS:
            sel = _kind_mask(batch, k)
            finite = np.isfinite(sims[sel])
            dropped[k] += int(len(finite) - finite.sum())
            finite_ids[k].append(distinct(ids[sel][finite]))
    groups = Groups(distinct(np.concatenate([np.empty(0, np.uint64)] + all_ids)), limit)
    return groups, {k: distinct(np.concatenate([np.empty(0, np.uint64)] + v)) for k, v in finite_ids.items()}, dropped


def _moments(sims_path, groups: Groups, curves: dict, subsets: dict, exact_max_n: int) -> dict:
    """Pass 1: per curve its moments per group, extremes, and its similarities (with their groups)
    while few enough for the exact KDE."""
    out = {name: {"moments": Moments(groups.count), "raw": [], "raw_groups": [], "low": np.inf, "high": -np.inf}
           for name in curves}
    for batch in _batches(sims_path, ["original_id", "kind", "similarity"]):
        sims = batch.column("similarity").to_numpy()
        ids = batch.column("original_id").to_numpy()
        group_col = groups.of(ids)
        for name, (kind, cond) in curves.items():
            sel = _kind_mask(batch, kind) & np.isfinite(sims)
            sel[sel] = _member(ids[sel], subsets[cond])
            v = sims[sel]
            if not len(v):
                continue
            c = out[name]
            c["moments"].add(v, group_col[sel])
            c["low"], c["high"] = min(c["low"], float(v.min())), max(c["high"], float(v.max()))
            if c["raw"] is not None:
                c["raw"].append(v)
                c["raw_groups"].append(group_col[sel])
                if c["moments"].n.sum() > exact_max_n:
                    c["raw"], c["raw_groups"] = None, []  # too many for the exact KDE; stop holding them
    return out


def _histograms(sims_path, groups: Groups, curves: dict, subsets: dict, windows: dict, curve_weights: dict,
                keep: list[str], block: int, with_replicates: bool) -> tuple[dict, dict]:
    """Pass 2: per curve in `keep` its fine-grid histogram of the whole sample, and per replicate
    (and jackknife row) of its condition the weighted sum of the groups' histograms; a block of
    groups at a time, one more pass over the file per block (merging groups would depend on this
    model's bandwidths and break the pairing)."""
    totals = {k: np.zeros(windows[k].nodes) for k in keep}
    replicate_hists = {k: np.zeros((len(curve_weights[curves[k][1]]), windows[k].nodes)) for k in keep
                       if with_replicates}
    buffers = {k: np.empty((min(block, groups.count), windows[k].nodes)) for k in keep}  # reused per block
    for start in range(0, groups.count if keep else 0, block):
        stop = min(groups.count, start + block)
        hists = {k: buffers[k][:stop - start] for k in keep}
        for h in hists.values():
            h.fill(0.0)
        for batch in _batches(sims_path, ["original_id", "kind", "similarity"]):
            sims = batch.column("similarity").to_numpy()
            ids = batch.column("original_id").to_numpy()
            group_col = groups.of(ids)
            in_block = (group_col >= start) & (group_col < stop)
            for k in keep:
                kind, cond = curves[k]
                sel = _kind_mask(batch, kind) & np.isfinite(sims) & in_block
                sel[sel] = _member(ids[sel], subsets[cond])
                if sel.any():
                    hists[k] += windows[k].histogram(sims[sel], group_col[sel] - start, stop - start)
        for k in keep:
            totals[k] += hists[k].sum(axis=0)
            if with_replicates:
                replicate_hists[k] += curve_weights[curves[k][1]][:, start:stop] @ hists[k]
    return totals, replicate_hists


def _per_sentence(ids: np.ndarray, fuzzed: np.ndarray, sims: np.ndarray, ranks: np.ndarray) -> dict:
    """Per sentence with both kinds, sorted by id: AUC_s from the fuzzed variants' average ranks
    (Mann-Whitney U / (nf nn)) and gap_s. The sums run in numpy over rows sorted by (sentence, kind,
    similarity): polars' grouped float sums depend on how its threads split the rows (bits of the
    gaps differed between 8 and 16 threads), and a result must not depend on the machine's load."""
    order = np.lexsort((sims, fuzzed, ids))
    ids, fuzzed, sims, ranks = ids[order], fuzzed[order], sims[order], ranks[order]
    if not len(ids):
        return {"original_id": ids, "auc": np.empty(0), "gap": np.empty(0)}
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    size = np.diff(np.r_[starts, len(ids)])
    nf = np.add.reduceat(fuzzed.astype(np.int64), starts)
    nn = size - nf
    rf = np.add.reduceat(np.where(fuzzed, ranks, 0.0), starts)
    sf = np.add.reduceat(np.where(fuzzed, sims, 0.0), starts)
    sn = np.add.reduceat(np.where(fuzzed, 0.0, sims), starts)
    both = (nf > 0) & (nn > 0)
    nf, nn, rf, sf, sn = (a[both].astype(np.float64) for a in (nf, nn, rf, sf, sn))
    return {"original_id": ids[starts][both], "auc": (rf - nf * (nf + 1) / 2) / (nf * nn), "gap": sf / nf - sn / nn}


def within_sentence(sims_path, cond: str, groups: Groups, weights: np.ndarray | None) -> dict:
    """The direction within sentences (issue 43): per sentence with both a fuzzed and a `cond`
    variant (finite similarities), AUC_s = P(a fuzzed variant's similarity > a negated one's), ties
    1/2 (the Mann-Whitney U of the sentence's own variants, from average ranks), and gap_s = mean
    fuzzed - mean negated similarity; the statistics are their means over those sentences, each
    sentence weighing the same, and each replicate the same means over the resampled sentences (the
    overlap's draws: `weights`, (replicates, groups) counts). A sentence's length then weighs
    nothing: pooled over variants, the fuzzed curve holds 2n candidates of an n-word sentence and
    the negated n, so short sentences (low similarities) weigh more in the fuzzed one, and a
    surface-form model whose gap is 0 in every sentence shows a pooled gap."""
    rows = (pl.scan_parquet(sims_path).select("original_id", "kind", "similarity")
            .filter(pl.col("kind").is_in(["fuzz", cond]) & pl.col("similarity").is_finite())
            .select("original_id", fuzzed=pl.col("kind") == "fuzz", similarity="similarity",
                    rank=pl.col("similarity").rank("average").over("original_id"))
            .collect())
    per = _per_sentence(rows["original_id"].to_numpy(), rows["fuzzed"].to_numpy(),
                        rows["similarity"].to_numpy(), rows["rank"].to_numpy())
    n = len(per["original_id"])
    b = 0 if weights is None else len(weights)
    out = {"n": n, "auc": float("nan"), "gap": float("nan"), "auc_replicates": np.full(b, np.nan),
           "gap_replicates": np.full(b, np.nan)}
    if not n:
        return out
    auc, gap = per["auc"], per["gap"]
    out.update(auc=float(auc.mean()), gap=float(gap.mean()))
    if b:
        g = groups.of(per["original_id"])
        count = np.bincount(g, minlength=groups.count).astype(np.float64)
        drawn = weights.astype(np.float64) @ count
        with np.errstate(invalid="ignore", divide="ignore"):
            for stat, values in (("auc", auc), ("gap", gap)):
                sums = np.bincount(g, weights=values, minlength=groups.count)
                out[f"{stat}_replicates"] = np.where(drawn > 0, (weights @ sums) / np.where(drawn > 0, drawn, 1), np.nan)
    return out


def _replicate_overlaps(plan: dict, windows: dict, hists: dict, fuzz: str, cond: str, rows: int,
                        points: int) -> np.ndarray:
    """The overlap of every replicate (and jackknife row) of a condition from its curves' histograms."""
    out = np.full(rows, np.nan)
    fz, ng = plan[fuzz]["replicates"], plan[cond]["replicates"]
    for b in range(rows):
        if fz["ok"][b] and ng["ok"][b]:
            f = normalise(windows[fuzz].density(hists[fuzz][b], fz["n"][b], fz["bw"][b], points))
            g = normalise(windows[cond].density(hists[cond][b], ng["n"][b], ng["bw"][b], points))
            out[b] = overlap(f, g)
    return out


def _pooled_auc(cond: str, fuzz: str, data: dict, windows: dict, totals: dict, replicate_hists: dict,
                weights: np.ndarray, bootstrap_b: int, defined: bool) -> tuple[float, np.ndarray, str]:
    """AUC = P(fuzzed > negated) pooled over the two curves' variants, and its replicates: exact from
    the held similarities, else from the fine-grid histograms."""
    reps = np.full(bootstrap_b, np.nan)
    if defined and data[fuzz]["raw"] is not None and data[cond]["raw"] is not None:
        auc, exact = _exact_auc(np.concatenate(data[fuzz]["raw"]), np.concatenate(data[fuzz]["raw_groups"]),
                                np.concatenate(data[cond]["raw"]), np.concatenate(data[cond]["raw_groups"]),
                                weights if bootstrap_b else None)
        reps[:len(exact)] = exact
        return auc, reps, "exact"
    if defined and fuzz in totals and cond in totals:
        auc = float(_binned_auc(windows[fuzz], totals[fuzz], windows[cond], totals[cond])[0])
        if bootstrap_b:
            reps = _binned_auc(windows[fuzz], replicate_hists[fuzz][:bootstrap_b], windows[cond],
                               replicate_hists[cond][:bootstrap_b])
        return auc, reps, "binned"
    return float("nan"), reps, "undefined"


@dataclass
class Passes:
    """What the passes over a similarities file found, for analyse's steps: the bootstrap units, the
    conditions and their curves (curve -> (kind, condition)), each curve's moments, held
    similarities and extremes (`data`, _moments), resampling units (`units`), bandwidths (`plan`,
    _curve_plan), fine grid (`windows`) and fine-grid histograms (`totals`: the whole sample;
    `replicate_hists`: per row of `curve_weights`), and per condition the overlap's resample counts
    (`weights`), whether its interval is BCa, and the rows its curves are drawn for (`curve_weights`:
    the B resamples, then the jackknife rows behind a BCa interval)."""
    groups: Groups
    dropped: dict
    conditions: list
    curves: dict
    data: dict
    units: dict
    weights: dict
    bca: dict
    jack: np.ndarray
    curve_weights: dict
    plan: dict
    windows: dict
    totals: dict
    replicate_hists: dict
    grid_step: float
    points: int
    bootstrap_b: int
    covariance_factor: float

    def moments(self, curve: str) -> Moments:
        return self.data[curve]["moments"]

    def full_density(self, curve: str) -> np.ndarray:
        """The curve's normalised binned density of the whole sample."""
        e = self.plan[curve]
        return normalise(self.windows[curve].density(self.totals[curve], e["n"], e["bw"], self.points))


def _resamples(conditions: list[str], groups: Groups, corpus: str, seed: int, bootstrap_b: int):
    """Per condition: the overlap's resample counts (B x groups), whether its interval is BCa, and
    the rows its curves are drawn for; and the jackknife rows."""
    # paired across models (issue 26): the counts come from a stream that names no model, over
    # groups in a model-independent order (sorted original ids, or id % groups), so replicate b
    # draws the same sentences for every model scored on this corpus
    weights = {c: resample_counts(paired_rng(seed, "csc", corpus, f"{c}/overlap"), bootstrap_b, groups.count)
               for c in conditions}
    # the overlap's curves are also drawn for the jackknife rows behind a BCa interval (appended
    # after the B replicates): the same groups for every model, so they are paired too
    bca = {c: bootstrap_b > 0 and interval_method(PROBE.intervals, f"{c}/overlap") == "bca" for c in conditions}
    jack = jackknife_weights(groups.count)
    curve_weights = {c: np.vstack([weights[c], jack]) if bca[c] else weights[c] for c in conditions}
    return weights, bca, jack, curve_weights


def _passes(sims_path, corpus: str, model: str, log, exact_max_n: int, grid_step: float, points: int,
            bootstrap_b: int, bootstrap_groups: int, seed: int, covariance_factor: float) -> Passes:
    """The passes over the file (_units, _moments, _histograms) and what they are planned with."""
    groups, finite_ids, dropped = _units(sims_path, bootstrap_groups)
    conditions = [c for c in NEGATIVE_CONDITIONS if len(finite_ids[c]) or dropped[c]]  # e.g. no grammatical NL
    # both curves of a condition over the same sentences: those with a fuzzed and a negated variant
    subsets = {c: np.intersect1d(finite_ids["fuzz"], finite_ids[c], assume_unique=True) for c in conditions}
    curves = {name: spec for c in conditions for name, spec in ((fuzz_curve(c), ("fuzz", c)), (c, (c, c)))}
    data = _moments(sims_path, groups, curves, subsets, exact_max_n)
    moments = {k: d["moments"] for k, d in data.items()}
    # the independent units behind each curve (issue 32): variants are nested in their sentence and
    # resampled with it, so n counts the resampling units that hold a similarity of the curve
    units = {k: int(np.count_nonzero(m.n)) for k, m in moments.items()}
    weights, bca, jack, curve_weights = _resamples(conditions, groups, corpus, seed, bootstrap_b)
    plan = _curve_plan(moments, curves, curve_weights, grid_step, covariance_factor)
    windows = {k: Window.covering(grid_step, data[k]["low"], data[k]["high"], e["bw_min"], e["bw_max"])
               for k, e in plan.items() if e["bw_min"] is not None}
    widest = max((w.nodes for w in windows.values()), default=1)
    block = max(1, GROUP_CELLS // widest)
    if block < groups.count:
        log.info("%s/%s: fine grid of %d nodes: %d groups in blocks of %d", corpus, model, widest, groups.count, block)
    binned = [k for k in windows if bootstrap_b > 0 or data[k]["raw"] is None]
    totals, replicate_hists = _histograms(sims_path, groups, curves, subsets, windows, curve_weights, binned, block,
                                          bootstrap_b > 0)
    return Passes(groups, dropped, conditions, curves, data, units, weights, bca, jack, curve_weights, plan, windows,
                  totals, replicate_hists, grid_step, points, bootstrap_b, covariance_factor)


def _densities(p: Passes, grid: np.ndarray) -> tuple[dict, dict]:
    """Each curve's normalised density on the grid, and its method: exact (scipy's KDE of the held
    similarities), binned, or undefined (NaN)."""
    densities, methods = {}, {}
    for k in p.curves:
        if p.plan[k]["reason"] is not None:
            densities[k], methods[k] = np.full(p.points, np.nan), "undefined"
        elif p.data[k]["raw"] is not None:
            densities[k] = normalise(exact_density(np.concatenate(p.data[k]["raw"]), grid, p.covariance_factor))
            methods[k] = "exact"
        else:
            densities[k], methods[k] = p.full_density(k), "binned"
    return densities, methods


def _overlap(p: Passes, cond: str, densities: dict) -> tuple[float, list[str], np.ndarray, tuple]:
    """The condition's overlap, the notes that leave it undefined, its B replicates, and its 95%
    interval (low, high, valid replicates, method: BCa, or percentile where BCa is undefined)."""
    fuzz = fuzz_curve(cond)
    notes = [f"{'fuzzed' if k == fuzz else 'negated'}: {p.plan[k]['reason']}" for k in (fuzz, cond)
             if p.plan[k]["reason"]]
    value = float("nan") if notes else overlap(densities[fuzz], densities[cond])
    curve_overlaps = np.full(len(p.curve_weights[cond]), np.nan)
    binned_value = float("nan")  # the replicates' estimator on the full sample: BCa's reference
    if not notes and p.bootstrap_b:
        curve_overlaps = _replicate_overlaps(p.plan, p.windows, p.replicate_hists, fuzz, cond, len(curve_overlaps),
                                             p.points)
        if p.bca[cond]:
            binned_value = overlap(p.full_density(fuzz), p.full_density(cond))
    replicate_overlaps, jack_overlaps = curve_overlaps[:p.bootstrap_b], curve_overlaps[p.bootstrap_b:]
    if not p.bootstrap_b:
        return value, notes, replicate_overlaps, (np.nan, np.nan, 0, None)
    return value, notes, replicate_overlaps, bootstrap_interval(
        "bca" if p.bca[cond] else "percentile", replicate_overlaps, binned_value, jack_overlaps)


def _pooled_gap(p: Passes, cond: str) -> tuple[bool, float, float, float, np.ndarray]:
    """Pooled over the variants, from the group moments: whether both curves hold a similarity,
    their means, the gap and its replicates over the overlap's resamples (paired)."""
    fuzz = fuzz_curve(cond)
    _, mean_fuzz, _ = p.moments(fuzz).total()
    _, mean_neg, _ = p.moments(cond).total()
    defined = p.plan[fuzz]["n"] > 0 and p.plan[cond]["n"] > 0
    gap = mean_fuzz - mean_neg if defined else float("nan")
    replicate_gaps = np.full(p.bootstrap_b, np.nan)
    if defined and p.bootstrap_b:
        rf, mf, _ = p.moments(fuzz).weighted(p.weights[cond])
        rn, mn, _ = p.moments(cond).weighted(p.weights[cond])
        replicate_gaps = np.where((rf > 0) & (rn > 0), mf - mn, np.nan)
    return defined, mean_fuzz, mean_neg, gap, replicate_gaps


def _statistics(p: Passes, cond: str, densities: dict, sims_path, replicates_out: dict | None) -> dict:
    """A condition's statistics, each with its 95% interval: the overlap, the pooled gap and AUC,
    the within-sentence AUC and gap; the notes of what is undefined; with `replicates_out`, each
    statistic's point, B replicates and units are added to it."""
    fuzz, b = fuzz_curve(cond), p.bootstrap_b
    value, notes, replicate_overlaps, (ci_low, ci_high, valid, ci_method) = _overlap(p, cond, densities)
    defined, mean_fuzz, mean_neg, gap, replicate_gaps = _pooled_gap(p, cond)
    # pooled over the variants, the AUC from the held similarities or the fine-grid histograms
    auc, replicate_aucs, auc_method = _pooled_auc(cond, fuzz, p.data, p.windows, p.totals, p.replicate_hists,
                                                  p.weights[cond], b, defined)
    within = within_sentence(sims_path, cond, p.groups, p.weights[cond] if b else None)

    def interval(reps):
        return percentile_interval(reps)[:2] if b else (np.nan, np.nan)
    if replicates_out is not None:
        pair_units = min(p.units[fuzz], p.units[cond])
        replicates_out[f"{cond}/overlap"] = (value, replicate_overlaps, pair_units)
        replicates_out[f"{cond}/gap"] = (gap, replicate_gaps, pair_units)
        replicates_out[f"{cond}/auc"] = (auc, replicate_aucs, pair_units)
        replicates_out[f"{cond}/within_auc"] = (within["auc"], within["auc_replicates"], within["n"])
        replicates_out[f"{cond}/within_gap"] = (within["gap"], within["gap_replicates"], within["n"])
    if b and not notes and valid < b:
        notes.append(f"{b - valid} of {b} bootstrap replicates undefined")
    if defined and auc_method == "undefined":
        notes.append("auc undefined: above exact_kde_max_n it is read from the curves' histograms, and a curve is "
                     "undefined")
    return {"overlap": value, "overlap_ci": (ci_low, ci_high), "interval_method": ci_method, "defined": defined,
            "mean_fuzzed": mean_fuzz, "mean_negated": mean_neg, "gap": gap, "gap_ci": interval(replicate_gaps),
            "auc": auc, "auc_ci": interval(replicate_aucs), "auc_method": auc_method, "within": within,
            "within_auc_ci": interval(within["auc_replicates"]), "within_gap_ci": interval(within["gap_replicates"]),
            "notes": notes}


def _row(p: Passes, cond: str, s: dict, methods: dict, corpus: str, model: str, model_spec: dict | None) -> dict:
    """A condition's row of the overlap table (csc/tables.py: OVERLAP_SCHEMA)."""
    fuzz, within = fuzz_curve(cond), s["within"]
    (ci_low, ci_high), (gap_low, gap_high), (auc_low, auc_high) = s["overlap_ci"], s["gap_ci"], s["auc_ci"]
    (w_auc_low, w_auc_high), (w_gap_low, w_gap_high) = s["within_auc_ci"], s["within_gap_ci"]
    return {"corpus": corpus, "model": model, "condition": cond, "overlap": s["overlap"],
            "n_fuzzed": p.plan[fuzz]["n"], "n_negated": p.plan[cond]["n"],
            "n_dropped": p.dropped[cond],
            # the smaller of the two curves' unit counts, as n_fuzzed/n_negated for variants
            "n_units": min(p.units[fuzz], p.units[cond]),
            "unit": "sentences" if p.groups.per_sentence else "sentence groups",
            "kde": "+".join(sorted({methods[fuzz], methods[cond]})),
            "overlap_ci_low": ci_low, "overlap_ci_high": ci_high,
            # the overlap interval's method: bca, or percentile where BCa is undefined
            "interval_method": s["interval_method"] if np.isfinite(ci_low) else None,
            # what the overlap rides on: the kernel sd = factor x each curve's sample sd
            "kde_covariance_factor": p.covariance_factor,
            "bandwidth_fuzzed": p.plan[fuzz]["bw"] if p.plan[fuzz]["reason"] is None else float("nan"),
            "bandwidth_negated": p.plan[cond]["bw"] if p.plan[cond]["reason"] is None else float("nan"),
            "mean_fuzzed": s["mean_fuzzed"] if s["defined"] else float("nan"),
            "mean_negated": s["mean_negated"] if s["defined"] else float("nan"),
            "gap": s["gap"], "gap_ci_low": gap_low, "gap_ci_high": gap_high,
            "auc": s["auc"], "auc_ci_low": auc_low, "auc_ci_high": auc_high,
            "n_within": within["n"], "within_gap": within["gap"], "within_gap_ci_low": w_gap_low,
            "within_gap_ci_high": w_gap_high, "within_auc": within["auc"],
            "within_auc_ci_low": w_auc_low, "within_auc_ci_high": w_auc_high,
            "bootstrap_b": p.bootstrap_b,
            "n_dropped_fuzzed": p.dropped["fuzz"], "grid_step": p.grid_step,
            "model_settings": model_settings(model_spec), "note": "; ".join(s["notes"])}


def _details(p: Passes, methods: dict, auc_methods: dict, seed: int) -> dict:
    """What the summary says beside the rows: methods, bandwidths, counts, grids, the bootstrap."""
    bca = any(p.bca.values())
    return {"kde_methods": methods, "bandwidths": {k: p.plan[k]["bw"] for k in p.curves},
            "counts": {k: p.plan[k]["n"] for k in p.curves}, "units": p.units,
            "dropped_nan": p.dropped, "auc_methods": auc_methods, "kde_covariance_factor": p.covariance_factor,
            "grid": {"step": p.grid_step, "points": p.points},
            "fine_grids": {k: {"lo": w.lo, "hi": w.hi, "refine": w.refine} for k, w in p.windows.items()},
            "bootstrap": {"replicates": p.bootstrap_b, "seed": seed, "groups": p.groups.count,
                          "unit": "sentence" if p.groups.per_sentence and p.groups.count == p.groups.base
                          else "hashed group of sentences", "level": 0.95,
                          "method": {"overlap": "bca" if bca else "percentile", "gap": "percentile",
                                     "auc": "percentile", "within_auc": "percentile",
                                     "within_gap": "percentile"},
                          "jackknife_blocks": len(p.jack) if bca else 0}}


def analyse(sims_path: str | Path, corpus: str, model: str, log, exact_max_n: int = 20000,
            grid_step: float = PAPER_GRID_STEP, bootstrap_b: int = 200, bootstrap_groups: int = 1000,
            seed: int = 0, model_spec: dict | None = None, replicates_out: dict | None = None,
            covariance_factor: float = COVARIANCE_FACTOR) -> tuple[list[dict], dict, dict]:
    """Curves, overlaps, the within-sentence direction and bootstrap intervals from a similarities
    file (original_id, kind, similarity). Returns (table rows, normalised curves, details for the
    summary); with `replicates_out`, also fills it with statistic -> (point, the B replicates)."""
    grid = make_grid(grid_step)
    p = _passes(sims_path, corpus, model, log, exact_max_n, grid_step, len(grid), bootstrap_b, bootstrap_groups, seed,
                covariance_factor)
    densities, methods = _densities(p, grid)
    rows, auc_methods = [], {}
    for cond in p.conditions:
        s = _statistics(p, cond, densities, sims_path, replicates_out)
        auc_methods[cond] = s["auc_method"]
        rows.append(_row(p, cond, s, methods, corpus, model, model_spec))
    return rows, {"grid": grid, **densities}, _details(p, methods, auc_methods, seed)


def score(variants_dir: str, store_dirs: list[str], model: str, corpus: str, exact_max_n: int,
          out_dir: str, log, model_spec: dict | None = None, grid_step: float = PAPER_GRID_STEP,
          bootstrap_b: int = 200, bootstrap_groups: int = 1000, seed: int = 0,
          covariance_factor: float = COVARIANCE_FACTOR) -> dict:
    store = VectorStore(store_dirs, model=model, spec_digest=spec_digest(model_spec) if model_spec else None)
    manifest = read_json(Path(variants_dir) / "manifest.json")
    shard_paths = [Path(variants_dir) / shard["file"] for shard in manifest["shards"]]
    make_grid(grid_step)  # a bad step fails before any work
    started = time.perf_counter()
    out = Path(out_dir)
    with atomic_path(out / "similarities.parquet") as tmp_sims:
        with pq.ParquetWriter(tmp_sims, SIM_SCHEMA, compression="zstd") as writer:
            for i, path in enumerate(shard_paths):
                frame = read_parquet(path, columns=["original_id", "variant_id", "kind", "original_key", "text_key"])
                sims = cosine_to_originals(store, frame["original_key"].to_numpy(), frame["text_key"].to_numpy())
                store.release_pages()
                writer.write_table(pa.table({"original_id": frame["original_id"].to_arrow(),
                                             "variant_id": frame["variant_id"].to_arrow(),
                                             "kind": frame["kind"].to_arrow().cast(pa.string()),
                                             "similarity": sims}, schema=SIM_SCHEMA))
                log.info("%s/%s: shard %d/%d scored (%d pairs)", corpus, model, i + 1, len(shard_paths), len(sims))
        scored = time.perf_counter()
        replicates: dict = {}
        rows, curves, details = analyse(tmp_sims, corpus, model, log, exact_max_n, grid_step, bootstrap_b,
                                        bootstrap_groups, seed, model_spec, replicates, covariance_factor)
    # the paired replicates behind the intervals, for the differences table (differences.py)
    write_replicates(out / "replicates.parquet",
                     [replicate_rows("csc", corpus, statistic, model, value, reps, units)
                      for statistic, (value, reps, units) in replicates.items()])
    missing = np.full(len(curves["grid"]), np.nan)
    with atomic_path(out / "curves.parquet") as tmp:
        pl.DataFrame({"similarity": curves["grid"],
                      **{f"density_{k}": curves.get(k, missing) for k in CURVE_NAMES}}).write_parquet(tmp)
    summary = {"corpus": corpus, "model": model, "rows": rows, **details,
               "store": {k: store.manifest.get(k) for k in ("family", "origin", "dim", "dtype", "format", "device",
                                                            "precision")},
               "model_settings": model_settings(model_spec)}
    write_json(out / "summary.json", summary)
    log.info("%s/%s: scored in %.1f s; densities and %d bootstrap replicates in %.1f s", corpus, model,
             scored - started, bootstrap_b, time.perf_counter() - scored)
    for r in rows:
        log.info("%s/%s %s: overlap %.4f [%.4f, %.4f]; within sentences (%d) AUC %.4f [%.4f, %.4f], gap %.4f; "
                 "pooled gap %.4f, AUC %.4f (fuzzed %d, negated %d, dropped %d+%d, %s KDE)%s", corpus, model,
                 r["condition"], r["overlap"], r["overlap_ci_low"], r["overlap_ci_high"], r["n_within"],
                 r["within_auc"], r["within_auc_ci_low"], r["within_auc_ci_high"], r["within_gap"], r["gap"],
                 r["auc"], r["n_fuzzed"], r["n_negated"], r["n_dropped_fuzzed"], r["n_dropped"], r["kde"],
                 f" note: {r['note']}" if r["note"] else "")
    return summary


# ---- the jobs of rules/csc.smk (workflow_scripts/jobs.py) ----
def run_csc_score(job) -> None:
    p = job.params
    score(job.input.variants, list(job.input.stores), job.wildcards.model, job.wildcards.corpus, p.exact_max_n,
          os.path.dirname(job.output.summary), setup_logging(name="csc"), p.spec, p.grid_step, p.bootstrap_b,
          p.bootstrap_groups, p.seed, p.kde_covariance_factor)
