"""The whole workflow on a small corpus: outputs, invariants, determinism, incremental reruns."""
import copy
import gzip
import hashlib
import json
import shutil

import numpy as np
import polars as pl
import pytest

from compare_results import compare
from helpers import tiny_bert, tiny_fasttext
from workflow_runner import planned_jobs, snakemake, write_config

EN = ["the cat sleeps on the mat", "a dog runs in the park today", "she likes cold tea",
      "they sold the house last year", "we will visit the museum tomorrow", "is this the right way",
      "the old man walks to the station every morning before the sun rises over the hills",
      "prices are high", "he has finished the report", "zzz qqq"]
NL = ["de kat slaapt op de mat", "een hond rent vandaag in het park", "zij houdt van koude thee",
      "zij verkochten het huis vorig jaar", "wij bezoeken morgen het museum", "is dit de goede weg",
      "de oude man loopt elke ochtend naar het station voordat de zon opkomt boven de heuvels",
      "de prijzen zijn hoog", "hij heeft het rapport af", "zzz qqq"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    base = tmp_path_factory.mktemp("wf")
    bitext = base / "bitext.txt"
    lines = [f"{e}\t{n}" for e, n in zip(EN, NL)] + ["broken line without tab", "\tleeg"]
    bitext.write_text("\n".join(lines) + "\n")
    bert = tiny_bert(base / "bert", sentences=EN + NL)
    ft_gz = base / "ft.bin.gz"
    ft_gz.write_bytes(gzip.compress(tiny_fasttext(base / "ft.bin", EN + NL).read_bytes()))
    sha = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()
    config = {
        "seed": 5, "shard_rows": 8, "embedding_partitions": 2, "results": "results",
        "sources": {"mini": {"format": "bitext", "url": bitext.as_uri(), "sha256": sha(bitext),
                             "languages": ["en", "nl"]}},
        "corpora": {"mini_en": {"source": "mini", "language": "en"},
                    "mini_nl": {"source": "mini", "language": "nl"},
                    "mini_en_short": {"source": "mini", "language": "en", "max_tokens": 6}},
        "perturb": {"grammatical_negation": {"enabled": True, "languages": ["en"], "use_tagger": False}},
        "models": {"tfidf": {"family": "tfidf"},
                   "bert": {"family": "transformers", "path": str(bert), "device": "cpu", "batch_size": 4},
                   "ft": {"family": "fasttext", "url": ft_gz.as_uri(), "sha256": sha(ft_gz),
                          "corpora": ["mini_en"]}},
        "csc": {"exact_kde_max_n": 20},  # small, so that both KDE paths run
    }
    run = base / "run1"
    run.mkdir()
    cfg = write_config(run, config)
    snakemake(run, cfg)
    return {"base": base, "run": run, "config": config, "cfg": cfg, "bert": bert}


def test_outputs_and_invariants(workspace):
    res = workspace["run"] / "results"
    table = pl.read_csv(res / "tables" / "csc_overlap.csv")
    assert table.columns[:7] == ["corpus", "model", "condition", "overlap", "n_fuzzed", "n_negated", "n_dropped"]
    assert table.filter(pl.col("condition") == "negation").height == 7  # 3 corpora x 2 models + ft on one
    assert (workspace["run"] / "results" / "downloads" / "sources" / "mini" / "bitext.txt").exists()
    assert (workspace["run"] / "results" / "downloads" / "models" / "ft" / "ft.bin").exists()
    # grammatical negation only for English corpora
    assert set(table.filter(pl.col("condition") == "grammatical_negation")["corpus"]) == {"mini_en", "mini_en_short"}
    assert table["overlap"].is_between(0, 1).all()
    ingest = json.loads((res / "reports" / "ingest" / "mini.json").read_text())
    assert ingest["skipped"] == {"missing_field": 1, "empty": 1}
    for row in table.iter_rows(named=True):
        sims = pl.read_parquet(res / "csc" / row["corpus"] / row["model"] / "similarities.parquet")
        variants = pl.read_parquet(res / "perturbations" / row["corpus"] / "part-*.parquet")
        assert sims.select("original_id", "variant_id").equals(variants.select("original_id", "variant_id"))
        kinds = sims.group_by("kind").agg(n=pl.len(), nan=pl.col("similarity").is_nan().sum())
        count = {k: (n, nan) for k, n, nan in kinds.iter_rows()}
        assert row["n_fuzzed"] == count["fuzz"][0] - count["fuzz"][1]
        assert row["n_negated"] == count[row["condition"]][0] - count[row["condition"]][1]
        assert row["n_dropped"] == count["fuzz"][1] + count[row["condition"]][1]
        finite = sims["similarity"].drop_nans()
        assert finite.is_between(-1, 1).all()
    # TF-IDF of "zzz qqq" variants: the original is known to the fit, so nothing is NaN there;
    # but every model's NaN count is reported, and for tf-idf on the short corpus it is exact
    assert (res / "plots" / "csc" / "mini_en" / "bert.png").stat().st_size > 1000
    assert (res / "plots" / "csc" / "mini_en" / "bert.svg").exists()
    lengths = pl.read_csv(res / "tables" / "length_buckets.csv", infer_schema=False)
    assert lengths["tokens"].to_list()[-1] == "sentences" and lengths["mini_en"][-1] == "10"
    assert (res / "report.md").read_text().startswith("# Concept Separation Curves")


def test_every_rule_logged_and_benchmarked(workspace):
    res = workspace["run"] / "results"
    for rule in ("ingest", "derive_corpus", "perturb", "embed", "csc_score", "fit_tfidf"):
        assert list((res / "benchmarks" / rule).rglob("*.tsv")), rule
        assert list((res / "logs" / rule).rglob("*.log")), rule
    log = next((res / "logs" / "embed" / "bert").rglob("*.log")).read_text()
    assert "texts/s" in log  # progress is visible


def test_same_config_same_results(workspace):
    run2 = workspace["base"] / "run2"
    run2.mkdir()
    snakemake(run2, write_config(run2, workspace["config"]))
    a, b = workspace["run"] / "results", run2 / "results"
    for table in ("tables/csc_overlap.csv", "tables/length_buckets.csv"):
        assert (a / table).read_bytes() == (b / table).read_bytes()
    # every result file, plots (SVG ids) and vector stores included
    same, message = compare(a, b)
    assert same, message
    s1 = pl.read_parquet(a / "csc/mini_en/bert/similarities.parquet")
    s2 = pl.read_parquet(b / "csc/mini_en/bert/similarities.parquet")
    assert s1.equals(s2)


def test_adding_a_model_runs_only_its_jobs(workspace):
    run = workspace["run"]
    config = copy.deepcopy(workspace["config"])
    config["models"]["bert2"] = {"family": "transformers", "path": str(workspace["bert"]), "device": "cpu",
                                 "batch_size": 2}
    jobs = [j for j in planned_jobs(run, write_config(run, config)) if j[0] != "all"]
    rules = {r for r, _ in jobs}
    assert rules == {"embed", "csc_score", "csc_plot", "csc_aggregate", "report"}
    for rule, wc in jobs:
        if rule in ("embed", "csc_score", "csc_plot"):
            assert wc["model"] == "bert2", (rule, wc)
    assert sum(r == "embed" for r, _ in jobs) == 2  # one per partition
    assert sum(r == "csc_score" for r, _ in jobs) == 3  # one per corpus


def test_changing_one_model_reruns_only_that_model(workspace):
    run = workspace["run"]
    write_config(run, workspace["config"])  # back to the config the results were made with
    assert planned_jobs(run, run / "config.yaml") == []
    config = copy.deepcopy(workspace["config"])
    config["models"]["bert"]["batch_size"] = 3
    jobs = [j for j in planned_jobs(run, write_config(run, config)) if j[0] != "all"]
    assert {r for r, _ in jobs} == {"embed", "csc_score", "csc_plot", "csc_aggregate", "report"}
    assert all(wc.get("model", "bert") == "bert" for _, wc in jobs)
    write_config(run, workspace["config"])


def test_store_mismatch_is_detected_by_the_workflow(workspace, tmp_path):
    """A store from another model swapped in gives a clear error, not wrong similarities."""
    run = workspace["base"] / "run_mismatch"
    shutil.copytree(workspace["run"], run)
    res = run / "results" / "embeddings"
    shutil.rmtree(res / "bert" / "shared" / "part-000")
    shutil.copytree(res / "tfidf" / "mini_en" / "part-000", res / "bert" / "shared" / "part-000")
    from workflow_scripts.csc import score
    from workflow_scripts.common import setup_logging
    with pytest.raises(Exception, match="differs|expected 'bert'"):
        score(str(run / "results" / "perturbations" / "mini_en"),
              [str(res / "bert" / "shared" / f"part-{p:03d}") for p in range(2)], "bert", "mini_en", 20,
              str(tmp_path / "out"), setup_logging(None, "t"))
