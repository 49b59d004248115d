"""Probe: Concept Separation Curves (methods.md §1; seed paper 000).

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
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from workflow_scripts.bootstrap import (bootstrap_interval, interval_method, jackknife_weights, paired_rng,
                                        percentile_interval, replicate_rows, resample_counts, write_replicates)
from workflow_scripts.common import atomic_path, read_json, setup_logging, write_json
from workflow_scripts.csc.probe import PROBE
from workflow_scripts.density import (PAPER_GRID_STEP, Moments, Window, bandwidth, exact_density, make_grid,
                                      normalise, overlap, undefined_reason)
from workflow_scripts.encoders import DEFAULT_TOKEN_PATTERN, surface_form_tokenizer
from workflow_scripts.shards import read_parquet
from workflow_scripts.vector_store import VectorStore, spec_digest

GROUP_CELLS = 1 << 24  # per-group histogram cells per kind (128 MB): caps the groups for fine grids
KINDS = ("fuzz", "negation", "grammatical_negation")
NEGATIVE_CONDITIONS = KINDS[1:]
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
    if spec["family"] == "tfidf":
        pattern = spec.get("token_pattern", DEFAULT_TOKEN_PATTERN)
        return (f"tfidf preset {spec.get('preset', 'project')}: token_pattern {pattern}, "
                f"fit_on {spec.get('fit_on', 'originals_and_variants')}")
    if spec["family"] == "hashing":
        return "hashing stand-in, not a language model"
    if spec["family"] == "surface_form":
        tokenizer = surface_form_tokenizer(spec)
        lo, hi = spec.get("ngram_range") or ([3, 3] if tokenizer == "char_ngrams" else [1, 1])
        unit = {"words": "words", "treebank": "treebank words", "char_ngrams": "char_ngrams"}[tokenizer]
        return f"surface form: {unit} {lo}-{hi}-grams, Ochiai coefficient"
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


def _curve_plan(moments: dict, weights: dict, conditions: list[str], grid_step: float) -> dict:
    """Bandwidths of the full sample and of each replicate, per kind, and the smallest/largest
    bandwidth a kind's fine grid must serve."""
    plan = {}
    for kind, m in moments.items():
        n, mean, m2 = m.total()
        entry = {"n": n, "m2": m2, "reason": undefined_reason(n, m2, grid_step, "csc.grid_step"),
                 "bw": bandwidth(n, m2), "replicates": {}}
        bws = [entry["bw"]] if entry["reason"] is None else []
        for cond in conditions:
            if kind != "fuzz" and kind != cond:
                continue
            rn, _, rm2 = m.weighted(weights[cond])
            rbw = np.array([bandwidth(a, b) for a, b in zip(rn, rm2)])
            ok = np.array([undefined_reason(a, b, grid_step) is None for a, b in zip(rn, rm2)], dtype=bool)
            entry["replicates"][cond] = {"n": rn, "bw": rbw, "ok": ok}
            bws += list(rbw[ok])
        entry["bw_min"], entry["bw_max"] = (min(bws), max(bws)) if bws else (None, None)
        plan[kind] = entry
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


