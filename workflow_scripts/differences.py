"""Shared stage: a probe's differences table, the paired model comparisons of its statistics, each
confirmatory one with its verdict word (issues 26, 32, 43, 44), and its rank table.

Input: the probe's replicates files (bootstrap.write_replicates; ProbePlan.replicate_files), where a
statistic's B replicates of every model come from the same item resamples (bootstrap.paired_rng) and
carry the number of independent units behind the figure (`units`), and, where a statistic is a share
of right/wrong items, the per-item outcome files behind it (ProbePlan.outcome_entries: per dataset,
statistic and model a Parquet file with the items' `id` and `correct`, null where the model has no
verdict, and where the entry names a `cluster` column, the independent unit each item belongs to).
For every (dataset, statistic) the models that have it are compared in the pairs that
`compare.against` asks for (paired_statistics.compared_pairs: by default every model against the
surface-form baselines and against the first listed model), and each pair A, B gives

  value_a, value_b    the two point estimates (the probe's own tables show them too)
  difference          value_a - value_b
  ci_low, ci_high     the paired 95% percentile interval of the replicate differences (unadjusted)
  se, skew            the replicate differences' standard error and skewness (the normal
                      approximation behind `bootstrap_z` is sound where the skew is near 0)
  p_value             two-sided p of "no difference", by the row's `test`:
                      `mcnemar`: the exact McNemar test on the items both models have a verdict on;
                      `sign_flip_exact`: the exact cluster sign-flip test where the items' clusters
                      hold more than one of them (items sharing a source are one unit);
                      `bootstrap_z`: 2 Phi(-|difference / se|), the normal approximation of the
                      paired replicates: its smallest value does not depend on B
                      (paired_statistics.normal_p_value)
  discordant_b, _c    exact rows: the items A gets right and B wrong (b), and the reverse (c)
  family              `confirmatory`: a model against a surface-form baseline on one of the probe's
                      headline statistics (`compare.family: headline_vs_baseline`), or against the
                      statistic's declared reference where that baseline is degenerate (below);
                      `exploratory`: every other row. `compare.family: whole_table`: every row
  p_adjusted, method  `holm` within the probe's confirmatory family; `bh`: the Benjamini-Hochberg
                      q over the exploratory rows; `none`
  significant         confirmatory rows only: Holm rejects at alpha 0.05
  better              the better model by the point estimates, given the statistic's direction
  replicates, units   the replicates with a defined difference; the independent units behind the
                      comparison (the fewer of the two models')
  baseline_degenerate the baseline's figure is the same in every resample (fixed by its
                      construction: Montague's ties) on a statistic with a declared reference: no
                      verdict against it (this row is exploratory); a row against the reference
                      (model_b `chance` or `ceiling`, value_b its level) takes its place
  margin              the smallest effect of interest delta of the statistic (verdicts.margin_of)
  signed_difference   d = s (value_a - value_b), s = +1 where higher is better: d > 0 favours A
  adjusted_low, _high the family-adjusted (1 - alpha/m) interval of d: normal from se, Newcombe's
                      score interval for paired shares on exact rows (counts scaled to the
                      clusters on sign-flip rows), Wilson's over the units against a reference share
  verdict, reason     confirmatory rows: the word (verdicts.word; `wrong direction` where the
                      model separates the wrong way: `separation_a`), or `no verdict` and why
  separation_a        statistics with a direction check (Probe.separations): A's own separation
                      from its reference (verdicts.separation: right, wrong, none, unclear)
  mde, units_needed   the smallest effect this comparison could detect with 80% power at the
                      family's level, and about how many units would detect delta
  rank_a, rank_b      the two models' rank confidence sets among every model of the figure

Output: <results>/tables/<probe>_differences.csv (a header only where nothing is compared) and
<results>/tables/<probe>_ranks.csv: per headline figure with a direction and model, its value and its
simultaneous rank confidence set (verdicts.rank_sets) from all pairwise comparisons of the figure
with Holm over them.
The job of rule probe_differences (rules/differences.smk) is run_probe_differences.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass

import numpy as np
import polars as pl

from workflow_scripts import verdicts
from workflow_scripts.bootstrap import LEVEL, percentile_interval
from workflow_scripts.common import atomic_path
from workflow_scripts.encoders import is_baseline
from workflow_scripts.paired_statistics import (CONFIRMATORY, EXPLORATORY, adjust_families,
                                                cluster_differences, compared_pairs, holm, mcnemar_exact,
                                                newcombe_paired_interval, normal_p_value, replicate_se,
                                                replicate_skew, sign_flip_exact, wilson_interval)

ALPHA = 1.0 - LEVEL
SCHEMA = {"probe": pl.String, "dataset": pl.String, "statistic": pl.String, "model_a": pl.String,
          "model_b": pl.String, "value_a": pl.Float64, "value_b": pl.Float64, "difference": pl.Float64,
          "ci_low": pl.Float64, "ci_high": pl.Float64, "se": pl.Float64, "skew": pl.Float64,
          "p_value": pl.Float64, "test": pl.String,
          "discordant_b": pl.Int64, "discordant_c": pl.Int64, "family": pl.String,
          "p_adjusted": pl.Float64, "method": pl.String, "significant": pl.Boolean,
          "ahead": pl.String, "replicates": pl.Int64, "units": pl.Int64, "baseline_degenerate": pl.Boolean,
          "margin": pl.Float64, "signed_difference": pl.Float64, "adjusted_low": pl.Float64,
          "adjusted_high": pl.Float64, "verdict": pl.String, "reason": pl.String, "separation_a": pl.String,
          "mde": pl.Float64, "units_needed": pl.Int64, "rank_a": pl.String, "rank_b": pl.String}
RANK_SCHEMA = {"probe": pl.String, "dataset": pl.String, "statistic": pl.String, "model": pl.String,
               "value": pl.Float64, "rank_low": pl.Int64, "rank_high": pl.Int64, "models": pl.Int64,
               "rank": pl.String, "method": pl.String}
RANK_METHOD = "simultaneous (Mogstad et al. 2024): all pairwise comparisons of the figure, Holm over them"


@dataclass(frozen=True)
class Declared:
    """What a probe declares about its statistics for the verdicts (workflow_scripts/probes.py Probe):
    directions, margins, references (the level compared with where the baseline is degenerate, and
    the chance level of a direction check), separations (statistics with a direction check) and
    shares (statistics that are shares of right/wrong units: score intervals over the units)."""
    directions: tuple = ()
    margins: tuple = ()
    references: tuple = ()
    separations: tuple = ()
    shares: tuple = ()

    @classmethod
    def of(cls, probe: str) -> "Declared":
        from workflow_scripts.probes import get
        p = get(probe)
        return cls(p.directions, p.margins, p.references, p.separations, p.shares)


def direction(directions: tuple, statistic: str) -> str | None:
    """"higher" or "lower" (which way is better) for a statistic, from a probe's `directions`
    ((fnmatch pattern, direction) pairs, first match wins); None where none matches."""
    for pattern, way in directions:
        if fnmatch.fnmatchcase(statistic, pattern):
            return way
    return None


def ahead_of(model_a: str, model_b: str, difference: float, way: str | None) -> str | None:
    """The model whose point figure is on the better side (`neither` on a tie), whatever the
    verdict: a description of the point estimate, not a claim that it is better."""
    if way is None or not np.isfinite(difference):
        return None
    if difference == 0:
        return "neither"
    return model_a if (difference > 0) == (way == "higher") else model_b


def read_replicates(paths: list[str]) -> pl.DataFrame:
    frames = [pl.read_parquet(p) for p in paths]
    frames = [f if "units" in f.columns else f.with_columns(pl.lit(None, pl.Int64).alias("units"))
              for f in frames if f.height]
    if not frames:
        return pl.DataFrame(schema={"probe": pl.String, "dataset": pl.String, "statistic": pl.String,
                                    "model": pl.String, "point": pl.Float64, "replicate": pl.Int32,
                                    "value": pl.Float64, "units": pl.Int64})
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
    of them, the exact cluster sign-flip test (items sharing a source are not independent). `table`:
    the 2 x 2 counts (both right, A only, B only, neither) scaled to the independent units (clusters
    / items: the conservative design effect), for the score interval of the difference."""
    both = (items_a.join(items_b.select("id", "correct"), on="id", how="inner", suffix="_b")
            .drop_nulls(["correct", "correct_b"]))
    right_a, right_b = both["correct"].to_numpy().astype(bool), both["correct_b"].to_numpy().astype(bool)
    b, c = int(np.sum(right_a & ~right_b)), int(np.sum(~right_a & right_b))
    counts = (int(np.sum(right_a & right_b)), b, c, int(np.sum(~right_a & ~right_b)))
    out = {"discordant_b": b, "discordant_c": c, "test": "mcnemar"}
    if not both.height:  # no shared item: nothing to test
        return {**out, "p_value": float("nan"), "table": None}
    if "cluster" in both.columns and both["cluster"].n_unique() < both.height:
        clusters = both["cluster"].cast(pl.String).to_numpy()
        p = sign_flip_exact(cluster_differences(right_a, right_b, clusters))
        scale = both["cluster"].n_unique() / both.height
        return {**out, "p_value": p, "test": "sign_flip_exact", "table": tuple(x * scale for x in counts)}
    return {**out, "p_value": mcnemar_exact(b, c), "table": counts}


