"""The whole workflow on a small corpus: outputs, invariants, determinism, incremental reruns."""
import copy
import gzip
import hashlib
import json
import shutil

import numpy as np
import polars as pl
import pytest
import yaml

from diff_results import compare
from helpers import tiny_bert, tiny_fasttext
from workflow_runner import planned_jobs, snakemake, write_config

EN = ["the cat sleeps on the mat", "a dog runs in the park today", "she likes cold tea",
      "they sold the house last year", "we will visit the museum tomorrow", "is this the right way",
      "the old man walks to the station every morning before the sun rises over the hills",
      "prices are high", "he has finished the report", "zzz qqq",
      "i x y"]  # one-letter words only: no token for scikit-learn's pattern (tfidf_paper), so NaN similarities
NL = ["de kat slaapt op de mat", "een hond rent vandaag in het park", "zij houdt van koude thee",
      "zij verkochten het huis vorig jaar", "wij bezoeken morgen het museum", "is dit de goede weg",
      "de oude man loopt elke ochtend naar het station voordat de zon opkomt boven de heuvels",
      "de prijzen zijn hoog", "hij heeft het rapport af", "zzz qqq", "x y z"]


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
        "models": {"tfidf": {"family": "tfidf"},
                   "tfidf_paper": {"family": "tfidf", "preset": "paper"},
                   "bert": {"family": "transformers", "path": str(bert), "device": "cpu", "batch_size": 4},
                   "ft": {"family": "fasttext", "url": ft_gz.as_uri(), "sha256": sha(ft_gz),
                          "corpora": ["mini_en"]}},
        "csc": {"exact_kde_max_n": 20,  # small, so that both KDE paths run
                "perturb": {"grammatical_negation": {"enabled": True, "languages": ["en"], "use_tagger": False}}},
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
    assert table.filter(pl.col("condition") == "negation").height == 10  # 3 corpora x 3 models + ft on one
    assert (workspace["run"] / "results" / "downloads" / "sources" / "mini" / "bitext.txt").exists()
    assert (workspace["run"] / "results" / "downloads" / "models" / "ft" / "ft.bin").exists()
    # grammatical negation only for English corpora
    assert set(table.filter(pl.col("condition") == "grammatical_negation")["corpus"]) == {"mini_en", "mini_en_short"}
    defined = table.filter(pl.col("overlap").is_not_nan())
    assert defined["overlap"].is_between(0, 1).all() and defined.height >= 12
    # TF-IDF fitted on originals that never use `not`: every negated variant sits at similarity 1
    undefined = table.filter(pl.col("overlap").is_nan())
    assert set(undefined["model"]) == {"tfidf_paper"} and undefined["note"].str.contains("negated: zero spread").all()
    ingest = json.loads((res / "reports" / "ingest" / "mini.json").read_text())
    assert ingest["skipped"] == {"missing_field": 1, "empty": 1}
    # the paired comparisons (issue 26): no surface-form baseline here, so every model against the first listed
    diffs = pl.read_csv(res / "tables" / "csc_differences.csv")
    overlaps = {(r["corpus"], r["model"], r["condition"]): r["overlap"] for r in table.iter_rows(named=True)}
    overlap_diffs = diffs.filter(pl.col("statistic").str.ends_with("/overlap"))
    assert set(diffs["model_b"]) == {"tfidf"} and overlap_diffs.height == sum(m != "tfidf" for _, m, _ in overlaps)
    # the pooled gap and AUC beside each overlap (issue 32) and the within-sentence AUC and gap (issue 43)
    # are compared on the same resamples too
    assert diffs.height == 5 * overlap_diffs.height
    for d in overlap_diffs.iter_rows(named=True):
        a = overlaps[(d["dataset"], d["model_a"], d["statistic"].removesuffix("/overlap"))]
        assert d["value_a"] == pytest.approx(a, abs=1e-5, nan_ok=True)
    for row in table.iter_rows(named=True):
        sims = pl.read_parquet(res / "csc" / row["corpus"] / row["model"] / "similarities.parquet")
        variants = pl.read_parquet(res / "perturbations" / row["corpus"] / "part-*.parquet")
        assert sims.select("original_id", "variant_id").equals(variants.select("original_id", "variant_id"))
        kinds = sims.group_by("kind").agg(n=pl.len(), nan=pl.col("similarity").is_nan().sum())
        count = {k: (n, nan) for k, n, nan in kinds.iter_rows()}
        # the fuzzed curve of a condition: the fuzzed variants of the sentences that have one of it
        negated = sims.filter((pl.col("kind") == row["condition"]) & pl.col("similarity").is_not_nan())["original_id"]
        fuzzed = sims.filter((pl.col("kind") == "fuzz") & pl.col("similarity").is_not_nan()
                             & pl.col("original_id").is_in(negated.implode()))
        assert row["n_fuzzed"] == fuzzed.height
        assert row["n_within"] == fuzzed["original_id"].n_unique()
        assert row["n_negated"] == count[row["condition"]][0] - count[row["condition"]][1]
        assert row["n_dropped"] == count[row["condition"]][1]  # fuzz NaNs once, in their own column
        assert row["n_dropped_fuzzed"] == count["fuzz"][1]
        finite = sims["similarity"].drop_nans()
        assert finite.is_between(-1, 1).all()
        assert row["bootstrap_b"] == 1000 and row["grid_step"] == 0.001  # the schema defaults
        if not row["note"]:  # no undefined curve, no undefined replicates
            assert row["overlap_ci_low"] <= row["overlap"] <= row["overlap_ci_high"]
    # the paper preset cannot tokenise "i x y" / "x y z": its 3 fuzzed and 3 negated variants are NaN, counted once
    paper = table.filter(pl.col("model") == "tfidf_paper").sort("corpus", "condition")
    assert paper.select("corpus", "condition", "n_dropped", "n_dropped_fuzzed").rows() == [
        ("mini_en", "grammatical_negation", 0, 3), ("mini_en", "negation", 3, 3),
        ("mini_en_short", "grammatical_negation", 0, 3), ("mini_en_short", "negation", 3, 3),
        ("mini_nl", "negation", 3, 3)]
    assert set(paper["model_settings"]) == {r"tfidf preset paper: token_pattern (?u)\b\w\w+\b, fit_on originals"}
    # end to end: a table's overlap is scipy's KDE overlap of the similarities file (exact and binned)
    from scipy.stats import gaussian_kde
    grid = np.linspace(-1, 1, 2001)
    for corpus, model in (("mini_en", "bert"), ("mini_nl", "tfidf")):
        sims = pl.read_parquet(res / "csc" / corpus / model / "similarities.parquet").drop_nans("similarity")
        dens = {k: gaussian_kde(sims.filter(pl.col("kind") == k)["similarity"].to_numpy(), 0.2)(grid)
                for k in ("fuzz", "negation")}
        expected = np.minimum(dens["fuzz"] / dens["fuzz"].sum(), dens["negation"] / dens["negation"].sum()).sum()
        row = table.filter((pl.col("corpus") == corpus) & (pl.col("model") == model) & (pl.col("condition") == "negation"))
        assert row["overlap"][0] == pytest.approx(expected, abs=2e-5), (corpus, model, row["kde"][0])  # binned: < 1.1e-5
    table3 = pl.read_csv(res / "tables" / "csc_table3.csv", infer_schema=False)
    assert table3.columns[:2] == ["condition", "model"] and table3.columns[2:5] == ["mini_en", "mini_nl", "mini_en_short"]
    cell = table3.filter((pl.col("condition") == "negation") & (pl.col("model") == "bert"))["mini_en"][0]
    row = table.filter((pl.col("corpus") == "mini_en") & (pl.col("model") == "bert") & (pl.col("condition") == "negation"))
    assert cell == f"{row['overlap'][0]:.4f} [{row['overlap_ci_low'][0]:.4f}, {row['overlap_ci_high'][0]:.4f}]"
    assert (res / "plots" / "csc" / "mini_en" / "bert.png").stat().st_size > 1000
    assert (res / "plots" / "csc" / "mini_en" / "bert.svg").exists()
    lengths = pl.read_csv(res / "tables" / "length_buckets.csv", infer_schema=False)
    assert lengths["tokens"].to_list()[-1] == "sentences" and lengths["mini_en"][-1] == "11"
    report = (res / "report.md").read_text()
    # the overview first, then a section per probe that ran (from the declarations), then the inputs
    assert report.startswith("# Overview: every model against the surface-form baseline")
    assert report.index("# Concept Separation Curves") < report.index("# Inputs")
    assert "## csc_table3" in report and "## Input quality" in report


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
    assert rules == {"embed", "csc_score", "csc_plot", "csc_aggregate", "probe_differences", "disagreements",
                     "report"}
    for rule, wc in jobs:
        if rule in ("embed", "csc_score", "csc_plot"):
            assert wc["model"] == "bert2", (rule, wc)
    assert sum(r == "embed" for r, _ in jobs) == 6  # one per corpus and partition
    assert sum(r == "csc_score" for r, _ in jobs) == 3  # one per corpus
    # the same model from an overlay config given after the study's own (make run CONFIG="a.yaml
    # b.yaml"): the study keeps its identity and folder (no refusal: .study.json names config.yaml),
    # and the same jobs are planned, on one corpus when the overlay narrows the model
    write_config(run, workspace["config"])
    assert json.loads((run / "results" / ".study.json").read_text())["configfiles"] == ["config.yaml"]
    overlay = run.parent / "add_bert2.yaml"
    overlay.write_text(yaml.safe_dump({"models": {"bert2": config["models"]["bert2"]}}))
    as_set = lambda js: sorted((r, sorted(wc.items())) for r, wc in js if r != "all")
    assert as_set(planned_jobs(run, run / "config.yaml", overlays=[overlay])) == as_set(jobs)
    overlay.write_text(yaml.safe_dump({"models": {"bert2": {**config["models"]["bert2"], "corpora": ["mini_en"]}}}))
    jobs = [j for j in planned_jobs(run, run / "config.yaml", overlays=[overlay]) if j[0] != "all"]
    assert {r for r, _ in jobs} == {"embed", "csc_score", "csc_plot", "csc_aggregate", "probe_differences",
                                    "disagreements", "report"}
    # the tables that list every model of the probe (aggregate, differences, the corpus's disagreements)
    assert {(r, wc.get("model"), wc.get("scope", wc.get("corpus"))) for r, wc in jobs
            if r not in ("report", "csc_aggregate", "probe_differences", "disagreements")} == {
        ("embed", "bert2", "mini_en"), ("csc_score", "bert2", "mini_en"), ("csc_plot", "bert2", "mini_en")}
    assert {wc.get("dataset") for r, wc in jobs if r == "disagreements"} == {"mini_en"}


