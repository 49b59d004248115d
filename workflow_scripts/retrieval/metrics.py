"""Retrieval metrics with seeded intervals (methods.md §4), per (set, model).

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

This module is the job of rule retrieval_metrics (`run_retrieval_metrics`, one per (set, model));
the tables, correlations and plots of every pair are the job of retrieval_aggregate (tables.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from workflow_scripts.bootstrap import (bootstrap_rng, percentile_interval, replicate_rows, resample_counts,
                                        write_replicates)
from workflow_scripts.common import atomic_path, read_json, setup_logging
from workflow_scripts.paired_statistics import wilson_interval
from workflow_scripts.retrieval.columns import SUMMARY_SCHEMA

RULES = ("paired_draws", "mcnemar", "ci_overlap")
NDCG_FORM = "binary: DCG = sum of 1/log2(1+rank) over relevant documents ranked <= k; IDCG over min(#relevant, k)"
METRIC_SCHEMA = {"transform": pl.String, "k": pl.Int32, "draw": pl.Int32, "accuracy": pl.Float64, "ndcg": pl.Float64,
                 "coe": pl.Float64, "roe": pl.Float64, "topk_percentile": pl.Float64,
                 "accuracy_at_threshold": pl.Float64, "ndcg_at_threshold": pl.Float64}


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


def _draws(n: int, settings: dict, seed: int, dataset: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The metrics' draws, the full data's bootstrap resample counts and the threshold draws of n
    questions: streams seeded by the set, never the model (paired)."""
    dr = settings["draws"]
    idx = draw_indices(n, dr["count"], dr["size"], dr["replace"], seed, "retrieval", dataset, "draws")
    counts = resample_counts(bootstrap_rng(seed, "retrieval", dataset, "full_data"), settings["bootstrap_b"], n)
    tidx = draw_indices(n, settings["thresholds"]["draws"], dr["size"], dr["replace"], seed, "retrieval", dataset,
                        "threshold_draws")
    return idx, counts, tidx


def _sorted_similarities(similarities: pl.DataFrame, kind: str) -> np.ndarray:
    """The similarities of a kind (C: `correct`, R: `random`), NaN dropped, sorted: their ECDF."""
    return np.sort(similarities.filter((pl.col("kind") == kind) & pl.col("similarity").is_not_nan())
                   ["similarity"].to_numpy())


def _full_data_figures(hit: np.ndarray, ndcg: np.ndarray, counts: np.ndarray, dataset: str, model: str, prefix: str,
                       ks: list[int]) -> tuple[tuple, list[dict]]:
    """(full-data accuracies with Wilson's interval, their interval methods, full-data NDCGs with
    the classic bootstrap interval) per k, and the replicate rows of both (full_data_replicates)."""
    kept: list = []
    acc, nd = full_data(hit, counts, kept), full_data(ndcg, counts, kept)
    parts = full_data_replicates(dataset, model, prefix, ks, acc, nd, kept, hit.shape[0])
    acc, methods = exact_at_the_bounds(hit, acc)
    return (acc, methods, nd), parts


def _metric_rows(transform: str, k: int, per_draw: list[np.ndarray], full: list) -> list[tuple]:
    """metrics.parquet's rows of one transform and k: one per draw, then the full data's (draw -1);
    the value columns of METRIC_SCHEMA in order, those not given NaN."""
    pad = [float("nan")] * (len(METRIC_SCHEMA) - 3 - len(per_draw))
    rows = [(transform, k, b, *(v[b] for v in per_draw), *pad) for b in range(len(per_draw[0]))]
    return rows + [(transform, k, -1, *full, *pad)]


def _summary_row(dataset: str, model: str, transform: str, k: int, draws: dict, full: tuple, c: int,
                 threshold: dict | None = None) -> dict:
    """A summary row: each statistic of `draws` (its values per draw) as the mean over the draws with
    their 2.5/97.5 percentiles, the chosen threshold (untransformed vectors only), and column c of
    the full-data figures (_full_data_figures)."""
    row = {"set": dataset, "model": model, "transform": transform, "k": k}
    for name, values in draws.items():
        row[name], row[f"{name}_ci_low"], row[f"{name}_ci_high"] = interval(values)
    row.update(threshold or {})
    accuracy, methods, ndcg = full
    for name, values in (("accuracy_full", accuracy[c]), ("ndcg_full", ndcg[c])):
        row[name], row[f"{name}_ci_low"], row[f"{name}_ci_high"] = values
    row["accuracy_full_ci_method"] = methods[c]
    return row


