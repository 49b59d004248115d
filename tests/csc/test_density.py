"""Density, normalisation, overlap and bootstrap intervals (methods.md §1, equations 1-2)."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.stats import norm

from workflow_scripts.csc.curves import SIM_SCHEMA, analyse
from workflow_scripts.density import (GRID, Moments, Window, bandwidth, binned_density, exact_density, fft_convolve,
                                      make_grid, normalise, overlap, undefined_reason)


def gaussian_kde_by_hand(values, grid, factor=0.2):
    """Independent KDE: kernel sd = factor * sample sd (ddof=1), Gaussian, averaged over points."""
    values = np.asarray(values, dtype=float)
    bw = factor * values.std(ddof=1)
    z = (grid[:, None] - values[None, :]) / bw
    return np.exp(-0.5 * z ** 2).sum(axis=1) / (len(values) * bw * np.sqrt(2 * np.pi))


def write_sims(path, fuzz: dict, neg: dict, kind="negation"):
    """A similarities file: {original_id: [similarities]} per kind."""
    rows = [(oid, kind_name, s) for kind_name, per in (("fuzz", fuzz), (kind, neg))
            for oid, values in per.items() for s in values]
    table = pa.table({"original_id": pa.array([r[0] for r in rows], pa.uint64()),
                      "variant_id": pa.array(range(len(rows)), pa.uint64()),
                      "kind": pa.array([r[1] for r in rows], pa.string()),
                      "similarity": pa.array([r[2] for r in rows], pa.float64())}, schema=SIM_SCHEMA)
    pq.write_table(table, path)
    return path


def test_grid_has_the_papers_2001_points_and_other_steps_divide_two():
    assert len(GRID) == 2001 and GRID[0] == -1 and GRID[-1] == 1 and GRID[1000] == 0
    assert np.allclose(np.diff(GRID), 0.001)
    assert len(make_grid(0.0001)) == 20001 and len(make_grid(0.5)) == 5
    with pytest.raises(ValueError, match="must divide 2"):
        make_grid(0.003)


def test_exact_density_matches_formula():
    values = np.array([0.1, 0.3, 0.35, 0.8, -0.2])
    assert np.allclose(exact_density(values), gaussian_kde_by_hand(values, GRID), rtol=1e-10, atol=1e-12)


def test_two_value_sample_is_a_defined_curve():
    """Two values: sd = |a-b|/sqrt(2), bandwidth 0.2 x that; both estimators give the formula's curve."""
    values = np.array([0.5, 0.7])
    assert bandwidth(2, 0.02) == pytest.approx(0.2 * 0.1 * np.sqrt(2))
    assert undefined_reason(2, 0.02, 0.001) is None
    by_hand = gaussian_kde_by_hand(values, GRID)
    assert np.allclose(exact_density(values), by_hand, atol=1e-12)
    assert np.abs(normalise(binned_density(values)) - normalise(by_hand)).max() < 1e-5
    # the density at 0.6 (midway, 0.1/0.0283 = 3.54 bandwidths from each point), by hand
    bw = 0.2 * 0.1 * np.sqrt(2)
    assert by_hand[1600] == pytest.approx(norm.pdf(0.1 / bw) / bw, rel=1e-9)


def test_undefined_curves_say_why():
    assert undefined_reason(0, 0.0, 0.001) == "no similarities"
    assert undefined_reason(1, 0.0, 0.001) == "fewer than 2 similarities"
    assert undefined_reason(50, 0.0, 0.001) == "zero spread: all similarities are equal (up to float32 rounding)"
    assert undefined_reason(50, 49 * 1e-8 ** 2, 0.001).startswith("zero spread")  # float32 rounding noise
    # sd = sqrt(m2 / (n - 1)) = 4e-4 -> bandwidth 8e-5 < 1e-4
    assert undefined_reason(101, 100 * 4e-4 ** 2, 0.001).startswith("bandwidth 8e-05 is below grid_step x 0.1")
    # the same sample on a 10x finer grid is resolved
    assert undefined_reason(101, 100 * 4e-4 ** 2, 0.0001) is None


