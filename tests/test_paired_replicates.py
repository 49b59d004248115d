"""Paired resampling across models (issue 26) in retrieval, set theory and domain shift: an identical
copy of a model under another name gets identical intervals and identical bootstrap replicates;
replicate r draws the same items (questions, samples, texts) for every model, recomputed here by
hand from bootstrap.paired_rng; the replicates files hold B rows per statistic and model."""
import json
import logging

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from workflow_scripts.bootstrap import REPLICATE_COLUMNS, paired_rng, resample_counts, write_replicates
from workflow_scripts.domain_shift import scores as S
from workflow_scripts.retrieval import metrics as M
from workflow_scripts.settheory import criteria as C
from workflow_scripts.settheory import tables as T

LOG = logging.getLogger("test")


def replicates_frame(tmp_path, parts, name="r.parquet") -> pl.DataFrame:
    path = tmp_path / name
    write_replicates(path, parts)
    assert pq.read_schema(path).names == list(REPLICATE_COLUMNS)
    return pl.read_parquet(path)


def per_model(frame: pl.DataFrame, model: str) -> pl.DataFrame:
    return frame.filter(pl.col("model") == model).drop("model").sort("statistic", "replicate")


def assert_paired_copies(frame: pl.DataFrame, a: str, b: str, replicates: int) -> None:
    """Both models have B rows per statistic, and the same points and replicate values."""
    counts = frame.group_by("statistic", "model").len()
    assert set(counts["len"].to_list()) == {replicates}
    assert set(frame["model"].unique().to_list()) == {a, b}
    assert frame["replicate"].min() == 0 and frame["replicate"].max() == replicates - 1
    x, y = per_model(frame, a), per_model(frame, b)
    assert x.height == y.height > 0
    assert x["statistic"].to_list() == y["statistic"].to_list()
    np.testing.assert_array_equal(x["point"].to_numpy(), y["point"].to_numpy())
    np.testing.assert_array_equal(x["value"].to_numpy(), y["value"].to_numpy())


# ---- retrieval ---------------------------------------------------------------------------------------

def retrieval_inputs(n=30, seed=0, flip=()):
    """topk/similarities frames of n questions; question i hits at rank 1 unless i in `flip`."""
    rng = np.random.default_rng(seed)
    topk, sims = [], []
    for i in range(n):
        q = f"q{i:03d}"
        rank = 3 if i % 4 == 0 else 1
        if i in flip:
            rank = 6  # not in the list: a miss
        scores = sorted(rng.random(5), reverse=True)
        for r in range(1, 6):
            topk.append((q, r, f"{q}_rel" if r == rank else f"{q}_x{r}", float(scores[r - 1])))
        sims += [(q, f"{q}_rel", "correct", float(rng.random())), (q, f"{q}_rnd", "random", float(rng.random()))]
    return (pl.DataFrame(topk, schema={"query_id": pl.String, "rank": pl.Int32, "corpus_id": pl.String,
                                       "score": pl.Float64}, orient="row"),
            pl.DataFrame(sims, schema={"query_id": pl.String, "corpus_id": pl.String, "kind": pl.String,
                                       "similarity": pl.Float64}, orient="row"))


RETRIEVAL = {"ks": [1, 3, 5], "top_k": 5, "bootstrap_b": 40, "draws": {"count": 25, "size": 10, "replace": False},
             "thresholds": {"draws": 30, "margin": 0.01, "percentiles": [20, 40], "rule": "paired_draws",
                            "alpha": 0.05, "metric": "accuracy"},
             "coe": {"percentile": 10}}


