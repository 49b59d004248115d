"""Montague modifier probe, the job of rule montague_aggregate: the share rows of every (dataset,
model) (the score jobs' shares.parquet, scores.py) as results/tables/montague_{single,pair,
nonsubsective}.csv, montague_tables.md (the seed's Tables 2-5 layout: models as rows, types as
columns; the k x k grids per model) and a heat map per (dataset, model) of the two k x k grids."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl

from workflow_scripts.bootstrap import LEVEL
from workflow_scripts.common import atomic_path, setup_logging
from workflow_scripts.figure_text import interval_text
from workflow_scripts.montague.columns import SHARE_SCHEMA
from workflow_scripts.montague.phrases import aan_key

TABLE_FILES = {"single": "montague_single.csv", "pair": "montague_pair.csv",
               "nonsubsective": "montague_nonsubsective.csv"}


def fmt_share(value, low, high) -> str:
    """'0.93 [0.90, 0.95]'; no interval where undefined; 'undefined' without a value."""
    return interval_text(value, low, high, digits=2)


def long_table(table: pl.DataFrame, test: str) -> pl.DataFrame:
    cols = ["dataset", "model", "key", "n", "consistency", "ci_low", "ci_high"]
    cols += ["kind"] if test == "single" else []
    cols += ["type1", "type2", "n_undefined"]
    if test == "pair":
        cols += ["mean_of_noun_means", "mean_of_noun_means_ci_low", "mean_of_noun_means_ci_high"]
    cols += ["n_units", "ci_method", "resampled", "bootstrap_b"]
    return table.filter(pl.col("test") == test).select(cols)


def _grid(rows: pl.DataFrame, types: list[str], column: str = "consistency") -> np.ndarray:
    cell = {(r["type1"], r["type2"]): r[column] for r in rows.iter_rows(named=True)}
    return np.array([[cell.get((a, b), np.nan) if cell.get((a, b)) is not None else np.nan for b in types]
                     for a in types], dtype=np.float64)


def markdown_tables(table: pl.DataFrame, datasets: list[str], models: list[str]) -> str:
    """The seed's Tables 2-5: models as rows, types as columns; the k x k grids once per model."""
    lines = ["# Montague modifier consistency (seed 004, Tables 2-5)", "",
             "Share of phrases (comparisons) that pass, pooled per key, with its bootstrapped 95% interval.",
             "Single-phrase test: a tie passes (<=); pair and non-subsectivity tests: a tie fails (<).", ""]
    for d in datasets:
        part = table.filter(pl.col("dataset") == d)
        if not part.height:
            continue
        types = list(dict.fromkeys(part.filter(pl.col("test") == "nonsubsective")["type1"].to_list()))
        shown = [m for m in models if m in set(part["model"].to_list())]
        r0 = part.row(0, named=True)
        lines += [f"## {d}", "", f"Intervals: B = {r0['bootstrap_b']}, resampled: {r0['resampled']}.", ""]

        def by_type(title, test, kind):
            out = [f"### {title}", "", "| model | " + " | ".join(types) + " |",
                   "|---|" + "---|" * len(types)]
            for m in shown:
                rows = {r["key"]: r for r in part.filter((pl.col("model") == m) & (pl.col("test") == test)
                                                         & (pl.col("kind") == kind)).iter_rows(named=True)}
                out.append(f"| {m} | " + " | ".join(fmt_share(rows[t]["consistency"], rows[t]["ci_low"],
                                                               rows[t]["ci_high"]) if t in rows else ""
                                                     for t in types) + " |")
            return out + [""]

        def grids(title, test, kind, rows_are):
            out = [f"### {title}", "", f"Rows: {rows_are[0]} type; columns: {rows_are[1]} type.", ""]
            for m in shown:
                rows = {r["key"]: r for r in part.filter((pl.col("model") == m) & (pl.col("test") == test)
                                                         & (pl.col("kind") == kind)).iter_rows(named=True)}
                out += [f"**{m}**", "", f"| {rows_are[0]} \\ {rows_are[1]} | " + " | ".join(types) + " |",
                        "|---|" + "---|" * len(types)]
                for a in types:
                    cells = []
                    for b in types:
                        r = rows.get(aan_key(a, b))
                        cells.append(fmt_share(r["consistency"], r["ci_low"], r["ci_high"]) if r else "")
                    out.append(f"| {a} | " + " | ".join(cells) + " |")
                out.append("")
            return out

        lines += by_type("Table 2: single-phrase intersectivity, AN", "single", "AN")
        lines += grids("Table 3: single-phrase intersectivity, AAN (outer a1 x inner a2)", "single", "AAN",
                       ("outer (a1)", "inner (a2)"))
        lines += grids("Table 4: phrase-pair intersectivity, d(a1 n, a1 n') < d(a2 n, a2 n')", "pair", "pair",
                       ("a1", "a2"))
        lines += by_type("Table 5: non-subsectivity, d(AN, A) < d(AN, N)", "nonsubsective", "AN")
        lines += ["The reference code's aggregation of Table 4 (mean of per-noun means, a comparison counted "
                  "under the noun that comes first) is the `mean_of_noun_means` column of montague_pair.csv.", ""]
        undefined = part.group_by("model", maintain_order=True).agg(pl.col("n_undefined").sum())
        undefined = undefined.filter(pl.col("n_undefined") > 0)
        if undefined.height:
            lines += ["Undefined comparisons (a zero-norm vector, e.g. a word the model does not know), counted "
                      "and left out: " + ", ".join(f"{m} {n}" for m, n in undefined.iter_rows()) + ".", ""]
    return "\n".join(lines) + "\n"


