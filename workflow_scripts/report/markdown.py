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
from workflow_scripts.report.overview import VERDICT_HEAD, arrow, cell_text, n_text, shown_legend, verdict_rows


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
    return ["# Overview: every model against the surface-form baseline", "",
            "The headline figure of each probe per model with its 95% interval (from the probes' tables; "
            "higher = better, but domain shift's overlaps, which have no better side). "
            "The same as `tables/overview.csv`; the heat map is `plots/overview.png`.", "",
            markdown_table(table), ""]


def legend_lines(screen: dict) -> list[str]:
    """The verdict words and the marks this screen shows, one line each (above the tables)."""
    words, marks = shown_legend(screen)
    return [f"- **{k}**: {v}" for k, v in {**words, **marks}.items()] + [""]


def verdict_section(screen: dict) -> list[str]:
    """The first screen's verdicts (overview.verdict_rows): per probe, a row per headline figure and
    model with its value, n, rank, verdict against the surface-form baseline, the difference with
    its family-adjusted interval, the margin and Holm's adjusted p; long rather than wide, so no
    model is off-screen."""
    parts = []
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
    parts = ["# Overview: every model against the surface-form baseline", ""]
    if screen["demo"]:
        parts += [f"> **{screen['banner']}**", ""]
    parts += [f"- {line}" for line in screen.get("summaries", [])] + [""]
    parts += ["Per headline figure and model: the figure with its 95% interval, `n` the independent units behind "
              f"it, named beside it ({units}), its rank among all models (a simultaneous rank confidence set), "
              "its verdict against the surface-form baseline, the difference model - baseline with its "
              "family-adjusted interval, the margin (the smallest difference that matters) and Holm's adjusted p. "
              "How to read a verdict: `docs/verdicts.md` in the workflow's repository.", "", *legend_lines(screen),
              *verdict_section(screen), "## Every model side by side", "",
              "The headline figures with their 95% intervals (the same as `tables/overview.csv`; the heat map is "
              "`plots/overview.png`).", "", table, ""]
    notes = [f"`{r['column']}`: {r['interval']}" for r in screen["rows"] if r.get("interval")]
    if notes:
        parts += ["Intervals other than the probe's usual one: " + "; ".join(notes) + ".", ""]
    return parts


def differences_block(path: str, figures: list[dict]) -> list[str]:
    """The paired differences behind the probe's headline figures (the first screen's rows): one
    line per compared pair, A - B with its paired 95% interval (unadjusted), its test and p, its
    family, the adjusted p (Holm within the confirmatory family, BH q for exploratory rows) and, for
    confirmatory rows, the verdict word with its margin and family-adjusted interval, the word the
    first screen shows (tables/<probe>_differences.csv holds every statistic)."""
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
             f"surface-form baseline on a headline figure (or against chance or the ceiling where the baseline's "
             f"figure is fixed by its construction): {len(confirmatory)} comparisons, Holm's correction of their "
             f"p-values, alpha 0.05 ({significant} significant), and the verdict word from the family-adjusted "
             f"interval of the difference (its level 1 - 0.05/{len(confirmatory) or 1}) and the margin. "
             f"*Exploratory*: every other comparison of `{Path(path).name}` ({frame.height} in all), with the "
             f"Benjamini-Hochberg q and no verdict. The 95% interval beside each difference is the unadjusted "
             f"paired interval. A bootstrap p is the normal approximation of the paired replicates (its smallest "
             f"value does not depend on B)."
             + (" Where each item is right or wrong, p is McNemar's exact test on the items one model gets "
                "right and the other wrong (b: A right, c: B right), not the bootstrap's."
                if any(r.get("test") == "mcnemar" for r in rows) else "")
             + (" Where right/wrong items share a source (items built from one pair of sentences), p is the exact "
                "cluster sign-flip test over the sources instead (sign flip), McNemar's test with the source as "
                "the unit." if any(r.get("test") == "sign_flip_exact" for r in rows) else ""), ""]
    lines += ["| dataset | statistic | A | B | A - B [95% interval, unadjusted] | p | family | p adjusted | verdict | "
              "margin | ahead |", "|---|---|---|---|---|---|---|---|---|---|---|"]

    def num(v, digits=3):
        return "" if v is None or v != v else f"{float(v):.{digits}f}"

    def p_text(v):  # an exact p can be tiny: never shown as 0.000
        return "" if v is None or v != v else f"{float(v):.3f}" if float(v) >= 0.001 else f"{float(v):.1e}"
    for r in rows:
        verdict = r.get("verdict") or ""
        if verdict and r.get("reason"):
            verdict += f" ({r['reason']})"
        adjusted = f"{p_text(r['p_adjusted'])} ({r['method']})" if p_text(r["p_adjusted"]) else ""
        p = p_text(r["p_value"])
        if r.get("test") == "mcnemar":
            p += f" (McNemar, b = {r['discordant_b']}, c = {r['discordant_c']})"
        elif r.get("test") == "sign_flip_exact":
            p += f" (sign flip, b = {r['discordant_b']}, c = {r['discordant_c']})"
        elif r.get("reason") == "baseline degenerate":
            verdict = "none: baseline degenerate"
        lines.append(f"| {r['dataset']} | {r['statistic']} | {r['model_a']} | {r['model_b']} | "
                     f"{num(r['difference'])} [{num(r['ci_low'])}, {num(r['ci_high'])}] | {p} | "
                     f"{r.get('family') or ''} | {adjusted} | {verdict} | {num(r.get('margin'), 2)} | "
                     f"{r.get('ahead') or ''} |")
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
