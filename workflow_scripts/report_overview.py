"""The model-by-probe overview: one row per model, one column per headline figure of each probe (with
its 95% interval), read from the probes' own tables (nothing is recomputed here), and a heat map.

Adding a probe to the overview is one entry in HEADLINES: the table it reads (a file name under
results/tables/), whether lower is better, and a function that turns that table into headline rows
(model, column, value, ci_low, ci_high). rules/report.smk passes the tables of the probes that ran.

Usage: python -m workflow_scripts.report_overview --tables T.csv ... --models JSON --options JSON
           --out overview.csv --plot overview.png
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import polars as pl

from workflow_scripts.common import atomic_path

ROW = ("model", "column", "label", "value", "ci_low", "ci_high")


def _rows(frame: pl.DataFrame, column: Callable[[dict], str], label: Callable[[dict], str], value: str,
          low: str, high: str) -> list[dict]:
    out = []
    for r in frame.iter_rows(named=True):
        out.append({"model": r["model"], "column": column(r), "label": label(r), "value": _num(r[value]),
                    "ci_low": _num(r[low]), "ci_high": _num(r[high])})
    return out


def _num(v) -> float | None:
    if v is None or v == "":
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def csc(frame: pl.DataFrame, options: dict) -> list[dict]:
    """CSC overlap per corpus and condition (lower = better separation of meaning from form)."""
    return _rows(frame, lambda r: f"csc_{r['corpus']}_{r['condition']}",
                 lambda r: f"CSC {r['corpus']} {r['condition'].replace('grammatical_negation', 'gram. negation')}", "overlap", "overlap_ci_low", "overlap_ci_high")


def triplets(frame: pl.DataFrame, options: dict) -> list[dict]:
    """Triplet accuracy per dataset."""
    return _rows(frame, lambda r: f"triplets_{r['dataset']}", lambda r: f"triplets {r['dataset']} accuracy",
                 "accuracy", "accuracy_ci_low", "accuracy_ci_high")


def montague_test(test: str, key: str, kind: str | None = None):
    """Montague consistency of one test at one key (the per-key shares are the probe's figures; there
    is no pooled share per test, so the overview shows the key the test is about)."""
    def extract(frame: pl.DataFrame, options: dict) -> list[dict]:
        rows = frame.filter(pl.col("key") == key)
        if kind is not None and "kind" in rows.columns:
            rows = rows.filter(pl.col("kind") == kind)
        return _rows(rows, lambda r: f"montague_{r['dataset']}_{test}_{key.replace('|', '_')}",
                     lambda r: f"Montague {r['dataset']} {test} ({key})", "consistency", "ci_low", "ci_high")
    extract.__doc__ = f"Montague {test} consistency, key {key}."
    return extract


def retrieval(frame: pl.DataFrame, options: dict) -> list[dict]:
    """Retrieval accuracy@k and NDCG@k per set, at the probe's table k."""
    k = int(options.get("retrieval_k", 5))
    rows = frame.filter(pl.col("k").cast(pl.Int64) == k).rename({"set": "dataset"})
    return (_rows(rows, lambda r: f"retrieval_{r['dataset']}_acc@{k}", lambda r: f"retrieval {r['dataset']} accuracy@{k}",
                  "accuracy", "accuracy_ci_low", "accuracy_ci_high")
            + _rows(rows, lambda r: f"retrieval_{r['dataset']}_ndcg@{k}", lambda r: f"retrieval {r['dataset']} NDCG@{k}",
                    "ndcg", "ndcg_ci_low", "ndcg_ci_high"))


def settheory(frame: pl.DataFrame, options: dict) -> list[dict]:
    """Set-theoretic C1 and C3 shares of the (T,T) case per sample set, under the headline measure."""
    measure = options.get("settheory_measure", "cosine")
    rows = frame.filter(pl.col("criterion").is_in(["c1", "c3"]) & (pl.col("case") == "T,T")
                        & (pl.col("measure") == measure))
    return _rows(rows, lambda r: f"settheory_{r['sampleset']}_{r['criterion']}_TT",
                 lambda r: f"set theory {r['sampleset']} {r['criterion'].upper()} (T,T)", "share", "ci_low", "ci_high")


def domain_shift(frame: pl.DataFrame, options: dict) -> list[dict]:
    """Domain shift per dataset: overlap of the within-domain-specific and the between-domains
    similarity distributions (lower = the model sets the domain's texts further apart)."""
    rows = frame.filter((pl.col("a") == "within_specific") & (pl.col("b") == "between"))
    return _rows(rows, lambda r: f"domain_shift_{r['dataset']}_spec_between",
                 lambda r: f"domain shift {r['dataset']} overlap spec/between", "overlap", "overlap_ci_low",
                 "overlap_ci_high")


@dataclass(frozen=True)
class Headline:
    probe: str            # the probe (its report category is report_pages.CATEGORIES[probe])
    table: str            # the probe's table it reads, a file name under results/tables/
    extract: Callable[[pl.DataFrame, dict], list[dict]]
    lower_is_better: bool = False


