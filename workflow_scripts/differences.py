"""Shared stage: a probe's differences table, the paired model comparisons of its statistics (issues 26, 32).

Input: the probe's replicates files (bootstrap.write_replicates; ProbePlan.replicate_files), where a
statistic's B replicates of every model come from the same item resamples (bootstrap.paired_rng),
and, where a statistic is a share of right/wrong items, the per-item outcome files behind it
(ProbePlan.outcome_entries: per dataset, statistic and model a Parquet file with the items' `id`
and `correct`, null where the model has no verdict, and where the entry names a `cluster` column, the
independent unit each item belongs to; triplets' scores.parquet for `accuracy`, clustered by
`original`, the triplet's S).
For every (dataset, statistic) the models that have it are compared in the pairs that
`compare.against` asks for (paired_statistics.compared_pairs: by default every model against the
surface-form baselines and against the first listed model), and each pair A, B gives

  value_a, value_b    the two point estimates (the probe's own tables show them too)
  difference          value_a - value_b
  ci_low, ci_high     the paired 95% percentile interval of the replicate differences (unadjusted)
  p_value             two-sided p-value of "no difference", by the row's `test`
  test                `mcnemar` where both models have per-item outcomes for the statistic: the
                      exact McNemar test on the items both have a verdict on (Dror et al. 2018:
                      the exact paired test for right/wrong items; it needs no B, and a
                      difference the same in every resample still gets its p);
                      `sign_flip_exact` where the outcomes name clusters and some cluster holds
                      more than one of those items (triplets sharing an original sentence): the
                      exact cluster sign-flip test (paired_statistics.sign_flip_exact), McNemar's test
                      with the cluster, not the item, as the independent unit (with one item per
                      cluster the two are the same p);
                      `bootstrap` otherwise: the bootstrap p, never 0, at least 2 / (B + 1)
                      (paired_statistics.bootstrap_p_value)
  discordant_b, _c    exact rows: the items A gets right and B wrong (b), and the reverse (c)
  family              `confirmatory`: a model against a surface-form baseline on one of the probe's
                      headline statistics (probes.headline_statistics; `compare.family:
                      headline_vs_baseline`), the comparisons behind the first screen's B mark; or
                      `exploratory`: every other row (other statistics, every k and
                      transformation, pairs of models). `compare.family: whole_table` makes
                      every row confirmatory.
  p_adjusted, method  `holm`: Holm's step-down p within the probe's confirmatory family;
                      `bh`: the Benjamini-Hochberg q over the table's exploratory rows;
                      `none`: no adjustment (p_adjusted empty) (`compare.error_rate.exploratory`)
  significant         confirmatory rows only: Holm rejects at alpha 0.05; empty on exploratory
                      rows, which are reported, not decided
  b_too_small         confirmatory bootstrap rows only: B cannot reach Holm's first threshold, the
                      smallest p 2 / (B + 1) > alpha / m (m the family's size), so no bootstrap row
                      of the family can be significant; raise the probe's bootstrap_b. False on
                      McNemar rows (an exact test needs no B)
  better              the model that is better by the point estimates, given the statistic's
                      direction (the probe's `directions`); empty where the statistic has no
                      direction or the difference is undefined, `neither` on a tie. Read it with
                      `significant`: a better model whose difference is not significant is not
                      shown to be better.
  replicates          the replicates with a defined difference

Output: <results>/tables/<probe>_differences.csv (a header only where nothing is compared).
The job of rule probe_differences (rules/differences.smk) is run_probe_differences.
"""
from __future__ import annotations

import fnmatch

import numpy as np
import polars as pl

from workflow_scripts.bootstrap import LEVEL
from workflow_scripts.common import atomic_path
from workflow_scripts.paired_statistics import (CONFIRMATORY, adjust_families, b_too_small, cluster_differences,
                                          compared_pairs, discordant_counts, family_of, mcnemar_exact,
                                          paired_difference, sign_flip_exact)