def test_overlap_hand_computed():
    f = np.array([0.5, 0.5, 0.0, 0.0])
    g = np.array([0.0, 0.25, 0.25, 0.5])
    assert overlap(f, g) == pytest.approx(0.25)  # min per point: 0, .25, 0, 0
    assert overlap(f, np.array([0.0, 0.0, 0.5, 0.5])) == 0.0


def test_overlap_of_two_gaussians_matches_closed_form():
    # KDE of normal samples ~ normal with sd*sqrt(1+0.2^2); overlap of equal-sd normals = 2*Phi(-d/(2s))
    rng = np.random.default_rng(3)
    sd, delta = 0.05, 0.1
    a = rng.normal(0.5, sd, 200_000)
    b = rng.normal(0.5 - delta, sd, 200_000)
    s = sd * np.sqrt(1 + 0.2 ** 2)
    expected = 2 * norm.cdf(-delta / (2 * s))  # 0.3234
    assert overlap(normalise(binned_density(a)), normalise(binned_density(b))) == pytest.approx(expected, abs=3e-3)


@pytest.mark.parametrize("bw", [1.05e-4, 2e-4, 5e-4, 1e-3, 2e-3, 1e-2, 0.1])
def test_binned_kde_agrees_with_scipy_at_every_resolvable_bandwidth(bw):
    """Below, at and above the 0.001 grid step: the KDE evaluated at the grid points, not binned."""
    rng = np.random.default_rng(4)
    sd = bw / 0.2
    centre = 0.9 if sd < 0.05 else 0.0
    x = np.clip(rng.normal(centre, sd, 4000), -1, 1)
    y = np.clip(rng.normal(centre - sd, 1.1 * sd, 4000), -1, 1)
    ex, ey = normalise(exact_density(x)), normalise(exact_density(y))
    bx, by = normalise(binned_density(x)), normalise(binned_density(y))
    assert abs(overlap(ex, ey) - overlap(bx, by)) < 2.5e-5  # required: 1e-4; 1.1e-5 measured at worst
    assert np.abs(ex - bx).max() < 2e-4 * ex.max()


def test_fft_convolve_is_scipy_fftconvolve_bit_for_bit():
    from scipy import signal
    rng = np.random.default_rng(3)
    for size, width in [(1, 1), (2, 7), (1021, 41), (4099, 611), (20000, 3001)]:
        values = rng.random(size) * 10.0 ** rng.integers(-4, 5)
        kernel = np.exp(-0.5 * np.linspace(-4, 4, width) ** 2)
        expected = signal.fftconvolve(values, kernel, mode="full")
        got = fft_convolve(values, kernel)
        assert got.shape == expected.shape == (size + width - 1,)
        assert np.array_equal(got, expected)
    assert np.allclose(fft_convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5])), [0, 1, 2.5, 4, 1.5])


def test_narrow_curve_is_not_linear_binning_onto_the_grid():
    """The estimator replaced here binned values straight onto the grid when the bandwidth was below
    the grid step; the KDE at the grid points differs from that by far more than 1e-4."""
    rng = np.random.default_rng(7)
    x = np.clip(rng.normal(0.97, 0.0025, 3000), -1, 1)  # bandwidth 5e-4, half the grid step
    y = np.clip(rng.normal(0.968, 0.0025, 3000), -1, 1)
    j = lambda v: np.bincount(np.round((v + 1) / 0.001).astype(int), minlength=2001)  # noqa: E731
    binned_onto_grid = overlap(normalise(j(x).astype(float)), normalise(j(y).astype(float)))
    kde = overlap(normalise(exact_density(x)), normalise(exact_density(y)))
    assert abs(overlap(normalise(binned_density(x)), normalise(binned_density(y))) - kde) < 1e-5
    assert abs(binned_onto_grid - kde) > 1e-3


