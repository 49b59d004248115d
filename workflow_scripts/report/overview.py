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
from workflow_scripts.encoders import is_baseline, is_stand_in
from workflow_scripts.probes import Headline, declarations

ROW = ("model", "column", "label", "value", "ci_low", "ci_high")

# the marks of the first screen, with what each means (the legend)
MARKS = {
    "Z": "interval of zero width: the resamples never differ, so it says nothing about uncertainty",
    "N": "n below report.min_n ({min_n}): too few independent units behind the figure for a conclusion",
    "C": "at the ceiling or floor of the statistic's range: the probe cannot tell models apart there",
    "W": "separates the wrong way (CSC): the within-sentence AUC is below 1/2 by the margin (its 95% interval below "
         "1/2 and the estimate at least the margin below it: the negated variants closer to the original than the "
         "fuzzed ones; tables/csc_overlap.csv `separation`); never counted better than the baseline",
    "B": "not shown better than the surface-form baseline: its verdict is neither `better` nor `better, size unclear` "
         "(tables/<probe>_differences.csv). Cells without a verdict (the baseline, no direction, a degenerate "
         "baseline) get no B",
    "D": "the surface-form baseline's figure is fixed by its construction (the same in every resample: Montague's "
         "ties, an Ochiai cosine equal for every variant): nothing is compared with it, and a model's verdict is "
         "against the statistic's chance level or ceiling instead (`vs chance`, `vs ceiling`)",
}
MARK_ORDER = "ZNCWBD"
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
                 verdicts: dict[tuple[str, str], dict] | None = None, ranks: dict[tuple, str] | None = None) -> dict:
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
            row_cells[m]["rank"] = (ranks or {}).get((c["probe"], c.get("dataset"), c.get("statistic"), m))
            row_cells[m]["marks"] = marks(r["value"], r["ci_low"], r["ci_high"], r.get("n"), r["bounds"], min_n)
            if r.get("wrong_direction"):
                row_cells[m]["marks"] += "W"
            if (m, c["column"]) in baseline_marked:
                row_cells[m]["marks"] += "B"
            verdict = row_cells[m]["verdict"]
            if verdict.get("reference") or verdict.get("reason") == "baseline, degenerate":
                row_cells[m]["marks"] += "D"
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
    titles = {p.name: p.title for p in declarations(stages=False)}
    screen = {"demo": demo, "banner": DEMO_BANNER if demo else "", "min_n": min_n, "models": models, "rows": out_rows,
              "legend": {k: v.format(min_n=min_n) for k, v in MARKS.items()}, "marks_used": used,
              "verdict_legend": verdict_meanings(),
              "probe_titles": {r["probe"]: titles.get(r["probe"], r["probe"]) for r in out_rows}}
    screen["summaries"] = model_summaries(screen)
    return screen


def rank_map(differences: pl.DataFrame) -> dict[tuple, str]:
    """(probe, dataset, statistic, model) -> its rank confidence set (`1-2 of 5`), from the
    differences tables' rank columns (every model of a figure is on one of its rows)."""
    out: dict[tuple, str] = {}
    if not differences.height or "rank_a" not in differences.columns:
        return out
    for d in differences.iter_rows(named=True):
        for model, rank in ((d["model_a"], d["rank_a"]), (d["model_b"], d["rank_b"])):
            if rank:
                out.setdefault((d["probe"], d["dataset"], d["statistic"], model), rank)
    return out


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


VERDICT_HEAD = ("figure", "model", "value [95% interval]", "n", "rank", "verdict vs baseline",
                "difference [adj. interval]", "margin \u03b4", "p adjusted", "marks")
VERDICT_COLUMN = VERDICT_HEAD.index("verdict vs baseline")


def _word_with_power(word: str, verdict: dict) -> str:
    """An inconclusive word with what the comparison could detect: the MDE at 80% power and about how
    many units would detect the margin."""
    from workflow_scripts.verdicts import INCONCLUSIVE
    if word != INCONCLUSIVE or verdict.get("mde") is None:
        return word
    if verdict["mde"] == 0:  # no spread: nothing to detect with, and nothing certified
        return f"{word} (no spread)"
    needed = f", n\u2248{verdict['units_needed']:,} for \u03b4" if verdict.get("units_needed") else ""
    return f"{word} (MDE {verdict['mde']:.3f}{needed})"


