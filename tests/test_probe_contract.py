"""The probe contract, proven from Snakemake's own list of planned jobs: adding a corpus, a dataset or
a whole probe never reruns an existing embedding job; a derived corpus copies its parent's vectors;
a model can be limited to some probes or datasets; the embed manifests count encoded vs reused."""
import copy
import json

import numpy as np
import polars as pl
import pytest

from helpers import EN, NL, TRIPLETS, tiny_bert
from workflow_runner import planned_jobs, snakemake, write_config


@pytest.fixture(scope="module")
def contract(tmp_path_factory):
    base = tmp_path_factory.mktemp("contract")
    (base / "bitext.txt").write_text("".join(f"{e}\t{n}\n" for e, n in zip(EN, NL)))
    words = EN + NL + [t for row in TRIPLETS for t in row]
    bert = tiny_bert(base / "bert", sentences=words)
    mine = base / "mine.tsv"
    mine.write_text("id\ts\ts_plus\ts_star\n" + "".join(f"{i}\t{a}\t{b}\t{c}\n" for i, (a, b, c) in enumerate(TRIPLETS)))
    config = {
        "seed": 3, "shard_rows": 8, "embedding_partitions": 2, "results": "results",
        "sources": {"mini": {"format": "bitext", "path": str(base / "bitext.txt"), "languages": ["en", "nl"]}},
        "corpora": {"mini_en": {"source": "mini", "language": "en"},
                    "mini_en_short": {"source": "mini", "language": "en", "max_tokens": 6}},
        "models": {"tfidf": {"family": "tfidf"},
                   "bert": {"family": "transformers", "path": str(bert), "device": "cpu", "batch_size": 4}},
        "csc": {"exact_kde_max_n": 20, "bootstrap_b": 20,
                "perturb": {"grammatical_negation": {"enabled": True, "languages": ["en"], "use_tagger": False}}},
    }
    run = base / "run"
    run.mkdir()
    snakemake(run, write_config(run, config))  # CSC only
    csc_only = copy.deepcopy(config)
    # the same results plus a whole new probe: the user's triplets
    config["triplets"] = {"datasets": {"mine": {"file": str(mine)}}, "bootstrap_b": 50}
    return {"base": base, "run": run, "csc_only": csc_only, "config": config, "bert": bert, "mine": mine}


def embed_scopes(jobs):
    return {(wc["model"], wc["scope"]) for rule, wc in jobs if rule == "embed"}


def existing_scopes(run):
    return {(p.parent.parent.name, p.parent.name) for p in (run / "results" / "embeddings").glob("*/*/part-*")}


def test_adding_a_probe_runs_no_existing_embedding_job(contract):
    run = contract["run"]
    before = existing_scopes(run)
    assert {s for _, s in before} == {"mini_en", "mini_en_short"}  # a store per corpus, not shared
    jobs = planned_jobs(run, write_config(run, contract["config"]))
    assert embed_scopes(jobs) == {("bert", "triplets.mine"), ("tfidf", "triplets.mine")}
    assert not embed_scopes(jobs) & before
    rules = {r for r, _ in jobs} - {"all"}
    assert rules == {"triplets_build", "fit_tfidf", "embed", "triplets_score", "triplets_aggregate", "probe_differences",
                     "disagreements", "report"}
    # then run it: the triplet outputs of the contract
    snakemake(run, write_config(run, contract["config"]))
    res = run / "results"
    table = pl.read_csv(res / "tables" / "triplets_accuracy.csv")
    assert sorted(table["model"].to_list()) == ["bert", "tfidf"]
    assert (table["n"] == len(TRIPLETS)).all()
    for row in table.iter_rows(named=True):
        assert 0 <= row["accuracy_ci_low"] <= row["accuracy"] <= row["accuracy_ci_high"] <= 1
    scores = pl.read_parquet(res / "triplets" / "mine" / "bert" / "scores.parquet")
    # subject and verb: the clusters of argument sensitivity's bootstrap (empty for a file's triplets)
    assert scores.columns == ["id", "sim_s_splus", "sim_s_sstar", "sim_splus_sstar", "correct", "subject", "verb",
                              "cluster"]
    assert scores["subject"].is_null().all() and scores["verb"].is_null().all()
    assert (res / "plots" / "triplets" / "mine.png").exists()
    assert "# Sentence triplets" in (res / "report.md").read_text()