def analyse(sims_path: str | Path, corpus: str, model: str, log, exact_max_n: int = 20000,
            grid_step: float = PAPER_GRID_STEP, bootstrap_b: int = 200, bootstrap_groups: int = 1000,
            seed: int = 0, model_spec: dict | None = None,
            replicates_out: dict | None = None) -> tuple[list[dict], dict, dict]:
    """Curves, overlaps and bootstrap intervals from a similarities file (original_id, kind,
    similarity). Returns (table rows, normalised curves per kind, details for the summary); with
    `replicates_out`, also fills it with condition -> (overlap, the B replicate overlaps)."""
    grid = make_grid(grid_step)
    points = len(grid)
    # pass 0: the bootstrap units (distinct originals, batch by batch: 8 bytes per original)
    groups = Groups(distinct(np.concatenate([np.empty(0, np.uint64)] + [
        distinct(b.column("original_id").to_numpy()) for b in _batches(sims_path, ["original_id"])])),
        bootstrap_groups)
    # pass 1: counts, extremes and moments per group; raw values while few enough for the exact KDE
    moments = {k: Moments(groups.count) for k in KINDS}
    raw: dict[str, list | None] = {k: [] for k in KINDS}
    raw_groups: dict[str, list] = {k: [] for k in KINDS}  # each held similarity's group (resampled AUCs)
    dropped = {k: 0 for k in KINDS}
    low, high = {k: np.inf for k in KINDS}, {k: -np.inf for k in KINDS}
    for batch in _batches(sims_path, ["original_id", "kind", "similarity"]):
        sims = batch.column("similarity").to_numpy()
        group_col = groups.of(batch.column("original_id").to_numpy())
        for k in KINDS:
            sel = _kind_mask(batch, k)
            v = sims[sel]
            finite = np.isfinite(v)
            dropped[k] += int(len(v) - finite.sum())
            v = v[finite]
            if not len(v):
                continue
            moments[k].add(v, group_col[sel][finite])
            low[k], high[k] = min(low[k], float(v.min())), max(high[k], float(v.max()))
            if raw[k] is not None:
                raw[k].append(v)
                raw_groups[k].append(group_col[sel][finite])
                if moments[k].n.sum() > exact_max_n:
                    raw[k], raw_groups[k] = None, []  # too many for the exact KDE; stop holding them

    conditions = [c for c in NEGATIVE_CONDITIONS if moments[c].n.sum() or dropped[c]]  # e.g. no grammatical NL
    # the independent units behind each kind (issue 32, point 6): variants are nested in their
    # sentence and resampled with it, so n counts the resampling units that hold a similarity of the
    # kind (sentences, or hashed groups of sentences at corpus scale), not the variants
    units = {k: int(np.count_nonzero(moments[k].n)) for k in KINDS}
    unit = "sentences" if groups.per_sentence else "sentence groups"
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
    plan = _curve_plan(moments, curve_weights, conditions, grid_step)
    windows = {k: Window.covering(grid_step, low[k], high[k], e["bw_min"], e["bw_max"])
               for k, e in plan.items() if e["bw_min"] is not None}
    widest = max((w.nodes for w in windows.values()), default=1)
    # a fine grid too large for one histogram per group is built a block of groups at a time (one
    # more pass over the file per block) instead of merging groups: merging would depend on this
    # model's bandwidths and break the pairing
    block = max(1, GROUP_CELLS // widest)
    if block < groups.count:
        log.info("%s/%s: fine grid of %d nodes: %d groups in blocks of %d", corpus, model, widest, groups.count, block)

    # pass 2: per-group histograms on each kind's fine grid, for binned curves and the replicates
    binned_kinds = [k for k in windows if bootstrap_b > 0 or raw[k] is None]
    totals = {k: np.zeros(windows[k].nodes) for k in binned_kinds}
    replicate_hists = {(k, c): np.zeros((len(curve_weights[c]), windows[k].nodes)) for c in conditions
                       for k in ("fuzz", c) if k in binned_kinds and bootstrap_b}
    buffers = {k: np.empty((min(block, groups.count), windows[k].nodes)) for k in binned_kinds}  # reused per block
    for start in range(0, groups.count if binned_kinds else 0, block):
        stop = min(groups.count, start + block)
        hists = {k: buffers[k][:stop - start] for k in binned_kinds}
        for h in hists.values():
            h.fill(0.0)
        for batch in _batches(sims_path, ["original_id", "kind", "similarity"]):
            sims = batch.column("similarity").to_numpy()
            group_col = groups.of(batch.column("original_id").to_numpy())
            in_block = (group_col >= start) & (group_col < stop)
            for k in binned_kinds:
                sel = _kind_mask(batch, k) & np.isfinite(sims) & in_block
                if sel.any():
                    hists[k] += windows[k].histogram(sims[sel], group_col[sel] - start, stop - start)
        for k in binned_kinds:
            totals[k] += hists[k].sum(axis=0)
        for (k, c), rep in replicate_hists.items():
            rep += curve_weights[c][:, start:stop] @ hists[k]

    curves, methods = {}, {}
    for k in KINDS:
        e = plan[k]
        if e["reason"] is not None:
            curves[k], methods[k] = np.full(points, np.nan), "undefined"
        elif raw[k] is not None:
            curves[k], methods[k] = normalise(exact_density(np.concatenate(raw[k]), grid)), "exact"
        else:
            curves[k], methods[k] = normalise(windows[k].density(totals[k], e["n"], e["bw"], points)), "binned"

    rows = []
    auc_methods = {}
    for cond in conditions:
        notes = [f"{'fuzzed' if k == 'fuzz' else 'negated'}: {plan[k]['reason']}"
                 for k in ("fuzz", cond) if plan[k]["reason"]]
        value = float("nan") if notes else overlap(curves["fuzz"], curves[cond])
        curve_overlaps = np.full(len(curve_weights[cond]), np.nan)
        binned_value = float("nan")  # the replicates' estimator on the full sample: BCa's reference
        if not notes and bootstrap_b:
            fz, ng = plan["fuzz"]["replicates"][cond], plan[cond]["replicates"][cond]
            hf, hn = replicate_hists[("fuzz", cond)], replicate_hists[(cond, cond)]
            for b in range(len(curve_overlaps)):
                if fz["ok"][b] and ng["ok"][b]:
                    f = normalise(windows["fuzz"].density(hf[b], fz["n"][b], fz["bw"][b], points))
                    g = normalise(windows[cond].density(hn[b], ng["n"][b], ng["bw"][b], points))
                    curve_overlaps[b] = overlap(f, g)
            if bca[cond]:
                binned_value = overlap(
                    normalise(windows["fuzz"].density(totals["fuzz"], plan["fuzz"]["n"], plan["fuzz"]["bw"], points)),
                    normalise(windows[cond].density(totals[cond], plan[cond]["n"], plan[cond]["bw"], points)))
        replicate_overlaps, jack_overlaps = curve_overlaps[:bootstrap_b], curve_overlaps[bootstrap_b:]
        if bootstrap_b:
            ci_low, ci_high, valid, ci_method = bootstrap_interval(
                "bca" if bca[cond] else "percentile", replicate_overlaps, binned_value, jack_overlaps)
        else:
            ci_low, ci_high, valid, ci_method = np.nan, np.nan, 0, None
        # the sign of the separation: the gap from the group moments, the AUC from the held
        # similarities or the fine-grid histograms; both over the overlap's resamples (paired)
        _, mean_fuzz, _ = moments["fuzz"].total()
        _, mean_neg, _ = moments[cond].total()
        defined = plan["fuzz"]["n"] > 0 and plan[cond]["n"] > 0
        gap = mean_fuzz - mean_neg if defined else float("nan")
        replicate_gaps = np.full(bootstrap_b, np.nan)
        if defined and bootstrap_b:
            rf, mf, _ = moments["fuzz"].weighted(weights[cond])
            rn, mn, _ = moments[cond].weighted(weights[cond])
            replicate_gaps = np.where((rf > 0) & (rn > 0), mf - mn, np.nan)
        auc, replicate_aucs, auc_methods[cond] = float("nan"), np.full(bootstrap_b, np.nan), "undefined"
        if defined and raw["fuzz"] is not None and raw[cond] is not None:
            auc, reps = _exact_auc(np.concatenate(raw["fuzz"]), np.concatenate(raw_groups["fuzz"]),
                                   np.concatenate(raw[cond]), np.concatenate(raw_groups[cond]),
                                   weights[cond] if bootstrap_b else None)
            replicate_aucs[:len(reps)], auc_methods[cond] = reps, "exact"
        elif defined and "fuzz" in binned_kinds and cond in binned_kinds:
            auc = float(_binned_auc(windows["fuzz"], totals["fuzz"], windows[cond], totals[cond])[0])
            if bootstrap_b:
                replicate_aucs = _binned_auc(windows["fuzz"], replicate_hists[("fuzz", cond)][:bootstrap_b],
                                             windows[cond], replicate_hists[(cond, cond)][:bootstrap_b])
            auc_methods[cond] = "binned"
        auc_note = ("auc undefined: above exact_kde_max_n it is read from the curves' histograms, and a curve is "
                    "undefined" if defined and auc_methods[cond] == "undefined" else "")
        gap_low, gap_high, _ = percentile_interval(replicate_gaps) if bootstrap_b else (np.nan, np.nan, 0)
        auc_low, auc_high, _ = percentile_interval(replicate_aucs) if bootstrap_b else (np.nan, np.nan, 0)
        if replicates_out is not None:
            replicates_out[f"{cond}/overlap"] = (value, replicate_overlaps)
            replicates_out[f"{cond}/gap"] = (gap, replicate_gaps)
            replicates_out[f"{cond}/auc"] = (auc, replicate_aucs)
        if bootstrap_b and not notes and valid < bootstrap_b:
            notes.append(f"{bootstrap_b - valid} of {bootstrap_b} bootstrap replicates undefined")
        notes += [auc_note] if auc_note else []
        rows.append({"corpus": corpus, "model": model, "condition": cond, "overlap": value,
                     "n_fuzzed": plan["fuzz"]["n"], "n_negated": plan[cond]["n"],
                     "n_dropped": dropped[cond],
                     # the smaller of the two curves' unit counts, as n_fuzzed/n_negated for variants
                     "n_units": min(units["fuzz"], units[cond]), "unit": unit,
                     "kde": "+".join(sorted({methods["fuzz"], methods[cond]})),
                     "overlap_ci_low": ci_low, "overlap_ci_high": ci_high,
                     # the overlap interval's method: bca, or percentile where BCa is undefined
                     "interval_method": ci_method if np.isfinite(ci_low) else None,
                     "mean_fuzzed": mean_fuzz if defined else float("nan"),
                     "mean_negated": mean_neg if defined else float("nan"),
                     "gap": gap, "gap_ci_low": gap_low, "gap_ci_high": gap_high,
                     "auc": auc, "auc_ci_low": auc_low, "auc_ci_high": auc_high,
                     # None where undefined: a table cell that is neither true nor false
                     "direction_ok": bool(gap > 0) if np.isfinite(gap) else None, "bootstrap_b": bootstrap_b,
                     "n_dropped_fuzzed": dropped["fuzz"], "grid_step": grid_step,
                     "model_settings": model_settings(model_spec), "note": "; ".join(notes)})
    details = {"kde_methods": methods, "bandwidths": {k: plan[k]["bw"] for k in KINDS},
               "counts": {k: plan[k]["n"] for k in KINDS}, "units": {k: units[k] for k in KINDS},
               "dropped_nan": dropped,
               "auc_methods": auc_methods,
               "grid": {"step": grid_step, "points": points},
               "fine_grids": {k: {"lo": w.lo, "hi": w.hi, "refine": w.refine} for k, w in windows.items()},
               "bootstrap": {"replicates": bootstrap_b, "seed": seed, "groups": groups.count,
                             "unit": "sentence" if groups.per_sentence and groups.count == groups.base
                             else "hashed group of sentences", "level": 0.95,
                             "method": {"overlap": "bca" if any(bca.values()) else "percentile", "gap": "percentile",
                                        "auc": "percentile"},
                             "jackknife_blocks": len(jack) if any(bca.values()) else 0}}
    return rows, {"grid": grid, **curves}, details


def score(variants_dir: str, store_dirs: list[str], model: str, corpus: str, exact_max_n: int,
          out_dir: str, log, model_spec: dict | None = None, grid_step: float = PAPER_GRID_STEP,
          bootstrap_b: int = 200, bootstrap_groups: int = 1000, seed: int = 0) -> dict:
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
                                        bootstrap_groups, seed, model_spec, replicates)
    # the paired replicates behind the overlap intervals, for the differences table (differences.py)
    write_replicates(out / "replicates.parquet",
                     [replicate_rows("csc", corpus, statistic, model, value, reps)
                      for statistic, (value, reps) in replicates.items()])
    with atomic_path(out / "curves.parquet") as tmp:
        pl.DataFrame({"similarity": curves["grid"], **{f"density_{k}": curves[k] for k in KINDS}}).write_parquet(tmp)
    summary = {"corpus": corpus, "model": model, "rows": rows, **details,
               "store": {k: store.manifest.get(k) for k in ("family", "origin", "dim", "dtype", "format", "device",
                                                            "precision")},
               "model_settings": model_settings(model_spec)}
    write_json(out / "summary.json", summary)
    log.info("%s/%s: scored in %.1f s; densities and %d bootstrap replicates in %.1f s", corpus, model,
             scored - started, bootstrap_b, time.perf_counter() - scored)
    for r in rows:
        log.info("%s/%s %s: overlap %.4f [%.4f, %.4f], gap %.4f, AUC %.4f%s (fuzzed %d, negated %d, dropped %d+%d, "
                 "%s KDE)%s", corpus, model, r["condition"], r["overlap"], r["overlap_ci_low"], r["overlap_ci_high"],
                 r["gap"], r["auc"], "" if r["direction_ok"] is not False else " WRONG DIRECTION", r["n_fuzzed"],
                 r["n_negated"], r["n_dropped_fuzzed"], r["n_dropped"], r["kde"],
                 f" note: {r['note']}" if r["note"] else "")
    return summary