def test_retrieval_identical_copies_get_identical_intervals_and_replicates(tmp_path):
    topk, sims = retrieval_inputs()
    ttopk = topk.with_columns(pl.lit("whiten").alias("transform"))
    out = {}
    parts = []
    for model in ("minilm", "minilm_copy"):
        out[model] = M.evaluate(topk, sims, "qa", model, RETRIEVAL, 5, ttopk, None, parts)
    (m1, t1, s1), (m2, t2, s2) = out["minilm"], out["minilm_copy"]
    assert m1.equals(m2) and t1.equals(t2)
    assert s1.drop("model").equals(s2.drop("model"))  # every interval: draws, full data, COE/ROE, thresholds
    frame = replicates_frame(tmp_path, parts)
    assert_paired_copies(frame, "minilm", "minilm_copy", 40)
    assert set(frame["statistic"].to_list()) == {f"{p}{s}@{k}" for p in ("", "whiten/") for s in ("accuracy", "ndcg")
                                                  for k in (1, 3, 5)}
    assert set(frame["probe"].to_list()) == {"retrieval"} and set(frame["dataset"].to_list()) == {"qa"}
    # the points are the full-data figures, and the replicates give the full-data interval
    row = s1.filter((pl.col("transform") == "none") & (pl.col("k") == 3)).row(0, named=True)
    acc3 = per_model(frame, "minilm").filter(pl.col("statistic") == "accuracy@3")
    assert acc3["point"][0] == row["accuracy_full"]
    # the accuracy's interval: Wilson's over the questions (the replicates serve the paired comparisons)
    from workflow_scripts.paired_statistics import wilson_interval
    assert row["accuracy_full_ci_method"] == "wilson" and acc3["units"][0] == row["n_queries"]
    assert (row["accuracy_full_ci_low"], row["accuracy_full_ci_high"]) == pytest.approx(
        wilson_interval(row["accuracy_full"], row["n_queries"]))


def test_retrieval_replicates_draw_the_same_questions_for_every_model(tmp_path):
    """Another model (three more misses): replicate r is the mean of its hits over the same
    resampled questions, sorted by id, as drawn by hand from the set's stream."""
    parts = []
    for model, flip in (("a", ()), ("b", (1, 2, 5))):
        topk, sims = retrieval_inputs(flip=flip)
        M.evaluate(topk, sims, "qa", model, RETRIEVAL, 5, None, None, parts)
    frame = replicates_frame(tmp_path, parts)
    # the stream the metrics job draws the full-data resamples from: the set's, no model
    counts = resample_counts(M.bootstrap_rng(5, "retrieval", "qa", "full_data"), 40, 30)
    for model, flip in (("a", set()), ("b", {1, 2, 5})):
        hits = np.array([0.0 if i in flip else 1.0 for i in range(30)])  # at k = 5, every listed answer is a hit
        got = per_model(frame, model).filter(pl.col("statistic") == "accuracy@5")["value"].to_numpy()
        np.testing.assert_allclose(got, counts @ hits / 30)


# ---- set theory -------------------------------------------------------------------------------------

def settheory_frame(seed=0, holes=()) -> pl.DataFrame:
    """Measures of 12 windows (sample ids 100, 110, ...): one overlap, two unions and two differences
    each; rows of the windows in `holes` undefined (a zero vector)."""
    rng = np.random.default_rng(seed)
    rows = []
    for w in range(12):
        for operator, count in (("overlap", 1), ("union", 2), ("difference", 2)):
            for v in range(count):
                rows.append((w, operator, v))
    n = len(rows)
    data = {"op_id": list(range(n)), "sample_id": [100 + 10 * w for w, _, _ in rows],
            "operator": [o for _, o, _ in rows], "variant": [f"v{v}" for _, _, v in rows]}
    for c in C.columns(("cosine", "l2")):
        data[c] = rng.random(n).tolist()
    data["angle_ab"] = (60 + 30 * rng.random(n)).tolist()
    data["angle_pa"] = (60 * rng.random(n)).tolist()
    middle = rng.random(n) < 0.5  # p between A and B for about half the samples (C2 met)
    data["angle_pb"] = np.where(middle, np.array(data["angle_ab"]) - np.array(data["angle_pa"]),
                                60 * rng.random(n)).tolist()
    data["norm_ratio"] = (0.5 + 1.5 * rng.random(n)).tolist()
    frame = pl.DataFrame(data, schema_overrides={"sample_id": pl.UInt64, "op_id": pl.UInt64})
    hole_ids = [100 + 10 * w for w in holes]
    return frame.with_columns([pl.when(pl.col("sample_id").is_in(hole_ids)).then(float("nan")).otherwise(pl.col(c))
                               .alias(c) for c in C.columns(("cosine", "l2"))])


