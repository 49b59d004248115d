"""The Montague probe in the workflow (a scratch directory): one scoring job per (word list, model),
never one for all models; model limits (`probes`, `datasets`) hold; a word-vector model from a tiny
file written here (one noun unknown: counted as undefined); adding a model adds only its jobs.
Runs Snakemake a few times: about a minute on 2 idle cores."""
import copy
import gzip
import hashlib
import math

import polars as pl
import pytest

from workflow_runner import planned_jobs, snakemake, write_config

TARGET = "results/tables/montague_single.csv"
VECTORS = {"red": [1.0, 0.1, 0.0, 0.2], "old": [0.2, 1.0, 0.3, 0.0], "fake": [0.0, 0.3, 1.0, 0.1],
           "dog": [0.5, 0.2, 0.1, 0.9], "king": [0.1, 0.6, 0.2, 0.8]}  # no `law`: an unknown noun


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("montague")
    (base / "vectors.txt").write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in VECTORS.items()))
    (base / "mine.csv").write_text("Colour,SYN Colour,Plain,Nouns\nred,crimson,alleged,dog\n,,former,king\n")
    (base / "bitext.txt").write_text("the cat sleeps\tde kat slaapt\nwe walk home\twij lopen naar huis\n")
    config = {
        "seed": 5, "embedding_partitions": 1, "results": "results",
        "sources": {"mini": {"format": "bitext", "path": str(base / "bitext.txt"), "languages": ["en", "nl"]}},
        "corpora": {"mini_en": {"source": "mini", "language": "en"}},
        "models": {"tfidf": {"family": "tfidf"},
                   "wv": {"family": "word_vectors", "path": str(base / "vectors.txt"), "probes": ["montague"]},
                   "wv_lists": {"family": "word_vectors", "path": str(base / "vectors.txt"), "datasets": ["lists"],
                                "probes": ["montague"]}},
        "csc": {"bootstrap_b": 10, "perturb": {"grammatical_negation": {"enabled": False}}},
        "montague": {"datasets": {"lists": {"adjectives": {"colour": ["red"], "age": ["old"], "privative": ["fake"]},
                                            "nouns": ["dog", "king", "law"]},
                                  "csv": {"file": str(base / "mine.csv")}},
                     "bootstrap_b": 50},
    }
    directory = base / "run"
    directory.mkdir()
    path = write_config(directory, config)
    jobs = planned_jobs(directory, path)  # everything, CSC and report included
    snakemake(directory, path, TARGET)
    return {"dir": directory, "config": config, "jobs": jobs, "base": base}


def test_one_scoring_job_per_word_list_and_model(run):
    scored = sorted((wc["dataset"], wc["model"]) for rule, wc in run["jobs"] if rule == "montague_score")
    assert scored == [("csv", "tfidf"), ("csv", "wv"), ("lists", "tfidf"), ("lists", "wv"), ("lists", "wv_lists")]
    embeds = {(wc["model"], wc["scope"]) for rule, wc in run["jobs"] if rule == "embed"}
    assert {m for m, s in embeds if m.startswith("wv")} == {"wv", "wv_lists"}
    assert not any(s == "mini_en" for m, s in embeds if m.startswith("wv"))  # limited to the probe
    assert ("wv_lists", "montague.csv") not in embeds  # limited to its dataset
    assert {s for m, s in embeds if s.startswith("montague.")} == {"montague.lists", "montague.csv"}
    assert sum(rule == "montague_aggregate" for rule, _ in run["jobs"]) == 1
    assert "montague_aggregate" in {rule for rule, _ in run["jobs"]}


