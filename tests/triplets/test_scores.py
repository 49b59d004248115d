"""Triplet scoring and tables (workflow_scripts/triplets/scores.py) on hand-made vector stores."""
import json
import math
import re

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp

from workflow_scripts.bootstrap import paired_rng, percentile_interval, resample_counts
from workflow_scripts.common import partition_of, text_key
from workflow_scripts.jobs import make_job
from workflow_scripts.triplets import scores as ts
from workflow_scripts.vector_store import StoreMismatch, spec_digest, write_partition

SPEC = {"family": "hashing", "dim": 3}
R2 = 1 / math.sqrt(2)

# Literal 3-D vectors; cosines by hand:
#   e1.d12 = 1, norms 1 and sqrt 2 -> 1/sqrt 2;  e1.d1m2 -> 1/sqrt 2 (a tie with e1.d12);  d12.d1m2 = 0
#   e1.v34 = 3/5 = 0.6;  e1.v43 = 0.8;  v34.v43 = 24/25 = 0.96;  e2.v34 = 0.8;  e2.d12 = 1/sqrt 2
#   e3 is orthogonal to all others;  zero has no cosine (NaN)
VECTORS = {"e1": (1, 0, 0), "e2": (0, 1, 0), "e3": (0, 0, 1), "d12": (1, 1, 0), "d1m2": (1, -1, 0),
           "v34": (3, 4, 0), "v43": (4, 3, 0), "zero": (0, 0, 0)}
# id, S, S+, S*, then cos(S,S+), cos(S,S*), cos(S+,S*) by hand, strict and negation_variants verdicts
TRIPLETS = [
    (1, "e1", "d12", "e2", R2, 0.0, R2, True, False),  # nv: S+^S* only ties S^S+
    (2, "e1", "d12", "d1m2", R2, R2, 0.0, False, False),  # strict tie -> incorrect
    (3, "e1", "v34", "v43", 0.6, 0.8, 0.96, False, True),  # strict wrong, nv right
    (4, "e1", "v43", "e3", 0.8, 0.0, 0.0, True, False),  # strict right, nv wrong
    (5, "e1", "d12", "zero", R2, np.nan, np.nan, None, None),  # zero vector: undefined
    (6, "e2", "v34", "e1", 0.8, 0.0, 0.6, True, False),
]


def make_store(directory, vectors=VECTORS, model="m", spec=SPEC, sparse=False, partitions=2):
    keys = np.array([text_key(t) for t in vectors], dtype=np.uint64)
    rows = np.array(list(vectors.values()), dtype=np.float32)
    dirs = []
    for p in range(partitions):
        sel = np.flatnonzero(partition_of(keys, partitions) == p)
        d = directory / f"{model}-{'csr' if sparse else 'dense'}-{p}"
        manifest = {"model": model, "scope": "shared", "partition": p, "partitions": partitions, "family": "x",
                    "spec_digest": spec_digest(spec)}
        write_partition(d, keys[sel], manifest, sp.csr_matrix(rows[sel]) if sparse else rows[sel])
        dirs.append(str(d))
    return dirs


def write_triplets(path, triplets=TRIPLETS):
    pl.DataFrame({"id": [t[0] for t in triplets], "s": [t[1] for t in triplets], "s_plus": [t[2] for t in triplets],
                  "s_star": [t[3] for t in triplets], "source": "hand", "rule": "test"},
                 schema_overrides={"id": pl.UInt64}).write_parquet(path)
    return str(path)


def write_scores(path, sims, correct, ids=None):
    """A scores file as score() writes it, from given cosines (n x 3) and verdicts (None: undefined)."""
    sims = np.asarray(sims, dtype=np.float64).reshape(-1, 3)
    pl.DataFrame({"id": pl.Series(ids if ids is not None else np.arange(len(sims)), dtype=pl.UInt64),
                  "sim_s_splus": sims[:, 0], "sim_s_sstar": sims[:, 1], "sim_splus_sstar": sims[:, 2],
                  "correct": pl.Series(list(correct), dtype=pl.Boolean)}).write_parquet(path)
    return str(path)


def random_scores(path, n, seed=0, undefined=0):
    """n strict-scored triplets with random cosines; the first `undefined` have a NaN."""
    rng = np.random.default_rng(seed)
    sims = rng.uniform(-0.2, 1.0, size=(n, 3))
    sims[:undefined, 1:] = np.nan
    correct = [None if i < undefined else bool(a > b) for i, (a, b, _) in enumerate(sims)]
    return write_scores(path, sims, correct), sims, correct


# ---- score -----------------------------------------------------------------------------------

