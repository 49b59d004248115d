"""The adapt stage in the workflow, proven from Snakemake's planned jobs: adding a recipe plans only
its training job and its own embedding and probe jobs (plus the aggregates), never the base model's;
the trained directory is an input of its embedding jobs; a CUDA recipe declares a GPU; then the run
itself: a model directory with its manifest, the domain-shift tables and plot. About 1.5 minutes on 2 cores."""
import copy
import json
import re

import polars as pl
import pytest

from helpers import tiny_bert
from adapt.test_adapt import DOCS, QUESTIONS, beir_set
from workflow_runner import snakemake, write_config

GENERAL = ["the weather is nice today", "we ate dinner with friends", "the train was late again",
           "she reads a book every night", "the children play in the garden", "he paints the old fence"]


def planned(run, config_path, *targets):
    """(rule, wildcards, block text) of every job Snakemake would run now (workflow_runner.planned_jobs,
    with targets and the job's text kept)."""
    out = snakemake(run, config_path, "--dry-run", *targets)
    jobs = []
    for block in re.split(r"\n(?=\s*(?:local)?rule \w+:)", out.stdout + out.stderr):
        m = re.match(r"(?:local)?rule (\w+):", block.strip())
        if m:
            wc = re.search(r"^\s*wildcards: (.*)$", block, re.M)
            jobs.append((m.group(1), dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {}, block))
    return jobs


TARGETS = ("results/tables/domain_shift.csv",)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    base = tmp_path_factory.mktemp("adapt_wf")
    bert = tiny_bert(base / "bert", QUESTIONS + DOCS + GENERAL)
    qa = beir_set(base / "qa")
    (qa / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in (4, 5)))
    (qa / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(4)))
    general = base / "general.tsv"
    general.write_text("".join(f"{s}\tx\n" for s in GENERAL))
    bitext = base / "bitext.txt"
    bitext.write_text("".join(f"{s}\tx\n" for s in GENERAL))
    config = {
        "seed": 3, "shard_rows": 50, "embedding_partitions": 1, "results": "results",
        "sources": {"mini": {"format": "bitext", "path": str(bitext), "languages": ["en", "nl"]}},
        "corpora": {"mini_en": {"source": "mini", "language": "en"}},
        "models": {"bert": {"family": "transformers", "path": str(bert), "device": "cpu", "batch_size": 4,
                            "probes": ["retrieval", "domain_shift"]}},
        "csc": {"bootstrap_b": 10, "perturb": {"grammatical_negation": {"enabled": False, "languages": ["en"]}}},
        "retrieval": {"datasets": {"qa": {"kind": "beir", "path": str(qa)}}, "eval_split": "test", "top_k": 5,
                      "k": {"min": 1, "max": 5, "step": 1}, "table_k": 1, "bootstrap_b": 20,
                      "draws": {"count": 5, "size": 2}, "thresholds": {"draws": 5},
                      "isotropy": {"transforms": ["standardise"]}},
        "domain_shift": {"datasets": {"ds": {"specific": [{"retrieval": "qa"}],
                                             "agnostic": [{"file": str(general), "column": 0}]}},
                         "bootstrap_b": 20},
    }
    run = base / "run"
    run.mkdir()
    snakemake(run, write_config(run, config), *TARGETS)  # the base model alone
    recipe = {"base": "bert", "steps": ["pt", "ft"], "device": "cpu",
              "pt": {"retrieval": "qa", "max_steps": 2, "batch_size": 4, "max_length": 16},
              "ft": {"retrieval": "qa", "split": "train", "max_steps": 2, "batch_size": 2, "max_length": 16,
                     "hard_negatives": {"relative_margin": None}},
              "probes": ["retrieval", "domain_shift"]}
    with_recipe = copy.deepcopy(config)
    with_recipe["adapt"] = {"recipes": {"bert_ptft": recipe}}
    return {"run": run, "config": config, "with_recipe": with_recipe}


