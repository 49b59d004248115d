"""Montague probe, scores: the three tests on hand-computed distances (ties as the reference:
<= for single phrases, strict < for the others), no padding filter (a distance >= 1 counts),
zero-norm vectors undefined and counted, same-type pair keys at 0.5 by symmetry, pooled shares
vs the reference's mean of per-noun means, and the two-way bootstrap against an explicit loop."""
import json

import numpy as np
import polars as pl
import pytest

from workflow_scripts.bootstrap import bootstrap_rng, resample_counts
from workflow_scripts.jobs import make_job
from workflow_scripts.montague.phrases import build_word_lists, generate_phrases, run_montague_phrases, strings_to_embed
from workflow_scripts.montague.scores import (pair_cubes, pair_items, pair_shares, reference_padding_verdicts,
                                              run_montague_score, score, shares, single_verdicts, strict_less)
from workflow_scripts.montague.tables import aggregate, run_montague_aggregate
from workflow_scripts.texts import text_keys
from workflow_scripts.vector_store import spec_digest, write_partition

NAN = np.nan
SPEC = {"family": "hashing", "dim": 2}  # any spec: the stores below are written by hand


def make_store(directory, vectors: dict, model="m", scope="montague.t"):
    """A one-partition store holding the given text -> vector."""
    texts = list(vectors)
    manifest = {"model": model, "scope": scope, "partition": 0, "partitions": 1, "family": "hashing",
                "spec_digest": spec_digest(SPEC)}
    write_partition(directory, text_keys(texts), manifest, np.array([vectors[t] for t in texts], dtype=np.float32))
    return [str(directory)]


def phrases_of(adjectives: dict, nouns: list):
    words = build_word_lists(adjectives, nouns)
    return words, generate_phrases("t", words)


# ---- test 1 -----------------------------------------------------------------------------------

def test_single_phrase_verdicts_by_hand():
    d_phrase = np.array([[0.2, 0.3, NAN],       # AN: max 0.3 <= d(a, n) 0.3: a tie passes
                         [0.2, 0.31, NAN],      # AN: 0.31 > 0.3 fails
                         [0.1, 0.2, 0.3],       # AAN: 0.3 <= min(0.3, 0.4, 0.5)
                         [0.1, 0.2, 0.3],       # AAN: 0.3 > 0.29
                         [0.1, NAN, 0.3],       # AAN: a zero-norm vector: undefined
                         [0.1, 0.2, NAN]])      # AN with its unknown word flagged
    d_split = np.array([[0.3, NAN, NAN], [0.3, NAN, NAN], [0.3, 0.4, 0.5], [0.4, 0.29, 0.5],
                        [0.5, 0.5, 0.5], [0.9, NAN, NAN]])
    n_words = np.array([2, 2, 3, 3, 3, 2])
    known = np.array([True, True, True, True, True, False])
    passed, defined = single_verdicts(d_phrase, d_split, n_words, known)
    assert defined.tolist() == [True, True, True, True, False, False]
    assert passed.tolist() == [True, False, True, False, False, False]


def test_strict_tests_fail_on_ties_and_are_undefined_on_nan():
    passed, defined = strict_less([0.1, 0.2, 0.3, NAN], [0.2, 0.2, 0.1, 0.5])
    assert passed.tolist() == [True, False, False, False]
    assert defined.tolist() == [True, True, True, False]


def test_distances_of_at_least_1_count_and_the_reference_filter_would_pass_the_phrase(tmp_path, log):
    """cos(AN, A) < 0: d = 1.71 >= 1. The reference drops it as padding (with d(A, N) = 1), leaving
    nothing to compare, and passes the phrase; here it fails."""
    words, phrases = phrases_of({"t": ["a"]}, ["n"])
    stores = make_store(tmp_path / "store", {"a": [1, 0], "n": [0, 1], "a n": [-1, -1]})
    score_dir = tmp_path / "out"
    summary = score(str(_write(phrases, tmp_path)), stores, "t", "m", SPEC, 50, 1, "nouns_and_adjectives",
                    str(score_dir), log)
    dist = pl.read_parquet(score_dir / "distances.parquet").row(0, named=True)
    assert dist["d_phrase_1"] == pytest.approx(1 + 1 / np.sqrt(2)) and dist["d_split_1"] == pytest.approx(1.0)
    assert dist["single_pass"] is False
    assert dist["nonsubsective_pass"] is False  # d(AN, A) = d(AN, N): a tie fails
    assert summary["distances_at_least_1"] == 3
    d_phrase = np.array([[dist["d_phrase_1"], dist["d_phrase_2"], NAN]])
    d_split = np.array([[dist["d_split_1"], NAN, NAN]])
    assert reference_padding_verdicts(d_phrase, d_split, np.array([2])).tolist() == [True]


