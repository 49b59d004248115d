"""Retrieval metrics with seeded intervals (methods.md §4), and the probe's tables and plots.

Per (set, model) the search wrote every evaluated query's top-K (`topk.parquet`) and the
similarities C (query, each relevant document) and R (query, random documents) in
`similarities.parquet`. From these, for every k in `ks`:

- **Draws** (the paper's bootstrap): `draws.count` draws of `draws.size` questions, each draw without
  replacement and the draws independent (`replace: true, size: null` is the classic bootstrap
  instead). The draws are seeded by the config seed and the set only, so every model and every
  transformation is measured on the same questions (paired comparisons). A statistic is the mean
  over draws; its 95% interval the 2.5/97.5 percentiles over draws. The full-data value is given
  too, with a classic bootstrap interval (workflow_scripts.bootstrap, `bootstrap_b` resamples of
  the questions, seeded by the set: the same resamples for every model, k and transformation);
  the full-data accuracy, a share of right/wrong questions, takes Wilson's score interval over the
  questions instead (`accuracy_full_ci_method`: wilson; one method at every share, monotone). The
  questions are sorted by id, the same for every model of a set, and no stream is seeded by a model
  (draws, threshold draws, full-data resamples, random sentences, correlations): an identical copy
  of a model gets identical intervals, and replicate r of the full-data bootstrap draws the same
  questions for every model. The metrics job writes those replicates (accuracy@k, ndcg@k, also
  after each transformation) to replicates.parquet (bootstrap.write_replicates): the paired
  comparisons use the full-data figures, since the draws without replacement are no bootstrap. It
  also writes each question's hit at every k (outcomes.parquet: id, statistic `accuracy@k`,
  correct), so that two models' accuracies are compared by McNemar's exact test on the questions
  (differences.py; the questions are the independent units, resampled one by one).
- **Top-k accuracy**: a query is a hit when one of its relevant documents ranks <= k. Ranks come
  from the whole sentence set, judged by the query's own qrels: a copy of the right sentence under
  another id is not the right sentence (the reference's row-index scoring made it a miss whenever
  the copy ranked higher; here the corpus is deduplicated by the set builder instead).
- **NDCG@k, binary** (the paper defines none and its values match no standard form): DCG =
  sum over relevant documents ranked r <= k of 1/log2(1 + r); IDCG = the same for the best possible
  ranking, sum_{r <= min(#relevant, k)} 1/log2(1 + r) (= 1 for one answer). Queries with a zero
  vector retrieve nothing: accuracy and NDCG 0.
- **COE / ROE** (the paper's definition): per draw b, t_b = the P-th percentile of the draw's top-k
  similarities T_b; COE_b = 1 - ECDF_C(t_b), ROE_b = 1 - ECDF_R(t_b), with the ECDFs of all of C and
  R (NaN similarities of zero vectors dropped). The reference computes something else.
- **Thresholds**: per threshold draw (`thresholds.draws`, own stream), the minimum top-k similarity
  of the whole draw minus `margin`; the candidates are the `percentiles` of those minima.
  Retrieving with threshold θ drops every document scored below θ (a hit then needs a relevant
  document ranked <= k with score >= θ). The chosen threshold is the highest candidate whose metric
  is not statistically different from the unthresholded one under `thresholds.rule`:
  `paired_draws` (default; methods.md): per draw the difference metric(θ) - metric on the same
  questions, θ passes when the 95% percentile interval of the differences holds 0;
  `mcnemar`: exact McNemar (sign) test on the full data's per-question changes, θ passes when
  p >= `alpha`; `ci_overlap` (the paper's wording): the mean over draws with θ lies inside the
  unthresholded 95% interval. The reference indexes row i instead of the drawn question, its
  tolerance lets every threshold pass, and it keeps the candidate with the highest accuracy (the
  lowest threshold); none of that is repeated here (tests/retrieval/test_metrics.py).

The jobs of rules/retrieval.smk: `run_retrieval_metrics` (retrieval_metrics, one per (set, model))
and `run_retrieval_aggregate` (retrieval_aggregate: the tables and plots of every pair).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from workflow_scripts.bootstrap import (bootstrap_rng, pearson_with_interval, percentile_interval, replicate_rows,
                                        resample_counts, write_replicates)
from workflow_scripts.common import atomic_path, read_json, setup_logging
from workflow_scripts.jobs import pair_entries
from workflow_scripts.paired_statistics import wilson_interval

RULES = ("paired_draws", "mcnemar", "ci_overlap")
NDCG_FORM = "binary: DCG = sum of 1/log2(1+rank) over relevant documents ranked <= k; IDCG over min(#relevant, k)"
METRIC_SCHEMA = {"transform": pl.String, "k": pl.Int32, "draw": pl.Int32, "accuracy": pl.Float64, "ndcg": pl.Float64,
                 "coe": pl.Float64, "roe": pl.Float64, "topk_percentile": pl.Float64,
                 "accuracy_at_threshold": pl.Float64, "ndcg_at_threshold": pl.Float64}
TABLE_COLUMNS = ["set", "model", "k", "accuracy", "accuracy_ci_low", "accuracy_ci_high", "ndcg", "ndcg_ci_low",
                 "ndcg_ci_high", "coe", "roe", "threshold_percentile", "accuracy_at_threshold"]


# ---- per-query arrays --------------------------------------------------------------------------

@dataclass
class Judged:
    """Per evaluated query (rows, sorted by id): which of its top-K ranks hold a relevant
    document, the scores at those ranks (NaN past the list), and its number of relevant documents."""
    query_ids: list
    relevant: np.ndarray  # n x K bool
    scores: np.ndarray  # n x K float64
    n_relevant: np.ndarray  # n int


def judge(topk: pl.DataFrame, similarities: pl.DataFrame, top_k: int) -> Judged:
    correct = similarities.filter(pl.col("kind") == "correct").select("query_id", "corpus_id").unique()
    query_ids = sorted(correct["query_id"].unique().to_list())
    index = {q: i for i, q in enumerate(query_ids)}
    n = len(query_ids)
    rel = np.zeros((n, top_k), bool)
    scores = np.full((n, top_k), np.nan)
    if topk.height:
        t = topk.filter(pl.col("rank") <= top_k).join(correct.with_columns(pl.lit(True).alias("is_rel")),
                                                      on=["query_id", "corpus_id"], how="left")
        unknown = set(t["query_id"].unique().to_list()) - set(index)
        if unknown:
            raise ValueError(f"top-k lists for queries that are not evaluated, e.g. {sorted(unknown)[0]!r}")
        qi = np.array([index[q] for q in t["query_id"].to_list()], np.int64)
        ri = t["rank"].to_numpy().astype(np.int64) - 1
        scores[qi, ri] = t["score"].to_numpy()
        rel[qi, ri] = t["is_rel"].fill_null(False).to_numpy()
    counts = correct.group_by("query_id").len()
    n_rel = np.zeros(n, np.int64)
    n_rel[[index[q] for q in counts["query_id"].to_list()]] = counts["len"].to_numpy()
    return Judged(query_ids, rel, scores, n_rel)


def hits_and_ndcg(j: Judged, ks: list[int], threshold: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(hit, ndcg), each n x len(ks): per query and k, with documents scored below `threshold`
    dropped (ranks above them do not move)."""
    rel = j.relevant if threshold is None else j.relevant & (j.scores >= threshold)
    K = rel.shape[1]
    gains = rel / np.log2(np.arange(2, K + 2))
    dcg = np.cumsum(gains, axis=1)
    ideal = np.cumsum(1.0 / np.log2(np.arange(2, K + 2)))
    hit = np.cumsum(rel, axis=1) > 0
    cols = np.asarray(ks) - 1
    idcg = ideal[np.minimum(j.n_relevant[:, None], np.asarray(ks)[None, :]) - 1]
    return hit[:, cols].astype(np.float64), dcg[:, cols] / idcg