# ---- plots and tables ------------------------------------------------------------------------

def _fmt_overlap(row: dict) -> str:
    if row["overlap"] is None or not np.isfinite(row["overlap"]):
        return "undefined"
    text = f"{row['overlap']:.4f}"
    if row.get("overlap_ci_low") is not None and np.isfinite(row["overlap_ci_low"]):
        text += f" [{row['overlap_ci_low']:.4f}, {row['overlap_ci_high']:.4f}]"
    return text


def _data_range(curves: pl.DataFrame, kinds: list[str]) -> tuple[float, float]:
    """Where 99% of every curve's mass lies, with a margin: the zoomed panel's x range."""
    x = curves["similarity"].to_numpy()
    lows, highs = [], []
    for k in kinds:
        cdf = np.cumsum(np.nan_to_num(curves[f"density_{k}"].to_numpy()))
        if cdf[-1] > 0:
            lows.append(x[np.searchsorted(cdf, 0.005 * cdf[-1])])
            highs.append(x[min(len(x) - 1, np.searchsorted(cdf, 0.995 * cdf[-1]))])
    if not lows:
        return -1.0, 1.0
    lo, hi = min(lows), max(highs)
    margin = max(0.1 * (hi - lo), 0.005)
    return max(-1.0, lo - margin), min(1.0, hi + margin)


