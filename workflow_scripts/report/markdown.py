"""report.md, the report in Markdown: the model-by-probe overview, a section per probe that ran (built
from the probes' declarations: title, summary, table pages with their captions, plots) and the input
quality counts."""
from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from workflow_scripts import published
from workflow_scripts.common import atomic_path, read_json
from workflow_scripts.probes import declarations
from workflow_scripts.report.overview import VERDICT_HEAD, arrow, cell_text, n_text, verdict_rows


def markdown_table(frame: pl.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join("" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v)) for v in row) + " |"
            for row in frame.iter_rows()]
    return "\n".join([head, rule, *body])


def overview_section(overview: str) -> list[str]:
    """The model-by-probe overview (tables/overview.csv) transposed: a row per headline figure, a
    column per model, each cell `value [ci_low, ci_high]`."""
    frame = pl.read_csv(overview, infer_schema_length=None)
    models = [m + (" (stand-in)" if s else "") for m, s in zip(frame["model"], frame["stand_in"])]
    figures = [c for c in frame.columns if c not in ("model", "family", "stand_in")
               and not c.endswith(("_ci_low", "_ci_high"))]
    rows = []
    for c in figures:
        cells = []
        for v, lo, hi in zip(frame[c], frame[f"{c}_ci_low"], frame[f"{c}_ci_high"]):
            cells.append("" if v is None else f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None
                         else f"{v:.3f}")
        rows.append([c, *cells])
    table = pl.DataFrame(rows, schema=["figure", *models], orient="row")
    return ["# Overview: every model, every probe", "",
            "The headline figure of each probe per model with its bootstrapped 95% interval (from the "
            "probes' tables; `csc_*` are overlaps, lower = better; the others higher = better). "
            "The same as `tables/overview.csv`; the heat map is `plots/overview.png`.", "",
            markdown_table(table), ""]


def verdict_section(screen: dict) -> list[str]:
    """The first screen's verdicts (overview.verdict_rows): per probe, a row per headline
    figure and model with its value, n, verdict against the surface-form baseline, the paired
    difference and Holm's adjusted p; long rather than wide, so no model is off-screen."""
    parts = ["Verdict per model and headline figure against the surface-form baseline: "
             + "; ".join(f"**{k}** {v}" for k, v in screen.get("verdict_legend", {}).items())
             + ". The difference is model - baseline with its paired 95% interval (unadjusted); `p adjusted`: "
               "Holm within the probe's confirmatory family.", ""]
    for probe, rows in verdict_rows(screen).items():
        parts += [f"## {probe}", "", "| " + " | ".join(VERDICT_HEAD) + " |", "|" + "---|" * len(VERDICT_HEAD),
                  *("| " + " | ".join(row) + " |" for row in rows), ""]
    return parts


def first_screen_section(screen: dict) -> list[str]:
    """The model-by-probe overview from report/overview.json (overview.first_screen): the demo
    banner where the run is on the shipped samples, the verdicts (verdict_section), then the wide
    table: a row per headline figure with which direction is better and its n, a column per model,
    cells `value [ci_low, ci_high] MARKS`, and the legend."""
    units = "; ".join(p.n_note for p in declarations(stages=False) if p.n_note)
    models = [m["model"] for m in screen["models"]]
    names = [m["model"] + (" (stand-in)" if m["stand_in"] else "") for m in screen["models"]]
    head = ["figure", "better", "n", *names]
    rows = [[r["column"], arrow(r["lower_is_better"]), n_text(r),
             *(cell_text(r["cells"].get(m)) for m in models)] for r in screen["rows"]]
    table = "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                       *("| " + " | ".join(row) + " |" for row in rows)])
    parts = ["# Overview: every model, every probe", ""]
    if screen["demo"]:
        parts += [f"> **{screen['banner']}**", ""]
    parts += ["The headline figure of each probe per model with its bootstrapped 95% interval (from the probes' "
              "tables; the same as `tables/overview.csv`, the heat map is `plots/overview.png`). `better`: which "
              "direction is better (`no direction`: the probe claims none, so the figure gets no verdict); `n`: the "
              f"independent units behind the figure, the ones its bootstrap resamples, named beside it ({units}). "
              "How to read a verdict: `docs/verdicts.md` in the workflow's repository.", "", *verdict_section(screen),
              "Marks: " + "; ".join(f"**{k}** {v}" for k, v in screen["legend"].items()) + ".", "",
              "## Every model side by side", "", table, ""]
    notes = [f"`{r['column']}`: {r['interval']}" for r in screen["rows"] if r.get("interval")]
    if notes:
        parts += ["Intervals other than the probe's usual one: " + "; ".join(notes) + ".", ""]
    return parts