def draw_indices(n: int, count: int, size: int | None, replace: bool, seed: int, *names) -> np.ndarray:
    """count x size indices into n queries: each draw without replacement (or with), seeded by names."""
    rng = bootstrap_rng(seed, *names)
    size = n if size is None else min(size, n) if not replace else size
    if replace:
        return rng.integers(0, n, size=(count, size))
    return np.stack([rng.choice(n, size=size, replace=False) for _ in range(count)]) if count else np.zeros((0, size), int)


def exceed_share(sorted_values: np.ndarray, t) -> np.ndarray:
    """1 - ECDF(t): the share of values strictly above t."""
    if not len(sorted_values):
        return np.full(np.shape(t), np.nan)
    return 1.0 - np.searchsorted(sorted_values, t, side="right") / len(sorted_values)


def draw_percentiles(scores: np.ndarray, idx: np.ndarray, k: int, percentile: float) -> np.ndarray:
    """Per draw, the `percentile` of the draw's top-k similarities (NaN ranks ignored)."""
    return np.array([np.nanpercentile(scores[i, :k], percentile) if np.isfinite(scores[i, :k]).any() else np.nan
                     for i in idx])


def draw_minima(scores: np.ndarray, idx: np.ndarray, k: int) -> np.ndarray:
    out = np.full(len(idx), np.nan)
    for b, i in enumerate(idx):
        block = scores[i, :k]
        if np.isfinite(block).any():
            out[b] = np.nanmin(block)
    return out


# ---- thresholds --------------------------------------------------------------------------------

def threshold_test(base_draws: np.ndarray, cand_draws: np.ndarray, base_full: np.ndarray, cand_full: np.ndarray,
                   rule: str, alpha: float) -> tuple[bool, float, float, float]:
    """(passes, diff_ci_low, diff_ci_high, p_value) of one candidate against the unthresholded
    metric. `*_draws`: the metric per draw (same questions); `*_full`: per question."""
    diff = cand_draws - base_draws
    lo, hi, _ = percentile_interval(diff)
    p = float("nan")
    if rule == "paired_draws":
        passes = bool(lo <= 0.0 <= hi)
    elif rule == "mcnemar":
        from scipy.stats import binomtest
        worse = int(np.sum(cand_full < base_full))
        better = int(np.sum(cand_full > base_full))
        p = 1.0 if worse + better == 0 else float(binomtest(worse, worse + better, 0.5).pvalue)
        passes = p >= alpha
    elif rule == "ci_overlap":
        blo, bhi, _ = percentile_interval(base_draws)
        passes = bool(blo <= float(np.mean(cand_draws)) <= bhi)
    else:
        raise ValueError(f"unknown threshold rule {rule!r}; expected one of {', '.join(RULES)}")
    return passes, lo, hi, p


