"""The columns of summary.parquet, a row per (transform, k) of one (set, model): written by the
metrics job (metrics.py) and read by the aggregate job (tables.py), which builds its header-only
tables from them when no model runs the probe."""
from __future__ import annotations

import polars as pl

_STATS = ("accuracy", "ndcg", "coe", "roe", "accuracy_at_threshold", "ndcg_at_threshold")
SUMMARY_SCHEMA = {"set": pl.String, "model": pl.String, "transform": pl.String, "k": pl.Int32,
                  **{f"{s}{x}": pl.Float64 for s in _STATS for x in ("", "_ci_low", "_ci_high")},
                  "threshold": pl.Float64, "threshold_percentile": pl.Float64,
                  **{f"{s}{x}": pl.Float64 for s in ("accuracy_full", "ndcg_full") for x in ("", "_ci_low", "_ci_high")},
                  "accuracy_full_ci_method": pl.String, "n_queries": pl.Int64, "n_zero_queries": pl.Int64, "n_correct": pl.Int64, "n_random": pl.Int64,
                  "draws": pl.Int64, "draw_size": pl.Int64, "draw_replace": pl.Boolean, "bootstrap_b": pl.Int64,
                  "threshold_rule": pl.String, "threshold_metric": pl.String, "coe_percentile": pl.Float64,
                  "ndcg_form": pl.String}
