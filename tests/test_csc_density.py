"""Density, normalisation and overlap (methods.md §1, equations 1-2)."""
import numpy as np
import pytest

from workflow_scripts.csc import (GRID, BinnedSample, curve, exact_density, normalise, overlap)


def gaussian_kde_by_hand(values, grid, factor=0.2):
    """Independent KDE: kernel sd = factor * sample sd (ddof=1), Gaussian, averaged over points."""
    values = np.asarray(values, dtype=float)
    bw = factor * values.std(ddof=1)
    z = (grid[:, None] - values[None, :]) / bw
    return np.exp(-0.5 * z ** 2).sum(axis=1) / (len(values) * bw * np.sqrt(2 * np.pi))


def test_grid_is_2001_points_from_minus_one_to_one():
    assert len(GRID) == 2001 and GRID[0] == -1 and GRID[-1] == 1
    assert np.allclose(np.diff(GRID), 0.001)


def test_exact_density_matches_formula():
    values = np.array([0.1, 0.3, 0.35, 0.8, -0.2])
    assert np.allclose(exact_density(values), gaussian_kde_by_hand(values, GRID), rtol=1e-10, atol=1e-12)


def test_normalised_density_sums_to_one():
    rng = np.random.default_rng(1)
    d = normalise(exact_density(rng.uniform(-0.5, 0.9, 300)))
    assert d.sum() == pytest.approx(1.0)
    assert np.all(d >= 0)


def test_overlap_hand_computed():
    f = np.array([0.5, 0.5, 0.0, 0.0])
    g = np.array([0.0, 0.25, 0.25, 0.5])
    assert overlap(f, g) == pytest.approx(0.25)  # min per point: 0, .25, 0, 0
    assert overlap(f, f) == pytest.approx(1.0)
    assert overlap(f, np.array([0.0, 0.0, 0.5, 0.5])) == 0.0


def test_overlap_of_identical_and_separated_samples():
    rng = np.random.default_rng(2)
    a = rng.normal(0.8, 0.03, 2000)
    assert overlap(normalise(exact_density(a)), normalise(exact_density(a))) == pytest.approx(1.0)
    b = rng.normal(-0.6, 0.03, 2000)
    assert overlap(normalise(exact_density(a)), normalise(exact_density(b))) < 1e-12


def test_overlap_of_two_gaussians_matches_closed_form():
    # KDE of normal samples ~ normal with sd*sqrt(1+0.2^2); overlap of equal-sd normals = 2*Phi(-d/(2s))
    from scipy.stats import norm
    rng = np.random.default_rng(3)
    sd, delta = 0.05, 0.1
    a = rng.normal(0.5, sd, 200_000)
    b = rng.normal(0.5 - delta, sd, 200_000)
    sa, sb = BinnedSample(), BinnedSample()
    sa.add(a)
    sb.add(b)
    s = sd * np.sqrt(1 + 0.2 ** 2)
    expected = 2 * norm.cdf(-delta / (2 * s))
    assert overlap(normalise(sa.density()), normalise(sb.density())) == pytest.approx(expected, abs=5e-3)


@pytest.mark.parametrize("maker", [
    lambda r: np.clip(r.normal(0.7, 0.1, 20000), -1, 1),
    lambda r: 2 * r.beta(8, 2, 20000) - 1,
    lambda r: np.clip(np.r_[r.normal(0.9, 0.02, 5000), r.normal(0.3, 0.2, 5000)], -1, 1),
    lambda r: np.clip(r.normal(0.98, 0.006, 3000), -1, 1),
])
def test_binned_kde_agrees_with_exact(maker):
    rng = np.random.default_rng(4)
    x, y = maker(rng), np.clip(rng.normal(0.5, 0.15, 5000), -1, 1)
    sx, sy = BinnedSample(), BinnedSample()
    sx.add(x)
    sy.add(y)
    ex, bx = normalise(exact_density(x)), normalise(sx.density())
    assert np.abs(ex - bx).max() < 1e-4
    exact_overlap = overlap(ex, normalise(exact_density(y)))
    binned_overlap = overlap(bx, normalise(sy.density()))
    assert abs(exact_overlap - binned_overlap) < 1e-4


def test_binned_sample_reduces_over_shards_exactly():
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, 10_000)
    whole, parts = BinnedSample(), BinnedSample()
    whole.add(x)
    for chunk in np.array_split(x, 7):
        parts.add(chunk)
    assert parts.n == whole.n
    assert np.allclose(parts.weights, whole.weights, atol=1e-9)
    assert parts.sd() == pytest.approx(x.std(ddof=1))
    assert parts.weights.sum() == pytest.approx(len(x))  # linear binning keeps every point's mass


def test_curve_picks_method_and_handles_degenerate_samples():
    rng = np.random.default_rng(6)
    x = rng.normal(0.5, 0.1, 500)
    s = BinnedSample()
    s.add(x)
    assert curve(s, x, exact_max_n=1000)[1] == "exact"
    assert curve(s, None, exact_max_n=1000)[1] == "binned"
    assert curve(s, x, exact_max_n=100)[1] == "binned"
    # all similarities equal (e.g. an encoder blind to the inserted word): a point mass, not an error
    same = BinnedSample()
    same.add(np.ones(50))
    density, method = curve(same, np.ones(50), exact_max_n=1000)
    assert method == "binned" and density.sum() == pytest.approx(1.0) and density[-1] == pytest.approx(1.0)
    empty = curve(BinnedSample(), np.empty(0), 1000)
    assert empty[1] == "empty" and np.all(np.isnan(empty[0]))


@pytest.mark.parametrize("value", [0.751713, 0.83, -0.0004, 1.0, -1.0])
def test_single_value_keeps_its_mass_on_the_grid(value):
    """One similarity (bandwidth 0) between two grid points: linear binning onto the grid."""
    s = BinnedSample()
    s.add(np.array([value]))
    density, method = curve(s, np.array([value]), exact_max_n=100)
    assert method == "binned" and np.isfinite(density).all()
    assert density.sum() == pytest.approx(1.0)
    assert (density * GRID).sum() == pytest.approx(value)  # the mean is kept exactly
    assert np.count_nonzero(density) <= 2