def test_the_padding_defect_only_turns_failures_into_passes():
    rng = np.random.default_rng(0)
    d_phrase, d_split = rng.uniform(0, 2, (5000, 3)), rng.uniform(0, 2, (5000, 3))
    d_phrase[rng.random((5000, 3)) < 0.05] = NAN
    n_words = rng.choice([2, 3], 5000)
    ours, defined = single_verdicts(d_phrase, d_split, n_words)
    ref = reference_padding_verdicts(d_phrase, d_split, n_words)
    assert not (ours & ~ref).any()       # never a pass turned into a failure
    assert (ref & ~ours & defined).any()  # failures turned into passes


# ---- zero-norm vectors: unknown words --------------------------------------------------------

def test_an_unknown_word_makes_its_comparisons_undefined_and_counted(tmp_path, log):
    """A static model that does not know `cat`: its vector is zero, the mean vectors of its phrases
    are not. Every comparison involving it is undefined, never a pass."""
    words, phrases = phrases_of({"t1": ["red"], "t2": ["big"]}, ["dog", "cat", "cow"])
    vec = {"red": np.array([1.0, 0.2]), "big": np.array([0.1, 1.0]), "dog": np.array([0.5, 0.5]),
           "cat": np.zeros(2), "cow": np.array([0.9, -0.3])}
    vectors = {s: np.mean([vec[w] for w in s.split()], axis=0) for s in set(strings_to_embed(words, phrases))}
    stores = make_store(tmp_path / "store", vectors)
    out = tmp_path / "out"
    summary = score(str(_write(phrases, tmp_path)), stores, "t", "m", SPEC, 20, 1, "nouns_and_adjectives",
                    str(out), log)
    assert summary["unknown_nouns"] == ["cat"] and summary["unknown_adjectives"] == []
    assert summary["zero_norm_strings"] == 1
    dist = pl.read_parquet(out / "distances.parquet")
    with_cat = dist.filter(pl.col("phrase").str.ends_with(" cat"))
    assert with_cat.height == 2 + 2 and with_cat["single_pass"].is_null().all()
    assert dist.filter(~pl.col("phrase").str.ends_with(" cat"))["single_pass"].is_not_null().all()
    table = pl.read_parquet(out / "shares.parquet")
    pair = table.filter(pl.col("test") == "pair")
    # 3 noun pairs, 2 with cat; (red, big) and (big, red): 2 defined of 6
    assert pair["n"].sum() == 2 and pair["n_undefined"].sum() == 4
    single_an = table.filter((pl.col("test") == "single") & (pl.col("kind") == "AN"))
    assert single_an["n"].to_list() == [2, 2] and single_an["n_undefined"].to_list() == [1, 1]
    assert summary["undefined"] == {"single": 4, "nonsubsective": 2, "pair": 4}


# ---- test 2 and the aggregations ------------------------------------------------------------

def _pairs_frame(d: np.ndarray, n_nouns: int) -> pl.DataFrame:
    """pair_distances rows for distances d[adjective, noun pair] (pairs in (i < j) order)."""
    pairs = [(i, j) for i in range(n_nouns) for j in range(i + 1, n_nouns)]
    rows = [{"adj_idx": a, "noun_idx_1": i, "noun_idx_2": j, "distance": float(d[a, p])}
            for a in range(d.shape[0]) for p, (i, j) in enumerate(pairs)]
    return pl.DataFrame(rows)


