"""The Montague probe on a finished run: how many single-phrase verdicts the reference code's padding
filter would change, and the probe's wall time and peak memory per job.

Usage: python tests/benchmarks/bench_montague.py [RESULTS_DIR]   (default: results)

1. The padding defect, repeated on purpose (a one-off measurement, never an option of the
   workflow): for every phrase of results/montague/<dataset>/<model>/distances.parquet, test 1 is
   decided again as the reference does (every distance >= 1 dropped, a zero vector's distance
   counted as 1 and dropped, a phrase with nothing left passing vacuously) and compared with the
   workflow's verdict. Printed per (dataset, model): phrases, phrases with a distance >= 1, the
   workflow's failures that the reference passes, undefined phrases (zero-norm vectors) that the
   reference scores (as passes), phrases the reference passes with one side of the comparison
   emptied by the filter (vacuous: nothing, or nothing on one side, compared), and the share of
   phrases whose verdict changes.
2. Time and memory: Snakemake's benchmark files of the probe's jobs (phrases, the embedding and
   TF-IDF fitting jobs of the montague.* text sets, scoring, aggregation): seconds and peak RSS.
"""
import csv
import sys
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workflow_scripts.montague.scores import DIST_COLUMNS, reference_padding_verdicts  # noqa: E402


def padding_changes(distances: pl.DataFrame) -> dict:
    d_phrase = distances.select(DIST_COLUMNS[:3]).to_numpy().astype(np.float64)
    d_split = distances.select(DIST_COLUMNS[3:]).to_numpy().astype(np.float64)
    n_words = np.where(distances["kind"].to_numpy() == "AN", 2, 3)
    cols = np.arange(3)
    used = np.concatenate([cols[None, :] < n_words[:, None],
                           cols[None, :] < np.where(n_words == 2, 1, n_words)[:, None]], axis=1)
    all_d = np.concatenate([d_phrase, d_split], axis=1)
    ref = reference_padding_verdicts(d_phrase, d_split, n_words)
    ours = distances["single_pass"]
    defined = ours.is_not_null().to_numpy()
    ours = ours.fill_null(False).to_numpy()
    with np.errstate(invalid="ignore"):
        at_least_1 = (np.where(used, all_d, 0) >= 1).any(axis=1)
    kept = np.where(used, all_d, np.nan)
    with np.errstate(invalid="ignore"):
        kept_p = (kept[:, :3] < 1).any(axis=1)
        kept_s = (kept[:, 3:] < 1).any(axis=1)
    vacuous = ref & ~(kept_p & kept_s)  # the reference passes with one side of the test empty
    flipped = defined & (ours != ref)
    undefined_scored = ~defined
    return {"phrases": len(ref), "with_d_ge_1": int(at_least_1.sum()), "fail_to_pass": int((flipped & ref).sum()),
            "pass_to_fail": int((flipped & ~ref).sum()), "undefined_scored": int(undefined_scored.sum()),
            "undefined_passed": int((undefined_scored & ref).sum()), "vacuous": int(vacuous.sum()),
            "changed_share": float((flipped | undefined_scored).mean()) if len(ref) else float("nan")}


def bench_rows(results: Path):
    for path in sorted((results / "benchmarks").rglob("*.tsv")):
        parts = path.relative_to(results / "benchmarks").parts
        rule = parts[0]
        name = "/".join(parts[1:]).removesuffix(".tsv")
        if rule.startswith("montague") or (rule in ("embed", "fit_tfidf") and "montague." in name):
            with open(path) as f:
                row = list(csv.DictReader(f, delimiter="\t"))[-1]
            rss = row.get("max_rss", "NA")
            yield rule, name, float(row["s"]), float(rss) if rss not in ("NA", "-", "") else float("nan")


def main() -> None:
    results = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
    files = sorted((results / "montague").glob("*/*/distances.parquet"))
    if not files:
        sys.exit(f"no results/montague/<dataset>/<model>/distances.parquet under {results}")
    print("padding defect repeated on purpose (test 1, single phrases):")
    print(f"{'dataset/model':32s} {'phrases':>8s} {'d>=1':>7s} {'fail->pass':>10s} {'pass->fail':>10s} "
          f"{'undef scored':>12s} {'(as pass)':>9s} {'vacuous':>8s} {'changed':>8s}")
    for path in files:
        r = padding_changes(pl.read_parquet(path))
        label = f"{path.parent.parent.name}/{path.parent.name}"
        print(f"{label:32s} {r['phrases']:8d} {r['with_d_ge_1']:7d} {r['fail_to_pass']:10d} {r['pass_to_fail']:10d} "
              f"{r['undefined_scored']:12d} {r['undefined_passed']:9d} {r['vacuous']:8d} {100 * r['changed_share']:7.2f}%")
    rows = list(bench_rows(results))
    if rows:
        print("\njobs of the probe (Snakemake benchmark files):")
        print(f"{'rule':20s} {'job':40s} {'s':>8s} {'peak RSS MB':>12s}")
        for rule, name, s, rss in rows:
            print(f"{rule:20s} {name:40s} {s:8.1f} {rss:12.0f}")
        print(f"{'sum of job seconds':61s} {sum(r[2] for r in rows):8.1f}   peak {max(r[3] for r in rows):.0f} MB")


if __name__ == "__main__":
    main()
