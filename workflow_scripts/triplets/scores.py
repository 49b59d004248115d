"""Sentence-triplet probe, scoring and tables (methods.md §3; seed paper 002, Tables 2-6).

Score: for every triplet (S, S+, S*) of a dataset, the three cosines cos(S,S+), cos(S,S*) and
cos(S+,S*), read from one model's vector store (texts keyed by common.text_key). A zero-norm vector
(e.g. a TF-IDF text with no known word) has no cosine: NaN, and the triplet's `correct` is null.
Because every vector takes part in two of the three pairs, a triplet has either all three cosines
or at least two NaN ones: "defined" below means all three cosines are numbers.

Scoring rules (per dataset, from the config):
- "strict": correct <=> cos(S,S+) > cos(S,S*); a tie is incorrect (the paper's "higher than").
- "negation_variants" (Negation Variants, Table 3): correct <=> cos(S+,S*) > cos(S,S+) and
  cos(S+,S*) > cos(S,S*), both strict.
- "passive_over_reordered" (Argument Sensitivity, the seed's prose): correct <=> cos(S,S+) >
  cos(S+,S*). The seed's Table 5 figures follow "strict", our default there
  (triplets.argument_sensitivity_scoring). The table's `scoring_rule` states each row's rule.

Aggregate: per (dataset, model), over the n defined triplets (n_undefined are counted, not used):
accuracy = share of correct triplets in [0, 1], and the mean of each of the three cosines. Each has
a 95% interval. The means take the percentile bootstrap interval: triplets resampled with
replacement, B times -- or, where the triplets carry clusters (`subject`, `verb`: the
argument-sensitivity templates) and the bootstrap unit is "clusters", subjects and verbs resampled
(two-way, as Montague's nouns x adjectives), since triplets sharing a subject or verb are not
independent; and where several triplets share a unit (`cluster`: the connected component of S in
the pair graph of the SICK and MSRP sources -- a pair's two near-identical sentences, sentences
chained through pairs -- else S itself), the units are resampled (one-way cluster bootstrap), each
with all its triplets. `unit` and `n_units` say what was resampled and how many ("pair clusters",
"originals", "subjects x verbs", "triplets"). The accuracy, a share of right/wrong triplets, takes
Wilson's score interval over the independent units instead (n_units; for crossed subjects x verbs
the smaller factor): one method at every share, monotone in it and never of zero width (0 of 445:
[0, 0.0086]); `accuracy_ci_method` says so. The resamples are paired across models (issue 26):
each statistic's stream is seeded by the config seed and ("triplets", dataset, statistic) -- never
the model -- and draws over all triplets in id order, so replicate b resamples the same triplets for
every model (a model's undefined triplets weigh 0). An identical copy of a model gets identical
intervals, and the replicates (written for the differences table, differences.py, with the units
behind them) subtract replicate by replicate. B = 0 or n = 0 give NaN bounds (and n = 0 a NaN
estimate).

Tables: triplets_accuracy.csv (machine-readable, shares); per dataset triplets_{dataset}.csv in
the layout of the paper's Tables 2-6 (a row per model; S^S+, S^S*, S+^S*, Accuracy as percentages
"97.42% [96.9, 97.8]"); triplets_overview.csv (models x datasets, accuracy "91.1% [88.8, 93.2]").
Plots: per dataset, accuracy with its interval (left) and the three mean cosines with theirs
(right), models on the x axis.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import polars as pl

from workflow_scripts.bootstrap import (LEVEL, paired_rng, percentile_interval, replicate_rows, resample_counts,
                                        write_replicates)
from workflow_scripts.common import atomic_path, setup_logging
from workflow_scripts.figure_text import interval_text
from workflow_scripts.paired_statistics import wilson_interval
from workflow_scripts.texts import text_keys
from workflow_scripts.vector_store import VectorStore, spec_digest

SCORINGS = ("strict", "negation_variants", "passive_over_reordered")
# each rule as the table's `scoring_rule` states it
SCORING_RULES = {"strict": "cos(S,S+) > cos(S,S*)",
                 "negation_variants": "cos(S+,S*) > cos(S,S+) and cos(S+,S*) > cos(S,S*)",
                 "passive_over_reordered": "cos(S,S+) > cos(S+,S*)"}
BOOTSTRAP_UNITS = ("items", "clusters")
CLUSTER_COLUMNS = ("subject", "verb")  # written by datasets.py for template triplets
# the triplet's independent unit: its S's component in the pair graph of SICK and MSRP sources
# (datasets.py `cluster`), else its original sentence S; triplets sharing it are one unit, resampled
# and tested together (scores written before it name the unit `original`: S)
CLUSTER = "cluster"
OLD_CLUSTER = "original"
SIMS = ("sim_s_splus", "sim_s_sstar", "sim_splus_sstar")
MEANS = {"mean_s_splus": "sim_s_splus", "mean_s_sstar": "sim_s_sstar", "mean_splus_sstar": "sim_splus_sstar"}
STATISTICS = ("accuracy", *MEANS)
# the paper's column headers S ∧ S+, S ∧ S*, S+ ∧ S* in ASCII
PAPER_COLUMNS = {"mean_s_splus": "S^S+", "mean_s_sstar": "S^S*", "mean_splus_sstar": "S+^S*", "accuracy": "Accuracy"}
SCORE_SCHEMA = {"id": pl.UInt64, "sim_s_splus": pl.Float64, "sim_s_sstar": pl.Float64,
                "sim_splus_sstar": pl.Float64, "correct": pl.Boolean, "subject": pl.String, "verb": pl.String,
                CLUSTER: pl.String}
AGG_SCHEMA = {"dataset": pl.String, "model": pl.String, "n": pl.Int64, "n_undefined": pl.Int64,
              # what the bootstrap resampled, and how many of it (subjects where clusters are resampled,
              # originals where triplets share an original sentence)
              "unit": pl.String, "n_units": pl.Int64, "n_verbs": pl.Int64,
              "accuracy": pl.Float64, "accuracy_ci_low": pl.Float64, "accuracy_ci_high": pl.Float64,
              "accuracy_ci_method": pl.String,
              **{f"{stat}{suffix}": pl.Float64 for stat in MEANS for suffix in ("", "_ci_low", "_ci_high")},
              "scoring": pl.String, "scoring_rule": pl.String, "bootstrap_b": pl.Int64}
CHUNK = 20_000  # triplets per lookup: 2 x CHUNK rows of vectors in memory at a time


# ---- scoring ---------------------------------------------------------------------------------

def judge(sim_s_splus: np.ndarray, sim_s_sstar: np.ndarray, sim_splus_sstar: np.ndarray,
          scoring: str) -> tuple[np.ndarray, np.ndarray]:
    """(correct, defined) per triplet under the scoring rule; `correct` is meaningless where not
    `defined` (any of the three cosines NaN)."""
    a, b, c = (np.asarray(x, dtype=np.float64) for x in (sim_s_splus, sim_s_sstar, sim_splus_sstar))
    defined = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    with np.errstate(invalid="ignore"):
        if scoring == "strict":
            correct = a > b
        elif scoring == "negation_variants":
            correct = (c > a) & (c > b)
        elif scoring == "passive_over_reordered":
            # the seed's prose for Argument Sensitivity (S+ nearer S than S*); its figures follow "strict"
            correct = a > c
        else:
            raise ValueError(f"unknown triplet scoring {scoring!r}; expected one of {', '.join(SCORINGS)}")
    return correct & defined, defined


def score(triplets_path: str, store_dirs: list[str], model: str, spec: dict, scoring: str, log) -> pl.DataFrame:
    """Cosines of every triplet's three pairs, and whether the triplet is correct under `scoring`."""
    if scoring not in SCORINGS:
        raise ValueError(f"unknown triplet scoring {scoring!r}; expected one of {', '.join(SCORINGS)}")
    if not isinstance(spec, dict):
        raise TypeError(f"spec must be the model's config entry (a dict), got {type(spec).__name__}")
    store = VectorStore(store_dirs, model=model, spec_digest=spec_digest(spec))
    present = pl.read_parquet_schema(triplets_path)
    frame = pl.read_parquet(triplets_path, columns=["id", "s", "s_plus", "s_star",
                                                    *(c for c in (*CLUSTER_COLUMNS, CLUSTER) if c in present)])
    missing = frame.filter(pl.any_horizontal(pl.col("s", "s_plus", "s_star").is_null()))
    if missing.height:
        raise ValueError(f"{triplets_path}: {missing.height} triplet(s) lack a sentence, e.g. id {missing['id'][0]}")
    sims = {name: np.empty(frame.height, dtype=np.float64) for name in SIMS}
    for start in range(0, frame.height, CHUNK):
        part = frame.slice(start, CHUNK)
        keys = {col: text_keys(part[col].to_list()) for col in ("s", "s_plus", "s_star")}
        stop = start + part.height
        sims["sim_s_splus"][start:stop] = store.paired_cosine(keys["s"], keys["s_plus"])
        sims["sim_s_sstar"][start:stop] = store.paired_cosine(keys["s"], keys["s_star"])
        sims["sim_splus_sstar"][start:stop] = store.paired_cosine(keys["s_plus"], keys["s_star"])
        store.release_pages()
    correct, defined = judge(sims["sim_s_splus"], sims["sim_s_sstar"], sims["sim_splus_sstar"], scoring)
    out = pl.DataFrame({"id": frame["id"].cast(pl.UInt64), **{k: pl.Series(k, v, pl.Float64) for k, v in sims.items()},
                        "correct": pl.Series("correct", correct, pl.Boolean),
                        # the clusters travel with the scores, so the aggregate can resample them
                        **{c: (frame[c] if c in frame.columns else pl.Series(c, [None] * frame.height, pl.String))
                           for c in CLUSTER_COLUMNS},
                        CLUSTER: (frame[CLUSTER].fill_null(frame["s"]) if CLUSTER in frame.columns
                                  else frame["s"])})
    out = out.with_columns(pl.when(pl.Series(defined)).then(pl.col("correct")).otherwise(None).alias("correct"))
    n = int(defined.sum())
    log.info("%s / %s (%s): %d triplets, %d undefined (zero-norm vector), accuracy %s", triplets_path, model,
             scoring, frame.height, frame.height - n, f"{correct.sum() / n:.4f}" if n else "undefined")
    return out.select(pl.col(c).cast(t) for c, t in SCORE_SCHEMA.items())