def test_same_type_pair_keys_are_half_by_symmetry_and_ties_fail():
    rng = np.random.default_rng(3)
    n_adj, n_nouns = 6, 5
    d = rng.uniform(0, 1.5, (n_adj, 10))
    ok = np.ones(n_adj, bool), np.ones(n_nouns, bool)
    items = pair_items(_pairs_frame(d, n_nouns), n_adj, *ok)
    assert len(items["passed"]) == 6 * 5 * 10
    res = shares(np.column_stack([items["n1"], items["n2"]]), np.column_stack([items["a1"], items["a2"]]),
                 np.zeros(len(items["a1"]), np.int64), items["passed"], items["defined"], 1, n_nouns, n_adj, 200, 5,
                 ("t",), replicates_out=(reps := {}))
    assert res[0]["consistency"] == 0.5 and res[0]["n"] == 300
    # every replicate weighs (a1, a2) and (a2, a1) alike: every replicate is the point
    assert set(reps["consistency"][:, 0]) == {0.5}
    d[1] = d[0]  # adjectives 0 and 1 tie on every noun pair: both orders fail
    items = pair_items(_pairs_frame(d, n_nouns), n_adj, *ok)
    res = shares(np.column_stack([items["n1"], items["n2"]]), np.column_stack([items["a1"], items["a2"]]),
                 np.zeros(len(items["a1"]), np.int64), items["passed"], items["defined"], 1, n_nouns, n_adj, 0, 5,
                 ("t",))
    assert res[0]["consistency"] == pytest.approx((300 - 20) / 2 / 300)


def test_pooled_share_and_the_references_mean_of_per_noun_means_differ_by_hand():
    """Nouns 0, 1, 2 -> pairs (0,1), (0,2) under noun 0 and (1,2) under noun 1. Adjectives x (type A)
    and y (type B): d(x n, x n') < d(y n, y n') on (0,1) and (0,2), not on (1,2).
    Key (A, B): 2 of 3 pass (pooled 0.667); per noun 1.0 and 0.0 -> mean 0.5."""
    d = np.array([[0.1, 0.1, 0.9],    # x
                  [0.5, 0.5, 0.5]])   # y
    items = pair_items(_pairs_frame(d, 3), 2, np.ones(2, bool), np.ones(3, bool))
    key = items["a1"] * 2 + items["a2"]  # types: x -> A (0), y -> B (1)
    res = shares(np.column_stack([items["n1"], items["n2"]]), np.column_stack([items["a1"], items["a2"]]), key,
                 items["passed"], items["defined"], 4, 3, 2, 0, 1, ("t",), group=items["n1"])
    ab, ba = res[1], res[2]
    assert ab["consistency"] == pytest.approx(2 / 3) and ab["mean_of_noun_means"] == pytest.approx(0.5)
    assert ba["consistency"] == pytest.approx(1 / 3) and ba["mean_of_noun_means"] == pytest.approx(0.5)
    assert np.isnan(res[0]["consistency"]) and res[0]["n"] == 0  # (A, A): no pair of two A adjectives


def test_two_way_bootstrap_matches_an_explicit_loop():
    rng = np.random.default_rng(7)
    n_nouns, n_adjs, items = 4, 5, 200
    nouns = rng.integers(0, n_nouns, items)
    adjs = np.column_stack([rng.integers(0, n_adjs, items), np.where(rng.random(items) < 0.5, -1,
                                                                     rng.integers(0, n_adjs, items))])
    key = rng.integers(0, 2, items)
    passed, defined = rng.random(items) < 0.6, rng.random(items) < 0.9
    b, seed, names = 300, 11, ("montague", "d", "m", "single")
    res = shares(nouns, adjs, key, passed, defined, 2, n_nouns, n_adjs, b, seed, names, replicates_out=(out := {}))
    got = out["consistency"]
    gen = bootstrap_rng(seed, *names)
    cn, ca = resample_counts(gen, b, n_nouns), resample_counts(gen, b, n_adjs)
    for k in range(2):
        reps = []
        for r in range(b):
            num = den = 0.0
            for i in range(items):
                if key[i] != k or not defined[i]:
                    continue
                w = cn[r, nouns[i]] * ca[r, adjs[i, 0]] * (ca[r, adjs[i, 1]] if adjs[i, 1] >= 0 else 1)
                num += w * passed[i]
                den += w
            reps.append(num / den if den else np.nan)
        sel = (key == k) & defined
        assert res[k]["consistency"] == pytest.approx((passed & sel).sum() / sel.sum())
        assert got[:, k] == pytest.approx(np.array(reps), nan_ok=True)
        assert res[k]["ci_low"] <= res[k]["consistency"] <= res[k]["ci_high"]
    again = shares(nouns, adjs, key, passed, defined, 2, n_nouns, n_adjs, b, seed, names)
    assert again == res  # seeded: reruns are identical
    nouns_only = shares(nouns, adjs, key, passed, defined, 2, n_nouns, n_adjs, b, seed, names, unit="nouns",
                        replicates_out=(only := {}))
    assert nouns_only[0]["consistency"] == res[0]["consistency"]
    assert not np.allclose(only["consistency"][:, 0], got[:, 0])  # other draws: nouns alone
    # the interval is Wilson's over the units and needs no B
    none = shares(nouns, adjs, key, passed, defined, 2, n_nouns, n_adjs, 0, seed, names)
    assert (none[0]["ci_low"], none[0]["ci_high"]) == (res[0]["ci_low"], res[0]["ci_high"])
    with pytest.raises(ValueError, match="bootstrap unit"):
        shares(nouns, adjs, key, passed, defined, 2, n_nouns, n_adjs, b, seed, names, unit="phrases")


