"""Densities of similarity samples on a grid, and the overlap of two: the machinery of the CSC probe
(csc/curves.py, methods.md §1) that the domain-shift probe uses too (domain_shift/scores.py).

Density: the Gaussian KDE with covariance factor 0.2 (kernel sd = 0.2 x sample sd) evaluated at
the points of the grid -1..1 (step `grid_step`, 0.001 = 2001 points in the paper): scipy's
`gaussian_kde` (exact_density), or a binned estimator (Window, binned_density): linear binning on a
fine grid aligned with the output grid, with at least NODES_PER_BANDWIDTH nodes per kernel bandwidth
whatever the bandwidth, then FFT convolution with the same kernel and the values read at the grid
points. Each density is divided by its sum over the grid (normalise, equation 1); overlap = sum over
the grid of min(a, b) (equation 2). Moments are mergeable per group, so that bootstrap replicates
are weighted sums of groups (Moments.weighted).

A curve is undefined (undefined_reason) with fewer than 2 similarities, zero spread, or a bandwidth
below grid_step x RESOLVABLE, where the grid no longer represents the curve.
"""
from __future__ import annotations

import math

import numpy as np

PAPER_GRID_STEP = 0.001
COVARIANCE_FACTOR = 0.2
NODES_PER_BANDWIDTH = 16  # fine-grid nodes per kernel bandwidth, at least (binning error ~ (step/bw)^2)
MIN_REFINE = 8  # fine-grid nodes per output-grid step, at least
RESOLVABLE = 0.1  # a bandwidth below grid_step x this: the grid no longer represents the curve
# cosines of float32 vectors differ by ~1e-7 where the vectors are equal up to rounding: a smaller
# spread is no spread (e.g. TF-IDF where the inserted word has no dimension)
SPREAD_RESOLUTION = 1e-6
KERNEL_REACH = 8.0  # kernel truncated at this many bandwidths (exp(-32) ~ 1e-14)


def make_grid(step: float = PAPER_GRID_STEP) -> np.ndarray:
    intervals = int(round(2.0 / step))
    if intervals < 2 or abs(intervals * step - 2.0) > 1e-9:
        raise ValueError(f"grid_step {step} must divide 2 (the grid runs from -1 to 1)")
    return np.linspace(-1.0, 1.0, intervals + 1)


GRID = make_grid()


