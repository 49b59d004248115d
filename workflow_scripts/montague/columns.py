"""The columns of shares.parquet, a row per (test, key) of one (dataset, model): written by the
score job (scores.py) and read by the aggregate job (tables.py), which builds its header-only
tables from them when no model runs the probe."""
from __future__ import annotations

import polars as pl

SHARE_SCHEMA = {"dataset": pl.String, "model": pl.String, "test": pl.String, "kind": pl.String, "key": pl.String,
                "type1": pl.String, "type2": pl.String, "n": pl.Int64, "n_undefined": pl.Int64,
                "consistency": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
                "mean_of_noun_means": pl.Float64, "mean_of_noun_means_ci_low": pl.Float64,
                "mean_of_noun_means_ci_high": pl.Float64, "resampled": pl.String, "bootstrap_b": pl.Int64,
                # the independent units (the fewest levels of a resampled factor, per role) and the
                # interval's method: Wilson's score interval over them
                "n_units": pl.Int64, "ci_method": pl.String}