@pytest.mark.parametrize("unit", ["nouns_and_adjectives", "nouns", "adjectives"])
def test_factorised_pair_shares_equal_the_item_by_item_ones(unit):
    """pair_shares (test 2 summed type by type) gives exactly what `shares` gives item by item,
    intervals and the reference's per-noun means included, with undefined comparisons and ties."""
    rng = np.random.default_rng(5)
    n_adj, n_nouns = 7, 5
    pairs = _pairs_frame(np.round(rng.uniform(0, 1.2, (n_adj, 10)), 1), n_nouns)  # rounding: some ties
    known_adj, known_noun = np.ones(n_adj, bool), np.array([True, True, False, True, True])
    adj_type = np.array([0, 0, 1, 1, 1, 2, 2])
    items = pair_items(pairs, n_adj, known_adj, known_noun)
    key = adj_type[items["a1"]] * 3 + adj_type[items["a2"]]
    names = ("montague", "d", "m", "pair")
    slow = shares(np.column_stack([items["n1"], items["n2"]]), np.column_stack([items["a1"], items["a2"]]), key,
                  items["passed"], items["defined"], 9, n_nouns, n_adj, 120, 4, names, unit, group=items["n1"])
    passed, defined, n1, n2 = pair_cubes(pairs, n_adj, known_adj, known_noun)
    fast = pair_shares(passed, defined, adj_type, 3, n1, n2, n_nouns, 120, 4, names, unit)
    assert len(fast) == len(slow) == 9
    for f, s in zip(fast, slow):
        assert f.keys() == s.keys()
        for k in f:
            assert f[k] == pytest.approx(s[k], nan_ok=True, abs=1e-12), k
    assert sum(r["n_undefined"] for r in fast) == 7 * 6 * 4  # every pair with noun 2


# ---- end to end: score and aggregate -----------------------------------------------------------

def _write(phrases: pl.DataFrame, tmp_path):
    path = tmp_path / "phrases.parquet"
    phrases.write_parquet(path)
    return path


def test_score_and_aggregate_write_every_output(tmp_path, log):
    words, phrases = phrases_of({"colour": ["red", "blue"], "fake": ["fake", "toy"]}, ["dog", "cat", "car"])
    rng = np.random.default_rng(1)
    word_vec = {w: rng.normal(size=8) for w in words.adjectives + words.nouns}
    # a mean-pooling model: every phrase vector is the mean of its words'
    vectors = {s: np.mean([word_vec[w] for w in s.split()], axis=0) for s in set(strings_to_embed(words, phrases))}
    entries = []
    for model in ("m1", "m2"):
        stores = make_store(tmp_path / model / "store", vectors, model=model)
        out = tmp_path / model / "out"
        score(str(_write(phrases, tmp_path)), stores, "t", model, SPEC, 100, 3, "nouns_and_adjectives", str(out), log)
        entries.append({"dataset": "t", "model": model, "shares": str(out / "shares.parquet")})
        dist = pl.read_parquet(out / "distances.parquet")
        assert dist.height == phrases.height == 3 * (4 + 12)
        assert dist.filter(pl.col("kind") == "AAN").select("d_split_1", "d_split_2", "d_split_3").null_count().sum_horizontal()[0] == 0
        # a mean of two vectors lies between them: every AN passes test 1 under mean pooling
        assert dist.filter(pl.col("kind") == "AN")["single_pass"].all()
        assert pl.read_parquet(out / "pair_distances.parquet").height == 4 * 3
        assert json.loads((out / "summary.json").read_text())["bootstrap"]["resampled"] == "nouns_and_adjectives"
    table = aggregate(entries, str(tmp_path / "tables"), str(tmp_path / "plots"), ["t"], ["m1", "m2"], log)
    single = pl.read_csv(tmp_path / "tables" / "montague_single.csv")
    assert single.columns[:7] == ["dataset", "model", "key", "n", "consistency", "ci_low", "ci_high"]
    assert single.height == 2 * (2 + 4) and set(single["kind"]) == {"AN", "AAN"}
    pair = pl.read_csv(tmp_path / "tables" / "montague_pair.csv")
    assert pair.height == 2 * 4 and "mean_of_noun_means" in pair.columns
    same = pair.filter(pl.col("type1") == pl.col("type2"))
    assert (same["consistency"] == 0.5).all()
    nonsub = pl.read_csv(tmp_path / "tables" / "montague_nonsubsective.csv")
    assert nonsub["key"].to_list() == ["colour", "fake"] * 2
    assert set(table["resampled"]) == {"nouns_and_adjectives"}
    md = (tmp_path / "tables" / "montague_tables.md").read_text()
    assert "Table 2" in md and "Table 5" in md and "| m1 |" in md and "colour|fake" not in md
    assert (tmp_path / "plots" / "t" / "m1.png").stat().st_size > 1000
    assert (tmp_path / "plots" / "t" / "m2.svg").exists()