def test_changing_one_model_reruns_only_that_model(workspace):
    run = workspace["run"]
    write_config(run, workspace["config"])  # back to the config the results were made with
    assert planned_jobs(run, run / "config.yaml") == []
    # how the jobs run, not what they compute (fp32: batch size and threads move cosines by < 3e-7,
    # tests/benchmarks/bench_batch_invariance.py): nothing reruns
    config = copy.deepcopy(workspace["config"])
    config["models"]["bert"].update(batch_size=3, threads=1, cpu_workers=2, mem_mb=5000)
    config["models"]["tfidf"].update(threads=1, mem_mb=5000)
    assert [j for j in planned_jobs(run, write_config(run, config)) if j[0] != "all"] == []
    # what they compute: precision reruns that model's jobs, and only those
    config["models"]["bert"]["precision"] = "bf16"
    jobs = [j for j in planned_jobs(run, write_config(run, config)) if j[0] != "all"]
    assert {r for r, _ in jobs} == {"embed", "csc_score", "csc_plot", "csc_aggregate", "probe_differences", "disagreements",
                     "report"}
    assert all(wc.get("model", "bert") == "bert" for _, wc in jobs)
    write_config(run, workspace["config"])


def test_store_mismatch_is_detected_by_the_workflow(workspace, tmp_path):
    """A store from another model swapped in gives a clear error, not wrong similarities."""
    run = workspace["base"] / "run_mismatch"
    shutil.copytree(workspace["run"], run)
    res = run / "results" / "embeddings"
    shutil.rmtree(res / "bert" / "mini_en" / "part-000")
    shutil.copytree(res / "tfidf" / "mini_en" / "part-000", res / "bert" / "mini_en" / "part-000")
    from workflow_scripts.csc.curves import score
    from workflow_scripts.common import setup_logging
    with pytest.raises(Exception, match="differs|expected 'bert'"):
        score(str(run / "results" / "perturbations" / "mini_en"),
              [str(res / "bert" / "mini_en" / f"part-{p:03d}") for p in range(2)], "bert", "mini_en", 20,
              str(tmp_path / "out"), setup_logging(None, "t"))