def choose_threshold(j: Judged, ks: list[int], metric_idx: np.ndarray, threshold_idx: np.ndarray,
                     settings: dict) -> tuple[list[dict], dict]:
    """Candidates per k and the chosen threshold per k (the highest that passes), as rows and
    {k: (threshold, percentile) or None}."""
    rule, alpha, metric = settings["rule"], settings["alpha"], settings["metric"]
    hit, ndcg = hits_and_ndcg(j, ks)
    base = hit if metric == "accuracy" else ndcg
    rows, chosen = [], {}
    for c, k in enumerate(ks):
        minima = draw_minima(j.scores, threshold_idx, k) - settings["margin"]
        minima = minima[np.isfinite(minima)]
        chosen[k] = None
        if not len(minima):
            continue
        base_draws = base[metric_idx, c].mean(axis=1)
        for pct in sorted(settings["percentiles"]):
            theta = float(np.percentile(minima, pct))
            h, g = hits_and_ndcg(j, [k], theta)
            cand = h[:, 0] if metric == "accuracy" else g[:, 0]
            cand_draws = cand[metric_idx].mean(axis=1)
            passes, lo, hi, p = threshold_test(base_draws, cand_draws, base[:, c], cand, rule, alpha)
            acc_lo, acc_hi, _ = percentile_interval(cand_draws)
            rows.append({"k": k, "percentile": float(pct), "threshold": theta, "metric": metric,
                         "value": float(cand_draws.mean()), "value_ci_low": acc_lo, "value_ci_high": acc_hi,
                         "diff_ci_low": lo, "diff_ci_high": hi, "p_value": p, "passes": passes, "rule": rule})
            if passes:
                chosen[k] = (theta, float(pct))  # ascending: the last one passing is the highest
        for r in rows:
            if r["k"] == k:
                r["chosen"] = chosen[k] is not None and r["percentile"] == chosen[k][1]
    return rows, chosen


# ---- one (set, model) ---------------------------------------------------------------------------

def _hold(est: float, lo: float, hi: float) -> tuple[float, float, float]:
    """Bounds that differ from the estimate by float rounding only (a mean and a percentile of
    equal values) are set to it, so that low <= estimate <= high reads true in the tables."""
    if math.isfinite(est) and math.isfinite(lo) and math.isfinite(hi):
        tol = 1e-12 * max(1.0, abs(est))
        lo = est if 0 < lo - est <= tol else lo
        hi = est if 0 < est - hi <= tol else hi
    return est, lo, hi


def interval(values: np.ndarray) -> tuple[float, float, float]:
    """(mean, 2.5th, 97.5th percentile) over draws."""
    values = np.asarray(values, np.float64)
    finite = values[np.isfinite(values)]
    lo, hi, _ = percentile_interval(values)
    return _hold(float(finite.mean()) if len(finite) else float("nan"), lo, hi)


def full_data(values: np.ndarray, counts: np.ndarray, keep: list | None = None) -> list[tuple[float, float, float]]:
    """Per column of `values` (questions x k): the full-data mean and its classic bootstrap interval
    from the resample `counts` (replicates x questions; the same resamples for every column, model
    and transformation). `keep`: receives the (replicates x k) replicate means."""
    n = values.shape[0]
    replicates = counts @ values / n if len(counts) else np.zeros((0, values.shape[1]))
    if keep is not None:
        keep.append(replicates)
    out = []
    for c in range(values.shape[1]):
        lo, hi, _ = percentile_interval(replicates[:, c]) if len(counts) else (float("nan"), float("nan"), 0)
        out.append(_hold(float(values[:, c].mean()), lo, hi))
    return out


def exact_at_the_bounds(hits: np.ndarray, full: list[tuple[float, float, float]]
                        ) -> tuple[list[tuple[float, float, float]], list[str | None]]:
    """The full-data accuracies of `full_data` (one per column of the 0/1 `hits`) with Wilson's score
    interval over the questions (issue 43, point 5): a share of right/wrong independent units gets
    one interval method at every value, monotone in it and never of zero width (33 of 34: [0.851,
    0.995]; 34 of 34: [0.898, 1]), where the percentile bootstrap switched to an exact interval only
    at 0 and 1; None where undefined."""
    n = hits.shape[0]
    out, methods = [], []
    for est, _, _ in full:
        lo, hi = wilson_interval(est, n)
        out.append((est, lo, hi))
        methods.append("wilson" if math.isfinite(lo) else None)
    return out, methods


