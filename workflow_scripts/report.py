"""Aggregate step: a Markdown report: the model-by-probe overview, a section per probe that ran (built
from the probes' declarations: title, summary, table pages with their captions, plots) and the input
quality counts."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import polars as pl

from workflow_scripts.common import atomic_path, read_json


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


def probe_section(base: Path, section: dict) -> list[str]:
    """A probe's section: its title and summary (from its declaration), each of its tables as
    Markdown under its caption, then its plots."""
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
    return parts


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
          ingest: list[str] = ()) -> None:
    """report.md: the overview, a section per probe that ran (in report order), the inputs."""
    base = Path(out).parent
    parts = overview_section(overview) if overview else []
    for section in sections:
        parts += probe_section(base, section)
    parts += inputs_section(lengths, list(ingest))
    with atomic_path(out) as tmp:
        tmp.write_text("\n".join(parts) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sections", required=True,
                    help="JSON: [{title, summary, tables: [{path, caption text}], plots: [png]}] per probe that ran")
    ap.add_argument("--overview", help="tables/overview.csv: the model-by-probe section")
    ap.add_argument("--lengths", help="tables/length_buckets.csv, when the study has corpora")
    ap.add_argument("--ingest", nargs="*", default=[], help="the ingest reports of the study's sources")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    build(a.out, json.loads(a.sections), a.overview, a.lengths, a.ingest)


if __name__ == "__main__":
    main(sys.argv[1:])