# The registry: one entry per (probe, table). A new probe adds its entries here (README, "Probes").
HEADLINES = [
    Headline("csc", "csc_overlap.csv", csc, lower_is_better=True),
    Headline("triplets", "triplets_accuracy.csv", triplets),
    Headline("montague", "montague_single.csv", montague_test("single", "intersective", kind="AN")),
    Headline("montague", "montague_pair.csv", montague_test("pair", "intersective|privative")),
    Headline("montague", "montague_nonsubsective.csv", montague_test("nonsubsective", "privative")),
    Headline("retrieval", "retrieval_accuracy.csv", retrieval),
    Headline("settheory", "settheory_shares.csv", settheory),
    Headline("domain_shift", "domain_shift.csv", domain_shift),
]


def headline_tables(probes: list[str]) -> list[str]:
    """The table file names the overview reads for these probes (in registry order)."""
    return [h.table for h in HEADLINES if h.probe in probes]


def long_rows(tables: dict[str, str], options: dict) -> list[dict]:
    """Every headline figure of the given tables (file name -> path), in registry order."""
    out = []
    for h in HEADLINES:
        if h.table not in tables:
            continue
        frame = pl.read_csv(tables[h.table], infer_schema_length=None)
        for row in h.extract(frame, options):
            out.append({**row, "probe": h.probe, "lower_is_better": h.lower_is_better})
    return out


def overview_frame(rows: list[dict], models: dict[str, dict]) -> tuple[pl.DataFrame, list[dict]]:
    """The wide table (model, family, stand_in, then value/_ci_low/_ci_high per headline column) and
    the columns' descriptions (column, label, probe, lower_is_better) in order."""
    columns: dict[str, dict] = {}
    cells: dict[tuple[str, str], dict] = {}
    for r in rows:
        columns.setdefault(r["column"], {k: r[k] for k in ("column", "label", "probe", "lower_is_better")})
        cells[(r["model"], r["column"])] = r
    # models in config order; a model no probe scored (no row in any table) has no row
    seen = {r["model"] for r in rows}
    names = [m for m in models if m in seen] + sorted(seen - set(models))
    data: dict[str, list] = {"model": names,
                             "family": [models.get(m, {}).get("family") for m in names],
                             "stand_in": [models.get(m, {}).get("family") == "hashing" for m in names]}
    for col in columns:
        for suffix, key in (("", "value"), ("_ci_low", "ci_low"), ("_ci_high", "ci_high")):
            data[col + suffix] = [cells.get((m, col), {}).get(key) for m in names]
    schema = {"model": pl.String, "family": pl.String, "stand_in": pl.Boolean,
              **{c: pl.Float64 for c in data if c not in ("model", "family", "stand_in")}}
    return pl.DataFrame(data, schema=schema), list(columns.values())


def plot(frame: pl.DataFrame, columns: list[dict], path: str) -> None:
    """Heat map: a row per headline figure (grouped by probe), a column per model, coloured by how
    good the figure is (1 - value where lower is better), annotated with the figure itself;
    stand-in models are labelled as such."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    models = frame["model"].to_list()
    stand = frame["stand_in"].to_list()
    n_rows, n_cols = max(len(columns), 1), max(len(models), 1)
    values = np.full((n_rows, n_cols), np.nan)
    for i, c in enumerate(columns):
        v = np.array([np.nan if x is None else x for x in frame[c["column"]].to_list()], dtype=float)
        values[i, : len(v)] = v
    goodness = values.copy()
    for i, c in enumerate(columns):
        if c["lower_is_better"]:
            goodness[i] = 1 - goodness[i]
    fig, ax = plt.subplots(figsize=(3.2 + 1.05 * n_cols, 1.6 + 0.27 * n_rows))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#dddddd")
    ax.imshow(np.ma.masked_invalid(goodness), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    for i in range(len(columns)):
        for j in range(len(models)):
            if not np.isnan(values[i, j]):
                ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if goodness[i, j] < 0.6 else "black")
    ax.set_yticks(range(len(columns)))
    ax.set_yticklabels([c["label"] + (" \u2193" if c["lower_is_better"] else "") for c in columns], fontsize=8)
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels([m + ("\n[stand-in]" if s else "") for m, s in zip(models, stand)], fontsize=8)
    ax.xaxis.tick_top()
    probes = [c["probe"] for c in columns]
    for i in range(1, len(probes)):
        if probes[i] != probes[i - 1]:
            ax.axhline(i - 0.5, color="white", linewidth=2)
    ax.set_title("Headline figure per probe and model (95% intervals: tables/overview.csv)\n"
                 "\u2193 lower = better; colour: yellow = best; grey: not run or undefined", fontsize=8, pad=24)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100, format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)


def build(tables: list[str], models: dict[str, dict], options: dict, out: str, plot_path: str | None = None) -> pl.DataFrame:
    rows = long_rows({Path(t).name: t for t in tables}, options)
    frame, columns = overview_frame(rows, models)
    with atomic_path(out) as tmp:
        frame.write_csv(tmp, float_precision=6)
    if plot_path:
        plot(frame, columns, plot_path)
    return frame


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="*", default=[])
    ap.add_argument("--models", required=True, help="JSON: [[model, config entry], ...] in config order (or a mapping);"
                    " the family decides stand-ins")
    ap.add_argument("--options", default="{}", help="JSON: retrieval_k, settheory_measure")
    ap.add_argument("--out", required=True)
    ap.add_argument("--plot")
    a = ap.parse_args(argv)
    frame = build(a.tables, dict(json.loads(a.models)), json.loads(a.options), a.out, a.plot)
    print(f"overview: {frame.height} models x {(frame.width - 3) // 3} headline figures")


if __name__ == "__main__":
    main(sys.argv[1:])