def _finite(x) -> bool:
    return x is not None and bool(np.isfinite(x))


def compare_pair(model_a, model_b, a, b, items: tuple | None) -> dict:
    """One pair's difference, intervals and test: `a`, `b` (point, replicates, units); `items` the two
    models' per-item verdicts where both have them (exact tests)."""
    (point_a, reps_a, units_a), (point_b, reps_b, units_b) = a, b
    if len(reps_a) != len(reps_b):
        raise ValueError(f"{model_a} has {len(reps_a)} replicates, {model_b} {len(reps_b)}; paired replicates "
                         "come from one run with one bootstrap_b")
    diff = np.asarray(reps_a, np.float64) - np.asarray(reps_b, np.float64)
    low, high, valid = percentile_interval(diff)
    difference = float(point_a - point_b)
    se = replicate_se(diff) if valid else float("nan")
    row = {"model_a": model_a, "model_b": model_b, "value_a": float(point_a), "value_b": float(point_b),
           "difference": difference, "ci_low": low, "ci_high": high, "se": se, "skew": replicate_skew(diff),
           "replicates": int(valid), "units": min((u for u in (units_a, units_b) if u is not None), default=None),
           "discordant_b": None, "discordant_c": None, "table": None}
    if items is not None:
        row.update(mcnemar_row(*items))
    else:
        row.update(test="bootstrap_z", p_value=normal_p_value(difference, se) if np.isfinite(low) else float("nan"))
    return row