def test_moments_merge_stably_where_sums_of_squares_fail():
    """Similarities a hair below 1 with a tiny spread (TF-IDF and `the` insertions): the sum of
    squares cancels every digit of the variance; the pairwise merge keeps them."""
    rng = np.random.default_rng(5)
    x = 0.999 + rng.normal(0, 1e-8, 10_000)
    m = Moments()
    for chunk in np.array_split(x, 7):
        m.add(chunk)
    n, mean, m2 = m.total()
    exact = np.var(x - 0.999, ddof=1)  # the subtraction is exact here (Sterbenz)
    assert n == 10_000 and mean == pytest.approx(x.mean(), rel=1e-15)
    assert m2 / (n - 1) == pytest.approx(exact, rel=1e-6)
    naive = (np.sum(x * x) - np.sum(x) ** 2 / n) / (n - 1)
    assert abs(naive - exact) > 0.1 * exact  # what a sum of squares would have reported


def test_group_moments_weighted_equal_the_resampled_sample():
    rng = np.random.default_rng(8)
    values = rng.uniform(0.2, 0.9, 300)
    groups = rng.integers(0, 10, 300)
    m = Moments(10)
    m.add(values[:120], groups[:120])
    m.add(values[120:], groups[120:])
    w = np.array([[2, 0, 1, 1, 0, 3, 1, 0, 1, 1]])
    n, mean, m2 = m.weighted(w)
    resampled = np.concatenate([np.repeat(values[groups == g], w[0, g]) for g in range(10)])
    assert n[0] == len(resampled)
    assert mean[0] == pytest.approx(resampled.mean(), rel=1e-12)
    assert m2[0] == pytest.approx(((resampled - resampled.mean()) ** 2).sum(), rel=1e-10)
    merged = m.regroup(3)
    assert merged.total()[0] == 300 and merged.total()[2] == pytest.approx(m.total()[2], rel=1e-12)


def test_window_histogram_keeps_every_value_and_aligns_with_the_grid():
    w = Window.covering(0.001, 0.5, 0.6, 0.002, 0.004)
    assert w.refine == 8 and w.start == pytest.approx(GRID[w.lo])
    assert w.start <= 0.5 - 8 * 0.004 and -1 + w.hi * 0.001 >= 0.6 + 8 * 0.004
    values = np.array([0.5, 0.55, 0.6, 0.5123456])
    h = w.histogram(values, np.array([0, 1, 1, 0]), 2)
    assert h.sum(axis=1).tolist() == pytest.approx([2.0, 2.0])
    nodes = w.start + np.arange(w.nodes) * w.delta
    assert (h.sum(axis=0) * nodes).sum() == pytest.approx(values.sum())  # linear binning keeps the mean
    assert Window.covering(0.001, 0.9, 0.95, 1.05e-4, 1e-3).refine == 153  # 16 nodes per bandwidth


def test_identical_sentences_give_a_degenerate_interval(tmp_path, log):
    """Every original has the same similarities: every resample has the same empirical
    distribution, so every replicate overlap equals the point estimate (checkable by hand)."""
    fuzz = {i: [0.90, 0.95, 0.97] for i in range(1, 41)}
    neg = {i: [0.80, 0.90, 0.93] for i in range(1, 41)}
    rows, curves, details = analyse(write_sims(tmp_path / "s.parquet", fuzz, neg), "c", "m", log, bootstrap_b=50)
    (row,) = rows
    assert row["overlap_ci_low"] == pytest.approx(row["overlap"], abs=1e-5)
    assert row["overlap_ci_high"] == pytest.approx(row["overlap"], abs=1e-5)
    assert details["bootstrap"]["unit"] == "sentence" and details["bootstrap"]["groups"] == 40
    assert row["kde"] == "exact" and row["n_fuzzed"] == 120 and row["note"] == ""
    expected = overlap(normalise(exact_density(np.tile([0.9, 0.95, 0.97], 40))),
                       normalise(exact_density(np.tile([0.8, 0.9, 0.93], 40))))
    assert row["overlap"] == pytest.approx(expected, abs=1e-12)


