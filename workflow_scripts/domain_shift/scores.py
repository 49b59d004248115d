"""Domain-shift probe, scores (seed 003, methods.md §4): how a model's cosine similarities within a
domain-specific set, within a domain-agnostic set and between the two are distributed, and how far
adaptation moves them.

Per (dataset, model): the cosine of every pair of distinct texts within each group and of every
(specific, agnostic) pair: three distributions, `within_specific`, `within_agnostic`, `between`.
Densities are the CSC machinery's (workflow_scripts/density.py): the Gaussian KDE with
covariance factor 0.2 at the grid points -1..1, scipy's exact KDE up to `exact_kde_max_n`
similarities and the binned FFT estimator above; each normalised to sum 1 (equation 1), overlap =
sum of the minimum (equation 2). Overlaps of the three pairs of distributions, and each
distribution's mean, get bootstrapped 95% intervals by resampling TEXTS with replacement within
each group (the unit whose sampling varies; pairs are not independent): a replicate weights the
pair (i, j) by c_i x c_j, the draw counts of its two texts, and recomputes the bandwidth, the
density (binned, on the same fine grid as CSC's replicates) and the overlap. Replicates go in blocks
(as in CSC and set theory): memory holds one block's pair weights (block x pairs), never B x pairs,
and no replicate's density outlives its block. The fine grid must cover every replicate's
bandwidth, so a first pass over the blocks takes each replicate's weighted moments and a second,
drawing the same numbers again from the same seeded streams, the densities, overlaps and means: the
results are those of drawing all B at once, bit for bit. The resamples are paired across models:
the streams are seeded by the config seed, the dataset and the group (bootstrap.paired_rng), never
the model, and replicate r draws the same texts (in the order of the dataset's texts file) for every
model; each score job writes the replicates of the means, mean gaps and overlaps to
replicates.parquet (bootstrap.write_replicates) for the paired differences tables.

Aggregate: results/tables/domain_shift.csv (overlaps and means with intervals, per dataset and
model), results/tables/domain_shift_adaptation.csv (base vs PT vs FT vs PT-FT ... side by side: the
retrieval probe's accuracy/NDCG@k with intervals, COE, ROE, I1 and IsoScore, and the domain-shift
overlaps), results/tables/domain_shift_correlations.csv (Pearson with a bootstrap interval over
models, Spearman: domain-shift measures vs retrieval measures across every model of the study), and
a plot per (dataset, adapted model) against its base model.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl

from workflow_scripts.bootstrap import (paired_rng, pearson_with_interval, percentile_interval, replicate_rows,
                                        resample_counts, write_replicates)
from workflow_scripts.common import atomic_path, setup_logging, write_json
from workflow_scripts.figure_text import interval_text
from workflow_scripts.jobs import pair_entries
from workflow_scripts.density import (Window, bandwidth, binned_density, exact_density, make_grid, normalise, overlap,
                                      undefined_reason)
from workflow_scripts.vector_store import VectorStore, spec_digest

DISTRIBUTIONS = ("within_specific", "within_agnostic", "between")
COMPARISONS = (("within_specific", "between"), ("within_agnostic", "between"), ("within_specific", "within_agnostic"))


def unit_vectors(store: VectorStore, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows scaled to unit length (dense), and which rows had a zero norm (their cosines are NaN)."""
    vectors, norms = store.lookup(keys)
    if hasattr(vectors, "toarray"):  # TF-IDF (CSR): a few hundred texts, dense is fine
        vectors = vectors.toarray()
    vectors = np.asarray(vectors, dtype=np.float64)
    zero = ~(norms > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        vectors = vectors / np.where(zero, 1.0, norms.astype(np.float64))[:, None]
    vectors[zero] = np.nan
    return vectors, zero


def pair_similarities(spec_vecs: np.ndarray, agn_vecs: np.ndarray) -> dict:
    """distribution -> (cosines, index of the first text, index of the second) with texts indexed
    specific 0..S-1 then agnostic S..S+A-1."""
    s = len(spec_vecs)
    out = {}
    for name, a, b, off_a, off_b, upper in (("within_specific", spec_vecs, spec_vecs, 0, 0, True),
                                            ("within_agnostic", agn_vecs, agn_vecs, s, s, True),
                                            ("between", spec_vecs, agn_vecs, 0, s, False)):
        gram = np.clip(a @ b.T, -1.0, 1.0)
        i, j = np.triu_indices(len(a), k=1) if upper else np.indices(gram.shape).reshape(2, -1)
        out[name] = (gram[i, j], i + off_a, j + off_b)
    return out


def weighted_moments(values: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    n = float(w.sum())
    if n <= 0:
        return 0.0, float("nan"), 0.0
    mean = float(np.dot(w, values) / n)
    return n, mean, float(np.dot(w, (values - mean) ** 2))


def replicate_window(values: np.ndarray, moments: list, grid_step: float) -> tuple:
    """(bandwidth of each replicate, None where undefined; one fine window covering them all, None
    when none is defined) from the replicates' weighted moments (n, mean, m2)."""
    bws = [bandwidth(n, m2) if undefined_reason(n, m2, grid_step) is None else None for n, _, m2 in moments]
    defined = [b for b in bws if b]
    if not defined:
        return bws, None
    return bws, Window.covering(grid_step, float(values.min()), float(values.max()), min(defined), max(defined))


def binned_replicates(values: np.ndarray, weights: np.ndarray, moments: list, bws: list, window, grid_step: float) -> list:
    """Binned KDE of each weighted replicate on `window` (None where its bandwidth is undefined)."""
    points = int(round(2.0 / grid_step)) + 1
    if window is None:
        return [None] * len(weights)
    j, frac = window.bin(values)
    out = []
    for w, (n, _, _), bw in zip(weights, moments, bws):
        if bw is None:
            out.append(None)
            continue
        hist = np.bincount(np.concatenate([j, j + 1]), weights=np.concatenate([w * (1.0 - frac), w * frac]),
                           minlength=window.nodes)
        out.append(normalise(window.density(hist, n, bw, points)))
    return out


def replicate_densities(values: np.ndarray, weights: np.ndarray, grid_step: float) -> list:
    """Binned KDE of each weighted replicate (None where undefined), on one window covering all."""
    moments = [weighted_moments(values, w) for w in weights]
    bws, window = replicate_window(values, moments, grid_step)
    return binned_replicates(values, weights, moments, bws, window, grid_step)


# Replicates per block: at most REPLICATE_BLOCK, fewer where a block's pair weights (block x pairs
# float64) would pass BLOCK_BYTES (64 MiB: 8 replicates of 2,000 x 2,000 `between` pairs).
REPLICATE_BLOCK = 200
BLOCK_BYTES = 64 * 2 ** 20


def replicate_block(n_pairs: int) -> int:
    return max(1, min(REPLICATE_BLOCK, BLOCK_BYTES // (8 * max(n_pairs, 1))))


def block_sizes(b: int, block: int) -> list[int]:
    """Replicates per block: `block` each, and never a block of one replicate when B > 1 (a leftover
    one joins the block before it). Why: numpy lays a block's (replicates x pairs) weights out
    column-major (`counts[:, i]` indexes the pairs axis), so each replicate's weights are strided,
    except in a block of one row, where they are contiguous and BLAS's dot takes its vectorised
    path, which rounds differently. Blocks of two or more keep every dot product of a replicate
    what it is when all B are drawn as one block."""
    block = max(block, 2)
    sizes = [block] * (b // block) + ([b % block] if b % block else [])
    if len(sizes) > 1 and sizes[-1] == 1:
        sizes.pop()
        sizes[-1] += 1
    return sizes


def count_blocks(groups: np.ndarray, b: int, block: int, seed: int, dataset: str, n_texts: int):
    """(first replicate, (n, texts) draw counts) per block of the B replicates: each group's texts
    resampled from its own seeded stream, block after block, so the numbers and their order are
    those of drawing all B at once (Generator.multinomial draws row after row). The streams are the
    dataset's (bootstrap.paired_rng, never the model's) and the texts are in the order of the
    dataset's texts file, the same for every model: replicate r draws the same texts for every
    model, so two models' replicates can be subtracted (paired comparisons)."""
    idx = {g: np.flatnonzero(groups == g) for g in ("specific", "agnostic")}
    rngs = {g: paired_rng(seed, "domain_shift", dataset, "texts", g) for g in idx}
    lo = 0
    for n in block_sizes(b, block):
        counts = np.zeros((n, n_texts))
        for g, i in idx.items():
            counts[:, i] = resample_counts(rngs[g], n, len(i))
        yield lo, counts
        lo += n


def bootstrap(sims: dict, groups: np.ndarray, b: int, step: float, seed: int, dataset: str, model: str,
              block: int | None = None, n_texts: int | None = None) -> tuple[dict, dict]:
    """({distribution: B replicate means}, {(a, b): B replicate overlaps, NaN where undefined}),
    texts resampled within their group, a pair weighted by the product of its texts' draw counts.
    `block`: replicates per block (default: replicate_block of the largest distribution). `model`
    does not seed anything: every model of a dataset gets the same resamples."""
    n_texts = len(groups) if n_texts is None else n_texts
    kept = {}
    for name in DISTRIBUTIONS:
        values, i, j = sims[name]
        ok = np.isfinite(values)
        kept[name] = (values[ok], i[ok], j[ok])
    block = block or replicate_block(max(len(v) for v, _, _ in kept.values()))
    # pass 1: every replicate's moments, for the one window each distribution's replicates share
    moments = {name: [] for name in DISTRIBUTIONS}
    for _, counts in count_blocks(groups, b, block, seed, dataset, n_texts):
        for name, (values, i, j) in kept.items():
            if len(values) >= 2:
                moments[name] += [weighted_moments(values, w) for w in counts[:, i] * counts[:, j]]
    windows = {name: replicate_window(kept[name][0], moments[name], step) if moments[name] else ([None] * b, None)
               for name in DISTRIBUTIONS}
    # pass 2: the same draws again; a block's densities give its overlaps and are dropped
    means = {name: np.empty(b) for name in DISTRIBUTIONS}
    overlaps = {pair: np.full(b, np.nan) for pair in COMPARISONS}
    for lo, counts in count_blocks(groups, b, block, seed, dataset, n_texts):
        hi, dens = lo + len(counts), {}
        for name, (values, i, j) in kept.items():
            weights = counts[:, i] * counts[:, j]
            bws, window = windows[name]
            dens[name] = binned_replicates(values, weights, moments[name][lo:hi], bws[lo:hi], window, step) \
                if len(values) >= 2 else [None] * len(counts)
            means[name][lo:hi] = [np.dot(w, values) / w.sum() if w.sum() > 0 else np.nan for w in weights]
        for a, c in COMPARISONS:
            overlaps[(a, c)][lo:hi] = [overlap(x, y) if x is not None and y is not None else np.nan
                                       for x, y in zip(dens[a], dens[c])]
    return means, overlaps


def analyse(sims: dict, n_texts: int, groups: np.ndarray, settings: dict, seed: int, dataset: str, model: str,
            replicates_out: list | None = None) -> tuple:
    """(summary dict, curves frame) of the three distributions. `replicates_out`: a list that
    receives the bootstrap replicates of every statistic (bootstrap.replicate_rows; statistics
    `mean/<distribution>`, `overlap/<a>/<b>`, `mean_gap/<a>/<b>`), paired across models."""
    step, exact_max = settings["grid_step"], settings["exact_kde_max_n"]
    grid = make_grid(step)
    curves, info = {"grid": grid}, {}
    for name in DISTRIBUTIONS:
        values, _, _ = sims[name]
        ok = np.isfinite(values)
        v = values[ok]
        n = len(v)
        m2 = float(((v - v.mean()) ** 2).sum()) if n else 0.0
        reason = undefined_reason(n, m2, step)
        if reason:
            dens, kde = np.full(len(grid), np.nan), "undefined"
        elif n <= exact_max:
            dens, kde = normalise(exact_density(v, grid)), "exact"
        else:
            dens, kde = normalise(binned_density(v, step)), "binned"
        curves[name] = dens
        info[name] = {"n_pairs": int(n), "n_dropped": int((~ok).sum()), "mean": float(v.mean()) if n else float("nan"),
                      "sd": float(v.std(ddof=1)) if n > 1 else float("nan"),
                      "bandwidth": bandwidth(n, m2) if not reason else float("nan"), "kde": kde, "note": reason or ""}
    # bootstrap: texts resampled within each group; a pair weighs the product of its texts' counts
    b = settings["bootstrap_b"]
    rep_means, rep_overlaps = bootstrap(sims, groups, b, step, seed, dataset, model, n_texts=n_texts)
    parts = []
    for name in DISTRIBUTIONS:
        lo, hi, _ = percentile_interval(rep_means[name])
        info[name].update(mean_ci_low=lo, mean_ci_high=hi)
        parts.append(replicate_rows("domain_shift", dataset, f"mean/{name}", model, info[name]["mean"],
                                    rep_means[name]))
    comparisons = []
    for a, c in COMPARISONS:
        point = overlap(curves[a], curves[c]) if info[a]["kde"] != "undefined" and info[c]["kde"] != "undefined" \
            else float("nan")
        lo, hi, valid = percentile_interval(rep_overlaps[(a, c)])
        gap = info[a]["mean"] - info[c]["mean"]
        glo, ghi, _ = percentile_interval(rep_means[a] - rep_means[c])
        comparisons.append({"a": a, "b": c, "overlap": point, "overlap_ci_low": lo, "overlap_ci_high": hi,
                            "valid_replicates": valid, "mean_gap": gap, "mean_gap_ci_low": glo, "mean_gap_ci_high": ghi})
        parts.append(replicate_rows("domain_shift", dataset, f"overlap/{a}/{c}", model, point, rep_overlaps[(a, c)]))
        parts.append(replicate_rows("domain_shift", dataset, f"mean_gap/{a}/{c}", model, gap,
                                    rep_means[a] - rep_means[c]))
    if replicates_out is not None:
        replicates_out.extend(parts)
    summary = {"distributions": info, "comparisons": comparisons,
               "bootstrap": {"replicates": b, "unit": "text, within its group", "seed": seed,
                             "pair_weight": "product of its two texts' draw counts"},
               "grid_step": step, "exact_kde_max_n": exact_max}
    return summary, pl.DataFrame({k: pl.Series(k, v, pl.Float64) for k, v in curves.items()})


def score(texts_path: str, store_dirs: list[str], dataset: str, model: str, spec: dict, settings: dict, seed: int,
          summary_out: str, curves_out: str, log, replicates_out: str | None = None) -> dict:
    frame = pl.read_parquet(texts_path)
    store = VectorStore(store_dirs, model=model, spec_digest=spec_digest(spec))
    groups = frame["group"].to_numpy()
    keys = frame["text_key"].to_numpy().astype(np.uint64)
    spec_idx, agn_idx = np.flatnonzero(groups == "specific"), np.flatnonzero(groups == "agnostic")
    order = np.concatenate([spec_idx, agn_idx])
    vecs, zero = unit_vectors(store, keys[order])
    sims = pair_similarities(vecs[:len(spec_idx)], vecs[len(spec_idx):])
    parts: list = []
    summary, curves = analyse(sims, len(order), groups[order], settings, seed, dataset, model, parts)
    summary.update(dataset=dataset, model=model, n_specific=int(len(spec_idx)), n_agnostic=int(len(agn_idx)),
                   zero_norm_texts=int(zero.sum()),
                   store={k: store.manifest.get(k) for k in ("origin", "device", "precision", "spec_digest", "dim")})
    write_json(summary_out, summary)
    with atomic_path(curves_out) as tmp:
        curves.write_parquet(tmp)
    if replicates_out:
        write_replicates(replicates_out, parts)
    log.info("%s / %s: %s", dataset, model, "; ".join(f"{c['a']} vs {c['b']}: overlap {c['overlap']:.3f} "
                                                      f"[{c['overlap_ci_low']:.3f}, {c['overlap_ci_high']:.3f}]"
                                                      for c in summary["comparisons"]))
    return summary


# ---- aggregate ---------------------------------------------------------------------------------

TABLE_SCHEMA = {"dataset": pl.String, "model": pl.String, "base_model": pl.String, "adaptation": pl.String,
                "a": pl.String, "b": pl.String, "overlap": pl.Float64, "overlap_ci_low": pl.Float64,
                "overlap_ci_high": pl.Float64, "mean_gap": pl.Float64, "mean_gap_ci_low": pl.Float64,
                "mean_gap_ci_high": pl.Float64, "mean_a": pl.Float64, "mean_a_ci_low": pl.Float64,
                "mean_a_ci_high": pl.Float64, "mean_b": pl.Float64, "mean_b_ci_low": pl.Float64,
                "mean_b_ci_high": pl.Float64, "n_specific": pl.Int64, "n_agnostic": pl.Int64, "kde": pl.String,
                "bootstrap_b": pl.Int64, "note": pl.String}


def table(entries: list[dict]) -> pl.DataFrame:
    rows = []
    for e in entries:
        s = json.loads(Path(e["summary"]).read_text())
        d = s["distributions"]
        for c in s["comparisons"]:
            notes = [f"{x}: {d[x]['note']}" for x in (c["a"], c["b"]) if d[x]["note"]]
            rows.append({"dataset": e["dataset"], "model": e["model"], "base_model": e.get("base") or "",
                         "adaptation": e.get("adaptation") or "base", "a": c["a"], "b": c["b"],
                         **{k: c[k] for k in ("overlap", "overlap_ci_low", "overlap_ci_high", "mean_gap",
                                              "mean_gap_ci_low", "mean_gap_ci_high")},
                         "mean_a": d[c["a"]]["mean"], "mean_a_ci_low": d[c["a"]]["mean_ci_low"],
                         "mean_a_ci_high": d[c["a"]]["mean_ci_high"], "mean_b": d[c["b"]]["mean"],
                         "mean_b_ci_low": d[c["b"]]["mean_ci_low"], "mean_b_ci_high": d[c["b"]]["mean_ci_high"],
                         "n_specific": s["n_specific"], "n_agnostic": s["n_agnostic"],
                         "kde": "/".join(sorted({d[c["a"]]["kde"], d[c["b"]]["kde"]})),
                         "bootstrap_b": s["bootstrap"]["replicates"], "note": "; ".join(notes)})
    return pl.DataFrame(rows, schema=TABLE_SCHEMA, orient="row")


def _fmt(v, lo=None, hi=None, pct=False):
    """The seed's cells: percentages with one decimal, overlaps with three; empty without a value."""
    return interval_text(v, lo, hi, digits=1 if pct else 3, scale=100 if pct else 1, missing="")


def adaptation_table(shift: pl.DataFrame, retrieval: pl.DataFrame | None, isotropy: pl.DataFrame | None,
                     models: list[dict], k: int) -> pl.DataFrame:
    """The seed's Tables II-III layout for base vs adapted models: one row per (retrieval set,
    model) of each adaptation family (a base model and the recipes made from it), with the
    domain-shift overlap of specific-within vs between per domain-shift dataset."""
    rows = []
    order = {m["model"]: i for i, m in enumerate(models)}
    shift_main = shift.filter((pl.col("a") == "within_specific") & (pl.col("b") == "between"))
    sets = sorted(set(retrieval["set"].to_list())) if retrieval is not None and retrieval.height else [""]
    shift_sets = sorted(set(shift_main["dataset"].to_list()))
    for rset in sets:
        for m in sorted(models, key=lambda m: (m["root"], m["model"] != m["root"], order[m["model"]])):
            row = {"Set": rset, "Base": m["root"], "Embedding Model": m["model"], "Adaptation": m["adaptation"]}
            r = None
            if retrieval is not None and retrieval.height:
                hit = retrieval.filter((pl.col("set") == rset) & (pl.col("model") == m["model"]) & (pl.col("k") == k))
                r = hit.row(0, named=True) if hit.height else None
            row[f"Acc@{k}"] = _fmt(r["accuracy"], r["accuracy_ci_low"], r["accuracy_ci_high"], pct=True) if r else ""
            row[f"NDCG@{k}"] = _fmt(r["ndcg"], r["ndcg_ci_low"], r["ndcg_ci_high"], pct=True) if r else ""
            row["COE"] = _fmt(r["coe"], pct=True) if r else ""
            row["ROE"] = _fmt(r["roe"], pct=True) if r else ""
            iso = None
            if isotropy is not None and isotropy.height:
                hit = isotropy.filter((pl.col("set") == rset) & (pl.col("model") == m["model"]) &
                                      (pl.col("transform") == "none") & (pl.col("vectors") == "corpus"))
                iso = hit.row(0, named=True) if hit.height else None
            row["I1"] = _fmt(iso["i1"], pct=True) if iso else ""
            row["IsoScore"] = _fmt(iso["isoscore"], pct=True) if iso else ""
            for d in shift_sets:
                hit = shift_main.filter((pl.col("dataset") == d) & (pl.col("model") == m["model"]))
                o = hit.row(0, named=True) if hit.height else None
                row[f"Overlap spec/between ({d})"] = _fmt(o["overlap"], o["overlap_ci_low"], o["overlap_ci_high"]) if o else ""
            # a model's row per retrieval set it was evaluated on; a model no set evaluated, once, without a set
            scored = set(retrieval.filter(pl.col("model") == m["model"])["set"].to_list()) \
                if retrieval is not None and retrieval.height else set()
            if r is not None or (not scored and rset == sets[0] and any(row[f"Overlap spec/between ({d})"]
                                                                      for d in shift_sets)):
                rows.append(row if r is not None else {**row, "Set": ""})
    cols = (["Set", "Base", "Embedding Model", "Adaptation", f"Acc@{k}", f"NDCG@{k}", "COE", "ROE", "I1", "IsoScore"]
            + [f"Overlap spec/between ({d})" for d in shift_sets])
    return pl.DataFrame(rows, schema={c: pl.String for c in cols}, orient="row")


SHIFT_MEASURES = (("overlap_spec_between", "within_specific", "between", "overlap"),
                  ("gap_spec_between", "within_specific", "between", "mean_gap"))
RETRIEVAL_MEASURES = ("accuracy", "ndcg", "coe", "roe", "i1", "isoscore")


def correlations(shift: pl.DataFrame, retrieval: pl.DataFrame | None, isotropy: pl.DataFrame | None, k: int,
                 replicates: int, seed: int) -> pl.DataFrame:
    """Across every model of the study (points: models), per (domain-shift dataset, retrieval set):
    Pearson with a bootstrap interval over models, and Spearman."""
    schema = {"dataset": pl.String, "set": pl.String, "x": pl.String, "y": pl.String, "k": pl.Int32,
              "n_points": pl.Int64, "pearson": pl.Float64, "pearson_ci_low": pl.Float64, "pearson_ci_high": pl.Float64,
              "spearman": pl.Float64, "points": pl.String, "note": pl.String}
    if retrieval is None or not retrieval.height or not shift.height:
        return pl.DataFrame(schema=schema)
    at_k = retrieval.filter(pl.col("k") == k).select("set", "model", "accuracy", "ndcg", "coe", "roe")
    if isotropy is not None and isotropy.height:
        iso = isotropy.filter((pl.col("transform") == "none") & (pl.col("vectors") == "corpus")).select(
            "set", "model", "i1", "isoscore")
        at_k = at_k.join(iso, on=["set", "model"], how="left")
    else:
        at_k = at_k.with_columns(pl.lit(None, pl.Float64).alias("i1"), pl.lit(None, pl.Float64).alias("isoscore"))
    rows = []
    for d in sorted(set(shift["dataset"].to_list())):
        for rset in sorted(set(at_k["set"].to_list())):
            for xname, a, b, col in SHIFT_MEASURES:
                xs = shift.filter((pl.col("dataset") == d) & (pl.col("a") == a) & (pl.col("b") == b)).select(
                    "model", pl.col(col).alias("x"))
                joined = xs.join(at_k.filter(pl.col("set") == rset), on="model", how="inner").sort("model")
                for y in RETRIEVAL_MEASURES:
                    x_arr = joined["x"].cast(pl.Float64).to_numpy()
                    y_arr = joined[y].cast(pl.Float64).fill_null(float("nan")).to_numpy()
                    stats = pearson_with_interval(x_arr, y_arr, replicates, seed, "domain_shift", d, rset, xname, y)
                    used = [m for m, p, q in zip(joined["model"].to_list(), x_arr, y_arr)
                            if math.isfinite(p) and math.isfinite(q)]
                    rows.append({"dataset": d, "set": rset, "x": xname, "y": y, "k": k, **stats,
                                 "points": "; ".join(used),
                                 "note": "" if stats["n_points"] >= 3 else "fewer than 3 models: undefined"})
    return pl.DataFrame(rows, schema=schema, orient="row")


def plot_pair(base_curves: str, model_curves: str, base: str, model: str, dataset: str, base_summary: str,
              model_summary: str, out_png: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"within_specific": "tab:red", "within_agnostic": "tab:blue", "between": "tab:purple"}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    lo_all, hi_all = 1.0, -1.0
    for ax, path, summ, name in ((axes[0], base_curves, base_summary, base), (axes[1], model_curves, model_summary, model)):
        curves = pl.read_parquet(path)
        s = json.loads(Path(summ).read_text())
        grid = curves["grid"].to_numpy()
        for dist in DISTRIBUTIONS:
            y = curves[dist].to_numpy()
            if np.all(np.isnan(y)):
                continue
            ax.plot(grid, y, color=colours[dist], label=f"{dist} (mean {s['distributions'][dist]['mean']:.2f})")
            nz = np.flatnonzero(y > 1e-6 * np.nanmax(y))
            if len(nz):
                lo_all, hi_all = min(lo_all, grid[nz[0]]), max(hi_all, grid[nz[-1]])
        c = s["comparisons"][0]
        ax.set_title(f"{name}\noverlap spec/between {c['overlap']:.3f} [{c['overlap_ci_low']:.3f}, "
                     f"{c['overlap_ci_high']:.3f}]", fontsize=9)
        ax.set_xlabel("cosine similarity")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("normalised density")
    for ax in axes:
        ax.set_xlim(max(-1.0, lo_all - 0.05), min(1.0, hi_all + 0.05))
    fig.suptitle(f"domain shift, {dataset}: {base} (base) vs {model} (adapted)", fontsize=10)
    fig.tight_layout()
    Path(out_png).parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def aggregate(entries: list[dict], models: list[dict], plots: list[dict], retrieval_accuracy: str | None,
              retrieval_isotropy: str | None, k: int, replicates: int, seed: int, table_out: str, adaptation_out: str,
              correlations_out: str, log) -> None:
    shift = table(entries)
    with atomic_path(table_out) as tmp:
        shift.write_csv(tmp)
    retrieval = pl.read_csv(retrieval_accuracy) if retrieval_accuracy else None
    isotropy = pl.read_csv(retrieval_isotropy) if retrieval_isotropy else None
    with atomic_path(adaptation_out) as tmp:
        adaptation_table(shift, retrieval, isotropy, models, k).write_csv(tmp)
    with atomic_path(correlations_out) as tmp:
        correlations(shift, retrieval, isotropy, k, replicates, seed).write_csv(tmp)
    by = {(e["dataset"], e["model"]): e for e in entries}
    for p in plots:
        b, m = by[(p["dataset"], p["base"])], by[(p["dataset"], p["model"])]
        plot_pair(b["curves"], m["curves"], p["base"], p["model"], p["dataset"], b["summary"], m["summary"], p["png"])
    log.info("%d (dataset, model) pairs -> %s, %s, %s; %d plots", len(entries), table_out, adaptation_out,
             correlations_out, len(plots))


# ---- the jobs of rules/domain_shift.smk (workflow_scripts/jobs.py) ----
def run_domain_shift_score(job) -> None:
    score(job.input.texts, list(job.input.stores), job.wildcards.dataset, job.wildcards.model, job.params.spec,
          job.params.settings, job.params.seed, job.output.summary, job.output.curves,
          setup_logging(name="domain_shift"), job.output.replicates)


def run_domain_shift_aggregate(job) -> None:
    """The pairs' files are the inputs `summary_<i>`, `curves_<i>` (params.entries in the same order),
    the plots the output `plots` (params.plots in the same order); the retrieval probe's tables
    are inputs where it ran."""
    entries = pair_entries(job.params.entries, job.input)
    plots = [{**p, "png": png} for p, png in zip(job.params.plots, job.output.plots, strict=True)]
    settings = job.params.settings
    aggregate(entries, job.params.models, plots, job.input.get("retrieval_accuracy"),
              job.input.get("retrieval_isotropy"), settings["table_k"], settings["bootstrap_b"], job.params.seed,
              job.output.table, job.output.adaptation, job.output.correlations, setup_logging(name="domain_shift"))
