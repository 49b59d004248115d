"""Pages of the HTML report (`snakemake --report results/report.html`) that the probes' own outputs
do not give: every probe table as an HTML table (the report shows HTML and images, and offers other
files only as downloads), the input and dataset counts, the job runtimes and memory from the
`benchmark:` files, and the first screen (the model-by-probe overview with its marks, which
resources/report/workflow.rst includes first; the provenance after it is report/provenance.py's).

Where a probe's results go in the report comes from its declaration (`<probe>/probe.py`,
workflow_scripts/probes.py): its title is its category (also used by the `report(...)` marks of its
plots in rules/<probe>.smk), its `tables` and `dataset_tables` are shown as pages.
"""
from __future__ import annotations

import base64
import html
import math
import os
from pathlib import Path

import polars as pl

from workflow_scripts import published
from workflow_scripts.common import atomic_path, read_json
from workflow_scripts.probes import categories
from workflow_scripts.report.overview import (VERDICT_COLUMN, VERDICT_HEAD, arrow, cell_text, n_text,
                                              shown_legend, verdict_rows)

# Report categories: the overview, one per probe (its declaration's title), Inputs and Runtime.
CATEGORIES = categories()

STYLE = """body{font-family:system-ui,sans-serif;font-size:13px;margin:12px;color:#222}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
caption{text-align:left;font-weight:600;padding:4px 0}h2{font-size:15px;margin:18px 0 6px}p.note{color:#555}"""


def page(title: str, body: str) -> str:
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>\n")


def fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        return f"{v:.4f}" if abs(v) < 1e5 else f"{v:.4g}"
    return str(v)