def plot(curves_path: str, summary_path: str, out_png: str, out_svg: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    # SVG element ids are random per process unless salted: fixed, so reruns give identical files
    matplotlib.rcParams["svg.hashsalt"] = "csc-plot"
    import matplotlib.pyplot as plt
    curves = pl.read_parquet(curves_path)
    summary = read_json(summary_path)
    x = curves["similarity"].to_numpy()
    labels = {"fuzz": "fuzzed", "negation": "negated (inserted)", "grammatical_negation": "negated (grammatical)"}
    styles = {"fuzz": ("-", "C0"), "negation": ("-", "C1"), "grammatical_negation": ("--", "C2")}
    drawn = [k for k in labels if not np.all(np.isnan(curves[f"density_{k}"].to_numpy()))]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1, 1.3]})
    zoom = _data_range(curves, drawn)
    for ax, xlim in zip(axes, [(-1.0, 1.0), zoom]):
        for kind in drawn:
            style, colour = styles[kind]
            ax.plot(x, curves[f"density_{kind}"].to_numpy(), style, color=colour, lw=1.2,
                    label=f"{labels[kind]} (n={summary['counts'][kind]})")
        for kind in drawn:
            if kind != "fuzz" and "fuzz" in drawn:  # the overlap is the shared area under both curves
                shared = np.minimum(curves["density_fuzz"].to_numpy(), curves[f"density_{kind}"].to_numpy())
                ax.fill_between(x, shared, color=styles[kind][1], alpha=0.25, lw=0,
                                label=f"shared area {labels[kind].split(' ', 1)[1]}" if ax is axes[1] else None)
        ax.set_xlim(*xlim)
        ax.set_xlabel("cosine similarity to the original sentence")
    axes[0].set_ylabel("normalised density")
    axes[0].set_title("whole range", fontsize=9)
    axes[1].set_title(f"zoomed on 99% of each curve's mass: {zoom[0]:.3f} to {zoom[1]:.3f}", fontsize=9)
    axes[1].legend(fontsize=8, loc="upper left")
    overlaps = "; ".join(f"{r['condition'].replace('_', ' ')} {_fmt_overlap(r)}" for r in summary["rows"])
    fig.suptitle(f"{summary['corpus']} · {summary['model']} — overlap (95% CI): {overlaps}", fontsize=10)
    fig.tight_layout()
    for path in (out_png, out_svg):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix[1:], dpi=120, metadata={"Date": None} if path.endswith(".svg") else None)
    plt.close(fig)