def verdict_text(verdict: dict | None) -> str:
    """`better`, `equivalent`, ..., `no verdict (baseline)`: the same words on every screen; where the
    baseline is degenerate, the comparison with the statistic's reference beside it."""
    verdict = verdict or {"verdict": NO_VERDICT}
    ref = verdict.get("reference")
    if ref:  # the baseline is degenerate (mark D): the comparison with chance or the ceiling instead
        return f"vs {ref['name']}: {_word_with_power(ref['verdict'], ref)}"
    return _word_with_power(verdict["verdict"], verdict) + (f" ({verdict['reason']})" if verdict.get("reason") else "")


def difference_text(verdict: dict | None, digits: int = 3) -> str:
    """`+0.300 [+0.200, +0.400]`: model - baseline with its family-adjusted interval (or model -
    the reference, where the baseline is degenerate: the verdict beside it says so)."""
    if not verdict:
        return ""
    ref = verdict.get("reference")
    shown = ref or verdict
    if shown.get("difference") is None:
        return ""
    return estimate_text(shown["difference"], shown.get("ci_low"), shown.get("ci_high"), digits, signed=True)


def margin_text(verdict: dict | None) -> str:
    shown = (verdict or {}).get("reference") or verdict or {}
    return "" if shown.get("margin") is None else f"{shown['margin']:g}"


def p_text(p: float | None) -> str:
    """An adjusted p; an exact p can be tiny, so never shown as 0.000 (below 1e-300, where a normal
    tail underflows to the smallest float, as a bound)."""
    if p is None:
        return ""
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}" if p >= 1e-300 else "<1e-300"


def verdict_rows(screen: dict) -> dict[str, list[list[str]]]:
    """The first screen's long table, grouped by probe title: a row (VERDICT_HEAD) per headline
    figure and model that has it, so every model is readable without scrolling sideways."""
    names = {m["model"]: m["model"] + (" (stand-in)" if m["stand_in"] else "") for m in screen["models"]}
    titles = screen.get("probe_titles") or {}
    groups: dict[str, list[list[str]]] = {}
    for r in screen["rows"]:
        label = r["label"] + ("*" if r.get("interval") else "") + f" ({arrow(r['lower_is_better'])})"
        for model, name in names.items():
            cell = r["cells"].get(model)
            if not cell or cell.get("value") is None:
                continue
            verdict = cell.get("verdict") or {}
            n = n_text({"n": cell.get("n"), "unit": cell.get("unit") or r.get("unit")})
            p = (verdict.get("reference") or verdict).get("p_adjusted")
            groups.setdefault(titles.get(r["probe"], r["probe"]), []).append([
                label, name, cell_text({**cell, "marks": ""}), n, cell.get("rank") or "", verdict_text(verdict),
                difference_text(verdict), margin_text(verdict), p_text(p), cell.get("marks", "")])
    return groups