# ---- aggregation -----------------------------------------------------------------------------

def cluster_indices(scores: pl.DataFrame) -> list[np.ndarray]:
    """Per cluster column with a value on every triplet (subject, verb): each triplet's index into
    the column's sorted distinct values (a model-independent order). Empty where the triplets
    carry no clusters (sentences from corpora, user files, scores written before clusters)."""
    out = []
    for col in CLUSTER_COLUMNS:
        if col in scores.columns and scores.height and scores[col].null_count() == 0:
            labels = scores[col].to_numpy().astype(str)
            out.append(np.unique(labels, return_inverse=True)[1])
    return out


def original_index(scores: pl.DataFrame) -> np.ndarray | None:
    """Each triplet's index into the sorted distinct units (its pair-graph component, else its S),
    where some unit has more than one triplet; None where every triplet is its own unit (nothing
    changes) or the scores carry none (written before the column)."""
    column = CLUSTER if CLUSTER in scores.columns else OLD_CLUSTER
    if column not in scores.columns or not scores.height or scores[column].null_count():
        return None
    labels, index = np.unique(scores[column].to_numpy().astype(str), return_inverse=True)
    return index.ravel() if len(labels) < scores.height else None


def unit_name(scores: pl.DataFrame) -> str:
    """What a clustered row's n counts: pair-graph components where the units come from pairs."""
    column = CLUSTER if CLUSTER in scores.columns else OLD_CLUSTER
    pairs = column in scores.columns and scores[column].str.starts_with("pairs:").any()
    return "pair clusters" if pairs else "originals"