def test_each_replicate_is_the_overlap_of_its_resample(tmp_path, log, monkeypatch):
    """The group machinery against an explicit resample: repeat each drawn sentence's variants."""
    import workflow_scripts.csc.curves as csc
    rng = np.random.default_rng(9)
    fuzz = {i: list(rng.normal(0.9, 0.03, 3)) for i in range(1, 31)}
    neg = {i: list(rng.normal(0.8, 0.05, 3)) for i in range(1, 31)}
    path = write_sims(tmp_path / "s.parquet", fuzz, neg)
    seen = []
    real = csc.bootstrap_interval
    monkeypatch.setattr(csc, "bootstrap_interval", lambda method, reps, *more: seen.append(reps.copy()) or
                        real(method, reps, *more))
    analyse(path, "c", "m", log, exact_max_n=5, bootstrap_b=3, seed=11)  # 5: point estimate binned too
    # the paired stream (issue 26): config seed, probe, corpus, statistic -- no model
    weights = csc.resample_counts(csc.paired_rng(11, "csc", "c", "negation/overlap"), 3, 30)
    ids = sorted(fuzz)
    for b in range(3):
        f = np.concatenate([np.repeat(fuzz[i], weights[b, g]) for g, i in enumerate(ids)])
        n = np.concatenate([np.repeat(neg[i], weights[b, g]) for g, i in enumerate(ids)])
        explicit = overlap(normalise(exact_density(f)), normalise(exact_density(n)))
        assert seen[0][b] == pytest.approx(explicit, abs=2e-5)


def test_identical_copies_of_a_model_get_identical_intervals_and_replicates(tmp_path, log):
    """Paired resampling (issue 26): the same similarities under another model name, written in
    another row order, give the same rows and the same replicate overlaps, per-sentence groups and
    hashed groups alike."""
    rng = np.random.default_rng(4)
    fuzz = {int(i): list(rng.normal(0.9, 0.03, 3)) for i in rng.integers(1, 2**63, 60)}
    neg = {i: list(rng.normal(0.8, 0.05, 3)) for i in fuzz}
    path = write_sims(tmp_path / "a.parquet", fuzz, neg)
    flipped = write_sims(tmp_path / "b.parquet", dict(reversed(fuzz.items())), dict(reversed(neg.items())))
    for groups in (1000, 16):  # one group per sentence; sentences hashed into 16 groups
        out = {}
        for model, p in (("minilm", path), ("minilm_copy", flipped)):
            reps: dict = {}
            (row,), _, _ = analyse(p, "c", model, log, exact_max_n=50, bootstrap_b=40, bootstrap_groups=groups,
                                   seed=3, replicates_out=reps)
            out[model] = row, reps["negation/overlap"]
        (a, ra), (b, rb) = out["minilm"], out["minilm_copy"]
        assert a.pop("model") == "minilm" and b.pop("model") == "minilm_copy"
        assert a == pytest.approx(b, abs=1e-12) and a["overlap_ci_low"] < a["overlap_ci_high"]
        assert ra[0] == pytest.approx(rb[0], abs=1e-12) and ra[1] == pytest.approx(rb[1], abs=1e-12)


def test_groups_built_block_by_block_give_the_same_replicates(tmp_path, log, monkeypatch):
    """A fine grid too large for one histogram per group is built a block of groups at a time: the
    same replicates as in one block (merging groups instead would depend on the model)."""
    import workflow_scripts.csc.curves as csc
    rng = np.random.default_rng(8)
    fuzz = {i: list(rng.normal(0.9, 0.03, 3)) for i in range(1, 41)}
    neg = {i: list(rng.normal(0.8, 0.05, 3)) for i in range(1, 41)}
    path = write_sims(tmp_path / "s.parquet", fuzz, neg)
    whole: dict = {}
    rows, _, details = analyse(path, "c", "m", log, exact_max_n=5, bootstrap_b=20, seed=2, replicates_out=whole)
    widest = max((details["fine_grids"][k]["hi"] - details["fine_grids"][k]["lo"]) * details["fine_grids"][k]["refine"]
                 + 1 for k in details["fine_grids"])
    monkeypatch.setattr(csc, "GROUP_CELLS", widest * 7)  # blocks of 7 of the 40 groups
    blocks: dict = {}
    rows_b, _, details_b = analyse(path, "c", "m", log, exact_max_n=5, bootstrap_b=20, seed=2, replicates_out=blocks)
    assert details_b["bootstrap"]["groups"] == 40
    assert blocks["negation/overlap"][1] == pytest.approx(whole["negation/overlap"][1], abs=1e-9)
    assert rows_b[0]["overlap"] == pytest.approx(rows[0]["overlap"], abs=1e-12)


