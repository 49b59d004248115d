"""Retrieval metrics by hand: binary NDCG, top-k accuracy, draws, COE/ROE, thresholds (and the
reference's defects), isotropy (IsoScore against the package and the eigenvalue form; I1)."""
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from workflow_scripts.retrieval import metrics as M
from workflow_scripts.retrieval import tables as T
from workflow_scripts.retrieval.isotropy import Moments, fit_transform, i1_from_moments, isoscore_from_covariance, scores

SETTINGS = {"ks": [1, 2, 3, 5], "top_k": 5, "bootstrap_b": 200,
            "draws": {"count": 50, "size": 4, "replace": False},
            "thresholds": {"draws": 100, "margin": 0.01, "percentiles": [20, 25, 30, 35, 40, 45], "rule": "paired_draws",
                           "alpha": 0.05, "metric": "accuracy"},
            "coe": {"percentile": 10}}


def frames(ranks: dict, scores=None, relevant=None, random=None, top_k=5):
    """topk/similarities frames: ranks[q] = the ranks (1-based) of q's relevant documents in its list."""
    topk, sims = [], []
    for q, rel_ranks in ranks.items():
        n_rel = (relevant or {}).get(q, max(1, len(rel_ranks)))
        rel_docs = [f"{q}_rel{i}" for i in range(n_rel)]
        placed = dict(zip(rel_ranks, rel_docs))
        for r in range(1, top_k + 1):
            score = scores[q][r - 1] if scores else 1.0 - r / 10
            if scores and not math.isfinite(score):
                continue
            topk.append((q, r, placed.get(r, f"{q}_other{r}"), score))
        for d in rel_docs:
            sims.append((q, d, "correct", 0.5))
        sims.append((q, f"{q}_random", "random", (random or {}).get(q, 0.0)))
    return (pl.DataFrame(topk, schema={"query_id": pl.String, "rank": pl.Int32, "corpus_id": pl.String,
                                       "score": pl.Float64}, orient="row"),
            pl.DataFrame(sims, schema={"query_id": pl.String, "corpus_id": pl.String, "kind": pl.String,
                                       "similarity": pl.Float64}, orient="row"))


def test_binary_ndcg_and_accuracy_by_hand():
    topk, sims = frames({"a": [1], "b": [2], "c": [3], "d": [], "e": [1, 3]}, relevant={"e": 2})
    j = M.judge(topk, sims, 5)
    hit, ndcg = M.hits_and_ndcg(j, [1, 2, 3, 5])
    assert j.query_ids == ["a", "b", "c", "d", "e"]
    assert hit.tolist() == [[1, 1, 1, 1], [0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1]]
    l3 = 1 / math.log2(3)
    np.testing.assert_allclose(ndcg[0], [1, 1, 1, 1])
    np.testing.assert_allclose(ndcg[1], [0, l3, l3, l3])
    np.testing.assert_allclose(ndcg[2], [0, 0, 0.5, 0.5])
    np.testing.assert_allclose(ndcg[3], [0, 0, 0, 0])
    # two relevant documents at ranks 1 and 3: IDCG@k counts min(2, k) ideal positions
    np.testing.assert_allclose(ndcg[4], [1, 1 / (1 + l3), 1.5 / (1 + l3), 1.5 / (1 + l3)])


def test_threshold_drops_documents_below_it():
    topk, sims = frames({"a": [1], "b": [3]}, scores={"a": [0.9, 0.8, 0.7, 0.6, 0.5], "b": [0.9, 0.8, 0.35, 0.3, 0.2]})
    j = M.judge(topk, sims, 5)
    hit, _ = M.hits_and_ndcg(j, [5], threshold=0.4)
    assert hit[:, 0].tolist() == [1, 0]  # b's answer scores 0.35 < 0.4


def test_zero_vector_query_is_a_miss():
    topk, sims = frames({"a": [1], "z": [1]}, scores={"a": [0.9] * 5, "z": [float("nan")] * 5})
    j = M.judge(topk, sims, 5)
    hit, ndcg = M.hits_and_ndcg(j, [5])
    assert hit[:, 0].tolist() == [1, 0] and ndcg[1, 0] == 0