def resample_weights(rng: np.random.Generator, bootstrap_b: int, n_items: int,
                     clusters: list[np.ndarray] | None = None) -> np.ndarray:
    """(B, n_items) weight of each triplet in each replicate. Without clusters: multinomial draw
    counts of the triplets. With clusters (subject, verb): a two-way bootstrap as in Montague's
    nouns x adjectives -- each replicate draws subjects and verbs with replacement, and a triplet
    weighs (draws of its subject) x (draws of its verb), since triplets sharing either are not
    independent. The draws come from `rng` alone, so every model gets the same ones."""
    if not clusters:
        return resample_counts(rng, bootstrap_b, n_items)
    weights = np.ones((bootstrap_b, n_items))
    for index in clusters:
        counts = resample_counts(rng, bootstrap_b, int(index.max()) + 1 if len(index) else 0)
        weights = weights * counts[:, index]
    return weights


def paired_mean_replicates(values: np.ndarray, defined: np.ndarray, bootstrap_b: int, seed: int, dataset: str,
                           statistic: str, clusters: list[np.ndarray] | None = None) -> np.ndarray:
    """The B replicate means of `values` over the defined triplets, paired across models: every
    triplet (in id order, defined or not) -- or every cluster, with `clusters` -- is drawn from a
    stream that names no model, so replicate b resamples the same triplets for every model; a
    model's undefined triplets then weigh 0. NaN where a replicate drew no defined triplet."""
    counts = resample_weights(paired_rng(seed, "triplets", dataset, statistic), bootstrap_b, len(values), clusters)
    used = counts @ defined.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(used > 0, (counts @ np.where(defined, values, 0.0)) / np.maximum(used, 1), np.nan)


