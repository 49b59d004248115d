"""Retrieval probe, the job of rule retrieval_aggregate (methods.md §4): from every (set, model)'s
summary.parquet (metrics.py) and isotropy.parquet (isotropy.py), the tables retrieval_accuracy.csv,
retrieval_isotropy.csv, the correlations (accuracy against COE, ROE, the threshold, I1 and IsoScore,
with bootstrapped intervals) and the seed's Tables I-III; per set, the plots of accuracy and NDCG
against k and of the similarity distributions."""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import polars as pl

from workflow_scripts.bootstrap import pearson_with_interval
from workflow_scripts.common import atomic_path, setup_logging
from workflow_scripts.jobs import pair_entries
from workflow_scripts.retrieval.columns import SUMMARY_SCHEMA

TABLE_COLUMNS = ["set", "model", "k", "accuracy", "accuracy_ci_low", "accuracy_ci_high", "ndcg", "ndcg_ci_low",
                 "ndcg_ci_high", "coe", "roe", "threshold_percentile", "accuracy_at_threshold"]
CORRELATIONS = (  # (name, x, y, over which points)
    ("acc_vs_coe", "accuracy", "coe", "models"),
    ("acc_vs_roe", "accuracy", "roe", "models"),
    ("threshold_vs_roe", "threshold", "roe", "models"),
    ("acc_vs_i1", "accuracy", "i1", "models x transforms"),
    ("acc_vs_isoscore", "accuracy", "isoscore", "models x transforms"),
)
TABLE1_NAMES = {"acc_vs_coe": "Acc v. COE", "acc_vs_roe": "Acc v. ROE", "threshold_vs_roe": "Thresh v. ROE",
                "acc_vs_i1": "Acc v. I1", "acc_vs_isoscore": "Acc v. IsoScore"}
TRANSFORM_NAMES = {"none": "Baseline", "standardise": "Standardized", "whiten": "Whitened", "pca": "PCA"}


def correlations(summary: pl.DataFrame, isotropy: pl.DataFrame, k: int, replicates: int, seed: int) -> pl.DataFrame:
    """Each correlation per set and over all sets together, stating its points."""
    at_k = summary.filter(pl.col("k") == k)
    iso = isotropy.filter(pl.col("vectors") == "corpus").select("set", "model", "transform", "i1", "isoscore")
    with_iso = at_k.join(iso, on=["set", "model", "transform"], how="inner")
    rows = []
    for scope in [*sorted(summary["set"].unique().to_list()), "all"]:
        for name, x, y, over in CORRELATIONS:
            frame = with_iso if over != "models" else at_k.filter(pl.col("transform") == "none")
            if scope != "all":
                frame = frame.filter(pl.col("set") == scope)
            frame = frame.sort("set", "model", "transform")
            points = [f"{r['set']}/{r['model']}" + (f"/{r['transform']}" if over != "models" else "")
                      for r in frame.iter_rows(named=True)]
            xs = frame[x].cast(pl.Float64).to_numpy() if frame.height else np.array([])
            ys = frame[y].cast(pl.Float64).to_numpy() if frame.height else np.array([])
            stats = pearson_with_interval(xs, ys, replicates, seed, "retrieval", "correlation", scope, name, k)
            used = [p for p, a, b in zip(points, xs, ys) if np.isfinite(a) and np.isfinite(b)]
            rows.append({"scope": scope, "correlation": name, "x": x, "y": y, "k": k, "over": over, **stats,
                         "points": "; ".join(used),
                         "note": "" if stats["n_points"] >= 3 else "fewer than 3 points: undefined"})
    schema = {"scope": pl.String, "correlation": pl.String, "x": pl.String, "y": pl.String, "k": pl.Int32,
              "over": pl.String, "n_points": pl.Int64, "pearson": pl.Float64, "pearson_ci_low": pl.Float64,
              "pearson_ci_high": pl.Float64, "spearman": pl.Float64, "points": pl.String, "note": pl.String}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _pct(v, digits=2):
    return "" if v is None or not math.isfinite(v) else f"{100 * v:.{digits}f}"


def table1(corr: pl.DataFrame) -> pl.DataFrame:
    """The seed's Table I: Pearson correlations per set (and over all sets)."""
    rows = []
    for scope in dict.fromkeys(corr["scope"].to_list()):
        part = {r["correlation"]: r["pearson"] for r in corr.filter(pl.col("scope") == scope).iter_rows(named=True)}
        rows.append({"Corr": scope, **{label: "" if part.get(name) is None or not math.isfinite(part[name])
                                       else f"{part[name]:.3f}" for name, label in TABLE1_NAMES.items()}})
    return pl.DataFrame(rows, schema={"Corr": pl.String, **{v: pl.String for v in TABLE1_NAMES.values()}}, orient="row")