def settheory_entries(tmp_path, frames: dict) -> list[dict]:
    samples = tmp_path / "samples.parquet"
    pl.DataFrame({"generator": ["g"], "prompt": ["p"]}).write_parquet(samples)
    filt = tmp_path / "filter.json"
    filt.write_text(json.dumps({"filter": {"active": True, "threshold": 0.25, "rule": "all", "encoders": ["enc"]}}))
    entries = []
    for model, frame in frames.items():
        path = tmp_path / f"{model}.parquet"
        frame.write_parquet(path)
        entries.append({"sampleset": "news", "model": model, "measures": str(path), "samples": str(samples),
                        "filter": str(filt)})
    return entries


SETTHEORY = {**T.DEFAULT_SETTINGS, "measures": ["cosine", "l2"], "bootstrap_b": 50}


def test_settheory_identical_copies_get_identical_intervals_and_replicates(tmp_path):
    frame = settheory_frame()
    parts = {}
    table = T.study(settheory_entries(tmp_path, {"m": frame, "m_copy": frame}), SETTHEORY, 3, LOG, parts)
    a = table.filter(pl.col("model") == "m").drop("model")
    b = table.filter(pl.col("model") == "m_copy").drop("model")
    assert a.height == b.height > 0 and a.equals(b)
    assert a.filter(pl.col("ci_high") > pl.col("ci_low")).height > 0  # real intervals, not degenerate ones
    frame = replicates_frame(tmp_path, parts["news"])
    assert_paired_copies(frame, "m", "m_copy", 50)
    # a statistic per share of the table: <criterion>/<measure>/<case>
    shares = {f"{r['criterion']}/{r['measure']}/{r['case']}" for r in a.iter_rows(named=True)}
    assert set(frame["statistic"].to_list()) == shares and "c1/cosine/T,T" in shares
    point = per_model(frame, "m").filter(pl.col("statistic") == "c1/cosine/T,T")["point"][0]
    assert point == a.filter((pl.col("criterion") == "c1") & (pl.col("measure") == "cosine")
                             & (pl.col("case") == "T,T"))["share"][0]


def test_settheory_resamples_every_sample_id_for_every_model(tmp_path):
    """A model with two windows undefined resamples the same 12 sample ids (sorted) with the same
    counts as a complete model; its undefined windows weigh 0 (C2, by hand)."""
    full, holed = settheory_frame(), settheory_frame(holes=(2, 7))
    holed = holed.with_columns([pl.when(pl.col("sample_id").is_in([120, 170])).then(float("nan"))
                                .otherwise(pl.col(c)).alias(c) for c in ("angle_ab", "angle_pa", "angle_pb")])
    parts = {}
    T.study(settheory_entries(tmp_path, {"full": full, "holed": holed}), SETTHEORY, 3, LOG, parts)
    frame = replicates_frame(tmp_path, parts["news"])
    counts = resample_counts(paired_rng(3, "settheory", "news", "c2/projection"), 50, 12).astype(float)
    for model, f in (("full", full), ("holed", holed)):
        rows = f.filter(pl.col("operator") == "overlap").sort("sample_id")  # one overlap per window
        mid = T.in_middle(rows, SETTHEORY["middle_tolerance"])
        ok = np.isfinite(mid)
        assert 0 < np.nansum(mid) < ok.sum()  # both outcomes: the replicates vary with the counts
        expected = (counts @ np.where(ok, mid, 0.0)) / (counts @ ok.astype(float))
        got = per_model(frame, model).filter(pl.col("statistic") == "c2/projection/middle")["value"].to_numpy()
        np.testing.assert_allclose(got, expected)


def test_cluster_shares_keeps_its_replicates_and_refuses_ids_outside_the_universe():
    values = {"x": np.array([1.0, 0.0, 1.0])}
    keep = {}
    est, _, _ = T.cluster_shares(values, np.array([1, 2, 3]), 30, 1, "t", keep=keep)["x"]
    assert est == pytest.approx(2 / 3) and keep["x"].shape == (30,)
    with pytest.raises(ValueError, match="universe"):
        T.cluster_shares(values, np.array([1, 2, 4]), 30, 1, "t", universe=np.array([1, 2, 3]))


# ---- domain shift -----------------------------------------------------------------------------------

DOMAIN = {"grid_step": 0.001, "exact_kde_max_n": 20000, "bootstrap_b": 30}


def domain_vectors(seed):
    rng = np.random.default_rng(seed)
    spec = rng.normal(size=(12, 6)) + 3.0 * np.eye(6)[0]
    agn = rng.normal(size=(10, 6))
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    return unit(spec), unit(agn)


