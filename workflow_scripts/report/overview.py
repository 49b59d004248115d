"""The model-by-probe overview: one row per model, one column per headline figure of each probe (with
its 95% interval), read from the probes' own tables (nothing is recomputed here), and a heat map.

A probe joins the overview through the `headlines` of its declaration (`<probe>/probe.py`,
workflow_scripts/probes.py): the table it reads (a file name under results/tables/), whether lower is
better, and a function that turns that table into headline rows (model, column, value, ci_low,
ci_high). rules/report.smk passes the tables of the probes that ran.

The first screen (report/overview.json, read by report.md, the HTML report's first page and the
console summary `python -m workflow_scripts.report.console`): a row per headline figure with which
direction is better (or none, where the probe claims no better side: no verdict) and its n (the
independent units behind the figure, the ones its bootstrap resamples, from the probe's table) with
its unit, a cell per model, and marks on the cells that must not be read as findings (MARKS): an interval of zero width,
an n below `report.min_n`, a figure at the ceiling or floor of its statistic's range, a CSC overlap
that separates in the wrong direction, a figure not significantly better than the baseline; and each
cell's verdict against the surface-form baseline in words (baseline_verdicts: better, no difference,
worse, wrong direction, no verdict), which report.md, the HTML report and the console show as a long
table (verdict_rows), a row per figure and model. `demo`: every
input of the run is one of the small samples shipped under the workflow's resources/.
"""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from workflow_scripts.common import atomic_path
from workflow_scripts.probes import Headline, declarations

ROW = ("model", "column", "label", "value", "ci_low", "ci_high")

# the marks of the first screen, with what each means (the legend)
MARKS = {
    "Z": "interval of zero width: the resamples never differ, so it says nothing about uncertainty",
    "N": "n below report.min_n ({min_n}): too few independent units behind the figure for a conclusion",
    "C": "at the ceiling or floor of the statistic's range: the probe cannot tell models apart there",
    "W": "separates in the wrong direction (CSC): the negated variants are on average no farther from the original "
         "than the fuzzed ones (gap = mean fuzzed - mean negated similarity <= 0, AUC <= 0.5 or near it; "
         "tables/csc_overlap.csv), so a low overlap is no credit; never counted better than the baseline",
    "B": "not significantly better than the surface-form baseline (paired difference; its p-value adjusted with Holm "
         "within the probe's confirmatory family, each model vs the baseline on the headline figures, the interval "
         "not adjusted; tables/<probe>_differences.csv). A figure whose probe declares no better side (no direction) "
         "gets no verdict and no B",
}
MARK_ORDER = "ZNCWB"
DEMO_BANNER = ("Demo inputs: every input of this run is a small sample shipped in the workflow's resources/ "
               "folder. These numbers check that the workflow runs end to end; they are not for conclusions "
               "about the models. Run your own data (README, 'Your own corpus') for figures to report.")
# tolerance for "zero width" and "at the bound": the tables are written with 6 or more decimals
EPS = 1e-9


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
            out.append({"n": None, "unit": h.unit, "interval": "", **row, "probe": probe,
                        "lower_is_better": h.lower_is_better, "bounds": list(h.bounds)})
    return out


def marks(value, ci_low, ci_high, n, bounds, min_n: int) -> str:
    """The first screen's marks of one cell (MARKS): Z zero-width interval, N n below min_n, C at the
    ceiling or floor of `bounds`. A cell without a figure has none."""
    if value is None:
        return ""
    out = ""
    if ci_low is not None and ci_high is not None and abs(ci_high - ci_low) <= EPS * max(1.0, abs(value)):
        out += "Z"
    if n is not None and n < min_n:
        out += "N"
    if any(b is not None and abs(value - b) <= EPS for b in bounds):
        out += "C"
    return out


