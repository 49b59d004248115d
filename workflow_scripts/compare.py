"""Shared stage: a probe's differences table, the paired model comparisons of its statistics (issue 26).

Input: the probe's replicates files (bootstrap.write_replicates; ProbePlan.replicate_files), where a
statistic's B replicates of every model come from the same item resamples (bootstrap.paired_rng).
For every (dataset, statistic) the models that have it are compared in the pairs that
`compare.against` asks for (differences.compared_pairs: by default every model against the
surface-form baselines and against the first listed model), and each pair A, B gives

  value_a, value_b    the two point estimates (the probe's own tables show them too)
  difference          value_a - value_b
  ci_low, ci_high     the paired 95% percentile interval of the replicate differences
  p_value             two-sided bootstrap p-value (differences.paired_difference)
  p_holm, significant Holm's step-down correction over all comparisons of the table, alpha 0.05
  better              the model that is better by the point estimates, given the statistic's
                      direction (the probe's `directions`); empty where the statistic has no
                      direction or the difference is undefined, `neither` on a tie. Read it with
                      `significant`: a better model whose difference is not significant is not
                      shown to be better.
  replicates          the replicates with a defined difference

Output: <results>/tables/<probe>_differences.csv (a header only where nothing is compared).

Usage: python -m workflow_scripts.compare --probe P --replicates R.parquet ... --models JSON
           --compare JSON --out tables/P_differences.csv
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys

import numpy as np
import polars as pl

from workflow_scripts.bootstrap import LEVEL
from workflow_scripts.common import atomic_path
from workflow_scripts.differences import compared_pairs, holm, paired_difference

ALPHA = 1.0 - LEVEL
SCHEMA = {"probe": pl.String, "dataset": pl.String, "statistic": pl.String, "model_a": pl.String,
          "model_b": pl.String, "value_a": pl.Float64, "value_b": pl.Float64, "difference": pl.Float64,
          "ci_low": pl.Float64, "ci_high": pl.Float64, "p_value": pl.Float64, "p_holm": pl.Float64,
          "significant": pl.Boolean, "better": pl.String, "replicates": pl.Int64}


def direction(directions: tuple, statistic: str) -> str | None:
    """"higher" or "lower" (which way is better) for a statistic, from a probe's `directions`
    ((fnmatch pattern, direction) pairs, first match wins); None where none matches."""
    for pattern, way in directions:
        if fnmatch.fnmatchcase(statistic, pattern):
            return way
    return None


def better_of(model_a: str, model_b: str, difference: float, way: str | None) -> str | None:
    if way is None or not np.isfinite(difference):
        return None
    if difference == 0:
        return "neither"
    return model_a if (difference > 0) == (way == "higher") else model_b


def read_replicates(paths: list[str]) -> pl.DataFrame:
    frames = [pl.read_parquet(p) for p in paths]
    frames = [f for f in frames if f.height]
    if not frames:
        return pl.DataFrame(schema={"probe": pl.String, "dataset": pl.String, "statistic": pl.String,
                                    "model": pl.String, "point": pl.Float64, "replicate": pl.Int32,
                                    "value": pl.Float64})
    return pl.concat(frames, how="vertical_relaxed")


def differences(replicates: pl.DataFrame, probe: str, models: dict[str, dict], compare: dict | None,
                directions: tuple = ()) -> pl.DataFrame:
    """The differences table of one probe from its replicate rows (all models, all datasets).
    `models`: name -> config entry (its `family` decides the baselines), in config order. Rows:
    datasets and statistics in the order the replicates give them, then the pairs' order."""
    rows = []
    own = replicates.filter(pl.col("probe") == probe)
    keys = own.select("dataset", "statistic").unique(maintain_order=True).rows()
    for dataset, statistic in keys:
        part = own.filter((pl.col("dataset") == dataset) & (pl.col("statistic") == statistic))
        present = part["model"].unique(maintain_order=True).to_list()
        names = [m for m in models if m in present] + sorted(set(present) - set(models))
        per_model = {}
        for name, frame in part.sort("replicate").group_by("model", maintain_order=True):
            frame = frame.sort("replicate")
            if frame["replicate"].n_unique() != frame.height:
                raise ValueError(f"{probe} {dataset} {statistic}: model {name[0]!r} has a replicate twice "
                                 "(two replicates files for one model?)")
            per_model[name[0]] = (float(frame["point"][0]), frame["value"].to_numpy())
        way = direction(directions, statistic)
        for a, b in compared_pairs({m: models.get(m, {}) for m in names}, compare):
            (point_a, reps_a), (point_b, reps_b) = per_model[a], per_model[b]
            if len(reps_a) != len(reps_b):
                raise ValueError(f"{probe} {dataset} {statistic}: {a} has {len(reps_a)} replicates, {b} "
                                 f"{len(reps_b)}; paired replicates come from one run with one bootstrap_b")
            d = paired_difference(point_a, point_b, reps_a, reps_b)
            rows.append({"probe": probe, "dataset": dataset, "statistic": statistic, "model_a": a, "model_b": b,
                         "value_a": point_a, "value_b": point_b, "difference": d["difference"],
                         "ci_low": d["ci_low"], "ci_high": d["ci_high"], "p_value": d["p_value"],
                         "better": better_of(a, b, d["difference"], way), "replicates": d["replicates"]})
    adjusted, rejected = holm([r["p_value"] for r in rows], ALPHA)
    for r, p, sig in zip(rows, adjusted, rejected):
        r["p_holm"], r["significant"] = p, sig
    return pl.DataFrame(rows, schema=SCHEMA, orient="row") if rows else pl.DataFrame(schema=SCHEMA)


def build(probe: str, paths: list[str], models: dict[str, dict], compare: dict | None, out: str,
          directions: tuple | None = None) -> pl.DataFrame:
    """Read the replicates files, compare, write the table; the directions default to the probe's
    declaration."""
    if directions is None:
        from workflow_scripts.probes import get
        directions = get(probe).directions
    table = differences(read_replicates(paths), probe, models, compare, directions)
    with atomic_path(out) as tmp:
        table.write_csv(tmp)
    return table


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probe", required=True)
    ap.add_argument("--replicates", nargs="*", default=[])
    ap.add_argument("--models", required=True, help="JSON: [[model, family], ...] in config order")
    ap.add_argument("--compare", default="{}", help="JSON: the config's `compare` section")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    models = {name: {"family": family} for name, family in json.loads(a.models)}
    table = build(a.probe, a.replicates, models, json.loads(a.compare), a.out)
    print(f"{a.probe}: {table.height} comparisons, {int(table['significant'].sum()) if table.height else 0} "
          f"significant after Holm's correction (alpha {ALPHA:.2f})")


if __name__ == "__main__":
    main(sys.argv[1:])