def summarise(scores: pl.DataFrame, dataset: str, model: str, scoring: str, bootstrap_b: int, seed: int,
              replicates_out: list | None = None, bootstrap_unit: str = "clusters") -> dict:
    """One row of the accuracy table from one scores frame; with `replicates_out`, appends the
    paired replicates of every statistic (bootstrap.replicate_rows) to it. `bootstrap_unit`
    "clusters" resamples subjects x verbs where the triplets carry them (templates), originals
    where triplets share one (original_index), triplets elsewhere; "items" always resamples
    triplets. The row's `unit` says which was resampled."""
    if bootstrap_unit not in BOOTSTRAP_UNITS:
        raise ValueError(f"unknown bootstrap unit {bootstrap_unit!r}; expected one of {', '.join(BOOTSTRAP_UNITS)}")
    scores = scores.sort("id")  # a model-independent item order for the paired resamples
    sims = {k: scores[k].cast(pl.Float64).to_numpy() for k in SIMS}
    correct, defined = judge(sims["sim_s_splus"], sims["sim_s_sstar"], sims["sim_splus_sstar"], scoring)
    stored = scores["correct"]
    if not (stored.is_null().to_numpy() == ~defined).all() or not np.array_equal(
            stored.fill_null(False).to_numpy().astype(bool), correct):
        raise ValueError(f"{dataset}/{model}: the scores' `correct` column does not follow the {scoring!r} rule "
                         "(scored with another rule?); rerun its scoring job")
    values = {"accuracy": correct.astype(np.float64), **{stat: sims[col] for stat, col in MEANS.items()}}
    n = int(defined.sum())
    clusters = cluster_indices(scores) if bootstrap_unit == "clusters" else []
    originals = original_index(scores) if bootstrap_unit == "clusters" and not clusters else None
    row = {"dataset": dataset, "model": model, "n": n, "n_undefined": int(len(defined) - n)}
    # the independent units: clusters, or the smaller factor of crossed subjects x verbs (a
    # conservative n, as Montague's nouns x adjectives), or the triplets themselves
    if originals is not None:
        clusters = [originals]
        units = int(len(np.unique(originals[defined])))
        row.update(unit=unit_name(scores), n_units=units, n_verbs=None)
    elif clusters:
        # n on the first screen counts subjects: the coarser unit, and the one the issue names
        row.update(unit=" x ".join(f"{c}s" for c in CLUSTER_COLUMNS[:len(clusters)]),
                   n_units=int(len(np.unique(clusters[0][defined]))),
                   n_verbs=int(len(np.unique(clusters[1][defined]))) if len(clusters) > 1 else None)
        units = min(int(len(np.unique(c[defined]))) for c in clusters)
    else:
        units = n
        row.update(unit="triplets", n_units=n, n_verbs=None)
    for stat in STATISTICS:
        row[stat] = float(values[stat][defined].mean()) if n else float("nan")
        if n:
            reps = paired_mean_replicates(values[stat], defined, bootstrap_b, seed, dataset, stat, clusters)
            low, high, _ = percentile_interval(reps)
        else:
            reps, low, high = np.full(bootstrap_b, np.nan), float("nan"), float("nan")
        if stat == "accuracy":
            # a share of right/wrong units: Wilson's score interval over the independent units, one
            # method at every share (monotone in it, never of zero width; issue 43, point 5)
            low, high = wilson_interval(row[stat], units) if n else (float("nan"), float("nan"))
            row["accuracy_ci_method"] = "wilson" if math.isfinite(low) else None
        row[f"{stat}_ci_low"], row[f"{stat}_ci_high"] = low, high
        if replicates_out is not None:
            replicates_out.append(replicate_rows("triplets", dataset, stat, model, row[stat], reps, units))
    row["scoring"], row["scoring_rule"], row["bootstrap_b"] = scoring, SCORING_RULES[scoring], int(bootstrap_b)
    return row


