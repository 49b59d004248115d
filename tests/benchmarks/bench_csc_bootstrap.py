"""CSC bootstrap intervals: what they cost, and how often they cover, measured side by side.

cost      At 1e6 and 4e7 similarities (3 fuzzed + 3 negated variants per original, written as the
          scoring job writes them), the analysis of `csc_score` with bootstrap_b = 0 and = 200 in one
          run: the difference is the interval's cost. Scoring itself (store lookups, cosines) is not
          part of this; bench_scale.py gives csc_score's whole time.
coverage  Over `--repeats` synthetic corpora drawn from two known distributions, with a shared
          per-sentence effect (the variants of one sentence are correlated, as in real data), how
          often the 95% interval holds the overlap of the distributions' own KDE-smoothed densities
          (each true density convolved with the kernel the estimator uses); once resampling
          sentences (the workflow's unit) and once resampling variants as if independent.

Usage: python tests/benchmarks/bench_csc_bootstrap.py [cost|coverage|all] [--sizes 1e6 4e7] [--repeats 100]
"""
import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from workflow_scripts.csc.curves import SIM_SCHEMA, analyse  # noqa: E402
from workflow_scripts.density import GRID, normalise, overlap  # noqa: E402

LOG = logging.getLogger("bench")
VARIANTS = 3  # per kind and original sentence


def write_corpus(path: Path, originals: int, rng, sentence_sd: float, variant_sd: float,
                 fuzz_mean: float = 0.9, neg_mean: float = 0.8, per_variant_units: bool = False,
                 chunk: int = 1_000_000) -> None:
    with pq.ParquetWriter(path, SIM_SCHEMA) as writer:
        for start in range(0, originals, chunk):
            n = min(chunk, originals - start)
            ids = np.arange(start + 1, start + n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
            effect = rng.normal(0.0, sentence_sd, n)
            for kind, mean in (("fuzz", fuzz_mean), ("negation", neg_mean)):
                sims = np.clip(mean + effect[:, None] + rng.normal(0.0, variant_sd, (n, VARIANTS)), -1, 1).ravel()
                oid = np.repeat(ids, VARIANTS)
                if per_variant_units:  # every variant its own unit: the naive bootstrap
                    oid = oid + np.tile(np.arange(VARIANTS, dtype=np.uint64), n) + np.uint64(1 if kind == "fuzz" else 7)
                writer.write_table(pa.table({"original_id": oid, "variant_id": np.arange(len(sims), dtype=np.uint64),
                                             "kind": pa.array([kind] * len(sims), pa.string()),
                                             "similarity": sims}, schema=SIM_SCHEMA))


def cost(sizes: list[float]) -> None:
    print(f"{'similarities':>13} {'B=0 s':>8} {'B=200 s':>8} {'interval s':>11} {'ratio':>6}")
    rng = np.random.default_rng(0)
    for size in sizes:
        originals = int(size) // (2 * VARIANTS)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "similarities.parquet"
            write_corpus(path, originals, rng, 0.02, 0.03)
            times = {}
            for b in (0, 200):
                t0 = time.perf_counter()
                analyse(path, "bench", "m", LOG, exact_max_n=20000, bootstrap_b=b)
                times[b] = time.perf_counter() - t0
        print(f"{originals * 2 * VARIANTS:>13.1e} {times[0]:8.1f} {times[200]:8.1f} {times[200] - times[0]:11.1f} "
              f"{times[200] / times[0]:5.2f}x")


def target_overlap(sentence_sd: float, variant_sd: float, fuzz_mean: float, neg_mean: float) -> float:
    """Overlap of the two true densities, each smoothed with the kernel (0.2 x its sd), on GRID."""
    sd = np.hypot(sentence_sd, variant_sd)
    smoothed = sd * np.sqrt(1 + 0.2 ** 2)
    return overlap(normalise(norm.pdf(GRID, fuzz_mean, smoothed)), normalise(norm.pdf(GRID, neg_mean, smoothed)))


def coverage(repeats: int, originals: int) -> None:
    settings = dict(sentence_sd=0.04, variant_sd=0.02, fuzz_mean=0.9, neg_mean=0.82)
    truth = target_overlap(**settings)
    print(f"target overlap {truth:.4f}; {repeats} corpora of {originals} sentences x {VARIANTS}+{VARIANTS} variants")
    for label, per_variant in (("sentences resampled (workflow)", False), ("variants resampled (naive)", True)):
        rng = np.random.default_rng(1)
        hits, widths = 0, []
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(repeats):
                path = Path(tmp) / f"s{r}.parquet"
                write_corpus(path, originals, rng, settings["sentence_sd"], settings["variant_sd"],
                             settings["fuzz_mean"], settings["neg_mean"], per_variant_units=per_variant)
                (row,), _, _ = analyse(path, "cov", "m", LOG, bootstrap_b=200, seed=r,
                                       bootstrap_groups=10 * originals * VARIANTS)
                hits += row["overlap_ci_low"] <= truth <= row["overlap_ci_high"]
                widths.append(row["overlap_ci_high"] - row["overlap_ci_low"])
        print(f"  {label:32s} coverage {hits}/{repeats} = {hits / repeats:.2f}, mean width {np.mean(widths):.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", default="all", choices=["cost", "coverage", "all"])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e6, 4e7])
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--originals", type=int, default=300)
    args = ap.parse_args()
    if args.what in ("cost", "all"):
        cost(args.sizes)
    if args.what in ("coverage", "all"):
        coverage(args.repeats, args.originals)


if __name__ == "__main__":
    main()