def first_screen(rows: list[dict], frame: pl.DataFrame, columns: list[dict], min_n: int, demo: bool,
                 baseline_marked: set[tuple[str, str]] = frozenset(),
                 verdicts: dict[tuple[str, str], dict] | None = None) -> dict:
    """The first screen's content: models (config order, stand-ins flagged), a row per headline figure
    (label, direction, n range, interval notes) with a cell per model (value, interval, n, marks, and
    its verdict against the surface-form baseline: baseline_verdicts), the legends and whether the run
    is on the demo inputs."""
    verdicts = verdicts or {}
    cells = {(r["model"], r["column"]): r for r in rows}
    models = [{"model": m, "stand_in": bool(s)} for m, s in zip(frame["model"], frame["stand_in"])]
    out_rows = []
    for c in columns:
        row_cells, ns, notes, units = {}, [], [], []
        for m in frame["model"]:
            r = cells.get((m, c["column"]))
            if r is None:
                continue
            row_cells[m] = {k: r.get(k) for k in ("value", "ci_low", "ci_high", "n")}
            row_cells[m]["unit"] = r.get("unit")
            row_cells[m]["verdict"] = verdicts.get((m, c["column"]), {"verdict": NO_VERDICT, "reason": ""})
            row_cells[m]["marks"] = marks(r["value"], r["ci_low"], r["ci_high"], r.get("n"), r["bounds"], min_n)
            if r.get("wrong_direction"):
                row_cells[m]["marks"] += "W"
            if (m, c["column"]) in baseline_marked:
                row_cells[m]["marks"] += "B"
            if r.get("n") is not None:
                ns.append(r["n"])
                if r.get("unit") and r["unit"] not in units:
                    units.append(r["unit"])
            if r.get("interval") and r["interval"] not in notes:
                notes.append(r["interval"])
        out_rows.append({"column": c["column"], "label": c["label"], "probe": c["probe"],
                         "dataset": c.get("dataset"), "statistic": c.get("statistic"),
                         "lower_is_better": c["lower_is_better"],
                         "better": better_side(c["lower_is_better"]),
                         "n": (None if not ns else str(min(ns)) if min(ns) == max(ns) else f"{min(ns)}-{max(ns)}"),
                         # what n counts: the unit the figure's bootstrap resamples
                         "unit": " or ".join(units),
                         "interval": "; ".join(notes), "cells": row_cells})
    used = sorted({ch for r in out_rows for cell in r["cells"].values() for ch in cell["marks"]}, key=MARK_ORDER.index)
    return {"demo": demo, "banner": DEMO_BANNER if demo else "", "min_n": min_n, "models": models, "rows": out_rows,
            "legend": {k: v.format(min_n=min_n) for k, v in MARKS.items()}, "marks_used": used,
            "verdict_legend": dict(VERDICT_MEANINGS)}


def better_side(lower_is_better: bool | None) -> str:
    """`lower`, `higher`, or `none` where the probe declares no better side (no verdict)."""
    return "none" if lower_is_better is None else "lower" if lower_is_better else "higher"


def arrow(lower_is_better: bool | None) -> str:
    """The first screen's `better` cell."""
    return {"lower": "\u2193 lower", "higher": "\u2191 higher", "none": "no direction"}[better_side(lower_is_better)]


def n_text(row: dict) -> str:
    """A first-screen row's n with what it counts (`70 sentences`); empty where unknown."""
    if not row.get("n"):
        return ""
    return f"{row['n']} {row['unit']}" if row.get("unit") else str(row["n"])


def estimate_text(value: float, low: float | None, high: float | None, digits: int = 3, signed: bool = False) -> str:
    """`value [low, high]` (the interval left out where either end is missing); `signed`: +/- shown."""
    number = f"{{:{'+' if signed else ''}.{digits}f}}".format
    return number(value) + (f" [{number(low)}, {number(high)}]" if low is not None and high is not None else "")


def cell_text(cell: dict | None, digits: int = 3) -> str:
    """`value [low, high] MARKS` (empty where the model has no figure)."""
    if not cell or cell.get("value") is None:
        return ""
    text = estimate_text(cell["value"], cell.get("ci_low"), cell.get("ci_high"), digits)
    return text + (f" {cell['marks']}" if cell.get("marks") else "")


VERDICT_HEAD = ("figure", "model", "value [95% interval]", "n", "verdict vs baseline",
                "difference vs baseline [95% interval]", "p adjusted", "marks")
VERDICT_COLUMN = VERDICT_HEAD.index("verdict vs baseline")


def verdict_text(verdict: dict | None) -> str:
    """`better`, `no difference`, ..., `no verdict (baseline)`: the same words on every screen."""
    verdict = verdict or {"verdict": NO_VERDICT}
    return verdict["verdict"] + (f" ({verdict['reason']})" if verdict.get("reason") else "")


