"""The workflow on real EN–NL text (ParaCrawl human-evaluation sample and Tatoeba, read in place
from ../shared/data) with MiniLM and TF-IDF: the outputs' invariants."""
import json

import numpy as np
import polars as pl
import pytest

from conftest import shared_data
from workflow_runner import snakemake, write_config

# slow tier (make test-slow): MiniLM and TF-IDF over the real ParaCrawl and Tatoeba samples
pytestmark = pytest.mark.slow

# ParaCrawl is capped so that CI stays short; Tatoeba is used whole
PC_CAP = 800


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    folder = shared_data("en_nl_parallel")
    run = tmp_path_factory.mktemp("real")
    config = {
        "seed": 13, "shard_rows": 2000, "embedding_partitions": 2, "results": "results",
        "sources": {
            "paracrawl": {"format": "tsv", "header": True, "path": str(folder / "paracrawl_en_nl_human_eval.tsv"),
                          "languages": ["en", "nl"], "columns": {"en": "en", "nl": "nl"}},
            "tatoeba": {"format": "tsv", "header": True, "path": str(folder / "tatoeba_laser_en_nl.tsv"),
                        "languages": ["en", "nl"], "columns": {"en": "en", "nl": "nl"}},
        },
        "corpora": {
            "pc_en": {"source": "paracrawl", "language": "en", "max_sentences": PC_CAP},
            "pc_nl": {"source": "paracrawl", "language": "nl", "max_sentences": PC_CAP},
            "tatoeba_en": {"source": "tatoeba", "language": "en"},
            "tatoeba_nl": {"source": "tatoeba", "language": "nl"},
            "pc_en_filtered": {"source": "paracrawl", "language": "en", "match_lengths_of": "tatoeba_en",
                               "max_sentences": PC_CAP},
        },
        "models": {"tfidf": {"family": "tfidf"},
                   # MiniLM on one corpus: its model loads and encoding were most of this test's time
                   "minilm": {"family": "sentence_transformers", "name": "sentence-transformers/all-MiniLM-L6-v2",
                              "device": "cpu", "batch_size": 32, "corpora": ["tatoeba_en"]}},
    }
    cfg = write_config(run, config)
    snakemake(run, cfg)
    return run / "results", config


def test_ingest_counts_real_rows(real_run):
    res, _ = real_run
    pc = json.loads((res / "reports" / "ingest" / "paracrawl.json").read_text())
    assert pc["records"] + pc["skipped_total"] == 3994  # the README's row count
    tat = json.loads((res / "reports" / "ingest" / "tatoeba.json").read_text())
    assert tat["records"] + tat["skipped_total"] == 812


def test_overlap_table_invariants(real_run):
    res, config = real_run
    table = pl.read_csv(res / "tables" / "csc_overlap.csv")
    assert set(table["corpus"]) == set(config["corpora"]) and set(table["model"]) == {"tfidf", "minilm"}
    assert set(table.filter(pl.col("model") == "minilm")["corpus"]) == {"tatoeba_en"}
    assert table["overlap"].is_between(0, 1).all()
    english = {c for c, s in config["corpora"].items() if s["language"] == "en"}
    assert set(table.filter(pl.col("condition") == "grammatical_negation")["corpus"]) == english
    for row in table.iter_rows(named=True):
        manifest = json.loads((res / "corpora" / row["corpus"] / "manifest.json").read_text())
        sims = pl.read_parquet(res / "csc" / row["corpus"] / row["model"] / "similarities.parquet")
        assert sims["original_id"].n_unique() == manifest["rows"]  # every sentence has variants
        per_kind = sims.group_by("kind").agg(n=pl.len(), nan=pl.col("similarity").is_nan().sum())
        n = {k: (a, b) for k, a, b in per_kind.iter_rows()}
        # both curves of a condition are over the same sentences: those with a finite fuzzed and a
        # finite negated variant; a NaN similarity is counted as dropped
        finite = sims.filter(pl.col("similarity").is_not_nan())
        fuzzed = finite.filter(pl.col("kind") == "fuzz")
        negated = finite.filter(pl.col("kind") == row["condition"])
        both = set(fuzzed["original_id"]) & set(negated["original_id"])
        assert row["n_fuzzed"] == fuzzed.filter(pl.col("original_id").is_in(list(both))).height
        assert row["n_negated"] == negated.filter(pl.col("original_id").is_in(list(both))).height
        assert row["n_dropped"] == n[row["condition"]][1] and row["n_dropped_fuzzed"] == n["fuzz"][1]
        # at most X variants of each insertion kind per sentence
        assert n["fuzz"][0] <= 3 * manifest["rows"] and n["negation"][0] <= 3 * manifest["rows"]
        if row["model"] == "minilm":
            assert row["n_dropped"] == 0  # a transformer never gives a zero vector
        assert sims["similarity"].drop_nans().is_between(-1, 1).all()


def test_minilm_separates_negation_on_real_text(real_run):
    """A sanity check on real data: negated variants are, on average, less similar than fuzzed ones."""
    res, _ = real_run
    sims = pl.read_parquet(res / "csc" / "tatoeba_en" / "minilm" / "similarities.parquet")
    means = dict(sims.group_by("kind").agg(pl.col("similarity").mean()).iter_rows())
    assert means["negation"] < means["fuzz"] and means["grammatical_negation"] < means["fuzz"]


def test_length_matched_corpus_is_short(real_run):
    res, _ = real_run
    table = pl.read_csv(res / "tables" / "length_buckets.csv", infer_schema=False)
    row = dict(zip(table["tokens"], table["pc_en_filtered"]))
    ref = dict(zip(table["tokens"], table["tatoeba_en"]))
    # total variation <= 0.05 bounds every bucket's difference by 5 percentage points
    assert abs(float(row["0-10"].rstrip("%")) - float(ref["0-10"].rstrip("%"))) <= 5.01
