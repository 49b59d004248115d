"""The job of rule csc_aggregate: the overlap table (every (corpus, model, condition) row of the
score jobs' summary.json files, rounded, with each row's separation from its within-sentence AUC
and the condition's margin) and the seed paper's Table 3 layout."""
from __future__ import annotations

import polars as pl

from workflow_scripts.common import atomic_path, read_json, setup_logging
from workflow_scripts.csc.conditions import NEGATIVE_CONDITIONS, fmt_overlap

OVERLAP_SCHEMA = {"corpus": pl.String, "model": pl.String, "condition": pl.String, "overlap": pl.Float64,
                  "n_fuzzed": pl.Int64, "n_negated": pl.Int64, "n_dropped": pl.Int64,
                  "n_units": pl.Int64, "unit": pl.String, "kde": pl.String,
                  "overlap_ci_low": pl.Float64, "overlap_ci_high": pl.Float64, "interval_method": pl.String,
                  "kde_covariance_factor": pl.Float64, "bandwidth_fuzzed": pl.Float64, "bandwidth_negated": pl.Float64,
                  "mean_fuzzed": pl.Float64, "mean_negated": pl.Float64,
                  "gap": pl.Float64, "gap_ci_low": pl.Float64, "gap_ci_high": pl.Float64,
                  "auc": pl.Float64, "auc_ci_low": pl.Float64, "auc_ci_high": pl.Float64,
                  "n_within": pl.Int64, "within_gap": pl.Float64, "within_gap_ci_low": pl.Float64,
                  "within_gap_ci_high": pl.Float64, "within_auc": pl.Float64, "within_auc_ci_low": pl.Float64,
                  "within_auc_ci_high": pl.Float64, "bootstrap_b": pl.Int64,
                  "n_dropped_fuzzed": pl.Int64, "grid_step": pl.Float64, "model_settings": pl.String,
                  "note": pl.String}
ROUNDED = ("overlap", "overlap_ci_low", "overlap_ci_high", "mean_fuzzed", "mean_negated", "gap", "gap_ci_low",
           "gap_ci_high", "auc", "auc_ci_low", "auc_ci_high", "within_gap", "within_gap_ci_low", "within_gap_ci_high",
           "within_auc", "within_auc_ci_low", "within_auc_ci_high", "bandwidth_fuzzed", "bandwidth_negated")
# AUC's chance level: the direction check of the within-sentence AUC (Probe.references)
CHANCE = 0.5


def with_separation(table: pl.DataFrame, margins: dict[str, float]) -> pl.DataFrame:
    """The `separation` of each row from its within-sentence AUC's 95% interval against chance 1/2
    and the condition's margin (verdicts.separation: right, wrong, none, unclear; W and *wrong
    direction* on the first screen where it is wrong), and the margin used (`within_margin`)."""
    from workflow_scripts.verdicts import separation

    rows = table.to_dicts()
    for r in rows:
        delta = margins.get(r["condition"])
        r["within_margin"] = delta
        r["separation"] = (separation(r["within_auc"], r["within_auc_ci_low"], r["within_auc_ci_high"], CHANCE, delta)
                           if delta is not None and None not in (r["within_auc"], r["within_auc_ci_low"],
                                                                 r["within_auc_ci_high"]) else None)
    return pl.DataFrame(rows, schema={**table.schema, "within_margin": pl.Float64, "separation": pl.String})


def table3(table: pl.DataFrame, corpora: list[str] | None = None, models: list[str] | None = None) -> pl.DataFrame:
    """The seed's Table 3 layout: one block per condition, models as rows, corpora as columns,
    each cell the overlap with its 95% interval."""
    corpora = corpora or sorted(set(table["corpus"]))
    models = models or sorted(set(table["model"]))
    cells = {(r["condition"], r["model"], r["corpus"]): fmt_overlap(r) for r in table.iter_rows(named=True)}
    settings = {r["model"]: r["model_settings"] for r in table.iter_rows(named=True)}
    rows = []
    for cond in [c for c in NEGATIVE_CONDITIONS if c in set(table["condition"])]:
        for m in models:
            if not any((cond, m, c) in cells for c in corpora):
                continue
            rows.append({"condition": cond, "model": m, **{c: cells.get((cond, m, c), "") for c in corpora},
                         "model_settings": settings.get(m, "")})
    return pl.DataFrame(rows, schema={"condition": pl.String, "model": pl.String, **{c: pl.String for c in corpora},
                                      "model_settings": pl.String})


def aggregate(summary_paths: list[str], out_csv: str, out_table3: str | None = None,
              corpora: list[str] | None = None, models: list[str] | None = None,
              margins: dict[str, float] | None = None) -> pl.DataFrame:
    """The overlap table (every row of the summaries, rounded; the separation of each from its
    within-sentence AUC and the condition's margin, `margins`: condition -> delta) and Table 3."""
    rows = [r for p in summary_paths for r in read_json(p)["rows"]]
    table = pl.DataFrame(rows, schema=OVERLAP_SCHEMA).sort("corpus", "model", "condition")
    table = table.with_columns(pl.col(*ROUNDED).round(6))
    table = with_separation(table, margins or {})
    with atomic_path(out_csv) as tmp:
        table.write_csv(tmp)
    if out_table3:
        with atomic_path(out_table3) as tmp:
            table3(table, corpora, models).write_csv(tmp)
    return table


# ---- the jobs of rules/csc.smk (workflow_scripts/jobs.py) ----
def run_csc_aggregate(job) -> None:
    """No summaries (no model runs CSC): header-only tables."""
    table = aggregate(list(job.input), job.output.overlap, job.output.table3, job.params.corpora, job.params.models,
                      job.params.margins)
    setup_logging(name="csc").info("%d overlap rows -> %s", table.height, job.output.overlap)