def difference_text(verdict: dict | None, digits: int = 3) -> str:
    """`+0.300 [+0.200, +0.400]`: model - baseline with its paired (unadjusted) interval."""
    if not verdict or verdict.get("difference") is None:
        return ""
    return estimate_text(verdict["difference"], verdict.get("ci_low"), verdict.get("ci_high"), digits, signed=True)


def p_text(p: float | None) -> str:
    """An adjusted p; an exact p can be tiny, so never shown as 0.000."""
    return "" if p is None else f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def verdict_rows(screen: dict) -> dict[str, list[list[str]]]:
    """The first screen's long table, grouped by probe: a row (VERDICT_HEAD) per headline figure and
    model that has it, so every model is readable without scrolling sideways."""
    names = {m["model"]: m["model"] + (" (stand-in)" if m["stand_in"] else "") for m in screen["models"]}
    groups: dict[str, list[list[str]]] = {}
    for r in screen["rows"]:
        label = r["label"] + ("*" if r.get("interval") else "") + f" ({arrow(r['lower_is_better'])})"
        for model, name in names.items():
            cell = r["cells"].get(model)
            if not cell or cell.get("value") is None:
                continue
            verdict = cell.get("verdict")
            n = n_text({"n": cell.get("n"), "unit": cell.get("unit") or r.get("unit")})
            groups.setdefault(r["probe"], []).append([
                label, name, cell_text({**cell, "marks": ""}), n, verdict_text(verdict), difference_text(verdict),
                p_text((verdict or {}).get("p_adjusted")), cell.get("marks", "")])
    return groups