def groups():
    return np.array(["specific"] * 12 + ["agnostic"] * 10)


def test_domain_shift_identical_copies_get_identical_intervals_and_replicates(tmp_path):
    sims = S.pair_similarities(*domain_vectors(0))
    parts = []
    one, _ = S.analyse(sims, 22, groups(), DOMAIN, 7, "telecom", "minilm", parts)
    two, _ = S.analyse(sims, 22, groups(), DOMAIN, 7, "telecom", "minilm_copy", parts)
    assert one == two
    frame = replicates_frame(tmp_path, parts)
    assert_paired_copies(frame, "minilm", "minilm_copy", 30)
    expected = ({f"mean/{d}" for d in S.DISTRIBUTIONS} | {f"overlap/{a}/{b}" for a, b in S.COMPARISONS}
                | {f"mean_gap/{a}/{b}" for a, b in S.COMPARISONS})
    assert set(frame["statistic"].to_list()) == expected
    mine = per_model(frame, "minilm")
    headline = one["comparisons"][0]  # within_specific vs between: the overview's headline
    reps = mine.filter(pl.col("statistic") == "overlap/within_specific/between")
    assert reps["point"][0] == headline["overlap"]
    lo, hi = np.percentile(reps["value"].to_numpy(), [2.5, 97.5])
    assert (lo, hi) == pytest.approx((headline["overlap_ci_low"], headline["overlap_ci_high"]))


def test_domain_shift_replicates_draw_the_same_texts_for_every_model(tmp_path):
    """Two different models of one dataset: replicate r of each mean weighs pair (i, j) by the
    counts c_i c_j of the same text resample, drawn by hand from the dataset's streams."""
    parts = []
    sims = {m: S.pair_similarities(*domain_vectors(seed)) for m, seed in (("a", 0), ("b", 1))}
    for model, s in sims.items():
        S.analyse(s, 22, groups(), DOMAIN, 7, "telecom", model, parts)
    frame = replicates_frame(tmp_path, parts)
    counts = np.zeros((30, 22))
    counts[:, :12] = resample_counts(paired_rng(7, "domain_shift", "telecom", "texts", "specific"), 30, 12)
    counts[:, 12:] = resample_counts(paired_rng(7, "domain_shift", "telecom", "texts", "agnostic"), 30, 10)
    for model, s in sims.items():
        values, i, j = s["between"]
        w = counts[:, i] * counts[:, j]
        got = per_model(frame, model).filter(pl.col("statistic") == "mean/between")["value"].to_numpy()
        np.testing.assert_allclose(got, (w @ values) / w.sum(axis=1))


# ---- planning: where the replicates are -------------------------------------------------------------

def planned(probe: str, results: str = "res"):
    """The probe's plan for resources/<probe>/study.yaml, as rules/common.smk makes it
    (stages such as adapt add their models first)."""
    import yaml

    from workflow_scripts import probes
    from workflow_scripts.config import validate
    from workflow_scripts.study import Study
    from workflow_runner import ROOT

    config = validate(yaml.safe_load(probes.get(probe).study_config.read_text()), check_paths=False)
    for declared in probes.declarations():
        if declared.prepare:
            declared.prepare(config, results)
    declaration = {p.name: p for p in probes.declarations()}[probe]
    return declaration.planner()(Study(config, results), declaration)


@pytest.mark.parametrize("probe, expected", [
    ("retrieval", ["res/retrieval/telecom_qa/form_only/replicates.parquet",  # the metrics job of each (set, model)
                   "res/retrieval/telecom_qa/tfidf/replicates.parquet"]),
    ("settheory", ["res/settheory/news/replicates.parquet"]),  # the aggregate: one per sample set, all models
    ("domain_shift", ["res/domain_shift/skills_general/form_only/replicates.parquet",  # the score job of each pair
                      "res/domain_shift/skills_general/minilm/replicates.parquet",
                      "res/domain_shift/skills_general/minilm_pt/replicates.parquet"]),
])
def test_replicate_files_are_planned_per_job(probe, expected):
    plan = planned(probe)  # each study's models: form_only and the study's own
    assert plan.replicate_files() == expected
    assert len(plan.pairs) == {"retrieval": 2, "settheory": 2, "domain_shift": 3}[probe]