def reference_row(model: str, a: tuple, level: float, name: str) -> dict:
    """A model against a declared reference level (chance, a ceiling): value_b is the level, the
    difference's replicates are the model's own."""
    point, reps, units = a
    reps = np.asarray(reps, np.float64)
    low, high, valid = percentile_interval(reps - level)
    se = replicate_se(reps) if valid else float("nan")
    difference = float(point - level)
    return {"model_a": model, "model_b": name, "value_a": float(point), "value_b": float(level),
            "difference": difference, "ci_low": low, "ci_high": high, "se": se, "skew": replicate_skew(reps),
            "replicates": int(valid), "units": units, "discordant_b": None, "discordant_c": None,
            "table": None, "test": "bootstrap_z",
            "p_value": normal_p_value(difference, se) if np.isfinite(low) else float("nan")}


def degenerate(reps: np.ndarray) -> bool:
    """A figure the same in every resample: fixed by the design, whatever the items drawn."""
    finite = np.asarray(reps, np.float64)
    finite = finite[np.isfinite(finite)]
    return len(finite) > 1 and np.ptp(finite) == 0


def adjusted_interval(r: dict, sign: float, m: int, share: bool, reference: float | None) -> tuple[float, float]:
    """The family-adjusted (1 - alpha/m) interval of the direction-signed difference of one row."""
    level = 1.0 - ALPHA / max(1, m)
    if r.get("table") is not None:
        low, high = newcombe_paired_interval(*r["table"], level=level)
    elif reference is not None and share and r.get("units"):
        lo, hi = wilson_interval(r["value_a"], r["units"], level)
        low, high = lo - reference, hi - reference
    else:
        low, high = verdicts.adjusted_interval(r["difference"], r["se"], ALPHA, m)
    return (low, high) if sign > 0 else (-high, -low)