def test_interval_narrows_as_the_corpus_grows_and_reruns_are_identical(tmp_path, log):
    rng = np.random.default_rng(10)

    def sample(n):
        return ({i: list(rng.normal(0.9, 0.04, 3)) for i in range(1, n + 1)},
                {i: list(rng.normal(0.85, 0.05, 3)) for i in range(1, n + 1)})

    small = write_sims(tmp_path / "small.parquet", *sample(60))
    large = write_sims(tmp_path / "large.parquet", *sample(6000))
    (r_small,), _, _ = analyse(small, "c", "m", log, bootstrap_b=100)
    (r_large,), _, d_large = analyse(large, "c", "m", log, bootstrap_b=100)
    assert r_small["overlap_ci_low"] <= r_small["overlap"] <= r_small["overlap_ci_high"]
    assert r_large["overlap_ci_low"] <= r_large["overlap"] <= r_large["overlap_ci_high"]
    width = lambda r: r["overlap_ci_high"] - r["overlap_ci_low"]  # noqa: E731
    assert width(r_large) < width(r_small) / 4  # ~1/sqrt(100) in theory
    assert d_large["bootstrap"]["unit"] == "hashed group of sentences" and d_large["bootstrap"]["groups"] == 1000
    (again,), _, _ = analyse(large, "c", "m", log, bootstrap_b=100)
    assert again == r_large
    (other_seed,), _, _ = analyse(large, "c", "m", log, bootstrap_b=100, seed=1)
    assert other_seed["overlap"] == r_large["overlap"] and other_seed["overlap_ci_low"] != r_large["overlap_ci_low"]


def test_undefined_curve_gives_nan_with_a_note_and_nan_counts(tmp_path, log):
    fuzz = {i: [1.0, 1.0] for i in range(1, 11)}  # an encoder blind to the inserted word
    neg = {i: [0.9, float("nan"), 0.8] for i in range(1, 11)}
    (row,), curves, _ = analyse(write_sims(tmp_path / "s.parquet", fuzz, neg), "c", "m", log, bootstrap_b=20)
    assert np.isnan(row["overlap"]) and np.isnan(row["overlap_ci_low"])
    assert row["note"] == "fuzzed: zero spread: all similarities are equal (up to float32 rounding)"
    assert row["kde"] == "exact+undefined" and np.all(np.isnan(curves["fuzz@negation"]))
    assert row["n_dropped"] == 10 and row["n_dropped_fuzzed"] == 0 and row["n_negated"] == 20


def test_finer_grid_step_is_used_and_reported(tmp_path, log):
    rng = np.random.default_rng(12)
    fuzz = {i: list(0.99 + rng.normal(0, 4e-4, 3)) for i in range(1, 101)}  # bandwidth ~8e-5
    neg = {i: list(0.98 + rng.normal(0, 0.01, 3)) for i in range(1, 101)}
    path = write_sims(tmp_path / "s.parquet", fuzz, neg)
    (coarse,), _, _ = analyse(path, "c", "m", log, bootstrap_b=0)
    assert np.isnan(coarse["overlap"]) and "below grid_step" in coarse["note"]
    (fine,), curves, details = analyse(path, "c", "m", log, bootstrap_b=0, grid_step=0.0001)
    assert np.isfinite(fine["overlap"]) and fine["grid_step"] == 0.0001 and len(curves["grid"]) == 20001
    assert details["grid"] == {"step": 0.0001, "points": 20001}