def aggregate(entries: list[dict], bootstrap_b: int, seed: int, log, replicates_out: list | None = None,
              bootstrap_unit: str = "clusters") -> pl.DataFrame:
    """A row per entry {"dataset", "model", "scores", "scoring"}, in the entries' order; with
    `replicates_out`, the paired replicates of every row's statistics are appended to it."""
    if bootstrap_b < 0:
        raise ValueError(f"bootstrap_b must be >= 0, got {bootstrap_b}")
    seen, rules, rows = set(), {}, []
    for e in entries:
        dataset, model, scoring = e["dataset"], e["model"], e["scoring"]
        if (dataset, model) in seen:
            raise ValueError(f"two score files for dataset {dataset!r} and model {model!r}")
        seen.add((dataset, model))
        if rules.setdefault(dataset, scoring) != scoring:
            raise ValueError(f"dataset {dataset!r} is scored with both {rules[dataset]!r} and {scoring!r}")
        scores = pl.read_parquet(e["scores"])
        row = summarise(scores, dataset, model, scoring, bootstrap_b, seed, replicates_out, bootstrap_unit)
        log.info("%s / %s: n %d (+%d undefined), accuracy %.4f [%.4f, %.4f] (%s, B=%d)", dataset, model, row["n"],
                 row["n_undefined"], row["accuracy"], row["accuracy_ci_low"], row["accuracy_ci_high"], scoring,
                 bootstrap_b)
        rows.append(row)
    return pl.DataFrame(rows, schema=AGG_SCHEMA, orient="row") if rows else pl.DataFrame(schema=AGG_SCHEMA)


def order_rows(table: pl.DataFrame, datasets: list[str], models: list[str]) -> pl.DataFrame:
    """Rows in the given dataset order, then model order; a row outside both lists is an error."""
    unknown = table.filter(~pl.col("dataset").is_in(datasets) | ~pl.col("model").is_in(models))
    if unknown.height:
        raise ValueError(f"scores for dataset/model not listed: {unknown.select('dataset', 'model').rows()}")
    rank = {d: i for i, d in enumerate(datasets)}, {m: i for i, m in enumerate(models)}
    return table.with_columns(pl.col("dataset").replace_strict(rank[0], return_dtype=pl.Int64).alias("_d"),
                              pl.col("model").replace_strict(rank[1], return_dtype=pl.Int64).alias("_m")
                              ).sort("_d", "_m").drop("_d", "_m")


# ---- tables ----------------------------------------------------------------------------------

def _finite(x) -> bool:
    return x is not None and math.isfinite(x)