def with_intervals(frame: pl.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Columns and formatted cells, an estimate and its interval in one cell: `X [lo, hi]` for
    `X, X_ci_low, X_ci_high`, and for a bare `ci_low, ci_high` the column just before them."""
    cols = frame.columns
    merged: dict[str, tuple[str, str]] = {}
    for i, c in enumerate(cols):
        if c.endswith("_ci_low") and c.removesuffix("_ci_low") in cols and c.replace("_ci_low", "_ci_high") in cols:
            merged[c.removesuffix("_ci_low")] = (c, c.replace("_ci_low", "_ci_high"))
        elif c == "ci_low" and "ci_high" in cols and i > 0:
            merged[cols[i - 1]] = ("ci_low", "ci_high")
    hidden = {x for pair in merged.values() for x in pair}
    shown = [c for c in cols if c not in hidden]
    rows = []
    for r in frame.iter_rows(named=True):
        cells = []
        for c in shown:
            cell = fmt(r[c])
            if c in merged and cell not in ("", "NaN"):
                lo, hi = (fmt(r[x]) for x in merged[c])
                cell = f"{cell} [{lo}, {hi}]"
            cells.append(cell)
        rows.append(cells)
    return [c + (" [95% CI]" if c in merged else "") for c in shown], rows


def html_table(header: list[str], rows: list[list[str]], caption: str = "") -> str:
    def cell(v: str) -> str:
        num = v[:1].isdigit() or v[:1] == "-" and v[1:2].isdigit()
        return f"<td class=\"num\">{html.escape(v)}</td>" if num else f"<td>{html.escape(v)}</td>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(cell(v) for v in r) + "</tr>" for r in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def table_page(csv: str, out: str) -> None:
    frame = pl.read_csv(csv, infer_schema_length=None)
    header, rows = with_intervals(frame)
    # the path within the results folder: a copy of the results elsewhere gives the same page
    within = f"{Path(csv).parent.name}/{Path(csv).name}"
    body = (f"<h2>{html.escape(Path(csv).name)}</h2><p class=\"note\">{frame.height} rows; the file: "
            f"<code>{html.escape(within)}</code> of the results folder</p>" + html_table(header, rows))
    with atomic_path(out) as tmp:
        tmp.write_text(page(Path(csv).name, body), encoding="utf-8")


def table_pages(tables: list[str], out_dir: str) -> None:
    """A page per table in `out_dir`: <name>.html, published_<probe>.html for a probe's published
    figures (published_page)."""
    for csv in tables:
        if published.is_published(csv):
            published_page(csv, os.path.join(out_dir, f"published_{published.probe_of(csv)}.html"))
        else:
            table_page(csv, os.path.join(out_dir, Path(csv).stem + ".html"))


def published_page(csv: str, out: str) -> None:
    """A probe's published figures (resources/<probe>/published.csv) as their own page: one table per
    (paper, table), each labelled, never mixed into this run's tables."""
    name = published.probe_of(csv)
    body = [f"<h2>Published figures: {html.escape(name)}</h2><p class=\"note\">Reference rows transcribed from the "
            f"seed papers (<code>resources/{html.escape(name)}/{published.FILE_NAME}</code> of the workflow): other "
            "models, measured on the papers' data, without intervals; not this run's results.</p>"]
    for b in published.blocks(published.load(name, Path(csv).parent.parent)):
        body.append(html_table(["model", *b["columns"]], b["rows"], published.caption(b)))
        body += [f"<p class=\"note\">Note: {html.escape(n)}</p>" for n in b["notes"]]
    with atomic_path(out) as tmp:
        tmp.write_text(page(f"Published figures: {name}", "".join(body)), encoding="utf-8")


def flat(report: dict, prefix: str = "") -> dict[str, str]:
    """A report's scalar fields, and those of its nested mappings as `a.b`; lists (examples) and
    timings (`seconds`, `per_second`: they differ run to run; the Runtime page has them) left out."""
    out = {}
    for k, v in report.items():
        if "second" in k:
            continue
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        elif not isinstance(v, list):
            out[f"{prefix}{k}"] = fmt(v)
    return out


def inputs_page(reports: list[str], lengths: str | None, out: str) -> None:
    """The input quality reports (ingest), the perturbation counts and every dataset's counts, one
    table per kind of report (results/reports/<kind>/<name>.json): a row per field, a column per name."""
    groups: dict[str, list[tuple[str, dict]]] = {}
    for path in reports:
        groups.setdefault(Path(path).parent.name, []).append((Path(path).stem, flat(read_json(path))))
    body = ["<h2>Input quality, perturbations and dataset counts</h2><p class=\"note\">From "
            "<code>results/reports/&lt;kind&gt;/&lt;name&gt;.json</code>; nested counts as <code>a.b</code>, "
            "example lists left out.</p>"]
    if lengths:
        frame = pl.read_csv(lengths, infer_schema=False)
        body.append(html_table(frame.columns, [[fmt(v) for v in r] for r in frame.iter_rows()],
                               "Sentence lengths (whitespace tokens, % of sentences)"))
    for kind, items in groups.items():
        keys = list(dict.fromkeys(k for _, f in items for k in f))
        rows = [[k] + [f.get(k, "") for _, f in items] for k in keys]
        body.append(f"<h2>{html.escape(kind)}</h2>" + html_table(["field"] + [n for n, _ in items], rows))
    with atomic_path(out) as tmp:
        tmp.write_text(page("Inputs", "".join(body)), encoding="utf-8")


def runtimes(benchmarks: str, out_html: str, out_csv: str) -> pl.DataFrame:
    """Every job's wall time and memory from the benchmark files under `benchmarks`
    (<rule>/<wildcards...>.tsv); the last line of a file is its last attempt."""
    rows = []
    for path in sorted(Path(benchmarks).rglob("*.tsv")):
        frame = pl.read_csv(path, separator="\t", infer_schema_length=None, null_values=["-", "NA"])
        if frame.height == 0:
            continue
        r = frame.row(frame.height - 1, named=True)
        rel = path.relative_to(benchmarks).with_suffix("")
        rows.append({"rule": rel.parts[0], "job": "/".join(rel.parts[1:]), "seconds": r.get("s"),
                     "max_rss_mb": r.get("max_rss"), "max_vms_mb": r.get("max_vms"),
                     "cpu_seconds": r.get("cpu_time"), "mean_load": r.get("mean_load")})
    schema = {"rule": pl.String, "job": pl.String, "seconds": pl.Float64, "max_rss_mb": pl.Float64,
              "max_vms_mb": pl.Float64, "cpu_seconds": pl.Float64, "mean_load": pl.Float64}
    frame = pl.DataFrame(rows, schema=schema).sort("seconds", descending=True, nulls_last=True)
    by_rule = (frame.group_by("rule").agg(pl.len().alias("jobs"), pl.col("seconds").sum().alias("seconds"),
                                          pl.col("max_rss_mb").max().alias("max_rss_mb"))
               .sort("seconds", descending=True, nulls_last=True))
    body = (f"<h2>Jobs with a benchmark file: {frame.height}, {frame['seconds'].sum():.1f} s in all</h2>"
            "<p class=\"note\">Wall time and peak memory (RSS) of each job, from Snakemake's "
            "<code>benchmark:</code> files (results/benchmarks/); seconds-long rules without one are not listed. "
            "These numbers vary from run to run.</p>"
            + html_table(by_rule.columns, [[fmt(v) for v in r] for r in by_rule.iter_rows()], "Per rule")
            + "<h2>Per job</h2>" + html_table(frame.columns, [[fmt(v) for v in r] for r in frame.iter_rows()]))
    with atomic_path(out_csv) as tmp:
        frame.write_csv(tmp)
    with atomic_path(out_html) as tmp:
        tmp.write_text(page("Runtime", body), encoding="utf-8")
    return frame


# ---- the first screen: the model-by-probe overview, before everything else ----
# cells not to be read as findings (Z, N, C) in amber; W (CSC separates the wrong way) in red; B (no
# better than the form-only baseline) in grey
MARK_STYLE = {"Z": "background:#fde68a", "N": "background:#fde68a", "C": "background:#fde68a", "W": "background:#fecaca",
              "B": "background:#e5e7eb"}


# the verdict column's tint: better green, worse and wrong direction red, equivalent blue, the rest plain
VERDICT_STYLE = {"better": "background:#bbf7d0", "better, size unclear": "background:#dcfce7",
                 "worse": "background:#fecaca", "worse, size unclear": "background:#fee2e2",
                 "wrong direction": "background:#fecaca", "equivalent": "background:#dbeafe"}


def verdict_html(screen: dict) -> str:
    """The verdicts (overview.verdict_rows) as one narrow table per probe: a row per headline
    figure and model, so every model is on screen without scrolling sideways."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in VERDICT_HEAD)

    def cell(i: int, text: str) -> str:
        tint = VERDICT_STYLE.get(text.split(" (")[0].split(";")[0]) if i == VERDICT_COLUMN else None
        return f'<td style="{tint}">' if tint else "<td>"

    parts = []
    for probe, rows in verdict_rows(screen).items():
        body = ["<tr>" + "".join(cell(i, text) + html.escape(text) + "</td>" for i, text in enumerate(row)) + "</tr>"
                for row in rows]
        parts.append(f"<h3>{html.escape(probe)}</h3><table class=\"verdicts\" style=\"font-size:12px\"><thead><tr>"
                     + head + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>")
    return "".join(parts)


def legend_html(screen: dict) -> str:
    """The verdict words and the marks this screen shows, one line each: above the tables."""
    shown_words, shown_marks = shown_legend(screen)
    words = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in shown_words.items())
    marks = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(v)}</li>" for k, v in shown_marks.items())
    return (f'<ul style="font-size:12px;margin:4px 0">{words}{marks}</ul>'
            '<p style="font-size:12px">Per figure and model: the figure [its 95% interval], n (the independent '
            "units behind it), its rank among all models, the verdict against the surface-form baseline, the "
            "difference model - baseline with its family-adjusted interval, the margin and Holm's adjusted p. "
            "How to read a verdict: docs/verdicts.md.</p>")


def first_screen_html(screen: dict) -> str:
    """The overview as an HTML table: a row per headline figure (its label, which direction is
    better, n), a column per model, each cell `value [low, high]` with its marks (tinted, the mark's
    meaning as a tooltip), the legend and the interval notes; the demo banner first."""
    models = [m["model"] for m in screen["models"]]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ["figure", "better", "n"]) + "".join(
        f"<th>{html.escape(m['model'])}{' <em>(stand-in)</em>' if m['stand_in'] else ''}</th>" for m in screen["models"])
    body = []
    for r in screen["rows"]:
        label = html.escape(r["label"]) + ("<sup>*</sup>" if r.get("interval") else "")
        cells = [f"<td>{label}</td><td>{arrow(r['lower_is_better'])}</td>"
                 f"<td class=\"num\">{html.escape(n_text(r))}</td>"]
        for m in models:
            cell = r["cells"].get(m)
            marks = (cell or {}).get("marks", "")
            tip = "; ".join(screen["legend"][k] for k in marks)
            style = ""
            if marks:
                tint = MARK_STYLE["W"] if "W" in marks else MARK_STYLE.get(marks[0], MARK_STYLE["Z"])  # W outranks B
                style = f' style="{tint}" title="{html.escape(tip)}"'
            cells.append(f"<td class=\"num\"{style}>{html.escape(cell_text(cell))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    parts = []
    if screen["demo"]:
        parts.append('<p style="border-left:4px solid #d97706;background:#fffbeb;padding:6px 10px;font-weight:600">'
                     f"{html.escape(screen['banner'])}</p>")
    if screen.get("summaries"):
        parts.append('<ul class="summaries" style="font-weight:600">'
                     + "".join(f"<li>{html.escape(line)}</li>" for line in screen["summaries"]) + "</ul>")
    parts.append(legend_html(screen))
    parts.append(verdict_html(screen))
    # many models make the wide table wider than the text column: it scrolls within it instead of
    # running under the report's workflow graph; the verdicts above need no scrolling
    parts.append("<h3>Every model side by side</h3>")
    parts.append('<div style="max-width:100%;overflow-x:auto"><table class="overview" style="font-size:12px">'
                 "<thead><tr>" + head + "</tr></thead><tbody>" + "".join(body) + "</tbody></table></div>")
    parts.append('<p style="font-size:12px">Each cell: the figure [its 95% interval] and its marks (tinted; '
                 "the legend above). <i>better</i>: which direction is better (<i>no direction</i>: the probe "
                 "claims none, so the figure gets no verdict); <i>n</i>: the independent units behind the figure, "
                 "named beside it.</p>")
    notes = [f"{html.escape(r['label'])}: {html.escape(r['interval'])}" for r in screen["rows"] if r.get("interval")]
    if notes:
        parts.append('<p style="font-size:12px"><sup>*</sup> Interval: ' + "; ".join(notes) + ".</p>")
    return "".join(parts)


def first_screen(screen_json: str, out: str, overview_plot: str | None = None) -> None:
    """An RST fragment (resources/report/workflow.rst includes it first): the overview table with its
    marks and legend (raw HTML), then the heat map."""
    text = first_screen_html(read_json(screen_json))
    lines = [".. raw:: html", ""]
    # docutils refuses lines over 10,000 characters: the HTML one element a line
    lines += [f"   {chunk}" for chunk in text.replace("><", ">\n<").splitlines()]
    lines.append("")
    if overview_plot:
        lines += [".. raw:: html", "", *rst_image(overview_plot)]
    with atomic_path(out) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")


def rst_image(png: str) -> list[str]:
    """The lines of a `.. raw:: html` block that show `png` inline (a data URI): docutils refuses
    lines over 10,000 characters, and a data URI may hold line breaks (they are dropped)."""
    encoded = base64.b64encode(Path(png).read_bytes()).decode()
    chunks = [encoded[i:i + 4000] for i in range(0, len(encoded), 4000)]
    return ['   <img alt="model-by-probe overview" style="max-width:100%"',
            '   src="data:image/png;base64,', *(f"   {c}" for c in chunks), '   ">', ""]