def test_draws_are_without_replacement_seeded_and_shared_by_models():
    a = M.draw_indices(50, 20, 10, False, 7, "retrieval", "set", "draws")
    b = M.draw_indices(50, 20, 10, False, 7, "retrieval", "set", "draws")
    assert np.array_equal(a, b) and a.shape == (20, 10)
    assert all(len(set(row)) == 10 for row in a)
    assert len({tuple(r) for r in a}) > 1  # independent draws
    assert not np.array_equal(a, M.draw_indices(50, 20, 10, False, 8, "retrieval", "set", "draws"))
    assert M.draw_indices(5, 3, 10, False, 1, "x").shape == (3, 5)  # a draw cannot exceed the questions
    assert M.draw_indices(5, 3, None, True, 1, "x").shape == (3, 5)  # the classic bootstrap


def test_coe_roe_by_the_papers_definition():
    # t = 10th percentile of the top-k similarities; COE = share of C above t, ROE = share of R above t
    c = np.sort(np.array([0.2, 0.4, 0.6, 0.8]))
    r = np.sort(np.array([0.1, 0.3, 0.5, 0.7, 0.9]))
    t = np.percentile([0.45, 0.5, 0.55, 0.6, 0.9], 10)  # 0.47
    assert M.exceed_share(c, t) == 0.5 and M.exceed_share(r, t) == 0.6
    assert M.exceed_share(c, 0.4) == 0.5  # ECDF(t) counts values <= t
    scores = np.array([[0.45, 0.5, 0.55], [0.6, 0.9, np.nan]])
    assert M.draw_percentiles(scores, np.array([[0, 1]]), 3, 10)[0] == pytest.approx(t)


def population(n=1000, lost_low=0, misses=0, seed=0):
    """n queries, hits at rank 1 with scores around 0.8 but for the last `misses` (answer not in the
    list); `lost_low` of them have their answer scored low (0.3), the rest of the list lower still,
    so a threshold between loses exactly them."""
    rng = np.random.default_rng(seed)
    ranks, scores = {}, {}
    for i in range(n):
        q = f"q{i:04d}"
        ranks[q] = [1] if i < n - misses else []
        top = 0.3 if i < lost_low else 0.8 + 0.1 * rng.random()
        scores[q] = [top] + sorted((0.25 * rng.random() for _ in range(4)), reverse=True)
    return frames(ranks, scores)


def test_threshold_rules_differ_and_are_tested():
    topk, sims = population(1000, lost_low=10, misses=300)
    j = M.judge(topk, sims, 5)
    idx = M.draw_indices(1000, 100, 100, False, 3, "d")
    base = M.hits_and_ndcg(j, [5])[0][:, 0]
    cand = M.hits_and_ndcg(j, [5], threshold=0.5)[0][:, 0]
    assert base.sum() - cand.sum() == 10
    paired = M.threshold_test(base[idx].mean(1), cand[idx].mean(1), base, cand, "paired_draws", 0.05)
    mcnemar = M.threshold_test(base[idx].mean(1), cand[idx].mean(1), base, cand, "mcnemar", 0.05)
    overlap = M.threshold_test(base[idx].mean(1), cand[idx].mean(1), base, cand, "ci_overlap", 0.05)
    # ten lost hits of 1000: draws of 100 miss all ten often enough for the paired interval to hold 0,
    # the exact McNemar test (p = 2 / 2^10) does not pass it, and the mean stays inside the interval
    assert paired[0] and paired[2] == 0.0
    assert not mcnemar[0] and mcnemar[3] == pytest.approx(2 * 0.5 ** 10)
    assert overlap[0]
    # 300 lost hits: no rule passes it (the reference's tolerance of 100 points would)
    topk, sims = population(1000, lost_low=300, misses=300)
    j = M.judge(topk, sims, 5)
    base = M.hits_and_ndcg(j, [5])[0][:, 0]
    cand = M.hits_and_ndcg(j, [5], threshold=0.5)[0][:, 0]
    for rule in M.RULES:
        assert not M.threshold_test(base[idx].mean(1), cand[idx].mean(1), base, cand, rule, 0.05)[0], rule
    assert abs(100 * (cand.mean() - base.mean())) <= 100  # the reference's test: everything passes