def test_adding_a_corpus_or_a_dataset_runs_no_existing_embedding_job(contract):
    run = contract["run"]
    write_config(run, contract["config"])
    assert [j for j in planned_jobs(run, run / "config.yaml") if j[0] != "all"] == []
    before = existing_scopes(run)
    config = copy.deepcopy(contract["config"])
    config["corpora"]["mini_nl"] = {"source": "mini", "language": "nl"}
    config["triplets"]["datasets"]["mine_again"] = {"file": str(contract["mine"]), "scoring": "negation_variants"}
    jobs = planned_jobs(run, write_config(run, config))
    assert not embed_scopes(jobs) & before
    assert {s for _, s in embed_scopes(jobs)} == {"mini_nl", "triplets.mine_again"}
    # the new corpus's and dataset's jobs only, plus aggregation
    for rule, wc in jobs:
        if rule in ("ingest", "derive_corpus", "perturb", "csc_score", "csc_plot"):
            assert wc.get("corpus", "mini_nl") == "mini_nl" and rule != "ingest", (rule, wc)
        if rule in ("triplets_build", "triplets_score"):
            assert wc["dataset"] == "mine_again", (rule, wc)
    write_config(run, contract["config"])


def test_a_model_limited_to_probes_or_datasets_runs_only_those(contract):
    run = contract["run"]
    config = copy.deepcopy(contract["config"])
    config["triplets"]["datasets"]["mine_again"] = {"file": str(contract["mine"])}
    config["models"]["bert_csc"] = {"family": "transformers", "path": str(contract["bert"]), "device": "cpu",
                                    "probes": ["csc"], "corpora": ["mini_en"]}
    config["models"]["bert_mine"] = {"family": "transformers", "path": str(contract["bert"]), "device": "cpu",
                                     "probes": ["triplets"], "datasets": ["mine"]}
    jobs = planned_jobs(run, write_config(run, config))
    scopes = {(wc["model"], wc["scope"]) for rule, wc in jobs if rule == "embed"}
    assert {s for m, s in scopes if m == "bert_csc"} == {"mini_en"}
    assert {s for m, s in scopes if m == "bert_mine"} == {"triplets.mine"}
    scored = {(wc["dataset"], wc["model"]) for rule, wc in jobs if rule == "triplets_score"}
    assert ("mine", "bert_mine") in scored and not any(m == "bert_csc" for _, m in scored)
    assert not any(wc.get("model") == "bert_mine" for rule, wc in jobs if rule.startswith("csc"))
    write_config(run, contract["config"])


def test_derived_corpus_copies_its_parents_vectors(contract):
    from workflow_scripts.vector_store import VectorStore
    res = contract["run"] / "results" / "embeddings"
    for part in ("part-000", "part-001"):
        child = json.loads((res / "bert" / "mini_en_short" / part / "manifest.json").read_text())
        parent = json.loads((res / "bert" / "mini_en" / part / "manifest.json").read_text())
        # every text of the short corpus (its sentences and their seeded variants) is one of the parent's
        assert child["reused"] == child["rows"] > 0 and child["encoded"] == 0
        assert child["reused_from"] == "mini_en"
        assert parent["reused"] == 0 and parent["encoded"] == parent["rows"]
        tfidf = json.loads((res / "tfidf" / "mini_en_short" / part / "manifest.json").read_text())
        assert tfidf["reused"] == 0 and tfidf["encoded"] == tfidf["rows"]  # fitted per text set
    stores = {c: VectorStore(sorted(str(p) for p in (res / "bert" / c).glob("part-*"))) for c in ("mini_en", "mini_en_short")}
    keys = np.concatenate([p.keys for p in stores["mini_en_short"].parts])
    a, _ = stores["mini_en_short"].lookup(keys)
    b, _ = stores["mini_en"].lookup(keys)
    assert np.array_equal(a, b)
    log = next((contract["run"] / "results" / "logs" / "embed" / "bert" / "mini_en_short").glob("*.log")).read_text()
    assert "0 encoded" in log and "reused from" in log


def test_reuse_refuses_a_store_of_other_settings(tmp_path):
    from workflow_scripts.common import setup_logging
    from workflow_scripts.embed import embed_partition
    from workflow_scripts.texts import write_text_partitions
    from workflow_scripts.vector_store import StoreMismatch
    texts = tmp_path / "texts.parquet"
    write_text_partitions(["one text", "two texts"], [texts])
    log = setup_logging(None, "t")
    spec = {"family": "hashing", "dim": 8, "hash_bits": 8, "projection_seed": 1}
    embed_partition("h", spec, "parent", 0, 1, [str(texts)], str(tmp_path / "parent"), 1, log)
    copied = embed_partition("h", spec, "child", 0, 1, [str(texts)], str(tmp_path / "child"), 1, log,
                             reuse=str(tmp_path / "parent"))
    assert copied["reused"] == 2 and copied["encoded"] == 0
    with pytest.raises(StoreMismatch, match="spec_digest"):
        embed_partition("h", {**spec, "projection_seed": 2}, "child", 0, 1, [str(texts)], str(tmp_path / "other"), 1,
                        log, reuse=str(tmp_path / "parent"))