def differences_block(path: str, figures: list[dict]) -> list[str]:
    """The paired differences behind the probe's headline figures (the first screen's rows): one
    line per compared pair, A - B with its paired 95% interval (unadjusted), its family, the
    adjusted p (Holm within the confirmatory family, BH q for exploratory rows) and, for
    confirmatory rows, Holm's verdict (tables/<probe>_differences.csv holds every statistic)."""
    keys = {(f["dataset"], f["statistic"]) for f in figures if f.get("statistic")}
    if not keys or not Path(path).exists():
        return []
    frame = pl.read_csv(path, infer_schema_length=None)
    if not frame.height:
        return []
    rows = [r for r in frame.iter_rows(named=True) if (str(r["dataset"]), str(r["statistic"])) in keys]
    if not rows:
        return []
    confirmatory = [r for r in frame.iter_rows(named=True) if r.get("family") == "confirmatory"]
    significant = sum(1 for r in confirmatory if str(r["significant"]).lower() == "true")
    lines = ["## Paired differences of the headline figures", "",
             f"A - B on the same bootstrap resamples for both models. *Confirmatory*: each model against the "
             f"surface-form baseline on a headline figure, the family behind the mark B: {len(confirmatory)} "
             f"comparisons, Holm's correction of their p-values, alpha 0.05 ({significant} "
             f"significant). *Exploratory*: every other comparison of `{Path(path).name}` ({frame.height} in "
             f"all), with the Benjamini-Hochberg q and no verdict. Only the p-values are adjusted: the 95% "
             f"interval beside each difference is the unadjusted paired interval, so an interval that "
             f"excludes 0 is not by itself a significant difference after the correction (read `p adjusted` "
             f"and `significant`)."
             + (" Where each item is right or wrong, p is McNemar's exact test on the items one model gets "
                "right and the other wrong (b: A right, c: B right), not the bootstrap's."
                if any(r.get("test") == "mcnemar" for r in rows) else "")
             + (" Where right/wrong items share a source (items built from one original sentence), p is the exact "
                "cluster sign-flip test over the sources instead (sign flip), McNemar's test with the source as "
                "the unit." if any(r.get("test") == "sign_flip_exact" for r in rows) else ""), ""]
    if any(str(r.get("b_too_small")).lower() == "true" for r in confirmatory):
        lines += ["**B too small for this family**: the smallest bootstrap p, 2/(B+1), is above alpha/m "
                  f"(m = {sum(1 for r in confirmatory if r['p_value'] is not None and r['p_value'] == r['p_value'])}), so no comparison can be "
                  "significant; raise the probe's `bootstrap_b`.", ""]
    lines += ["| dataset | statistic | A | B | A - B [95% interval, unadjusted] | p | family | p adjusted | significant | better |",
              "|---|---|---|---|---|---|---|---|---|---|"]

    def num(v, digits=3):
        return "" if v is None or v != v else f"{float(v):.{digits}f}"

    def p_text(v):  # an exact p can be tiny: never shown as 0.000
        return "" if v is None or v != v else f"{float(v):.3f}" if float(v) >= 0.001 else f"{float(v):.1e}"
    for r in rows:
        verdict = ("" if r.get("family") != "confirmatory"
                   else "yes" if str(r["significant"]).lower() == "true" else "no")
        adjusted = f"{p_text(r['p_adjusted'])} ({r['method']})" if p_text(r["p_adjusted"]) else ""
        p = p_text(r["p_value"])
        if r.get("test") == "mcnemar":
            p += f" (McNemar, b = {r['discordant_b']}, c = {r['discordant_c']})"
        elif r.get("test") == "sign_flip_exact":
            p += f" (sign flip, b = {r['discordant_b']}, c = {r['discordant_c']})"
        lines.append(f"| {r['dataset']} | {r['statistic']} | {r['model_a']} | {r['model_b']} | "
                     f"{num(r['difference'])} [{num(r['ci_low'])}, {num(r['ci_high'])}] | {p} | "
                     f"{r.get('family') or ''} | {adjusted} | {verdict} | {r.get('better') or ''} |")
    return lines + [""]