def overview_frame(rows: list[dict], models: dict[str, dict]) -> tuple[pl.DataFrame, list[dict]]:
    """The wide table (model, family, stand_in, then value/_ci_low/_ci_high per headline column) and
    the columns' descriptions (column, label, probe, lower_is_better) in order."""
    columns: dict[str, dict] = {}
    cells: dict[tuple[str, str], dict] = {}
    for r in rows:
        columns.setdefault(r["column"], {**{k: r[k] for k in ("column", "label", "probe", "lower_is_better")},
                                         # the replicates' statistic behind the figure (differences tables)
                                         "dataset": r.get("dataset"), "statistic": r.get("statistic")})
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
    baseline (family paired_statistics.SURFACE_FAMILY) they were compared with in the differences tables
    (rules/differences.smk): no comparison with that baseline on the cell's (probe, dataset, statistic)
    is significant (Holm within the probe's confirmatory family) with this model the better one.
    Only confirmatory rows decide (issue 32): a comparison the table files as exploratory is never a
    verdict, so a cell compared with the baseline only in exploratory rows is marked (not shown to
    be better). A headline row links to the tables through its `dataset` and `statistic` (the
    probes' extractors add them); cells without them, cells of the baselines themselves and cells
    never compared with a baseline are not marked, except a cell that separates in the wrong
    direction (`wrong_direction`, mark W), which is always marked when the run has a baseline."""
    from workflow_scripts.paired_statistics import CONFIRMATORY, SURFACE_FAMILY

    baselines = {m for m, spec in models.items() if spec.get("family") == SURFACE_FAMILY}
    if not baselines:
        return set()
    # a figure whose probe declares no better side has no verdict: never marked, whatever its
    # (exploratory) comparisons say
    rows = [r for r in rows if r.get("lower_is_better", False) is not None]
    # a figure that separates in the wrong direction (W) is never better than the baseline, whatever
    # the paired difference of its unsigned statistic says
    wrong_way = {(r["model"], r["column"]) for r in rows if r.get("wrong_direction") and r["model"] not in baselines}
    if not differences.height:
        return wrong_way
    verdicts: dict[tuple, list[bool]] = {}
    for d in differences.iter_rows(named=True):
        # a table written before families (no `family` column): every row was in Holm's family
        confirmatory = d.get("family", CONFIRMATORY) == CONFIRMATORY
        for model, base in ((d["model_a"], d["model_b"]), (d["model_b"], d["model_a"])):
            if base in baselines and model not in baselines:
                key = (d["probe"], d["dataset"], d["statistic"], model)
                verdicts.setdefault(key, []).append(confirmatory and bool(d["significant"]) and d["better"] == model)
    marked = set(wrong_way)
    for r in rows:
        if r.get("statistic") is None:
            continue
        verdict = verdicts.get((r["probe"], r["dataset"], r["statistic"], r["model"]))
        if verdict is not None and not all(verdict):
            marked.add((r["model"], r["column"]))
    return marked


# The verdict of one headline cell against the surface-form baseline (issue 32, point 8): the first
# screen says it in words, so "not better" (mark B) is no longer the only signal
BETTER, WORSE, NO_DIFFERENCE, WRONG_DIRECTION, NO_VERDICT = (
    "better", "worse", "no difference", "wrong direction", "no verdict")
VERDICT_MEANINGS = {
    BETTER: "significantly better than the surface-form baseline (Holm within the probe's confirmatory family)",
    NO_DIFFERENCE: "not significantly different from the baseline: not shown better, not shown worse",
    WORSE: "significantly worse than the baseline",
    WRONG_DIRECTION: "CSC: separates the wrong way (mark W), so never better, whatever the difference says",
    NO_VERDICT: "none is possible, the reason beside it: baseline (the baseline itself), no baseline (none in "
                "the run), no direction (the probe claims no better side), not compared (no confirmatory "
                "comparison with the baseline), no p (the comparison has no p-value), tie (significant, neither "
                "side better)",
}


def _finite(value) -> float | None:
    """A float, or None for a missing or NaN value (the first screen is JSON: no NaN in it)."""
    return None if value is None or value != value else float(value)


def _against_baseline(d: dict, model: str) -> dict:
    """The difference model - baseline of one differences row, whichever side the model is on."""
    sign = 1.0 if d["model_a"] == model else -1.0
    low, high = _finite(d["ci_low"]), _finite(d["ci_high"])
    if sign < 0:
        low, high = (None if high is None else -high), (None if low is None else -low)
    difference = _finite(d["difference"])
    return {"baseline": d["model_b"] if sign > 0 else d["model_a"],
            "difference": None if difference is None else sign * difference, "ci_low": low, "ci_high": high,
            # a table written before families holds Holm's p as p_holm
            "p_adjusted": _finite(d.get("p_adjusted", d.get("p_holm"))), "test": d.get("test")}


def confirmatory_rows(differences: pl.DataFrame, baselines: list[str]) -> dict[tuple, dict]:
    """(probe, dataset, statistic, model) -> its confirmatory row against the first baseline (config
    order) it was compared with: the rows the B mark reads; exploratory rows decide nothing."""
    from workflow_scripts.paired_statistics import CONFIRMATORY

    found: dict[tuple, tuple[int, dict]] = {}
    if not differences.height:
        return {}
    for d in differences.iter_rows(named=True):
        if d.get("family", CONFIRMATORY) != CONFIRMATORY:
            continue
        for model, base in ((d["model_a"], d["model_b"]), (d["model_b"], d["model_a"])):
            if base in baselines and model not in baselines:
                key, rank = (d["probe"], d["dataset"], d["statistic"], model), baselines.index(base)
                if key not in found or rank < found[key][0]:
                    found[key] = (rank, d)
    return {key: row for key, (_, row) in found.items()}


def verdict_of(row: dict, compared: dict | None, baselines: list[str]) -> dict:
    """The verdict of one headline cell (VERDICT_MEANINGS) with the paired difference model -
    baseline, its unadjusted 95% interval and Holm's adjusted p; `reason` says why there is none."""
    out = {"verdict": NO_VERDICT, "reason": "", "baseline": None, "difference": None, "ci_low": None,
           "ci_high": None, "p_adjusted": None, "test": None}
    if not baselines:
        return {**out, "reason": "no baseline"}
    if row["model"] in baselines:
        return {**out, "reason": "baseline"}
    if row.get("lower_is_better", False) is None:
        return {**out, "reason": "no direction"}
    if compared is not None:
        out.update(_against_baseline(compared, row["model"]))
    if row.get("wrong_direction"):  # W outranks any difference of the unsigned overlap
        return {**out, "verdict": WRONG_DIRECTION}
    if compared is None:
        return {**out, "reason": "not compared"}
    if out["p_adjusted"] is None or compared.get("significant") is None:
        return {**out, "reason": "no p"}
    if not bool(compared["significant"]):
        return {**out, "verdict": NO_DIFFERENCE}
    winner = compared.get("better")
    if winner not in (row["model"], out["baseline"]):  # significant, yet neither side better: a tie
        return {**out, "reason": "tie"}
    return {**out, "verdict": BETTER if winner == row["model"] else WORSE}


def baseline_verdicts(rows: list[dict], differences: pl.DataFrame, models: dict[str, dict]) -> dict[tuple[str, str], dict]:
    """(model, column) -> verdict_of for every headline cell, read from the confirmatory rows of the
    differences tables (a headline row links to them through its probe, `dataset` and `statistic`)."""
    from workflow_scripts.paired_statistics import SURFACE_FAMILY

    baselines = [m for m, spec in models.items() if spec.get("family") == SURFACE_FAMILY]
    compared = confirmatory_rows(differences, baselines)
    return {(r["model"], r["column"]): verdict_of(r, compared.get((r["probe"], r.get("dataset"), r.get("statistic"),
                                                                   r["model"])), baselines)
            for r in rows}


def _as_boolean(column: pl.Expr) -> pl.Expr:
    """true/false (any case) as booleans, anything else null, whatever type the CSV reader gave."""
    text = column.cast(pl.String).str.to_lowercase()
    return pl.when(text == "true").then(True).when(text == "false").then(False).otherwise(None).alias(
        column.meta.output_name())


def read_differences(paths: list[str]) -> pl.DataFrame:
    frames = [pl.read_csv(p, infer_schema_length=None, schema_overrides={"better": pl.String})
              for p in paths]
    # a table without McNemar rows has empty discordant counts, read as text: counts are integers
    frames = [f.with_columns(pl.col(c).cast(pl.Int64) for c in ("discordant_b", "discordant_c") if c in f.columns)
              for f in frames if f.height]
    # a table with no confirmatory row (a probe without directions) has an empty `significant` column,
    # read as text or null; concatenated with a boolean one it would turn "false" into a true string
    frames = [f.with_columns(_as_boolean(pl.col(c)) for c in ("significant", "b_too_small") if c in f.columns)
              for f in frames]
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
        if c["lower_is_better"]:  # no direction (None): coloured by the value itself
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
    ax.set_yticklabels([c["label"] + {"lower": " \u2193", "higher": " \u2191", "none": " (no direction)"}[
        better_side(c["lower_is_better"])] for c in columns], fontsize=8)
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels([m + ("\n[stand-in]" if s else "") for m, s in zip(models, stand)], fontsize=8)
    ax.xaxis.tick_top()
    probes = [c["probe"] for c in columns]
    for i in range(1, len(probes)):
        if probes[i] != probes[i - 1]:
            ax.axhline(i - 0.5, color="white", linewidth=2)
    ax.set_title("Headline figure per probe and model\n\u2193 lower = better, \u2191 higher = better;\n"
                 "yellow = best (no direction: yellow = highest); grey: not run or undefined"
                 + ("\n\u00b0 not significantly better than the surface-form baseline (tables/*_differences.csv)"
                    if marked else ""), fontsize=8, pad=24)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100, format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)


def build(tables: list[str], models: dict[str, dict], options: dict, out: str, plot_path: str | None = None,
          screen_path: str | None = None, min_n: int = 100, demo: bool = False,
          differences: list[str] = ()) -> pl.DataFrame:
    rows = long_rows({Path(t).name: t for t in tables}, options)
    frame, columns = overview_frame(rows, models)
    compared = read_differences(list(differences))
    baseline_marked = not_better_than_baseline(rows, compared, models)
    verdicts = baseline_verdicts(rows, compared, models)
    with atomic_path(out) as tmp:
        frame.write_csv(tmp, float_precision=6)
    if plot_path:
        plot(frame, columns, plot_path, baseline_marked)
    if screen_path:
        with atomic_path(screen_path) as tmp:
            tmp.write_text(json.dumps(first_screen(rows, frame, columns, min_n, demo, baseline_marked, verdicts), indent=1)
                           + "\n", encoding="utf-8")
    return frame