OVERLAP_SCHEMA = {"corpus": pl.String, "model": pl.String, "condition": pl.String, "overlap": pl.Float64,
                  "n_fuzzed": pl.Int64, "n_negated": pl.Int64, "n_dropped": pl.Int64,
                  "n_units": pl.Int64, "unit": pl.String, "kde": pl.String,
                  "overlap_ci_low": pl.Float64, "overlap_ci_high": pl.Float64, "interval_method": pl.String,
                  "mean_fuzzed": pl.Float64, "mean_negated": pl.Float64,
                  "gap": pl.Float64, "gap_ci_low": pl.Float64, "gap_ci_high": pl.Float64,
                  "auc": pl.Float64, "auc_ci_low": pl.Float64, "auc_ci_high": pl.Float64,
                  "direction_ok": pl.Boolean, "bootstrap_b": pl.Int64,
                  "n_dropped_fuzzed": pl.Int64, "grid_step": pl.Float64, "model_settings": pl.String,
                  "note": pl.String}


def table3(table: pl.DataFrame, corpora: list[str] | None = None, models: list[str] | None = None) -> pl.DataFrame:
    """The seed's Table 3 layout: one block per condition, models as rows, corpora as columns,
    each cell the overlap with its 95% interval."""
    corpora = corpora or sorted(set(table["corpus"]))
    models = models or sorted(set(table["model"]))
    cells = {(r["condition"], r["model"], r["corpus"]): _fmt_overlap(r) for r in table.iter_rows(named=True)}
    settings = {r["model"]: r["model_settings"] for r in table.iter_rows(named=True)}
    rows = []
    for cond in [c for c in NEGATIVE_CONDITIONS if c in set(table["condition"])]:
        for m in models:
            if not any((cond, m, c) in cells for c in corpora):
                continue
            rows.append({"condition": cond, "model": m, **{c: cells.get((cond, m, c), "") for c in corpora},
                         "model_settings": settings.get(m, "")})
    return pl.DataFrame(rows, schema={"condition": pl.String, "model": pl.String, **{c: pl.String for c in corpora},
                                      "model_settings": pl.String})