def test_adding_a_recipe_plans_only_its_own_jobs(study):
    run = study["run"]
    jobs = planned(run, write_config(run, study["with_recipe"]), *TARGETS, "results/models/bert_ptft")
    rules = [(r, wc) for r, wc, _ in jobs]
    assert ("adapt_train", {"recipe": "bert_ptft"}) in rules
    per_model = {(r, wc.get("model")) for r, wc in rules if "model" in wc}
    assert per_model == {("embed", "bert_ptft"), ("retrieval_search", "bert_ptft"), ("retrieval_isotropy", "bert_ptft"),
                         ("retrieval_metrics", "bert_ptft"), ("domain_shift_score", "bert_ptft")}
    assert {wc["scope"] for r, wc in rules if r == "embed"} == {"retrieval.qa", "domain_shift.ds"}
    assert {r for r, _ in rules} == {"adapt_train", "embed", "retrieval_search", "retrieval_isotropy",
                                     "retrieval_metrics", "retrieval_aggregate", "domain_shift_score",
                                     "domain_shift_aggregate"}
    # the trained directory is an input of the model's embedding jobs
    embed_block = next(b for r, wc, b in jobs if r == "embed")
    assert re.search(r"input: .*results/models/bert_ptft", embed_block)
    train_block = next(b for r, _, b in jobs if r == "adapt_train")
    assert "results/retrieval/sets/qa" in train_block and "gpu=0" in train_block


def test_every_probe_evaluates_a_recipe_that_does_not_limit_its_probes(study):
    run = study["run"]
    config = copy.deepcopy(study["with_recipe"])
    del config["adapt"]["recipes"]["bert_ptft"]["probes"]
    jobs = planned(run, write_config(run, config), "results/tables/csc_overlap.csv", *TARGETS)
    scored = {r for r, wc, _ in jobs if wc.get("model") == "bert_ptft"}
    assert {"csc_score", "retrieval_metrics", "domain_shift_score"} <= scored
    assert {wc["scope"] for r, wc, _ in jobs if r == "embed" and wc["model"] == "bert_ptft"} \
        == {"mini_en", "retrieval.qa", "domain_shift.ds"}


def test_a_cuda_recipe_declares_a_gpu(study):
    run = study["run"]
    config = copy.deepcopy(study["with_recipe"])
    config["adapt"]["recipes"]["bert_ptft"].update(device="cuda", gpu_model="h100")
    jobs = planned(run, write_config(run, config), "results/models/bert_ptft")
    block = next(b for r, _, b in jobs if r == "adapt_train")
    assert "gpu=1" in block and "gpu_model=h100" in block


def test_the_recipe_trains_and_every_probe_table_has_it(study):
    run = study["run"]
    path = write_config(run, study["with_recipe"])
    snakemake(run, path, *TARGETS)
    res = run / "results"
    manifest = json.loads((res / "models" / "bert_ptft" / "manifest.json").read_text())
    assert manifest["steps"] == ["pt", "ft"] and manifest["base"]["model"] == "bert"
    assert len(manifest["loss_curve"]["pt"]) == 2 and len(manifest["loss_curve"]["ft"]) == 2
    assert not (res / "models" / ".work" / "bert_ptft").exists()
    shift = pl.read_csv(res / "tables" / "domain_shift.csv")
    assert set(shift["model"]) == {"bert", "bert_ptft"}
    adapted = shift.filter(pl.col("model") == "bert_ptft")
    assert adapted["adaptation"].unique().to_list() == ["PT-FT"] and adapted["base_model"][0] == "bert"
    # (8 and 6 texts: a percentile interval need not cover the estimate at this size; it must exist)
    assert (adapted["overlap_ci_low"] <= adapted["overlap_ci_high"]).all() and adapted["overlap"].is_finite().all()
    side = pl.read_csv(res / "tables" / "domain_shift_adaptation.csv")
    assert side["Embedding Model"].to_list() == ["bert", "bert_ptft"] and side["Adaptation"].to_list() == ["base", "PT-FT"]
    assert side["Acc@1"].null_count() == 0
    assert (res / "plots" / "domain_shift" / "ds" / "bert_ptft.png").stat().st_size > 0
    assert set(pl.read_csv(res / "tables" / "retrieval_accuracy.csv")["model"]) == {"bert", "bert_ptft"}
    # nothing left to do; and rerunning with the same config changes nothing
    assert [r for r, _, _ in planned(run, path, *TARGETS)] == []