def decide(r: dict, m: int, declared: Declared, margins: dict, separation: str | None, baselines: set) -> None:
    """The verdict of a confirmatory row, in place (verdicts.word and the module docstring)."""
    way = direction(declared.directions, r["statistic"])
    delta, _ = verdicts.margin_of(declared.margins, r["statistic"], margins)
    r["margin"] = delta
    if r["model_a"] in baselines:
        r.update(verdict=verdicts.NO_VERDICT, reason="baseline")
        return
    if way is None:
        r.update(verdict=verdicts.NO_VERDICT, reason="no direction")
        return
    sign = 1.0 if way == "higher" else -1.0
    reference = r["value_b"] if r["model_b"] in REFERENCE_NAMES else None
    share = verdicts.declared(tuple((p,) for p in declared.shares), r["statistic"]) is not None
    low, high = adjusted_interval(r, sign, m, share, reference)
    r.update(signed_difference=sign * r["difference"] if _finite(r["difference"]) else None,
             adjusted_low=low if np.isfinite(low) else None, adjusted_high=high if np.isfinite(high) else None)
    z = verdicts.critical_z(ALPHA, m)
    se = r["se"] if r.get("table") is None and reference is None else (high - low) / (2 * z)
    r["mde"] = verdicts.minimum_detectable(se, ALPHA, m) if _finite(se) else None
    r["units_needed"] = verdicts.units_needed(r.get("units"), r["mde"], delta) if r["mde"] is not None else None
    if separation == "wrong":
        r.update(verdict=verdicts.WRONG_DIRECTION, reason="")
        return
    if not _finite(r["p_value"]) or r["significant"] is None:
        r.update(verdict=verdicts.NO_VERDICT, reason="no p")
        return
    said = verdicts.word(bool(r["significant"]), r["signed_difference"], low, high, delta)
    r.update(verdict=said or verdicts.NO_VERDICT, reason="" if said else "tie")


REFERENCE_NAMES = ("chance", "ceiling", "floor")


def figure_ranks(probe: str, dataset: str, statistic: str, per_model: dict, names: list[str], way: str,
                 outcomes: dict) -> list[dict]:
    """Every model's simultaneous rank confidence set on one figure: all pairs compared (the exact
    test where both have per-item verdicts, else the normal approximation), Holm over the pairs."""
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    results = []
    for a, b in pairs:
        ia, ib = outcomes.get((dataset, statistic, a)), outcomes.get((dataset, statistic, b))
        results.append(compare_pair(a, b, per_model[a], per_model[b], (ia, ib) if ia is not None and ib is not None
                                    else None))
    _, rejected = holm([r["p_value"] for r in results], ALPHA)
    beats = set()
    for r, sig in zip(results, rejected):
        if sig and r["difference"] != 0:
            up = (r["difference"] > 0) == (way == "higher")
            beats.add((r["model_a"], r["model_b"]) if up else (r["model_b"], r["model_a"]))
    sets = verdicts.rank_sets(names, beats)
    sign = 1.0 if way == "higher" else -1.0
    # the leaderboard's order: best first by the rank sets, then by the figure itself
    order = sorted(names, key=lambda m: (sets[m][0], sets[m][1], -sign * per_model[m][0]))
    return [{"probe": probe, "dataset": dataset, "statistic": statistic, "model": m, "value": per_model[m][0],
             "rank_low": sets[m][0], "rank_high": sets[m][1], "models": len(names),
             "rank": verdicts.rank_text(*sets[m], len(names)), "method": RANK_METHOD} for m in order]