def test_the_highest_passing_threshold_is_chosen():
    """Every candidate below the lowest answer score keeps every hit: all pass, and the highest is
    chosen (the reference keeps the best accuracy, i.e. the first, lowest candidate)."""
    topk, sims = population(300)
    j = M.judge(topk, sims, 5)
    idx = M.draw_indices(300, 100, 100, False, 3, "d")
    tidx = M.draw_indices(300, 200, 100, False, 3, "t")
    rows, chosen = M.choose_threshold(j, [5], idx, tidx, SETTINGS["thresholds"])
    passing = [r for r in rows if r["passes"]]
    assert len(passing) == 6
    assert chosen[5][1] == 45 and chosen[5][0] == max(r["threshold"] for r in rows)
    assert [r["percentile"] for r in rows if r["chosen"]] == [45]
    # the reference's choice: highest accuracy first found, the 20th percentile
    reference = max(rows, key=lambda r: (r["value"], -r["percentile"]))
    assert reference["percentile"] == 20 != chosen[5][1]


def test_thresholds_use_the_drawn_questions_not_row_i():
    """The reference checks `sim_matrix[i, answer[i]] != 0` for the i-th row of the matrix, not the
    i-th drawn question. Here a draw of question 1 only: its own answer decides."""
    topk, sims = frames({"a": [1], "b": [1]}, scores={"a": [0.2, 0.1, 0.05, 0.0, -0.1], "b": [0.9, 0.1, 0.0, -0.1, -0.2]})
    j = M.judge(topk, sims, 5)
    hit = M.hits_and_ndcg(j, [5], threshold=0.5)[0][:, 0]
    draw = np.array([[1, 1]])
    assert hit[draw].mean() == 1.0  # b is a hit with the threshold
    reference_row_i = [hit[i] for i in range(draw.shape[1])]  # rows 0, 1: a (miss), b (hit)
    assert np.mean(reference_row_i) == 0.5


def test_evaluate_is_deterministic_and_consistent():
    topk, sims = population(60, lost_low=5, misses=5)
    settings = {**SETTINGS, "draws": {"count": 40, "size": 20, "replace": False}}
    m1, t1, s1 = M.evaluate(topk, sims, "set", "model", settings, 11)
    m2, t2, s2 = M.evaluate(topk, sims, "set", "model", settings, 11)
    assert m1.equals(m2) and t1.equals(t2) and s1.equals(s2)
    assert s1.columns == list(M.SUMMARY_SCHEMA)
    assert sorted(s1["k"].to_list()) == [1, 2, 3, 5]
    for r in s1.iter_rows(named=True):
        for stat in ("accuracy", "ndcg", "coe", "roe"):
            assert r[f"{stat}_ci_low"] <= r[stat] <= r[f"{stat}_ci_high"]
        assert r["accuracy_full"] == pytest.approx(55 / 60)
        assert r["draws"] == 40 and r["draw_size"] == 20 and r["n_queries"] == 60
    # the per-draw metrics average to the summary
    draws = m1.filter((pl.col("k") == 5) & (pl.col("draw") >= 0))
    assert draws.height == 40
    assert draws["accuracy"].mean() == pytest.approx(s1.filter(pl.col("k") == 5)["accuracy"][0])
    full = m1.filter((pl.col("k") == 5) & (pl.col("draw") == -1))
    assert full["accuracy"][0] == pytest.approx(55 / 60)


def test_transforms_are_measured_on_the_same_draws():
    topk, sims = population(40)
    t = topk.with_columns(pl.lit("whiten").alias("transform"))
    _, _, summary = M.evaluate(topk, sims, "s", "m", {**SETTINGS, "draws": {"count": 30, "size": 10, "replace": False}},
                               1, transform_topk=t)
    a = summary.filter(pl.col("transform") == "none").sort("k")
    b = summary.filter(pl.col("transform") == "whiten").sort("k")
    assert a["accuracy"].to_list() == b["accuracy"].to_list()  # same lists, same draws: same values
    assert b["coe"].is_nan().all()