def test_reuse_loads_the_model_only_for_texts_the_parent_lacks(tmp_path, monkeypatch):
    """A derived corpus whose every text is in its parent's store loads no model (about 10 s per
    sentence-transformers job); one new text loads it once, and the manifest says how it ran."""
    from workflow_scripts import embed, encoders
    from workflow_scripts.common import setup_logging
    from workflow_scripts.texts import write_text_partitions
    log = setup_logging(None, "t")
    spec = {"family": "hashing", "dim": 8, "hash_bits": 8, "projection_seed": 1}
    parent_texts, child_texts, new_texts = (tmp_path / f"{n}.parquet" for n in ("p", "c", "n"))
    write_text_partitions(["one text", "two texts", "three texts"], [parent_texts])
    write_text_partitions(["one text", "three texts"], [child_texts])
    write_text_partitions(["one text", "a text the parent lacks"], [new_texts])
    parent = embed.embed_partition("h", spec, "parent", 0, 1, [str(parent_texts)], str(tmp_path / "parent"), 1, log)
    loads = []
    original = encoders.load_encoder
    monkeypatch.setattr(embed, "load_encoder", lambda *a: loads.append(a) or original(*a))
    child = embed.embed_partition("h", spec, "child", 0, 1, [str(child_texts)], str(tmp_path / "child"), 1, log,
                                  reuse=str(tmp_path / "parent"))
    assert loads == [] and child["reused"] == 2 and child["encoded"] == 0
    assert {k: child[k] for k in ("origin", "device", "batch_size")} == {k: parent[k] for k in ("origin", "device", "batch_size")}
    grown = embed.embed_partition("h", spec, "grown", 0, 1, [str(new_texts)], str(tmp_path / "grown"), 1, log,
                                  reuse=str(tmp_path / "parent"))
    assert len(loads) == 1 and grown["reused"] == 1 and grown["encoded"] == 1
    assert grown["origin"] == parent["origin"] and grown["workers"] == 1
    # the copied vector is the parent's, the encoded one what the model gives
    from workflow_scripts.vector_store import VectorStore
    from workflow_scripts.common import text_key
    keys = np.array([text_key("one text"), text_key("a text the parent lacks")], dtype=np.uint64)
    got, _ = VectorStore([str(tmp_path / "grown")]).lookup(keys)
    want = encoders.load_encoder(spec, "cpu", None).encode_batch(["one text", "a text the parent lacks"])
    assert np.allclose(got, want, atol=1e-6)


def test_missing_nltk_data_stops_before_any_job(tmp_path):
    """Offline (or `nltk_download: never`) and without the tagger and WordNet a probe needs, the run
    stops while planning, naming the packages and how to provide them; nothing is run or written."""
    import os
    import subprocess
    import sys
    from workflow_runner import ROOT
    (tmp_path / "lines.txt").write_text("the cat sleeps\n")
    config = {"seed": 1, "sources": {"s": {"format": "lines", "path": str(tmp_path / "lines.txt"), "languages": ["en"]}},
              "corpora": {"c": {"source": "s", "language": "en"}},
              "models": {"tfidf": {"family": "tfidf"}},
              "triplets": {"datasets": {"argument_sensitivity": {}}},
              "nltk_download": "never"}
    cfg = write_config(tmp_path, config)
    empty = tmp_path / "no_nltk_data"
    empty.mkdir()
    env = {**os.environ, "NLTK_DATA": str(empty), "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory",
                           str(tmp_path), "--cores", "1", "--configfile", str(cfg)], capture_output=True, text=True,
                          env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "averaged_perceptron_tagger_eng" in out and "wordnet" in out and "export NLTK_DATA=" in out
    assert not (tmp_path / "results").exists()
    # the user's own triplets need no NLTK data: the same machine plans that run (CSC, which tfidf
    # runs too, asks for its rules-only negation explicitly: tests/test_study_folders.py)
    config["triplets"] = {"datasets": {"mine": {"file": str(tmp_path / "t.tsv")}}}
    config["csc"] = {"perturb": {"grammatical_negation": {"use_tagger": False}}}
    (tmp_path / "t.tsv").write_text("s\ts_plus\ts_star\na b\ta c\tb a\n")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory",
                           str(tmp_path), "--cores", "1", "--dry-run", "--configfile", str(write_config(tmp_path, config))],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