def differences(replicates: pl.DataFrame, probe: str, models: dict[str, dict], compare: dict | None,
                directions: tuple = (), headline: tuple = (),
                outcomes: dict[tuple[str, str, str], pl.DataFrame] | None = None,
                declared: Declared | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The differences table and the rank table of one probe from its replicate rows (all models,
    all datasets). `models`: name -> config entry (its `family` decides the baselines), in config
    order; `headline`: fnmatch patterns of the headline statistics (the confirmatory family);
    `outcomes`: (dataset, statistic, model) -> per-item verdicts (read_outcomes): a pair with both
    models' verdicts gets an exact p (McNemar's, or the cluster sign-flip test); `declared`: the
    probe's margins, references, separations and shares (default: `directions` alone). Rows:
    datasets and statistics in the order the replicates give them, then the pairs' order."""
    from workflow_scripts.paired_statistics import family_of
    outcomes = outcomes or {}
    compare = compare or {}
    declared = declared or Declared(directions=directions)
    family = compare.get("family", "headline_vs_baseline")
    exploratory = (compare.get("error_rate") or {}).get("exploratory", "bh")
    margins = (compare.get("margins") or {}).get(probe) or {}
    baselines = {m for m, spec in models.items() if is_baseline(spec)}
    rows, ranks = [], []
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
            units = frame["units"][0] if "units" in frame.columns else None
            per_model[name[0]] = (float(frame["point"][0]), frame["value"].to_numpy(), units)
        way = direction(declared.directions, statistic)
        reference = verdicts.declared(declared.references, statistic)
        checks = verdicts.declared(tuple((p,) for p in declared.separations), statistic) is not None
        separations = {}
        if checks and reference is not None:
            delta, _ = verdicts.margin_of(declared.margins, statistic, margins)
            for m, (point, reps, _) in per_model.items():
                low, high, _ = percentile_interval(reps)
                separations[m] = verdicts.separation(point, low, high, reference[0], delta or 0.0)
        replaced = set()
        for a, b in compared_pairs({m: models.get(m, {}) for m in names}, compare):
            if a in baselines and b not in baselines:
                a, b = b, a  # the model first, the baseline second: d > 0 then favours the model
            ia, ib = outcomes.get((dataset, statistic, a)), outcomes.get((dataset, statistic, b))
            try:
                r = compare_pair(a, b, per_model[a], per_model[b], (ia, ib) if ia is not None and ib is not None
                                 else None)
            except ValueError as error:
                raise ValueError(f"{probe} {dataset} {statistic}: {error}") from None
            r.update(probe=probe, dataset=dataset, statistic=statistic, ahead=ahead_of(a, b, r["difference"], way),
                     family=family_of(statistic, a, b, models, headline, family), baseline_degenerate=None,
                     separation_a=separations.get(a))
            base = b if b in baselines else a if a in baselines else None
            if r["family"] == CONFIRMATORY and base is not None and reference is not None:
                r["baseline_degenerate"] = degenerate(per_model[base][1])
                if r["baseline_degenerate"]:
                    # no verdict against a figure fixed by construction: the model against the
                    # reference decides instead (one such row per model)
                    r["family"], r["reason"] = EXPLORATORY, "baseline degenerate"
                    model = a if base == b else b
                    if model not in replaced and model not in baselines:
                        replaced.add(model)
                        ref = reference_row(model, per_model[model], reference[0], reference[1])
                        ref.update(probe=probe, dataset=dataset, statistic=statistic, family=CONFIRMATORY,
                                   ahead=ahead_of(model, reference[1], ref["difference"], way),
                                   baseline_degenerate=None, separation_a=separations.get(model))
                        rows.append(r)
                        r = ref
            rows.append(r)
        if way is not None and any(fnmatch.fnmatchcase(statistic, h) for h in headline) and len(names) > 1:
            ranks += figure_ranks(probe, dataset, statistic, per_model, names, way, outcomes)
    adjusted, method, significant = adjust_families([r["p_value"] for r in rows], [r["family"] for r in rows],
                                                    exploratory, ALPHA)
    # Holm's m: the confirmatory rows with a p-value (an undefined one is not in the family)
    m = sum(1 for r in rows if r["family"] == CONFIRMATORY and np.isfinite(r["p_value"]))
    rank_of = {(x["dataset"], x["statistic"], x["model"]): x["rank"] for x in ranks}
    for r, p, how, sig in zip(rows, adjusted, method, significant):
        r["p_adjusted"], r["method"], r["significant"] = p, how, sig
        if r["family"] == CONFIRMATORY:
            decide(r, m, declared, margins, r.get("separation_a"), baselines)
        r["rank_a"] = rank_of.get((r["dataset"], r["statistic"], r["model_a"]))
        r["rank_b"] = rank_of.get((r["dataset"], r["statistic"], r["model_b"]))
    out = [{k: r.get(k) for k in SCHEMA} for r in rows]
    table = pl.DataFrame(out, schema=SCHEMA, orient="row") if out else pl.DataFrame(schema=SCHEMA)
    rank_table = pl.DataFrame(ranks, schema=RANK_SCHEMA, orient="row") if ranks else pl.DataFrame(schema=RANK_SCHEMA)
    return table, rank_table