def model_summaries(screen: dict) -> list[str]:
    """The answer in one line per model: how its figures split over the verdict words against the
    surface-form baseline (better counting `better, size unclear` too, with how many by at least
    the margin), then those compared with chance or the ceiling where the baseline is degenerate."""
    from workflow_scripts.verdicts import BETTER, GROUPS
    reasons = {(c.get("verdict") or {}).get("reason") for r in screen["rows"] for c in r["cells"].values()}
    if reasons == {"no baseline"}:
        return ["No surface-form baseline in the run, so no verdicts: add one to `models` (e.g. "
                "`form_only: {family: surface_form}`) to learn which figures beat word overlap."]
    lines = []
    for m in screen["models"]:
        cells = [r["cells"][m["model"]] for r in screen["rows"] if m["model"] in r["cells"]
                 and r["cells"][m["model"]].get("value") is not None]
        verdicts = [c.get("verdict") or {} for c in cells]
        if not cells or all(v.get("reason", "").startswith("baseline") and not v.get("reference") for v in verdicts):
            continue
        against = [v for v in verdicts if not v.get("reference")]
        counts = {group: sum(1 for v in against if v.get("verdict") in words) for group, words in GROUPS.items()}
        by_margin = sum(1 for v in against if v.get("verdict") == BETTER)
        parts = [f"{counts['better']} better" + (f" ({by_margin} by at least the margin)" if counts["better"] else "")]
        parts += [f"{counts[g]} {g}" for g in ("negligible", "equivalent", "inconclusive", "worse", "no verdict")
                  if counts[g]]
        refs = [v["reference"]["verdict"] for v in verdicts if v.get("reference")]
        if refs:
            ref_counts = {g: sum(1 for w in refs if w in words) for g, words in GROUPS.items()}
            parts.append(f"{len(refs)} vs chance or ceiling, the baseline degenerate: "
                         + ", ".join(f"{n} {g}" for g, n in ref_counts.items() if n))
        lines.append(f"{m['model']} vs the baseline: " + " \u00b7 ".join(parts) + f", of {len(cells)} figures")
    return lines


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
                             "stand_in": [is_stand_in(models.get(m, {})) for m in names]}
    for col in columns:
        for suffix, key in (("", "value"), ("_ci_low", "ci_low"), ("_ci_high", "ci_high")):
            data[col + suffix] = [cells.get((m, col), {}).get(key) for m in names]
    schema = {"model": pl.String, "family": pl.String, "stand_in": pl.Boolean,
              **{c: pl.Float64 for c in data if c not in ("model", "family", "stand_in")}}
    return pl.DataFrame(data, schema=schema), list(columns.values())


def not_better_than_baseline(rows: list[dict], verdicts: dict[tuple[str, str], dict],
                             models: dict[str, dict]) -> set[tuple[str, str]]:
    """(model, column) of the headline cells not shown better than the surface-form baseline (mark
    B): the cells whose confirmatory comparison with it (the differences tables' verdict, computed
    once there) is neither `better` nor `better, size unclear`, and every cell that separates in the
    wrong direction (mark W) when the run has a baseline. Cells without a verdict (the baselines
    themselves, no direction, not compared, a degenerate baseline) are not marked."""
    from workflow_scripts.verdicts import NO_VERDICT, SHOWN_BETTER

    baselines = {m for m, spec in models.items() if is_baseline(spec)}
    if not baselines:
        return set()
    marked = set()
    for r in rows:
        key = (r["model"], r["column"])
        verdict = (verdicts.get(key) or {}).get("verdict", NO_VERDICT)
        if r["model"] in baselines or r.get("lower_is_better", False) is None:
            continue
        if r.get("wrong_direction") or verdict not in (NO_VERDICT, *SHOWN_BETTER):
            marked.add(key)
    return marked


# The verdict of one headline cell against the surface-form baseline, as the differences table wrote
# it (issues 32, 43, 44: one verdict, computed once in differences.py, the same on every screen)
NO_VERDICT = "no verdict"
REASONS = {
    "baseline": "the baseline's own cell",
    "no baseline": "no surface-form model in the run",
    "no direction": "the probe claims no better side",
    "not compared": "no confirmatory comparison with the baseline",
    "no p": "a difference without spread has no p-value",
    "tie": "significant, neither side better",
    "baseline degenerate": "the baseline's figure is fixed by its construction, the same in every resample; the "
                           "comparison with the statistic's chance level or ceiling is shown instead",
}


def shown_legend(screen: dict) -> tuple[dict[str, str], dict[str, str]]:
    """(words, marks) of the legend with only the verdict words and marks this screen shows: a short
    screen keeps a short legend."""
    shown = {(c.get("verdict") or {}).get("verdict") for r in screen["rows"] for c in r["cells"].values()}
    shown |= {((c.get("verdict") or {}).get("reference") or {}).get("verdict") for r in screen["rows"]
              for c in r["cells"].values()}
    words = {k: v for k, v in screen.get("verdict_legend", {}).items() if k in shown}
    reasons = {(c.get("verdict") or {}).get("reason") for r in screen["rows"] for c in r["cells"].values()}
    if NO_VERDICT in words:  # only the reasons this screen gives
        words[NO_VERDICT] = "none is possible, the reason beside it: " + "; ".join(
            f"{k}: {v}" for k, v in REASONS.items() if k in reasons or (k == "baseline" and "baseline, degenerate" in reasons))
    return words, {k: screen["legend"][k] for k in screen.get("marks_used", [])}