def probe_section(base: Path, section: dict, figures: list[dict] = ()) -> list[str]:
    """A probe's section: its title and summary (from its declaration), each of its tables as
    Markdown under its caption, then its plots, the paired differences of its headline figures,
    then the papers' published figures."""
    parts = [f"# {section['title']}", "", section.get("summary", ""), ""]
    for table in section.get("tables", []):
        path = table["path"]
        parts += [f"## {Path(path).stem}", ""]
        text = " ".join((table.get("caption") or "").split())
        if text:
            parts += [text, ""]
        parts += [markdown_table(pl.read_csv(path, infer_schema=False)), ""]
    plots = section.get("plots", [])
    if plots:
        parts += ["## Plots", ""]
        parts += [f"![{Path(plot).parent.name} / {Path(plot).stem}]({os.path.relpath(plot, base)})" for plot in plots]
        parts.append("")
    if section.get("differences"):
        parts += differences_block(section["differences"], list(figures))
    # the papers' own figures, labelled and apart from our tables (resources/<probe>/published.csv)
    return parts + (published.markdown(section["probe"]) if section.get("probe") else [])


def inputs_section(lengths: str | None, ingest: list[str]) -> list[str]:
    parts = []
    if ingest:
        parts += ["## Input quality", "", "| source | records | skipped | reasons | filtered out (`where`) |",
                  "|---|---|---|---|---|"]
        for path in ingest:
            r = read_json(path)
            reasons = ", ".join(f"{k}: {v}" for k, v in sorted(r["skipped"].items())) or "none"
            # rows a `where` filter left out, per column: not bad lines (older reports have none)
            filtered = ", ".join(f"{k}: {v}" for k, v in sorted((r.get("filtered") or {}).items())) or "none"
            parts.append(f"| {r['source']} | {r['records']} | {r['skipped_total']} | {reasons} | {filtered} |")
        parts.append("")
    if lengths:
        parts += ["## Sentence lengths (whitespace tokens, % of sentences)", "",
                  markdown_table(pl.read_csv(lengths, infer_schema=False)), ""]
    return ["# Inputs", "", *parts] if parts else []


def build(out: str, sections: list[dict], overview: str | None = None, lengths: str | None = None,
          ingest: list[str] = (), first_screen: str | None = None) -> None:
    """report.md: the overview (the first screen's, where given), a section per probe that ran (in
    report order), the inputs."""
    base = Path(out).parent
    screen = read_json(first_screen) if first_screen else None
    if screen:
        parts = first_screen_section(screen)
    else:
        parts = overview_section(overview) if overview else []
    for section in sections:
        figures = [r for r in (screen or {}).get("rows", []) if r.get("probe") == section.get("probe")]
        parts += probe_section(base, section, figures)
    parts += inputs_section(lengths, list(ingest))
    with atomic_path(out) as tmp:
        tmp.write_text("\n".join(parts) + "\n", encoding="utf-8")