def fmt_percent(value, low, high, digits: int = 2) -> str:
    """A share as the paper prints it, with its interval: '97.42% [96.9, 97.8]'; no interval
    where its bounds are undefined (B = 0, too few replicates), 'undefined' without a value."""
    return interval_text(value, low, high, digits=digits, bound_digits=1, scale=100, suffix="%")


def dataset_table(table: pl.DataFrame, dataset: str, models: list[str]) -> pl.DataFrame:
    """The paper's Tables 2-6: a row per model with S^S+, S^S*, S+^S*, Accuracy (percent, 95% CI)."""
    by_model = {r["model"]: r for r in table.filter(pl.col("dataset") == dataset).iter_rows(named=True)}
    rows = []
    for m in models:
        if m not in by_model:
            continue
        r = by_model[m]
        rows.append({"model": m, **{name: fmt_percent(r[stat], r[f"{stat}_ci_low"], r[f"{stat}_ci_high"])
                                    for stat, name in PAPER_COLUMNS.items()},
                     "n": r["n"], "n_undefined": r["n_undefined"]})
    schema = {"model": pl.String, **{name: pl.String for name in PAPER_COLUMNS.values()}, "n": pl.Int64,
              "n_undefined": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def overview_table(table: pl.DataFrame, datasets: list[str], models: list[str]) -> pl.DataFrame:
    """Accuracy of every model (rows) on every dataset (columns): '91.1% [88.8, 93.2]'; empty
    where a model has no scores for a dataset."""
    cells = {(r["model"], r["dataset"]): fmt_percent(r["accuracy"], r["accuracy_ci_low"], r["accuracy_ci_high"], 1)
             for r in table.iter_rows(named=True)}
    rows = [{"model": m, **{d: cells.get((m, d), "") for d in datasets}} for m in models]
    return pl.DataFrame(rows, schema={"model": pl.String, **{d: pl.String for d in datasets}}, orient="row")


# ---- plots -----------------------------------------------------------------------------------

def _errors(est: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Error-bar lengths (2 x k); 0 where the interval is undefined (the point is still drawn)."""
    with np.errstate(invalid="ignore"):
        below, above = np.nan_to_num(est - low), np.nan_to_num(high - est)
    return np.vstack([np.maximum(below, 0.0), np.maximum(above, 0.0)])


def plot_dataset(table: pl.DataFrame, dataset: str, models: list[str], out_png: str, out_svg: str) -> None:
    """Accuracy (left) and the three mean cosines (right) per model, with 95% bootstrap intervals."""
    import matplotlib
    matplotlib.use("Agg")
    # SVG element ids are random per process unless salted: fixed, so reruns give identical files
    matplotlib.rcParams["svg.hashsalt"] = "triplets-plot"
    import matplotlib.pyplot as plt
    by_model = {r["model"]: r for r in table.filter(pl.col("dataset") == dataset).iter_rows(named=True)}
    shown = [m for m in models if m in by_model]
    rows = [by_model[m] for m in shown]
    col = lambda key: np.array([r[key] if r[key] is not None else np.nan for r in rows], dtype=np.float64)
    x = np.arange(len(shown))
    fig, axes = plt.subplots(1, 2, figsize=(max(8.0, 3.0 + 1.4 * len(shown)), 4.4))
    acc, acc_high = col("accuracy"), col("accuracy_ci_high")
    axes[0].bar(x, np.nan_to_num(100 * acc), color="C0", alpha=0.8,
                yerr=100 * _errors(acc, col("accuracy_ci_low"), acc_high), capsize=4)
    for xi, a, top in zip(x, acc, np.fmax(acc, acc_high)):  # the label above the interval
        axes[0].annotate(f"{100 * a:.1f}%" if np.isfinite(a) else "undefined", (xi, 100 * top if np.isfinite(a) else 0),
                         textcoords="offset points", xytext=(0, 3), ha="center", va="bottom", fontsize=8)
    axes[0].set_ylim(0, 110)
    axes[0].set_ylabel("accuracy (%)")
    axes[0].set_title("accuracy", fontsize=9)
    labels = {"mean_s_splus": "S ∧ S+", "mean_s_sstar": "S ∧ S*", "mean_splus_sstar": "S+ ∧ S*"}
    width = 0.8 / len(labels)
    for i, (stat, label) in enumerate(labels.items()):
        est = col(stat)
        axes[1].errorbar(x + (i - 1) * width, est, yerr=_errors(est, col(f"{stat}_ci_low"), col(f"{stat}_ci_high")),
                         fmt="o", color=f"C{i + 1}", capsize=3, ms=5, label=label)
    axes[1].set_ylabel("mean cosine similarity")
    axes[1].set_title("mean similarities", fontsize=9)
    axes[1].legend(fontsize=8)
    ns = sorted({r["n"] for r in rows})
    undefined = sum(r["n_undefined"] for r in rows)
    for ax in axes:
        ax.set_xticks(x)
        ax.set_xticklabels([f"{m}\n(n={r['n']})" if len(ns) > 1 else m for m, r in zip(shown, rows)],
                           rotation=30 if len(shown) > 4 else 0, ha="right" if len(shown) > 4 else "center",
                           fontsize=8)
        ax.set_xlim(-0.6, max(len(shown), 1) - 0.4)
    scoring = rows[0]["scoring"] if rows else "?"
    n_text = ("n = " + (str(ns[0]) if len(ns) == 1 else f"{ns[0]}–{ns[-1]}")) if ns else "no scores"
    b = rows[0]["bootstrap_b"] if rows else 0
    fig.suptitle(f"{dataset} — {n_text} triplets — scoring: {scoring.replace('_', ' ')}"
                 + (f" — {undefined} undefined" if undefined else "")
                 + (f" — {int(100 * LEVEL)}% bootstrap CI (B={b})" if b else " — no bootstrap"), fontsize=10)
    fig.tight_layout()
    for path in (out_png, out_svg):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=Path(path).suffix[1:], dpi=120,
                        metadata={"Date": None} if str(path).endswith(".svg") else None)
    plt.close(fig)


def write_outputs(table: pl.DataFrame, out_csv: str, tables_dir: str, plots_dir: str, datasets: list[str],
                  models: list[str], log) -> pl.DataFrame:
    """The accuracy table, a table and plot per dataset, and the overview (all atomically)."""
    table = order_rows(table, datasets, models)
    with atomic_path(out_csv) as tmp:
        table.write_csv(tmp)
    for d in datasets:
        if not table.filter(pl.col("dataset") == d).height:
            log.warning("dataset %s: no scores; its table is empty", d)
        with atomic_path(Path(tables_dir) / f"triplets_{d}.csv") as tmp:
            dataset_table(table, d, models).write_csv(tmp)
        plot_dataset(table, d, models, str(Path(plots_dir) / f"{d}.png"), str(Path(plots_dir) / f"{d}.svg"))
    with atomic_path(Path(tables_dir) / "triplets_overview.csv") as tmp:
        overview_table(table, datasets, models).write_csv(tmp)
    log.info("%d (dataset, model) rows -> %s; tables in %s, plots in %s", table.height, out_csv, tables_dir, plots_dir)
    return table


# ---- the jobs of rules/triplets.smk (workflow_scripts/jobs.py) ----
def run_triplets_score(job) -> None:
    frame = score(job.input.triplets, list(job.input.stores), job.wildcards.model, job.params.spec,
                  job.params.scoring, setup_logging(name="triplets"))
    with atomic_path(job.output[0]) as tmp:
        frame.write_parquet(tmp)


def run_triplets_aggregate(job) -> None:
    """params.entries: {dataset, model, scores, scoring} per score file, in the input's order."""
    log = setup_logging(name="triplets")
    replicates: list = []
    table = aggregate(job.params.entries, job.params.bootstrap_b, job.params.seed, log, replicates,
                      job.params.bootstrap_unit)
    write_replicates(job.output.replicates, replicates)
    plots = job.output.get("plots") or []  # plots/triplets/<dataset>.png, none without datasets
    write_outputs(table, job.output.accuracy, os.path.dirname(job.output.overview),
                  os.path.dirname(plots[0]) if plots else "", job.params.datasets, job.params.models, log)