def build(probe: str, paths: list[str], models: dict[str, dict], compare: dict | None, out: str,
          directions: tuple | None = None, headline_options: dict | None = None,
          outcomes: list[dict] | None = None, ranks_out: str | None = None) -> pl.DataFrame:
    """Read the replicates files (and the per-item outcome entries, read_outcomes), compare, write
    the tables; the directions, margins, references and headline statistics (given the headline
    options, e.g. retrieval's table k) come from the probe's declaration."""
    from workflow_scripts.probes import headline_statistics
    declared = Declared.of(probe)
    if directions is not None:
        declared = Declared(directions, declared.margins, declared.references, declared.separations, declared.shares)
    headline = headline_statistics(probe, headline_options)
    table, ranks = differences(read_replicates(paths), probe, models, compare, declared.directions, headline,
                               read_outcomes(outcomes or []), declared)
    with atomic_path(out) as tmp:
        table.write_csv(tmp)
    if ranks_out:
        with atomic_path(ranks_out) as tmp:
            ranks.write_csv(tmp)
    return table


def summary(probe: str, table: pl.DataFrame) -> str:
    """One line: the family sizes, what Holm rejects, the verdict words and the exact tests."""
    confirmatory = table.filter(pl.col("family") == CONFIRMATORY) if table.height else table
    line = (f"{probe}: {table.height} comparisons; confirmatory family {confirmatory.height} "
            f"({int(confirmatory['significant'].sum()) if confirmatory.height else 0} significant, Holm, "
            f"alpha {ALPHA:.2f}), {table.height - confirmatory.height} exploratory")
    if confirmatory.height:
        counts = confirmatory.group_by("verdict", maintain_order=True).len().rows()
        line += "; verdicts: " + ", ".join(f"{n} {w}" for w, n in counts)
    for test, words in (("mcnemar", "McNemar's exact test (per-item right/wrong)"),
                        ("sign_flip_exact", "the exact cluster sign-flip test (items sharing a source)")):
        exact = int((table["test"] == test).sum()) if table.height else 0
        if exact:
            line += f"; {exact} by {words}"
    return line


# ---- the jobs of rules/differences.smk (workflow_scripts/jobs.py) ----
def run_probe_differences(job) -> None:
    """params.models: name -> {family} of the models that ran the probe, in config order."""
    table = build(job.wildcards.probe, list(job.input.replicates), job.params.models, job.params.compare,
                  job.output.differences, headline_options=job.params.headline_options,
                  outcomes=job.params.outcomes, ranks_out=job.output.ranks)
    print(summary(job.wildcards.probe, table))