def test_aggregate_of_no_summaries_writes_header_only_tables(tmp_path):
    """Every model limited to other probes (`probes: [triplets]`): CSC's tables are empty, not an error."""
    from workflow_scripts.csc.tables import run_csc_aggregate
    from workflow_scripts.jobs import make_job
    run_csc_aggregate(make_job(input=[], output={"overlap": str(tmp_path / "o.csv"), "table3": str(tmp_path / "t.csv")},
                               params={"corpora": ["c"], "models": ["m"], "margins": {"negation": 0.05}}))
    assert (tmp_path / "o.csv").read_text().startswith("corpus,model,condition,overlap")
    assert (tmp_path / "t.csv").read_text().strip() == "condition,model,c,model_settings"


# ---- the direction of the separation: signed gap and AUC beside the overlap (issue 32, point 4) ----

def two_curves(tmp_path, fuzz_mean: float, neg_mean: float, sentences: int = 40, seed: int = 5):
    rng = np.random.default_rng(seed)
    fuzz = {i: list(rng.normal(fuzz_mean, 0.02, 3)) for i in range(1, sentences + 1)}
    neg = {i: list(rng.normal(neg_mean, 0.02, 2)) for i in range(1, sentences + 1)}
    return write_sims(tmp_path / "s.parquet", fuzz, neg), fuzz, neg


def test_negated_variants_closer_than_fuzzed_ones_separate_the_wrong_way(tmp_path, log):
    """Negations that leave the sentence *closer* to the original than fuzzing: the curves separate
    (low overlap) but the wrong way round, which only the sign says."""
    path, fuzz, neg = two_curves(tmp_path, fuzz_mean=0.90, neg_mean=0.96)
    (row,), _, _ = analyse(path, "c", "m", log, bootstrap_b=50)
    assert row["overlap"] < 0.5  # the unsigned overlap alone would call this a good separation
    assert row["within_auc"] < 0.45 and row["within_auc_ci_high"] < 0.5
    assert row["gap"] < 0 and row["gap_ci_high"] < 0
    assert row["auc"] < 0.5 and row["auc_ci_high"] < 0.5
    mean = lambda d: np.mean(np.concatenate(list(d.values())))  # noqa: E731
    assert row["gap"] == pytest.approx(mean(fuzz) - mean(neg), abs=1e-12)
    assert row["mean_fuzzed"] == pytest.approx(mean(fuzz), abs=1e-12)


def test_negated_variants_pushed_away_separate_the_right_way(tmp_path, log):
    path, _, _ = two_curves(tmp_path, fuzz_mean=0.96, neg_mean=0.90)
    (row,), _, _ = analyse(path, "c", "m", log, bootstrap_b=50)
    assert row["within_auc"] > 0.55 and row["within_auc_ci_low"] > 0.5
    assert row["gap"] > 0 and row["gap_ci_low"] > 0
    assert row["auc"] > 0.5 and row["auc_ci_low"] > 0.5


def test_auc_is_the_share_of_fuzzed_negated_pairs_in_order_counted_by_hand(tmp_path, log):
    # fuzzed 0.9, 0.8, 0.7 vs negated 0.8, 0.6: 0.9 beats both (2), 0.8 ties 0.8 (1/2) and beats 0.6
    # (1), 0.7 beats 0.6 (1): 4.5 of 6 pairs
    path = write_sims(tmp_path / "s.parquet", {1: [0.9, 0.8], 2: [0.7]}, {1: [0.8], 2: [0.6]})
    (row,), _, details = analyse(path, "c", "m", log, bootstrap_b=0)
    assert row["auc"] == pytest.approx(4.5 / 6, abs=1e-12)
    assert details["auc_methods"] == {"negation": "exact"}
    assert row["gap"] == pytest.approx(0.8 - 0.7, abs=1e-12)