def verdict_meanings() -> dict[str, str]:
    """Each verdict word with its one-line meaning (the legend), the reasons of `no verdict` in one line."""
    from workflow_scripts.verdicts import WORDS
    out = dict(WORDS)
    out[NO_VERDICT] = "none is possible, the reason beside it: " + "; ".join(f"{k}: {v}" for k, v in REASONS.items())
    return out


def _finite(value) -> float | None:
    """A float, or None for a missing or NaN value (the first screen is JSON: no NaN in it)."""
    return None if value is None or value != value else float(value)


def _adjusted(d: dict, lower_is_better: bool | None) -> tuple[float | None, float | None]:
    """The family-adjusted interval of model - baseline (the table holds it for the direction-signed d)."""
    low, high = _finite(d.get("adjusted_low")), _finite(d.get("adjusted_high"))
    if lower_is_better and low is not None and high is not None:
        return -high, -low
    return low, high


def confirmatory_rows(differences: pl.DataFrame, baselines: list[str]) -> dict[tuple, dict]:
    """(probe, dataset, statistic, model) -> its confirmatory row: against the first baseline (config
    order) it was compared with, or against the statistic's reference where that baseline is
    degenerate; exploratory rows decide nothing."""
    from workflow_scripts.differences import REFERENCE_NAMES
    from workflow_scripts.paired_statistics import CONFIRMATORY

    found: dict[tuple, tuple[int, dict]] = {}
    if not differences.height:
        return {}
    against = list(baselines) + list(REFERENCE_NAMES)
    for d in differences.iter_rows(named=True):
        if d.get("family") != CONFIRMATORY or d["model_b"] not in against or d["model_a"] in baselines:
            continue
        key, rank = (d["probe"], d["dataset"], d["statistic"], d["model_a"]), against.index(d["model_b"])
        if key not in found or rank < found[key][0]:
            found[key] = (rank, d)
    return {key: row for key, (_, row) in found.items()}


def degenerate_baselines(differences: pl.DataFrame) -> set[tuple]:
    """(probe, dataset, statistic, baseline) of the figures whose baseline is degenerate (the table's
    `baseline_degenerate` rows)."""
    if not differences.height or "baseline_degenerate" not in differences.columns:
        return set()
    return {(d["probe"], d["dataset"], d["statistic"], d["model_b"])
            for d in differences.filter(pl.col("baseline_degenerate").fill_null(False)).iter_rows(named=True)}


def verdict_of(row: dict, compared: dict | None, baselines: list[str]) -> dict:
    """The verdict of one headline cell: the word the differences table wrote (verdicts.WORDS), the
    difference model - baseline with its family-adjusted interval, Holm's adjusted p, the margin
    delta, the MDE and units needed, the ranks; `reason` says why there is none; `reference` holds
    the comparison with chance or the ceiling where the baseline is degenerate."""
    from workflow_scripts.differences import REFERENCE_NAMES
    from workflow_scripts.verdicts import WRONG_DIRECTION
    out = {"verdict": NO_VERDICT, "reason": "", "baseline": None, "difference": None, "ci_low": None,
           "ci_high": None, "p_adjusted": None, "test": None, "margin": None, "mde": None, "units_needed": None,
           "rank": None, "reference": None}
    if not baselines:
        return {**out, "reason": "no baseline"}
    if row["model"] in baselines:
        return {**out, "reason": "baseline"}
    if row.get("lower_is_better", False) is None:
        return {**out, "reason": "no direction"}
    if row.get("wrong_direction"):  # W outranks any difference (the table says the same where compared)
        out["verdict"] = WRONG_DIRECTION
    if compared is None:
        return {**out, "reason": "" if row.get("wrong_direction") else "not compared"}
    low, high = _adjusted(compared, row.get("lower_is_better"))
    found = {"difference": _finite(compared["difference"]), "ci_low": low, "ci_high": high,
             "p_adjusted": _finite(compared.get("p_adjusted")), "test": compared.get("test"),
             "margin": _finite(compared.get("margin")), "mde": _finite(compared.get("mde")),
             "units_needed": None if _finite(compared.get("units_needed")) is None else int(compared["units_needed"]),
             "rank": compared.get("rank_a") or None}
    if compared["model_b"] in REFERENCE_NAMES:
        if out["verdict"] == WRONG_DIRECTION:
            return {**out, "rank": found["rank"]}
        return {**out, "verdict": NO_VERDICT, "reason": "baseline degenerate", "rank": found["rank"],
                "reference": {"name": compared["model_b"], "level": _finite(compared["value_b"]),
                              "verdict": compared.get("verdict") or NO_VERDICT, **found}}
    if out["verdict"] == WRONG_DIRECTION:
        return {**out, "baseline": compared["model_b"], **found}
    return {**out, "baseline": compared["model_b"], **found, "verdict": compared.get("verdict") or NO_VERDICT,
            "reason": compared.get("reason") or ""}