def evaluate(topk: pl.DataFrame, similarities: pl.DataFrame, dataset: str, model: str, settings: dict, seed: int,
             transform_topk: pl.DataFrame | None = None, log=None,
             replicates_out: list | None = None,
             outcomes_out: list | None = None) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(metrics per transform, k and draw; threshold candidates; one summary row per transform and k).
    `replicates_out`: a list that receives the classic bootstrap replicates of the full-data
    accuracy and NDCG at every k (statistics `accuracy@k`, `ndcg@k`, and `<transform>/accuracy@k`
    ... after a transformation; bootstrap.replicate_rows): the same question resamples for every
    model of the set, so two models' replicates can be subtracted. `outcomes_out`: a list that
    receives the per-question hits (question_outcomes)."""
    ks = list(settings["ks"])
    top_k = settings["top_k"]
    if max(ks) > top_k:
        raise ValueError(f"k up to {max(ks)} needs top_k >= {max(ks)} (top_k is {top_k})")
    dr, th, coe = settings["draws"], settings["thresholds"], settings["coe"]
    j = judge(topk, similarities, top_k)
    n = len(j.query_ids)
    if n == 0:
        raise ValueError(f"{dataset}/{model}: no evaluated query")
    idx = draw_indices(n, dr["count"], dr["size"], dr["replace"], seed, "retrieval", dataset, "draws")
    counts = resample_counts(bootstrap_rng(seed, "retrieval", dataset, "full_data"), settings["bootstrap_b"], n)
    tidx = draw_indices(n, th["draws"], dr["size"], dr["replace"], seed, "retrieval", dataset, "threshold_draws")
    c_sorted = np.sort(similarities.filter((pl.col("kind") == "correct") & pl.col("similarity").is_not_nan())
                       ["similarity"].to_numpy())
    r_sorted = np.sort(similarities.filter((pl.col("kind") == "random") & pl.col("similarity").is_not_nan())
                       ["similarity"].to_numpy())
    threshold_rows, chosen = choose_threshold(j, ks, idx, tidx, th)
    hit, ndcg = hits_and_ndcg(j, ks)
    if outcomes_out is not None:
        outcomes_out.append(question_outcomes(j.query_ids, hit, ks))
    kept: list = []
    full_acc, full_ndcg = full_data(hit, counts, kept), full_data(ndcg, counts, kept)
    parts = full_data_replicates(dataset, model, "", ks, full_acc, full_ndcg, kept, n)
    full_acc, acc_methods = exact_at_the_bounds(hit, full_acc)
    zero_queries = int((~np.isfinite(j.scores[:, 0])).sum())
    metric_rows, summary_rows = [], []
    full_idx = np.arange(n)[None, :]
    for c, k in enumerate(ks):
        t_draw = draw_percentiles(j.scores, idx, k, coe["percentile"])
        t_full = draw_percentiles(j.scores, full_idx, k, coe["percentile"])[0]
        coe_draw, roe_draw = exceed_share(c_sorted, t_draw), exceed_share(r_sorted, t_draw)
        theta = chosen[k][0] if chosen[k] else None
        if theta is not None:
            h_t, g_t = hits_and_ndcg(j, [k], theta)
            acc_t, ndcg_t = h_t[:, 0], g_t[:, 0]
        else:
            acc_t = ndcg_t = np.full(n, np.nan)
        acc_draw, ndcg_draw = hit[idx, c].mean(axis=1), ndcg[idx, c].mean(axis=1)
        acc_t_draw, ndcg_t_draw = acc_t[idx].mean(axis=1), ndcg_t[idx].mean(axis=1)
        for b in range(len(idx)):
            metric_rows.append(("none", k, b, acc_draw[b], ndcg_draw[b], coe_draw[b], roe_draw[b], t_draw[b],
                                acc_t_draw[b], ndcg_t_draw[b]))
        metric_rows.append(("none", k, -1, hit[:, c].mean(), ndcg[:, c].mean(), float(exceed_share(c_sorted, t_full)),
                            float(exceed_share(r_sorted, t_full)), t_full, acc_t.mean(), ndcg_t.mean()))
        row = {"set": dataset, "model": model, "transform": "none", "k": k}
        for name, values in (("accuracy", acc_draw), ("ndcg", ndcg_draw), ("coe", coe_draw), ("roe", roe_draw),
                             ("accuracy_at_threshold", acc_t_draw), ("ndcg_at_threshold", ndcg_t_draw)):
            row[name], row[f"{name}_ci_low"], row[f"{name}_ci_high"] = interval(values)
        row["threshold"] = theta if theta is not None else float("nan")
        row["threshold_percentile"] = chosen[k][1] if chosen[k] else float("nan")
        for name, values in (("accuracy_full", full_acc[c]), ("ndcg_full", full_ndcg[c])):
            row[name], row[f"{name}_ci_low"], row[f"{name}_ci_high"] = values
        row["accuracy_full_ci_method"] = acc_methods[c]
        summary_rows.append(row)
    for name, frame in sorted((transform_topk.partition_by("transform", as_dict=True).items()
                               if transform_topk is not None and transform_topk.height else []), key=lambda kv: kv[0]):
        tname = name[0] if isinstance(name, tuple) else name
        jt = judge(frame.drop("transform"), similarities, top_k)
        if jt.query_ids != j.query_ids:
            raise ValueError(f"transform {tname}: evaluated queries differ from the baseline's")
        th_hit, th_ndcg = hits_and_ndcg(jt, ks)
        kept = []
        t_acc, t_ndcg = full_data(th_hit, counts, kept), full_data(th_ndcg, counts, kept)
        parts += full_data_replicates(dataset, model, f"{tname}/", ks, t_acc, t_ndcg, kept, n)
        t_acc, t_methods = exact_at_the_bounds(th_hit, t_acc)
        for c, k in enumerate(ks):
            acc_draw, ndcg_draw = th_hit[idx, c].mean(axis=1), th_ndcg[idx, c].mean(axis=1)
            for b in range(len(idx)):
                metric_rows.append((tname, k, b, acc_draw[b], ndcg_draw[b], *([float("nan")] * 5)))
            metric_rows.append((tname, k, -1, th_hit[:, c].mean(), th_ndcg[:, c].mean(), *([float("nan")] * 5)))
            row = {"set": dataset, "model": model, "transform": tname, "k": k}
            for mname, values in (("accuracy", acc_draw), ("ndcg", ndcg_draw)):
                row[mname], row[f"{mname}_ci_low"], row[f"{mname}_ci_high"] = interval(values)
            for mname, values in (("accuracy_full", t_acc[c]), ("ndcg_full", t_ndcg[c])):
                row[mname], row[f"{mname}_ci_low"], row[f"{mname}_ci_high"] = values
            row["accuracy_full_ci_method"] = t_methods[c]
            summary_rows.append(row)
    metrics = pl.DataFrame(metric_rows, schema=METRIC_SCHEMA, orient="row")
    thresholds = pl.DataFrame(threshold_rows, schema=THRESHOLD_SCHEMA, orient="row") if threshold_rows else \
        pl.DataFrame(schema=THRESHOLD_SCHEMA)
    extra = {"n_queries": n, "n_zero_queries": zero_queries, "n_correct": len(c_sorted), "n_random": len(r_sorted),
             "draws": int(len(idx)), "draw_size": int(idx.shape[1]) if len(idx) else 0,
             "draw_replace": bool(dr["replace"]), "bootstrap_b": settings["bootstrap_b"],
             "threshold_rule": th["rule"], "threshold_metric": th["metric"], "coe_percentile": float(coe["percentile"]),
             "ndcg_form": NDCG_FORM}
    summary = pl.DataFrame([{**r, **extra} for r in summary_rows], schema=SUMMARY_SCHEMA, orient="row")
    if replicates_out is not None:
        replicates_out.extend(parts)
    if log is not None:
        first = summary.filter((pl.col("transform") == "none") & (pl.col("k") == ks[0])).row(0, named=True)
        log.info("%s / %s: %d queries (%d with a zero vector); accuracy@%d %.4f [%.4f, %.4f], ndcg %.4f, coe %.4f, "
                 "roe %.4f, threshold %s", dataset, model, n, zero_queries, ks[0], first["accuracy"],
                 first["accuracy_ci_low"], first["accuracy_ci_high"], first["ndcg"], first["coe"], first["roe"],
                 f"{first['threshold']:.4f} (P{first['threshold_percentile']:.0f})"
                 if math.isfinite(first["threshold"]) else "none passes")
    return metrics, thresholds, summary


THRESHOLD_SCHEMA = {"k": pl.Int32, "percentile": pl.Float64, "threshold": pl.Float64, "metric": pl.String,
                    "value": pl.Float64, "value_ci_low": pl.Float64, "value_ci_high": pl.Float64,
                    "diff_ci_low": pl.Float64, "diff_ci_high": pl.Float64, "p_value": pl.Float64,
                    "passes": pl.Boolean, "rule": pl.String, "chosen": pl.Boolean}
_STATS = ("accuracy", "ndcg", "coe", "roe", "accuracy_at_threshold", "ndcg_at_threshold")
SUMMARY_SCHEMA = {"set": pl.String, "model": pl.String, "transform": pl.String, "k": pl.Int32,
                  **{f"{s}{x}": pl.Float64 for s in _STATS for x in ("", "_ci_low", "_ci_high")},
                  "threshold": pl.Float64, "threshold_percentile": pl.Float64,
                  **{f"{s}{x}": pl.Float64 for s in ("accuracy_full", "ndcg_full") for x in ("", "_ci_low", "_ci_high")},
                  "accuracy_full_ci_method": pl.String, "n_queries": pl.Int64, "n_zero_queries": pl.Int64, "n_correct": pl.Int64, "n_random": pl.Int64,
                  "draws": pl.Int64, "draw_size": pl.Int64, "draw_replace": pl.Boolean, "bootstrap_b": pl.Int64,
                  "threshold_rule": pl.String, "threshold_metric": pl.String, "coe_percentile": pl.Float64,
                  "ndcg_form": pl.String}


OUTCOME_SCHEMA = {"id": pl.String, "statistic": pl.String, "correct": pl.Boolean}


def question_outcomes(query_ids: list, hit: np.ndarray, ks: list[int]) -> pl.DataFrame:
    """Per question and k: was it a hit (a relevant document ranked <= k)? Rows id, statistic
    `accuracy@k` (the replicates' name of the full-data accuracy), correct; a question with a zero
    vector retrieves nothing and is a miss, as in the accuracy."""
    n = len(query_ids)
    ids = [str(q) for q in query_ids]
    return pl.DataFrame({"id": ids * len(ks), "statistic": [f"accuracy@{k}" for k in ks for _ in range(n)],
                         "correct": hit.T.reshape(-1).astype(bool)}, schema=OUTCOME_SCHEMA)


def full_data_replicates(dataset: str, model: str, prefix: str, ks: list[int], acc: list, ndcg: list,
                         kept: list, questions: int | None = None) -> list[dict]:
    """Replicate rows of the full-data accuracy and NDCG at every k (kept: their (B x k) replicates,
    accuracy first), statistics `<prefix>accuracy@k` and `<prefix>ndcg@k`, with the questions (the
    independent units) behind them."""
    parts = []
    for name, points, reps in (("accuracy", acc, kept[0]), ("ndcg", ndcg, kept[1])):
        for c, k in enumerate(ks):
            parts.append(replicate_rows("retrieval", dataset, f"{prefix}{name}@{k}", model, points[c][0], reps[:, c],
                                        questions))
    return parts


def metrics_job(topk_path: str, sims_path: str, search_summary: str, transform_topk_path: str | None, dataset: str,
                model: str, settings: dict, seed: int, metrics_out: str, thresholds_out: str, summary_out: str, log,
                replicates_out: str | None = None, outcomes_out: str | None = None):
    topk = pl.read_parquet(topk_path)
    sims = pl.read_parquet(sims_path)
    ttopk = pl.read_parquet(transform_topk_path) if transform_topk_path else None
    parts: list = []
    outcomes: list = []
    metrics, thresholds, summary = evaluate(topk, sims, dataset, model, settings, seed, ttopk, log, parts, outcomes)
    if replicates_out:
        write_replicates(replicates_out, parts)
    if outcomes_out:
        with atomic_path(outcomes_out) as tmp:
            outcomes[0].write_parquet(tmp)
    searched = read_json(search_summary)
    summary = summary.with_columns(pl.lit(searched["corpus"], pl.Int64).alias("n_corpus"),
                                   pl.lit(searched.get("zero_vector_documents", 0), pl.Int64).alias("n_zero_documents"))
    for frame, path in ((metrics, metrics_out), (thresholds, thresholds_out), (summary, summary_out)):
        with atomic_path(path) as tmp:
            frame.write_parquet(tmp)


# ---- the study: tables, correlations, plots ------------------------------------------------------

CORRELATIONS = (  # (name, x, y, over which points)
    ("acc_vs_coe", "accuracy", "coe", "models"),
    ("acc_vs_roe", "accuracy", "roe", "models"),
    ("threshold_vs_roe", "threshold", "roe", "models"),
    ("acc_vs_i1", "accuracy", "i1", "models x transforms"),
    ("acc_vs_isoscore", "accuracy", "isoscore", "models x transforms"),
)
TABLE1_NAMES = {"acc_vs_coe": "Acc v. COE", "acc_vs_roe": "Acc v. ROE", "threshold_vs_roe": "Thresh v. ROE",
                "acc_vs_i1": "Acc v. I1", "acc_vs_isoscore": "Acc v. IsoScore"}
TRANSFORM_NAMES = {"none": "Baseline", "standardise": "Standardized", "whiten": "Whitened", "pca": "PCA"}


def correlations(summary: pl.DataFrame, isotropy: pl.DataFrame, k: int, replicates: int, seed: int) -> pl.DataFrame:
    """Each correlation per set and over all sets together, stating its points."""
    at_k = summary.filter(pl.col("k") == k)
    iso = isotropy.filter(pl.col("vectors") == "corpus").select("set", "model", "transform", "i1", "isoscore")
    with_iso = at_k.join(iso, on=["set", "model", "transform"], how="inner")
    rows = []
    for scope in [*sorted(summary["set"].unique().to_list()), "all"]:
        for name, x, y, over in CORRELATIONS:
            frame = with_iso if over != "models" else at_k.filter(pl.col("transform") == "none")
            if scope != "all":
                frame = frame.filter(pl.col("set") == scope)
            frame = frame.sort("set", "model", "transform")
            points = [f"{r['set']}/{r['model']}" + (f"/{r['transform']}" if over != "models" else "")
                      for r in frame.iter_rows(named=True)]
            xs = frame[x].cast(pl.Float64).to_numpy() if frame.height else np.array([])
            ys = frame[y].cast(pl.Float64).to_numpy() if frame.height else np.array([])
            stats = pearson_with_interval(xs, ys, replicates, seed, "retrieval", "correlation", scope, name, k)
            used = [p for p, a, b in zip(points, xs, ys) if np.isfinite(a) and np.isfinite(b)]
            rows.append({"scope": scope, "correlation": name, "x": x, "y": y, "k": k, "over": over, **stats,
                         "points": "; ".join(used),
                         "note": "" if stats["n_points"] >= 3 else "fewer than 3 points: undefined"})
    schema = {"scope": pl.String, "correlation": pl.String, "x": pl.String, "y": pl.String, "k": pl.Int32,
              "over": pl.String, "n_points": pl.Int64, "pearson": pl.Float64, "pearson_ci_low": pl.Float64,
              "pearson_ci_high": pl.Float64, "spearman": pl.Float64, "points": pl.String, "note": pl.String}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _pct(v, digits=2):
    return "" if v is None or not math.isfinite(v) else f"{100 * v:.{digits}f}"


def table1(corr: pl.DataFrame) -> pl.DataFrame:
    """The seed's Table I: Pearson correlations per set (and over all sets)."""
    rows = []
    for scope in dict.fromkeys(corr["scope"].to_list()):
        part = {r["correlation"]: r["pearson"] for r in corr.filter(pl.col("scope") == scope).iter_rows(named=True)}
        rows.append({"Corr": scope, **{label: "" if part.get(name) is None or not math.isfinite(part[name])
                                       else f"{part[name]:.3f}" for name, label in TABLE1_NAMES.items()}})
    return pl.DataFrame(rows, schema={"Corr": pl.String, **{v: pl.String for v in TABLE1_NAMES.values()}}, orient="row")


def table2(summary: pl.DataFrame, k: int) -> pl.DataFrame:
    """The seed's Table II at k: bootstrapped Acc, Acc-CI (interval width), NDCG, NDCG-CI, COE,
    ROE, θ (percentile), Acc @ θ, and the full data's Acc and NDCG; percentages as the paper."""
    rows = []
    for r in summary.filter((pl.col("transform") == "none") & (pl.col("k") == k)).iter_rows(named=True):
        width = lambda s: r[f"{s}_ci_high"] - r[f"{s}_ci_low"]  # noqa: E731
        theta = "" if not math.isfinite(r["threshold"]) else f"{r['threshold']:.2f} ({r['threshold_percentile']:.0f})"
        rows.append({"Set": r["set"], "Embedding Model": r["model"], "Acc": _pct(r["accuracy"]),
                     "Acc-CI": _pct(width("accuracy")), "NDCG": _pct(r["ndcg"], 1), "NDCG-CI": _pct(width("ndcg"), 1),
                     "COE": _pct(r["coe"]), "ROE": _pct(r["roe"]), "θ (P)": theta,
                     "Acc @ θ": _pct(r["accuracy_at_threshold"]), "Full Acc": _pct(r["accuracy_full"], 1),
                     "Full NDCG": _pct(r["ndcg_full"], 1)})
    cols = ["Set", "Embedding Model", "Acc", "Acc-CI", "NDCG", "NDCG-CI", "COE", "ROE", "θ (P)", "Acc @ θ", "Full Acc",
            "Full NDCG"]
    return pl.DataFrame(rows, schema={c: pl.String for c in cols}, orient="row")


def table3(summary: pl.DataFrame, isotropy: pl.DataFrame, k: int, transforms: list[str]) -> pl.DataFrame:
    """The seed's Table III at k: per model, accuracy and (I1, IsoScore) of the corpus vectors,
    in percent, before and after each transformation."""
    acc = {(r["set"], r["model"], r["transform"]): r["accuracy"]
           for r in summary.filter(pl.col("k") == k).iter_rows(named=True)}
    iso = {(r["set"], r["model"], r["transform"]): (r["i1"], r["isoscore"])
           for r in isotropy.filter(pl.col("vectors") == "corpus").iter_rows(named=True)}
    names = ["none", *transforms]
    cols = ["Set", "Embedding Model"] + [c for t in names for c in (f"{TRANSFORM_NAMES.get(t, t)} Acc",
                                                                  f"{TRANSFORM_NAMES.get(t, t)} (I1, IsoScore)")]
    rows = []
    for s, m in dict.fromkeys((r["set"], r["model"]) for r in summary.iter_rows(named=True)):
        row = {"Set": s, "Embedding Model": m}
        for t in names:
            label = TRANSFORM_NAMES.get(t, t)
            i1, isc = iso.get((s, m, t), (None, None))
            row[f"{label} Acc"] = _pct(acc.get((s, m, t)))
            defined = [v is not None and math.isfinite(v) for v in (i1, isc)]
            row[f"{label} (I1, IsoScore)"] = "" if not any(defined) else \
                ", ".join(_pct(v) if ok else "undefined" for v, ok in zip((i1, isc), defined))
        rows.append(row)
    return pl.DataFrame(rows, schema={c: pl.String for c in cols}, orient="row")


def plot_accuracy(summary: pl.DataFrame, dataset: str, models: list[str], out_png: str) -> None:
    """Top-k accuracy (left) and NDCG (right) against k, with the draws' spread (2.5th-97.5th
    percentile, the paper's definition: not a confidence interval) as a band, per model."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    part = summary.filter((pl.col("set") == dataset) & (pl.col("transform") == "none"))
    for i, m in enumerate(models):
        rows = part.filter(pl.col("model") == m).sort("k")
        if not rows.height:
            continue
        k = rows["k"].to_numpy()
        for ax, stat in zip(axes, ("accuracy", "ndcg")):
            ax.plot(k, 100 * rows[stat].to_numpy(), color=f"C{i}", label=m)
            ax.fill_between(k, 100 * rows[f"{stat}_ci_low"].to_numpy(), 100 * rows[f"{stat}_ci_high"].to_numpy(),
                            color=f"C{i}", alpha=0.2, linewidth=0)
    draws = part["draws"][0] if part.height else 0
    size = part["draw_size"][0] if part.height else 0
    for ax, label in zip(axes, ("top-k accuracy (%)", "binary NDCG@k (%)")):
        ax.set_xlabel("k")
        ax.set_ylabel(label)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{dataset}: mean over {draws} draws of {size} questions; band: spread of the draws "
                 "(2.5th-97.5th percentile), not a confidence interval", fontsize=10)
    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def plot_similarities(entries: list[dict], dataset: str, k: int, out_png: str) -> None:
    """Per model, the distributions of C (question vs its answer), T (its top-k) and R (a random
    sentence): normalised histograms on a shared grid."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    mine = [e for e in entries if e["dataset"] == dataset]
    fig, axes = plt.subplots(1, max(1, len(mine)), figsize=(4.2 * max(1, len(mine)), 3.6), squeeze=False)
    bins = np.linspace(-1, 1, 201)
    for ax, e in zip(axes[0], mine):
        sims = pl.read_parquet(e["similarities"])
        topk = pl.read_parquet(e["topk"]).filter(pl.col("rank") <= k)
        sets = {"correct (C)": sims.filter(pl.col("kind") == "correct")["similarity"].to_numpy(),
                f"top-{k} (T)": topk["score"].to_numpy(),
                "random (R)": sims.filter(pl.col("kind") == "random")["similarity"].to_numpy()}
        for i, (label, values) in enumerate(sets.items()):
            values = values[np.isfinite(values)]
            if len(values):
                ax.hist(values, bins=bins, density=True, histtype="step", color=f"C{i}", label=f"{label}, n={len(values)}")
        ax.set_title(e["model"], fontsize=9)
        ax.set_xlabel("cosine similarity")
        ax.legend(fontsize=7)
    fig.suptitle(f"{dataset}: similarity distributions", fontsize=10)
    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def aggregate(entries: list[dict], settings: dict, seed: int, accuracy_out: str, isotropy_out: str,
              correlations_out: str, tables_dir: str, plots_dir: str, datasets: list[str], log) -> None:
    """entries: {dataset, model, summary, isotropy, similarities, topk} per (set, model)."""
    summaries = [pl.read_parquet(e["summary"]) for e in entries]
    summary = pl.concat(summaries) if summaries else pl.DataFrame(schema=SUMMARY_SCHEMA)
    isos = []
    for e in entries:
        frame = pl.read_parquet(e["isotropy"])
        isos.append(frame.with_columns(pl.lit(e["dataset"]).alias("set"), pl.lit(e["model"]).alias("model")))
    isotropy = pl.concat(isos, how="diagonal_relaxed") if isos else pl.DataFrame(
        schema={"set": pl.String, "model": pl.String, "transform": pl.String, "vectors": pl.String, "i1": pl.Float64,
                "isoscore": pl.Float64})
    k_table = settings["table_k"]
    base = summary.filter(pl.col("transform") == "none")
    extra = [c for c in base.columns if c not in TABLE_COLUMNS and c != "transform"]
    accuracy = base.select(TABLE_COLUMNS + extra)
    with atomic_path(accuracy_out) as tmp:
        accuracy.write_csv(tmp)
    at_k = summary.filter(pl.col("k") == k_table).select("set", "model", "transform", "accuracy", "accuracy_ci_low",
                                                          "accuracy_ci_high", "ndcg", "ndcg_ci_low", "ndcg_ci_high")
    iso_table = isotropy.join(at_k, on=["set", "model", "transform"], how="left").with_columns(
        pl.lit(k_table, pl.Int32).alias("k"))
    front = ["set", "model", "transform", "vectors", "n", "dim", "i1", "isoscore", "k", "accuracy", "accuracy_ci_low",
             "accuracy_ci_high", "ndcg", "ndcg_ci_low", "ndcg_ci_high"]
    iso_table = iso_table.select([c for c in front if c in iso_table.columns] +
                                 [c for c in iso_table.columns if c not in front])
    with atomic_path(isotropy_out) as tmp:
        iso_table.write_csv(tmp)
    corr = correlations(summary, isotropy, settings["correlations_k"], settings["bootstrap_b"], seed)
    with atomic_path(correlations_out) as tmp:
        corr.write_csv(tmp)
    tables = Path(tables_dir)
    for name, frame in (("retrieval_table1.csv", table1(corr)), ("retrieval_table2.csv", table2(summary, k_table)),
                        ("retrieval_table3.csv", table3(summary, isotropy, k_table, settings["transforms"]))):
        with atomic_path(tables / name) as tmp:
            frame.write_csv(tmp)
    models = list(dict.fromkeys(e["model"] for e in entries))
    for d in datasets:
        plot_accuracy(summary, d, [m for m in models if any(e["dataset"] == d and e["model"] == m for e in entries)],
                      str(Path(plots_dir) / d / "accuracy_vs_k.png"))
        plot_similarities(entries, d, k_table, str(Path(plots_dir) / d / "similarities.png"))
    log.info("%d (set, model) pairs -> %s, %s, %s; tables I-III in %s; plots in %s", len(entries), accuracy_out,
             isotropy_out, correlations_out, tables_dir, plots_dir)


# ---- the jobs of rules/retrieval.smk (workflow_scripts/jobs.py) ----
def run_retrieval_metrics(job) -> None:
    out = job.output
    metrics_job(job.input.topk, job.input.similarities, job.input.search, job.input.get("transform_topk"),
                job.wildcards.dataset, job.wildcards.model, job.params.settings, job.params.seed, out.metrics,
                out.thresholds, out.summary, setup_logging(name="retrieval"), out.get("replicates"),
                out.get("outcomes"))


def run_retrieval_aggregate(job) -> None:
    out = job.output
    # the plots are <plots dir>/<set>/<name>.png
    plots_dir = os.path.dirname(os.path.dirname(out.plots[0])) if out.plots else None
    aggregate(pair_entries(job.params.pairs, job.input), job.params.settings, job.params.seed, out.accuracy,
              out.isotropy, out.correlations, os.path.dirname(out.accuracy), plots_dir, list(job.params.datasets),
              setup_logging(name="retrieval"))