def test_outputs_and_the_unknown_word(run):
    res = run["dir"] / "results"
    phrases = pl.read_parquet(res / "montague" / "lists" / "phrases.parquet")
    assert phrases.height == 3 * (3 + 6)
    single = pl.read_csv(res / "tables" / "montague_single.csv")
    assert set(zip(single["dataset"], single["model"])) == {("lists", "tfidf"), ("lists", "wv"), ("lists", "wv_lists"),
                                                            ("csv", "tfidf"), ("csv", "wv")}
    # `law` is not in the vector file: every phrase with it is undefined for wv, never for tf-idf
    wv = single.filter((pl.col("dataset") == "lists") & (pl.col("model") == "wv") & (pl.col("kind") == "AN"))
    assert wv["n"].to_list() == [2, 2, 2] and wv["n_undefined"].to_list() == [1, 1, 1]
    tf = single.filter((pl.col("dataset") == "lists") & (pl.col("model") == "tfidf") & (pl.col("kind") == "AN"))
    assert tf["n_undefined"].to_list() == [0, 0, 0]
    dist = pl.read_parquet(res / "montague" / "lists" / "wv" / "distances.parquet")
    assert dist.filter(pl.col("phrase").str.ends_with("law"))["single_pass"].is_null().all()
    pair = pl.read_csv(res / "tables" / "montague_pair.csv")
    lists = pair.filter(pl.col("dataset") == "lists")
    assert lists.filter((pl.col("type1") == pl.col("type2")))["n"].sum() == 0  # one adjective per type
    same = pair.filter((pl.col("dataset") == "csv") & (pl.col("key") == "plain|plain"))
    # tf-idf: `alleged` and `former` (and `dog`, `king`) have equal idf, so d(alleged dog, alleged king)
    # = d(former dog, former king): a tie, and both orders fail (strict <), not 0.5
    assert same.select("model", "n", "consistency").rows()[0] == ("tfidf", 2, 0.0)
    assert same["n"][1] == 0 and math.isnan(same["consistency"][1])
    assert same["n_undefined"].to_list() == [0, 2]  # wv knows neither adjective
    assert {"mean_of_noun_means", "resampled"} <= set(pair.columns)
    nonsub = pl.read_csv(res / "tables" / "montague_nonsubsective.csv")
    # the types keep their config order (colour, age, privative) through the rule's JSON params
    assert nonsub.filter((pl.col("dataset") == "lists") & (pl.col("model") == "tfidf"))["key"].to_list() == [
        "colour", "age", "privative"]
    for name in ("montague_nonsubsective.csv", "montague_tables.md"):
        assert (res / "tables" / name).exists()
    for dataset, model in (("lists", "wv"), ("csv", "tfidf")):
        assert (res / "plots" / "montague" / dataset / f"{model}.png").exists()
    summary = (res / "montague" / "lists" / "wv" / "summary.json").read_text()
    assert '"unknown_nouns": [\n    "law"\n  ]' in summary


def test_adding_a_model_adds_only_its_jobs(run):
    config = copy.deepcopy(run["config"])
    gz = run["base"] / "vectors.txt.gz"
    gz.write_bytes(gzip.compress((run["base"] / "vectors.txt").read_bytes()))
    config["models"]["wv2"] = {"family": "word_vectors", "url": f"file://{gz}", "probes": ["montague"],
                               "sha256": hashlib.sha256(gz.read_bytes()).hexdigest(), "lowercase": True}
    jobs = planned_jobs(run["dir"], write_config(run["dir"], config))
    # a url is downloaded once, verified, stored decompressed, and is the embedding jobs' input
    assert [wc for rule, wc in jobs if rule == "download_model"] == [{"model": "wv2", "filename": "vectors.txt"}]
    montague_jobs = [(rule, wc) for rule, wc in jobs if rule.startswith("montague") or
                     (rule == "embed" and wc["scope"].startswith("montague."))]
    for rule, wc in montague_jobs:
        if rule in ("montague_score", "embed"):
            assert wc["model"] == "wv2", (rule, wc)
        assert rule != "montague_phrases"
    assert sorted(wc["dataset"] for rule, wc in montague_jobs if rule == "montague_score") == ["csv", "lists"]
    write_config(run["dir"], run["config"])
