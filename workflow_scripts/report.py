"""Aggregate step: a Markdown report linking the tables, the plots and the data-quality counts."""
from __future__ import annotations

import argparse
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


def build(overlap: str, lengths: str, ingest: list[str], perturb: list[str], plots: list[str], out: str,
          table3: str | None = None, triplets_overview: str | None = None, triplet_tables: list[str] = (),
          triplet_reports: list[str] = (), triplet_plots: list[str] = (), overview: str | None = None) -> None:
    base = Path(out).parent
    parts = ["# Concept Separation Curves", "",
             "Overlap of the normalised densities of fuzzed and negated similarities (equation 2; "
             "lower = the model separates meaning from surface form better), with its bootstrapped 95% "
             "interval (original sentences resampled, their variants with them).", ""]
    if table3:
        parts += ["## Table 3 layout: models x corpora, per condition", "",
                  markdown_table(pl.read_csv(table3, infer_schema=False)), ""]
    parts += ["## All overlap rows", "", markdown_table(pl.read_csv(overlap)), "",
             "## Sentence lengths (whitespace tokens, % of sentences)", "",
             markdown_table(pl.read_csv(lengths, infer_schema=False)), "",
             "## Input quality", "", "| source | records | skipped | reasons |", "|---|---|---|---|"]
    for path in ingest:
        r = read_json(path)
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(r["skipped"].items())) or "none"
        parts.append(f"| {r['source']} | {r['records']} | {r['skipped_total']} | {reasons} |")
    parts += ["", "## Perturbations", "", "| corpus | sentences | variants | grammatical negation outcomes |",
              "|---|---|---|---|"]
    for path in perturb:
        r = read_json(path)
        variants = ", ".join(f"{k}: {v}" for k, v in sorted(r["variants"].items()))
        gram = r["grammatical_negation"]
        outcomes = ", ".join(f"{k}: {v}" for k, v in gram["outcomes"].items()) if gram else "n/a"
        parts.append(f"| {r['corpus']} | {r['sentences']} | {variants} | {outcomes} |")
    parts += ["", "## Curves", ""]
    for plot in plots:
        rel = os.path.relpath(plot, base)
        parts.append(f"![{Path(plot).parent.name} / {Path(plot).stem}]({rel})")
    if triplets_overview:
        parts += triplet_section(base, triplets_overview, triplet_tables, triplet_reports, triplet_plots)
    if overview:
        parts += [""] + overview_section(overview)
    with atomic_path(out) as tmp:
        tmp.write_text("\n".join(parts) + "\n", encoding="utf-8")


def triplet_section(base: Path, overview: str, tables: list[str], reports: list[str], plots: list[str]) -> list[str]:
    parts = ["", "# Sentence triplets", "",
             "Share of triplets (S, S+, S*) where cos(S, S+) > cos(S, S*) (Negation Variants: cos(S+, S*) above "
             "both), with bootstrapped 95% intervals; models as rows, datasets as columns.", "",
             markdown_table(pl.read_csv(overview, infer_schema=False)), "",
             "| dataset | triplets | paper's size | per source: tried / kept |", "|---|---|---|---|"]
    for path in reports:
        r = read_json(path)
        per_source = "; ".join(f"{name}: {s.get('tried', '?')} / {s.get('kept', '?')}"
                               for name, s in r.get("sources", {}).items()) or "n/a"
        parts.append(f"| {r['dataset']} | {r['size']} | {r.get('target') or 'n/a'} | {per_source} |")
    for table, plot in zip(tables, plots):
        name = Path(table).stem.removeprefix("triplets_")
        parts += ["", f"## {name}", "", markdown_table(pl.read_csv(table, infer_schema=False)), "",
                  f"![{name}]({os.path.relpath(plot, base)})"]
    return parts


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--overlap", required=True)
    ap.add_argument("--table3")
    ap.add_argument("--lengths", required=True)
    ap.add_argument("--ingest", nargs="+", required=True)
    ap.add_argument("--perturb", nargs="+", required=True)
    ap.add_argument("--plots", nargs="+", required=True)
    ap.add_argument("--triplets-overview")
    ap.add_argument("--triplet-tables", nargs="*", default=[])
    ap.add_argument("--triplet-reports", nargs="*", default=[])
    ap.add_argument("--triplet-plots", nargs="*", default=[])
    ap.add_argument("--overview", help="tables/overview.csv: the model-by-probe section")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    build(a.overlap, a.lengths, a.ingest, a.perturb, a.plots, a.out, a.table3, a.triplets_overview,
          a.triplet_tables, a.triplet_reports, a.triplet_plots, a.overview)


if __name__ == "__main__":
    main(sys.argv[1:])
