"""Binned (FFT) vs exact (scipy gaussian_kde) density on the 2001-point grid, in one run.

For n = 1e5 and 1e6: time of each, max error of the normalised and the raw density, and the error
of the overlap with a second sample; then the overlap error at kernel bandwidths from 1e-4 to 0.1
(below, at and above the 0.001 grid step) at n = 20,000; for n = 4e7 the binned time alone (the
exact one would take about 10 minutes).
Usage: python tests/benchmarks/bench_kde.py [--skip-exact-1e6]
"""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from workflow_scripts.density import binned_density, exact_density, normalise, overlap  # noqa: E402


def similarities(rng, n, centre):
    # cosine-like: skewed towards 1, bounded by [-1, 1]
    return np.clip(centre - rng.gamma(2.0, 0.06, n), -1, 1)


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
        bf, bn = binned_density(fuzz), binned_density(neg)
        t_binned = (time.perf_counter() - t0) / 2
        d_norm = np.abs(normalise(ef) - normalise(bf)).max()
        d_raw = np.abs(ef - bf).max()
        d_ov = abs(overlap(normalise(ef), normalise(en)) - overlap(normalise(bf), normalise(bn)))
        print(f"{n:>10.0e} {t_exact:9.3f} {t_binned:9.4f} {t_exact / t_binned:8.0f}x {d_norm:13.2e} "
              f"{d_raw:12.2e} {ef.max():9.2f} {d_ov:15.2e}")
    print(f"\n{'bandwidth':>10} {'overlap':>9} {'|binned - scipy|':>17}   (n = 20,000 per curve)")
    for bw in (1.0e-4 * 1.05, 2e-4, 5e-4, 1e-3, 2e-3, 1e-2, 0.1):
        sd = bw / 0.2
        centre = 0.9 if sd < 0.05 else 0.0
        x = np.clip(rng.normal(centre, sd, 20_000), -1, 1)
        y = np.clip(rng.normal(centre - sd, 1.1 * sd, 20_000), -1, 1)
        exact = overlap(normalise(exact_density(x)), normalise(exact_density(y)))
        binned = overlap(normalise(binned_density(x)), normalise(binned_density(y)))
        print(f"{bw:>10.2e} {exact:9.5f} {abs(exact - binned):17.2e}")
    n = 40_000_000
    values = similarities(rng, n, 0.95)
    t0 = time.perf_counter()
    binned_density(values)
    print(f"\n{n:>10.0e} {'-':>9} {time.perf_counter() - t0:9.3f}   (binned only, one array)")


if __name__ == "__main__":
    main()