def test_correlations_state_their_points():
    summary = pl.DataFrame({"set": ["s"] * 4, "model": ["a", "b", "c", "d"], "transform": ["none"] * 4, "k": [5] * 4,
                            "accuracy": [0.1, 0.2, 0.3, 0.4], "coe": [0.2, 0.4, 0.6, 0.8], "roe": [0.4, 0.3, 0.2, 0.1],
                            "threshold": [0.5, 0.4, float("nan"), 0.2]})
    iso = pl.DataFrame({"set": ["s"] * 4, "model": ["a", "b", "c", "d"], "transform": ["none"] * 4,
                        "vectors": ["corpus"] * 4, "i1": [0.5, 0.5, 0.6, 0.5], "isoscore": [0.1, 0.3, 0.2, 0.4]})
    corr = T.correlations(summary, iso, 5, 100, 1)
    row = corr.filter((pl.col("scope") == "s") & (pl.col("correlation") == "acc_vs_coe")).row(0, named=True)
    assert row["pearson"] == pytest.approx(1.0) and row["n_points"] == 4
    assert row["points"] == "s/a; s/b; s/c; s/d"
    row = corr.filter((pl.col("scope") == "s") & (pl.col("correlation") == "threshold_vs_roe")).row(0, named=True)
    assert row["n_points"] == 3 and "s/c" not in row["points"]
    assert set(corr["scope"]) == {"s", "all"}


# ---- isotropy ----------------------------------------------------------------------------------

def isoscore_eigen(points: np.ndarray) -> float:
    """IsoScore from the covariance eigenvalues (methods.md; Rudman et al. 2022, Algorithm 1)."""
    lam = np.linalg.eigvalsh(np.cov(points, rowvar=False))
    d = len(lam)
    lam_hat = math.sqrt(d) * lam / np.linalg.norm(lam)
    defect = np.linalg.norm(lam_hat - 1) / math.sqrt(2 * (d - math.sqrt(d)))
    phi = (d - defect ** 2 * (d - math.sqrt(d))) ** 2 / d ** 2
    return (d * phi - 1) / (d - 1)


def test_isoscore_package_agrees_with_the_eigenvalue_form():
    from IsoScore.IsoScore import IsoScore
    rng = np.random.default_rng(0)
    for scale in ([1, 1, 1, 1, 1], [5, 1, 1, 0.5, 0.1], [1, 0, 0, 0, 0]):
        pts = rng.standard_normal((400, 5)) * np.asarray(scale)
        m = Moments()
        for part in np.array_split(pts, 7):  # streamed shard by shard
            m.add(part)
        want = isoscore_eigen(pts)
        # the package takes sqrt(d) of an integer tensor, in float32: agreement to ~1e-7
        assert float(IsoScore(pts)) == pytest.approx(want, abs=1e-6)  # points as rows (IsoScore 2.x)
        assert isoscore_from_covariance(m.covariance()) == pytest.approx(want, abs=1e-6)
    assert isoscore_eigen(rng.standard_normal((20000, 5))) > 0.99
    assert isoscore_from_covariance(np.diag([1.0, 0, 0, 0])) == pytest.approx(0.0, abs=1e-12)


def covariances(rng):
    """(name, covariance) pairs of several kinds and sizes, for the IsoScore oracle."""
    for d in (2, 5, 50, 384):
        yield f"isotropic_{d}", np.eye(d) * rng.uniform(0.1, 3.0)
        v = rng.standard_normal(d)
        yield f"rank1_{d}", np.outer(v, v)
        yield f"random_{d}", np.cov(rng.standard_normal((d + 10, d)) * np.geomspace(0.2, 5.0, d), rowvar=False)
        yield f"spiked_{d}", np.diag(np.r_[100.0, np.ones(d - 1)])


def test_numpy_isoscore_equals_the_package_formula():
    """Our numpy IsoScore (no torch import in the isotropy job) against the package's IsoScore_cov,
    the oracle: equal to 1e-12 on isotropic, rank-1 and random covariances; isotropic scores 1 and
    rank-1 scores the package's floor (0 up to its float32 sqrt(d))."""
    from IsoScore.IsoScore import IsoScore_cov
    rng = np.random.default_rng(7)
    for name, cov in covariances(rng):
        ours, package = isoscore_from_covariance(cov), float(IsoScore_cov(cov))
        assert ours == pytest.approx(package, abs=1e-12), name
        if name.startswith("isotropic"):
            assert ours == pytest.approx(1.0, abs=1e-12), name
        if name.startswith("rank1"):
            assert abs(ours) < 1e-6, name
        if name.startswith("random"):
            assert 1e-4 < ours < 0.99, name  # neither end: the comparison is not of two constants


