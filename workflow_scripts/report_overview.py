"""The model-by-probe overview: one row per model, one column per headline figure of each probe (with
its 95% interval), read from the probes' own tables (nothing is recomputed here), and a heat map.

A probe joins the overview through the `headlines` of its declaration (`<probe>/probe.py`,
workflow_scripts/probes.py): the table it reads (a file name under results/tables/), whether lower is
better, and a function that turns that table into headline rows (model, column, value, ci_low,
ci_high). rules/report.smk passes the tables of the probes that ran.

Usage: python -m workflow_scripts.report_overview --tables T.csv ... --models JSON --options JSON
           --out overview.csv --plot overview.png
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import polars as pl

from workflow_scripts.common import atomic_path
from workflow_scripts.probes import Headline, declarations

ROW = ("model", "column", "label", "value", "ci_low", "ci_high")


def headlines(probes: list[str] | None = None) -> list[tuple[str, Headline]]:
    """(probe, Headline) of every declared probe (or of the given ones), in report order."""
    return [(p.name, h) for p in declarations(stages=False) if probes is None or p.name in probes for h in p.headlines]


def headline_tables(probes: list[str]) -> list[str]:
    """The table file names the overview reads for these probes (in registry order)."""
    return list(dict.fromkeys(h.table for _, h in headlines(probes)))


def long_rows(tables: dict[str, str], options: dict) -> list[dict]:
    """Every headline figure of the given tables (file name -> path), in registry order."""
    out = []
    for probe, h in headlines():
        if h.table not in tables:
            continue
        frame = pl.read_csv(tables[h.table], infer_schema_length=None)
        for row in h.extract(frame, options):
            out.append({**row, "probe": probe, "lower_is_better": h.lower_is_better})
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


def not_better_than_baseline(rows: list[dict], differences: pl.DataFrame, models: dict[str, dict]) -> set[tuple[str, str]]:
    """(model, column) of the headline cells that are not significantly better than a surface-form
    baseline (family differences.SURFACE_FAMILY) they were compared with in the differences tables
    (rules/compare.smk): no comparison with that baseline on the cell's (probe, dataset, statistic)
    is significant (Holm) with this model the better one. A headline row links to the tables through
    its `dataset` and `statistic` (the probes' extractors add them); cells without them, cells of the
    baselines themselves and cells never compared with a baseline are not marked."""
    from workflow_scripts.differences import SURFACE_FAMILY

    baselines = {m for m, spec in models.items() if spec.get("family") == SURFACE_FAMILY}
    if not baselines or not differences.height:
        return set()
    verdicts: dict[tuple, list[bool]] = {}
    for d in differences.iter_rows(named=True):
        for model, base in ((d["model_a"], d["model_b"]), (d["model_b"], d["model_a"])):
            if base in baselines and model not in baselines:
                key = (d["probe"], d["dataset"], d["statistic"], model)
                verdicts.setdefault(key, []).append(bool(d["significant"]) and d["better"] == model)
    marked = set()
    for r in rows:
        if r.get("statistic") is None:
            continue
        verdict = verdicts.get((r["probe"], r["dataset"], r["statistic"], r["model"]))
        if verdict is not None and not all(verdict):
            marked.add((r["model"], r["column"]))
    return marked


def read_differences(paths: list[str]) -> pl.DataFrame:
    frames = [pl.read_csv(p, infer_schema_length=None, schema_overrides={"better": pl.String})
              for p in paths]
    frames = [f for f in frames if f.height]
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()


def plot(frame: pl.DataFrame, columns: list[dict], path: str, marked: set[tuple[str, str]] = frozenset()) -> None:
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
                mark = "\u00b0" if (models[j], columns[i]["column"]) in marked else ""
                ax.text(j, i, f"{values[i, j]:.2f}{mark}", ha="center", va="center", fontsize=8,
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
                 "\u2193 lower = better; colour: yellow = best; grey: not run or undefined"
                 + ("\n\u00b0 not significantly better than the surface-form baseline (tables/*_differences.csv)"
                    if marked else ""), fontsize=8, pad=24)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100, format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)


def build(tables: list[str], models: dict[str, dict], options: dict, out: str, plot_path: str | None = None,
          differences: list[str] = ()) -> pl.DataFrame:
    rows = long_rows({Path(t).name: t for t in tables}, options)
    frame, columns = overview_frame(rows, models)
    with atomic_path(out) as tmp:
        frame.write_csv(tmp, float_precision=6)
    if plot_path:
        plot(frame, columns, plot_path, not_better_than_baseline(rows, read_differences(list(differences)), models))
    return frame


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="*", default=[])
    ap.add_argument("--models", required=True, help="JSON: [[model, config entry], ...] in config order (or a mapping);"
                    " the family decides stand-ins")
    ap.add_argument("--options", default="{}", help="JSON: the probes' headline options (retrieval_k, settheory_measure)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--plot")
    ap.add_argument("--differences", nargs="*", default=[], help="the probes' differences tables: the plot marks "
                    "cells not significantly better than the surface-form baseline")
    a = ap.parse_args(argv)
    frame = build(a.tables, dict(json.loads(a.models)), json.loads(a.options), a.out, a.plot, a.differences)
    print(f"overview: {frame.height} models x {(frame.width - 3) // 3} headline figures")


if __name__ == "__main__":
    main(sys.argv[1:])
