"""Binned (FFT) vs exact (scipy gaussian_kde) density on the 2001-point grid, in one run.

For n = 1e5 and 1e6: time of each, max error of the normalised and the raw density, and the error
of the overlap with a second sample; for n = 4e7 the binned time alone (the exact one would take
about 10 minutes).  Usage: python tests/benchmarks/bench_kde.py [--skip-exact-1e6]
"""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from workflow_scripts.csc import BinnedSample, exact_density, normalise, overlap  # noqa: E402


def similarities(rng, n, centre):
    # cosine-like: skewed towards 1, bounded by [-1, 1]
    return np.clip(centre - rng.gamma(2.0, 0.06, n), -1, 1)


def binned(values):
    s = BinnedSample()
    for chunk in np.array_split(values, max(1, len(values) // 2_000_000)):
        s.add(chunk)  # in shards, as the scoring job does
    return s.density()


def main() -> None:
    rng = np.random.default_rng(0)
    sizes = [100_000] if "--skip-exact-1e6" in sys.argv else [100_000, 1_000_000]
    print(f"{'n':>10} {'exact s':>9} {'binned s':>9} {'speed-up':>9} {'max |d_norm|':>13} "
          f"{'max |d_raw|':>12} {'peak raw':>9} {'|overlap diff|':>15}")
    for n in sizes:
        fuzz, neg = similarities(rng, n, 0.97), similarities(rng, n, 0.9)
        t0 = time.perf_counter()
        ef, en = exact_density(fuzz), exact_density(neg)
        t_exact = (time.perf_counter() - t0) / 2
        t0 = time.perf_counter()
        bf, bn = binned(fuzz), binned(neg)
        t_binned = (time.perf_counter() - t0) / 2
        d_norm = np.abs(normalise(ef) - normalise(bf)).max()
        d_raw = np.abs(ef - bf).max()
        d_ov = abs(overlap(normalise(ef), normalise(en)) - overlap(normalise(bf), normalise(bn)))
        print(f"{n:>10.0e} {t_exact:9.3f} {t_binned:9.4f} {t_exact / t_binned:8.0f}x {d_norm:13.2e} "
              f"{d_raw:12.2e} {ef.max():9.2f} {d_ov:15.2e}")
    n = 40_000_000
    values = similarities(rng, n, 0.95)
    t0 = time.perf_counter()
    binned(values)
    print(f"{n:>10.0e} {'-':>9} {time.perf_counter() - t0:9.3f}   (binned only; values in shards of 2e6)")


if __name__ == "__main__":
    main()