ALPHA = 1.0 - LEVEL
SCHEMA = {"probe": pl.String, "dataset": pl.String, "statistic": pl.String, "model_a": pl.String,
          "model_b": pl.String, "value_a": pl.Float64, "value_b": pl.Float64, "difference": pl.Float64,
          "ci_low": pl.Float64, "ci_high": pl.Float64, "p_value": pl.Float64, "test": pl.String,
          "discordant_b": pl.Int64, "discordant_c": pl.Int64, "family": pl.String,
          "p_adjusted": pl.Float64, "method": pl.String, "significant": pl.Boolean, "b_too_small": pl.Boolean,
          "better": pl.String, "replicates": pl.Int64}


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


def read_outcomes(entries: list[dict]) -> dict[tuple[str, str, str], pl.DataFrame]:
    """(dataset, statistic, model) -> the items' `id` and `correct` (null: no verdict), and their
    `cluster` where the entry names the file's cluster column (entry key `cluster`), from the
    outcome entries {dataset, statistic, model, path[, cluster]} (ProbePlan.outcome_entries). A file
    with a `statistic` column holds several statistics (retrieval: every k): the entry's rows of it."""
    out, files = {}, {}
    for e in entries:
        key = (e["dataset"], e["statistic"], e["model"])
        if key in out:
            raise ValueError(f"two outcome files for {key}: {e['path']}")
        if e["path"] not in files:
            files[e["path"]] = pl.read_parquet(e["path"])
        frame = files[e["path"]]
        if "statistic" in frame.columns:
            frame = frame.filter(pl.col("statistic") == e["statistic"])
        cluster = e.get("cluster")  # a file written before its cluster column: every item alone
        has_cluster = cluster is not None and cluster in frame.columns
        out[key] = frame.select("id", "correct", *([pl.col(cluster).alias("cluster")] if has_cluster else []))
    return out


def mcnemar_row(items_a: pl.DataFrame, items_b: pl.DataFrame) -> dict:
    """The exact test of two models' right/wrong verdicts, paired by item `id` over the items both
    have a verdict on (an item one model cannot judge, e.g. a zero-norm vector, says nothing about
    the pair): McNemar's, or, where the items carry a `cluster` and some cluster holds more than one
    of them, the exact cluster sign-flip test (items sharing a source are not independent)."""
    both = (items_a.join(items_b.select("id", "correct"), on="id", how="inner", suffix="_b")
            .drop_nulls(["correct", "correct_b"]))
    right_a, right_b = both["correct"].to_numpy(), both["correct_b"].to_numpy()
    b, c = discordant_counts(right_a, right_b)
    if not both.height:  # no shared item: nothing to test
        return {"p_value": float("nan"), "test": "mcnemar", "discordant_b": b, "discordant_c": c}
    if "cluster" in both.columns and both["cluster"].n_unique() < both.height:
        p = sign_flip_exact(cluster_differences(right_a, right_b, both["cluster"].cast(pl.String).to_numpy()))
        return {"p_value": p, "test": "sign_flip_exact", "discordant_b": b, "discordant_c": c}
    return {"p_value": mcnemar_exact(b, c), "test": "mcnemar", "discordant_b": b, "discordant_c": c}