def baseline_verdicts(rows: list[dict], differences: pl.DataFrame, models: dict[str, dict]) -> dict[tuple[str, str], dict]:
    """(model, column) -> verdict_of for every headline cell, read from the confirmatory rows of the
    differences tables (a headline row links to them through its probe, `dataset` and `statistic`)."""
    baselines = [m for m, spec in models.items() if is_baseline(spec)]
    compared = confirmatory_rows(differences, baselines)
    degenerate = degenerate_baselines(differences)
    out = {}
    for r in rows:
        key = (r["probe"], r.get("dataset"), r.get("statistic"), r["model"])
        verdict = verdict_of(r, compared.get(key), baselines)
        if verdict["reason"] == "baseline" and key in degenerate:
            verdict["reason"] = "baseline, degenerate"
        out[(r["model"], r["column"])] = verdict
    return out


def _as_boolean(column: pl.Expr) -> pl.Expr:
    """true/false (any case) as booleans, anything else null, whatever type the CSV reader gave."""
    text = column.cast(pl.String).str.to_lowercase()
    return pl.when(text == "true").then(True).when(text == "false").then(False).otherwise(None).alias(
        column.meta.output_name())


def read_differences(paths: list[str]) -> pl.DataFrame:
    frames = [pl.read_csv(p, infer_schema_length=None, schema_overrides={"ahead": pl.String})
              for p in paths]
    # a table without McNemar rows has empty discordant counts, read as text: counts are integers
    frames = [f.with_columns(pl.col(c).cast(pl.Int64) for c in ("discordant_b", "discordant_c") if c in f.columns)
              for f in frames if f.height]
    # a table with no confirmatory row (a probe without directions) has an empty `significant` column,
    # read as text or null; concatenated with a boolean one it would turn "false" into a true string
    frames = [f.with_columns(_as_boolean(pl.col(c)) for c in ("significant", "baseline_degenerate") if c in f.columns)
              for f in frames]
    # text columns a table may hold only empty cells of (read as null of another type)
    frames = [f.with_columns(pl.col(c).cast(pl.String) for c in ("verdict", "reason", "separation_a", "rank_a",
                                                                "rank_b", "ahead") if c in f.columns)
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
                 + ("\n\u00b0 not shown better than the surface-form baseline (tables/*_differences.csv)"
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
    verdicts = baseline_verdicts(rows, compared, models)
    baseline_marked = not_better_than_baseline(rows, verdicts, models)
    with atomic_path(out) as tmp:
        frame.write_csv(tmp, float_precision=6)
    if plot_path:
        plot(frame, columns, plot_path, baseline_marked)
    if screen_path:
        with atomic_path(screen_path) as tmp:
            screen = first_screen(rows, frame, columns, min_n, demo, baseline_marked, verdicts, rank_map(compared))
            tmp.write_text(json.dumps(screen, indent=1) + "\n", encoding="utf-8")
    return frame