def test_the_rules_jobs_write_where_the_rules_declare(tmp_path):
    """montague_phrases -> montague_score -> montague_aggregate as the rules run them: each job's
    files are its declared outputs (the score folder is the outputs' folder, the plots two levels
    above a heat map), and the word list's types keep their config order."""
    spec = {"adjectives": {"fake": ["fake", "toy"], "colour": ["red", "blue"]}, "nouns": ["dog", "cat"]}
    res = tmp_path / "results"
    phrases = res / "montague" / "t" / "phrases.parquet"
    run_montague_phrases(make_job(
        output={"phrases": str(phrases), "texts": [str(res / "texts" / "part-000.parquet")],
                "report": str(res / "reports" / "t.json")},
        params={"spec": spec}, wildcards={"dataset": "t"}))
    report = json.loads((res / "reports" / "t.json").read_text())
    assert report["phrases"]["total"] == 2 * 4 + 2 * 12
    assert pl.read_parquet(phrases)["type1"].unique(maintain_order=True).to_list() == ["fake", "colour"]
    strings = pl.read_parquet(res / "texts" / "part-000.parquet")["text"].to_list()
    rng = np.random.default_rng(4)
    stores = make_store(tmp_path / "store", {s: rng.normal(size=4) for s in strings})
    out = res / "montague" / "t" / "m"
    names = ("distances", "pair_distances", "shares", "replicates")
    run_montague_score(make_job(
        input={"phrases": str(phrases), "stores": stores},
        output={**{n if n != "pair_distances" else "pairs": str(out / f"{n}.parquet") for n in names},
                "summary": str(out / "summary.json")},
        params={"spec": SPEC, "bootstrap_b": 20, "unit": "nouns_and_adjectives", "seed": 1},
        wildcards={"dataset": "t", "model": "m"}))
    assert sorted(p.name for p in out.iterdir()) == sorted([f"{n}.parquet" for n in names] + ["summary.json"])
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["model"], summary["bootstrap"]["replicates"], summary["bootstrap"]["seed"]) == ("m", 20, 1)
    tables, plots = res / "tables", res / "plots" / "montague" / "t"
    run_montague_aggregate(make_job(
        input=[str(out / "shares.parquet")],
        output={"tables": [str(tables / f"montague_{t}.csv") for t in ("single", "pair", "nonsubsective")],
                "layout": str(tables / "montague_tables.md"),
                "plots": [str(plots / "m.png"), str(plots / "m.svg")]},
        params={"entries": [{"dataset": "t", "model": "m", "shares": str(out / "shares.parquet")}],
                "datasets": ["t"], "models": ["m"]}))
    assert sorted(p.name for p in tables.iterdir()) == ["montague_nonsubsective.csv", "montague_pair.csv",
                                                          "montague_single.csv", "montague_tables.md"]
    assert sorted(p.name for p in plots.iterdir()) == ["m.png", "m.svg"]
    assert pl.read_csv(tables / "montague_nonsubsective.csv")["key"].to_list() == ["fake", "colour"]