class Moments:
    """Count, mean and sum of squared deviations per group, merged with the pairwise update of
    Chan et al.: numerically stable (no sum of squares) and mergeable across shards."""

    def __init__(self, groups: int = 1):
        self.n = np.zeros(groups, dtype=np.int64)
        self.mean = np.zeros(groups)
        self.m2 = np.zeros(groups)

    def add(self, values: np.ndarray, groups: np.ndarray | None = None) -> None:
        values = np.asarray(values, dtype=np.float64)
        if not len(values):
            return
        size = len(self.n)
        groups = np.zeros(len(values), dtype=np.int64) if groups is None else groups
        n_b = np.bincount(groups, minlength=size)
        shift = values[0]  # sums of shifted values keep the digits the spread lives in
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_b = shift + np.where(n_b > 0, np.bincount(groups, weights=values - shift, minlength=size) / n_b, 0.0)
        m2_b = np.bincount(groups, weights=(values - mean_b[groups]) ** 2, minlength=size)
        self.merge(n_b, mean_b, m2_b)

    def merge(self, n_b: np.ndarray, mean_b: np.ndarray, m2_b: np.ndarray) -> None:
        n = self.n + n_b
        delta = mean_b - self.mean
        with np.errstate(invalid="ignore", divide="ignore"):
            self.mean = np.where(n > 0, self.mean + delta * (n_b / np.maximum(n, 1)), 0.0)
            self.m2 = self.m2 + m2_b + delta ** 2 * (self.n * n_b / np.maximum(n, 1))
        self.n = n

    def regroup(self, groups: int) -> "Moments":
        """Merge group g into g % groups."""
        target = np.arange(len(self.n)) % groups
        out = Moments(groups)
        n = np.bincount(target, weights=self.n, minlength=groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, np.bincount(target, weights=self.n * self.mean, minlength=groups) / np.maximum(n, 1), 0.0)
        out.n = n.astype(np.int64)
        out.mean = mean
        out.m2 = np.bincount(target, weights=self.m2 + self.n * (self.mean - mean[target]) ** 2, minlength=groups)
        return out

    def weighted(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n, mean, m2) of each resample: `weights` is (replicates, groups) draw counts."""
        weights = np.atleast_2d(weights).astype(np.float64)
        n = weights @ self.n
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, (weights @ (self.n * self.mean)) / np.maximum(n, 1), 0.0)
        m2 = weights @ self.m2 + ((weights * self.n) * (self.mean[None, :] - mean[:, None]) ** 2).sum(axis=1)
        return n, mean, m2

    def total(self) -> tuple[int, float, float]:
        n, mean, m2 = self.weighted(np.ones((1, len(self.n))))
        return int(round(n[0])), float(mean[0]), float(m2[0])


def bandwidth(n: float, m2: float, factor: float = COVARIANCE_FACTOR) -> float:
    """Kernel sd of scipy's gaussian_kde with covariance factor `factor` (the paper's 0.2): factor x
    sample sd (ddof 1)."""
    return factor * math.sqrt(max(m2, 0.0) / (n - 1)) if n >= 2 else 0.0


def undefined_reason(n: float, m2: float, grid_step: float, setting: str = "grid_step") -> str | None:
    """Why the KDE of a sample cannot be evaluated on the grid, or None (`setting`: the config key of
    the grid step, for the advice)."""
    if n == 0:
        return "no similarities"
    if n < 2:
        return "fewer than 2 similarities"
    if math.sqrt(max(m2, 0.0) / (n - 1)) < SPREAD_RESOLUTION:
        return "zero spread: all similarities are equal (up to float32 rounding)"
    bw = bandwidth(n, m2)
    if bw < grid_step * RESOLVABLE:
        return (f"bandwidth {bw:.3g} is below grid_step x {RESOLVABLE} = {grid_step * RESOLVABLE:.3g}: the grid "
                f"does not represent the curve (set {setting} smaller)")
    return None


def exact_density(values: np.ndarray, grid: np.ndarray = GRID, factor: float = COVARIANCE_FACTOR) -> np.ndarray:
    """scipy.stats.gaussian_kde with covariance factor `factor` (the paper's 0.2), evaluated on the grid."""
    from scipy import stats  # here, not at the top: plotting and aggregating jobs skip its 1-2 s import
    return stats.gaussian_kde(np.asarray(values, dtype=np.float64), bw_method=factor)(grid)


def fft_convolve(values: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """scipy.signal.fftconvolve(values, kernel, mode="full") of 1-D float arrays, bit for bit (tested):
    the same scipy.fft calls, without importing scipy.signal (a second of every scoring job)."""
    from scipy import fft
    size = len(values) + len(kernel) - 1
    padded = [fft.next_fast_len(size, True)]
    spectrum = fft.rfftn(values, padded, axes=[0]) * fft.rfftn(kernel, padded, axes=[0])
    return fft.irfftn(spectrum, padded, axes=[0])[:size]


class Window:
    """Fine nodes over the part of the grid a sample's kernels reach: node k sits at
    grid[lo] + k x step / refine, so every refine-th node is a grid point."""

    def __init__(self, grid_step: float, lo: int, hi: int, refine: int):
        self.grid_step, self.lo, self.hi, self.refine = grid_step, lo, hi, refine
        self.delta = grid_step / refine
        self.nodes = (hi - lo) * refine + 1
        self.start = -1.0 + lo * grid_step

    @classmethod
    def covering(cls, grid_step: float, low: float, high: float, bw_min: float, bw_max: float) -> "Window":
        """Nodes for data in [low, high] with bandwidths in [bw_min, bw_max]."""
        points = int(round(2.0 / grid_step)) + 1
        refine = max(MIN_REFINE, math.ceil(NODES_PER_BANDWIDTH * grid_step / bw_min))
        lo = max(0, math.floor((low - KERNEL_REACH * bw_max + 1.0) / grid_step))
        hi = min(points - 1, math.ceil((high + KERNEL_REACH * bw_max + 1.0) / grid_step))
        return cls(grid_step, lo, max(hi, lo + 1), refine)

    def bin(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Linear binning: (lower node, weight of the upper node) of each value."""
        t = (np.asarray(values, dtype=np.float64) - self.start) / self.delta
        j = np.clip(np.floor(t).astype(np.int64), 0, self.nodes - 2)
        return j, np.clip(t - j, 0.0, 1.0)

    def histogram(self, values: np.ndarray, groups: np.ndarray | None = None, n_groups: int = 1) -> np.ndarray:
        """(n_groups, nodes) linear-binning weights; every value's mass 1 is kept."""
        j, frac = self.bin(values)
        cell = j if groups is None else groups * self.nodes + j
        flat = np.bincount(np.concatenate([cell, cell + 1]), weights=np.concatenate([1.0 - frac, frac]),
                           minlength=n_groups * self.nodes)
        return flat.reshape(n_groups, self.nodes)

    def density(self, hist: np.ndarray, n: float, bw: float, points: int) -> np.ndarray:
        """KDE of the binned sample at the grid points (same scale as scipy's gaussian_kde)."""
        reach = int(math.ceil(KERNEL_REACH * bw / self.delta))
        offsets = np.arange(-reach, reach + 1) * self.delta
        kernel = np.exp(-0.5 * (offsets / bw) ** 2) / (bw * math.sqrt(2.0 * math.pi))
        fine = fft_convolve(hist, kernel)[reach:reach + self.nodes] / n
        out = np.zeros(points)
        out[self.lo:self.hi + 1] = np.maximum(fine[::self.refine], 0.0)  # FFT round-off can leave -1e-17
        return out


def binned_density(values: np.ndarray, grid_step: float = PAPER_GRID_STEP) -> np.ndarray:
    """The binned estimator of one sample on its own (tests, benchmarks)."""
    values = np.asarray(values, dtype=np.float64)
    m = Moments()
    m.add(values)
    n, _, m2 = m.total()
    reason = undefined_reason(n, m2, grid_step)
    if reason:
        raise ValueError(reason)
    bw = bandwidth(n, m2)
    window = Window.covering(grid_step, values.min(), values.max(), bw, bw)
    return window.density(window.histogram(values)[0], n, bw, int(round(2.0 / grid_step)) + 1)


def normalise(density: np.ndarray) -> np.ndarray:
    """Equation 1: divide by the sum over the grid."""
    total = density.sum()
    return density / total if total > 0 else np.full_like(density, np.nan)


def overlap(fuzz: np.ndarray, neg: np.ndarray) -> float:
    """Equation 2: shared area of two normalised densities, in [0, 1]."""
    return float(np.minimum(fuzz, neg).sum())