def test_isotropy_job_does_not_import_torch():
    """The isotropy module's whole import (what a retrieval_isotropy job loads)
    and an IsoScore leave torch unimported: its import cost seconds per job."""
    import subprocess
    import sys
    code = ("import sys, numpy as np; from workflow_scripts.retrieval import isotropy as i; "
            "i.isoscore_from_covariance(np.eye(3)); print(sorted(m for m in ('torch', 'transformers', "
            "'sentence_transformers', 'IsoScore') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]", out.stdout


def test_isoscore_needs_more_vectors_than_dimensions():
    m = Moments()
    m.add(np.random.default_rng(1).standard_normal((8, 8)))
    i1, iso, note = scores(m)
    assert math.isnan(iso) and "8 vectors, 8 dimensions" in note and math.isfinite(i1)


def test_i1_by_hand_and_the_references_defects():
    def reference_i1(v):  # the reference: d for N, the norm of the per-row coordinate sums
        _, n = v.shape
        s = np.linalg.svd(v, compute_uv=False)
        norm = np.linalg.norm(v.dot(np.ones((n, 1))))
        return (n - norm + 0.5 * s[-1] ** 2) / (n + norm + 0.5 * s[0] ** 2)

    def ours(v):
        m = Moments()
        m.add(v)
        return i1_from_moments(m)
    same = np.array([[1.0, 0.0], [1.0, 0.0]])  # one direction twice: sum (2, 0), V^T V = diag(2, 0)
    assert ours(same) == pytest.approx(0.0)  # (2 - 2 + 0) / (2 + 2 + 1)
    assert reference_i1(same) == pytest.approx((2 - math.sqrt(2)) / (3 + math.sqrt(2)))
    cross = np.array([[1.0, 0], [-1, 0], [0, 1], [0, -1]])  # balanced: sum 0, V^T V = 2I
    assert ours(cross) == pytest.approx(1.0)
    three = np.array([[1.0, 0, 0], [0, 1, 0]])  # N < d: sigma_min = 0
    assert ours(three) == pytest.approx((2 - math.sqrt(2)) / (2 + math.sqrt(2) + 0.5))


def test_transforms_fit_and_renormalise():
    rng = np.random.default_rng(2)
    raw = rng.standard_normal((3000, 6)) * np.array([4, 2, 1, 0.5, 0.2, 0.1]) + 1.0
    unit = (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)
    m = Moments()
    m.add(unit)
    nonzero = np.ones(len(unit), bool)
    before = scores(m)[1]
    for name in ("standardise", "whiten"):
        f, desc = fit_transform(name, m, {"whiten_epsilon": 1e-6, "pca_components": 3})
        out, ok = f(unit, nonzero)
        assert ok.all() and np.allclose(np.linalg.norm(out, axis=1), 1, atol=1e-5)
        after = Moments()
        after.add(out)
        assert scores(after)[1] > before
    f, desc = fit_transform("pca", m, {"whiten_epsilon": 1e-6, "pca_components": 3})
    assert f(unit, nonzero)[0].shape == (3000, 3) and desc["components"] == 3
    f, desc = fit_transform("pca", m, {"whiten_epsilon": 1e-6, "pca_components": 0.5})
    assert desc["variance_share"] >= 0.5 and desc["components"] < 6
    zero = np.zeros((1, 6), np.float32)
    assert not fit_transform("whiten", m, {"whiten_epsilon": 1e-6, "pca_components": 3})[0](zero, np.array([False]))[1][0]


def test_a_full_data_accuracy_gets_wilsons_interval_over_the_questions():
    """445 questions, each answered at rank 1: accuracy@k is 1 at every k and in every bootstrap
    resample, so a bootstrap interval would be [1, 1]; the summary gives Wilson's score interval
    [445/(445 + z^2), 1] = [0.9914, 1] and says so. With 50 misses among 200 the share is inside
    (0, 1) and gets Wilson's too (one method at every share, issue 43): 33 of 34 never narrower than
    34 of 34. The replicates stay the bootstrap's either way."""
    from workflow_scripts.paired_statistics import wilson_interval
    settings = {**SETTINGS, "draws": {"count": 10, "size": 100, "replace": False}}
    topk, sims = population(445)
    reps: list = []
    _, _, summary = M.evaluate(topk, sims, "s", "m", settings, 1, replicates_out=reps)
    for r in summary.iter_rows(named=True):
        assert r["accuracy_full"] == 1.0 and r["accuracy_full_ci_method"] == "wilson"
        assert (round(r["accuracy_full_ci_low"], 4), r["accuracy_full_ci_high"]) == (0.9914, 1.0)
    accuracy = [p for p in reps if p["statistic"][0].startswith("accuracy@")]
    assert accuracy and all(v == 1.0 for p in accuracy for v in p["value"])
    assert all(u == 445 for p in accuracy for u in p["units"])
    topk, sims = population(200, misses=50)
    _, _, summary = M.evaluate(topk, sims, "s", "m", settings, 1)
    for r in summary.iter_rows(named=True):
        assert r["accuracy_full"] == 0.75 and r["accuracy_full_ci_method"] == "wilson"
        assert (r["accuracy_full_ci_low"], r["accuracy_full_ci_high"]) == pytest.approx(wilson_interval(0.75, 200))
    assert wilson_interval(33 / 34, 34)[0] < wilson_interval(1.0, 34)[0]


def test_each_questions_hit_is_written_for_mcnemar_and_compare_reads_one_k_of_it(tmp_path):
    """The outcomes behind accuracy@k (issue 32): per question and k, a hit or not, by hand from the
    ranks; the differences table reads the entry's k from the one file and tests two models by
    McNemar: at k = 1, model m hits a and e, model w only b: b = 2, c = 1, p = 1."""
    from workflow_scripts import differences
    topk, sims = frames({"a": [1], "b": [2], "c": [3], "d": [], "e": [1, 3]}, relevant={"e": 2})
    outcomes: list = []
    M.evaluate(topk, sims, "s", "m", {**SETTINGS, "draws": {"count": 5, "size": 3, "replace": False}}, 1,
               outcomes_out=outcomes)
    (frame,) = outcomes
    at = {k: frame.filter(pl.col("statistic") == f"accuracy@{k}").sort("id") for k in (1, 2, 3, 5)}
    assert at[1]["id"].to_list() == ["a", "b", "c", "d", "e"]
    assert at[1]["correct"].to_list() == [True, False, False, False, True]
    assert at[3]["correct"].to_list() == [True, True, True, False, True]
    frame.write_parquet(tmp_path / "m.parquet")
    frame.with_columns(pl.col("id").is_in(["b"]).alias("correct")).write_parquet(tmp_path / "w.parquet")
    read = differences.read_outcomes([{"dataset": "s", "statistic": "accuracy@1", "model": m, "path": str(tmp_path / f"{m}.parquet")}
                                  for m in ("m", "w")])
    row = differences.mcnemar_row(read[("s", "accuracy@1", "m")], read[("s", "accuracy@1", "w")])
    assert (row["discordant_b"], row["discordant_c"], row["p_value"]) == (2, 1, 1.0)
    assert read[("s", "accuracy@1", "m")].columns == ["id", "correct"]


def test_the_retrieval_plan_hands_every_ks_outcomes_from_one_file_per_model():
    from workflow_scripts.retrieval.plan import RetrievalPlan

    class Pair:
        def __init__(self, dataset, model):
            self.dataset, self.model = dataset, model
    plan = RetrievalPlan.__new__(RetrievalPlan)
    plan.R, plan.config = "res", {"retrieval": {"k": {"min": 1, "max": 3, "step": 2}}}
    plan.pairs = [Pair("q", "a"), Pair("q", "bow")]
    entries = plan.outcome_entries()
    assert [(e["statistic"], e["model"]) for e in entries] == [("accuracy@1", "a"), ("accuracy@3", "a"),
                                                               ("accuracy@1", "bow"), ("accuracy@3", "bow")]
    assert plan.outcome_files() == ["res/retrieval/q/a/outcomes.parquet", "res/retrieval/q/bow/outcomes.parquet"]