def _untransformed_at(j: Judged, c: int, k: int, idx: np.ndarray, hit: np.ndarray, ndcg: np.ndarray, chosen: dict,
                      similarities: tuple[np.ndarray, np.ndarray], percentile: float) -> tuple[list[tuple], dict]:
    """metrics.parquet's draws of the untransformed vectors at k (ks[c]) -- accuracy, NDCG, COE, ROE
    from the draw's top-k percentile t, and the accuracy and NDCG at the chosen threshold -- and the
    statistics' values per draw."""
    c_sorted, r_sorted = similarities
    n = len(j.query_ids)
    t_draw = draw_percentiles(j.scores, idx, k, percentile)
    t_full = draw_percentiles(j.scores, np.arange(n)[None, :], k, percentile)[0]
    theta = chosen[k][0] if chosen[k] else None
    if theta is not None:
        h_t, g_t = hits_and_ndcg(j, [k], theta)
        acc_t, ndcg_t = h_t[:, 0], g_t[:, 0]
    else:
        acc_t = ndcg_t = np.full(n, np.nan)
    draws = {"accuracy": hit[idx, c].mean(axis=1), "ndcg": ndcg[idx, c].mean(axis=1),
             "coe": exceed_share(c_sorted, t_draw), "roe": exceed_share(r_sorted, t_draw),
             "accuracy_at_threshold": acc_t[idx].mean(axis=1), "ndcg_at_threshold": ndcg_t[idx].mean(axis=1)}
    per_draw = [draws["accuracy"], draws["ndcg"], draws["coe"], draws["roe"], t_draw, draws["accuracy_at_threshold"],
                draws["ndcg_at_threshold"]]
    full = [hit[:, c].mean(), ndcg[:, c].mean(), float(exceed_share(c_sorted, t_full)),
            float(exceed_share(r_sorted, t_full)), t_full, acc_t.mean(), ndcg_t.mean()]
    return _metric_rows("none", k, per_draw, full), draws


def _transformed(transform_topk: pl.DataFrame | None, similarities: pl.DataFrame, j: Judged, ks: list[int],
                 top_k: int, idx: np.ndarray, counts: np.ndarray, dataset: str,
                 model: str) -> tuple[list[tuple], list[dict], list[dict]]:
    """metrics.parquet's rows, the summary rows and the full-data replicate rows of the searches after
    each transformation, in the transformations' order (accuracy and NDCG only)."""
    metric_rows, summary_rows, parts = [], [], []
    for name, frame in sorted((transform_topk.partition_by("transform", as_dict=True).items()
                               if transform_topk is not None and transform_topk.height else []), key=lambda kv: kv[0]):
        tname = name[0] if isinstance(name, tuple) else name
        jt = judge(frame.drop("transform"), similarities, top_k)
        if jt.query_ids != j.query_ids:
            raise ValueError(f"transform {tname}: evaluated queries differ from the baseline's")
        hit, ndcg = hits_and_ndcg(jt, ks)
        full, replicates = _full_data_figures(hit, ndcg, counts, dataset, model, f"{tname}/", ks)
        parts += replicates
        for c, k in enumerate(ks):
            draws = {"accuracy": hit[idx, c].mean(axis=1), "ndcg": ndcg[idx, c].mean(axis=1)}
            metric_rows += _metric_rows(tname, k, list(draws.values()), [hit[:, c].mean(), ndcg[:, c].mean()])
            summary_rows.append(_summary_row(dataset, model, tname, k, draws, full, c))
    return metric_rows, summary_rows, parts


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
    j = judge(topk, similarities, top_k)
    n = len(j.query_ids)
    if n == 0:
        raise ValueError(f"{dataset}/{model}: no evaluated query")
    idx, counts, tidx = _draws(n, settings, seed, dataset)
    ecdfs = (_sorted_similarities(similarities, "correct"), _sorted_similarities(similarities, "random"))
    threshold_rows, chosen = choose_threshold(j, ks, idx, tidx, settings["thresholds"])
    hit, ndcg = hits_and_ndcg(j, ks)
    if outcomes_out is not None:
        outcomes_out.append(question_outcomes(j.query_ids, hit, ks))
    full, parts = _full_data_figures(hit, ndcg, counts, dataset, model, "", ks)
    metric_rows, summary_rows = [], []
    for c, k in enumerate(ks):
        rows, draws = _untransformed_at(j, c, k, idx, hit, ndcg, chosen, ecdfs, settings["coe"]["percentile"])
        metric_rows += rows
        summary_rows.append(_summary_row(dataset, model, "none", k, draws, full, c, {
            "threshold": chosen[k][0] if chosen[k] else float("nan"),
            "threshold_percentile": chosen[k][1] if chosen[k] else float("nan")}))
    t_metrics, t_summaries, t_parts = _transformed(transform_topk, similarities, j, ks, top_k, idx, counts, dataset,
                                                   model)
    metrics = pl.DataFrame(metric_rows + t_metrics, schema=METRIC_SCHEMA, orient="row")
    thresholds = pl.DataFrame(threshold_rows, schema=THRESHOLD_SCHEMA, orient="row") if threshold_rows else \
        pl.DataFrame(schema=THRESHOLD_SCHEMA)
    summary = _summary_frame(summary_rows + t_summaries, j, ecdfs, idx, settings)
    if replicates_out is not None:
        replicates_out.extend(parts + t_parts)
    if log is not None:
        _log_first(log, summary, dataset, model, ks[0])
    return metrics, thresholds, summary