def table2(summary: pl.DataFrame, k: int) -> pl.DataFrame:
    """The seed's Table II at k: bootstrapped Acc, Acc-CI (interval width), NDCG, NDCG-CI, COE,
    ROE, θ (percentile), Acc @ θ, and the full data's Acc and NDCG; percentages as the paper."""
    rows = []
    for r in summary.filter((pl.col("transform") == "none") & (pl.col("k") == k)).iter_rows(named=True):
        width = lambda s: r[f"{s}_ci_high"] - r[f"{s}_ci_low"]  # noqa: E731
        theta = "" if not math.isfinite(r["threshold"]) else f"{r['threshold']:.2f} ({r['threshold_percentile']:.0f})"
        rows.append({"Set": r["set"], "Embedding Model": r["model"], "Acc": _pct(r["accuracy"]),
                     "Acc-CI": _pct(width("accuracy")), "NDCG": _pct(r["ndcg"], 1), "NDCG-CI": _pct(width("ndcg"), 1),
                     "COE": _pct(r["coe"]), "ROE": _pct(r["roe"]), "θ (P)": theta,
                     "Acc @ θ": _pct(r["accuracy_at_threshold"]), "Full Acc": _pct(r["accuracy_full"], 1),
                     "Full NDCG": _pct(r["ndcg_full"], 1)})
    cols = ["Set", "Embedding Model", "Acc", "Acc-CI", "NDCG", "NDCG-CI", "COE", "ROE", "θ (P)", "Acc @ θ", "Full Acc",
            "Full NDCG"]
    return pl.DataFrame(rows, schema={c: pl.String for c in cols}, orient="row")


def table3(summary: pl.DataFrame, isotropy: pl.DataFrame, k: int, transforms: list[str]) -> pl.DataFrame:
    """The seed's Table III at k: per model, accuracy and (I1, IsoScore) of the corpus vectors,
    in percent, before and after each transformation."""
    acc = {(r["set"], r["model"], r["transform"]): r["accuracy"]
           for r in summary.filter(pl.col("k") == k).iter_rows(named=True)}
    iso = {(r["set"], r["model"], r["transform"]): (r["i1"], r["isoscore"])
           for r in isotropy.filter(pl.col("vectors") == "corpus").iter_rows(named=True)}
    names = ["none", *transforms]
    cols = ["Set", "Embedding Model"] + [c for t in names for c in (f"{TRANSFORM_NAMES.get(t, t)} Acc",
                                                                  f"{TRANSFORM_NAMES.get(t, t)} (I1, IsoScore)")]
    rows = []
    for s, m in dict.fromkeys((r["set"], r["model"]) for r in summary.iter_rows(named=True)):
        row = {"Set": s, "Embedding Model": m}
        for t in names:
            label = TRANSFORM_NAMES.get(t, t)
            i1, isc = iso.get((s, m, t), (None, None))
            row[f"{label} Acc"] = _pct(acc.get((s, m, t)))
            defined = [v is not None and math.isfinite(v) for v in (i1, isc)]
            row[f"{label} (I1, IsoScore)"] = "" if not any(defined) else \
                ", ".join(_pct(v) if ok else "undefined" for v, ok in zip((i1, isc), defined))
        rows.append(row)
    return pl.DataFrame(rows, schema={c: pl.String for c in cols}, orient="row")