def differences(replicates: pl.DataFrame, probe: str, models: dict[str, dict], compare: dict | None,
                directions: tuple = (), headline: tuple = (),
                outcomes: dict[tuple[str, str, str], pl.DataFrame] | None = None) -> pl.DataFrame:
    """The differences table of one probe from its replicate rows (all models, all datasets).
    `models`: name -> config entry (its `family` decides the baselines), in config order;
    `headline`: fnmatch patterns of the headline statistics (the confirmatory family);
    `outcomes`: (dataset, statistic, model) -> per-item verdicts (read_outcomes): a pair with both
    models' verdicts gets an exact p (McNemar's, or the cluster sign-flip test) instead of the bootstrap's. Rows: datasets and
    statistics in the order the replicates give them, then the pairs' order."""
    outcomes = outcomes or {}
    compare = compare or {}
    family = compare.get("family", "headline_vs_baseline")
    exploratory = (compare.get("error_rate") or {}).get("exploratory", "bh")
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
            items_a, items_b = outcomes.get((dataset, statistic, a)), outcomes.get((dataset, statistic, b))
            if items_a is not None and items_b is not None:
                test = mcnemar_row(items_a, items_b)
            else:
                test = {"p_value": d["p_value"], "test": "bootstrap", "discordant_b": None, "discordant_c": None}
            rows.append({"probe": probe, "dataset": dataset, "statistic": statistic, "model_a": a, "model_b": b,
                         "value_a": point_a, "value_b": point_b, "difference": d["difference"],
                         "ci_low": d["ci_low"], "ci_high": d["ci_high"], **test,
                         "family": family_of(statistic, a, b, models, headline, family),
                         "better": better_of(a, b, d["difference"], way), "replicates": d["replicates"]})
    adjusted, method, significant = adjust_families([r["p_value"] for r in rows], [r["family"] for r in rows],
                                                    exploratory, ALPHA)
    # Holm's m: the confirmatory rows with a p-value (an undefined one is not in the family)
    m = sum(1 for r in rows if r["family"] == CONFIRMATORY and np.isfinite(r["p_value"]))
    for r, p, how, sig in zip(rows, adjusted, method, significant):
        r["p_adjusted"], r["method"], r["significant"] = p, how, sig
        if r["family"] != CONFIRMATORY:
            r["b_too_small"] = None
        else:  # an exact test needs no B
            r["b_too_small"] = r["test"] == "bootstrap" and b_too_small(r["replicates"], m, ALPHA)
    return pl.DataFrame(rows, schema=SCHEMA, orient="row") if rows else pl.DataFrame(schema=SCHEMA)


def build(probe: str, paths: list[str], models: dict[str, dict], compare: dict | None, out: str,
          directions: tuple | None = None, headline_options: dict | None = None,
          outcomes: list[dict] | None = None) -> pl.DataFrame:
    """Read the replicates files (and the per-item outcome entries, read_outcomes), compare, write
    the table; the directions and the headline statistics (given the headline options, e.g.
    retrieval's table k) come from the probe's declaration."""
    from workflow_scripts.probes import get, headline_statistics
    if directions is None:
        directions = get(probe).directions
    headline = headline_statistics(probe, headline_options)
    table = differences(read_replicates(paths), probe, models, compare, directions, headline,
                        read_outcomes(outcomes or []))
    with atomic_path(out) as tmp:
        table.write_csv(tmp)
    return table


def summary(probe: str, table: pl.DataFrame) -> str:
    """One line: the family sizes, what Holm rejects, and whether B can reach its threshold."""
    confirmatory = table.filter(pl.col("family") == CONFIRMATORY) if table.height else table
    line = (f"{probe}: {table.height} comparisons; confirmatory family {confirmatory.height} "
            f"({int(confirmatory['significant'].sum()) if confirmatory.height else 0} significant, Holm, "
            f"alpha {ALPHA:.2f}), {table.height - confirmatory.height} exploratory")
    for test, words in (("mcnemar", "McNemar's exact test (per-item right/wrong)"),
                        ("sign_flip_exact", "the exact cluster sign-flip test (items sharing a source)")):
        exact = int((table["test"] == test).sum()) if table.height else 0
        if exact:
            line += f"; {exact} by {words}"
    if confirmatory.height and confirmatory["b_too_small"].any():
        line += ("; B too small for this family: smallest p 2/(B+1) > alpha/m, raise the probe's bootstrap_b")
    return line


# ---- the jobs of rules/differences.smk (workflow_scripts/jobs.py) ----
def run_probe_differences(job) -> None:
    """params.models: name -> {family} of the models that ran the probe, in config order."""
    table = build(job.wildcards.probe, list(job.input.replicates), job.params.models, job.params.compare,
                  job.output[0], headline_options=job.params.headline_options, outcomes=job.params.outcomes)
    print(summary(job.wildcards.probe, table))