def test_auc_of_masses_is_mannwhitneyu_and_each_replicate_that_of_its_resample(tmp_path, log, monkeypatch):
    """Unit masses give scipy's U / (n1 n2), ties included; each replicate's AUC and gap are those of
    the explicit resample (the drawn sentences' variants repeated), over the overlap's paired stream."""
    from scipy.stats import mannwhitneyu
    import workflow_scripts.csc.curves as csc
    rng = np.random.default_rng(3)
    f, n = np.round(rng.normal(0.9, 0.03, 40), 2), np.round(rng.normal(0.88, 0.03, 30), 2)  # rounded: ties
    f.sort(), n.sort()
    assert csc.auc_of_masses(f, np.ones(40), n, np.ones(30))[0] == pytest.approx(
        mannwhitneyu(f, n).statistic / (40 * 30), abs=1e-12)
    fuzz = {i: list(np.round(rng.normal(0.9, 0.03, 3), 2)) for i in range(1, 26)}
    neg = {i: list(np.round(rng.normal(0.88, 0.03, 2), 2)) for i in range(1, 26)}
    reps: dict = {}
    analyse(write_sims(tmp_path / "s.parquet", fuzz, neg), "c", "m", log, bootstrap_b=4, seed=7, replicates_out=reps)
    weights = csc.resample_counts(csc.paired_rng(7, "csc", "c", "negation/overlap"), 4, 25)
    ids = sorted(fuzz)
    for b in range(4):
        rf = np.concatenate([np.repeat(fuzz[i], weights[b, g]) for g, i in enumerate(ids)])
        rn = np.concatenate([np.repeat(neg[i], weights[b, g]) for g, i in enumerate(ids)])
        assert reps["negation/auc"][1][b] == pytest.approx(mannwhitneyu(rf, rn).statistic / (len(rf) * len(rn)),
                                                           abs=1e-12)
        assert reps["negation/gap"][1][b] == pytest.approx(rf.mean() - rn.mean(), abs=1e-12)


def test_auc_from_the_fine_grid_histograms_agrees_with_the_exact_one(tmp_path, log):
    """Above exact_kde_max_n the similarities are not held: the AUC is read from the curves' fine-grid
    histograms, within 1e-3 of the exact one here (the samples overlap over many node spacings)."""
    path, _, _ = two_curves(tmp_path, fuzz_mean=0.93, neg_mean=0.92, sentences=400)
    (exact,), _, d_exact = analyse(path, "c", "m", log, bootstrap_b=20)
    (binned,), _, d_binned = analyse(path, "c", "m", log, exact_max_n=50, bootstrap_b=20)
    assert d_exact["auc_methods"] == {"negation": "exact"} and d_binned["auc_methods"] == {"negation": "binned"}
    assert binned["auc"] == pytest.approx(exact["auc"], abs=1e-3)
    assert binned["auc_ci_low"] == pytest.approx(exact["auc_ci_low"], abs=2e-3)
    assert binned["gap"] == pytest.approx(exact["gap"], abs=1e-12)  # the gap is exact at any scale


def test_overlap_table_has_the_sign_beside_the_overlap_and_table3_keeps_its_layout(tmp_path, log):
    import json
    from workflow_scripts.csc.tables import aggregate
    path, _, _ = two_curves(tmp_path, fuzz_mean=0.90, neg_mean=0.96)
    rows, _, _ = analyse(path, "c", "m", log, bootstrap_b=20)
    (tmp_path / "summary.json").write_text(json.dumps({"rows": rows}))
    table = aggregate([str(tmp_path / "summary.json")], str(tmp_path / "o.csv"), str(tmp_path / "t.csv"),
                      margins={"negation": 0.05})
    assert {"gap", "gap_ci_low", "gap_ci_high", "auc", "auc_ci_low", "auc_ci_high", "within_auc", "within_auc_ci_low",
            "within_auc_ci_high", "within_gap", "separation", "within_margin"} <= set(table.columns)
    assert table["separation"].to_list() == ["wrong"] and table["within_margin"].to_list() == [0.05]
    assert (tmp_path / "t.csv").read_text().splitlines()[0] == "condition,model,c,model_settings"