def plot_accuracy(summary: pl.DataFrame, dataset: str, models: list[str], out_png: str) -> None:
    """Top-k accuracy (left) and NDCG (right) against k, with the draws' spread (2.5th-97.5th
    percentile, the paper's definition: not a confidence interval) as a band, per model."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    part = summary.filter((pl.col("set") == dataset) & (pl.col("transform") == "none"))
    for i, m in enumerate(models):
        rows = part.filter(pl.col("model") == m).sort("k")
        if not rows.height:
            continue
        k = rows["k"].to_numpy()
        for ax, stat in zip(axes, ("accuracy", "ndcg")):
            ax.plot(k, 100 * rows[stat].to_numpy(), color=f"C{i}", label=m)
            ax.fill_between(k, 100 * rows[f"{stat}_ci_low"].to_numpy(), 100 * rows[f"{stat}_ci_high"].to_numpy(),
                            color=f"C{i}", alpha=0.2, linewidth=0)
    draws = part["draws"][0] if part.height else 0
    size = part["draw_size"][0] if part.height else 0
    for ax, label in zip(axes, ("top-k accuracy (%)", "binary NDCG@k (%)")):
        ax.set_xlabel("k")
        ax.set_ylabel(label)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{dataset}: mean over {draws} draws of {size} questions; band: spread of the draws "
                 "(2.5th-97.5th percentile), not a confidence interval", fontsize=10)
    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def plot_similarities(entries: list[dict], dataset: str, k: int, out_png: str) -> None:
    """Per model, the distributions of C (question vs its answer), T (its top-k) and R (a random
    sentence): normalised histograms on a shared grid."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    mine = [e for e in entries if e["dataset"] == dataset]
    fig, axes = plt.subplots(1, max(1, len(mine)), figsize=(4.2 * max(1, len(mine)), 3.6), squeeze=False)
    bins = np.linspace(-1, 1, 201)
    for ax, e in zip(axes[0], mine):
        sims = pl.read_parquet(e["similarities"])
        topk = pl.read_parquet(e["topk"]).filter(pl.col("rank") <= k)
        sets = {"correct (C)": sims.filter(pl.col("kind") == "correct")["similarity"].to_numpy(),
                f"top-{k} (T)": topk["score"].to_numpy(),
                "random (R)": sims.filter(pl.col("kind") == "random")["similarity"].to_numpy()}
        for i, (label, values) in enumerate(sets.items()):
            values = values[np.isfinite(values)]
            if len(values):
                ax.hist(values, bins=bins, density=True, histtype="step", color=f"C{i}", label=f"{label}, n={len(values)}")
        ax.set_title(e["model"], fontsize=9)
        ax.set_xlabel("cosine similarity")
        ax.legend(fontsize=7)
    fig.suptitle(f"{dataset}: similarity distributions", fontsize=10)
    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def aggregate(entries: list[dict], settings: dict, seed: int, accuracy_out: str, isotropy_out: str,
              correlations_out: str, tables_dir: str, plots_dir: str, datasets: list[str], log) -> None:
    """entries: {dataset, model, summary, isotropy, similarities, topk} per (set, model)."""
    summaries = [pl.read_parquet(e["summary"]) for e in entries]
    summary = pl.concat(summaries) if summaries else pl.DataFrame(schema=SUMMARY_SCHEMA)
    isos = []
    for e in entries:
        frame = pl.read_parquet(e["isotropy"])
        isos.append(frame.with_columns(pl.lit(e["dataset"]).alias("set"), pl.lit(e["model"]).alias("model")))
    isotropy = pl.concat(isos, how="diagonal_relaxed") if isos else pl.DataFrame(
        schema={"set": pl.String, "model": pl.String, "transform": pl.String, "vectors": pl.String, "i1": pl.Float64,
                "isoscore": pl.Float64})
    k_table = settings["table_k"]
    base = summary.filter(pl.col("transform") == "none")
    extra = [c for c in base.columns if c not in TABLE_COLUMNS and c != "transform"]
    accuracy = base.select(TABLE_COLUMNS + extra)
    with atomic_path(accuracy_out) as tmp:
        accuracy.write_csv(tmp)
    at_k = summary.filter(pl.col("k") == k_table).select("set", "model", "transform", "accuracy", "accuracy_ci_low",
                                                          "accuracy_ci_high", "ndcg", "ndcg_ci_low", "ndcg_ci_high")
    iso_table = isotropy.join(at_k, on=["set", "model", "transform"], how="left").with_columns(
        pl.lit(k_table, pl.Int32).alias("k"))
    front = ["set", "model", "transform", "vectors", "n", "dim", "i1", "isoscore", "k", "accuracy", "accuracy_ci_low",
             "accuracy_ci_high", "ndcg", "ndcg_ci_low", "ndcg_ci_high"]
    iso_table = iso_table.select([c for c in front if c in iso_table.columns] +
                                 [c for c in iso_table.columns if c not in front])
    with atomic_path(isotropy_out) as tmp:
        iso_table.write_csv(tmp)
    corr = correlations(summary, isotropy, settings["correlations_k"], settings["bootstrap_b"], seed)
    with atomic_path(correlations_out) as tmp:
        corr.write_csv(tmp)
    tables = Path(tables_dir)
    for name, frame in (("retrieval_table1.csv", table1(corr)), ("retrieval_table2.csv", table2(summary, k_table)),
                        ("retrieval_table3.csv", table3(summary, isotropy, k_table, settings["transforms"]))):
        with atomic_path(tables / name) as tmp:
            frame.write_csv(tmp)
    models = list(dict.fromkeys(e["model"] for e in entries))
    for d in datasets:
        plot_accuracy(summary, d, [m for m in models if any(e["dataset"] == d and e["model"] == m for e in entries)],
                      str(Path(plots_dir) / d / "accuracy_vs_k.png"))
        plot_similarities(entries, d, k_table, str(Path(plots_dir) / d / "similarities.png"))
    log.info("%d (set, model) pairs -> %s, %s, %s; tables I-III in %s; plots in %s", len(entries), accuracy_out,
             isotropy_out, correlations_out, tables_dir, plots_dir)


# ---- the jobs of rules/retrieval.smk (workflow_scripts/jobs.py) ----
def run_retrieval_aggregate(job) -> None:
    out = job.output
    # the plots are <plots dir>/<set>/<name>.png
    plots_dir = os.path.dirname(os.path.dirname(out.plots[0])) if out.plots else None
    aggregate(pair_entries(job.params.pairs, job.input), job.params.settings, job.params.seed, out.accuracy,
              out.isotropy, out.correlations, os.path.dirname(out.accuracy), plots_dir, list(job.params.datasets),
              setup_logging(name="retrieval"))