def test_identical_copies_of_a_model_get_identical_intervals_and_replicates(tmp_path, log):
    """Paired resampling (issue 26): the two-way bootstrap's stream names no model and draws over
    the dataset's word lists, so one model's vectors under two names give identical shares,
    intervals and replicates (a stream seeded by the model name gave different ones)."""
    words, phrases = phrases_of({"colour": ["red", "blue", "green"], "fake": ["fake", "toy", "mock"]},
                                ["dog", "cat", "car", "tree"])
    rng = np.random.default_rng(2)
    vectors = {s: rng.normal(size=6) for s in set(strings_to_embed(words, phrases))}  # no structure: shares vary
    path = str(_write(phrases, tmp_path))
    tables, reps = {}, {}
    for model in ("minilm", "minilm_copy"):
        out = tmp_path / model
        score(path, make_store(out / "store", vectors, model=model), "t", model, SPEC, 200, 3,
              "nouns_and_adjectives", str(out), log)
        tables[model] = pl.read_parquet(out / "shares.parquet")
        reps[model] = pl.read_parquet(out / "replicates.parquet")
    a, b = (tables[m].drop("model") for m in ("minilm", "minilm_copy"))
    assert a.equals(b) and (a["ci_low"] < a["ci_high"]).any()
    ra, rb = (reps[m] for m in ("minilm", "minilm_copy"))
    assert ra.drop("model").equals(rb.drop("model")) and set(rb["model"]) == {"minilm_copy"}
    # every share row's consistency has its B replicates: single AN (2 keys), AAN (4), nonsubsective (2), pair (4)
    assert ra.group_by("statistic").len()["len"].unique().to_list() == [200]
    assert ra["statistic"].n_unique() == 2 + 4 + 2 + 4
    assert {"pair/pair/colour|fake", "single/AAN/colour|fake", "nonsubsective/AN/fake"} <= set(ra["statistic"])
    row = a.filter((pl.col("test") == "single") & (pl.col("kind") == "AN") & (pl.col("key") == "colour")).row(0, named=True)
    values = ra.filter(pl.col("statistic") == "single/AN/colour").sort("replicate")
    assert values["point"][0] == row["consistency"] and values["units"][0] == row["n_units"]


# ---- shares at 0 or 1: the exact interval over a conservative effective n (issue 32, point 5) ------

def crossed_items(n_nouns=6, n_adjs=15):
    """Every adjective with every noun, one AN item each, one key."""
    nouns, adjs = np.repeat(np.arange(n_nouns), n_adjs), np.tile(np.arange(n_adjs), n_nouns)
    return nouns, adjs, np.zeros(len(nouns), np.int64)


def test_a_share_of_1_over_6_nouns_and_15_adjectives_is_wilson_over_6_units():
    """All 90 phrases pass: the bootstrap's replicates are all 1. The phrases cross 6 nouns and 15
    adjectives, so the independent units are n = min(6, 15) = 6 (a crossed share's variance is at
    most p(1 - p)/6) and the interval is Wilson's at 1 over 6: [6/(6 + z^2), 1] = [0.6097, 1]. None
    passing: [0, 0.3903]. Resampling adjectives only: n = 15. A share inside gets Wilson's too, over
    the same n: one method, monotone in the share (issue 43, point 5)."""
    from workflow_scripts.paired_statistics import wilson_interval
    z2 = 1.959963984540054 ** 2
    nouns, adjs, key = crossed_items()
    names = ("montague", "d", "single")
    everything = np.ones(len(key), bool)
    [row] = shares(nouns, adjs, key, everything, everything, 1, 6, 15, 200, 3, names)
    assert row["consistency"] == 1.0 and row["n"] == 90
    assert row["ci_low"] == pytest.approx(6 / (6 + z2)) and row["ci_high"] == 1.0
    assert (row["ci_method"], row["n_units"]) == ("wilson_min_factor", 6)
    [none] = shares(nouns, adjs, key, ~everything, everything, 1, 6, 15, 200, 3, names)
    assert (none["ci_low"], none["ci_high"], none["n_units"]) == (0.0, pytest.approx(z2 / (6 + z2)), 6)
    [adjectives] = shares(nouns, adjs, key, everything, everything, 1, 6, 15, 200, 3, names, unit="adjectives")
    assert adjectives["ci_low"] == pytest.approx(15 / (15 + z2)) and adjectives["n_units"] == 15
    # only the defined items count: with nouns 0-2 undefined, n = min(3, 15) = 3
    [fewer] = shares(nouns, adjs, key, everything, nouns >= 3, 1, 6, 15, 200, 3, names)
    assert fewer["n_units"] == 3
    [inside] = shares(nouns, adjs, key, adjs < 14, everything, 1, 6, 15, 200, 3, names)
    assert (inside["ci_low"], inside["ci_high"]) == pytest.approx(wilson_interval(14 / 15, 6))
    assert inside["ci_low"] < row["ci_low"]  # monotone: a lower share never gets a narrower interval