def test_n_counts_the_sentences_the_bootstrap_resamples_not_their_variants(tmp_path, log):
    """Issue 32, point 6: 3 sentences x 3 fuzzed and 3 negated variants. The bootstrap resamples the
    sentences (their variants with them), so the table's and the first screen's n is 3 sentences,
    not the 9 variants per curve; hashed into 2 groups, n counts the groups and says so."""
    import polars as pl
    from workflow_scripts.csc.probe import within_auc_headlines

    fuzz = {1: [0.99, 0.97, 0.95], 2: [0.98, 0.96, 0.94], 3: [0.97, 0.95, 0.93]}
    neg = {1: [0.80, 0.75, 0.70], 2: [0.85, 0.78, 0.72], 3: [0.82, 0.77, 0.74]}
    path = write_sims(tmp_path / "s.parquet", fuzz, neg)
    (row,), _, details = analyse(path, "c", "m", log, bootstrap_b=20)
    assert (row["n_fuzzed"], row["n_negated"]) == (9, 9)
    assert (row["n_units"], row["unit"]) == (3, "sentences") and details["units"]["fuzz@negation"] == 3
    assert row["n_within"] == 3
    (screen_row,) = within_auc_headlines(pl.DataFrame([row]), {})
    assert (screen_row["n"], screen_row["unit"]) == (3, "sentences")
    # a sentence without a negated variant is not behind the negated curve: the smaller count
    (fewer,), _, _ = analyse(write_sims(tmp_path / "f.parquet", fuzz, {1: neg[1], 2: neg[2]}), "c", "m", log,
                             bootstrap_b=20)
    assert fewer["n_units"] == 2
    (grouped,), _, _ = analyse(path, "c", "m", log, bootstrap_b=20, bootstrap_groups=2)
    assert (grouped["unit"], grouped["n_units"]) == ("sentence groups", 2)  # ids 1, 2, 3 mod 2


def test_overlap_interval_is_bca_with_a_grouped_jackknife_over_the_sentences(tmp_path, log, monkeypatch):
    """The KDE overlap is biased, so its interval is BCa (csc/probe.py declares it): the jackknife
    leaves out each of 20 blocks of sentences (sentence g in block g % 20) and recomputes the
    overlap, checked here against the overlap of the remaining sentences' similarities; the bias
    correction's reference is the replicates' (binned) estimator on the full sample."""
    import workflow_scripts.csc.curves as csc
    from workflow_scripts.bootstrap import bca_interval
    rng = np.random.default_rng(12)
    fuzz = {i: list(rng.normal(0.9, 0.03, 3)) for i in range(1, 31)}
    neg = {i: list(rng.normal(0.8, 0.05, 3)) for i in range(1, 31)}
    calls = []
    real = csc.bootstrap_interval
    monkeypatch.setattr(csc, "bootstrap_interval", lambda *a: calls.append(a) or real(*a))
    (row,), _, _ = analyse(write_sims(tmp_path / "s.parquet", fuzz, neg), "c", "m", log, bootstrap_b=60, seed=4)
    method, reps, estimate, jack = calls[0]
    assert method == "bca" and row["interval_method"] == "bca" and len(reps) == 60 and len(jack) == 20
    ids = sorted(fuzz)
    for j in (0, 7, 19):
        kept = [i for g, i in enumerate(ids) if g % 20 != j]
        explicit = overlap(normalise(exact_density(np.concatenate([fuzz[i] for i in kept]))),
                           normalise(exact_density(np.concatenate([neg[i] for i in kept]))))
        assert jack[j] == pytest.approx(explicit, abs=2e-5)
    assert estimate == pytest.approx(row["overlap"], abs=2e-5)  # binned vs scipy's exact KDE
    assert (row["overlap_ci_low"], row["overlap_ci_high"]) == pytest.approx(bca_interval(reps, estimate, jack)[:2])
