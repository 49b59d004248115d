"""Operator samples of a sample set and the filter of the difference samples (methods.md §2).

From each sample (previous, S0, next, S1 = fuse(previous, S0), S2 = fuse(S0, next)); in the paper's
names S1 = previous, S2 = S0, S3 = next, F12 = S1, F23 = S2:
- overlap (1):    A = S1, B = S2, target O = S0
- union (2):      A = previous, B = S0, target U = S1;  A = S0, B = next, U = S2
- difference (6): (A, B -> D): (S1, previous -> S0), (S1, S0 -> previous), (S1, S2 -> previous),
                  (S2, S0 -> next), (S2, next -> S0), (S2, S1 -> next)
  i.e. (F12, S1 -> S2), (F12, S2 -> S1), (F12, F23 -> S1), (F23, S2 -> S3), (F23, S3 -> S2),
  (F23, F12 -> S3) in the paper's names.
Filter: a difference sample is kept only when cos(B, D) < `threshold` (0.25) under the configured
filter encoders, combined by `rule`: `all` (below the threshold under every encoder; an undefined
cosine, from a zero vector, fails), `any` (under at least one; undefined ones are ignored) or `mean`
(the mean of the defined cosines). The paper applies it "under various encoders" without naming them
or the rule, and no reference code applies it (its data came filtered). No filter encoders: every
difference sample is kept, and the report says the filter was off. The other operators are not
filtered.

Output operators.parquet: op_id (uint64, stable_id(sample_id, operator, variant)), sample_id,
operator, variant ("S1,previous->S0"), a, b, t (the texts of A, B and the target), one
`cos_bd_<encoder>` column per filter encoder (difference samples; null elsewhere), kept (bool). The
report counts each step.

Job: run_settheory_filter (rule settheory_filter, rules/settheory.smk).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from workflow_scripts.common import atomic_path, setup_logging, stable_id, write_json
from workflow_scripts.texts import text_keys
from workflow_scripts.vector_store import VectorStore, spec_digest

# (operator, A, B, target) in the sample table's column names
OPERATORS = [
    ("overlap", "S1", "S2", "S0"),
    ("union", "previous", "S0", "S1"),
    ("union", "S0", "next", "S2"),
    ("difference", "S1", "previous", "S0"),
    ("difference", "S1", "S0", "previous"),
    ("difference", "S1", "S2", "previous"),
    ("difference", "S2", "S0", "next"),
    ("difference", "S2", "next", "S0"),
    ("difference", "S2", "S1", "next"),
]
RULES = ("all", "any", "mean")


def variant_name(a: str, b: str, t: str) -> str:
    return f"{a},{b}->{t}"


def operator_rows(samples: pl.DataFrame) -> pl.DataFrame:
    """One row per (sample, operator sample), in sample order."""
    parts = []
    for i, (op, a, b, t) in enumerate(OPERATORS):
        parts.append(samples.select(
            pl.col("sample_id"), pl.lit(op).alias("operator"), pl.lit(variant_name(a, b, t)).alias("variant"),
            pl.col(a).alias("a"), pl.col(b).alias("b"), pl.col(t).alias("t"), pl.lit(i).alias("_order")))
    rows = pl.concat(parts).sort("sample_id", "_order").drop("_order")
    ids = [stable_id(s, op, v) for s, op, v in zip(rows["sample_id"], rows["operator"], rows["variant"])]
    return rows.with_columns(pl.Series("op_id", ids, pl.UInt64)).select("op_id", "sample_id", "operator", "variant",
                                                                         "a", "b", "t")


def keep_mask(cosines: np.ndarray, threshold: float, rule: str) -> np.ndarray:
    """(rows,) kept flags from (rows, encoders) cos(B, D) values; NaN = undefined (module docstring)."""
    cosines = np.asarray(cosines, dtype=np.float64)
    if cosines.ndim != 2:
        raise ValueError("cosines must be (rows, encoders)")
    if cosines.shape[1] == 0:
        return np.ones(cosines.shape[0], dtype=bool)
    finite = np.isfinite(cosines)
    with np.errstate(invalid="ignore"):
        below = cosines < threshold
    if rule == "all":
        return (below & finite).all(axis=1)
    if rule == "any":
        return (below & finite).any(axis=1)
    if rule == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(finite, cosines, 0.0).sum(axis=1) / finite.sum(axis=1)
        return np.isfinite(mean) & (mean < threshold)
    raise ValueError(f"unknown filter rule {rule!r}; expected one of {', '.join(RULES)}")


def apply_filter(rows: pl.DataFrame, encoders: list[dict], threshold: float, rule: str, log) -> tuple[pl.DataFrame, dict]:
    """Add cos_bd_<encoder> columns and `kept`; encoders: [{"name", "spec", "stores"}]."""
    is_diff = (rows["operator"] == "difference").to_numpy()
    diff = rows.filter(pl.col("operator") == "difference")
    cos = np.full((rows.height, len(encoders)), np.nan)
    stats = {}
    for j, enc in enumerate(encoders):
        store = VectorStore(enc["stores"], model=enc["name"], spec_digest=spec_digest(enc["spec"]))
        values = store.paired_cosine(text_keys(diff["b"].to_list()), text_keys(diff["t"].to_list()))
        store.release_pages()
        cos[is_diff, j] = values
        finite = values[np.isfinite(values)]
        stats[enc["name"]] = {"undefined": int((~np.isfinite(values)).sum()),
                              "below_threshold": int((finite < threshold).sum()),
                              "mean": float(finite.mean()) if len(finite) else None}
    kept = np.ones(rows.height, dtype=bool)
    kept[is_diff] = keep_mask(cos[is_diff], threshold, rule)
    diff_mask = pl.Series(is_diff)
    out = rows.with_columns([pl.when(diff_mask).then(pl.Series(cos[:, j])).otherwise(None).cast(pl.Float64)
                             .alias(f"cos_bd_{e['name']}") for j, e in enumerate(encoders)]
                            + [pl.Series("kept", kept, pl.Boolean)])
    n_diff = int(is_diff.sum())
    counts = {op: int((rows["operator"] == op).sum()) for op in ("overlap", "union", "difference")}
    counts["difference_kept"] = int(kept[is_diff].sum())
    counts["difference_dropped"] = n_diff - counts["difference_kept"]
    report = {"filter": {"encoders": [e["name"] for e in encoders], "rule": rule, "threshold": threshold,
                         "active": bool(encoders)},
              "counts": counts, "per_encoder": stats,
              "per_variant": {v: {"rows": int(((rows["variant"] == v).to_numpy() & is_diff).sum()),
                                  "kept": int(((rows["variant"] == v).to_numpy() & is_diff & kept).sum())}
                              for v in dict.fromkeys(diff["variant"].to_list())}}
    log.info("filter cos(B,D) < %s (%s of %s): %d of %d difference samples kept", threshold, rule,
             [e["name"] for e in encoders] or "no encoders: off", counts["difference_kept"], n_diff)
    return out, report


def encoder_stores(encoders: list[dict], stores: list[str]) -> list[dict]:
    """Each filter encoder {name, spec} with its share of `stores`: every encoder's store partitions,
    in the encoders' order (as many as its device's store partitions: a GPU model may have fewer),
    told apart by the model each store's manifest names."""
    model_of = {d: json.loads((Path(d) / "manifest.json").read_text())["model"] for d in stores}
    out = [{**e, "stores": [d for d in stores if model_of[d] == e["name"]]} for e in encoders]
    missing = [e["name"] for e in out if not e["stores"]]
    if missing or sum(len(e["stores"]) for e in out) != len(stores):
        raise ValueError(f"{len(stores)} store partitions for filter encoders {[e['name'] for e in encoders]}: "
                         f"none for {missing}" if missing else "some belong to no filter encoder")
    return out


def filter_sample_set(samples_path: str, sampleset: str, filt: dict, stores: list[str], out: str,
                      report_path: str, log) -> None:
    """operators.parquet and the filter report of a sample set; filt: {rule, threshold, encoders:
    [{name, spec}]}."""
    samples = pl.read_parquet(samples_path)
    rows = operator_rows(samples)
    out_rows, report = apply_filter(rows, encoder_stores(filt["encoders"], stores), filt["threshold"], filt["rule"], log)
    report = {"sampleset": sampleset, "samples": samples.height, **report}
    with atomic_path(out) as tmp:
        out_rows.write_parquet(tmp)
    write_json(report_path, report)


# ---- the jobs of rules/settheory.smk (workflow_scripts/jobs.py) ----
def run_settheory_filter(job) -> None:
    """A sample set's operator samples and the cos(B, D) filter. params.filter: {rule, threshold,
    encoders: [{name, spec}]}; input.stores: every filter encoder's store partitions, in order."""
    filter_sample_set(job.input.samples, job.wildcards.dataset, job.params.filter, list(job.input.stores),
                      job.output.operators, job.output.report, setup_logging(name="settheory"))