@pytest.mark.parametrize("sparse", [False, True])
def test_similarities_and_strict_verdicts_equal_hand_values(tmp_path, log, sparse):
    stores = make_store(tmp_path, sparse=sparse)
    out = ts.score(write_triplets(tmp_path / "t.parquet"), stores, "m", SPEC, "strict", log)
    assert out.columns == ["id", "sim_s_splus", "sim_s_sstar", "sim_splus_sstar", "correct", "subject", "verb",
                           "cluster"]
    assert out.dtypes == [pl.UInt64, pl.Float64, pl.Float64, pl.Float64, pl.Boolean, pl.String, pl.String, pl.String]
    assert out["subject"].null_count() == out.height  # no clusters in these triplets
    assert out["cluster"].to_list() == [t[1] for t in TRIPLETS]  # S: five triplets share "e1"
    assert out["id"].to_list() == [t[0] for t in TRIPLETS]
    want = np.array([t[4:7] for t in TRIPLETS], dtype=np.float64)
    got = out.select("sim_s_splus", "sim_s_sstar", "sim_splus_sstar").to_numpy()
    assert np.allclose(got, want, rtol=0, atol=1e-7, equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert out["correct"].to_list() == [t[7] for t in TRIPLETS]
    # the tie is exact (same dot product and norms), and strict > calls it incorrect
    tie = out.row(1, named=True)
    assert tie["sim_s_splus"] == tie["sim_s_sstar"] and tie["correct"] is False


def test_negation_variants_rule_differs_from_strict(tmp_path, log):
    stores = make_store(tmp_path)
    path = write_triplets(tmp_path / "t.parquet")
    nv = ts.score(path, stores, "m", SPEC, "negation_variants", log)
    strict = ts.score(path, stores, "m", SPEC, "strict", log)
    assert nv["correct"].to_list() == [t[8] for t in TRIPLETS]
    assert nv.drop("correct").equals(strict.drop("correct"))
    differ = [i for i, (a, b) in enumerate(zip(nv["correct"], strict["correct"])) if a is not None and a != b]
    assert differ == [0, 2, 3, 5]  # both directions: strict-only right (0, 3, 5) and nv-only right (2)


def test_unknown_scoring_and_other_spec_or_model_are_refused(tmp_path, log):
    stores = make_store(tmp_path)
    path = write_triplets(tmp_path / "t.parquet")
    with pytest.raises(ValueError, match="unknown triplet scoring"):
        ts.score(path, stores, "m", SPEC, "lenient", log)
    with pytest.raises(StoreMismatch, match="another configuration"):
        ts.score(path, stores, "m", {**SPEC, "dim": 4}, "strict", log)
    with pytest.raises(StoreMismatch, match="expected 'other'"):
        ts.score(path, stores, "other", SPEC, "strict", log)


def test_score_job_writes_the_scores_file(tmp_path):
    stores = make_store(tmp_path)
    out = tmp_path / "s" / "scores.parquet"
    ts.run_triplets_score(make_job(
        input={"triplets": write_triplets(tmp_path / "t.parquet"), "stores": stores}, output=[str(out)],
        params={"spec": {"family": "hashing", "dim": 3}, "scoring": "strict"}, wildcards={"model": "m"}))
    frame = pl.read_parquet(out)
    assert frame["correct"].to_list() == [t[7] for t in TRIPLETS]
    assert [p.name for p in out.parent.iterdir()] == ["scores.parquet"]  # no temporary file left


# ---- aggregate -------------------------------------------------------------------------------

def test_aggregate_counts_and_means_by_hand(tmp_path, log):
    stores = make_store(tmp_path)
    path = write_triplets(tmp_path / "t.parquet")
    entries = []
    for scoring in ts.SCORINGS:
        scores = tmp_path / f"{scoring}.parquet"
        ts.score(path, stores, "m", SPEC, scoring, log).write_parquet(scores)
        entries.append({"dataset": scoring, "model": "m", "scores": str(scores), "scoring": scoring})
    table = ts.aggregate(entries, 200, 7, log)
    assert table.columns == [
        "dataset", "model", "n", "n_undefined", "unit", "n_units", "n_verbs", "accuracy", "accuracy_ci_low",
        "accuracy_ci_high", "accuracy_ci_method", "mean_s_splus", "mean_s_splus_ci_low", "mean_s_splus_ci_high", "mean_s_sstar", "mean_s_sstar_ci_low",
        "mean_s_sstar_ci_high", "mean_splus_sstar", "mean_splus_sstar_ci_low", "mean_splus_sstar_ci_high",
        "scoring", "scoring_rule", "bootstrap_b"]
    strict, nv = table.row(0, named=True), table.row(1, named=True)
    for row in (strict, nv):
        assert (row["n"], row["n_undefined"], row["bootstrap_b"]) == (5, 1, 200)
        # means over the five defined triplets (1, 2, 3, 4, 6)
        assert row["mean_s_splus"] == pytest.approx((R2 + R2 + 0.6 + 0.8 + 0.8) / 5, abs=1e-7)
        assert row["mean_s_sstar"] == pytest.approx((0 + R2 + 0.8 + 0 + 0) / 5, abs=1e-7)
        assert row["mean_splus_sstar"] == pytest.approx((R2 + 0 + 0.96 + 0 + 0.6) / 5, abs=1e-7)
    assert strict["accuracy"] == pytest.approx(3 / 5) and strict["scoring"] == "strict"
    assert nv["accuracy"] == pytest.approx(1 / 5) and nv["scoring"] == "negation_variants"


def test_intervals_contain_estimates_and_are_reproducible(tmp_path, log):
    path, sims, correct = random_scores(tmp_path / "s.parquet", 300, undefined=5)
    entries = [{"dataset": "d", "model": "m", "scores": path, "scoring": "strict"}]
    a = ts.aggregate(entries, 500, 1, log)
    row = a.row(0, named=True)
    assert (row["n"], row["n_undefined"]) == (295, 5)
    hand = [c for c in correct if c is not None]
    assert row["accuracy"] == pytest.approx(sum(hand) / len(hand))
    for stat in ts.STATISTICS:
        low, est, high = row[f"{stat}_ci_low"], row[stat], row[f"{stat}_ci_high"]
        assert low <= est <= high and low < high, stat
    # the interval of a share of 295 triplets is about +-2 x sqrt(p(1-p)/n) ~ +-0.057
    assert 0.07 < row["accuracy_ci_high"] - row["accuracy_ci_low"] < 0.16
    # the documented stream: paired_rng(seed, "triplets", dataset, statistic) over all 300 triplets in
    # id order; a replicate's mean is over the defined triplets it drew (undefined ones weigh 0)
    ok = ~np.isnan(sims).any(axis=1)
    counts = resample_counts(paired_rng(1, "triplets", "d", "mean_s_sstar"), 500, 300)
    reps = [np.average(sims[ok, 1], weights=w[ok]) for w in counts]
    assert (row["mean_s_sstar_ci_low"], row["mean_s_sstar_ci_high"]) == pytest.approx(
        percentile_interval(np.array(reps))[:2], abs=1e-12)
    assert ts.aggregate(entries, 500, 1, log).equals(a)
    other = ts.aggregate(entries, 500, 2, log).row(0, named=True)
    assert other["accuracy"] == row["accuracy"]
    assert (other["accuracy_ci_low"], other["accuracy_ci_high"], other["mean_s_splus_ci_low"]) != (
        row["accuracy_ci_low"], row["accuracy_ci_high"], row["mean_s_splus_ci_low"])


def test_identical_copies_of_a_model_get_identical_intervals_and_replicates(tmp_path, log):
    """Paired resampling (issue 26): the stream names no model and the triplets are drawn in id
    order, so the same scores under another name -- even stored in another row order -- give the
    same intervals and the same replicates; another model draws the same triplets (its
    replicate means are the weighted means under the same counts)."""
    path, sims, correct = random_scores(tmp_path / "s.parquet", 120, undefined=3)
    perm = np.random.default_rng(1).permutation(120)
    shuffled = write_scores(tmp_path / "p.parquet", sims[perm], [correct[i] for i in perm], ids=perm)
    other_path, other_sims, _ = random_scores(tmp_path / "o.parquet", 120, seed=9)
    entries = [{"dataset": "d", "model": m, "scores": p, "scoring": "strict"}
               for m, p in (("minilm", path), ("minilm_copy", shuffled), ("other", other_path))]
    reps: list = []
    table = ts.aggregate(entries, 300, 4, log, reps)
    a, b = table.row(0, named=True), table.row(1, named=True)
    assert {k: v for k, v in a.items() if k != "model"} == {k: v for k, v in b.items() if k != "model"}
    by = {(r["model"][0], r["statistic"][0]): np.array(r["value"]) for r in reps}
    assert len(by) == 3 * len(ts.STATISTICS) and all(len(v) == 300 for v in by.values())
    for stat in ts.STATISTICS:
        assert np.array_equal(by[("minilm", stat)], by[("minilm_copy", stat)])
    counts = resample_counts(paired_rng(4, "triplets", "d", "mean_s_splus"), 300, 120)
    assert by[("other", "mean_s_splus")] == pytest.approx(counts @ other_sims[:, 0] / 120, abs=1e-12)


def test_no_bootstrap_and_no_defined_triplets_give_nan_not_a_crash(tmp_path, log):
    path, _, _ = random_scores(tmp_path / "s.parquet", 20)
    entry = {"dataset": "d", "model": "m", "scores": path, "scoring": "strict"}
    row = ts.aggregate([entry], 0, 1, log).row(0, named=True)
    assert math.isfinite(row["accuracy"]) and row["bootstrap_b"] == 0
    # no replicates, no percentile interval; the accuracy's score interval needs none
    assert all(math.isnan(row[f"{s}_ci_{e}"]) for s in ts.MEANS for e in ("low", "high"))
    assert math.isfinite(row["accuracy_ci_low"]) and row["accuracy_ci_method"] == "wilson"
    undefined = write_scores(tmp_path / "u.parquet", [[np.nan, np.nan, 0.5], [0.1, np.nan, np.nan]], [None, None])
    empty = write_scores(tmp_path / "e.parquet", np.empty((0, 3)), [])
    table = ts.aggregate([{"dataset": "d", "model": "u", "scores": undefined, "scoring": "strict"},
                          {"dataset": "d", "model": "e", "scores": empty, "scoring": "strict"}], 100, 1, log)
    assert table["n"].to_list() == [0, 0] and table["n_undefined"].to_list() == [2, 0]
    assert table.select(pl.exclude("dataset", "model", "n", "n_undefined", "unit", "n_units", "n_verbs",
                                   "accuracy_ci_method", "scoring", "scoring_rule", "bootstrap_b")).fill_nan(None).null_count().row(0) == (2,) * 12
    assert table["accuracy_ci_method"].null_count() == 2  # no interval, no method


def test_scores_from_another_rule_or_duplicates_are_refused(tmp_path, log):
    path, _, _ = random_scores(tmp_path / "s.parquet", 50)
    with pytest.raises(ValueError, match="does not follow"):
        ts.aggregate([{"dataset": "d", "model": "m", "scores": path, "scoring": "negation_variants"}], 10, 1, log)
    entry = {"dataset": "d", "model": "m", "scores": path, "scoring": "strict"}
    with pytest.raises(ValueError, match="two score files"):
        ts.aggregate([entry, entry], 10, 1, log)


# ---- tables and plots ------------------------------------------------------------------------

def test_fmt_percent_follows_the_paper():
    assert ts.fmt_percent(0.97423, 0.9691, 0.9779) == "97.42% [96.9, 97.8]"
    assert ts.fmt_percent(0.5, float("nan"), float("nan")) == "50.00%"
    assert ts.fmt_percent(float("nan"), float("nan"), float("nan")) == "undefined"
    assert ts.fmt_percent(0.911, 0.888, 0.932, 1) == "91.1% [88.8, 93.2]"


def test_aggregate_job_writes_tables_plots_and_replicates(tmp_path):
    datasets, models = ["negation_detection", "negation_variants"], ["tfidf", "minilm", "glove"]
    entries = []
    for i, d in enumerate(datasets):
        for j, m in enumerate(reversed(models)):  # entries out of order: the tables follow datasets/models
            if (d, m) == ("negation_variants", "glove"):
                continue  # a model missing from a dataset
            path, _, _ = random_scores(tmp_path / f"{d}-{m}.parquet", 40, seed=10 * i + j, undefined=j)
            entries.append({"dataset": d, "model": m, "scores": path,
                            "scoring": "strict"})
    tables, plots, out = tmp_path / "tables", tmp_path / "plots", tmp_path / "tables" / "triplets_accuracy.csv"
    replicates = tmp_path / "replicates.parquet"
    job = make_job(
        input=[e["scores"] for e in entries],
        output={"accuracy": str(out), "overview": str(tables / "triplets_overview.csv"), "replicates": str(replicates),
                "tables": [str(tables / f"triplets_{d}.csv") for d in datasets],
                "plots": [str(plots / f"{d}.png") for d in datasets]},
        params={"entries": entries, "bootstrap_b": 100, "bootstrap_unit": "clusters", "seed": 3,
                "datasets": datasets, "models": models})
    ts.run_triplets_aggregate(job)
    acc = pl.read_csv(out)
    assert acc.select("dataset", "model").rows() == [(d, m) for d in datasets for m in models
                                                     if (d, m) != ("negation_variants", "glove")]
    assert acc["accuracy"].is_between(0, 1).all()
    assert acc["n"].to_list()[:3] == [38, 39, 40]  # tfidf has 2 undefined, glove none
    reps = pl.read_parquet(replicates)
    assert set(reps.select("dataset", "model").unique().rows()) == {(e["dataset"], e["model"]) for e in entries}
    assert reps.group_by("dataset", "model", "statistic").len()["len"].to_list() == [100] * len(entries) * len(
        ts.STATISTICS)

    per = pl.read_csv(tables / "triplets_negation_detection.csv")
    assert per.columns == ["model", "S^S+", "S^S*", "S+^S*", "Accuracy", "n", "n_undefined"]
    assert per["model"].to_list() == models
    cell = re.compile(r"^-?\d+\.\d\d% \[-?\d+\.\d, -?\d+\.\d\]$")
    assert all(cell.match(v) for c in ("S^S+", "S^S*", "S+^S*", "Accuracy") for v in per[c])
    first = acc.row(0, named=True)
    assert per["Accuracy"][0] == ts.fmt_percent(first["accuracy"], first["accuracy_ci_low"], first["accuracy_ci_high"])
    assert pl.read_csv(tables / "triplets_negation_variants.csv")["model"].to_list() == ["tfidf", "minilm"]

    overview = pl.read_csv(tables / "triplets_overview.csv")
    assert overview.columns == ["model", *datasets] and overview["model"].to_list() == models
    assert re.match(r"^\d+\.\d% \[\d+\.\d, \d+\.\d\]$", overview["negation_detection"][0])
    assert overview["negation_variants"][2] == ""  # blank: glove has no scores there
    for d in datasets:
        for ext, magic in (("png", b"\x89PNG"), ("svg", b"<?xml")):
            assert (plots / f"{d}.{ext}").read_bytes().startswith(magic)
    # a rerun writes the same tables (same seed, fixed SVG ids)
    before = {p.name: p.read_bytes() for p in list(tables.iterdir()) + [plots / "negation_detection.svg"]}
    ts.run_triplets_aggregate(job)
    assert {p: (tables / p if p.endswith(".csv") else plots / p).read_bytes() for p in before} == before
    assert not [p for p in list(tables.iterdir()) + list(plots.iterdir()) if p.name.startswith(".tmp-")]


def test_plot_handles_undefined_rows(tmp_path, log):
    undefined = write_scores(tmp_path / "u.parquet", [[np.nan, np.nan, 0.5]], [None])
    entry = {"dataset": "d", "model": "u", "scores": undefined, "scoring": "negation_variants"}
    table = ts.aggregate([entry], 0, 1, log)
    ts.write_outputs(table, str(tmp_path / "acc.csv"), str(tmp_path), str(tmp_path / "p"), ["d", "empty"], ["u"], log)
    assert (tmp_path / "p" / "d.png").stat().st_size > 0 and (tmp_path / "p" / "empty.svg").stat().st_size > 0
    assert pl.read_csv(tmp_path / "triplets_d.csv")["Accuracy"].to_list() == ["undefined"]
    with pytest.raises(ValueError, match="not listed"):
        ts.write_outputs(table, str(tmp_path / "acc.csv"), str(tmp_path), str(tmp_path / "p"), ["d"], ["other"], log)


def test_an_accuracy_gets_wilsons_interval_at_every_share(tmp_path, log):
    """0 of 445 triplets right: every resample gives 0, so a bootstrap interval would be [0, 0]; the
    table reports Wilson's score interval [0, z^2/(445 + z^2)] = [0, 0.0086]; 445 of 445 gives
    [0.9914, 1]; a share strictly inside gets Wilson's too, one method at every share (monotone in
    it; issue 43, point 5), while the replicates stay the bootstrap's (the differences table
    subtracts them). On the first screen the interval has width, so no Z mark (C stays: 0 is the
    floor)."""
    from workflow_scripts.paired_statistics import wilson_interval
    from workflow_scripts.report import overview as O
    z2 = 1.959963984540054 ** 2
    wrong_sims = np.tile([0.2, 0.6, 0.1], (445, 1))  # cos(S, S+) < cos(S, S*): wrong under strict
    wrong = write_scores(tmp_path / "w.parquet", wrong_sims, [False] * 445)
    right = write_scores(tmp_path / "r.parquet", wrong_sims[:, [1, 0, 2]], [True] * 445)
    inside, _, _ = random_scores(tmp_path / "i.parquet", 445, seed=3)
    models = ["wrong", "right", "inside"]
    entries = [{"dataset": "d", "model": m, "scores": p, "scoring": "strict"}
               for m, p in zip(models, (wrong, right, inside))]
    reps: list = []
    table = ts.aggregate(entries, 200, 1, log, reps)
    rows = {r["model"]: r for r in table.iter_rows(named=True)}
    low, high = rows["wrong"]["accuracy_ci_low"], rows["wrong"]["accuracy_ci_high"]
    assert rows["wrong"]["accuracy"] == 0.0 and (low, high) == (0.0, pytest.approx(z2 / (445 + z2)))
    assert rows["wrong"]["accuracy_ci_method"] == "wilson"
    low, high = rows["right"]["accuracy_ci_low"], rows["right"]["accuracy_ci_high"]
    assert (low, high, rows["right"]["accuracy_ci_method"]) == (pytest.approx(445 / (445 + z2)), 1.0, "wilson")
    by = {(r["model"][0], r["statistic"][0]): np.array(r["value"]) for r in reps}
    inner = rows["inside"]
    assert inner["accuracy_ci_method"] == "wilson" and 0 < inner["accuracy"] < 1
    assert (inner["accuracy_ci_low"], inner["accuracy_ci_high"]) == pytest.approx(
        wilson_interval(inner["accuracy"], inner["n"]))
    assert (by[("wrong", "accuracy")] == 0).all()

    ts.write_outputs(table, str(tmp_path / "triplets_accuracy.csv"), str(tmp_path), str(tmp_path / "plots"), ["d"],
                     models, log)
    O.build([str(tmp_path / "triplets_accuracy.csv")], {m: {"family": "hashing"} for m in models}, {},
            str(tmp_path / "ov.csv"), None, str(tmp_path / "overview.json"), min_n=100)
    screen = json.loads((tmp_path / "overview.json").read_text())
    row = next(r for r in screen["rows"] if r["column"] == "triplets_d")
    assert row["cells"]["wrong"]["marks"] == "C" and row["cells"]["right"]["marks"] == "C"
    assert row["cells"]["inside"]["marks"] == ""
    assert pl.read_csv(tmp_path / "triplets_d.csv")["Accuracy"][0] == "0.00% [0.0, 0.9]"


# ---- clusters and the argument-sensitivity scoring rule (issue 32) ------------------------------

def clustered_scores(path, right_subjects, subjects=("Lilly", "Imogen", "Noah", "Emma"), verbs=("like", "ask", "help"),
                     per_cell=5):
    """Template-like scores: every (subject, verb) cell has `per_cell` triplets; a subject's
    triplets are all right (strict) if it is in `right_subjects`, else all wrong -- outcomes
    perfectly correlated within a subject, the case an item bootstrap understates."""
    rows = [(s, v) for s in subjects for v in verbs for _ in range(per_cell)]
    right = np.array([s in right_subjects for s, _ in rows])
    sims = np.where(right[:, None], [0.9, 0.5, 0.6], [0.5, 0.9, 0.4])
    pl.DataFrame({"id": pl.Series(np.arange(len(rows)), dtype=pl.UInt64),
                  "sim_s_splus": sims[:, 0], "sim_s_sstar": sims[:, 1], "sim_splus_sstar": sims[:, 2],
                  "correct": pl.Series(right.tolist(), dtype=pl.Boolean),
                  "subject": [s for s, _ in rows], "verb": [v for _, v in rows]}).write_parquet(path)
    return str(path)


def test_cluster_bootstrap_is_wider_than_item_bootstrap_when_subjects_decide(tmp_path, log):
    path = clustered_scores(tmp_path / "s.parquet", right_subjects={"Lilly", "Imogen"})
    entry = [{"dataset": "argument_sensitivity", "model": "m", "scores": path, "scoring": "strict"}]
    clusters = ts.aggregate(entry, 1000, 3, log, bootstrap_unit="clusters").row(0, named=True)
    items = ts.aggregate(entry, 1000, 3, log, bootstrap_unit="items").row(0, named=True)
    assert clusters["accuracy"] == items["accuracy"] == 0.5
    width = {name: r["accuracy_ci_high"] - r["accuracy_ci_low"] for name, r in (("clusters", clusters),
                                                                              ("items", items))}
    # 60 independent triplets: about +-0.13; 4 subjects that decide everything: about +-0.5
    assert width["items"] < 0.3 < 0.6 < width["clusters"]
    assert (clusters["unit"], clusters["n_units"], clusters["n_verbs"], clusters["n"]) == ("subjects x verbs", 4, 3, 60)
    assert (items["unit"], items["n_units"], items["n"]) == ("triplets", 60, 60)


def test_a_share_at_a_bound_over_crossed_subjects_and_verbs_counts_the_smaller_factor(tmp_path, log):
    """0 of 60 template triplets right, from 4 subjects x 3 verbs: the interval counts 3 independent
    units (the smaller factor), Wilson at 0 over 3 = [0, z^2/(3 + z^2)] = [0, 0.5615], not over 60
    ([0, 0.0602], as if the triplets were independent); with `items`, over 60."""
    path = clustered_scores(tmp_path / "s.parquet", right_subjects=set())
    entry = [{"dataset": "argument_sensitivity", "model": "m", "scores": path, "scoring": "strict"}]
    clusters = ts.aggregate(entry, 200, 3, log, bootstrap_unit="clusters").row(0, named=True)
    items = ts.aggregate(entry, 200, 3, log, bootstrap_unit="items").row(0, named=True)
    assert clusters["accuracy"] == items["accuracy"] == 0.0
    assert (round(clusters["accuracy_ci_low"], 4), round(clusters["accuracy_ci_high"], 4)) == (0.0, 0.5615)
    assert (round(items["accuracy_ci_low"], 4), round(items["accuracy_ci_high"], 4)) == (0.0, 0.0602)
    assert clusters["accuracy_ci_method"] == items["accuracy_ci_method"] == "wilson"


def test_first_screen_n_counts_the_resampled_subjects(tmp_path, log):
    from workflow_scripts.triplets.probe import accuracy_headlines
    path = clustered_scores(tmp_path / "s.parquet", right_subjects={"Lilly"})
    plain = write_scores(tmp_path / "p.parquet", [[0.9, 0.5, 0.6]] * 7, [True] * 7)
    table = ts.aggregate([{"dataset": "argument_sensitivity", "model": "m", "scores": path, "scoring": "strict"},
                          {"dataset": "negation_detection", "model": "m", "scores": plain, "scoring": "strict"}],
                         50, 3, log)
    rows = {r["column"]: r for r in accuracy_headlines(table, {})}
    assert rows["triplets_argument_sensitivity"]["n"] == 4
    assert rows["triplets_argument_sensitivity"]["unit"] == "subjects x verbs"
    assert rows["triplets_negation_detection"]["n"] == 7 and "unit" not in rows["triplets_negation_detection"]


def test_cluster_replicates_of_two_models_use_the_same_cluster_draws(tmp_path, log):
    # model b is right exactly where model a is wrong: with the same subject and verb draws, b's
    # replicate accuracy is 1 - a's in every replicate
    a = clustered_scores(tmp_path / "a.parquet", right_subjects={"Lilly"})
    b = clustered_scores(tmp_path / "b.parquet", right_subjects={"Imogen", "Noah", "Emma"})
    reps: list = []
    ts.aggregate([{"dataset": "argument_sensitivity", "model": m, "scores": p, "scoring": "strict"}
                  for m, p in (("a", a), ("b", b))], 200, 11, log, reps)
    by_model = {part["model"][0]: np.array(part["value"]) for part in reps if part["statistic"][0] == "accuracy"}
    assert np.ptp(by_model["a"]) > 0  # the draws vary
    assert np.allclose(by_model["a"] + by_model["b"], 1.0)
    # and the draws are of subjects and verbs, from the stream that names no model
    frame = pl.read_parquet(a).sort("id")
    weights = ts.resample_weights(paired_rng(11, "triplets", "argument_sensitivity", "accuracy"), 200, frame.height,
                                  ts.cluster_indices(frame))
    right = frame["correct"].to_numpy().astype(float)
    assert np.allclose(by_model["a"], weights @ right / weights.sum(axis=1))


def test_argument_sensitivity_scoring_rules_differ_on_a_hand_case(tmp_path, log):
    # S+ nearer S than S* is, yet nearer S* than S is: right under the figures' rule (strict),
    # wrong under the prose rule (passive_over_reordered); the third triplet is right under both
    sims = [[0.8, 0.6, 0.9], [0.7, 0.5, 0.75], [0.9, 0.2, 0.1]]
    assert ts.judge(*np.array(sims).T, "strict")[0].tolist() == [True, True, True]
    assert ts.judge(*np.array(sims).T, "passive_over_reordered")[0].tolist() == [False, False, True]
    entries = []
    for scoring in ("strict", "passive_over_reordered"):
        verdicts = ts.judge(*np.array(sims).T, scoring)[0].tolist()
        entries.append({"dataset": scoring, "model": "m", "scoring": scoring,
                        "scores": write_scores(tmp_path / f"{scoring}.parquet", sims, verdicts)})
    table = {r["scoring"]: r for r in ts.aggregate(entries, 0, 1, log).iter_rows(named=True)}
    assert table["strict"]["accuracy"] == pytest.approx(1.0)
    assert table["passive_over_reordered"]["accuracy"] == pytest.approx(1 / 3)
    assert table["strict"]["scoring_rule"] == "cos(S,S+) > cos(S,S*)"
    assert table["passive_over_reordered"]["scoring_rule"] == "cos(S,S+) > cos(S+,S*)"


def test_the_argument_sensitivity_rule_is_a_config_value():
    from types import SimpleNamespace

    from workflow_scripts.triplets.plan import TripletsPlan
    datasets = {"argument_sensitivity": {}, "negation_variants": {"sources": ["sick"]}, "mine": {"file": "t.tsv"}}

    def rule(dataset, **settings):
        return TripletsPlan.scoring(SimpleNamespace(config={"triplets": {"datasets": datasets, **settings}}), dataset)
    assert rule("argument_sensitivity") == "strict"  # the seed's figures
    assert rule("argument_sensitivity", argument_sensitivity_scoring="passive_over_reordered") == "passive_over_reordered"
    assert rule("negation_variants", argument_sensitivity_scoring="passive_over_reordered") == "negation_variants"
    assert rule("mine", argument_sensitivity_scoring="passive_over_reordered") == "strict"


def test_clustered_triplets_leave_mcnemar_to_the_cluster_bootstrap():
    # McNemar counts triplets as independent: where subjects x verbs are resampled, the differences
    # table gets no per-triplet outcomes and uses the paired cluster bootstrap's p
    from types import SimpleNamespace

    from workflow_scripts.triplets.plan import TripletsPlan
    datasets = {"argument_sensitivity": {}, "negation_detection": {"sources": ["sick"]}}

    def outcome_datasets(**settings):
        plan = SimpleNamespace(config={"triplets": {"datasets": datasets, **settings}}, R="results",
                               pairs=[SimpleNamespace(dataset=d, model="m") for d in datasets])
        plan.scores = lambda: TripletsPlan.scores(plan)
        plan.clustered = lambda d: TripletsPlan.clustered(plan, d)
        return [e["dataset"] for e in TripletsPlan.outcome_entries(plan)]
    assert outcome_datasets() == ["negation_detection"]
    assert outcome_datasets(bootstrap_unit="items") == ["argument_sensitivity", "negation_detection"]


# ---- triplets sharing an original sentence (issue 32, point 2) -------------------------------------

def shared_original_scores(path, originals, right):
    """Strict-scored triplets with the given originals (S) and verdicts (True: right)."""
    right = np.asarray(right, dtype=bool)
    sims = np.where(right[:, None], [0.9, 0.5, 0.6], [0.5, 0.9, 0.4])
    pl.DataFrame({"id": pl.Series(np.arange(len(right)), dtype=pl.UInt64),
                  "sim_s_splus": sims[:, 0], "sim_s_sstar": sims[:, 1], "sim_splus_sstar": sims[:, 2],
                  "correct": pl.Series(right.tolist(), dtype=pl.Boolean),
                  "subject": pl.Series([None] * len(right), dtype=pl.String),
                  "verb": pl.Series([None] * len(right), dtype=pl.String),
                  "original": list(originals)}).write_parquet(path)
    return str(path)


def test_triplets_sharing_an_original_resample_the_originals(tmp_path, log):
    """6 triplets from 3 originals (A: 3 triplets, B: 2, C: 1). The cluster bootstrap draws
    originals, each with all its triplets: replicate accuracy = (draws . right per original) /
    (draws . triplets per original), from the model-free stream; n_units counts originals."""
    originals = ["A", "A", "A", "B", "B", "C"]
    right = [True, True, False, True, False, False]
    path = shared_original_scores(tmp_path / "s.parquet", originals, right)
    reps: list = []
    row = ts.aggregate([{"dataset": "fixed_point_reorder", "model": "m", "scores": path, "scoring": "strict"}],
                       300, 4, log, reps).row(0, named=True)
    assert (row["unit"], row["n_units"], row["n"], row["accuracy"]) == ("originals", 3, 6, 0.5)
    draws = resample_counts(paired_rng(4, "triplets", "fixed_point_reorder", "accuracy"), 300, 3)  # A, B, C
    want = (draws @ [2, 1, 0]) / (draws @ [3, 2, 1])
    got = next(np.array(r["value"]) for r in reps if r["statistic"][0] == "accuracy")
    assert np.allclose(got, want)
    # the share's interval: Wilson's over the 3 originals, the independent units
    from workflow_scripts.paired_statistics import wilson_interval
    assert (row["accuracy_ci_low"], row["accuracy_ci_high"]) == pytest.approx(wilson_interval(0.5, 3))
    # `items` keeps the triplet bootstrap
    items = ts.aggregate([{"dataset": "fixed_point_reorder", "model": "m", "scores": path, "scoring": "strict"}],
                         300, 4, log, bootstrap_unit="items").row(0, named=True)
    assert (items["unit"], items["n_units"]) == ("triplets", 6)


def test_where_no_original_repeats_nothing_changes(tmp_path, log):
    """Each triplet its own original: the same row and replicates as scores without the column."""
    path, sims, correct = random_scores(tmp_path / "r.parquet", 40, seed=7, undefined=2)
    with_originals = tmp_path / "o.parquet"
    pl.read_parquet(path).with_columns(pl.Series("original", [f"s{i}" for i in range(40)])).write_parquet(
        with_originals)
    runs = []
    for p in (path, str(with_originals)):
        reps: list = []
        table = ts.aggregate([{"dataset": "d", "model": "m", "scores": p, "scoring": "strict"}], 100, 2, log, reps)
        runs.append((table, pl.concat([pl.DataFrame(r) for r in reps])))
    assert runs[0][0].equals(runs[1][0]) and runs[0][1].equals(runs[1][1])
    assert runs[1][0]["unit"][0] == "triplets"


def test_an_accuracy_of_1_over_shared_originals_takes_its_interval_over_originals(tmp_path, log):
    """All 6 triplets right, from 3 originals: Wilson at 1 over 3, [3/(3 + z^2), 1] = [0.4385, 1],
    not over 6 ([0.6097, 1]): the originals are the independent units."""
    path = shared_original_scores(tmp_path / "s.parquet", ["A", "A", "A", "B", "B", "C"], [True] * 6)
    row = ts.aggregate([{"dataset": "d", "model": "m", "scores": path, "scoring": "strict"}], 100, 4,
                       log).row(0, named=True)
    assert row["accuracy_ci_method"] == "wilson"
    assert row["accuracy_ci_low"] == pytest.approx(3 / (3 + 1.959963984540054 ** 2)) and row["accuracy_ci_high"] == 1.0


def test_the_first_screen_counts_originals(tmp_path, log):
    from workflow_scripts.triplets.probe import accuracy_headlines
    path = shared_original_scores(tmp_path / "s.parquet", ["A", "A", "B"], [True, False, True])
    table = ts.aggregate([{"dataset": "fixed_point_reorder", "model": "m", "scores": path, "scoring": "strict"}],
                         50, 3, log)
    row = accuracy_headlines(table, {})[0]
    assert (row["n"], row["unit"]) == (2, "originals")