def _summary_frame(rows: list[dict], j: Judged, ecdfs: tuple, idx: np.ndarray, settings: dict) -> pl.DataFrame:
    """summary.parquet: the rows with what every row of the (set, model) shares (counts, settings)."""
    dr, th = settings["draws"], settings["thresholds"]
    extra = {"n_queries": len(j.query_ids), "n_zero_queries": int((~np.isfinite(j.scores[:, 0])).sum()),
             "n_correct": len(ecdfs[0]), "n_random": len(ecdfs[1]),
             "draws": int(len(idx)), "draw_size": int(idx.shape[1]) if len(idx) else 0,
             "draw_replace": bool(dr["replace"]), "bootstrap_b": settings["bootstrap_b"],
             "threshold_rule": th["rule"], "threshold_metric": th["metric"],
             "coe_percentile": float(settings["coe"]["percentile"]), "ndcg_form": NDCG_FORM}
    return pl.DataFrame([{**r, **extra} for r in rows], schema=SUMMARY_SCHEMA, orient="row")


def _log_first(log, summary: pl.DataFrame, dataset: str, model: str, k: int) -> None:
    """The untransformed figures at the first k."""
    first = summary.filter((pl.col("transform") == "none") & (pl.col("k") == k)).row(0, named=True)
    log.info("%s / %s: %d queries (%d with a zero vector); accuracy@%d %.4f [%.4f, %.4f], ndcg %.4f, coe %.4f, "
             "roe %.4f, threshold %s", dataset, model, first["n_queries"], first["n_zero_queries"], k,
             first["accuracy"], first["accuracy_ci_low"], first["accuracy_ci_high"], first["ndcg"], first["coe"],
             first["roe"], f"{first['threshold']:.4f} (P{first['threshold_percentile']:.0f})"
             if math.isfinite(first["threshold"]) else "none passes")


THRESHOLD_SCHEMA = {"k": pl.Int32, "percentile": pl.Float64, "threshold": pl.Float64, "metric": pl.String,
                    "value": pl.Float64, "value_ci_low": pl.Float64, "value_ci_high": pl.Float64,
                    "diff_ci_low": pl.Float64, "diff_ci_high": pl.Float64, "p_value": pl.Float64,
                    "passes": pl.Boolean, "rule": pl.String, "chosen": pl.Boolean}
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


# ---- the jobs of rules/retrieval.smk (workflow_scripts/jobs.py) ----
def run_retrieval_metrics(job) -> None:
    out = job.output
    metrics_job(job.input.topk, job.input.similarities, job.input.search, job.input.get("transform_topk"),
                job.wildcards.dataset, job.wildcards.model, job.params.settings, job.params.seed, out.metrics,
                out.thresholds, out.summary, setup_logging(name="retrieval"), out.get("replicates"),
                out.get("outcomes"))