def aggregate(summary_paths: list[str], out_csv: str, out_table3: str | None = None,
              corpora: list[str] | None = None, models: list[str] | None = None) -> pl.DataFrame:
    rows = [r for p in summary_paths for r in read_json(p)["rows"]]
    table = pl.DataFrame(rows, schema=OVERLAP_SCHEMA).sort("corpus", "model", "condition")
    table = table.with_columns(pl.col("overlap", "overlap_ci_low", "overlap_ci_high", "mean_fuzzed", "mean_negated",
                                      "gap", "gap_ci_low", "gap_ci_high", "auc", "auc_ci_low", "auc_ci_high").round(6))
    with atomic_path(out_csv) as tmp:
        table.write_csv(tmp)
    if out_table3:
        with atomic_path(out_table3) as tmp:
            table3(table, corpora, models).write_csv(tmp)
    return table


# ---- the jobs of rules/csc.smk (workflow_scripts/jobs.py) ----
def run_csc_score(job) -> None:
    p = job.params
    score(job.input.variants, list(job.input.stores), job.wildcards.model, job.wildcards.corpus, p.exact_max_n,
          os.path.dirname(job.output.summary), setup_logging(name="csc"), p.spec, p.grid_step, p.bootstrap_b,
          p.bootstrap_groups, p.seed)


def run_csc_plot(job) -> None:
    plot(job.input.curves, job.input.summary, job.output.png, job.output.svg)


def run_csc_aggregate(job) -> None:
    """No summaries (no model runs CSC): header-only tables."""
    table = aggregate(list(job.input), job.output.overlap, job.output.table3, job.params.corpora, job.params.models)
    setup_logging(name="csc").info("%d overlap rows -> %s", table.height, job.output.overlap)