def plot_heatmaps(table: pl.DataFrame, dataset: str, model: str, out_png: str, out_svg: str) -> None:
    """The two k x k grids of one model: single-phrase AAN (outer x inner) and phrase pairs (a1 x a2)."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "montague-heatmap"  # reruns give identical files
    import matplotlib.pyplot as plt
    part = table.filter((pl.col("dataset") == dataset) & (pl.col("model") == model))
    types = list(dict.fromkeys(part.filter(pl.col("test") == "nonsubsective")["type1"].to_list()))
    panels = [("single-phrase intersectivity (AAN)", part.filter((pl.col("test") == "single")
                                                                  & (pl.col("kind") == "AAN")), "outer a1", "inner a2"),
              ("phrase-pair intersectivity", part.filter(pl.col("test") == "pair"), "a1", "a2")]
    k = len(types)
    fig, axes = plt.subplots(1, 2, figsize=(4.0 + 2.2 * k, 1.6 + 0.95 * k))
    for ax, (title, rows, ylab, xlab) in zip(axes, panels):
        grid, low, high = (_grid(rows, types, c) for c in ("consistency", "ci_low", "ci_high"))
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis")
        for i in range(k):
            for j in range(k):
                v = grid[i, j]
                text = "n/a" if not np.isfinite(v) else f"{v:.2f}"
                if np.isfinite(low[i, j]) and np.isfinite(high[i, j]):
                    text += f"\n[{low[i, j]:.2f}, {high[i, j]:.2f}]"
                ax.text(j, i, text, ha="center", va="center", fontsize=7,
                        color="black" if np.isfinite(v) and v > 0.6 else "white")
        ax.set_xticks(range(k))
        ax.set_xticklabels(types, rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(k))
        ax.set_yticklabels(types, fontsize=8)
        ax.set_xlabel(xlab)
        ax.set_ylabel(ylab)
        ax.set_title(title, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    r0 = part.row(0, named=True) if part.height else {"bootstrap_b": 0, "resampled": "?"}
    fig.suptitle(f"{dataset} / {model}: consistency, {int(100 * LEVEL)}% bootstrap CI (B={r0['bootstrap_b']}, "
                 f"resampled: {r0['resampled']})", fontsize=10)
    fig.tight_layout()
    for path in (out_png, out_svg):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix[1:], dpi=110,
                        metadata={"Date": None} if str(path).endswith(".svg") else None)
    plt.close(fig)


def aggregate(entries: list[dict], tables_dir: str, plots_dir: str, datasets: list[str], models: list[str],
              log) -> pl.DataFrame:
    frames = []
    seen = set()
    for e in entries:
        if (e["dataset"], e["model"]) in seen:
            raise ValueError(f"two share files for dataset {e['dataset']!r} and model {e['model']!r}")
        seen.add((e["dataset"], e["model"]))
        frame = pl.read_parquet(e["shares"])
        if set(frame["dataset"].unique()) != {e["dataset"]} or set(frame["model"].unique()) != {e["model"]}:
            raise ValueError(f"{e['shares']}: holds another dataset or model than {e['dataset']}/{e['model']}")
        frames.append(frame)
    table = pl.concat(frames) if frames else pl.DataFrame(schema=SHARE_SCHEMA)
    rank_d = {d: i for i, d in enumerate(datasets)}
    rank_m = {m: i for i, m in enumerate(models)}
    table = table.with_row_index("_i").with_columns(
        pl.col("dataset").replace_strict(rank_d, return_dtype=pl.Int64).alias("_d"),
        pl.col("model").replace_strict(rank_m, return_dtype=pl.Int64).alias("_m")).sort("_d", "_m", "_i").drop(
        "_d", "_m", "_i")
    for test, name in TABLE_FILES.items():
        with atomic_path(Path(tables_dir) / name) as tmp:
            long_table(table, test).write_csv(tmp)
    with atomic_path(Path(tables_dir) / "montague_tables.md") as tmp:
        tmp.write_text(markdown_tables(table, datasets, models), encoding="utf-8")
    for e in entries:
        base = Path(plots_dir) / e["dataset"] / e["model"]
        plot_heatmaps(table, e["dataset"], e["model"], f"{base}.png", f"{base}.svg")
    log.info("%d (dataset, model) pairs -> tables in %s, heat maps in %s", len(entries), tables_dir, plots_dir)
    return table


# ---- the jobs of rules/montague.smk (workflow_scripts/jobs.py) ----
def run_montague_aggregate(job) -> None:
    """params.entries: {dataset, model, shares} per share file, in the input's order."""
    # plots/montague/<dataset>/<model>.png: two levels up from any of them
    plots_dir = os.path.dirname(os.path.dirname(job.output.plots[0]))
    aggregate(job.params.entries, os.path.dirname(job.output.layout), plots_dir, job.params.datasets,
              job.params.models, setup_logging(name="montague"))