def test_an_aan_key_counts_its_adjective_roles_apart():
    """Fails on e572c58: an AAN key (outer, inner) of 5 outer and 5 inner adjectives over 12 nouns
    pooled the roles into 10 adjectives; each role is a factor of its own, so n = 5."""
    rng = np.random.default_rng(0)
    outer, inner = np.arange(5), np.arange(5, 10)
    items = [(n, a, b) for n in range(12) for a in outer for b in inner]
    nouns = np.array([i[0] for i in items])
    adjs = np.array([[i[1], i[2]] for i in items])
    passed = rng.random(len(items)) < 0.9
    [row] = shares(nouns, adjs, np.zeros(len(items), np.int64), passed, np.ones(len(items), bool), 1, 12, 10,
                   50, 1, ("montague", "d", "single"))
    assert row["n_units"] == 5


def test_pair_shares_count_each_roles_adjectives():
    """Test 2 with adjectives of types [0, 0, 1] and 4 nouns (6 noun pairs). Key (0, 1): a1 in {0, 1}
    (2 adjectives), a2 = 2 (1): n = min(2, 1, 4) = 1, not the 3 adjectives pooled; key (0, 0): 2 and
    2, n = 2. `shares` item by item says the same."""
    adj_type = np.array([0, 0, 1])
    n1, n2 = (np.array(x) for x in zip(*[(i, j) for i in range(4) for j in range(i + 1, 4)]))
    defined = np.broadcast_to(~np.eye(3, dtype=bool)[:, :, None], (3, 3, len(n1))).copy()
    passed = defined & ((adj_type[:, None] == 0) & (adj_type[None, :] == 1))[:, :, None]
    rows = pair_shares(passed, defined, adj_type, 2, n1, n2, 4, 100, 2, ("montague", "d", "pair"))
    zero_one, zero_zero = rows[0 * 2 + 1], rows[0]
    assert zero_one["consistency"] == 1.0 and zero_one["n_units"] == 1
    assert zero_zero["consistency"] == 0.0 and zero_zero["n_units"] == 2
    assert zero_zero["mean_of_noun_means_ci_high"] == zero_zero["ci_high"]
    a1, a2 = np.nonzero(~np.eye(3, dtype=bool))
    key = adj_type[np.repeat(a1, len(n1))] * 2 + adj_type[np.repeat(a2, len(n1))]
    slow = shares(np.column_stack([np.tile(n1, len(a1)), np.tile(n2, len(a1))]),
                  np.column_stack([np.repeat(a1, len(n1)), np.repeat(a2, len(n1))]), key,
                  passed[a1, a2].ravel(), defined[a1, a2].ravel(), 4, 4, 3, 100, 2, ("montague", "d", "pair"),
                  group=np.tile(n1, len(a1)))
    for fast, item in zip(rows, slow):
        assert (fast["ci_method"], fast["n_units"]) == (item["ci_method"], item["n_units"])


def test_the_first_screen_counts_the_independent_units_and_marks_n():
    """Fails on e572c58, where n counted the phrases (90), so N never showed: a share over 6 nouns x
    15 adjectives rests on 6 units, below report.min_n, and its interval has width (no Z)."""
    from workflow_scripts.report import overview as O
    from workflow_scripts.montague.probe import consistency_headlines
    nouns, adjs, key = crossed_items()
    everything = np.ones(len(key), bool)
    [row] = shares(nouns, adjs, key, everything, everything, 1, 6, 15, 200, 3, ("montague", "d", "single"))
    frame = pl.DataFrame([{"dataset": "d", "model": "m", "test": "nonsubsective", "kind": "AN", "key": "privative",
                           "type1": "privative", "type2": None, **row, "resampled": "nouns_and_adjectives",
                           "bootstrap_b": 200}])
    [headline] = consistency_headlines("nonsubsective", "privative", kind="AN")(frame, {})
    assert headline["n"] == 6
    marks = O.marks(headline["value"], headline["ci_low"], headline["ci_high"], headline["n"], (0.0, 1.0), 100)
    assert marks == "NC"
